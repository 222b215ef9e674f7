/* model/shard: the tensor-parallel split (shard.h).
 * Owns nothing. Rule: the checks run in a fixed order (KV heads, experts, O columns, down's
 * blocks), so the first failing reason is the one reported. */
#include "model/shard.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/formats.h"

/* the dense FFN's split unit over n ranks: the largest block of any layer's down weight (its columns
 * are cut; block sizes are powers of two, so every layer's blocks tile it), at least 32 where the width
 * allows it and still gives every rank a unit (float weights: a rank's rows stay whole q8_1 blocks and
 * 16-byte vectors) */
static int64_t ff_unit(const cll_plan *p, int32_t n) {
    int64_t qk = 1;
    bool by32 = true;
    for (int64_t i = 0; i < p->n_sites; i++) {
        const cll_plan_site *s = &p->sites[i];
        if (s->kind != CLL_SITE_FFN_DOWN) continue;
        const cll_type_traits *tr = cll_type_traits_get(s->wtype);
        if (tr && tr->blck > qk) qk = (int64_t)tr->blck;
        by32 &= s->cols % 32 == 0 && s->cols / 32 >= n;
    }
    return qk < 32 && by32 ? 32 : qk;
}

/* why n does not split the model ("" when it does) */
static void check(const cll_plan *p, const cll_hparams *hp, int32_t n, char *why, size_t cap) {
    why[0] = 0;
    if (n < 1) {
        snprintf(why, cap, "%d ranks", n);
        return;
    }
    if (hp->n_head_kv % n) {
        snprintf(why, cap, "the %d KV heads do not split into %d equal groups", hp->n_head_kv, n);
        return;
    }
    if (hp->n_expert > 0 && hp->n_expert % n) {
        snprintf(why, cap, "the %d experts do not split into %d equal sets", hp->n_expert, n);
        return;
    }
    /* O: a rank's query heads fix its columns, which must be whole blocks */
    for (int64_t i = 0; i < p->n_sites; i++) {
        const cll_plan_site *s = &p->sites[i];
        if (s->kind != CLL_SITE_ATTN_O) continue;
        const cll_type_traits *tr = cll_type_traits_get(s->wtype);
        const int64_t qk = tr && tr->blck ? (int64_t)tr->blck : 1;
        if (s->cols % n || (s->cols / n) % qk) {
            snprintf(why, cap, "layer %d attn_output (%s, %lld columns) splits into %lld-column shards, not whole %lld-element blocks",
                     s->layer, cll_type_name(s->wtype), (long long)s->cols, (long long)(s->cols / n), (long long)qk);
            return;
        }
    }
    /* the dense FFN splits by whole blocks of down's columns, as evenly as they go (a rank may hold one
     * block more): it needs a block a rank */
    const int64_t qk = ff_unit(p, n);
    for (int64_t i = 0; i < p->n_sites; i++) {
        const cll_plan_site *s = &p->sites[i];
        if (s->kind != CLL_SITE_FFN_DOWN) continue;
        if (s->cols % qk || s->cols / qk < n) {
            snprintf(why, cap, "layer %d ffn_down (%s, %lld columns) holds %lld whole %lld-element blocks, fewer than %d ranks",
                     s->layer, cll_type_name(s->wtype), (long long)s->cols, (long long)(s->cols / qk), (long long)qk, n);
            return;
        }
    }
}

int cll_shard_valid(const cll_plan *p, const cll_hparams *hp, int32_t max_n, int32_t *out, int cap) {
    int k = 0;
    char why[256];
    for (int32_t n = 1; n <= max_n; n++) {
        check(p, hp, n, why, sizeof why);
        if (!why[0] && k < cap) out[k++] = n;
    }
    return k;
}

cll_status cll_shard_plan(const cll_plan *p, const cll_hparams *hp, int32_t n, int32_t rank, cll_shard *out) {
    memset(out, 0, sizeof *out);
    char why[256];
    check(p, hp, n, why, sizeof why);
    if (why[0]) {
        int32_t v[64];
        const int nv = cll_shard_valid(p, hp, 64, v, 64);
        char list[256] = "";
        size_t o = 0;
        for (int i = 0; i < nv && o + 8 < sizeof list; i++) o += (size_t)snprintf(list + o, sizeof list - o, "%s%d", i ? ", " : "", v[i]);
        return cll_err(CLL_ERR_UNSUPPORTED, "split over %d: %s (valid: %s)", n, why, list);
    }
    if (rank < 0 || rank >= n) return cll_err(CLL_ERR_ARG, "tensor parallel: rank %d of %d", rank, n);
    out->n = n;
    out->rank = rank;
    const int32_t kvn = hp->n_head_kv / n, g = hp->n_head / hp->n_head_kv;
    out->kv0 = rank * kvn;
    out->kv1 = out->kv0 + kvn;
    out->q0 = out->kv0 * g;
    out->q1 = out->kv1 * g;
    if (hp->n_expert == 0) { /* whole blocks of down's columns, the first ff_blocks % n ranks one more */
        const int64_t qk = ff_unit(p, n), nb = hp->n_ff / qk, per = nb / n, rem = nb % n;
        out->f0 = qk * (rank * per + (rank < rem ? rank : rem));
        out->f1 = out->f0 + qk * (per + (rank < rem ? 1 : 0));
    }
    if (hp->n_expert > 0) {
        out->e0 = hp->n_expert / n * rank;
        out->e1 = out->e0 + hp->n_expert / n;
    }
    const int64_t V = hp->n_vocab, per = (V + n - 1) / n; /* vocab rows: the last rank may hold fewer */
    out->v0 = per * rank < V ? per * rank : V;
    out->v1 = per * (rank + 1) < V ? per * (rank + 1) : V;
    return CLL_OK;
}

/* ---- the view of one rank ------------------------------------------------------------------ */

/* the view's storage: its tensor structs (model.owned) and its column-sliced copies (model.owned_data) */
typedef struct {
    bool fill;        /* false: the sizing pass (nothing written) */
    uint8_t *base;    /* the copies */
    size_t used;
    cll_gguf_tensor *t;
    int nt;
} arena;

static void *take(arena *a, size_t bytes) {
    const size_t at = (a->used + 63) & ~(size_t)63;
    a->used = at + bytes;
    return a->fill ? a->base + at : NULL;
}

static cll_gguf_tensor *new_view(arena *a, const cll_gguf_tensor *src) {
    if (!a->fill) return NULL;
    cll_gguf_tensor *v = &a->t[a->nt++];
    *v = *src;
    v->offset = UINT64_MAX; /* not a range of the file's data section */
    return v;
}

/* rows [r0, r1) of a 2-D tensor (or elements [r0, r1) of a 1-D one): a contiguous range */
static const cll_gguf_tensor *rows_view(arena *a, const cll_gguf_tensor *t, int64_t r0, int64_t r1) {
    if (!t) return NULL;
    cll_gguf_tensor *v = new_view(a, t);
    if (!v) return t;
    if (t->n_dims == 1) {
        const uint64_t b0 = cll_row_bytes(t->type, (uint64_t)r0);
        v->ne[0] = (uint64_t)(r1 - r0);
        v->data = (const uint8_t *)t->data + b0;
        v->nbytes = cll_row_bytes(t->type, v->ne[0]);
    } else {
        const uint64_t rb = cll_row_bytes(t->type, t->ne[0]);
        v->ne[1] = (uint64_t)(r1 - r0);
        v->data = (const uint8_t *)t->data + (uint64_t)r0 * rb;
        v->nbytes = v->ne[1] * rb;
    }
    return v;
}

/* matrices [e0, e1) of an expert tensor (n_expert, rows, cols) */
static const cll_gguf_tensor *experts_view(arena *a, const cll_gguf_tensor *t, int32_t e0, int32_t e1) {
    if (!t) return NULL;
    cll_gguf_tensor *v = new_view(a, t);
    if (!v) return t;
    const uint64_t mat = cll_row_bytes(t->type, t->ne[0]) * t->ne[1];
    v->ne[2] = (uint64_t)(e1 - e0);
    v->data = (const uint8_t *)t->data + (uint64_t)e0 * mat;
    v->nbytes = v->ne[2] * mat;
    return v;
}

/* columns [c0, c1) of a 2-D tensor, copied (block-aligned: cll_shard_plan checked) */
static const cll_gguf_tensor *cols_copy(arena *a, const cll_gguf_tensor *t, int64_t c0, int64_t c1) {
    const uint64_t rb = cll_row_bytes(t->type, t->ne[0]), off = cll_row_bytes(t->type, (uint64_t)c0);
    const uint64_t nb = cll_row_bytes(t->type, (uint64_t)(c1 - c0));
    uint8_t *dst = take(a, nb * t->ne[1]);
    cll_gguf_tensor *v = new_view(a, t);
    if (!v) return t;
    for (uint64_t r = 0; r < t->ne[1]; r++) memcpy(dst + r * nb, (const uint8_t *)t->data + r * rb + off, nb);
    v->ne[0] = (uint64_t)(c1 - c0);
    v->data = dst;
    v->nbytes = nb * t->ne[1];
    return v;
}

/* one pass over the model: sizes the arena (a->cap 0) or fills it and v */
static void build(const cll_model *m, const cll_shard *sh, arena *a, cll_model *v) {
    const cll_hparams *hp = &m->hp;
    const int64_t hk = hp->head_dim_k, hv = hp->head_dim_v;
    if (v) {
        v->output = rows_view(a, m->output, sh->v0, sh->v1);
    } else {
        rows_view(a, m->output, sh->v0, sh->v1);
    }
    for (int32_t il = 0; il < hp->n_layer; il++) {
        const cll_layer *L = &m->layers[il];
        cll_layer tmp, *o = v ? &v->layers[il] : &tmp;
        o->wq = rows_view(a, L->wq, sh->q0 * hk, sh->q1 * hk);
        o->wk = rows_view(a, L->wk, sh->kv0 * hk, sh->kv1 * hk);
        o->wv = rows_view(a, L->wv, sh->kv0 * hv, sh->kv1 * hv);
        o->bq = rows_view(a, L->bq, sh->q0 * hk, sh->q1 * hk);
        o->bk = rows_view(a, L->bk, sh->kv0 * hk, sh->kv1 * hk);
        o->bv = rows_view(a, L->bv, sh->kv0 * hv, sh->kv1 * hv);
        o->wo = cols_copy(a, L->wo, sh->q0 * hv, sh->q1 * hv);
        if (hp->n_expert > 0) {
            o->gate_exps = experts_view(a, L->gate_exps, sh->e0, sh->e1);
            o->up_exps = experts_view(a, L->up_exps, sh->e0, sh->e1);
            o->down_exps = experts_view(a, L->down_exps, sh->e0, sh->e1);
        } else {
            o->ffn_gate = rows_view(a, L->ffn_gate, sh->f0, sh->f1);
            o->ffn_up = rows_view(a, L->ffn_up, sh->f0, sh->f1);
            o->ffn_down = cols_copy(a, L->ffn_down, sh->f0, sh->f1);
        }
    }
}

cll_status cll_model_shard(const cll_model *m, const cll_shard *sh, cll_model **out) {
    *out = NULL;
    const cll_hparams *hp = &m->hp;
    if (sh->n < 1 || sh->rank < 0 || sh->rank >= sh->n || sh->kv1 <= sh->kv0 || sh->v1 <= sh->v0)
        return cll_err(CLL_ERR_ARG, "model shard: bad slice (rank %d of %d)", sh->rank, sh->n);
    arena a = {0};
    build(m, sh, &a, NULL);
    const size_t copies = (a.used + 63) & ~(size_t)63;
    cll_model *v = calloc(1, sizeof *v);
    cll_layer *layers = calloc((size_t)hp->n_layer, sizeof *layers);
    cll_gguf_tensor *structs = calloc((size_t)(16 * hp->n_layer + 1), sizeof *structs);
    uint8_t *data = copies ? aligned_alloc(64, copies) : NULL;
    if (!v || !layers || !structs || (copies && !data)) {
        free(v);
        free(layers);
        free(structs);
        free(data);
        return cll_err(CLL_ERR_NOMEM, "model shard: out of memory for rank %d's %.1f MB of sliced weights", sh->rank,
                       (double)copies / 1e6);
    }
    *v = *m;
    memcpy(layers, m->layers, sizeof *layers * (size_t)hp->n_layer);
    v->layers = layers;
    v->owned = structs;
    v->owned_data = data;
    a = (arena){.fill = true, .base = data, .t = structs};
    build(m, sh, &a, v);
    cll_hparams *h = &v->hp;
    h->n_head = sh->q1 - sh->q0;
    h->n_head_kv = sh->kv1 - sh->kv0;
    if (hp->n_expert == 0) h->n_ff = (int32_t)(sh->f1 - sh->f0);
    h->n_logits = (int32_t)(sh->v1 - sh->v0);
    h->expert0 = hp->n_expert > 0 ? sh->e0 : 0;
    h->n_expert_here = hp->n_expert > 0 ? sh->e1 - sh->e0 : 0;
    /* the rank's share: every tensor the view holds (the embedding table and norms whole) */
    v->n_params = v->n_bytes = 0;
    const cll_gguf_tensor *all[16];
    for (int32_t il = -1; il < hp->n_layer; il++) {
        int k = 0;
        if (il < 0) {
            all[k++] = v->tok_embd, all[k++] = v->output_norm, all[k++] = v->rope_freqs;
            if (v->output != v->tok_embd) all[k++] = v->output;
        } else {
            const cll_layer *L = &v->layers[il];
            const cll_gguf_tensor *lt[] = {L->attn_norm, L->wq,         L->wk,        L->wv,          L->wo,
                                           L->bq,        L->bk,         L->bv,        L->q_norm,      L->k_norm,
                                           L->post_attn_norm, L->ffn_norm, L->post_ffn_norm, L->ffn_gate, L->ffn_up,
                                           L->ffn_down};
            for (size_t i = 0; i < sizeof lt / sizeof lt[0]; i++) all[k++] = lt[i];
            const cll_gguf_tensor *moe[] = {L->ffn_gate_inp, L->gate_exps, L->up_exps, L->down_exps};
            for (size_t i = 0; i < 4; i++) {
                const cll_gguf_tensor *t = moe[i];
                if (t) {
                    v->n_params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
                    v->n_bytes += t->nbytes;
                }
            }
        }
        for (int i = 0; i < k; i++)
            if (all[i]) {
                v->n_params += all[i]->ne[0] * all[i]->ne[1] * all[i]->ne[2] * all[i]->ne[3];
                v->n_bytes += all[i]->nbytes;
            }
    }
    *out = v;
    return CLL_OK;
}

void cll_model_shard_drop_copies(cll_model *v) {
    if (!v || !v->owned_data) return;
    /* the views whose bytes are not the file's are the copies */
    const uint8_t *map = cll_gguf_base(v->g), *end = map + cll_gguf_file_size(v->g);
    cll_gguf_tensor *t = v->owned;
    for (int32_t i = 0; i < 16 * v->hp.n_layer + 1; i++) {
        const uint8_t *d = t[i].data;
        if (d && (d < map || d >= end)) t[i].data = NULL;
    }
    free(v->owned_data);
    v->owned_data = NULL;
}
