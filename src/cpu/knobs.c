/* cpu/knobs: the runtime knob values (knobs.h). */
#include "cpu/knobs.h"

#include <string.h>

/* (a macro, not a const object: C wants a constant initializer for the global) */
#define KNOB_DEFAULTS                                                                                        \
    {                                                                                                        \
        .chunks_per_thread = 4, /* a few per thread: a parked thread holds at most one chunk */             \
        .par_min_work = 32768,  /* a fork-join costs more than it saves below this */                       \
        .pf_gemv = 2048,        /* kbench -c, 1 core: 2048 beat 4096 and 8192 for the 4-bit types */        \
        .small_n_max = 8,       /* kbench -t 2, 8192x2048, r8x4 vs r8z16x8 ms (Q4_0, Q4_K, Q6_K): n 2       \
                                   0.23/0.53, 0.21/0.69, 0.38/1.55; n 4 0.27/0.47, 0.26/0.69, 0.50/2.12;     \
                                   n 6 0.65/0.57, 0.63/0.80, 1.06/1.82; n 8 0.68/0.77, 0.84/0.85, 1.38/1.78; \
                                   r8x4 with the zmm pair tiles (session 23): n 6 0.51, 0.56, 0.97; n 8 0.59,  \
                                   0.66, 1.10 */                                                               \
    }
static const cll_cpu_knobs k_defaults = KNOB_DEFAULTS;

cll_cpu_knobs cll_cpu_knob = KNOB_DEFAULTS;

static const struct {
    const char *name;
    double lo, hi;
} k_ranges[] = {{"cpu.chunks_per_thread", 1, 64},
                {"cpu.par_min_work", 0, 1 << 26},
                {"cpu.pf_gemv", 0, 16384},
                {"cpu.small_n_max", 0, 64}};

cll_status cll_cpu_knob_set(const char *name, double value) {
    for (size_t i = 0; i < sizeof k_ranges / sizeof k_ranges[0]; i++) {
        if (!name || strcmp(name, k_ranges[i].name)) continue;
        if (!(value >= k_ranges[i].lo && value <= k_ranges[i].hi) || value != (double)(int64_t)value)
            return cll_err(CLL_ERR_ARG, "knob %s = %g: outside [%g, %g] or not an integer", name, value, k_ranges[i].lo,
                           k_ranges[i].hi);
        if (i == 0) cll_cpu_knob.chunks_per_thread = (int)value;
        else if (i == 1) cll_cpu_knob.par_min_work = (int64_t)value;
        else if (i == 2) cll_cpu_knob.pf_gemv = (int)value & ~63; /* whole cache lines */
        else cll_cpu_knob.small_n_max = (int)value;
        return CLL_OK;
    }
    return cll_err(CLL_ERR_ARG, "no CPU knob '%s' (knobs: cpu.chunks_per_thread 1..64, cpu.par_min_work 0..2^26, "
                                "cpu.pf_gemv 0..16384 bytes, cpu.small_n_max 0..64 tokens)",
                   name ? name : "");
}

void cll_cpu_knob_reset(void) { cll_cpu_knob = k_defaults; }
