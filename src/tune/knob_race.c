/* tune/knob_race: races of the runtime knobs on a model, end to end. Per knob its candidate values
 * timed in ABBA rounds, paired against the default value per round; a value is crowned only when
 * its interval clears the margin (knobs never change what the model computes: every crown is
 * bit-exact by construction). Crowned values go to the sidecar's runtime section.
 *  - CPU (cpu/knobs.h): one loaded copy (knobs are read per call, so they switch between runs
 *    without a reload); a round is a tg (decode) plus a pp (prefill) run.
 *  - CUDA (cuda/knobs.h): a decode graph keeps the values it was captured with, so each value gets
 *    its own loaded copy, captured while that value is set (the crowns won before it in force);
 *    a round is one served tg run of each copy (the SM clock watched as in the serving races).
 * Owns the model copies while it races. Rule: the knobs are back at their defaults on return. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "cpu/knobs.h"
#include "cuda/knobs.h"
#include "tune/race.h"

#define KR_VALUES 4

typedef struct {
    const char *name;
    double values[KR_VALUES]; /* values[0] = the default */
    int n;
} kr_knob;

static const kr_knob k_cpu[] = {
    {"cpu.chunks_per_thread", {4, 2, 8, 16}, 4},
    {"cpu.pf_gemv", {2048, 1024, 4096, 0}, 4},
    {"cpu.par_min_work", {32768, 8192, 131072, 0}, 3},
};

/* the CUDA knobs raced and their challengers (the default, from cuda/knobs.c, leads; a challenger
 * equal to it is left out): the prefetch sizes of the decode step, the gemvs' early trigger and the
 * decode attention's keys in flight */
static const struct {
    const char *name;
    double challengers[KR_VALUES - 1];
    int n;
} k_cuda[] = {
    {"cuda.attn_pf_mb", {0, 16, 40}, 3},  {"cuda.act_pf_mb", {0, 16}, 2},
    {"cuda.l2next_o_mb", {4, 16}, 2},     {"cuda.l2next_down_mb", {4, 16}, 2},
    {"cuda.l2next_mb", {2, 8}, 2},        {"cuda.gemv_trigger", {0, 1}, 2},
    {"cuda.attn_loads8", {0, 1}, 2},
};

const char *cll_race_cuda_knob(int i) {
    return i >= 0 && (size_t)i < sizeof k_cuda / sizeof k_cuda[0] ? k_cuda[i].name : NULL;
}

/* the crown rule on t[value][round] (seconds), the race section's entry appended to race, the
 * sidecar's runtime section updated (a tie drops an older crown of the knob) */
static cll_status judge(const kr_knob *k, double t[][64], int R, int ng, int np, double margin, char *race, size_t *rl,
                        size_t cap, cll_tune_sidecar *sc) {
    int crown = -1;
    double c_ratio = 1e9;
    *rl += (size_t)snprintf(race + *rl, cap - *rl, "%s\"%s\": {\"rounds\": %d, \"tg\": %d, \"pp\": %d, \"margin\": %.4f, \"values\": [",
                            *rl ? ", " : "", k->name, R, ng, np, margin);
    for (int v = 0; v < k->n; v++) {
        double ratio = 1, lo = 1, hi = 1;
        if (v) cll_race_paired(t[v], t[0], R, &ratio, &lo, &hi);
        if (v && hi < 1.0 - margin && ratio < c_ratio) crown = v, c_ratio = ratio;
        *rl += (size_t)snprintf(race + *rl, cap - *rl, "%s{\"value\": %g, \"ratio\": %.4f, \"ci\": [%.4f, %.4f]}",
                                v ? ", " : "", k->values[v], ratio, lo, hi);
    }
    *rl += (size_t)snprintf(race + *rl, cap - *rl, "], \"crown\": %g}", crown >= 0 ? k->values[crown] : k->values[0]);
    fprintf(stderr, "tune: knob %-22s %s\n", k->name,
            crown >= 0 ? "crowned" : "tie (default stands)");
    if (crown >= 0) {
        fprintf(stderr, "tune:   %s = %g: %.3f of the default's time\n", k->name, k->values[crown], c_ratio);
        return cll_tune_set_knob(sc, k->name, k->values[crown]);
    }
    for (int i = 0; i < sc->n_runtime; i++)
        if (!strcmp(sc->runtime[i].name, k->name)) sc->runtime[i] = sc->runtime[--sc->n_runtime];
    return CLL_OK;
}

/* the knob races join the race section */
static void join_race(cll_tune_sidecar *sc, const char *race, size_t rl) {
    if (!rl) return;
    char *old = sc->race_json;
    const size_t ol = old ? strlen(old) : 0;
    char *nj = (char *)malloc(ol + rl + 32);
    if (!nj) return;
    if (ol > 2) snprintf(nj, ol + rl + 32, "%.*s, \"knobs\": {%s}}", (int)(ol - 1), old, race);
    else snprintf(nj, ol + rl + 32, "{\"knobs\": {%s}}", race);
    free(old);
    sc->race_json = nj;
}

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
    for (size_t k = 0; k < sizeof k_cpu / sizeof k_cpu[0] && st == CLL_OK; k++) {
        const int nv = k_cpu[k].n;
        double t[KR_VALUES][64];
        for (int r = 0; r < R && st == CLL_OK; r++)
            for (int i = 0; i < nv && st == CLL_OK; i++) {
                const int v = (r & 1) ? nv - 1 - i : i; /* ABBA */
                cll_cpu_knob_reset();
                if ((st = cll_cpu_knob_set(k_cpu[k].name, k_cpu[k].values[v])) != CLL_OK) break;
                cll_bench_result a, b;
                if ((st = cll_bench_measure(bm, 0, ng, 1, false, &a)) != CLL_OK) break;
                if ((st = cll_bench_measure(bm, np, 0, 1, false, &b)) != CLL_OK) break;
                t[v][r] = (a.avg_ts > 0 ? ng / a.avg_ts : 1e9) + (b.avg_ts > 0 ? np / b.avg_ts : 1e9); /* seconds */
            }
        cll_cpu_knob_reset();
        if (st != CLL_OK) break;
        const double margin = sc->noise_floor > o->min_margin ? sc->noise_floor : o->min_margin;
        st = judge(&k_cpu[k], t, R, ng, np, margin, race, &rl, 1 << 16, sc);
    }
    cll_bench_close(bm);
    cll_cpu_knob_reset();
    if (st == CLL_OK) join_race(sc, race, rl);
    free(race);
    return st;
}

/* the CUDA knobs as the sidecar's crowns so far set them (over the environment: these are this
 * race's own results), then knob = value */
static cll_status cuda_knobs_for(const cll_tune_sidecar *sc, const char *knob, double value) {
    cll_cuda_knob_reset();
    for (int i = 0; i < sc->n_runtime; i++)
        if (!strncmp(sc->runtime[i].name, "cuda.", 5) && strcmp(sc->runtime[i].name, knob)) {
            const cll_status st = cll_cuda_knob_set(sc->runtime[i].name, sc->runtime[i].value, true, NULL);
            if (st != CLL_OK) return st;
        }
    return cll_cuda_knob_set(knob, value, true, NULL);
}

cll_status cll_race_knobs_cuda(const char *model, const cll_race_opts *o, cll_tune_sidecar *sc, double t_start) {
    if (!model) return CLL_OK;
    const bool quick = o->mode && !strcmp(o->mode, "quick");
    const int ng = quick ? 32 : 128, R = o->rounds < 2 ? 2 : o->rounds > 64 ? 64 : o->rounds;
    char *race = (char *)calloc(1, 1 << 16);
    size_t rl = 0;
    if (!race) return cll_err(CLL_ERR_NOMEM, "tune: out of memory");
    cll_status st = CLL_OK;
    double longest = 0.0; /* the longest knob race so far (the budget's estimate of the next) */
    for (size_t k = 0; k < sizeof k_cuda / sizeof k_cuda[0] && st == CLL_OK; k++) {
        if (!cll_race_budget_allows(o->budget_s, cll_now() - t_start, longest)) {
            fprintf(stderr, "tune: budget of %.0f s reached: knob %s and the knobs after it not raced\n", o->budget_s,
                    k_cuda[k].name);
            break;
        }
        const double t_knob = cll_now();
        kr_knob kn;
        memset(&kn, 0, sizeof kn);
        kn.name = k_cuda[k].name;
        int dflt = 0, d = 0;
        const char *nm = NULL;
        for (int i = 0; cll_cuda_knob_info(i, &nm, NULL, NULL, &d, NULL); i++)
            if (!strcmp(nm, kn.name)) dflt = d;
        kn.values[kn.n++] = dflt;
        for (int c = 0; c < k_cuda[k].n; c++)
            if (k_cuda[k].challengers[c] != (double)dflt) kn.values[kn.n++] = k_cuda[k].challengers[c];
        if (kn.n < 2) continue;
        cll_bench_model *bm[KR_VALUES] = {0};
        bool over = false;
        for (int v = 0; v < kn.n && st == CLL_OK; v++) {
            if ((st = cuda_knobs_for(sc, kn.name, kn.values[v])) != CLL_OK) break;
            cll_bench_result w;
            if ((st = cll_bench_open(model, 1, o->threads, ng + 8, 1, &bm[v])) == CLL_OK)
                st = cll_bench_measure(bm[v], 0, 1, 1, false, &w); /* the graph captured with this value */
            if (st == CLL_OK && v == 0 && longest <= 0.0 && o->budget_s > 0) {
                /* no finished knob race to go by: the first copy's load and one served round say how
                 * long this one will take, before the other copies load */
                const double t_load = cll_now() - t_knob, t0 = cll_now();
                double sec = 0.0;
                if ((st = cll_race_served_tg(bm[0], ng, true, kn.name, &sec)) != CLL_OK) break;
                const double est = cll_race_knob_estimate(kn.n, t_load, cll_now() - t0, R, sc->noise_floor <= 0.0);
                if (!cll_race_budget_allows(o->budget_s, t_knob - t_start, est)) {
                    fprintf(stderr, "tune: knob %s would take ~%.0f s, past the budget of %.0f s (%.0f s used): it and "
                                    "the knobs after it not raced\n",
                            kn.name, est, o->budget_s, cll_now() - t_start);
                    over = true;
                    break;
                }
            }
        }
        cll_cuda_knob_reset();
        if (over) {
            for (int v = 0; v < kn.n; v++) cll_bench_close(bm[v]);
            break;
        }
        if (st == CLL_OK && sc->noise_floor <= 0.0) { /* no site race probed the noise */
            sc->noise_floor = cll_race_probe_tg(bm[0], ng, o->test_noise);
            for (int i = 0; i < 3; i++) sc->noise_probes[i] = sc->noise_floor;
            if (sc->noise_floor > o->noise_bar && !o->force) {
                fprintf(stderr, "tune: the GPU is too noisy to race knobs (cv %.1f%%, bar %.0f%%): none raced\n",
                        100 * sc->noise_floor, 100 * o->noise_bar);
                for (int v = 0; v < kn.n; v++) cll_bench_close(bm[v]);
                break;
            }
        }
        double t[KR_VALUES][64];
        for (int r = 0; r < R && st == CLL_OK; r++)
            for (int i = 0; i < kn.n && st == CLL_OK; i++) {
                const int v = (r & 1) ? kn.n - 1 - i : i; /* ABBA */
                st = cll_race_served_tg(bm[v], ng, true, kn.name, &t[v][r]);
            }
        for (int v = 0; v < kn.n; v++) cll_bench_close(bm[v]);
        if (st != CLL_OK) break;
        const double margin = sc->noise_floor > o->min_margin ? sc->noise_floor : o->min_margin;
        st = judge(&kn, t, R, ng, 0, margin, race, &rl, 1 << 16, sc);
        if (cll_now() - t_knob > longest) longest = cll_now() - t_knob;
    }
    cll_cuda_knob_reset();
    if (st == CLL_OK) join_race(sc, race, rl);
    free(race);
    return st;
}
