/* cpu/knobs: the runtime knob values (knobs.h). */
#include "cpu/knobs.h"

#include <string.h>

/* (a macro, not a const object: C wants a constant initializer for the global) */
#define KNOB_DEFAULTS                                                                                        \
    {                                                                                                        \
        .chunks_per_thread = 4, /* a few per thread: a parked thread holds at most one chunk */             \
        .par_min_work = 32768,  /* a fork-join costs more than it saves below this */                       \
        .pf_gemv = 2048,        /* kbench -c, 1 core: 2048 beat 4096 and 8192 for the 4-bit types */        \
    }
static const cll_cpu_knobs k_defaults = KNOB_DEFAULTS;

cll_cpu_knobs cll_cpu_knob = KNOB_DEFAULTS;

static const struct {
    const char *name;
    double lo, hi;
} k_ranges[] = {{"cpu.chunks_per_thread", 1, 64}, {"cpu.par_min_work", 0, 1 << 26}, {"cpu.pf_gemv", 0, 16384}};

cll_status cll_cpu_knob_set(const char *name, double value) {
    for (size_t i = 0; i < sizeof k_ranges / sizeof k_ranges[0]; i++) {
        if (!name || strcmp(name, k_ranges[i].name)) continue;
        if (!(value >= k_ranges[i].lo && value <= k_ranges[i].hi) || value != (double)(int64_t)value)
            return cll_err(CLL_ERR_ARG, "knob %s = %g: outside [%g, %g] or not an integer", name, value, k_ranges[i].lo,
                           k_ranges[i].hi);
        if (i == 0) cll_cpu_knob.chunks_per_thread = (int)value;
        else if (i == 1) cll_cpu_knob.par_min_work = (int64_t)value;
        else cll_cpu_knob.pf_gemv = (int)value & ~63; /* whole cache lines */
        return CLL_OK;
    }
    return cll_err(CLL_ERR_ARG, "no CPU knob '%s' (knobs: cpu.chunks_per_thread 1..64, cpu.par_min_work 0..2^26, "
                                "cpu.pf_gemv 0..16384 bytes)",
                   name ? name : "");
}

void cll_cpu_knob_reset(void) { cll_cpu_knob = k_defaults; }
