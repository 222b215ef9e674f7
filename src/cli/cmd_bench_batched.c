/* cli/cmd_bench_batched: `cllama bench -npp ... -ntg ... -npl ...`, llama-batched-bench's flags,
 * protocol (bench/runner.c cll_bench_batched) and output (its markdown table, or its JSONL fields
 * plus the provenance of the other bench rows), so the same protocol runs both engines side by
 * side. --record stores each row (test "batched-pp<pp>-tg<tg>-pl<pl>") in bench/records/<box>.json. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/board.h"
#include "cli/cli.h"
#include "tune/tune.h"

#define BB_MAX_LIST 16

static void bb_usage(FILE *f) {
    fprintf(f, "usage: cllama bench [-m FILE] -npp 128[,..] -ntg 128[,..] -npl 1,2,4,8,16,32,64 [-b 2048] [-t THREADS]\n"
               "                    [--backend cpu|cuda | -ngl N] [-o md|jsonl] [--record [--box NAME] [--records DIR]]\n"
               "                    [--tune SIDECAR] [--pin SITE=VARIANT[,...]] [--kv-cells N] [--out logits|greedy|topk:K]\n"
               "  llama-batched-bench's protocol: per (pp, tg, pl), pl prompts of pp tokens from an empty cache\n"
               "  (decoded n_batch tokens at a time: t_pp), then tg steps of one token for each of the pl sequences\n"
               "  (t_tg). speed_pp = pl*pp/t_pp, speed_tg = pl*tg/t_tg (all sequences), speed = n_kv/(t_pp+t_tg),\n"
               "  n_kv = pl*(pp+tg). One run per row (no repetitions), a 16-token warm-up first. Prompts are not\n"
               "  shared (-pps is not supported: the engine has no cache copy between sequences).\n"
               "  The server's configuration, to time its steps (not recorded: the board compares the protocol above):\n"
               "    --kv-cells N        a paged KV pool of N cells shared by the sequences (`cllama serve --kv-cells`)\n"
               "    --out MODE          what a step hands back per sequence: logits (the default, llama-batched-bench's),\n"
               "                        greedy (the argmax id) or topk:K (the K best candidates, a sampling server's step)\n"
               CLL_CLI_SPLIT_USAGE);
    cll_cli_print_default(f, CLL_CLI_JOB_TEXT);
}

static bool bb_is_flag(const char *a) { return !strcmp(a, "-npp") || !strcmp(a, "-ntg") || !strcmp(a, "-npl"); }

bool cll_cli_bench_is_batched(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (bb_is_flag(argv[i]) || !strcmp(argv[i], "-pps")) return true;
    return false;
}

int cll_cmd_bench_batched(int argc, char **argv) {
    const char *model = NULL, *fmt = "md", *box_arg = NULL, *records = NULL, *tune = NULL, *pin = NULL;
    int npp[BB_MAX_LIST] = {128}, ntg[BB_MAX_LIST] = {128}, npl[BB_MAX_LIST] = {1, 2, 4, 8, 16, 32, 64};
    int n_npp = 1, n_ntg = 1, n_npl = 7, n_batch = 2048, threads = (int)sysconf(_SC_NPROCESSORS_ONLN), backend = 0;
    cll_cli_split split = {0};
    bool record = false;
    long kv_cells = 0;
    cll_bench_out out = CLL_BENCH_OUT_LOGITS;
    int top_k = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const bool has = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            bb_usage(stdout);
            return 0;
        } else if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && has) {
            if (model) {
                fprintf(stderr, "cllama bench: the batched bench takes one model (-m given twice)\n");
                return 2;
            }
            model = argv[++i];
        } else if (!strcmp(a, "-npp") && has) {
            if ((n_npp = cll_cli_int_list(argv[++i], npp, BB_MAX_LIST)) < 1) goto bad;
        } else if (!strcmp(a, "-ntg") && has) {
            if ((n_ntg = cll_cli_int_list(argv[++i], ntg, BB_MAX_LIST)) < 1) goto bad;
        } else if (!strcmp(a, "-npl") && has) {
            if ((n_npl = cll_cli_int_list(argv[++i], npl, BB_MAX_LIST)) < 1) goto bad;
        } else if (!strcmp(a, "-pps")) {
            fprintf(stderr, "cllama bench: -pps (a prompt shared by all sequences) is not supported: the engine has no "
                            "cache copy between sequences; run without it (llama-batched-bench's default)\n");
            return 2;
        } else if ((!strcmp(a, "-b") || !strcmp(a, "--batch-size")) && has) n_batch = atoi(argv[++i]);
        else if ((!strcmp(a, "-t") || !strcmp(a, "--threads")) && has) threads = atoi(argv[++i]);
        else if ((!strcmp(a, "-ngl") || !strcmp(a, "--n-gpu-layers")) && has) backend = atoi(argv[++i]) > 0;
        else if (!strcmp(a, "--backend") && has) {
            cllama_backend b;
            if (cll_cli_parse_backend("bench", argv[++i], &b)) return 2;
            backend = b == CLLAMA_BACKEND_CUDA;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--output-format")) && has) fmt = argv[++i];
        else if (!strcmp(a, "--record")) record = true;
        else if (!strcmp(a, "--box") && has) box_arg = argv[++i];
        else if (!strcmp(a, "--records") && has) records = argv[++i];
        else if (!strcmp(a, "--tune") && has) tune = argv[++i];
        else if (!strcmp(a, "--pin") && has) pin = argv[++i];
        else if (!strcmp(a, "--kv-cells") && has) {
            char *end = NULL;
            kv_cells = strtol(argv[++i], &end, 10);
            if (!end || *end || kv_cells < 1 || kv_cells > (1L << 30)) {
                fprintf(stderr, "cllama bench: --kv-cells takes a cell count in [1, 2^30], not '%s'\n", argv[i]);
                return 2;
            }
        } else if ((!strcmp(a, "--tp") || !strcmp(a, "--devices") || !strcmp(a, "--gpu-mem-limit")) && has) {
            if (cll_cli_parse_split("bench", a, argv[++i], &split) < 0) return 2;
        } else if (!strcmp(a, "--out") && has) {
            const char *v = argv[++i];
            if (!strcmp(v, "logits")) out = CLL_BENCH_OUT_LOGITS;
            else if (!strcmp(v, "greedy")) out = CLL_BENCH_OUT_GREEDY;
            else if (!strncmp(v, "topk:", 5) && (top_k = atoi(v + 5)) >= 1 && top_k <= CLLAMA_TOPK_MAX) out = CLL_BENCH_OUT_TOPK;
            else {
                fprintf(stderr, "cllama bench: --out takes logits, greedy or topk:K with K in [1, %d], not '%s'\n",
                        CLLAMA_TOPK_MAX, v);
                return 2;
            }
        } else if ((!strcmp(a, "-c") || !strcmp(a, "-ub") || !strcmp(a, "-fa")) && has) {
            ++i; /* llama-batched-bench's cache size, ubatch and flash-attention flags: sized / fixed here */
        } else {
        bad:
            fprintf(stderr, "cllama bench: unknown or incomplete option '%s'\n", a);
            bb_usage(stderr);
            return 2;
        }
    }
    char defpath[4096];
    if (!model) {
        if (cll_cli_default_model_for("bench", CLL_CLI_JOB_TEXT, defpath, sizeof defpath) != 0) return 2;
        model = defpath;
    }
    if (strcmp(fmt, "md") && strcmp(fmt, "jsonl")) {
        fprintf(stderr, "cllama bench: the batched bench writes md or jsonl, not '%s'\n", fmt);
        return 2;
    }
    if (n_batch < 1 || threads < 1) {
        fprintf(stderr, "cllama bench: -b and -t must be positive\n");
        return 2;
    }
    int max_pl = 1, max_ctx = 1;
    for (int i = 0; i < n_npl; i++) {
        if (npl[i] < 1) {
            fprintf(stderr, "cllama bench: -npl values must be >= 1\n");
            return 2;
        }
        max_pl = npl[i] > max_pl ? npl[i] : max_pl;
    }
    for (int i = 0; i < n_npp; i++)
        for (int j = 0; j < n_ntg; j++) max_ctx = npp[i] + ntg[j] > max_ctx ? npp[i] + ntg[j] : max_ctx;
    if (record && (kv_cells || out != CLL_BENCH_OUT_LOGITS)) {
        fprintf(stderr, "cllama bench: --record stores llama-batched-bench's protocol only (per-sequence cache regions, every "
                        "logit back); drop --kv-cells / --out to record\n");
        return 2;
    }
    const long kv_need = (long)max_pl * ((max_ctx + CLLAMA_KV_BLOCK - 1) / CLLAMA_KV_BLOCK) * CLLAMA_KV_BLOCK;
    if (kv_cells && kv_cells < kv_need)
        fprintf(stderr, "cllama bench: note: --kv-cells %ld holds fewer cells than the largest pl x (pp + tg) in whole blocks "
                        "of %d = %ld: a step that finds no free block fails with the pool full\n",
                kv_cells, CLLAMA_KV_BLOCK, kv_need);
    {
        cllama_model_params smp = cllama_model_default_params();
        if (cll_cli_split_apply("bench", &split, &smp)) return 2;
        cll_bench_set_split(&smp);
    }
    cll_tune_loaded tl;
    if (cll_cli_apply_tune("bench", backend ? CLLAMA_BACKEND_CUDA : CLLAMA_BACKEND_CPU, tune, pin, &tl)) return 2;
    char *git = cll_bench_git_sha();
    char sha_short[16], cpu[256], gpu[256], when[32], box[256], recdir[4096], recfile[4400];
    snprintf(sha_short, sizeof sha_short, "%.9s", git);
    cll_bench_cpu_model(cpu, sizeof cpu);
    cll_bench_gpu_name(gpu, sizeof gpu);
    if (box_arg) snprintf(box, sizeof box, "%s", box_arg);
    else cll_bench_default_box(box, sizeof box);
    snprintf(recdir, sizeof recdir, "%s", records ? records : "");
    if (!records) cll_bench_records_dir(recdir, sizeof recdir);
    cll_bench_records_path(recdir, box, recfile, sizeof recfile);
    json_t *doc = NULL;
    if (record && !(doc = cll_bench_records_load(recfile, box))) {
        fprintf(stderr, "cllama bench: %s\n", cll_last_error());
        free(git);
        return 1;
    }
    /* each sequence holds its own cache region: n_seq_max = the largest pl, n_ctx = the longest pp + tg
     * (at least the 16 tokens of the warm-up) */
    if (max_ctx < 16) max_ctx = 16;
    cll_bench_model *bm = NULL;
    if (cll_bench_open_seqs(model, backend, threads, max_ctx, n_batch, max_pl, (uint32_t)kv_cells, &bm) != CLL_OK ||
        cll_bench_set_output(bm, out, top_k) != CLL_OK || cll_bench_prepare(bm, max_pl) != CLL_OK) {
        fprintf(stderr, "cllama bench: %s\n", cll_last_error());
        cll_bench_close(bm);
        json_decref(doc);
        free(git);
        return 1;
    }
    const int n_kv_max = kv_cells ? (int)kv_cells : max_pl * max_ctx;
    if (!strcmp(fmt, "md")) {
        printf("main: n_kv_max = %d, n_batch = %d, n_ubatch = %d, flash_attn = -1, is_pp_shared = 0, n_gpu_layers = %d, "
               "n_threads = %d, n_threads_batch = %d\n\n",
               n_kv_max, n_batch, n_batch, backend ? 99 : 0, threads, threads);
        printf("|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |\n");
        printf("|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|\n");
    }
    int rc = 0;
    for (int a = 0; a < n_npp && !rc; a++)
        for (int b = 0; b < n_ntg && !rc; b++)
            for (int c = 0; c < n_npl && !rc; c++) {
                const int pp = npp[a], tg = ntg[b], pl = npl[c];
                if (pp == 0 && tg == 0) continue;
                cll_bench_batched_result r;
                cll_bench_utc_now(when, sizeof when);
                if (isatty(2)) fprintf(stderr, "\rbench: pp %d tg %d pl %d ...   ", pp, tg, pl);
                if (cll_bench_batched(bm, pp, tg, pl, &r) != CLL_OK) {
                    fprintf(stderr, "\ncllama bench: %s: %s\n", model, cll_last_error());
                    rc = 1;
                    break;
                }
                if (isatty(2)) fprintf(stderr, "\r%40s\r", "");
                json_t *j = json_object();
                json_object_set_new(j, "n_kv_max", json_integer(n_kv_max));
                json_object_set_new(j, "n_batch", json_integer(n_batch));
                json_object_set_new(j, "n_ubatch", json_integer(n_batch));
                json_object_set_new(j, "flash_attn", json_integer(-1));
                json_object_set_new(j, "is_pp_shared", json_integer(0));
                json_object_set_new(j, "n_gpu_layers", json_integer(backend ? 99 : 0));
                json_object_set_new(j, "n_threads", json_integer(threads));
                json_object_set_new(j, "n_threads_batch", json_integer(threads));
                json_object_set_new(j, "pp", json_integer(pp));
                json_object_set_new(j, "tg", json_integer(tg));
                json_object_set_new(j, "pl", json_integer(pl));
                json_object_set_new(j, "n_kv", json_integer(r.n_kv));
                json_object_set_new(j, "t_pp", json_real(r.t_pp));
                json_object_set_new(j, "speed_pp", json_real(r.speed_pp));
                json_object_set_new(j, "t_tg", json_real(r.t_tg));
                json_object_set_new(j, "speed_tg", json_real(r.speed_tg));
                json_object_set_new(j, "t", json_real(r.t));
                json_object_set_new(j, "speed", json_real(r.speed));
                json_object_set_new(j, "engine", json_string("cllama"));
                json_object_set_new(j, "backend", json_string(backend ? "cuda" : "cpu"));
                json_object_set_new(j, "tp", json_integer(cll_bench_model_tp(bm)));
                json_object_set_new(j, "model_filename", json_string(cll_bench_basename(model)));
                json_object_set_new(j, "model_type", json_string(cll_bench_model_type(bm)));
                json_object_set_new(j, "build_commit", json_string(sha_short));
                json_object_set_new(j, "cpu_info", json_string(cpu));
                json_object_set_new(j, "gpu_info", json_string(gpu));
                json_object_set_new(j, "box", json_string(box));
                char tn[64];
                snprintf(tn, sizeof tn, "batched-pp%d-tg%d-pl%d", pp, tg, pl); /* one record per cell */
                json_object_set_new(j, "test", json_string(tn));
                json_object_set_new(j, "test_time", json_string(when));
                json_object_set_new(j, "tune_sha256", json_string(tl.stamp));
                if (!strcmp(fmt, "jsonl")) {
                    char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
                    printf("%s\n", s);
                    free(s);
                } else {
                    printf("| %5d | %6d | %4d | %6d | %8.3f | %8.2f | %8.3f | %8.2f | %8.3f | %8.2f |\n", pp, tg, pl, r.n_kv,
                           r.t_pp, r.speed_pp, r.t_tg, r.speed_tg, r.t, r.speed);
                }
                fflush(stdout);
                if (record) {
                    char *abs = realpath(model, NULL);
                    json_t *prov = json_object();
                    json_object_set_new(prov, "engine_git_sha", json_string(git));
                    json_object_set_new(prov, "model_path", json_string(abs ? abs : model));
                    json_object_set_new(prov, "tune_sidecar", json_string(tl.path[0] ? tl.path : "none"));
                    free(abs);
                    json_object_set_new(j, "provenance", prov);
                    cll_bench_records_upsert(doc, json_incref(j));
                    if (cll_bench_records_save(recfile, doc) != CLL_OK) {
                        fprintf(stderr, "cllama bench: %s\n", cll_last_error());
                        rc = 1;
                    }
                }
                json_decref(j);
            }
    if (record && !rc) fprintf(stderr, "bench: recorded in %s\n", recfile);
    cll_bench_close(bm);
    json_decref(doc);
    free(git);
    return rc;
}
