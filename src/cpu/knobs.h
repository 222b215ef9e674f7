/* cpu/knobs: the CPU driver's runtime knobs, once compile-time constants; the current values are
 * the defaults (each cites the measurement that set it, where it is used), a tune sidecar's
 * "runtime" section may set them (cll_cpu_knob_set, by name) before a model loads.
 * Owns the process-wide knob values. Rule: a knob never changes what the model computes, only how
 * the work is cut and prefetched (a value outside its range is an error, not a clamp). */
#ifndef CLL_CPU_KNOBS_H
#define CLL_CPU_KNOBS_H

#include <stdint.h>

#include "core/core.h"

typedef struct {
    int chunks_per_thread; /* row chunks per thread of a matmul (matmul.c) */
    int64_t par_min_work;  /* elementwise work below this runs on the calling thread (forward.c) */
    int pf_gemv;           /* software prefetch distance of the AVX2 r8 tiles (every token count), bytes (kern_r8_avx2.c) */
    int small_n_max;       /* 2..this many tokens run a weight's small-n row, when it has one (matmul.c) */
} cll_cpu_knobs;

extern cll_cpu_knobs cll_cpu_knob;

/* set knob "cpu.chunks_per_thread" | "cpu.par_min_work" | "cpu.pf_gemv" | "cpu.small_n_max" (CLL_ERR_ARG: unknown
 * name, or value outside the knob's range; the message lists the knobs and ranges) */
cll_status cll_cpu_knob_set(const char *name, double value);
/* the knobs to their defaults */
void cll_cpu_knob_reset(void);

#endif
