/* cpu/forward_internal: the structs behind cll_cpu_model and cll_cpu_state, shared by
 * forward_setup.c (creation) and forward.c (the pass).
 * Owns nothing beyond the declarations. Rule: only forward*.c include this. */
#ifndef CLL_CPU_FORWARD_INTERNAL_H
#define CLL_CPU_FORWARD_INTERNAL_H

#include "cpu/forward.h"
#include "cpu/matmul.h"

typedef struct {
    cll_cpu_weight *wq, *wk, *wv, *wo;
    cll_cpu_weight *gate, *up, *down;            /* dense FFN */
    cll_cpu_weight *router;                      /* MoE: (n_expert x n_embd) */
    cll_cpu_weight **gate_e, **up_e, **down_e;   /* MoE: (n_expert_here) per-expert slices, expert
                                                  * expert0 + i at [i] (hparams; all of them unsplit) */
    /* f32 copies of the small vectors; NULL when the tensor is absent */
    float *attn_norm, *ffn_norm, *post_attn_norm, *post_ffn_norm; /* (n_embd) */
    float *q_norm, *k_norm;                      /* (head_dim_k) */
    float *bq, *bk, *bv;                         /* (n_head*hd_k), (n_kv*hd_k), (n_kv*hd_v) */
} cll_cpu_layer;

struct cll_cpu_model {
    const cll_model *m;
    cll_cpu_layer *layers;   /* (n_layer) */
    cll_cpu_weight *output;  /* (n_logits x n_embd) */
    float *output_norm;      /* (n_embd) */
    float *rope_ff;          /* (n_rot/2) frequency factors or NULL */
    uint16_t *gelu_tab;      /* (65536) fp16 GELU table, gelu archs only */
    cll_cpu_weight **all;    /* (n_all) every prepared weight, for scratch sizing */
    int64_t n_all;
};

struct cll_cpu_state {
    const cll_cpu_model *cm;
    cll_pool *pool;
    int32_t nth;
    cll_cpu_state_params p;
    int64_t kv_k, kv_v;      /* floats per position: n_kv*hd_k, n_kv*hd_v */
    bool kv_paged;           /* the cache is a pool of p.n_cells cells in blocks of 1 << kv_shift */
    int32_t kv_shift;
    void **kc, **vc;         /* (n_layer) each (n_seq, n_ctx, kv_k|kv_v) f16 or f32, cell
                              * cll_kv_cell(seq, pos, n_ctx) (model/plan.h) */
    /* Activations: sub-buffers of one 64-byte-aligned block (act_block), laid out by the
     * spec table in forward_setup.c (one row per buffer below); absent ones are NULL. */
    void *act_block;
    float *x;                /* (n_batch, n_embd) residual stream */
    float *xn;               /* (n_batch, n_embd) normed input of a block */
    float *q;                /* (n_batch, n_head*hd_k) */
    float *k, *v;            /* (n_batch, kv_k), (n_batch, kv_v) */
    float *ao;               /* (n_batch, n_head*hd_v) attention output */
    float *t;                /* (n_batch, n_embd) block output before residual add */
    float *g, *u;            /* (n_batch, n_ff_max) gate / up */
    float *scores;           /* (nth, sc_ld) attention scratch per thread: probabilities (n_ctx)
                              * or the fp16 running sum of the F16-cache path (head_dim_v) */
    int64_t sc_ld;           /* floats of scratch per thread: max(n_ctx, head_dim_v, the
                              * attention tile's scratch), a multiple of 16 */
    float *rope;             /* (nth, n_rot) cos/sin per thread */
    float *xo;               /* (n_out_max, n_embd) rows that want logits */
    /* MoE */
    float *router;           /* (n_batch, n_expert) */
    int32_t *sel;            /* (n_batch, n_used) chosen experts */
    float *selw;             /* (n_batch, n_used) their weights */
    int32_t *erow;           /* (n_batch) batch row of each gathered row for one expert */
    int32_t *eslot;          /* (n_batch) slot of each gathered row */
    float *xe;               /* (n_batch, n_embd) gathered inputs of one expert */
    float *de;               /* (n_batch, n_embd) expert output */
    float *moe;              /* (n_batch, n_used, n_embd) per-slot weighted expert outputs */
    void *mm;                /* matmul scratch: the largest cll_cpu_matmul_scratch of any weight */
    size_t bytes;            /* KV cache + act_block */
    uint64_t ar_calls;       /* tensor parallel: all-reduces run, host seconds inside them */
    double ar_seconds;
    /* the batch being run (forward only) */
    const cll_cpu_batch *b;
    int32_t il;
};

#endif
