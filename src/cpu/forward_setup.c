/* cpu/forward_setup: prepares the weights of a model (once, at load) and sizes a session's
 * KV cache and activations (once, at context creation). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpu/forward_internal.h"
#include "cpu/ops.h"
#include "formats/formats.h"
#include "model/plan.h"

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
    /* only pages of the file's map: a tensor-parallel rank's column slices are anonymous copies
     * (model/shard.h), and a map's pages may serve another rank's slice of the same tensor, which
     * refaults them from the file; an anonymous page would come back zeroed */
    const uint8_t *map = cll_gguf_base(cm->m->g), *p = (const uint8_t *)t->data;
    if (!map || p < map || p + bytes > map + cll_gguf_file_size(cm->m->g)) return;
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
static cll_status prep_experts(cll_cpu_model *cm, const cll_gguf_tensor *t, int32_t n_expert, int32_t expert0,
                               cll_cpu_weight ***out) {
    *out = calloc((size_t)n_expert, sizeof **out);
    if (!*out) return cll_err(CLL_ERR_NOMEM, "experts: out of memory");
    const uint64_t rows = t->ne[1], cols = t->ne[0];
    const uint64_t slice = cll_row_bytes(t->type, cols) * rows;
    for (int32_t e = 0; e < n_expert; e++) {
        char name[128];
        snprintf(name, sizeof name, "tensor %.*s expert %d", (int)t->name.len, t->name.ptr, expert0 + e);
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
            TRY(prep_experts(cm, L->gate_exps, hp->n_expert_here, hp->expert0, &C->gate_e));
            TRY(prep_experts(cm, L->up_exps, hp->n_expert_here, hp->expert0, &C->up_e));
            TRY(prep_experts(cm, L->down_exps, hp->n_expert_here, hp->expert0, &C->down_e));
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

/* One activation buffer of the state: the pointer field it fills, its element size and count.
 * The table in act_specs is the whole activation footprint of a session; state creation lays
 * it out as ONE block with every sub-buffer 64-byte aligned (a cache line, and the widest
 * SIMD load), so a session's activations are one allocation and one free. */
typedef struct {
    const char *name;
    size_t off;   /* offsetof the pointer field in cll_cpu_state */
    size_t esz;   /* bytes per element */
    size_t count; /* elements; 0 = absent here (the pointer stays NULL) */
} act_spec;

#define ACT(field, type, n) {#field, offsetof(cll_cpu_state, field), sizeof(type), (n)}
#define ACT_ALIGN 64
#define MAX_ACTS 32

/* the specs of state s (kv_k, kv_v, sc_ld and nth set); mm = matmul scratch bytes */
static size_t act_specs(const cll_cpu_state *s, size_t mm, act_spec *out) {
    const cll_hparams *hp = &s->cm->m->hp;
    const cll_cpu_state_params *p = &s->p;
    const size_t nb = (size_t)p->n_batch, d = (size_t)hp->n_embd, nth = (size_t)s->nth;
    const size_t ff = (size_t)(hp->n_ff > hp->n_ff_exp ? hp->n_ff : hp->n_ff_exp);
    const size_t nq = (size_t)hp->n_head * (size_t)hp->head_dim_k, nao = (size_t)hp->n_head * (size_t)hp->head_dim_v;
    const bool moe = hp->n_expert > 0;
    const size_t E = moe ? (size_t)hp->n_expert : 0, K = moe ? (size_t)hp->n_expert_used : 0, nbm = moe ? nb : 0;
    const act_spec t[] = {
        ACT(x, float, nb * d),                      /* (n_batch, n_embd) residual stream */
        ACT(xn, float, nb * d),                     /* (n_batch, n_embd) normed block input */
        ACT(q, float, nb * nq),                     /* (n_batch, n_head*hd_k) */
        ACT(k, float, nb * (size_t)s->kv_k),        /* (n_batch, kv_k) */
        ACT(v, float, nb * (size_t)s->kv_v),        /* (n_batch, kv_v) */
        ACT(ao, float, nb * nao),                   /* (n_batch, n_head*hd_v) attention output */
        ACT(t, float, nb * d),                      /* (n_batch, n_embd) block output before the add */
        ACT(g, float, nb * ff),                     /* (n_batch, n_ff_max) gate */
        ACT(u, float, nb * ff),                     /* (n_batch, n_ff_max) up */
        ACT(scores, float, nth * (size_t)s->sc_ld), /* (nth, sc_ld) attention scratch per thread */
        ACT(rope, float, nth * (size_t)hp->n_rot),  /* (nth, n_rot) cos/sin per thread */
        ACT(xo, float, (size_t)p->n_out_max * d),   /* (n_out_max, n_embd) rows that want logits */
        ACT(router, float, nbm * E),                /* MoE (n_batch, n_expert) router logits */
        ACT(sel, int32_t, nbm * K),                 /* MoE (n_batch, n_used) chosen experts */
        ACT(selw, float, nbm * K),                  /* MoE (n_batch, n_used) their weights */
        ACT(erow, int32_t, nbm),                    /* MoE (n_batch) batch row of each gathered row */
        ACT(eslot, int32_t, nbm),                   /* MoE (n_batch) slot of each gathered row */
        ACT(xe, float, nbm * d),                    /* MoE (n_batch, n_embd) gathered expert inputs */
        ACT(de, float, nbm * d),                    /* MoE (n_batch, n_embd) expert output */
        ACT(moe, float, nbm * K * d),               /* MoE (n_batch, n_used, n_embd) weighted outputs */
        ACT(mm, uint8_t, mm > 0 ? mm : ACT_ALIGN),  /* (bytes) matmul scratch */
    };
    _Static_assert(sizeof t / sizeof t[0] <= MAX_ACTS, "raise MAX_ACTS");
    memcpy(out, t, sizeof t);
    return sizeof t / sizeof t[0];
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
    s->kv_k = (int64_t)hp->n_head_kv * hp->head_dim_k;
    s->kv_v = (int64_t)hp->n_head_kv * hp->head_dim_v;
    s->sc_ld = p->n_ctx > hp->head_dim_v ? p->n_ctx : hp->head_dim_v;
    const int64_t tile = (int64_t)cll_ops_attn_tile_scratch(hp->head_dim_k, hp->head_dim_v);
    if (s->sc_ld < tile) s->sc_ld = tile;
    s->sc_ld = (s->sc_ld + 15) & ~(int64_t)15; /* 64-byte aligned per thread (the tiles' loads) */
    const size_t esz = p->kv_f32 ? sizeof(float) : sizeof(uint16_t);
    s->kc = calloc((size_t)hp->n_layer, sizeof *s->kc);
    s->vc = calloc((size_t)hp->n_layer, sizeof *s->vc);
    if (!s->kc || !s->vc) goto nomem;
    /* n_seq regions of n_ctx cells, or a paged pool of n_cells (rows through the batches' block tables) */
    size_t cells = (size_t)cll_kv_cell(p->n_seq, 0, p->n_ctx);
    if (p->n_cells > 0) {
        while ((1 << s->kv_shift) < p->block_cells && s->kv_shift < 30) s->kv_shift++;
        if (p->block_cells <= 0 || (1 << s->kv_shift) != p->block_cells || p->n_cells % p->block_cells) {
            cll_cpu_state_free(s);
            return cll_err(CLL_ERR_ARG, "cpu state: a paged KV needs whole blocks of a power-of-two size (%d cells, blocks of %d)",
                           p->n_cells, p->block_cells);
        }
        s->kv_paged = true;
        cells = (size_t)p->n_cells;
    }
    for (int32_t il = 0; il < hp->n_layer; il++) {
        const size_t kb = cells * (size_t)s->kv_k * esz, vb = cells * (size_t)s->kv_v * esz;
        if (!(s->kc[il] = cll_aalloc(kb)) || !(s->vc[il] = cll_aalloc(vb))) goto nomem;
        memset(s->kc[il], 0, kb);
        memset(s->vc[il], 0, vb);
        s->bytes += kb + vb;
    }
    size_t mm = 0;
    for (int64_t i = 0; i < cm->n_all; i++) {
        const int64_t rows = cm->all[i] == cm->output ? p->n_out_max : p->n_batch;
        size_t need = cll_cpu_matmul_scratch(cm->all[i], rows);
        if (need > mm) mm = need;
    }
    act_spec specs[MAX_ACTS];
    const size_t n_specs = act_specs(s, mm, specs);
    size_t total = 0, offs[MAX_ACTS];
    for (size_t i = 0; i < n_specs; i++) {
        offs[i] = total;
        total += (specs[i].esz * specs[i].count + ACT_ALIGN - 1) & ~(size_t)(ACT_ALIGN - 1);
    }
    if (!(s->act_block = cll_aalloc(total))) goto nomem;
    memset(s->act_block, 0, total);
    s->bytes += total;
    for (size_t i = 0; i < n_specs; i++) {
        void *ptr = specs[i].count ? (uint8_t *)s->act_block + offs[i] : NULL;
        memcpy((uint8_t *)s + specs[i].off, &ptr, sizeof ptr); /* every field is a data pointer */
    }
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
    cll_afree(s->act_block);
    free(s);
}

size_t cll_cpu_state_bytes(const cll_cpu_state *s) { return s->bytes; }
