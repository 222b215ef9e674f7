/* tune/knob_race: races of the CPU driver's runtime knobs (cpu/knobs.h) on a model, end to end:
 * one loaded copy (knobs are read per call, so they switch between runs without a reload), per
 * knob its candidate values timed in ABBA rounds of tg (decode) and pp (prefill) runs, paired
 * against the default value per round; a value is crowned only when its interval clears the
 * margin on the sum of both (knobs never change what the model computes: every crown is
 * bit-exact by construction). Crowned values go to the sidecar's runtime section.
 * Owns the model copy while it races. Rule: the knobs are back at their defaults on return. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "cpu/knobs.h"
#include "tune/race.h"

#define KR_VALUES 4

static const struct {
    const char *name;
    double values[KR_VALUES]; /* values[0] = the default */
    int n;
} k_knobs[] = {
    {"cpu.chunks_per_thread", {4, 2, 8, 16}, 4},
    {"cpu.pf_gemv", {2048, 1024, 4096, 0}, 4},
    {"cpu.par_min_work", {32768, 8192, 131072, 0}, 3},
};

cll_status cll_race_knobs(const char *model, const cll_race_opts *o, cll_tune_sidecar *sc) {
    if (!model) return CLL_OK;
    const bool quick = o->mode && !strcmp(o->mode, "quick");
    const int ng = quick ? 16 : 64, np = quick ? 64 : 256, R = o->rounds < 2 ? 2 : o->rounds > 32 ? 32 : o->rounds;
    cll_bench_model *bm = NULL;
    cll_status st = cll_bench_open(model, 0, o->threads, np + ng + 8, np, &bm);
    if (st != CLL_OK) return st;
    char *race = (char *)calloc(1, 1 << 16);
    size_t rl = 0;
    if (!race) {
        cll_bench_close(bm);
        return cll_err(CLL_ERR_NOMEM, "tune: out of memory");
    }
    for (size_t k = 0; k < sizeof k_knobs / sizeof k_knobs[0] && st == CLL_OK; k++) {
        const int nv = k_knobs[k].n;
        double t[KR_VALUES][32];
        for (int r = 0; r < R && st == CLL_OK; r++)
            for (int i = 0; i < nv && st == CLL_OK; i++) {
                const int v = (r & 1) ? nv - 1 - i : i; /* ABBA */
                cll_cpu_knob_reset();
                if ((st = cll_cpu_knob_set(k_knobs[k].name, k_knobs[k].values[v])) != CLL_OK) break;
                cll_bench_result a, b;
                if ((st = cll_bench_measure(bm, 0, ng, 1, false, &a)) != CLL_OK) break;
                if ((st = cll_bench_measure(bm, np, 0, 1, false, &b)) != CLL_OK) break;
                t[v][r] = (a.avg_ts > 0 ? ng / a.avg_ts : 1e9) + (b.avg_ts > 0 ? np / b.avg_ts : 1e9); /* seconds */
            }
        cll_cpu_knob_reset();
        if (st != CLL_OK) break;
        const double margin = sc->noise_floor > o->min_margin ? sc->noise_floor : o->min_margin;
        int crown = -1;
        double c_ratio = 1e9;
        rl += (size_t)snprintf(race + rl, (1 << 16) - rl, "%s\"%s\": {\"rounds\": %d, \"tg\": %d, \"pp\": %d, \"values\": [",
                               rl ? ", " : "", k_knobs[k].name, R, ng, np);
        for (int v = 0; v < nv; v++) {
            double ratio = 1, lo = 1, hi = 1;
            if (v) cll_race_paired(t[v], t[0], R, &ratio, &lo, &hi);
            if (v && hi < 1.0 - margin && ratio < c_ratio) crown = v, c_ratio = ratio;
            rl += (size_t)snprintf(race + rl, (1 << 16) - rl, "%s{\"value\": %g, \"ratio\": %.4f, \"ci\": [%.4f, %.4f]}",
                                   v ? ", " : "", k_knobs[k].values[v], ratio, lo, hi);
        }
        rl += (size_t)snprintf(race + rl, (1 << 16) - rl, "], \"crown\": %g}",
                               crown >= 0 ? k_knobs[k].values[crown] : k_knobs[k].values[0]);
        if (crown >= 0) {
            if ((st = cll_tune_set_knob(sc, k_knobs[k].name, k_knobs[k].values[crown])) != CLL_OK) break;
        } else {
            /* a tie: the default stands (an older crown of this knob is dropped) */
            for (int i = 0; i < sc->n_runtime; i++)
                if (!strcmp(sc->runtime[i].name, k_knobs[k].name)) sc->runtime[i] = sc->runtime[--sc->n_runtime];
        }
        fprintf(stderr, "tune: knob %-22s %s\n", k_knobs[k].name,
                crown >= 0 ? "crowned" : "tie (default stands)");
    }
    cll_bench_close(bm);
    cll_cpu_knob_reset();
    if (st == CLL_OK && rl) { /* the knob races join the race section */
        char *old = sc->race_json;
        const size_t ol = old ? strlen(old) : 0;
        char *nj = (char *)malloc(ol + rl + 32);
        if (nj) {
            if (ol > 2) snprintf(nj, ol + rl + 32, "%.*s, \"knobs\": {%s}}", (int)(ol - 1), old, race);
            else snprintf(nj, ol + rl + 32, "{\"knobs\": {%s}}", race);
            free(old);
            sc->race_json = nj;
        }
    }
    free(race);
    return st;
}
