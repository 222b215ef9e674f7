/* cpu/forward: one batched pass of the model over a batch of tokens (any mix of sequences).
 * Matmuls run n rows at once through cll_cpu_matmul; row-wise ops and attention are split
 * over the pool. */
#include <math.h>
#include <string.h>

#include "cpu/comm.h"
#include "cpu/knobs.h"
#include "cpu/forward_internal.h"
#include "cpu/ops.h"
#include "formats/formats.h"
#include "kernels/registry.h"
#include "model/plan.h"

/* ---- row-parallel tasks ------------------------------------------------------------------ */

/* Small elementwise work runs inline on the calling thread: a fork-join costs more than it
 * saves below a few tens of thousands of elements (and much more on an oversubscribed box):
 * the knob cpu.par_min_work (cpu/knobs.h, default 32768). */
static void run(cll_cpu_state *s, cll_task_fn fn, void *arg, int64_t work) {
    if (work < cll_cpu_knob.par_min_work || s->nth == 1)
        fn(arg, 0, 1);
    else
        cll_pool_run(s->pool, fn, arg);
}

static void task_embed(void *arg, int ith, int nth) {
    cll_cpu_state *s = arg;
    const cll_model *m = s->cm->m;
    const cll_gguf_tensor *te = m->tok_embd;
    const cll_type_traits *tr = cll_type_traits_get(te->type);
    const int64_t d = m->hp.n_embd;
    const uint64_t rb = cll_row_bytes(te->type, (uint64_t)d);
    const float scale = sqrtf((float)d);
    int64_t b, e;
    cll_split(s->b->n, ith, nth, &b, &e);
    for (int64_t i = b; i < e; i++) {
        float *x = s->x + i * d;
        tr->to_f32((const uint8_t *)te->data + (uint64_t)s->b->tokens[i] * rb, x, d);
        if (m->recipe.embd_scale)
            for (int64_t j = 0; j < d; j++) x[j] *= scale;
    }
}

/* xn = rmsnorm(x) * w for the block input */
typedef struct {
    cll_cpu_state *s;
    const float *src;
    float *dst;
    const float *w;
    int64_t n;
} norm_args;

static void task_norm(void *arg, int ith, int nth) {
    norm_args *a = arg;
    const int64_t d = a->s->cm->m->hp.n_embd;
    const float eps = a->s->cm->m->hp.eps;
    int64_t b, e;
    cll_split(a->n, ith, nth, &b, &e);
    for (int64_t i = b; i < e; i++) cll_ops_rmsnorm(a->dst + i * d, a->src + i * d, a->w, d, eps);
}

static void run_norm(cll_cpu_state *s, const float *src, float *dst, const float *w, int64_t n) {
    norm_args a = {s, src, dst, w, n};
    run(s, task_norm, &a, n * s->cm->m->hp.n_embd);
}

/* biases, q/k norms, rope, q prescale; then K/V into the cache at (seq, pos) */
/* where sequence seq's keys lie: paged, the layer's whole region (base 0) and the sequence's block
 * table (*rp = rows); else the sequence's own region and rows by position (*rp = NULL) */
static int64_t kv_base(const cll_cpu_state *s, int32_t seq, cll_kv_rows *rows, const cll_kv_rows **rp) {
    if (!s->kv_paged) {
        *rp = NULL;
        return cll_kv_cell(seq, 0, s->p.n_ctx);
    }
    rows->blk = s->b->blocks + (int64_t)seq * s->b->blocks_stride;
    rows->shift = s->kv_shift;
    *rp = rows;
    return 0;
}

static void task_qkv(void *arg, int ith, int nth) {
    cll_cpu_state *s = arg;
    const cll_cpu_model *cm = s->cm;
    const cll_model *m = cm->m;
    const cll_hparams *hp = &m->hp;
    const cll_layer *L = &m->layers[s->il];
    const cll_cpu_layer *C = &cm->layers[s->il];
    const int64_t nq = (int64_t)hp->n_head * hp->head_dim_k;
    const bool f16 = !s->p.kv_f32;
    float *cs = s->rope + (int64_t)ith * hp->n_rot;
    int64_t b, e;
    cll_split(s->b->n, ith, nth, &b, &e);
    for (int64_t i = b; i < e; i++) {
        float *q = s->q + i * nq, *k = s->k + i * s->kv_k, *v = s->v + i * s->kv_v;
        if (C->bq)
            for (int64_t j = 0; j < nq; j++) q[j] += C->bq[j];
        if (C->bk)
            for (int64_t j = 0; j < s->kv_k; j++) k[j] += C->bk[j];
        if (C->bv)
            for (int64_t j = 0; j < s->kv_v; j++) v[j] += C->bv[j];
        if (C->q_norm) {
            for (int32_t h = 0; h < hp->n_head; h++)
                cll_ops_rmsnorm(q + h * hp->head_dim_k, q + h * hp->head_dim_k, C->q_norm, hp->head_dim_k, hp->eps);
            for (int32_t h = 0; h < hp->n_head_kv; h++)
                cll_ops_rmsnorm(k + h * hp->head_dim_k, k + h * hp->head_dim_k, C->k_norm, hp->head_dim_k, hp->eps);
        }
        const int32_t pos = s->b->pos[i];
        cll_ops_rope_cs(cs, pos, hp->n_rot, &L->rope, cm->rope_ff);
        if (s->p.ggml_numerics) {
            cll_ops_rope_apply_fma(q, hp->n_head, hp->head_dim_k, hp->n_rot, cs, m->recipe.rope);
            cll_ops_rope_apply_fma(k, hp->n_head_kv, hp->head_dim_k, hp->n_rot, cs, m->recipe.rope);
        } else {
            cll_ops_rope_apply(q, hp->n_head, hp->head_dim_k, hp->n_rot, cs, m->recipe.rope);
            cll_ops_rope_apply(k, hp->n_head_kv, hp->head_dim_k, hp->n_rot, cs, m->recipe.rope);
        }
        if (m->recipe.q_prescale)
            for (int64_t j = 0; j < nq; j++) q[j] *= hp->attn_scale;
        if (f16) /* llama.cpp rounds q to fp16 to dot it with an F16 cache */
            for (int64_t j = 0; j < nq; j++) q[j] = cll_fp16_to_f32(cll_f32_to_fp16(q[j]));
        cll_kv_rows rows;
        const cll_kv_rows *rp;
        const int64_t slot = kv_base(s, s->b->seq[i], &rows, &rp) + cll_kv_row(rp, pos);
        if (f16) {
            cll_ops_to_f16((uint16_t *)s->kc[s->il] + slot * s->kv_k, k, s->kv_k);
            cll_ops_to_f16((uint16_t *)s->vc[s->il] + slot * s->kv_v, v, s->kv_v);
        } else {
            memcpy((float *)s->kc[s->il] + slot * s->kv_k, k, sizeof(float) * s->kv_k);
            memcpy((float *)s->vc[s->il] + slot * s->kv_v, v, sizeof(float) * s->kv_v);
        }
    }
}

/* attention: one work item per (token, head).
 * Default: softmax(q·k)·v with AVX2 f16/f32 dots (cll_ops_attn_head). Under ggml numerics
 * (CLLAMA_NUMERICS=ggml) an F16 cache runs llama.cpp's 1-thread CPU flash attention bit for bit
 * (cll_ops_attn_head_fa16: fp16 q, fp16 running V sum); it costs ~2x the default on prefill,
 * which is why only the reference mode pays for it (measured: 26% vs 12% of pp512 CPU). */
/* Tiled prefill attention: a tile is up to 16 (AVX-512, cll_ops_attn_tile16) or 8 (AVX2,
 * cll_ops_attn_tile8) (token, head) rows of one sequence and one KV head, the KV group's heads
 * times consecutive tokens; tiles are dealt round-robin. A token block that mixes sequences
 * runs its rows one at a time. */
typedef void (*attn_tile_fn)(const float *const *, float *const *, const int32_t *, const int32_t *, int,
                             const void *, const void *, int64_t, int64_t, bool, int32_t, int32_t, float, float *,
                             const cll_kv_rows *);
static void task_attn_tiles(void *arg, int ith, int nth) {
    cll_cpu_state *s = arg;
    const cll_model *m = s->cm->m;
    const cll_hparams *hp = &m->hp;
    const cll_layer *L = &m->layers[s->il];
    const int32_t H = hp->n_head, HK = hp->n_head_kv, gqa = H / HK;
    const int32_t hk = hp->head_dim_k, hv = hp->head_dim_v;
    const bool f16 = !s->p.kv_f32;
    const size_t esz = f16 ? sizeof(uint16_t) : sizeof(float);
    const float scale = m->recipe.q_prescale ? 1.0f : hp->attn_scale;
    float *scr = s->scores + (int64_t)ith * s->sc_ld;
    const bool z = (cll_kernels_cpu_features() & CLL_ISA_AVX512) != 0;
    const int32_t lanes = z ? 16 : 8;
    const attn_tile_fn tile = z ? cll_ops_attn_tile16 : cll_ops_attn_tile8;
    const int32_t hg = gqa < lanes ? gqa : lanes, nsub = (gqa + hg - 1) / hg, tb = lanes / hg;
    const int64_t n = s->b->n, nblk = (n + tb - 1) / tb, items = nblk * HK * nsub;
    for (int64_t it = ith; it < items; it += nth) {
        const int64_t blk = it / (HK * nsub);
        const int32_t kvh = (int32_t)(it / nsub % HK), sub = (int32_t)(it % nsub);
        const int64_t i0 = blk * tb, i1 = i0 + tb < n ? i0 + tb : n;
        const int32_t h0 = kvh * gqa + sub * hg, h1 = h0 + hg < (kvh + 1) * gqa ? h0 + hg : (kvh + 1) * gqa;
        const int32_t seq = s->b->seq[i0];
        /* tiles for runs of one sequence's tokens; a block of one token (the ragged end of a decode
         * step's tokens) or of mixed sequences takes the per-row path of a lone decode step */
        bool one_seq = i1 - i0 > 1;
        for (int64_t i = i0 + 1; i < i1; i++) one_seq &= s->b->seq[i] == seq;
        cll_kv_rows rows;
        const cll_kv_rows *rp;
        const int64_t base = kv_base(s, seq, &rows, &rp);
        const uint8_t *kb = (const uint8_t *)s->kc[s->il] + ((size_t)base * s->kv_k + (size_t)kvh * hk) * esz;
        const uint8_t *vb = (const uint8_t *)s->vc[s->il] + ((size_t)base * s->kv_v + (size_t)kvh * hv) * esz;
        const float *qs[16];
        float *outs[16];
        int32_t lo[16], hi[16];
        int nl = 0;
        for (int64_t i = i0; i < i1; i++) {
            const int32_t pos = s->b->pos[i];
            const int32_t l0 = L->swa && pos - hp->n_swa + 1 > 0 ? pos - hp->n_swa + 1 : 0;
            for (int32_t h = h0; h < h1; h++) {
                qs[nl] = s->q + i * (int64_t)H * hk + (int64_t)h * hk;
                outs[nl] = s->ao + i * (int64_t)H * hv + (int64_t)h * hv;
                lo[nl] = l0;
                hi[nl] = pos + 1;
                if (!one_seq) {
                    /* rows of mixed sequences (a batched decode step): one at a time from their own
                     * region, on the per-row path a lone decode step takes (a one-lane tile wastes the
                     * other lanes; and a sequence's tokens do not depend on its batch-mates) */
                    cll_kv_rows ri;
                    const cll_kv_rows *rip;
                    const int64_t bi = kv_base(s, s->b->seq[i], &ri, &rip);
                    const uint8_t *ki = (const uint8_t *)s->kc[s->il] + ((size_t)bi * s->kv_k + (size_t)kvh * hk) * esz;
                    const uint8_t *vi = (const uint8_t *)s->vc[s->il] + ((size_t)bi * s->kv_v + (size_t)kvh * hv) * esz;
                    cll_ops_attn_head(qs[nl], ki, vi, s->kv_k, s->kv_v, f16, lo[nl], hi[nl], hk, hv, scale, scr, outs[nl],
                                      rip);
                    continue;
                }
                nl++;
            }
        }
        if (nl) tile(qs, outs, lo, hi, nl, kb, vb, s->kv_k, s->kv_v, f16, hk, hv, scale, scr, rp);
    }
}

/* the tiles serve this shape here: AVX-512 with head dims % 16, else AVX2 with head dims % 8 */
static bool attn_tiled(const cll_hparams *hp) {
    const uint32_t f = cll_kernels_cpu_features();
    if (f & CLL_ISA_AVX512) return hp->head_dim_k % 16 == 0 && hp->head_dim_v % 16 == 0;
    return (f & CLL_ISA_AVX2) && hp->head_dim_k % 8 == 0 && hp->head_dim_v % 8 == 0;
}

static void task_attn(void *arg, int ith, int nth) {
    cll_cpu_state *s = arg;
    const cll_model *m = s->cm->m;
    const cll_hparams *hp = &m->hp;
    const cll_layer *L = &m->layers[s->il];
    const int32_t H = hp->n_head, gqa = hp->n_head / hp->n_head_kv;
    const int32_t hk = hp->head_dim_k, hv = hp->head_dim_v;
    const bool f16 = !s->p.kv_f32;
    const size_t esz = f16 ? sizeof(uint16_t) : sizeof(float);
    const float scale = m->recipe.q_prescale ? 1.0f : hp->attn_scale;
    float *scores = s->scores + (int64_t)ith * s->sc_ld;
    /* items (token, head) dealt round-robin: a causal prefill's later tokens see more keys, so
     * contiguous halves split the work ~1:3 between two threads */
    for (int64_t it = ith; it < (int64_t)s->b->n * H; it += nth) {
        const int64_t i = it / H;
        const int32_t h = (int32_t)(it % H), kvh = h / gqa;
        const int32_t pos = s->b->pos[i];
        cll_kv_rows rows;
        const cll_kv_rows *rp;
        const int64_t base = kv_base(s, s->b->seq[i], &rows, &rp); /* the sequence's first cell, or the pool's */
        const uint8_t *kb = (const uint8_t *)s->kc[s->il] + ((size_t)base * s->kv_k + (size_t)kvh * hk) * esz;
        const uint8_t *vb = (const uint8_t *)s->vc[s->il] + ((size_t)base * s->kv_v + (size_t)kvh * hv) * esz;
        int32_t lo = 0;
        if (L->swa && pos - hp->n_swa + 1 > 0) lo = pos - hp->n_swa + 1;
        const float *q = s->q + i * (int64_t)H * hk + (int64_t)h * hk;
        float *out = s->ao + i * (int64_t)H * hv + (int64_t)h * hv;
        if (f16 && s->p.ggml_numerics) /* the 1-thread reference: no split-KV chunks */
            cll_ops_attn_head_fa16(q, (const uint16_t *)kb, (const uint16_t *)vb, s->kv_k, s->kv_v, lo, pos + 1, hk,
                                   hv, scale, (uint16_t *)scores, out, rp);
        else
            cll_ops_attn_head(q, kb, vb, s->kv_k, s->kv_v, f16, lo, pos + 1, hk, hv, scale, scores, out, rp);
    }
}

/* x += post_norm(t) */
typedef struct {
    cll_cpu_state *s;
    const float *post; /* NULL: no post norm */
} resid_args;

static void task_resid(void *arg, int ith, int nth) {
    resid_args *a = arg;
    cll_cpu_state *s = a->s;
    const int64_t d = s->cm->m->hp.n_embd;
    int64_t b, e;
    cll_split(s->b->n, ith, nth, &b, &e);
    for (int64_t i = b; i < e; i++) {
        float *t = s->t + i * d, *x = s->x + i * d;
        if (a->post) cll_ops_rmsnorm(t, t, a->post, d, s->cm->m->hp.eps);
        for (int64_t j = 0; j < d; j++) x[j] += t[j];
    }
}

/* g = act(g) * u over n rows of width f (rows at stride ld) */
typedef struct {
    cll_cpu_state *s;
    int64_t n, f;
} act_args;

static void silu_mul(const cll_cpu_state *s, float *g, const float *u, int64_t n) {
    (void)s; /* the AVX-512 loop is bit-exact with the scalar one: the default numerics take it */
    const uint32_t f = cll_kernels_cpu_features();
    if (f & CLL_ISA_AVX512) cll_ops_silu_mul_avx512(g, u, n);
    else if (f & CLL_ISA_AVX2) cll_ops_silu_mul_avx2(g, u, n);
    else cll_ops_silu_mul(g, u, n);
}

/* act(g) * u on columns [c0, c1) of one row of width f (g, u at column c0). Under ggml
 * numerics SiLU is ggml-cpu's swiglu (its own vector expf, libm's on a row's last f % 8
 * columns), so a column's place in its row decides its rounding */
static void act_cols(const cll_cpu_state *s, float *g, const float *u, int64_t c0, int64_t c1, int64_t f) {
    const cll_cpu_model *cm = s->cm;
    if (cm->m->recipe.act == CLL_ACT_GELU_TANH) cll_ops_gelu_mul(g, u, c1 - c0, cm->gelu_tab);
    else if (s->p.ggml_numerics) cll_ops_silu_mul_ggml_avx2(g, u, c0, c1, f);
    else silu_mul(s, g, u, c1 - c0);
}

static void task_act(void *arg, int ith, int nth) {
    act_args *a = arg;
    int64_t b, e; /* split the flattened (n*f) range so a single-token step uses every thread */
    cll_split(a->n * a->f, ith, nth, &b, &e);
    for (int64_t p = b; p < e;) {
        const int64_t c0 = p % a->f, c1 = c0 + (e - p) < a->f ? c0 + (e - p) : a->f;
        act_cols(a->s, a->s->g + p, a->s->u + p, c0, c1, a->f);
        p += c1 - c0;
    }
}

/* the same on columns [r0, r1) of every row: the epilogue of the gate/up matmul */
static void act_rows(void *arg, int64_t r0, int64_t r1) {
    act_args *a = arg;
    for (int64_t t = 0; t < a->n; t++) act_cols(a->s, a->s->g + t * a->f + r0, a->s->u + t * a->f + r0, r0, r1, a->f);
}

static void run_act(cll_cpu_state *s, int64_t n, int64_t f) {
    act_args a = {s, n, f};
    run(s, task_act, &a, n * f * 4);
}

/* ---- MoE ------------------------------------------------------------------------------------ */

/* softmax over all router logits, top-k (ties to the lower expert id), renormalize */
static void moe_route(cll_cpu_state *s) {
    const cll_hparams *hp = &s->cm->m->hp;
    const int32_t E = hp->n_expert, K = hp->n_expert_used;
    for (int32_t i = 0; i < s->b->n; i++) {
        float *r = s->router + (int64_t)i * E;
        float mx = -INFINITY;
        for (int32_t x = 0; x < E; x++) mx = r[x] > mx ? r[x] : mx;
        double sum = 0.0;
        for (int32_t x = 0; x < E; x++) {
            r[x] = expf(r[x] - mx);
            sum += (double)r[x];
        }
        const float inv = (float)(1.0 / sum);
        for (int32_t x = 0; x < E; x++) r[x] *= inv;
        int32_t *sel = s->sel + (int64_t)i * K;
        float *w = s->selw + (int64_t)i * K;
        float wsum = 0.0f;
        for (int32_t k = 0; k < K; k++) {
            int32_t best = -1;
            for (int32_t x = 0; x < E; x++) {
                bool taken = false;
                for (int32_t j = 0; j < k; j++) taken |= sel[j] == x;
                /* NaN ranks below every number (a NaN row routes to the lowest free ids) */
                if (!taken && (best < 0 || (!isnan(r[x]) && (isnan(r[best]) || r[x] > r[best])))) best = x;
            }
            sel[k] = best;
            w[k] = r[best];
            wsum += w[k];
        }
        if (hp->moe_norm_topk) {
            if (wsum < 6.103515625e-5f) wsum = 6.103515625e-5f;
            for (int32_t k = 0; k < K; k++) w[k] /= wsum;
        }
    }
}

/* the experts this model holds (every one, or a tensor-parallel rank's share: the slots routed
 * elsewhere stay zero here and arrive in the all-reduce) */
static void moe_ffn(cll_cpu_state *s, const cll_cpu_layer *C) {
    const cll_hparams *hp = &s->cm->m->hp;
    const int64_t d = hp->n_embd, f = hp->n_ff_exp, n = s->b->n;
    const int32_t E = hp->n_expert, K = hp->n_expert_used, x0 = hp->expert0, x1 = hp->expert0 + hp->n_expert_here;
    cll_cpu_matmul(s->pool, C->router, s->xn, d, n, s->router, E, s->mm);
    moe_route(s);
    if (x1 - x0 < E) memset(s->moe, 0, sizeof(float) * (size_t)(n * K * d));
    for (int32_t x = x0; x < x1; x++) {
        int64_t cnt = 0;
        for (int64_t i = 0; i < n; i++)
            for (int32_t k = 0; k < K; k++)
                if (s->sel[i * K + k] == x) {
                    s->erow[cnt] = (int32_t)i;
                    s->eslot[cnt] = k;
                    memcpy(s->xe + cnt * d, s->xn + i * d, sizeof(float) * d);
                    cnt++;
                }
        if (!cnt) continue;
        cll_cpu_matmul(s->pool, C->gate_e[x - x0], s->xe, d, cnt, s->g, f, s->mm);
        cll_cpu_matmul(s->pool, C->up_e[x - x0], s->xe, d, cnt, s->u, f, s->mm);
        run_act(s, cnt, f);
        cll_cpu_matmul(s->pool, C->down_e[x - x0], s->g, f, cnt, s->de, d, s->mm);
        for (int64_t r = 0; r < cnt; r++) {
            const int64_t i = s->erow[r];
            const int32_t k = s->eslot[r];
            const float w = s->selw[i * K + k];
            float *dst = s->moe + (i * K + k) * d;
            const float *src = s->de + r * d;
            for (int64_t j = 0; j < d; j++) dst[j] = src[j] * w;
        }
    }
    /* sum the slots in order, as llama.cpp adds its per-slot views */
    for (int64_t i = 0; i < n; i++) {
        float *t = s->t + i * d;
        memcpy(t, s->moe + i * K * d, sizeof(float) * d);
        for (int32_t k = 1; k < K; k++) {
            const float *src = s->moe + (i * K + k) * d;
            for (int64_t j = 0; j < d; j++) t[j] += src[j];
        }
    }
}

/* ---- the pass ----------------------------------------------------------------------------------- */

/* tensor parallel: the block output t (n rows) of this rank's heads, features or experts summed over
 * the ranks, before its post norm and residual add (every rank then holds the same x) */
static cll_status allreduce_t(cll_cpu_state *s, int64_t n) {
    if (!s->p.comm) return CLL_OK;
    const double t0 = cll_now();
    cll_status st = cll_cpu_comm_allreduce(s->p.comm, s->p.rank, s->t, n * s->cm->m->hp.n_embd);
    s->ar_seconds += cll_now() - t0;
    s->ar_calls++;
    return st;
}

void cll_cpu_state_allreduce_stats(const cll_cpu_state *s, uint64_t *calls, double *seconds) {
    *calls = s ? s->ar_calls : 0;
    *seconds = s ? s->ar_seconds : 0.0;
}

cll_status cll_cpu_forward(cll_cpu_state *s, const cll_cpu_batch *b, float *logits) {
    const cll_cpu_model *cm = s->cm;
    const cll_model *m = cm->m;
    const cll_hparams *hp = &m->hp;
    const int64_t n = b->n, d = hp->n_embd;
    if (n <= 0 || n > s->p.n_batch)
        return cll_err(CLL_ERR_RANGE, "forward: batch of %lld tokens (n_batch %d)", (long long)n, s->p.n_batch);
    int64_t n_want = 0;
    for (int64_t i = 0; i < n; i++) {
        if (b->tokens[i] < 0 || b->tokens[i] >= hp->n_vocab)
            return cll_err(CLL_ERR_ARG, "forward: token %d at batch index %lld is outside the vocab (%d)",
                           b->tokens[i], (long long)i, hp->n_vocab);
        if (s->kv_paged && !b->blocks)
            return cll_err(CLL_ERR_ARG, "forward: the state's KV is paged but the batch carries no block tables");
        if (b->seq[i] < 0 || b->seq[i] >= s->p.n_seq || b->pos[i] < 0 || b->pos[i] >= s->p.n_ctx)
            return cll_err(CLL_ERR_RANGE, "forward: batch index %lld has seq %d pos %d outside (%d seqs, n_ctx %d)",
                           (long long)i, b->seq[i], b->pos[i], s->p.n_seq, s->p.n_ctx);
        n_want += b->want ? (b->want[i] != 0) : (i == n - 1);
    }
    if (n_want > s->p.n_out_max)
        return cll_err(CLL_ERR_RANGE, "forward: %lld tokens want logits, the session holds %d rows", (long long)n_want,
                       s->p.n_out_max);
    s->b = b;
    run(s, task_embed, s, n * d);
    /* attention work ~ sum over tokens of keys seen, times heads and head size */
    int64_t attn_work = 0;
    for (int64_t i = 0; i < n; i++) attn_work += (int64_t)(b->pos[i] + 1) * hp->n_head * hp->head_dim_k;
    const int64_t nq = (int64_t)hp->n_head * hp->head_dim_k, nao = (int64_t)hp->n_head * hp->head_dim_v;
    cll_status st = CLL_OK;
    for (int32_t il = 0; il < hp->n_layer; il++) {
        const cll_cpu_layer *C = &cm->layers[il];
        s->il = il;
        run_norm(s, s->x, s->xn, C->attn_norm, n);
        { /* one activation quantization and one fork-join for q, k, v */
            const cll_cpu_weight *w3[3] = {C->wq, C->wk, C->wv};
            float *const y3[3] = {s->q, s->k, s->v};
            const int64_t ld3[3] = {nq, s->kv_k, s->kv_v};
            cll_cpu_matmul_many(s->pool, 3, w3, s->xn, d, n, y3, ld3, s->mm);
        }
        run(s, task_qkv, s, n * (nq + 2 * s->kv_k) * 4);
        if (n >= 4 && !s->p.ggml_numerics && attn_tiled(hp))
            run(s, task_attn_tiles, s, attn_work);
        else
            run(s, task_attn, s, attn_work);
        cll_cpu_matmul(s->pool, C->wo, s->ao, nao, n, s->t, d, s->mm);
        if ((st = allreduce_t(s, n)) != CLL_OK) break;
        resid_args ra = {s, C->post_attn_norm};
        run(s, task_resid, &ra, n * d);

        run_norm(s, s->x, s->xn, C->ffn_norm, n);
        if (hp->n_expert > 0) {
            moe_ffn(s, C);
        } else {
            const int64_t f = hp->n_ff;
            /* gate and up in one fork-join; act(g) * u runs on each chunk's rows as they land */
            const cll_cpu_weight *w2[2] = {C->gate, C->up};
            float *const y2[2] = {s->g, s->u};
            const int64_t ld2[2] = {f, f};
            act_args aa = {s, n, f};
            cll_cpu_matmul_many_ep(s->pool, 2, w2, s->xn, d, n, y2, ld2, s->mm, act_rows, &aa);
            cll_cpu_matmul(s->pool, C->down, s->g, f, n, s->t, d, s->mm);
        }
        if ((st = allreduce_t(s, n)) != CLL_OK) break;
        resid_args rf = {s, C->post_ffn_norm};
        run(s, task_resid, &rf, n * d);
    }
    if (st != CLL_OK) { /* the group was abandoned: another rank failed */
        s->b = NULL;
        return st;
    }
    if (n_want == 0) {
        s->b = NULL;
        return CLL_OK;
    }
    /* logits only for the rows that asked */
    int64_t r = 0;
    for (int64_t i = 0; i < n; i++)
        if (b->want ? b->want[i] != 0 : i == n - 1) memcpy(s->xo + (r++) * d, s->x + i * d, sizeof(float) * d);
    run_norm(s, s->xo, s->xo, cm->output_norm, n_want);
    cll_cpu_matmul(s->pool, cm->output, s->xo, d, n_want, logits, hp->n_logits, s->mm);
    if (hp->logit_softcap > 0.0f) {
        const float c = hp->logit_softcap;
        for (int64_t j = 0; j < n_want * hp->n_logits; j++) logits[j] = tanhf(logits[j] / c) * c;
    }
    s->b = NULL;
    return CLL_OK;
}
