/* cpu/forward_setup: prepares the weights of a model (once, at load) and sizes a session's
 * KV cache and activations (once, at context creation). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpu/forward_internal.h"
#include "cpu/ops.h"
#include "formats/formats.h"

/* ---- model: prepared weights -------------------------------------------------------------- */

static cll_status add_weight(cll_cpu_model *cm, uint32_t type, int64_t rows, int64_t cols, const void *data,
                             const char *name, cll_cpu_weight **out) {
    cll_status st = cll_cpu_weight_create(type, rows, cols, data, out);
    if (st != CLL_OK) return cll_err_prefix(st, "preparing %s", name);
    cm->all[cm->n_all++] = *out;
    return CLL_OK;
}

/* A weight that runs from its own repacked copy never reads the map again: drop those
 * file pages from this process (they refault from the file if ever touched), so RSS holds
 * one copy of the model. Whole pages inside the tensor only; the embedding table stays
 * (the token lookup reads it even when the output head is tied to it). */
static void release_map_pages(const cll_cpu_model *cm, const cll_gguf_tensor *t, const cll_cpu_weight *w) {
    if (!w || !cll_cpu_weight_repacked(w) || t == cm->m->tok_embd) return;
    const long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0) return;
    const uint64_t bytes = cll_row_bytes(t->type, t->ne[0]) * t->ne[1];
    const uintptr_t b = ((uintptr_t)t->data + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    const uintptr_t e = ((uintptr_t)t->data + (uintptr_t)bytes) & ~((uintptr_t)pg - 1);
    if (e > b) madvise((void *)b, e - b, MADV_DONTNEED); /* advisory: failure only costs RSS */
}

static cll_status prep(cll_cpu_model *cm, const cll_gguf_tensor *t, cll_cpu_weight **out) {
    *out = NULL;
    if (!t) return CLL_OK;
    char name[128];
    snprintf(name, sizeof name, "tensor %.*s", (int)t->name.len, t->name.ptr);
    cll_status st = add_weight(cm, t->type, (int64_t)t->ne[1], (int64_t)t->ne[0], t->data, name, out);
    if (st == CLL_OK) release_map_pages(cm, t, *out);
    return st;
}

/* one weight per expert: slice e of a (n_expert, rows, cols) tensor */
static cll_status prep_experts(cll_cpu_model *cm, const cll_gguf_tensor *t, int32_t n_expert, cll_cpu_weight ***out) {
    *out = calloc((size_t)n_expert, sizeof **out);
    if (!*out) return cll_err(CLL_ERR_NOMEM, "experts: out of memory");
    const uint64_t rows = t->ne[1], cols = t->ne[0];
    const uint64_t slice = cll_row_bytes(t->type, cols) * rows;
    for (int32_t e = 0; e < n_expert; e++) {
        char name[128];
        snprintf(name, sizeof name, "tensor %.*s expert %d", (int)t->name.len, t->name.ptr, e);
        cll_status st = add_weight(cm, t->type, (int64_t)rows, (int64_t)cols, (const uint8_t *)t->data + e * slice,
                                   name, &(*out)[e]);
        if (st != CLL_OK) return st;
    }
    return CLL_OK;
}

/* f32 copy of a 1-D tensor (norm weights and biases may be stored in any type) */
static cll_status vec(const cll_gguf_tensor *t, float **out) {
    *out = NULL;
    if (!t) return CLL_OK;
    const cll_type_traits *tr = cll_type_traits_get(t->type);
    *out = cll_aalloc(sizeof(float) * t->ne[0]);
    if (!*out) return cll_err(CLL_ERR_NOMEM, "vector copy: out of memory");
    tr->to_f32(t->data, *out, (int64_t)t->ne[0]);
    return CLL_OK;
}

#define TRY(x)                       \
    do {                             \
        st = (x);                    \
        if (st != CLL_OK) goto fail; \
    } while (0)

cll_status cll_cpu_model_create(const cll_model *m, cll_cpu_model **out) {
    *out = NULL;
    const cll_hparams *hp = &m->hp;
    cll_status st = CLL_OK;
    cll_cpu_model *cm = calloc(1, sizeof *cm);
    if (!cm) return cll_err(CLL_ERR_NOMEM, "cpu model: out of memory");
    cm->m = m;
    const int64_t per_layer = 8 + 3 * (int64_t)hp->n_expert;
    cm->all = calloc((size_t)(per_layer * hp->n_layer + 1), sizeof *cm->all);
    cm->layers = calloc((size_t)hp->n_layer, sizeof *cm->layers);
    if (!cm->all || !cm->layers) {
        st = cll_err(CLL_ERR_NOMEM, "cpu model: out of memory");
        goto fail;
    }
    TRY(prep(cm, m->output, &cm->output));
    TRY(vec(m->output_norm, &cm->output_norm));
    TRY(vec(m->rope_freqs, &cm->rope_ff));
    if (m->recipe.act == CLL_ACT_GELU_TANH) {
        cm->gelu_tab = malloc(65536 * sizeof *cm->gelu_tab);
        if (!cm->gelu_tab) {
            st = cll_err(CLL_ERR_NOMEM, "gelu table: out of memory");
            goto fail;
        }
        cll_ops_gelu_table_init(cm->gelu_tab);
    }
    for (int32_t il = 0; il < hp->n_layer; il++) {
        const cll_layer *L = &m->layers[il];
        cll_cpu_layer *C = &cm->layers[il];
        TRY(prep(cm, L->wq, &C->wq));
        TRY(prep(cm, L->wk, &C->wk));
        TRY(prep(cm, L->wv, &C->wv));
        TRY(prep(cm, L->wo, &C->wo));
        TRY(prep(cm, L->ffn_gate, &C->gate));
        TRY(prep(cm, L->ffn_up, &C->up));
        TRY(prep(cm, L->ffn_down, &C->down));
        TRY(prep(cm, L->ffn_gate_inp, &C->router));
        if (hp->n_expert > 0) {
            TRY(prep_experts(cm, L->gate_exps, hp->n_expert, &C->gate_e));
            TRY(prep_experts(cm, L->up_exps, hp->n_expert, &C->up_e));
            TRY(prep_experts(cm, L->down_exps, hp->n_expert, &C->down_e));
        }
        TRY(vec(L->attn_norm, &C->attn_norm));
        TRY(vec(L->ffn_norm, &C->ffn_norm));
        TRY(vec(L->post_attn_norm, &C->post_attn_norm));
        TRY(vec(L->post_ffn_norm, &C->post_ffn_norm));
        TRY(vec(L->q_norm, &C->q_norm));
        TRY(vec(L->k_norm, &C->k_norm));
        TRY(vec(L->bq, &C->bq));
        TRY(vec(L->bk, &C->bk));
        TRY(vec(L->bv, &C->bv));
    }
    *out = cm;
    return CLL_OK;
fail:
    cll_cpu_model_free(cm);
    return st;
}

void cll_cpu_model_free(cll_cpu_model *cm) {
    if (!cm) return;
    for (int64_t i = 0; i < cm->n_all; i++) cll_cpu_weight_free(cm->all[i]);
    if (cm->layers) {
        for (int32_t il = 0; il < cm->m->hp.n_layer; il++) {
            cll_cpu_layer *C = &cm->layers[il];
            free(C->gate_e);
            free(C->up_e);
            free(C->down_e);
            float *v[] = {C->attn_norm, C->ffn_norm, C->post_attn_norm, C->post_ffn_norm, C->q_norm,
                          C->k_norm,    C->bq,       C->bk,             C->bv};
            for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) cll_afree(v[i]);
        }
    }
    free(cm->layers);
    free(cm->all);
    cll_afree(cm->output_norm);
    cll_afree(cm->rope_ff);
    free(cm->gelu_tab);
    free(cm);
}

const char *cll_cpu_model_kernel_desc(const cll_cpu_model *cm) {
    return cm->layers && cm->layers[0].wq ? cll_cpu_weight_kernel(cm->layers[0].wq) : "?";
}

/* ---- state: KV cache + activations ------------------------------------------------------------ */

static void *zalloc(cll_cpu_state *s, size_t bytes) {
    if (bytes == 0) bytes = 64;
    void *p = cll_aalloc(bytes);
    if (p) {
        memset(p, 0, bytes);
        s->bytes += bytes;
    }
    return p;
}

cll_status cll_cpu_state_create(const cll_cpu_model *cm, const cll_cpu_state_params *p, cll_pool *pool,
                                cll_cpu_state **out) {
    *out = NULL;
    const cll_hparams *hp = &cm->m->hp;
    if (p->n_ctx <= 0 || p->n_seq <= 0 || p->n_batch <= 0 || p->n_out_max <= 0)
        return cll_err(CLL_ERR_ARG, "cpu state: n_ctx %d, n_seq %d, n_batch %d, n_out_max %d must be positive",
                       p->n_ctx, p->n_seq, p->n_batch, p->n_out_max);
    cll_cpu_state *s = calloc(1, sizeof *s);
    if (!s) return cll_err(CLL_ERR_NOMEM, "cpu state: out of memory");
    s->cm = cm;
    s->pool = pool;
    s->nth = cll_pool_size(pool);
    s->p = *p;
    const size_t nb = (size_t)p->n_batch, d = (size_t)hp->n_embd, nth = (size_t)s->nth;
    s->kv_k = (int64_t)hp->n_head_kv * hp->head_dim_k;
    s->kv_v = (int64_t)hp->n_head_kv * hp->head_dim_v;
    const size_t esz = p->kv_f32 ? sizeof(float) : sizeof(uint16_t);
    const size_t ff = (size_t)(hp->n_ff > hp->n_ff_exp ? hp->n_ff : hp->n_ff_exp);
    s->kc = calloc((size_t)hp->n_layer, sizeof *s->kc);
    s->vc = calloc((size_t)hp->n_layer, sizeof *s->vc);
    if (!s->kc || !s->vc) goto nomem;
    const size_t slots = (size_t)p->n_seq * (size_t)p->n_ctx;
    s->sc_ld = p->n_ctx > hp->head_dim_v ? p->n_ctx : hp->head_dim_v;
    for (int32_t il = 0; il < hp->n_layer; il++) {
        if (!(s->kc[il] = zalloc(s, slots * (size_t)s->kv_k * esz))) goto nomem;
        if (!(s->vc[il] = zalloc(s, slots * (size_t)s->kv_v * esz))) goto nomem;
    }
    const size_t F = sizeof(float);
    if (!(s->x = zalloc(s, nb * d * F)) || !(s->xn = zalloc(s, nb * d * F)) ||
        !(s->q = zalloc(s, nb * (size_t)hp->n_head * (size_t)hp->head_dim_k * F)) ||
        !(s->k = zalloc(s, nb * (size_t)s->kv_k * F)) || !(s->v = zalloc(s, nb * (size_t)s->kv_v * F)) ||
        !(s->ao = zalloc(s, nb * (size_t)hp->n_head * (size_t)hp->head_dim_v * F)) ||
        !(s->t = zalloc(s, nb * d * F)) || !(s->g = zalloc(s, nb * ff * F)) || !(s->u = zalloc(s, nb * ff * F)) ||
        !(s->scores = zalloc(s, nth * (size_t)s->sc_ld * F)) ||
        !(s->rope = zalloc(s, nth * (size_t)hp->n_rot * F)) || !(s->xo = zalloc(s, (size_t)p->n_out_max * d * F)))
        goto nomem;
    if (hp->n_expert > 0) {
        const size_t E = (size_t)hp->n_expert, k = (size_t)hp->n_expert_used;
        if (!(s->router = zalloc(s, nb * E * F)) || !(s->sel = zalloc(s, nb * k * sizeof(int32_t))) ||
            !(s->selw = zalloc(s, nb * k * F)) || !(s->erow = zalloc(s, nb * sizeof(int32_t))) ||
            !(s->eslot = zalloc(s, nb * sizeof(int32_t))) || !(s->xe = zalloc(s, nb * d * F)) ||
            !(s->de = zalloc(s, nb * d * F)) || !(s->moe = zalloc(s, nb * k * d * F)))
            goto nomem;
    }
    size_t mm = 0;
    for (int64_t i = 0; i < cm->n_all; i++) {
        const int64_t rows = cm->all[i] == cm->output ? p->n_out_max : p->n_batch;
        size_t need = cll_cpu_matmul_scratch(cm->all[i], rows);
        if (need > mm) mm = need;
    }
    if (!(s->mm = zalloc(s, mm))) goto nomem;
    *out = s;
    return CLL_OK;
nomem:
    cll_cpu_state_free(s);
    return cll_err(CLL_ERR_NOMEM, "session buffers (KV %d x %d tokens, batch %d): out of memory", p->n_seq,
                   p->n_ctx, p->n_batch);
}

void cll_cpu_state_free(cll_cpu_state *s) {
    if (!s) return;
    const int32_t L = s->cm->m->hp.n_layer;
    for (int32_t il = 0; il < L; il++) {
        if (s->kc) cll_afree(s->kc[il]);
        if (s->vc) cll_afree(s->vc[il]);
    }
    free(s->kc);
    free(s->vc);
    void *bufs[] = {s->x,  s->xn,  s->q,    s->k,    s->v,    s->ao,    s->t,  s->g,  s->u,   s->scores, s->rope,
                    s->xo, s->router, s->sel, s->selw, s->erow, s->eslot, s->xe, s->de, s->moe, s->mm};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) cll_afree(bufs[i]);
    free(s);
}

size_t cll_cpu_state_bytes(const cll_cpu_state *s) { return s->bytes; }
