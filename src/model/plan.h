/* model/plan: the shape plan of a bound model that both drivers share — the list of matmul
 * sites (layer x kind: weight type, rows, cols, experts, bytes, calls per decode step) that
 * the kernel registry, `cllama bench` and the tuner enumerate, the weight bytes one decode
 * token reads (the bandwidth roofline), and the one KV-cell addressing rule.
 * Owns: the site array of a cll_plan (the cll_model must outlive it).
 * Rule: derived from the cll_model alone (no backend state); a driver that addresses the KV
 * cache or walks the weights does it through here, so the CPU and CUDA paths cannot drift. */
#ifndef CLL_MODEL_PLAN_H
#define CLL_MODEL_PLAN_H

#include "model/model.h"

/* KV cache: sequence seq owns cells [seq*n_ctx, (seq+1)*n_ctx); position pos of it is one
 * cell. A layer's K (V) cache is (n_seq * n_ctx, n_kv_head * head_dim_k|v) in cell order. */
static inline int64_t cll_kv_cell(int32_t seq, int32_t pos, int32_t n_ctx) {
    return (int64_t)seq * n_ctx + pos;
}

typedef enum {
    CLL_SITE_ATTN_Q = 0,
    CLL_SITE_ATTN_K,
    CLL_SITE_ATTN_V,
    CLL_SITE_ATTN_O,
    CLL_SITE_FFN_GATE,
    CLL_SITE_FFN_UP,
    CLL_SITE_FFN_DOWN,
    CLL_SITE_ROUTER,   /* MoE: n_embd -> n_expert logits */
    CLL_SITE_EXP_GATE, /* MoE: (n_expert) matrices, n_expert_used of them per token */
    CLL_SITE_EXP_UP,
    CLL_SITE_EXP_DOWN,
    CLL_SITE_OUTPUT,   /* the output head (token_embd when the embeddings are tied) */
    CLL_SITE_KIND_COUNT
} cll_site_kind;

/* one matmul site: y (n, rows) = x (n, cols) . W[mat]^T */
typedef struct {
    cll_site_kind kind;
    int32_t layer;              /* block index; -1 for the output head */
    uint32_t wtype;             /* GGML type id of the weight */
    int64_t rows, cols;         /* per matrix: output features x input features (K) */
    int64_t n_mat;              /* matrices in the tensor: n_expert for expert sites, else 1 */
    uint64_t bytes;             /* all n_mat matrices, as stored */
    int32_t decode_calls;       /* one-token products a decode step makes here (one token: one
                                 * per matrix it reads): n_expert_used for expert sites, else 1 */
    const cll_gguf_tensor *t;   /* the bound tensor */
} cll_plan_site;

typedef struct cll_plan {
    const cll_model *m;
    cll_plan_site *sites;       /* (n_sites) layer order, then kind order; the output head last */
    int64_t n_sites;
} cll_plan;

cll_status cll_plan_create(const cll_model *m, cll_plan **out);
void cll_plan_free(cll_plan *p);
/* "attn_q", "ffn_gate", "exp_down", "output", ... */
const char *cll_plan_kind_name(cll_site_kind k);
/* the site of (layer, kind), NULL if the model has none (e.g. ffn_gate of a MoE layer) */
const cll_plan_site *cll_plan_find(const cll_plan *p, int32_t layer, cll_site_kind kind);
/* weight bytes one decode step of one token reads at this site: bytes / n_mat * decode_calls */
uint64_t cll_plan_site_decode_bytes(const cll_plan_site *s);
/* The weight bytes one decode token reads: every matmul weight and the output head (not the
 * embedding table, whose one row is noise); for MoE the router plus only n_expert_used
 * experts' share of each expert tensor. Divide by a step's time for "% of bandwidth roofline". */
uint64_t cll_plan_decode_bytes(const cll_plan *p);

#endif
