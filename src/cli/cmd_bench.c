/* cli/cmd_bench: `cllama bench`, llama-bench's flags, protocol and output fields, so one
 * reader serves both engines. --record writes each test's row with its provenance into
 * bench/records/<box>.json (see src/bench/board.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/board.h"
#include "cli/cli.h"
#include "tune/tune.h"

#define MAX_LIST 16

typedef struct {
    const char *models[64];
    int n_models;
    int pp[MAX_LIST], n_pp, tg[MAX_LIST], n_tg, dp[MAX_LIST], n_dp;
    int reps, threads, backend;
    bool probe_bw; /* --probe-bandwidth: measure the box's read bandwidth again */
    const char *fmt, *box, *records, *tune, *pin;
    bool record;
} opts;

static void usage(FILE *f) {
    fprintf(f, "usage: cllama bench [-m FILE ...] [-p 512] [-n 128] [-d 0] [-r 5] [-t THREADS]\n"
               "                    [--backend cpu|cuda | -ngl N] [-o md|json|jsonl|csv]\n"
               "                    [--record [--box NAME] [--records DIR]] [--tune SIDECAR] [--pin SITE=VARIANT[,...]]\n"
               "  pp<p>: one prefill of p tokens from an empty cache; tg<n>: n single-token steps.\n"
               "  -p/-n take comma lists (0 = skip). One untimed warm-up per test; model load not timed.\n"
               "  -d D[,D..]: each test also on top of a cache first filled with D tokens (llama-bench's depth,\n"
               "           untimed; named \"pp512 @ d8192\", n_depth in the rows)\n"
               "  --record writes/replaces the rows in <records>/<box>.json (box default: $CLLAMA_BOX or hostname);\n"
               "           the first CPU record of a box measures its read bandwidth (a 1 GiB sum with -t threads)\n"
               "           for the decode roofline (--probe-bandwidth measures it again); tg rows then carry\n"
               "           GB/s of weights and %% of that roofline.\n"
               "  --tune F   apply the tune sidecar F (default: env CLLAMA_TUNE, else this box's sidecar, else its\n"
               "             class defaults; 'none': the built-ins); rows carry its sha256 (class:<class>:<sha256>)\n"
               "  --pin S=V  run kernel variant V at site S (env CLLAMA_PIN); see `cllama tune doctor`\n"
               "  -npp/-ntg/-npl LISTS: llama-batched-bench's protocol instead (cllama bench -npp 1 --help)\n"
               "  -m FILE    a model to measure (repeatable; default below)\n"
               CLL_CLI_SPLIT_USAGE
               "             rows carry tp (1 for one device); a tp row is its own board cell\n");
    cll_cli_print_default(f, CLL_CLI_JOB_TEXT);
}

static char *join_args(int argc, char **argv) {
    size_t n = 16;
    for (int i = 0; i < argc; i++) n += strlen(argv[i]) * 2 + 3;
    char *s = malloc(n), *p = s;
    p += sprintf(p, "cllama");
    for (int i = 0; i < argc; i++) {
        bool q = strpbrk(argv[i], " \t\"'$") != NULL;
        p += sprintf(p, q ? " '%s'" : " %s", argv[i]);
    }
    return s;
}

static json_t *jarr(const double *v, int n, bool integer) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, integer ? json_integer((json_int_t)(v[i] + 0.5)) : json_real(v[i]));
    return a;
}

/* a row in llama-bench's field order, then ours */
static json_t *make_row(const opts *o, const char *path, cll_bench_model *bm, int nd, int np, int ng, const cll_bench_result *r,
                        const char *sha_short, const char *cpu, const char *gpu, const char *tune_sha, const char *when,
                        int n_batch, double roof) {
    json_t *j = json_object();
    json_object_set_new(j, "build_commit", json_string(sha_short));
    json_object_set_new(j, "build_number", json_integer(0));
    json_object_set_new(j, "cpu_info", json_string(cpu));
    json_object_set_new(j, "gpu_info", json_string(gpu));
    json_object_set_new(j, "backends", json_string(o->backend ? "CUDA" : "CPU"));
    json_object_set_new(j, "model_filename", json_string(path));
    json_object_set_new(j, "model_type", json_string(cll_bench_model_type(bm)));
    json_object_set_new(j, "model_size", json_integer((json_int_t)cll_bench_model_size(bm)));
    json_object_set_new(j, "model_n_params", json_integer((json_int_t)cll_bench_model_n_params(bm)));
    json_object_set_new(j, "n_batch", json_integer(n_batch));
    json_object_set_new(j, "n_ubatch", json_integer(n_batch));
    json_object_set_new(j, "n_threads", json_integer(o->threads));
    json_object_set_new(j, "cpu_mask", json_string("0x0"));
    json_object_set_new(j, "cpu_strict", json_false());
    json_object_set_new(j, "poll", json_integer(0));
    json_object_set_new(j, "type_k", json_string("f16"));
    json_object_set_new(j, "type_v", json_string("f16"));
    json_object_set_new(j, "n_gpu_layers", json_integer(o->backend ? 99 : 0));
    json_object_set_new(j, "n_cpu_moe", json_integer(0));
    json_object_set_new(j, "split_mode", json_string("none"));
    json_object_set_new(j, "main_gpu", json_integer(0));
    json_object_set_new(j, "no_kv_offload", json_false());
    json_object_set_new(j, "flash_attn", json_integer(-1));
    json_object_set_new(j, "devices", json_string("auto"));
    json_object_set_new(j, "tensor_split", json_string("0.00"));
    json_object_set_new(j, "tensor_buft_overrides", json_string("none"));
    json_object_set_new(j, "load_mode", json_string("mmap"));
    json_object_set_new(j, "embeddings", json_false());
    json_object_set_new(j, "no_op_offload", json_integer(0));
    json_object_set_new(j, "no_host", json_false());
    json_object_set_new(j, "fit_target", json_integer(0));
    json_object_set_new(j, "fit_min_ctx", json_integer(0));
    json_object_set_new(j, "n_prompt", json_integer(np));
    json_object_set_new(j, "n_gen", json_integer(ng));
    json_object_set_new(j, "n_depth", json_integer(nd));
    json_object_set_new(j, "test_time", json_string(when));
    json_object_set_new(j, "avg_ns", json_integer((json_int_t)(r->avg_ns + 0.5)));
    json_object_set_new(j, "stddev_ns", json_integer((json_int_t)(r->stddev_ns + 0.5)));
    json_object_set_new(j, "avg_ts", json_real(r->avg_ts));
    json_object_set_new(j, "stddev_ts", json_real(r->stddev_ts));
    json_object_set_new(j, "samples_ns", jarr(r->samples_ns, r->n, true));
    json_object_set_new(j, "samples_ts", jarr(r->samples_ts, r->n, false));
    json_object_set_new(j, "engine", json_string("cllama"));
    json_object_set_new(j, "backend", json_string(o->backend ? "cuda" : "cpu"));
    json_object_set_new(j, "tp", json_integer(cll_bench_model_tp(bm)));
    char tn[64];
    cll_bench_test_name_d(np, ng, nd, tn, sizeof tn);
    json_object_set_new(j, "test", json_string(tn));
    json_object_set_new(j, "tune_sha256", json_string(tune_sha));
    if (ng > 0) { /* decode reads every weight byte once per token: report it against the roofline */
        roof *= (double)cll_bench_model_tp(bm); /* a split reads its shards from tp devices at once */
        const uint64_t wb = cll_bench_model_decode_bytes(bm);
        const double gbs = r->avg_ts * (double)wb / 1e9;
        json_object_set_new(j, "decode_weight_bytes", json_integer((json_int_t)wb));
        json_object_set_new(j, "weight_gbps", json_real(gbs));
        /* and the K/V cache it reads (the roofline over both: what a step at depth moves) */
        const uint64_t kvb = cll_bench_model_kv_bytes(bm, nd, ng);
        json_object_set_new(j, "decode_kv_bytes", json_integer((json_int_t)kvb));
        if (roof > 0) {
            json_object_set_new(j, "roofline_gbps", json_real(roof));
            json_object_set_new(j, "roofline_pct", json_real(100.0 * gbs / roof));
            json_object_set_new(j, "roofline_kv_pct", json_real(100.0 * r->avg_ts * (double)(wb + kvb) / 1e9 / roof));
        }
        const uint64_t kpt = cll_bench_model_kernels_per_token(bm);
        if (kpt) json_object_set_new(j, "kernels_per_token", json_integer((json_int_t)kpt));
    }
    return j;
}

static void print_md_header(void) {
    printf("| %-30s | %10s | %10s | %-10s | %7s | %15s | %20s |\n", "model", "size", "params", "backend", "threads", "test",
           "t/s");
    printf("| %s | %s: | %s: | %s | %s: | %s: | %s: |\n", "------------------------------", "---------", "---------",
           "----------", "------", "--------------", "-------------------");
}

static void print_row(const char *fmt, json_t *row, bool *header_done) {
    if (!strcmp(fmt, "jsonl")) {
        char *s = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
        printf("%s\n", s);
        free(s);
    } else if (!strcmp(fmt, "md")) {
        if (!*header_done) print_md_header();
        char sz[32], pa[32], ts[64];
        snprintf(sz, sizeof sz, "%.2f GiB", json_integer_value(json_object_get(row, "model_size")) / 1073741824.0);
        snprintf(pa, sizeof pa, "%.2f B", json_integer_value(json_object_get(row, "model_n_params")) / 1e9);
        snprintf(ts, sizeof ts, "%.2f ± %.2f", json_real_value(json_object_get(row, "avg_ts")),
                 json_real_value(json_object_get(row, "stddev_ts")));
        printf("| %-30s | %10s | %10s | %-10s | %7lld | %15s | %20s |\n",
               json_string_value(json_object_get(row, "model_type")), sz, pa,
               json_string_value(json_object_get(row, "backends")),
               (long long)json_integer_value(json_object_get(row, "n_threads")),
               json_string_value(json_object_get(row, "test")), ts);
    } else if (!strcmp(fmt, "csv")) {
        const char *k;
        json_t *v;
        if (!*header_done) {
            bool first = true;
            json_object_foreach(row, k, v) {
                printf("%s\"%s\"", first ? "" : ",", k);
                first = false;
            }
            printf("\n");
        }
        bool first = true;
        json_object_foreach(row, k, v) {
            if (!first) printf(",");
            first = false;
            if (json_is_array(v)) {
                printf("\"");
                size_t i;
                json_t *e;
                json_array_foreach(v, i, e) printf("%s%.6g", i ? ";" : "", json_number_value(e));
                printf("\"");
            } else if (json_is_string(v)) printf("\"%s\"", json_string_value(v));
            else {
                char *s = json_dumps(v, JSON_ENCODE_ANY);
                printf("%s", s);
                free(s);
            }
        }
        printf("\n");
    }
    *header_done = true;
    fflush(stdout);
}

static void file_sha(const char *path, char out[65]) {
    if (!path || !*path || !cll_bench_sha256_file(path, out)) snprintf(out, 65, "none");
}

int cll_cmd_bench(int argc, char **argv) {
    if (cll_cli_bench_is_batched(argc, argv)) return cll_cmd_bench_batched(argc, argv); /* -npp/-ntg/-npl */
    opts o = {.reps = 5, .fmt = "md"};
    cll_cli_split split = {0};
    o.pp[0] = 512;
    o.n_pp = 1;
    o.tg[0] = 128;
    o.n_tg = 1;
    o.dp[0] = 0;
    o.n_dp = 1;
    o.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && has) {
            if (o.n_models < 64) o.models[o.n_models++] = argv[++i];
        } else if ((!strcmp(a, "-p") || !strcmp(a, "--n-prompt")) && has) {
            if ((o.n_pp = cll_cli_int_list(argv[++i], o.pp, MAX_LIST)) < 0) goto bad;
        } else if ((!strcmp(a, "-n") || !strcmp(a, "--n-gen")) && has) {
            if ((o.n_tg = cll_cli_int_list(argv[++i], o.tg, MAX_LIST)) < 0) goto bad;
        } else if ((!strcmp(a, "-d") || !strcmp(a, "--n-depth")) && has) {
            if ((o.n_dp = cll_cli_int_list(argv[++i], o.dp, MAX_LIST)) < 0) goto bad;
        } else if ((!strcmp(a, "-r") || !strcmp(a, "--repetitions")) && has) o.reps = atoi(argv[++i]);
        else if ((!strcmp(a, "-t") || !strcmp(a, "--threads")) && has) o.threads = atoi(argv[++i]);
        else if ((!strcmp(a, "-ngl") || !strcmp(a, "--n-gpu-layers")) && has) o.backend = atoi(argv[++i]) > 0;
        else if (!strcmp(a, "--backend") && has) {
            const char *b = argv[++i];
            if (!strcmp(b, "cpu")) o.backend = 0;
            else if (!strcmp(b, "cuda")) o.backend = 1;
            else {
                fprintf(stderr, "cllama bench: unknown backend '%s' (cpu or cuda)\n", b);
                return 2;
            }
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && has) o.fmt = argv[++i];
        else if (!strcmp(a, "--record")) o.record = true;
        else if (!strcmp(a, "--probe-bandwidth")) o.probe_bw = true;
        else if (!strcmp(a, "--box") && has) o.box = argv[++i];
        else if (!strcmp(a, "--records") && has) o.records = argv[++i];
        else if (!strcmp(a, "--tune") && has) o.tune = argv[++i];
        else if (!strcmp(a, "--pin") && has) o.pin = argv[++i];
        else if ((!strcmp(a, "--tp") || !strcmp(a, "--devices") || !strcmp(a, "--gpu-mem-limit")) && has) {
            if (cll_cli_parse_split("bench", a, argv[++i], &split) < 0) return 2;
        } else {
        bad:
            fprintf(stderr, "cllama bench: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    char defpath[4096];
    if (!o.n_models) {
        if (cll_cli_default_model_for("bench", CLL_CLI_JOB_TEXT, defpath, sizeof defpath) != 0) return 2;
        o.models[o.n_models++] = defpath;
    }
    if (strcmp(o.fmt, "md") && strcmp(o.fmt, "json") && strcmp(o.fmt, "jsonl") && strcmp(o.fmt, "csv")) {
        fprintf(stderr, "cllama bench: unknown output format '%s' (md, json, jsonl, csv)\n", o.fmt);
        return 2;
    }
    if (o.reps < 1 || o.reps > CLL_BENCH_MAX_REPS || o.threads < 1) {
        fprintf(stderr, "cllama bench: -r must be 1..%d and -t positive\n", CLL_BENCH_MAX_REPS);
        return 2;
    }
    {
        cllama_model_params smp = cllama_model_default_params();
        if (cll_cli_split_apply("bench", &split, &smp)) return 2;
        cll_bench_set_split(&smp);
    }
    bool progress = isatty(2);
    char *git = cll_bench_git_sha();
    char sha_short[16], cpu[256], gpu[256], when[32], box[256], recdir[4096], recfile[4400];
    snprintf(sha_short, sizeof sha_short, "%.9s", git);
    cll_bench_cpu_model(cpu, sizeof cpu);
    cll_bench_gpu_name(gpu, sizeof gpu);
    /* pins and the tune file (--tune, else $CLLAMA_TUNE, else the box's own sidecar, else its class
     * defaults) go in before any model is prepared; the records name the file that actually applied
     * and stamp it: its sha256, "class:<class>:<sha256>" for class defaults, "none" otherwise */
    cll_tune_loaded tl;
    if (cll_cli_apply_tune("bench", o.backend ? CLLAMA_BACKEND_CUDA : CLLAMA_BACKEND_CPU, o.tune, o.pin, &tl)) return 2;
    const char *tune_path = tl.path[0] ? tl.path : NULL, *tune_sha = tl.stamp;
    if (o.box) snprintf(box, sizeof box, "%s", o.box);
    else cll_bench_default_box(box, sizeof box);
    if (o.records) snprintf(recdir, sizeof recdir, "%s", o.records);
    else cll_bench_records_dir(recdir, sizeof recdir);
    cll_bench_records_path(recdir, box, recfile, sizeof recfile);

    json_t *doc = NULL, *hw = NULL;
    double roof = o.backend ? cll_bench_roofline_gbs(gpu) : 0.0; /* GB/s; records may refine it */
    const char *parity = "unchecked";
    char parity_why[512] = "";
    char *cmdline = join_args(argc, argv);
    if (o.record) {
        doc = cll_bench_records_load(recfile, box);
        if (!doc) {
            fprintf(stderr, "cllama bench: %s\n", cll_last_error());
            return 1;
        }
        char *h = cll_bench_hw_probe_json();
        hw = json_loads(h, 0, NULL);
        free(h);
        parity = cll_bench_parity(o.backend, o.threads, parity_why, sizeof parity_why);
        /* the box's read bandwidth, measured once and kept in its records (the board's roofline) */
        json_t *bw = json_object_get(doc, "bandwidth_GBps");
        if (json_is_number(bw) && !o.probe_bw) {
            roof = json_number_value(bw);
        } else if (o.backend) {
            roof = cll_bench_roofline_gbs(gpu);
        } else {
            if (progress) fprintf(stderr, "bench: measuring this box's read bandwidth with %d threads...\n", o.threads);
            roof = cll_bench_read_bandwidth(o.threads, (size_t)1 << 30);
            fprintf(stderr, "bench: read bandwidth %.1f GB/s (%d threads, 1 GiB sum; recorded as the box's roofline)\n",
                    roof, o.threads);
        }
        if (roof > 0) json_object_set_new(doc, "bandwidth_GBps", json_real(roof));
        if (progress || strcmp(parity, "pass")) fprintf(stderr, "bench: parity %s (%s)\n", parity, parity_why);
    }
    int max_p = 1, max_g = 0, max_d = 0;
    for (int i = 0; i < o.n_pp; i++) max_p = o.pp[i] > max_p ? o.pp[i] : max_p;
    for (int i = 0; i < o.n_tg; i++) max_g = o.tg[i] > max_g ? o.tg[i] : max_g;
    for (int i = 0; i < o.n_dp; i++) max_d = o.dp[i] > max_d ? o.dp[i] : max_d;
    /* the prefill batch: the longest prompt in one decode (llama-bench's -b); a depth fills in
     * batches of at least 512 */
    const int n_batch = max_d > 0 && max_p < 512 ? 512 : max_p;
    int rc = 0;
    bool header = false;
    json_t *all = json_array();
    for (int mi = 0; mi < o.n_models && rc == 0; mi++) {
        const char *path = o.models[mi];
        cll_bench_model *bm = NULL;
        /* context large enough for the longest test, prefill in one batch as llama-bench's -b */
        int n_ctx = max_d + (max_p > max_g ? max_p : max_g) + 8;
        if (cll_bench_open(path, o.backend, o.threads, n_ctx, n_batch, &bm) != CLL_OK) {
            fprintf(stderr, "cllama bench: %s\n", cll_last_error());
            rc = 1;
            break;
        }
        char msha[65] = "";
        struct stat st;
        if (o.record) file_sha(path, msha);
        for (int k = 0; k < (o.n_pp + o.n_tg) * o.n_dp && rc == 0; k++) {
            const int kt = k % (o.n_pp + o.n_tg), nd = o.dp[k / (o.n_pp + o.n_tg)];
            int np = kt < o.n_pp ? o.pp[kt] : 0, ng = kt < o.n_pp ? 0 : o.tg[kt - o.n_pp];
            if (np == 0 && ng == 0) continue;
            cll_bench_result r;
            cll_bench_utc_now(when, sizeof when);
            if (cll_bench_measure_at(bm, nd, np, ng, o.reps, progress, &r) != CLL_OK) {
                fprintf(stderr, "cllama bench: %s: %s\n", path, cll_last_error());
                rc = 1;
                break;
            }
            double cv = r.avg_ts > 0 ? r.stddev_ts / r.avg_ts : 0;
            const char *noise = "ok";
            if (o.record && cv > 0.03) { /* one re-run of a noisy cell; still noisy is marked, not hidden */
                cll_bench_result r2;
                if (cll_bench_measure_at(bm, nd, np, ng, o.reps, progress, &r2) == CLL_OK) {
                    r = r2;
                    cv = r.avg_ts > 0 ? r.stddev_ts / r.avg_ts : 0;
                    noise = cv > 0.03 ? "noisy" : "ok (re-run)";
                }
            }
            json_t *row = make_row(&o, path, bm, nd, np, ng, &r, sha_short, cpu, gpu, tune_sha, when, n_batch, roof);
            print_row(o.fmt, row, &header);
            if (ng > 0 && (o.backend || roof > 0)) {
                json_t *pct = json_object_get(row, "roofline_pct"), *kpt = json_object_get(row, "kernels_per_token");
                fprintf(stderr, "bench: %s tg%d: %.2f GB of weights per token, %.0f GB/s", cll_bench_basename(path), ng,
                        (double)json_integer_value(json_object_get(row, "decode_weight_bytes")) / 1e9,
                        json_real_value(json_object_get(row, "weight_gbps")));
                if (pct) fprintf(stderr, " = %.1f%% of the %.0f GB/s roofline", json_real_value(pct),
                                 json_real_value(json_object_get(row, "roofline_gbps")));
                if (nd > 0) { /* at depth the cache is read too */
                    json_t *kp = json_object_get(row, "roofline_kv_pct");
                    fprintf(stderr, "; with %.2f GB of K/V cache",
                            (double)json_integer_value(json_object_get(row, "decode_kv_bytes")) / 1e9);
                    if (kp) fprintf(stderr, " %.1f%%", json_real_value(kp));
                }
                if (kpt) fprintf(stderr, ", %lld kernels per token", (long long)json_integer_value(kpt));
                fprintf(stderr, "\n");
            }
            if (!strcmp(o.fmt, "json")) json_array_append(all, row);
            if (o.record) {
                json_t *rec = json_deep_copy(row);
                char *abs = realpath(path, NULL);
                json_object_set_new(rec, "model_filename", json_string(cll_bench_basename(path)));
                json_object_set_new(rec, "model_path", json_string(abs ? abs : path));
                free(abs);
                json_object_set_new(rec, "model_sha256", json_string(msha));
                json_object_set_new(rec, "model_bytes", json_integer(stat(path, &st) == 0 ? (json_int_t)st.st_size : 0));
                json_object_set_new(rec, "box", json_string(box));
                json_object_set_new(rec, "cv", json_real(cv));
                json_object_set_new(rec, "noise", json_string(noise));
                json_object_set_new(rec, "parity", json_string(parity));
                json_object_set_new(rec, "pinned", json_false());
                json_t *prov = json_object();
                json_object_set_new(prov, "command", json_string(cmdline));
                json_object_set_new(prov, "engine_git_sha", json_string(git));
                json_object_set_new(prov, "tune_sidecar", json_string(tune_path ? tune_path : "none"));
                json_object_set_new(prov, "tune_sha256", json_string(tune_sha));
                json_object_set_new(prov, "parity_detail", json_string(parity_why));
                json_object_set_new(prov, "hardware", hw ? json_deep_copy(hw) : json_null());
                json_object_set_new(rec, "provenance", prov);
                cll_bench_records_upsert(doc, rec);
                if (cll_bench_records_save(recfile, doc) != CLL_OK) {
                    fprintf(stderr, "cllama bench: %s\n", cll_last_error());
                    rc = 1;
                }
            }
            json_decref(row);
        }
        cll_bench_close(bm);
    }
    if (!strcmp(o.fmt, "json")) {
        char *s = json_dumps(all, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", s);
        free(s);
    }
    if (o.record && rc == 0) fprintf(stderr, "bench: recorded in %s\n", recfile);
    json_decref(all);
    json_decref(doc);
    json_decref(hw);
    free(cmdline);
    free(git);
    return rc;
}
