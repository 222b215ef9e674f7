/* cuda/knobs: the CUDA runtime knob values (knobs.h); plain C, built with or without nvcc. */
#include "cuda/knobs.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name, *env;
    int lo, hi, dflt;
    size_t off;
} k_tab[] = {
    /* l2-7b Q4_0 tg128 on the H200: 0 MB 533, 2 MB 540, 4 MB 543, 8 MB 520 tok/s (more races the
     * next gemv's own loads for the same lines) */
    {"cuda.l2next_mb", "CLLAMA_CUDA_L2NEXT_MB", 0, 40, 4, offsetof(cll_cuda_knobs, l2next_mb)},
    {"cuda.l2next_o_mb", "CLLAMA_CUDA_L2NEXT_O_MB", -1, 40, -1, offsetof(cll_cuda_knobs, l2next_o_mb)},
    {"cuda.l2next_down_mb", "CLLAMA_CUDA_L2NEXT_DOWN_MB", -1, 40, -1, offsetof(cll_cuda_knobs, l2next_down_mb)},
    /* the gap prefetches, off: l2-7b tg128 -r 3 on the H200 (bed4b60, one call): Q4_0 603.7 / 601.3
     * without, attn_pf_mb 40 604.0, + act_pf_mb 16 593.4, + l2next_o/down_mb 12 577.0; Q8_0 405.9 /
     * 406.3 without, all four 384.4; F16 268.4 / 269.2 without, all four 260.3 (the prefetched
     * lines race the next product's own loads); cllama tune on l2-7b Q4_K_M: attn_pf_mb a tie */
    {"cuda.attn_pf_mb", "CLLAMA_CUDA_ATTN_PF_MB", 0, 64, 0, offsetof(cll_cuda_knobs, attn_pf_mb)},
    {"cuda.attn_pf_kv_mb", "CLLAMA_CUDA_ATTN_PF_KV_MB", 0, 1024, 16, offsetof(cll_cuda_knobs, attn_pf_kv_mb)},
    {"cuda.act_pf_mb", "CLLAMA_CUDA_ACT_PF_MB", 0, 64, 0, offsetof(cll_cuda_knobs, act_pf_mb)},
    /* l2-7b Q4_0 tg128: 547.6 (first thing) vs 543.0 tok/s (at the end) */
    {"cuda.gemv_trigger", "CLLAMA_CUDA_GEMV_TRIGGER", 0, 1, 1, offsetof(cll_cuda_knobs, gemv_trigger)},
    {"cuda.pdl", "CLLAMA_CUDA_PDL", 0, 1, 1, offsetof(cll_cuda_knobs, pdl)},
    {"cuda.batch_graph", "CLLAMA_CUDA_BATCH_GRAPH", 0, 1, 1, offsetof(cll_cuda_knobs, batch_graph)},
    /* keys in flight a warp in the split attention kernel (cll_cu_attn_loads): off until measured */
    {"cuda.attn_loads8", "CLLAMA_CUDA_ATTN_LOADS8", 0, 1, 0, offsetof(cll_cuda_knobs, attn_loads8)},
};
#define K_N (sizeof k_tab / sizeof k_tab[0])

static cll_cuda_knobs g_now;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int *slot(size_t i) { return (int *)((char *)&g_now + k_tab[i].off); }

/* the knob's variable as a value in range; false when unset (a bad value warns once, unset) */
static bool env_value(size_t i, int *v) {
    const char *e = getenv(k_tab[i].env);
    if (!e || !*e) return false;
    char *end = NULL;
    const long x = strtol(e, &end, 10);
    if (*end || x < k_tab[i].lo || x > k_tab[i].hi) {
        fprintf(stderr, "cllama: %s=%s: not an integer in [%d, %d]; %s keeps its default %d\n", k_tab[i].env, e,
                k_tab[i].lo, k_tab[i].hi, k_tab[i].name, k_tab[i].dflt);
        return false;
    }
    *v = (int)x;
    return true;
}

static void reset_now(void) {
    for (size_t i = 0; i < K_N; i++) {
        int v = k_tab[i].dflt;
        env_value(i, &v);
        *slot(i) = v;
    }
}

const cll_cuda_knobs *cll_cuda_knobs_now(void) {
    pthread_once(&g_once, reset_now);
    return &g_now;
}

void cll_cuda_knob_reset(void) {
    pthread_once(&g_once, reset_now);
    reset_now();
}

cll_status cll_cuda_knob_set(const char *name, double value, bool over_env, bool *kept) {
    pthread_once(&g_once, reset_now);
    if (kept) *kept = false;
    for (size_t i = 0; i < K_N; i++) {
        if (!name || strcmp(name, k_tab[i].name)) continue;
        if (!(value >= k_tab[i].lo && value <= k_tab[i].hi) || value != (double)(int64_t)value)
            return cll_err(CLL_ERR_ARG, "knob %s = %g: outside [%d, %d] or not an integer", name, value, k_tab[i].lo,
                           k_tab[i].hi);
        int ev;
        if (!over_env && env_value(i, &ev)) {
            *slot(i) = ev;
            if (kept) *kept = true;
            return CLL_OK;
        }
        *slot(i) = (int)value;
        return CLL_OK;
    }
    char list[512];
    size_t l = 0;
    for (size_t i = 0; i < K_N && l < sizeof list; i++)
        l += (size_t)snprintf(list + l, sizeof list - l, "%s%s %d..%d", i ? ", " : "", k_tab[i].name, k_tab[i].lo,
                              k_tab[i].hi);
    return cll_err(CLL_ERR_ARG, "no CUDA knob '%s' (knobs: %s)", name ? name : "", list);
}

bool cll_cuda_knob_info(int i, const char **name, int *lo, int *hi, int *dflt, const char **env) {
    if (i < 0 || (size_t)i >= K_N) return false;
    if (name) *name = k_tab[i].name;
    if (lo) *lo = k_tab[i].lo;
    if (hi) *hi = k_tab[i].hi;
    if (dflt) *dflt = k_tab[i].dflt;
    if (env) *env = k_tab[i].env;
    return true;
}
