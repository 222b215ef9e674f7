/* cli/cmd_board: `cllama board` renders bench/BOARD.md + bench/board.html from the records;
 * `board import-ref FILE.jsonl --box NAME` pins llama-bench rows as the reference;
 * `board --check` re-measures this box's cllama rows and fails on a >5% regression. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/board.h"
#include "cli/cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: cllama board [--records DIR] [--md FILE] [--html FILE]\n"
               "       cllama board import-ref FILE.jsonl --box NAME [--bandwidth GBPS | --ceilings FILE]\n"
               "                   [--note TEXT] [--model FILE (llama-batched-bench rows)] [--records DIR]\n"
               "       cllama board --check [--box NAME] [--tolerance 0.05] [--records DIR]\n"
               "  defaults: records in $CLLAMA_RECORDS or <src>/bench/records; board in <src>/bench/.\n");
}

static double ceilings_bw(const char *path) {
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    double bw = j ? json_number_value(json_object_get(j, "read_GBps")) : 0;
    json_decref(j);
    return bw;
}

/* re-measure every cllama row of this box; a row more than tol below its record fails */
static int check(const char *recfile, const char *box, double tol) {
    json_t *doc = cll_bench_records_load(recfile, box);
    if (!doc) {
        fprintf(stderr, "cllama board: %s\n", cll_last_error());
        return 1;
    }
    json_t *rows = json_object_get(doc, "rows"), *r;
    size_t i;
    int checked = 0, bad = 0, skipped = 0;
    json_array_foreach(rows, i, r) {
        if (strcmp(json_string_value(json_object_get(r, "engine")) ?: "", "cllama")) continue;
        const char *path = json_string_value(json_object_get(r, "model_path"));
        const char *test = json_string_value(json_object_get(r, "test")) ?: "?";
        if (!path || access(path, R_OK) != 0) {
            printf("SKIP %s %s: model file %s is not here\n", test, path ? cll_bench_basename(path) : "?", path ? path : "");
            skipped++;
            continue;
        }
        int np = (int)json_integer_value(json_object_get(r, "n_prompt"));
        int ng = (int)json_integer_value(json_object_get(r, "n_gen"));
        int nt = (int)json_integer_value(json_object_get(r, "n_threads"));
        int backend = !strcmp(json_string_value(json_object_get(r, "backend")) ?: "cpu", "cuda");
        size_t reps = json_array_size(json_object_get(r, "samples_ts"));
        cll_bench_model *bm;
        if (cll_bench_open(path, backend, nt > 0 ? nt : 1, (np > ng ? np : ng) + 8, np > 0 ? np : 1, &bm) != CLL_OK) {
            printf("FAIL %s %s: %s\n", test, cll_bench_basename(path), cll_last_error());
            bad++;
            continue;
        }
        cll_bench_result res;
        cll_status st = cll_bench_measure(bm, np, ng, reps ? (int)reps : 5, isatty(2), &res);
        cll_bench_close(bm);
        double rec = json_number_value(json_object_get(r, "avg_ts"));
        if (st != CLL_OK) {
            printf("FAIL %s %s: %s\n", test, cll_bench_basename(path), cll_last_error());
            bad++;
            continue;
        }
        bool ok = res.avg_ts >= rec * (1.0 - tol);
        printf("%s %s %s: %.2f t/s now vs %.2f recorded (%+.1f%%)\n", ok ? "OK  " : "FAIL", test,
               cll_bench_basename(path), res.avg_ts, rec, rec > 0 ? 100.0 * (res.avg_ts / rec - 1) : 0);
        checked++;
        bad += !ok;
    }
    json_decref(doc);
    printf("board check: %d checked, %d below record by more than %.0f%%, %d skipped\n", checked, bad, tol * 100,
           skipped);
    if (bad) return 1;
    if (!checked) {
        fprintf(stderr, "cllama board: nothing to check for box '%s' in %s\n", box, recfile);
        return 3;
    }
    return 0;
}

int cll_cmd_board(int argc, char **argv) {
    char recdir[4096], md[4200], html[4200], box[256] = "";
    cll_bench_records_dir(recdir, sizeof recdir);
    snprintf(md, sizeof md, "%s/bench/BOARD.md", CLLAMA_SOURCE_DIR);
    snprintf(html, sizeof html, "%s/bench/board.html", CLLAMA_SOURCE_DIR);
    const char *import = NULL, *note = NULL, *model = NULL;
    double bw = 0, tol = 0.05;
    bool do_check = false;
    int i = 1;
    if (argc > 1 && !strcmp(argv[1], "import-ref")) {
        if (argc < 3) {
            usage(stderr);
            return 2;
        }
        import = argv[2];
        i = 3;
    } else if (argc > 1 && !strcmp(argv[1], "render")) i = 2;
    for (; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--records") && has) snprintf(recdir, sizeof recdir, "%s", argv[++i]);
        else if (!strcmp(a, "--md") && has) snprintf(md, sizeof md, "%s", argv[++i]);
        else if (!strcmp(a, "--html") && has) snprintf(html, sizeof html, "%s", argv[++i]);
        else if (!strcmp(a, "--box") && has) snprintf(box, sizeof box, "%s", argv[++i]);
        else if (!strcmp(a, "--bandwidth") && has) bw = atof(argv[++i]);
        else if (!strcmp(a, "--ceilings") && has) {
            bw = ceilings_bw(argv[++i]);
            if (bw <= 0) {
                fprintf(stderr, "cllama board: %s has no read_GBps\n", argv[i]);
                return 1;
            }
        } else if (!strcmp(a, "--note") && has) note = argv[++i];
        else if (!strcmp(a, "--model") && has) model = argv[++i];
        else if (!strcmp(a, "--check")) do_check = true;
        else if (!strcmp(a, "--tolerance") && has) tol = atof(argv[++i]);
        else {
            fprintf(stderr, "cllama board: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!*box) {
        if (import) {
            fprintf(stderr, "cllama board: import-ref needs --box NAME (the box the reference ran on)\n");
            return 2;
        }
        cll_bench_default_box(box, sizeof box);
    }
    char recfile[4400];
    cll_bench_records_path(recdir, box, recfile, sizeof recfile);
    if (do_check) return check(recfile, box, tol);
    if (import) {
        int n = 0;
        if (cll_bench_import_ref(import, recfile, box, bw, note, model, &n) != CLL_OK) {
            fprintf(stderr, "cllama board: %s\n", cll_last_error());
            return 1;
        }
        fprintf(stderr, "board: imported %d reference rows from %s into %s\n", n, import, recfile);
        return 0;
    }
    if (cll_bench_board_render(recdir, md, html) != CLL_OK) {
        fprintf(stderr, "cllama board: %s\n", cll_last_error());
        return 1;
    }
    fprintf(stderr, "board: wrote %s and %s\n", md, html);
    return 0;
}
