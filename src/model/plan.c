/* model/plan: the matmul site list of a bound model and its decode byte count. */
#include "model/plan.h"

#include <stdlib.h>

static const char *const k_kind_names[CLL_SITE_KIND_COUNT] = {
    [CLL_SITE_ATTN_Q] = "attn_q",     [CLL_SITE_ATTN_K] = "attn_k",     [CLL_SITE_ATTN_V] = "attn_v",
    [CLL_SITE_ATTN_O] = "attn_o",     [CLL_SITE_FFN_GATE] = "ffn_gate", [CLL_SITE_FFN_UP] = "ffn_up",
    [CLL_SITE_FFN_DOWN] = "ffn_down", [CLL_SITE_ROUTER] = "router",     [CLL_SITE_EXP_GATE] = "exp_gate",
    [CLL_SITE_EXP_UP] = "exp_up",     [CLL_SITE_EXP_DOWN] = "exp_down", [CLL_SITE_OUTPUT] = "output",
};

const char *cll_plan_kind_name(cll_site_kind k) {
    return (unsigned)k < CLL_SITE_KIND_COUNT ? k_kind_names[k] : "?";
}

/* append the site of tensor t (NULL: the model has no such site) */
static void add(cll_plan *p, const cll_model *m, int32_t layer, cll_site_kind kind, const cll_gguf_tensor *t) {
    if (!t) return;
    const bool experts = kind == CLL_SITE_EXP_GATE || kind == CLL_SITE_EXP_UP || kind == CLL_SITE_EXP_DOWN;
    cll_plan_site *s = &p->sites[p->n_sites++];
    s->kind = kind;
    s->layer = layer;
    s->wtype = t->type;
    s->cols = (int64_t)t->ne[0]; /* GGUF ne[0] is the contiguous K dimension */
    s->rows = (int64_t)t->ne[1];
    s->n_mat = experts ? (int64_t)t->ne[2] : 1;
    s->bytes = t->nbytes;
    s->decode_calls = experts ? m->hp.n_expert_used : 1;
    s->t = t;
}

cll_status cll_plan_create(const cll_model *m, cll_plan **out) {
    *out = NULL;
    cll_plan *p = calloc(1, sizeof *p);
    /* at most 7 sites per layer (4 attention + 3 FFN, or 4 attention + router + 3 expert) */
    if (p) p->sites = calloc((size_t)m->hp.n_layer * 8 + 1, sizeof *p->sites);
    if (!p || !p->sites) {
        free(p);
        return cll_err(CLL_ERR_NOMEM, "model plan: out of memory");
    }
    p->m = m;
    for (int32_t il = 0; il < m->hp.n_layer; il++) {
        const cll_layer *L = &m->layers[il];
        add(p, m, il, CLL_SITE_ATTN_Q, L->wq);
        add(p, m, il, CLL_SITE_ATTN_K, L->wk);
        add(p, m, il, CLL_SITE_ATTN_V, L->wv);
        add(p, m, il, CLL_SITE_ATTN_O, L->wo);
        add(p, m, il, CLL_SITE_FFN_GATE, L->ffn_gate);
        add(p, m, il, CLL_SITE_FFN_UP, L->ffn_up);
        add(p, m, il, CLL_SITE_FFN_DOWN, L->ffn_down);
        add(p, m, il, CLL_SITE_ROUTER, L->ffn_gate_inp);
        add(p, m, il, CLL_SITE_EXP_GATE, L->gate_exps);
        add(p, m, il, CLL_SITE_EXP_UP, L->up_exps);
        add(p, m, il, CLL_SITE_EXP_DOWN, L->down_exps);
    }
    add(p, m, -1, CLL_SITE_OUTPUT, m->output);
    *out = p;
    return CLL_OK;
}

void cll_plan_free(cll_plan *p) {
    if (!p) return;
    free(p->sites);
    free(p);
}

const cll_plan_site *cll_plan_find(const cll_plan *p, int32_t layer, cll_site_kind kind) {
    for (int64_t i = 0; i < p->n_sites; i++)
        if (p->sites[i].layer == layer && p->sites[i].kind == kind) return &p->sites[i];
    return NULL;
}

uint64_t cll_plan_site_decode_bytes(const cll_plan_site *s) {
    /* an expert tensor is n_mat equal slices, so one matrix is exactly bytes / n_mat */
    return s->bytes / (uint64_t)s->n_mat * (uint64_t)s->decode_calls;
}

uint64_t cll_plan_decode_bytes(const cll_plan *p) {
    uint64_t sum = 0;
    for (int64_t i = 0; i < p->n_sites; i++) sum += cll_plan_site_decode_bytes(&p->sites[i]);
    return sum;
}
