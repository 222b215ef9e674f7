/* cpu/forward: the CPU driver's forward pass for a batch of tokens of one or more sequences,
 * written once from the model recipe (norms, rope kind, biases, q/k-norm, post-norms,
 * sliding window, MoE).
 * Owns: cll_cpu_model = prepared weights + f32 copies of the small vectors (model lifetime);
 * cll_cpu_state = KV cache (n_seq regions of n_ctx) + every activation buffer (session lifetime).
 * Rule: cll_cpu_forward allocates nothing; a prefill of n tokens is one batched pass. */
#ifndef CLL_CPU_FORWARD_H
#define CLL_CPU_FORWARD_H

#include "core/threads.h"
#include "model/model.h"

typedef struct cll_cpu_model cll_cpu_model;
typedef struct cll_cpu_state cll_cpu_state;

cll_status cll_cpu_model_create(const cll_model *m, cll_cpu_model **out);
void cll_cpu_model_free(cll_cpu_model *cm);
/* name of the kernel chosen for the first layer's q projection (for logs) */
const char *cll_cpu_model_kernel_desc(const cll_cpu_model *cm);

typedef struct {
    int32_t n_ctx;     /* KV positions per sequence */
    int32_t n_seq;     /* sequences, each with its own KV region */
    int32_t n_batch;   /* max tokens per forward */
    int32_t n_out_max; /* max logits rows per forward */
    bool kv_f32;       /* F32 KV cache (goldens); default F16 like llama.cpp */
    bool ggml_numerics;/* CLLAMA_NUMERICS_GGML: attention is llama.cpp's 1-thread flash attention
                        * (no split-KV merge); the caller feeds one token per forward */
    int32_t n_cells;   /* > 0: a paged KV pool of this many cells (blocks of block_cells, a power of
                        * two) addressed through each batch's block tables; 0: n_seq x n_ctx */
    int32_t block_cells;
    /* tensor parallel: this state is rank `rank` of the group comm (cpu/comm.h); the forward sums the
     * partial outputs of O, down and the experts over the ranks there. NULL: the whole model */
    struct cll_cpu_comm *comm;
    int32_t rank;
} cll_cpu_state_params;

cll_status cll_cpu_state_create(const cll_cpu_model *cm, const cll_cpu_state_params *p, cll_pool *pool,
                                cll_cpu_state **out);
void cll_cpu_state_free(cll_cpu_state *s);
size_t cll_cpu_state_bytes(const cll_cpu_state *s);

typedef struct {
    int32_t n;
    const int32_t *tokens; /* (n) */
    const int32_t *pos;    /* (n) position of each token in its sequence */
    const int32_t *seq;    /* (n) sequence id < n_seq */
    const int8_t *want;    /* (n) nonzero: write logits for this token; NULL = last token only */
    const int32_t *blocks; /* paged: n_seq x blocks_stride block ids (model/driver.h) */
    int32_t blocks_stride;
} cll_cpu_batch;

/* Run the batch; K/V of every token land in the cache at (seq, pos) first, so a token sees
 * its own sequence's keys at positions <= its own. logits (n_want, n_vocab) in batch order.
 * The caller has checked ids, positions and capacity; this re-checks the cheap bounds. */
cll_status cll_cpu_forward(cll_cpu_state *s, const cll_cpu_batch *b, float *logits);
/* tensor parallel: the all-reduces run and the host seconds spent in them (waits included) */
void cll_cpu_state_allreduce_stats(const cll_cpu_state *s, uint64_t *calls, double *seconds);

#endif
