/* cuda/knobs: the CUDA driver's runtime knobs: settings that change how a step is launched and
 * what it asks L2 for, never what it computes (every kernel reads the same bytes and sums in the
 * same order whatever their values). Once process-wide environment reads; now one table: the
 * defaults (each cites the measurement that set it in knobs.c), then the CLLAMA_CUDA_* variable
 * of each knob, then a tune sidecar's "runtime" section ("cuda.<knob>") or the tuner's races.
 * Values are read when a step is launched or captured: a decode graph keeps the values it was
 * captured with (at the context's creation), so a knob is set before the context is created.
 * Owns the process-wide knob values. Rule: a value outside its range is an error, not a clamp. */
#ifndef CLL_CUDA_KNOBS_H
#define CLL_CUDA_KNOBS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int l2next_mb;      /* MB of the next product's weights a gemv's last wave asks L2 for */
    int l2next_o_mb;    /* the same for the o product (gate|up next; -1: l2next_mb) */
    int l2next_down_mb; /* the same for the down product (the next layer's q|k|v; -1: l2next_mb) */
    int attn_pf_mb;     /* MB of the o weights the decode attention asks L2 for (0: none) */
    int attn_pf_kv_mb;  /* ... while this token's K and V rows are at most this many MB */
    int act_pf_mb;      /* MB of the down weights the decode activation asks L2 for (0: none) */
    int gemv_trigger;   /* 1: a gemv lets the next kernel launch first thing (PDL), 0: when it ends */
    int pdl;            /* 1: kernels launch with programmatic dependent launch */
    int batch_graph;    /* 1: batched decode steps replay captured graphs, 0: run eagerly */
    int attn_loads8;    /* 1: the split decode attention keeps 8 keys a warp in flight (blocks of <= 2
                         * q heads), 0: 4; the same sums in the same order */
} cll_cuda_knobs;

/* the current values (the first call reads the environment) */
const cll_cuda_knobs *cll_cuda_knobs_now(void);
/* set knob NAME ("cuda.l2next_mb", ...). A knob whose CLLAMA_CUDA_* variable is set keeps the
 * variable's value unless over_env (the tuner's races); *kept (may be NULL) says so.
 * CLL_ERR_ARG: unknown name or a value outside the knob's range (the message lists them). */
cll_status cll_cuda_knob_set(const char *name, double value, bool over_env, bool *kept);
/* the defaults, then the environment */
void cll_cuda_knob_reset(void);
/* knob i (0..): its name, range, default and environment variable; false past the last */
bool cll_cuda_knob_info(int i, const char **name, int *lo, int *hi, int *dflt, const char **env);

#ifdef __cplusplus
}
#endif

#endif
