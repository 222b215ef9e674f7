/* cuda/driver: the CUDA driver (model/driver.h): per-context state (F16/F32 KV cache and every
 * activation, allocated once), and the forward: one-token steps replay a CUDA graph captured when
 * the state is created (everything that changes per step, token / pos / seq, sits in a small device
 * buffer that one copy refreshes); a few sequences' decode steps replay a graph per token count
 * (captured when a count repeats); prompt batches launch the same kernels eagerly with cuBLAS or the
 * fused tile products. A profiled state and a rank of the one-GPU simulated split capture nothing.
 * Owns the state's device arena, stream, cuBLAS handle and graph. Rule: glue only: kernels live
 * in cuda/ops and cuda/matmul; every CUDA error becomes a cll_status with file:line. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/comm.cuh"
#include "cuda/driver_internal.cuh"

/* ---- the pass ------------------------------------------------------------------------------- */

/* the step's next product (NULL: none): its first bytes into L2 as this one drains */
static void set_pf_next(cll_cu_gemv_args *a, const cll_cu_part *next, size_t pf_cap) {
    if (!next) return;
    const size_t nb_ = next->w.mat_stride, cap = pf_cap != SIZE_MAX ? pf_cap : cll_cu_l2next_bytes();
    a->pf_next = next->w.d;
    a->pf_bytes = nb_ < cap ? nb_ : cap;
}

static cudaError_t gemv(const cll_cu_part *p, int nb, const int32_t *ids, const float *x, int64_t xs, const void *xq,
                        int64_t xqs, float *y, int64_t ys, cudaStream_t st, const cll_cu_part *next = NULL,
                        const cll_cu_resid_epi *epi = NULL, const cll_cu_gemv_impl *row = NULL,
                        const cll_cu_splitk *sk = NULL, const cll_cu_gemv_args *fused = NULL, size_t pf_cap = SIZE_MAX) {
    cll_cu_gemv_args a;
    memset(&a, 0, sizeof a);
    if (epi) a.epi = *epi;
    if (sk) a.sk = *sk;
    if (fused) { /* the decode fusions: routing and / or the activation done by the product */
        a.route = fused->route;
        a.act_in = fused->act_in;
        a.act_out = fused->act_out;
    }
    if (!ids) set_pf_next(&a, next, pf_cap);
    a.nb = nb;
    a.mat_ids = ids;
    a.x = x;
    a.x_stride = xs;
    a.xq = xq;
    a.xq_stride = xqs;
    a.y = y + p->y_off;
    a.y_stride = ys;
    return (row ? row : p->gemv)->gemv(&p->w, &a, st);
}

/* CLLAMA_CUDA_MOE_GROUPED=0: MoE prefill token by token (A/B) */
static bool moe_grouped_off(void) {
    static int off = -1; /* process-wide setting read once; not state */
    if (off < 0) {
        const char *v = getenv("CLLAMA_CUDA_MOE_GROUPED");
        off = v && v[0] == '0';
    }
    return off != 0;
}

/* CLLAMA_CUDA_FEW_MAX=N: the most tokens a batch runs through a few-token gemv (1: never; unset
 * or 0: what the weight's rows serve) */
static int few_max(void) {
    static int v = -2; /* process-wide setting read once; not state */
    if (v == -2) {
        const char *e = getenv("CLLAMA_CUDA_FEW_MAX");
        v = e && *e ? atoi(e) : 0;
        if (v < 0) v = 0;
    }
    return v;
}

/* CLLAMA_CUDA_MMA_MAX=N: the most tokens of a product the int8 tensor-core rows take (2..64; default
 * 8: the tile of 9..64 tokens measured slower than the f16 panels on the H200, see pick.cu) */
static int mma_max(void) {
    static int v = -1; /* process-wide setting read once; not state */
    if (v < 0) {
        const char *e = getenv("CLLAMA_CUDA_MMA_MAX");
        v = e && *e ? atoi(e) : CLL_CU_MMA_DEFAULT_MAX;
        if (v < 2) v = 2;
        if (v > CLL_CU_MMA_MAX) v = CLL_CU_MMA_MAX;
    }
    return v;
}

/* the form that serves part p for a batch of n tokens (cuda/matmul/pick.cu) */
static cll_cu_form part_form(const cll_cu_part *p, int64_t n) {
    cll_cu_form_query q;
    memset(&q, 0, sizeof q);
    q.wtype = p->w.type;
    q.rows = p->w.rows;
    q.cols = p->w.cols;
    q.n_mat = p->w.n_mat;
    q.n_tokens = n;
    q.resident = p->w16.d != NULL;
    q.grouped_row = p->w16.d ? p->moe16 != NULL : p->moe != NULL;
    q.grouped_off = moe_grouped_off();
    q.few_tokens = p->few ? CLL_CU_FEW_MAX : 0;
    q.few_max = few_max();
    q.mma_min = !p->mma ? 0 : p->mma_tile_only ? CLL_CU_FEW_MAX + 1 : cll_cu_mma_min_tokens(p->w.type);
    q.mma_max = !p->mma ? 0 : p->mma_tile ? CLL_CU_MMA_MAX : mma_max();
    q.fused = p->fused && !p->mma_tile; /* a pin of the n9-64 class on the int8 tile wins */
    q.fused_min = p->fused_min;
    q.fused_max = p->fused_max;
    return cll_cu_pick_form(&q);
}

/* the few-token row the pick gives part p for n tokens (NULL: not a few-token form) */
static const cll_cu_gemv_impl *few_form_row(const cll_cu_part *p, int64_t n) {
    const cll_cu_form f = part_form(p, n);
    return f == CLL_CU_FORM_GEMV_FEW_MMA ? p->mma : f == CLL_CU_FORM_GEMV_FEW ? p->few : NULL;
}

/* whether a product of np parts over n rows reads its input's q8_1 form: one token, a part whose gemv
 * row reads q8_1 (a block type's; the float rows read the f32 rows); more, a part the pick gives a
 * few-token gemv row (the GEMM forms read the f32 rows only). So the norm, activation and attention
 * kernels skip writing q8_1 rows nobody reads: a prefill's, and an F16 / BF16 / F32 model's decode
 * step's (129 q8_1 rows a token on l2-7b F16 before 2026-12-07: four a layer and the first norm's) */
static bool wants_q8(const cll_cu_part *parts, int np, int64_t n) {
    for (int i = 0; i < np; i++)
        if (n == 1 ? !parts[i].gemv || parts[i].gemv->needs_q8 : few_form_row(&parts[i], n) != NULL) return true;
    return false;
}

/* where the producer of a product's input over n rows of cols writes them as f16 (the gemm scratch,
 * read by every part without a conversion kernel), and in which order (*kind): CLL_CU_X_FUSED, the
 * fused rows' order, when every part takes the fused form; 1, plain, when every part is a cuBLAS f16
 * product (F16 weights read in place, resident or decoded f16 panels: cll_cu_gemm_x_kind 1). NULL (kind
 * -1): it writes none (the parts convert X themselves, or read its q8_1 / f32 rows; BF16 and F32 parts;
 * CLLAMA_CUDA_FUSED_XH=0: always, the A/B and the golden test's reference). The norm and activation
 * kernels round as the conversion kernel does (cll_f2h), so the product's bits do not change. The o
 * product's rows come from the tensor-core prefill attention kernel where it serves the whole batch (else
 * the product converts them). */
static void *fused_x(const cll_driver_state *s, const cll_cu_part *parts, int np, int64_t n, int64_t cols,
                     int *kind = NULL) {
    if (kind) *kind = -1;
    if (!s->fused_xh || n < 2 || cols % 32 || !s->gemm.xh || s->gemm.xh_bytes < (size_t)(n * cols) * 2) return NULL;
    int k = -1;
    for (int i = 0; i < np; i++) {
        const cll_cu_form f = part_form(&parts[i], n);
        const bool blas = f == CLL_CU_FORM_GEMM_DIRECT || f == CLL_CU_FORM_GEMM_PANEL || f == CLL_CU_FORM_GEMM_RESIDENT;
        const int pk = f == CLL_CU_FORM_GEMM_FUSED ? CLL_CU_X_FUSED
                       : blas && cll_cu_gemm_x_kind(f == CLL_CU_FORM_GEMM_RESIDENT ? &parts[i].w16 : &parts[i].w) == 1
                           ? 1
                           : -1;
        if (pk < 0 || parts[i].w.cols != cols || (k >= 0 && pk != k)) return NULL;
        k = pk;
    }
    if (kind) *kind = k;
    return s->gemm.xh;
}

/* *xk: the X conversion the product's previous part left in the gemm scratch (-1: none; the kind
 * of cll_cu_gemm_x_kind, or CLL_CU_X_FUSED), so the parts of one product over the same X convert it once */
/* cap: the rows x and y hold (a cuBLAS form may run up to that many, cll_cu_gemm_tokens) */
static cudaError_t gemm(cll_driver_state *s, const cll_cu_part *p, const float *x, int64_t ldx, int64_t n,
                        float *y, int64_t ldy, int64_t cap, int *xk = NULL) {
    /* the resident f16 panel when the model keeps one (CLLAMA_CUDA_PANELS), else the weight (a
     * float read in place, or a panel decoded per product) */
    const cll_cu_form f = part_form(p, n);
    const cll_cu_weight *w = f == CLL_CU_FORM_GEMM_RESIDENT ? &p->w16 : &p->w;
    const int k = f == CLL_CU_FORM_GEMM_FUSED ? CLL_CU_X_FUSED : cll_cu_gemm_x_kind(w); /* the fused rows' own order */
    const bool ready = xk && k > 0 && *xk == k;
    if (xk) *xk = k > 0 ? k : *xk; /* an F32 part leaves the scratch as it was */
    if (k > 0 && !ready) s->c.x_conversions++;
    if (f == CLL_CU_FORM_GEMM_FUSED)
        return cll_cu_gemm_fused(&s->gemm, p->fused->fgemm, w, x, ldx, n, y + p->y_off, ldy, &s->sk, s->st, ready);
    return cll_cu_gemm(&s->gemm, w, 0, x, ldx, cll_cu_gemm_tokens(n, cap, s->gemm_pad), y + p->y_off, ldy, s->st, ready);
}

/* CLLAMA_CUDA_GU_ACT=0: a one-token gate|up product of a float type runs the act kernel after it
 * (cll_cu_gemv_args.act_out off; A/B: the same bits either way) */
static bool gu_act_on(void) {
    static int on = -1; /* process-wide setting read once; not state */
    return cll_cu_env_flag(&on, "CLLAMA_CUDA_GU_ACT", true);
}

/* CLLAMA_CUDA_GU_ACTQ=0|1: whether a one-token gate|up product of a quantized type (a split row of two rows
 * a warp, cll_cu_gemv_impl.acts_out) writes the activation and its q8_1 blocks itself (cll_cu_gemv_args.act_out,
 * polled slots) or the act kernel runs after it (the same bits either way; A/B); unset: cll_cu_gu_actq's pick */
static bool gu_actq_on(uint32_t type) {
    static int want = -2; /* process-wide setting read once; not state */
    return cll_cu_gu_actq(cll_cu_env_tri(&want, "CLLAMA_CUDA_GU_ACTQ"), type);
}

/* whether a one-token step's gate|up product of layer C writes the activation itself (act_out): one part of
 * 2 ff rows whose row honours act_out on this weight, and either a float pair whose down product reads f32
 * rows (CLLAMA_CUDA_GU_ACT) or a quantized pair (CLLAMA_CUDA_GU_ACTQ) whose q8_1 blocks are whole (ff % 32) */
static bool gu_acts_out(const cll_driver_state *s, const cll_cu_layer *C) {
    const cll_cu_gemv_impl *g = C->n_gu == 1 ? C->gu[0].gemv : NULL;
    if (!g || !g->acts_out || C->gu[0].w.rows != 2 * s->ff || !C->down.gemv || !cll_cu_acts_out_ok(g->gemv, &C->gu[0].w))
        return false;
    if (!g->needs_q8) return !C->down.gemv->needs_q8 && gu_act_on();
    if (!gu_actq_on(C->gu[0].w.type)) return false;
    return !wants_q8(&C->down, 1, 1) || (s->ff % 32 == 0 && s->actslot);
}

/* CLLAMA_CUDA_PAIR=0: a one-token product of two weights runs two launches (cll_cu_gemv_pair off; A/B) */
static bool pair_on(void) {
    static int on = -1; /* process-wide setting read once; not state */
    return cll_cu_env_flag(&on, "CLLAMA_CUDA_PAIR", true);
}

/* a product of 1..3 parts over n rows: gemv for one token (decode), gemm for a batch; next: the
 * product the step runs after this one (its weights are prefetched into L2 by the last part) */
static cudaError_t product(cll_driver_state *s, const cll_cu_part *parts, int np, int64_t n, const float *x,
                           int64_t ldx, const void *xq, float *y, int64_t ldy, const cll_cu_part *next = NULL,
                           const cll_cu_resid_epi *epi = NULL, size_t pf_cap = SIZE_MAX, int xh_kind = -1) {
    int xk = xh_kind; /* the parts' X, converted once (gemm); xh_kind >= 0: by its producer (fused_x's kind) */
    if (n == 1 && np == 2 && !epi && pair_on() && parts[0].gemv && parts[1].gemv) {
        /* a one-token product of two types (q|k then a v of another type): one launch where both rows run
         * the w4r2pre body (cll_cu_gemv_pair; the same bits), else the two launches below */
        cll_cu_gemv_args a;
        memset(&a, 0, sizeof a);
        set_pf_next(&a, next, pf_cap);
        a.nb = 1;
        a.xq = xq;
        const cudaError_t e = cll_cu_gemv_pair(parts[0].gemv->gemv, &parts[0].w, y + parts[0].y_off, parts[1].gemv->gemv,
                                               &parts[1].w, y + parts[1].y_off, &a, s->st);
        if (e != cudaErrorNotSupported) return e;
    }
    for (int i = 0; i < np; i++) {
        const cll_cu_part *p = &parts[i], *nx = i + 1 < np ? &parts[i + 1] : next;
        if (n == 1) {
            CLL_CU_RET(gemv(p, 1, NULL, x, 0, xq, 0, y, 0, s->st, nx, epi, NULL, NULL, NULL, pf_cap));
        } else if (const cll_cu_gemv_impl *fr = few_form_row(p, n)) { /* a few sequences' decode step */
            CLL_CU_RET(gemv(p, (int)n, NULL, x, ldx, xq, cll_cu_q8_blocks(p->w.cols), y, ldy, s->st, nx, NULL, fr, &s->sk));
        } else {
            CLL_CU_RET(gemm(s, p, x, ldx, n, y, ldy, s->p.n_batch, &xk));
        }
    }
    return cudaSuccess;
}

/* keys per grid chunk of a decode launch: CLL_CU_ATTN_CHUNK, or CLLAMA_CUDA_ATTN_CHUNK (A/B runs:
 * smaller chunks, more blocks and a merge); read once per process, sized into the partials at
 * state creation */
static int64_t attn_grid_chunk(void) {
    static int v = -1; /* process-wide setting read once; not state */
    if (v < 0) {
        const char *e = getenv("CLLAMA_CUDA_ATTN_CHUNK");
        v = e && atoi(e) >= 16 ? atoi(e) : CLL_CU_ATTN_CHUNK;
    }
    return v;
}

/* key chunks per token for an attention launch over n rows: decode (n = 1) splits n_ctx in
 * attn_grid_chunk() chunks; a batch takes as many as the partials buffer holds. Any count is exact
 * (a chunk covers max(min_chunk, len / n_chunks) keys). */
static int32_t attn_chunks(const cll_driver_state *s, int64_t n) {
    const int64_t max_chunks = cll_cdiv(s->p.n_ctx, attn_grid_chunk());
    if (n <= 1) return (int32_t)max_chunks;
    const int64_t fit = s->part_cap / (n * s->dm->m->hp.n_head);
    return (int32_t)(fit < 1 ? 1 : fit < max_chunks ? fit : max_chunks);
}

/* the fused residual tail for decode product p into the residual width (NULL: run the residual
 * kernel instead): n == 1, no post norm, CLLAMA_CUDA_FUSE_RESID=1 (the last block's ticket) or 2
 * (polled slots, where p's row serves them: cll_cu_resid_poll_ok). Off by default: the ticket
 * tail measured slower on the H200 than the separate one-block kernel behind PDL (l2-7b tg128:
 * Q4_0 509 vs 569, Q8_0 363 vs 391, F16 245 vs 261 tok/s): the last block's ticket, its fences and
 * its L2 round trips cost more on the critical path than a launch the next gemv already overlaps.
 * The polled tail (written in the forty-ninth session, not yet timed) holds no producer block: one
 * consumer block at the grid's end does the norm kernel's work as the rows land. */
static const cll_cu_resid_epi *resid_tail(const cll_driver_state *s, const cll_cu_part *p, int64_t n, const float *post,
                                          const float *next_norm, void *xq, cll_cu_resid_epi *e) {
    static int mode = -1; /* process-wide setting read once; not state */
    if (mode < 0) {
        const char *v = getenv("CLLAMA_CUDA_FUSE_RESID");
        mode = v && (v[0] == '1' || v[0] == '2') ? v[0] - '0' : 0;
    }
    if (!mode || n != 1 || post) return NULL;
    const bool poll = mode == 2;
    if (poll && (!p->gemv || !s->rslot || !cll_cu_resid_poll_ok(p->gemv->gemv, &p->w))) return NULL;
    memset(e, 0, sizeof *e);
    e->on = 1;
    e->x = s->x;
    e->part = s->rpart;
    e->ticket = s->rticket;
    e->slot = poll ? s->rslot : NULL;
    e->norm = next_norm;
    e->eps = s->dm->m->hp.eps;
    e->xn = s->xn;
    e->xq = xq; /* the next products' q8_1 rows, where they read them (NULL: none) */
    return e;
}

#define TRY(call) CLL_CU_TRY(call)

/* ---- opt-in profile (CLLAMA_CUDA_PROFILE) --------------------------------------------------- */

static const char *const prof_names[CLL_PK_N] = {
    "embd",   "gemv qkv", "rope+kv", "attention", "gemv o",  "norm/resid", "gemv gate_up", "act",
    "gemv down", "gemv router", "moe route", "gemv experts", "gemv output", "softcap", "argmax", "all-reduce",
};

/* the kinds' short names (CLLAMA_CUDA_SKIP, the batch profile) */
static const char *const skip_names[CLL_PK_N] = {"embd", "qkv",   "rope",    "attn",   "o",       "norm",
                                                 "gu",   "act",   "down",    "router", "route",   "experts",
                                                 "output", "softcap", "argmax", "allreduce"};

static int prof_begin(cll_driver_state *s) {
    cll_cu_prof *P = &s->prof;
    if (!P->on || P->n + 2 > CLL_PROF_EVENTS) return -1;
    if (cudaEventRecord(P->ev[P->n], s->st) != cudaSuccess) return -1;
    return P->n;
}

static void prof_end(cll_driver_state *s, int i, int kind) {
    cll_cu_prof *P = &s->prof;
    if (i < 0) return;
    if (cudaEventRecord(P->ev[i + 1], s->st) != cudaSuccess) return;
    P->kind[i / 2] = (uint8_t)kind;
    P->n = i + 2;
}

/* after the step's sync: event pairs -> per-kind time */
static void prof_collect(cll_driver_state *s) {
    cll_cu_prof *P = &s->prof;
    if (!P->warm[P->which]) { /* the first pass of each form loads modules lazily (cuBLAS, our
                               * kernels: CUDA_MODULE_LOADING=LAZY): not counted */
        P->warm[P->which] = true;
        P->steps[P->which]--;
        P->tokens[P->which] -= P->last_n;
        P->n = 0;
        return;
    }
    for (int i = 0; i + 1 < P->n; i += 2) {
        float ms = 0.0f;
        if (cudaEventElapsedTime(&ms, P->ev[i], P->ev[i + 1]) == cudaSuccess) {
            P->ms[P->which][P->kind[i / 2]] += ms;
            P->calls[P->which][P->kind[i / 2]]++;
        }
    }
    P->n = 0;
}

static void prof_report(const cll_driver_state *s) {
    const cll_cu_prof *P = &s->prof;
    if (P->mode == 2 || P->g_nodes)
        fprintf(stderr, "cuda graph: %zu nodes (%zu kernels), %zu edges, %zu programmatic (PDL)\n", P->g_nodes,
                P->g_kernels, P->g_edges, P->g_prog);
    if (P->mode != 1) return;
    for (int w = 0; w < 2; w++) {
        if (!P->steps[w]) continue;
        double tot = 0.0;
        for (int k = 0; k < CLL_PK_N; k++) tot += P->ms[w][k];
        const double st = (double)P->steps[w], tk = (double)P->tokens[w];
        if (w == 0)
            fprintf(stderr, "cuda decode profile: %llu eager steps (events around each launch; not a graph run; the first "
                            "step not counted)\n",
                    (unsigned long long)P->steps[w]);
        else
            fprintf(stderr, "cuda batch (prefill) profile: %llu passes, %.1f tokens each (events around each launch; the "
                            "first pass not counted)\n",
                    (unsigned long long)P->steps[w], tk / st);
        fprintf(stderr, "%-14s %10s %12s %12s %7s\n", "kind", "calls/pass", "us/pass", "us/tok", "%");
        for (int k = 0; k < CLL_PK_N; k++) {
            if (!P->calls[w][k]) continue;
            fprintf(stderr, "%-14s %10.1f %12.1f %12.2f %6.1f%%\n", w ? skip_names[k] : prof_names[k],
                    (double)P->calls[w][k] / st, 1000.0 * P->ms[w][k] / st, 1000.0 * P->ms[w][k] / tk,
                    tot > 0 ? 100.0 * P->ms[w][k] / tot : 0.0);
        }
        fprintf(stderr, "%-14s %10s %12.1f %12.2f %6.1f%%\n", "total", "", 1000.0 * tot / st, 1000.0 * tot / tk, 100.0);
    }
}

/* CLLAMA_CUDA_SKIP=attn,norm,...: a diagnosis of where a step's time goes, by removal: every
 * pass (a decode step, a batched step, a prompt) leaves out the launches of those kinds (the
 * tokens it produces are then wrong; a warning says so), so `cllama bench -n 128` (or -npl N)
 * with and without a kind measures what that kind costs inside the replayed graph, overlap
 * included (the eager profile's events inflate small kernels and count host gaps). Names as the
 * profile's kinds:
 * embd qkv rope attn o norm gu act down router route experts output softcap argmax. */

static unsigned skip_mask(void) {
    static int m = -1; /* process-wide setting read once; not state */
    if (m < 0) {
        m = 0;
        const char *e = getenv("CLLAMA_CUDA_SKIP");
        for (const char *p = e; p && *p;) {
            const size_t len = strcspn(p, ",");
            for (int k = 0; k < CLL_PK_N; k++)
                if (strlen(skip_names[k]) == len && !strncmp(skip_names[k], p, len)) m |= 1 << k;
            p += len + (p[len] == ',');
        }
        if (m) fprintf(stderr, "cuda: CLLAMA_CUDA_SKIP=%s: every pass leaves those kernels out: timing only, the "
                               "tokens are wrong\n", e);
    }
    return (unsigned)m;
}

/* TRY(call) timed as one span of kind k when profiling; skipped when CLLAMA_CUDA_SKIP names k */
#define PTRY(k, call)                                                                                        \
    do {                                                                                                     \
        if (skip_mask() >> (k) & 1u) break;                                                                  \
        const int pi_ = prof_begin(s);                                                                       \
        TRY(call);                                                                                           \
        prof_end(s, pi_, (k));                                                                               \
    } while (0)

/* the same for a call that returns a cll_status (the all-reduce); never skipped: a rank that skipped
 * its sum would leave the others waiting */
#define PSTRY(k, call)                                                                                       \
    do {                                                                                                     \
        const int pi_ = prof_begin(s);                                                                       \
        const cll_status st_ = (call);                                                                       \
        if (st_ != CLL_OK) return st_;                                                                       \
        prof_end(s, pi_, (k));                                                                               \
    } while (0)

/* the grouped MoE prefill serves this layer's batch of n: every expert weight picks a grouped form */
static bool moe_grouped(const cll_cu_layer *C, int64_t n) {
    const cll_cu_form fd = part_form(&C->down, n);
    if (fd != CLL_CU_FORM_MOE_GROUPED && fd != CLL_CU_FORM_MOE_GROUPED_F16) return false;
    for (int g = 0; g < C->n_gu; g++) {
        const cll_cu_form f = part_form(&C->gu[g], n);
        if (f != CLL_CU_FORM_MOE_GROUPED && f != CLL_CU_FORM_MOE_GROUPED_F16) return false;
    }
    return true;
}

/* a grouped MoE product over the part's resident f16 panel when it has one */
static cudaError_t moe_product(const cll_cu_part *p, const cll_cu_moe_args *a, cudaStream_t st) {
    return p->w16.d ? p->moe16->moe(&p->w16, a, st) : p->moe->moe(&p->w, a, st);
}

/* The MoE decode fusions, off by default until measured on the H200:
 * CLLAMA_CUDA_MOE_FUSE_ROUTE=1: the first expert product routes the token itself (cll_cu_route: no
 * routing kernel between the router product and the experts);
 * CLLAMA_CUDA_MOE_FUSE_ACT=1: the expert down product computes its input (the gated activation of
 * gate|up, q8_1) in its own staging (cll_cu_gemv_args.act_in: no act kernel between the products). */
static int g_moe_fuse_route = -1, g_moe_fuse_act = -1;

/* MoE FFN of rows [0, n) of xn/xq into s->moe (n, n_used, d) and s->sel/selw */
static cll_status moe_ffn(cll_driver_state *s, const cll_cu_layer *C, int64_t n) {
    const cll_hparams *hp = &s->dm->m->hp;
    const int64_t d = hp->n_embd, f = s->ffe, K = hp->n_expert_used;
    const int64_t qd = cll_cu_q8_blocks(d), qf = cll_cu_q8_blocks(f);
    const bool gelu = s->dm->m->recipe.act == CLL_ACT_GELU_TANH;
    /* decode: the first gate/up product may route for itself */
    /* expert parallel (a tensor-parallel rank holds experts [e0, e0 + here)): the router scores all of
     * them and routes as unsplit; the slots of this rank's experts run on local ids, the others are
     * zeroed after (their owners' rows arrive in the all-reduce) */
    const int32_t E = hp->n_expert, e0 = hp->expert0, here = hp->n_expert_here;
    const bool part = here < E;
    const bool fuse = !part && n == 1 && cll_cu_env_flag(&g_moe_fuse_route, "CLLAMA_CUDA_MOE_FUSE_ROUTE", false) && C->gu[0].gemv &&
                      C->gu[0].gemv->routes && hp->n_expert <= CLL_CU_ROUTE_EMAX && K <= CLL_CU_ROUTE_KMAX;
    const bool fuse_act = n == 1 && cll_cu_env_flag(&g_moe_fuse_act, "CLLAMA_CUDA_MOE_FUSE_ACT", false) && C->down.gemv &&
                          C->down.gemv->acts;
    PTRY(CLL_PK_ROUTER, product(s, &C->router, 1, n, s->xn, d, s->xq, s->router, hp->n_expert));
    if (!fuse)
        PTRY(CLL_PK_MOE_ROUTE, cll_cu_moe_route(s->router, n, hp->n_expert, (int32_t)K, hp->moe_norm_topk, s->sel, s->selw, s->st));
    const bool grouped = n > 1 && moe_grouped(C, n);
    /* the ids the expert products read: the routed ones, or this rank's local ones, -1 for the slots
     * another rank owns: the grouped sort leaves them out (their rows are zeroed after), and a gemv
     * row writes a defined zero for an id outside its matrices without reading a weight */
    const int32_t *sel = s->sel;
    if (part) {
        PTRY(CLL_PK_MOE_ROUTE, cll_cu_moe_localize(s->sel, n * K, e0, here, -1, s->lsel, s->st));
        sel = s->lsel;
    }
    if (grouped) { /* prefill: every expert's slots in one launch per product */
        const int64_t nk = n * K;
        PTRY(CLL_PK_MOE_ROUTE, cll_cu_moe_sort(sel, nk, here, CLL_CU_MOE_BN, s->mids, s->moff, s->mtoff, s->st));
        cll_cu_moe_args a;
        memset(&a, 0, sizeof a);
        a.ids = s->mids;
        a.off = s->moff;
        a.toff = s->mtoff;
        a.n_expert = here;
        a.max_tiles = cll_cu_moe_max_tiles(nk, here);
        a.n_slots = nk;
        a.xh = s->mxh;
        a.xh_bytes = s->mxh_bytes;
        a.x = s->xn;
        a.ldx = d;
        a.x_div = (int32_t)K;
        a.ldy = 2 * f;
        for (int g = 0; g < C->n_gu; g++) {
            a.y = s->gu + C->gu[g].y_off;
            PTRY(CLL_PK_EXPERTS, moe_product(&C->gu[g], &a, s->st));
        }
        PTRY(CLL_PK_ACT, cll_cu_act_q8(s->gu, 2 * f, nk, f, gelu, s->act, s->actq, s->st));
        a.x = s->act;
        a.ldx = f;
        a.x_div = 1;
        a.y = s->moe;
        a.ldy = d;
        PTRY(CLL_PK_EXPERTS, moe_product(&C->down, &a, s->st));
        if (part) PTRY(CLL_PK_EXPERTS, cll_cu_moe_zero_foreign(s->sel, nk, e0, here, s->moe, d, s->st));
        return CLL_OK;
    }
    for (int64_t i = 0; i < n; i++) { /* per token over the gemv path (prefill speed is the next issue) */
        const int32_t *ids = sel + i * K;
        cll_cu_gemv_args fz; /* the fusions' fields only */
        memset(&fz, 0, sizeof fz);
        for (int g = 0; g < C->n_gu; g++) {
            const bool route = fuse && g == 0; /* later products read the ids this one publishes */
            fz.route.logits = route ? s->router : NULL;
            fz.route.n_expert = hp->n_expert;
            fz.route.k = (int32_t)K;
            fz.route.renorm = hp->moe_norm_topk;
            fz.route.sel = s->sel;
            fz.route.selw = s->selw;
            PTRY(CLL_PK_EXPERTS, gemv(&C->gu[g], (int)K, route ? NULL : ids, s->xn + i * d, 0,
                                      (const cll_block_q8_1 *)s->xq + i * qd, 0, s->gu, 2 * f, s->st, NULL, NULL, NULL,
                                      NULL, route ? &fz : NULL));
        }
        memset(&fz, 0, sizeof fz);
        if (fuse_act) { /* the down product activates gate|up itself */
            fz.act_in.gu = s->gu;
            fz.act_in.ld = 2 * f;
            fz.act_in.gelu = gelu;
        } else {
            PTRY(CLL_PK_ACT, cll_cu_act_q8(s->gu, 2 * f, K, f, gelu, s->act, s->actq, s->st));
        }
        PTRY(CLL_PK_EXPERTS, gemv(&C->down, (int)K, ids, s->act, f, s->actq, qf, s->moe + i * K * d, d, s->st, NULL, NULL,
                                  NULL, NULL, fuse_act ? &fz : NULL));
    }
    return CLL_OK;
}

/* decode's gap prefetches (cuda/knobs.h): the latency-bound kernels between two products ask L2
 * for the next product's weights while the memory would sit idle: the attention over a short
 * context the o weights (cuda.attn_pf_mb, while the token's K and V rows are at most
 * cuda.attn_pf_kv_mb), the activation the down weights (cuda.act_pf_mb); the o and down products'
 * last waves ask more of the next weights (cuda.l2next_o_mb, _down_mb: a one-block norm kernel
 * follows each) */
static size_t attn_pf_bytes(void) { return (size_t)cll_cuda_knobs_now()->attn_pf_mb << 20; }
static int64_t attn_pf_kv_max(void) { return (int64_t)cll_cuda_knobs_now()->attn_pf_kv_mb << 20; }
static size_t act_pf_bytes(void) { return (size_t)cll_cuda_knobs_now()->act_pf_mb << 20; }
static size_t o_next_bytes(void) {
    const int mb = cll_cuda_knobs_now()->l2next_o_mb;
    return mb < 0 ? cll_cu_l2next_bytes() : (size_t)mb << 20;
}
static size_t down_next_bytes(void) {
    const int mb = cll_cuda_knobs_now()->l2next_down_mb;
    return mb < 0 ? cll_cu_l2next_bytes() : (size_t)mb << 20;
}

/* the attention launch of segment g of a mixed step (a prompt run, or rows between): aa's rows r0 .. r0 + n
 * of the segment, its own chunks; orow: an output row's width */
static cll_cu_attn_args seg_args(const cll_driver_state *s, const cll_cu_attn_args *aa, int32_t g, const int32_t *pos,
                                 const int32_t *seq, int64_t orow) {
    cll_cu_attn_args sa = *aa;
    const int64_t r0 = s->seg[g].start, ng = s->seg[g].n;
    sa.q = aa->q + r0 * aa->ld_q;
    sa.pos = pos + r0;
    sa.seq = seq + r0;
    sa.out = aa->out + r0 * orow;
    sa.outq = aa->outq ? (void *)((cll_block_q8_1 *)aa->outq + r0 * cll_cu_q8_blocks(orow)) : NULL;
    sa.outh = aa->outh ? (void *)((uint16_t *)aa->outh + r0 * orow) : NULL;
    sa.prefill_contig = s->seg[g].run;
    sa.prefill_p0 = s->seg[g].p0;
    sa.prefill_seq = s->seg[g].seq;
    sa.n_chunks = attn_chunks(s, ng);
    sa.chunk = (int32_t)cll_cdiv(s->p.n_ctx, sa.n_chunks);
    return sa;
}

/* the first min(cap, its size) bytes of part p's weights, a multiple of 16 */
static size_t pf_span(const cll_cu_part *p, size_t cap) {
    const size_t b = p->w.mat_stride < cap ? p->w.mat_stride : cap;
    return b & ~(size_t)15;
}

/* Every layer and the output head over n tokens whose ids / pos / seq / want rows sit in s->io.
 * n == 1 is the decode step (gemv products, split-K attention; captured into the graph). */
static cll_status run_pass(cll_driver_state *s, int64_t n, int64_t n_out, bool argmax) {
    const cll_driver_model *dm = s->dm;
    const cll_model *m = dm->m;
    const cll_hparams *hp = &m->hp;
    const int64_t d = hp->n_embd, V = hp->n_logits; /* a tensor-parallel rank's vocab slice */
    const int32_t *tok = s->io, *pos = s->io + n, *seq = s->io + 2 * n, *rows = s->io + 3 * n;
    const bool gelu = m->recipe.act == CLL_ACT_GELU_TANH;
    const bool tp = s->p.comm && cll_cu_comm_size(s->p.comm) > 1; /* a rank of a split model */
    PTRY(CLL_PK_EMBD, cll_cu_get_rows(&dm->tok_embd, tok, n, s->x, d, m->recipe.embd_scale ? sqrtf((float)d) : 1.0f, s->st));
    int xk_qkv; /* the X kind the q|k|v product's producer writes (this norm, then each layer's tail) */
    void *xh0 = fused_x(s, dm->layers[0].qkv, dm->layers[0].n_qkv, n, d, &xk_qkv);
    /* the f32 rows only where a product reads them (not when the q|k|v product reads xh alone) */
    PTRY(CLL_PK_NORM, cll_cu_rmsnorm_q8(s->x, dm->layers[0].attn_norm, n, d, hp->eps, xh0 ? NULL : s->xn,
                                        wants_q8(dm->layers[0].qkv, dm->layers[0].n_qkv, n) ? s->xq : NULL, s->st, xh0,
                                        xk_qkv == 1));
    /* attention split: decode grids cover n_ctx in fixed chunks; a batch takes as many chunks as
     * the partial buffer holds */
    const int32_t n_chunks = attn_chunks(s, n);
    const int32_t chunk = (int32_t)cll_cdiv(s->p.n_ctx, n_chunks);
    for (int32_t il = 0; il < hp->n_layer; il++) {
        const cll_layer *L = &m->layers[il];
        const cll_cu_layer *C = &dm->layers[il];
        const bool moe = hp->n_expert > 0;
        const cll_cu_part *after_ffn = il + 1 < hp->n_layer ? &dm->layers[il + 1].qkv[0] : &dm->output;
        /* its input's f16 rows came with the norm (the first layer's, or the previous layer's tail) */
        PTRY(CLL_PK_QKV, product(s, C->qkv, C->n_qkv, n, s->xn, d, s->xq, s->qkv, s->nqkv, &C->wo, NULL, SIZE_MAX,
                                 xk_qkv));
        cll_cu_rope_args ra;
        memset(&ra, 0, sizeof ra);
        ra.qkv = s->qkv;
        ra.ld = s->nqkv;
        ra.pos = pos;
        ra.seq = seq;
        ra.bq = C->bq;
        ra.bk = C->bk;
        ra.bv = C->bv;
        ra.q_norm = C->q_norm;
        ra.k_norm = C->k_norm;
        ra.rope_ff = dm->rope_ff;
        ra.kc = s->kc[il];
        ra.vc = s->vc[il];
        ra.kv_f16 = !s->p.kv_f32;
        ra.n_head = hp->n_head;
        ra.n_kv = hp->n_head_kv;
        ra.hd_k = hp->head_dim_k;
        ra.hd_v = hp->head_dim_v;
        ra.n_rot = hp->n_rot;
        ra.n_ctx = s->p.n_ctx;
        ra.map = s->kvmap;
        ra.neox = m->recipe.rope == CLL_ROPE_NEOX;
        ra.rp = L->rope;
        ra.q_scale = m->recipe.q_prescale ? hp->attn_scale : 1.0f;
        ra.eps = hp->eps;
        cll_cu_attn_args aa;
        memset(&aa, 0, sizeof aa);
        aa.q = s->qkv;
        aa.ld_q = s->nqkv;
        aa.kc = s->kc[il];
        aa.vc = s->vc[il];
        aa.kv_f16 = !s->p.kv_f32;
        aa.pos = pos;
        aa.seq = seq;
        aa.n_head = hp->n_head;
        aa.n_kv = hp->n_head_kv;
        aa.hd_k = hp->head_dim_k;
        aa.hd_v = hp->head_dim_v;
        aa.n_ctx = s->p.n_ctx;
        aa.map = s->kvmap;
        aa.n_swa = L->swa ? hp->n_swa : 0;
        aa.scale = m->recipe.q_prescale ? 1.0f : hp->attn_scale;
        aa.chunk = chunk;
        aa.n_chunks = n_chunks;
        aa.part = s->part;
        aa.part_cap = s->part_cap;
        aa.count = s->count;
        aa.out = s->ao;
        aa.outq = wants_q8(&C->wo, 1, n) ? s->aoq : NULL;
        aa.rope = ra;
        aa.prefill_contig = s->pf_contig;
        aa.prefill_p0 = s->pf_p0;
        aa.prefill_seq = s->pf_seq;
        aa.distinct_rows = s->rows_distinct;
        if (s->tmaps) {
            aa.tmk = (const uint8_t *)s->tmaps + (size_t)il * 2 * CLL_CU_TMAP_BYTES;
            aa.tmv = (const uint8_t *)aa.tmk + CLL_CU_TMAP_BYTES;
        }
        aa.fuse_rope = cll_cu_attention_fuses_rope(&aa, n); /* decode: the attention blocks rope and store k/v */
        if (n == 1 && attn_pf_bytes() && C->wo.w.n_mat == 1) {
            aa.pf = C->wo.w.d;
            aa.pf_bytes = pf_span(&C->wo, attn_pf_bytes());
            aa.pf_kv_max = attn_pf_kv_max();
        }
        if (!aa.fuse_rope) PTRY(CLL_PK_ROPE, cll_cu_qkv_rope_store(&ra, n, s->st));
        /* the o product's f16 rows from the attention kernel, where every launch below is the tensor-core
         * prefill kernel (the only one that writes them) */
        const int64_t orow = (int64_t)hp->n_head * hp->head_dim_v;
        int xko = -1;
        aa.outh = fused_x(s, &C->wo, 1, n, orow, &xko);
        aa.outh_plain = xko == 1;
        bool oh_ok = aa.outh != NULL && (s->n_seg || cll_cu_attention_prefill_ok(&aa, n));
        for (int32_t g = 0; oh_ok && g < s->n_seg; g++) {
            const cll_cu_attn_args sa = seg_args(s, &aa, g, pos, seq, orow);
            oh_ok = cll_cu_attention_prefill_ok(&sa, s->seg[g].n);
        }
        if (!oh_ok) aa.outh = NULL, xko = -1;
        if (!s->n_seg) {
            PTRY(CLL_PK_ATTN, cll_cu_attention(&aa, n, s->st));
        } else { /* per segment: the prompt runs on the prefill kernel, the rows between on decode's */
            for (int32_t g = 0; g < s->n_seg; g++) {
                const cll_cu_attn_args sa = seg_args(s, &aa, g, pos, seq, orow);
                PTRY(CLL_PK_ATTN, cll_cu_attention(&sa, s->seg[g].n, s->st));
            }
        }
        cll_cu_resid_epi ep;
        /* tensor parallel: the o product's rows are this rank's partial sums, added over the ranks before
         * the residual (no fused tail) */
        const cll_cu_resid_epi *e1 = tp ? NULL : resid_tail(s, &C->wo, n, C->post_attn_norm, C->ffn_norm,
                                                                   moe || wants_q8(C->gu, C->n_gu, n) ? s->xq : NULL, &ep);
        PTRY(CLL_PK_O, product(s, &C->wo, 1, n, s->ao, s->nao, s->aoq, s->t, d, moe ? &C->router : &C->gu[0], e1,
                               o_next_bytes(), xko));
        if (tp) PSTRY(CLL_PK_ALLREDUCE, cll_cu_comm_allreduce(s->p.comm, s->p.rank, s->t, n * d, s->st));
        cll_cu_resid_args rr;
        memset(&rr, 0, sizeof rr);
        rr.x = s->x;
        rr.t = s->t;
        rr.post = C->post_attn_norm;
        rr.next_norm = true;
        rr.next = C->ffn_norm;
        rr.xq = moe || wants_q8(C->gu, C->n_gu, n) ? s->xq : NULL;
        int xkg = -1, xkd = -1; /* the X kinds the gate|up and down products' producers write */
        rr.xh = moe || e1 ? NULL : fused_x(s, C->gu, C->n_gu, n, d, &xkg);
        rr.xh_plain = xkg == 1;
        rr.xn = rr.xh ? NULL : s->xn; /* the f32 rows only where the gate|up product reads them */
        if (!e1) PTRY(CLL_PK_NORM, cll_cu_resid_norm_q8(&rr, n, d, hp->eps, s->st));
        if (hp->n_expert > 0) {
            cll_status st = moe_ffn(s, C, n);
            if (st != CLL_OK) return st;
            if (tp) {
                /* expert parallel: each rank sums its own slots' rows, weighted (the others' are zero), and the
                 * ranks all-reduce those n x d rows, as the CPU's ranks do: K times fewer bytes than every
                 * slot's rows (qwen3moe: 8x; 32 MB a layer at pp512 on a 2048-wide model) */
                PTRY(CLL_PK_EXPERTS, cll_cu_moe_combine(s->moe, d, s->selw, n, hp->n_expert_used, d, s->t, s->st));
                PSTRY(CLL_PK_ALLREDUCE, cll_cu_comm_allreduce(s->p.comm, s->p.rank, s->t, n * d, s->st));
            } else { /* the weighted combine runs in the residual kernel */
                rr.moe = s->moe;
                rr.moe_w = s->selw;
                rr.n_used = hp->n_expert_used;
            }
        } else if (n == 1 && gu_acts_out(s, C)) {
            /* the gate|up pair's launch writes the activation itself (act_out), no act kernel: a float pair
             * with a down product that reads f32 rows, or a quantized pair (its q8_1 rows too) */
            cll_cu_gemv_args fz;
            memset(&fz, 0, sizeof fz);
            fz.act_out.y = s->act;
            fz.act_out.f = s->ff;
            fz.act_out.gelu = gelu;
            fz.act_out.yq = C->gu[0].gemv->needs_q8 && wants_q8(&C->down, 1, n) ? s->actq : NULL;
            fz.act_out.slot = s->actslot;
            PTRY(CLL_PK_GATE_UP, gemv(&C->gu[0], 1, NULL, s->xn, 0, C->gu[0].gemv->needs_q8 ? s->xq : NULL, 0, s->gu, 0,
                                      s->st, &C->down, NULL, NULL, NULL, &fz));
        } else {
            PTRY(CLL_PK_GATE_UP, product(s, C->gu, C->n_gu, n, s->xn, d, s->xq, s->gu, 2 * s->ff, &C->down, NULL, SIZE_MAX,
                                         xkg));
            const bool apf = n == 1 && act_pf_bytes();
            void *yh = fused_x(s, &C->down, 1, n, s->ff, &xkd);
            /* the f32 rows only where the down product reads them (not when it reads yh alone) */
            PTRY(CLL_PK_ACT, cll_cu_act_q8(s->gu, 2 * s->ff, n, s->ff, gelu, yh ? NULL : s->act,
                                           wants_q8(&C->down, 1, n) ? s->actq : NULL, s->st,
                                           apf ? C->down.w.d : NULL, apf ? pf_span(&C->down, act_pf_bytes()) : 0, yh,
                                           xkd == 1));
        }
        rr.post = C->post_ffn_norm;
        rr.next = il + 1 < hp->n_layer ? dm->layers[il + 1].attn_norm : dm->output_norm;
        /* the next layer's q|k|v product, or the output rows (gathered q8_1 rows for a gemv form) */
        rr.xq = (il + 1 < hp->n_layer ? wants_q8(dm->layers[il + 1].qkv, dm->layers[il + 1].n_qkv, n)
                                      : n_out == 1 ? !dm->output.gemv || dm->output.gemv->needs_q8
                                                   : few_form_row(&dm->output, n_out) != NULL)
                    ? s->xq
                    : NULL;
        const cll_cu_resid_epi *e2 = moe || tp ? NULL : resid_tail(s, &C->down, n, rr.post, rr.next, rr.xq, &ep);
        xk_qkv = -1;
        rr.xh = il + 1 < hp->n_layer && !e2 ? fused_x(s, dm->layers[il + 1].qkv, dm->layers[il + 1].n_qkv, n, d, &xk_qkv)
                                            : NULL;
        rr.xh_plain = xk_qkv == 1;
        rr.xn = rr.xh ? NULL : s->xn; /* the next q|k|v product reads xh alone; the output head reads xn */
        if (!moe) {
            PTRY(CLL_PK_DOWN, product(s, &C->down, 1, n, s->act, s->ff, s->actq, s->t, d, after_ffn, e2, down_next_bytes(),
                                      xkd));
            if (tp) PSTRY(CLL_PK_ALLREDUCE, cll_cu_comm_allreduce(s->p.comm, s->p.rank, s->t, n * d, s->st));
        }
        if (!e2) PTRY(CLL_PK_NORM, cll_cu_resid_norm_q8(&rr, n, d, hp->eps, s->st));
    }
    if (n_out == 0) return CLL_OK;
    /* xn now holds output_norm(x) for every row */
    if (n == 1) {
        PTRY(CLL_PK_OUTPUT, gemv(&dm->output, 1, NULL, s->xn, 0, s->xq, 0, s->logits, 0, s->st));
    } else {
        PTRY(CLL_PK_OUTPUT, cll_cu_gather_rows(s->xn, d, rows, n_out, d, s->xo, d, s->st));
        const cll_cu_gemv_impl *fo = n_out == 1 ? dm->output.gemv : few_form_row(&dm->output, n_out);
        if (fo) {
            /* their q8_1 rows too (copied as 4-byte words: 9 per 36-byte block) for the gemv forms */
            const int64_t qw = 9 * cll_cu_q8_blocks(d);
            PTRY(CLL_PK_OUTPUT, cll_cu_gather_rows((const float *)s->xq, qw, rows, n_out, qw, (float *)s->xoq, qw, s->st));
            PTRY(CLL_PK_OUTPUT, gemv(&dm->output, (int)n_out, NULL, s->xo, d, s->xoq, cll_cu_q8_blocks(d), s->logits, V, s->st,
                                     NULL, NULL, fo, &s->sk));
        } else {
            PTRY(CLL_PK_OUTPUT, gemm(s, &dm->output, s->xo, d, n_out, s->logits, V, s->p.n_out_max));
        }
    }
    if (hp->logit_softcap > 0.0f) PTRY(CLL_PK_SOFTCAP, cll_cu_softcap(s->logits, n_out * V, hp->logit_softcap, s->st));
    if (argmax) {
        PTRY(CLL_PK_ARGMAX, cll_cu_argmax(s->logits, n_out, V, s->keys, s->amax_part, s->amax_count, s->st));
    }
    return CLL_OK;
}

/* the capture itself (capture_pass counts it) */
static cll_status capture_pass_(cll_driver_state *s, int64_t n, int64_t n_want, cudaGraph_t *gout, cudaGraphExec_t *exec) {
    TRY(cudaStreamBeginCapture(s->st, cudaStreamCaptureModeThreadLocal));
    cll_status st = run_pass(s, n, n_want, true);
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamEndCapture(s->st, &g);
    if (st != CLL_OK) {
        if (g) cudaGraphDestroy(g);
        cudaGetLastError();
        return cll_err_prefix(st, "capturing the %s graph", n == 1 ? "decode" : "batched decode");
    }
    if (e != cudaSuccess) {
        cudaGetLastError();
        return cll_err(CLL_ERR_DEVICE, "%s:%d: capturing the %s graph: %s", __FILE__, __LINE__,
                       n == 1 ? "decode" : "batched decode", cudaGetErrorString(e));
    }
    e = cudaGraphInstantiate(exec, g, 0);
    if (e != cudaSuccess) {
        cudaGraphDestroy(g);
        cudaGetLastError();
        return cll_err(CLL_ERR_DEVICE, "%s:%d: instantiating the graph of %lld tokens: %s", __FILE__, __LINE__,
                       (long long)n, cudaGetErrorString(e));
    }
    *gout = g;
    return CLL_OK;
}

/* capture a pass of n tokens (n_want output rows, argmax always) into *g / *exec (counted, with its host
 * time, in the state's counters) */
static cll_status capture_pass(cll_driver_state *s, int64_t n, int64_t n_want, cudaGraph_t *gout, cudaGraphExec_t *exec) {
    const double t0 = cll_now();
    const cll_status st = capture_pass_(s, n, n_want, gout, exec);
    s->c.graph_captures++;
    s->c.capture_seconds += cll_now() - t0;
    return st;
}

/* cuda.batch_graph 0 (CLLAMA_CUDA_BATCH_GRAPH=0): batched decode steps run eagerly (A/B) */
static bool batch_graph_off(void) { return !cll_cuda_knobs_now()->batch_graph; }

/* the graph of batched steps of n tokens captured for key (batch_graph_run's) in place of what the slot
 * held; a capture that fails marks the count as running eagerly from then on */
static cll_status batch_graph_capture(cll_driver_state *s, int64_t n, int64_t n_want, int32_t key) {
    auto *fg = &s->batch_graph[n];
    if (fg->exec) cudaGraphExecDestroy(fg->exec);
    fg->exec = NULL;
    fg->pending_key = 0;
    cudaGraph_t g = NULL;
    const cll_status cs = capture_pass(s, n, n_want, &g, &fg->exec);
    if (cs != CLL_OK) {
        fg->failed = true;
        fg->exec = NULL;
        return cs;
    }
    cudaGraphDestroy(g);
    fg->key = key;
    return CLL_OK;
}

/* a batched decode step of n (2..CLL_CU_GRAPH_MAX_TOKENS) tokens through its graph: captured on the
 * second consecutive step of that count and n_want (a server's steps change shape while prompts are
 * chunked in: a one-off shape runs eagerly rather than pay a capture), replayed while they repeat.
 * false: run eagerly (first sight of the shape, or a capture that failed once, e.g. a library call
 * that cannot be captured; said once on stderr). */
static bool batch_graph_run(cll_driver_state *s, int64_t n, int64_t n_want, cll_status *st) {
    *st = CLL_OK;
    if (n < 2 || n > CLL_CU_GRAPH_MAX_TOKENS || batch_graph_off()) return false;
    auto *fg = &s->batch_graph[n];
    if (fg->failed) return false;
    /* the shape: output rows, and whether the attention ropes the rows itself */
    const int32_t key = (int32_t)(2 * n_want + (s->rows_distinct ? 1 : 0));
    if (!(fg->exec && fg->key == key)) {
        if (fg->pending_key != key) { /* first sight of this shape */
            fg->pending_key = key;
            return false;
        }
        if (batch_graph_capture(s, n, n_want, key) != CLL_OK) {
            fprintf(stderr, "cllama: cuda: batched steps of %lld tokens run without a graph (%s)\n", (long long)n,
                    cll_last_error());
            return false;
        }
    }
    const cudaError_t e = cudaGraphLaunch(fg->exec, s->st);
    if (e != cudaSuccess) {
        *st = cll_err(CLL_ERR_DEVICE, "%s:%d: batched decode graph of %lld tokens: %s", __FILE__, __LINE__, (long long)n,
                      cudaGetErrorString(e));
        return true;
    }
    s->c.graph_replays++;
    return true;
}

/* the batched step graphs of 2..n_max rows, each row its own sequence and asking for output (a
 * server's decode steps: the key batch_graph_run looks them up by), captured now. A server whose
 * load starts, ends or changes size steps through many batch sizes once each; captured on their
 * second consecutive sight, those steps ran eagerly (~25-40% slower) or paid a capture (~15-20 ms,
 * H200, l2-7b) inside a step. Graphs already held for their key are kept. */
static cll_status cu_prepare_batches(cll_driver_state *s, int32_t n_max) {
    if (batch_graph_off() || s->prof.mode == 1 || !cll_cu_comm_capturable(s->p.comm)) return CLL_OK;
    if (n_max > CLL_CU_GRAPH_MAX_TOKENS) n_max = CLL_CU_GRAPH_MAX_TOKENS;
    if (n_max > s->p.n_seq) n_max = s->p.n_seq;
    if (n_max > s->p.n_out_max) n_max = s->p.n_out_max;
    if (n_max > s->p.n_batch) n_max = s->p.n_batch;
    TRY(cudaSetDevice(s->dm->device));
    if (!cll_cu_comm_enter(s->p.comm)) return CLL_ERR_DEVICE; /* its captures enqueue the all-reduces */
    cll_status st = CLL_OK;
    for (int32_t n = 2; n <= n_max && st == CLL_OK; n++) {
        auto *fg = &s->batch_graph[n];
        const int32_t key = 2 * n + 1; /* n output rows, rows in distinct sequences */
        if (fg->failed || (fg->exec && fg->key == key)) continue;
        s->pf_contig = false;
        s->n_seg = 0;
        s->rows_distinct = true;
        st = batch_graph_capture(s, n, n, key);
    }
    cll_cu_comm_leave(s->p.comm);
    return st;
}

/* capture the decode step (n = 1, one output row) into s->exec */
static cll_status capture(cll_driver_state *s) {
    cudaGraph_t g = NULL;
    cll_status cst = capture_pass(s, 1, 1, &g, &s->exec);
    if (cst != CLL_OK) return cst;
    s->graph = g;
    size_t nodes = 0;
    TRY(cudaGraphGetNodes(g, NULL, &nodes));
    s->c.launches = nodes;
    if (s->prof.mode == 2) { /* what the graph holds: kernel nodes, edges, programmatic edges */
        cll_cu_prof *P = &s->prof;
        P->g_nodes = nodes;
        cudaGraphNode_t *nv = (cudaGraphNode_t *)calloc(nodes ? nodes : 1, sizeof *nv);
        if (nv && cudaGraphGetNodes(g, nv, &nodes) == cudaSuccess)
            for (size_t i = 0; i < nodes; i++) {
                cudaGraphNodeType t;
                if (cudaGraphNodeGetType(nv[i], &t) == cudaSuccess && t == cudaGraphNodeTypeKernel) P->g_kernels++;
            }
        free(nv);
        size_t ne = 0;
        if (cudaGraphGetEdges(g, NULL, NULL, NULL, &ne) == cudaSuccess && ne) {
            cudaGraphNode_t *from = (cudaGraphNode_t *)calloc(ne, sizeof *from), *to = (cudaGraphNode_t *)calloc(ne, sizeof *to);
            cudaGraphEdgeData *ed = (cudaGraphEdgeData *)calloc(ne, sizeof *ed);
            if (from && to && ed && cudaGraphGetEdges(g, from, to, ed, &ne) == cudaSuccess) {
                P->g_edges = ne;
                for (size_t i = 0; i < ne; i++) P->g_prog += ed[i].type == cudaGraphDependencyTypeProgrammatic;
            }
            free(from);
            free(to);
            free(ed);
        }
        cudaGetLastError();
    }
    return CLL_OK;
}

/* the step's launches: its graph, or its kernels one by one (cu_forward; the inputs are on the stream) */
static cll_status launch_step(cll_driver_state *s, int64_t n, int64_t n_want, bool argmax) {
    /* a rank of the one-GPU simulated split meets the others at a host barrier inside each all-reduce: its
     * steps run eagerly (cuda/comm.cu) */
    const bool eager = !cll_cu_comm_capturable(s->p.comm);
    if (eager && s->prof.mode != 1) {
        cll_status st = run_pass(s, n, n_want, argmax);
        if (st != CLL_OK) return st;
    } else if (s->prof.mode == 1) { /* profiled: eager launches, timed per kind */
        s->prof.on = true;
        s->prof.which = n > 1;
        s->prof.steps[n > 1]++;
        s->prof.tokens[n > 1] += (uint64_t)n;
        s->prof.last_n = (uint64_t)n;
        cll_status st = run_pass(s, n, n_want, argmax);
        s->prof.on = false;
        if (st != CLL_OK) return st;
    } else if (n == 1) {
        if (!s->exec) {
            cll_status st = capture(s);
            if (st != CLL_OK) return st;
        }
        TRY(cudaGraphLaunch(s->exec, s->st));
        s->c.graph_replays++;
    } else {
        cll_status st = CLL_OK;
        /* a few sequences' decode step (not one contiguous prompt: its attention reads host-side
         * positions): the graph of its token count, which runs the argmax too */
        /* (a step with prompt runs, whose attention launches depend on where they lie, runs eagerly) */
        if (!(!s->pf_contig && !s->n_seg && n_want > 0 && batch_graph_run(s, n, n_want, &st)))
            st = run_pass(s, n, n_want, argmax);
        if (st != CLL_OK) return st;
    }
    return CLL_OK;
}

static cll_status cu_forward(cll_driver_state *s, const cll_driver_batch *b, cll_driver_out kind, void *out) {
    const cll_hparams *hp = &s->dm->m->hp;
    const int64_t n = b->n, V = hp->n_logits;
    if (n <= 0 || n > s->p.n_batch)
        return cll_err(CLL_ERR_RANGE, "cuda forward: batch of %lld tokens (n_batch %d)", (long long)n, s->p.n_batch);
    int64_t n_want = 0;
    int32_t *h = s->hio;
    for (int64_t i = 0; i < n; i++) {
        if (b->tokens[i] < 0 || b->tokens[i] >= hp->n_vocab)
            return cll_err(CLL_ERR_ARG, "cuda forward: token %d at batch index %lld is outside the vocab (%d)",
                           b->tokens[i], (long long)i, hp->n_vocab);
        if (b->seq[i] < 0 || b->seq[i] >= s->p.n_seq || b->pos[i] < 0 || b->pos[i] >= s->p.n_ctx)
            return cll_err(CLL_ERR_RANGE, "cuda forward: batch index %lld has seq %d pos %d outside (%d seqs, n_ctx %d)",
                           (long long)i, b->seq[i], b->pos[i], s->p.n_seq, s->p.n_ctx);
        const bool want = b->want ? b->want[i] != 0 : i == n - 1;
        if (want && n_want < s->p.n_out_max) h[3 * n + n_want] = (int32_t)i;
        n_want += want;
        h[i] = b->tokens[i];
        h[n + i] = b->pos[i];
        h[2 * n + i] = b->seq[i];
    }
    s->pf_contig = true; /* one sequence, consecutive positions: the tensor-core prefill attention */
    s->pf_p0 = b->pos[0];
    s->pf_seq = b->seq[0];
    for (int64_t i = 1; i < n && s->pf_contig; i++) s->pf_contig = b->seq[i] == b->seq[0] && b->pos[i] == b->pos[0] + i;
    /* a mixed batch (decode tokens beside prompt chunks): its runs of consecutive positions of one
     * sequence take the prefill attention, the rows between them the decode kernel */
    s->n_seg = 0;
    bool has_run = false;
    for (int64_t i = 0; !s->pf_contig && n > 1 && i < n;) {
        int64_t j = i + 1;
        while (j < n && b->seq[j] == b->seq[i] && b->pos[j] == b->pos[j - 1] + 1) j++;
        const bool run = j - i >= CLL_CU_RUN_MIN;
        if (!run && s->n_seg > 0 && !s->seg[s->n_seg - 1].run) {
            s->seg[s->n_seg - 1].n += (int32_t)(j - i); /* rows between runs: one decode launch */
        } else if (s->n_seg == CLL_CU_MAX_SEGS) {
            s->n_seg = 0; /* too fragmented: one decode launch over the batch */
            has_run = false;
            break;
        } else {
            s->seg[s->n_seg].start = (int32_t)i;
            s->seg[s->n_seg].n = (int32_t)(j - i);
            s->seg[s->n_seg].p0 = b->pos[i];
            s->seg[s->n_seg].seq = b->seq[i];
            s->seg[s->n_seg].run = run;
            s->n_seg++;
            has_run |= run;
        }
        i = j;
    }
    if (!has_run) s->n_seg = 0;
    /* a batched decode step (one token per sequence): each row's attention blocks may rope and store its
     * cell themselves, since no row reads a cell another row of the step writes */
    s->rows_distinct = n > 1 && n <= CLL_CU_GRAPH_MAX_TOKENS && !s->pf_contig && !s->n_seg;
    for (int64_t i = 1; i < n && s->rows_distinct; i++)
        for (int64_t j = 0; j < i && s->rows_distinct; j++) s->rows_distinct = b->seq[i] != b->seq[j];
    if (n_want > s->p.n_out_max)
        return cll_err(CLL_ERR_RANGE, "cuda forward: %lld tokens want output, the state holds %d rows", (long long)n_want,
                       s->p.n_out_max);
    if (s->kvmap.blk && (!b->blocks || b->blocks_stride != s->kvmap.stride))
        return cll_err(CLL_ERR_ARG, "cuda forward: the state's KV is paged (%d blocks per sequence) but the batch carries %s",
                       s->kvmap.stride, b->blocks ? "tables of another stride" : "no block tables");
    TRY(cudaSetDevice(s->dm->device));
    if (!s->fwd_ev[0]) {
        TRY(cudaEventCreate(&s->fwd_ev[0]));
        TRY(cudaEventCreate(&s->fwd_ev[1]));
    }
    TRY(cudaEventRecord(s->fwd_ev[0], s->st));
    if (s->kvmap.blk && b->blocks_dirty) /* the tables the kernels read (stream order: before them) */
        TRY(cudaMemcpyAsync(s->kvblk, b->blocks, sizeof(int32_t) * (size_t)s->p.n_seq * (size_t)s->kvmap.stride,
                            cudaMemcpyHostToDevice, s->st));
    TRY(cudaMemcpyAsync(s->io, h, sizeof(int32_t) * (size_t)(3 * n + n_want), cudaMemcpyHostToDevice, s->st));
    const bool argmax = kind == CLL_OUT_ARGMAX;
    if (kind == CLL_OUT_TOPK && (b->top_k < 1 || b->top_k > CLL_CU_TOPK_MAX || b->top_k > V))
        return cll_err(CLL_ERR_ARG, "cuda forward: top_k %d outside [1, %d]", b->top_k,
                       (int)(V < CLL_CU_TOPK_MAX ? V : CLL_CU_TOPK_MAX));
    /* a rank of a split enqueues its all-reduces (or the graph holding them) while its communicator is
     * whole: an abort by a failed rank waits for it (cuda/comm.cu) */
    if (!cll_cu_comm_enter(s->p.comm)) return CLL_ERR_DEVICE;
    const cll_status lst = launch_step(s, n, n_want, argmax);
    cll_cu_comm_leave(s->p.comm);
    if (lst != CLL_OK) return lst;
    if (n_want > 0) {
        if (kind == CLL_OUT_TOPK) { /* the candidates of each row, not its n_vocab logits */
            const int k = b->top_k;
            TRY(cll_cu_topk(s->logits, n_want, V, k, s->tk_ids, s->tk_vals, s->st));
            TRY(cudaMemcpyAsync(out, s->tk_ids, sizeof(int32_t) * (size_t)(n_want * k), cudaMemcpyDeviceToHost, s->st));
            TRY(cudaMemcpyAsync((int32_t *)out + n_want * k, s->tk_vals, sizeof(float) * (size_t)(n_want * k),
                                cudaMemcpyDeviceToHost, s->st));
        } else if (argmax)
            TRY(cudaMemcpyAsync(s->hkeys, s->keys, sizeof(unsigned long long) * (size_t)n_want, cudaMemcpyDeviceToHost,
                                s->st));
        else
            TRY(cudaMemcpyAsync(out, s->logits, sizeof(float) * (size_t)(n_want * V), cudaMemcpyDeviceToHost, s->st));
    }
    TRY(cudaEventRecord(s->fwd_ev[1], s->st));
    TRY(cudaStreamSynchronize(s->st));
    float dev_ms = 0.0f;
    if (cudaEventElapsedTime(&dev_ms, s->fwd_ev[0], s->fwd_ev[1]) == cudaSuccess) s->c.device_seconds += dev_ms * 1e-3;
    if (s->prof.n) prof_collect(s);
    if (n_want > 0 && argmax)
        for (int64_t r = 0; r < n_want; r++) ((int32_t *)out)[r] = cll_cu_argmax_id(s->hkeys[r]);
    s->c.forwards++;
    s->c.tokens += (uint64_t)n;
    s->c.device_steps++;
    /* a rank's pass (eager or replayed) sums twice a layer: after o, after the FFN */
    if (s->p.comm && cll_cu_comm_size(s->p.comm) > 1) s->c.allreduces += 2 * (uint64_t)hp->n_layer;
    return CLL_OK;
}

/* ---- state ------------------------------------------------------------------------------------ */

typedef struct {
    void **p;
    size_t bytes;
} sbuf;

static cll_status cu_state_create(cll_driver_model *dm, const cll_driver_state_params *p, cll_driver_state **out) {
    *out = NULL;
    const cll_hparams *hp = &dm->m->hp;
    if (p->n_ctx <= 0 || p->n_seq <= 0 || p->n_batch <= 0 || p->n_out_max <= 0)
        return cll_err(CLL_ERR_ARG, "cuda state: n_ctx %d, n_seq %d, n_batch %d, n_out_max %d must be positive", p->n_ctx,
                       p->n_seq, p->n_batch, p->n_out_max);
    /* the KV cells: a paged pool (blocks of block_cells, a power of two) or n_ctx per sequence */
    int32_t blk_shift = 0, blk_stride = 0;
    if (p->n_cells > 0) {
        while ((1 << blk_shift) < p->block_cells && blk_shift < 30) blk_shift++;
        if (p->block_cells <= 0 || (1 << blk_shift) != p->block_cells || p->n_cells % p->block_cells)
            return cll_err(CLL_ERR_ARG, "cuda state: a paged KV needs whole blocks of a power-of-two size (%d cells, blocks of %d)",
                           p->n_cells, p->block_cells);
        blk_stride = (int32_t)cll_cdiv(p->n_ctx, p->block_cells);
    }
    TRY(cudaSetDevice(dm->device));
    cll_driver_state *s = (cll_driver_state *)calloc(1, sizeof *s);
    if (!s) return cll_err(CLL_ERR_NOMEM, "cuda state: out of memory");
    s->dm = dm;
    s->p = *p;
    const char *fx = getenv("CLLAMA_CUDA_FUSED_XH"); /* read at each state creation (tests compare both) */
    s->fused_xh = !(fx && fx[0] == '0');
    const char *gp = getenv("CLLAMA_CUDA_GEMM_PAD"); /* the same (the padded products' test compares both) */
    s->gemm_pad = gp && atoi(gp) >= 1 ? atoi(gp) : CLL_CU_GEMM_PAD;
    const int32_t L = hp->n_layer, H = hp->n_head, KV = hp->n_head_kv;
    const size_t nb = (size_t)p->n_batch, d = (size_t)hp->n_embd, no = (size_t)p->n_out_max, F = sizeof(float);
    const size_t K = (size_t)(hp->n_expert > 0 ? hp->n_expert_used : 0);
    s->kv_k = (int64_t)KV * hp->head_dim_k;
    s->kv_v = (int64_t)KV * hp->head_dim_v;
    s->nq = (int64_t)H * hp->head_dim_k;
    s->nqkv = s->nq + s->kv_k + s->kv_v;
    s->nao = (int64_t)H * hp->head_dim_v;
    s->ff = hp->n_ff;
    s->ffe = hp->n_ff_exp;
    const size_t ffm = (size_t)(s->ff > s->ffe ? s->ff : s->ffe);
    const size_t rows_ff = nb > K ? nb : K;
    /* gate|up, act and its q8_1 rows: per token (dense, decode experts) or per slot (grouped
     * MoE prefill: n_batch * n_used rows of the expert width) */
    const size_t mxh_bytes = K ? nb * K * (d > (size_t)s->ffe ? d : (size_t)s->ffe) * 2 : 0;
    size_t gu_f = rows_ff * 2 * ffm, act_f = rows_ff * ffm, actq_b = rows_ff * (size_t)cll_cu_q8_blocks((int64_t)ffm);
    if (K && nb * K * 2 * (size_t)s->ffe > gu_f) gu_f = nb * K * 2 * (size_t)s->ffe;
    if (K && nb * K * (size_t)s->ffe > act_f) act_f = nb * K * (size_t)s->ffe;
    if (K && nb * K * (size_t)cll_cu_q8_blocks(s->ffe) > actq_b) actq_b = nb * K * (size_t)cll_cu_q8_blocks(s->ffe);
    const int64_t dec_part = (int64_t)H * cll_cdiv(p->n_ctx, attn_grid_chunk());
    s->part_cap = dec_part > (int64_t)nb * H ? dec_part : (int64_t)nb * H;
    const size_t esz = p->kv_f32 ? sizeof(float) : sizeof(uint16_t);
    const size_t cells = p->n_cells > 0 ? (size_t)p->n_cells : (size_t)p->n_seq * (size_t)p->n_ctx;
    const size_t Q8 = sizeof(cll_block_q8_1);
    s->kc = (void **)calloc((size_t)L, sizeof(void *));
    s->vc = (void **)calloc((size_t)L, sizeof(void *));
    void *kv = NULL;
    /* the gemm scratch: an f16 weight panel (at least one 128-row slab of the widest weight,
     * at most 64 MiB) and the f16 activations */
    size_t panel = (size_t)dm->max_mat_elems * 2;
    if (panel > ((size_t)64 << 20)) panel = (size_t)64 << 20;
    if (panel < 128 * (size_t)dm->max_cols * 2) panel = 128 * (size_t)dm->max_cols * 2;
    const size_t xh = (nb > no ? nb : no) * (size_t)dm->max_cols * 2;
    sbuf bufs[] = {
        {&kv, (size_t)L * cells * (size_t)(s->kv_k + s->kv_v) * esz},
        {(void **)&s->x, nb * d * F},
        {(void **)&s->xn, nb * d * F},
        {&s->xq, nb * (size_t)cll_cu_q8_blocks((int64_t)d) * Q8},
        {(void **)&s->qkv, nb * (size_t)s->nqkv * F},
        {(void **)&s->ao, nb * (size_t)s->nao * F},
        {&s->aoq, nb * (size_t)cll_cu_q8_blocks(s->nao) * Q8},
        {(void **)&s->part, (size_t)s->part_cap * (size_t)(hp->head_dim_v + 2) * F},
        {(void **)&s->count, nb * (size_t)H * sizeof(int)},
        {(void **)&s->t, nb * d * F},
        {(void **)&s->rpart, CLL_CU_EPI_MAX_BLOCKS * sizeof(double)},
        {(void **)&s->rticket, sizeof(int)},
        {(void **)&s->rslot, d * F},
        {(void **)&s->sk.ws, (size_t)CLL_CU_SPLITK_FLOATS(cll_cu_sm_count()) * F},
        {(void **)&s->kvblk, (size_t)p->n_seq * (size_t)blk_stride * sizeof(int32_t)},
        {(void **)&s->sk.tickets, CLL_CU_SPLITK_TICKETS * sizeof(int)},
        {(void **)&s->gu, gu_f * F},
        {(void **)&s->act, act_f * F},
        {&s->actslot, ffm * F},
        {&s->actq, actq_b * Q8},
        {(void **)&s->router, K ? nb * (size_t)hp->n_expert * F : 0},
        {(void **)&s->sel, nb * K * sizeof(int32_t)},
        {(void **)&s->lsel, hp->n_expert_here < hp->n_expert ? nb * K * sizeof(int32_t) : 0},
        {(void **)&s->selw, nb * K * F},
        {(void **)&s->moe, nb * K * d * F},
        {(void **)&s->mids, nb * K * sizeof(int32_t)},
        {(void **)&s->moff, K ? ((size_t)hp->n_expert_here + 1) * sizeof(int32_t) : 0},
        {(void **)&s->mtoff, K ? ((size_t)hp->n_expert_here + 1) * sizeof(int32_t) : 0},
        {&s->mxh, mxh_bytes},
        {(void **)&s->xo, no * d * F},
        {&s->xoq, no * (size_t)cll_cu_q8_blocks((int64_t)d) * Q8},
        {(void **)&s->logits, no * (size_t)hp->n_logits * F},
        {(void **)&s->keys, no * sizeof(unsigned long long)},
        {(void **)&s->amax_part, no * (size_t)cll_cu_argmax_blocks(hp->n_logits) * sizeof(unsigned long long)},
        {(void **)&s->amax_count, no * sizeof(int)},
        {(void **)&s->tk_ids, no * CLL_CU_TOPK_MAX * sizeof(int32_t)},
        {(void **)&s->tk_vals, no * CLL_CU_TOPK_MAX * sizeof(float)},
        {(void **)&s->io, (3 * nb + no) * sizeof(int32_t)},
        {&s->gemm.panel, panel},
        {&s->gemm.xh, xh},
        /* the streaming decode attention's TMA pipeline reads the unpaged F16 caches through these */
        {&s->tmaps, cll_cu_attn_tma_wanted(CLL_CU_ATTN_AUTO, KV > 0 ? H / KV : 0) && !p->kv_f32 && p->n_cells <= 0 && hp->head_dim_k == hp->head_dim_v &&
                            (hp->head_dim_k == 64 || hp->head_dim_k == 128)
                        ? (size_t)L * 2 * CLL_CU_TMAP_BYTES
                        : 0},
    };
    const size_t nbufs = sizeof bufs / sizeof bufs[0];
    size_t total = 0;
    for (size_t i = 0; i < nbufs; i++) total += (bufs[i].bytes + 255) & ~(size_t)255;
    cll_status st = CLL_OK;
    size_t fr = 0, tot = 0;
    if (!s->kc || !s->vc) {
        st = cll_err(CLL_ERR_NOMEM, "cuda state: out of memory");
        goto fail;
    }
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
        st = cll_err(CLL_ERR_DEVICE, "%s:%d: cudaMemGetInfo failed", __FILE__, __LINE__);
        goto fail;
    }
    if (dm->mem_limit) { /* --gpu-mem-limit: what the model left of it */
        const size_t used = dm->arena_bytes + dm->panel_bytes;
        const size_t room = dm->mem_limit > used ? (size_t)(dm->mem_limit - used) : 0;
        if (fr > room) fr = room;
    }
    if (total > fr) {
        st = cll_err(CLL_ERR_NOMEM,
                     "cuda state: KV cache (%lld cells: %s) and activations need %.1f MiB of device memory, %.1f MiB free%s%s",
                     (long long)cells, p->n_cells > 0 ? "a paged pool" : "n_ctx per sequence", total / 1048576.0,
                     fr / 1048576.0, dm->mem_limit ? " within the GPU memory limit" : "",
                     dm->panel_bytes ? " (the model's resident prefill panels hold some: CLLAMA_CUDA_PANELS=off frees "
                                       "them, at the cost of prefill speed)" : "");
        goto fail;
    }
    {
        cudaError_t e = cudaMalloc(&s->arena, total);
        if (e != cudaSuccess) {
            s->arena = NULL;
            st = cll_err(CLL_ERR_NOMEM, "%s:%d: cudaMalloc of %.1f MiB of state: %s", __FILE__, __LINE__,
                         total / 1048576.0, cudaGetErrorString(e));
            goto fail;
        }
    }
    s->bytes = total;
    {
        uint8_t *a = (uint8_t *)s->arena;
        for (size_t i = 0; i < nbufs; i++) {
            *bufs[i].p = bufs[i].bytes ? a : NULL;
            a += (bufs[i].bytes + 255) & ~(size_t)255;
        }
    }
    s->gemm.panel_bytes = panel;
    if (p->n_cells > 0) {
        s->kvmap.blk = s->kvblk;
        s->kvmap.stride = blk_stride;
        s->kvmap.shift = blk_shift;
    }
    s->mxh_bytes = mxh_bytes;
    s->gemm.xh_bytes = xh;
    for (int32_t il = 0; il < L; il++) {
        s->kc[il] = (uint8_t *)kv + (size_t)il * cells * (size_t)(s->kv_k + s->kv_v) * esz;
        s->vc[il] = (uint8_t *)s->kc[il] + cells * (size_t)s->kv_k * esz;
    }
#define STRY(call)                                                                                                \
    do {                                                                                                          \
        cudaError_t e_ = (call);                                                                                  \
        if (e_ != cudaSuccess) {                                                                                  \
            st = cll_err(CLL_ERR_DEVICE, "%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_));     \
            goto fail;                                                                                            \
        }                                                                                                         \
    } while (0)
    STRY(cudaMemset(kv, 0, (size_t)L * cells * (size_t)(s->kv_k + s->kv_v) * esz));
    for (int32_t il = 0; s->tmaps && il < L; il++) {
        const cudaError_t e = cll_cu_attn_tmaps((uint8_t *)s->tmaps + (size_t)il * 2 * CLL_CU_TMAP_BYTES, s->kc[il],
                                                s->vc[il], KV, hp->head_dim_k, (int64_t)cells);
        if (e == cudaErrorNotSupported) { /* no maps (an older driver or device): STREAM_TMA runs STREAM_TC */
            cudaGetLastError();
            s->tmaps = NULL;
        } else STRY(e);
    }
    STRY(cudaMemset(s->count, 0, nb * (size_t)H * sizeof(int)));
    STRY(cudaMemset(s->rticket, 0, sizeof(int)));
    STRY(cudaMemset(s->sk.tickets, 0, CLL_CU_SPLITK_TICKETS * sizeof(int)));
    STRY(cudaMemset(s->actslot, 0xFF, ffm * F)); /* every slot empty */
    STRY(cudaMemset(s->rslot, 0xFF, d * F));
    if (s->kvblk) STRY(cudaMemset(s->kvblk, 0, (size_t)p->n_seq * (size_t)blk_stride * sizeof(int32_t)));
    s->sk.ws_floats = CLL_CU_SPLITK_FLOATS(cll_cu_sm_count());
    s->sk.n_tickets = CLL_CU_SPLITK_TICKETS;
    STRY(cudaMemset(s->amax_count, 0, no * sizeof(int)));
    STRY(cudaStreamCreateWithFlags(&s->st, cudaStreamNonBlocking));
    {
        const char *pe = getenv("CLLAMA_CUDA_PROFILE");
        s->prof.mode = pe && !strcmp(pe, "graph") ? 2 : pe && *pe && strcmp(pe, "0") ? 1 : 0;
        if (s->prof.mode == 1) {
            s->prof.ev = (cudaEvent_t *)calloc(CLL_PROF_EVENTS, sizeof(cudaEvent_t));
            s->prof.kind = (uint8_t *)calloc(CLL_PROF_EVENTS / 2, 1);
            if (!s->prof.ev || !s->prof.kind) {
                st = cll_err(CLL_ERR_NOMEM, "cuda state: out of memory (profile events)");
                goto fail;
            }
            for (int i = 0; i < CLL_PROF_EVENTS; i++) STRY(cudaEventCreate(&s->prof.ev[i]));
        }
    }
    STRY(cudaMallocHost((void **)&s->hio, (3 * nb + no) * sizeof(int32_t)));
    STRY(cudaMallocHost((void **)&s->hkeys, no * sizeof(unsigned long long)));
    {
        cublasStatus_t bs = cublasCreate(&s->blas);
        if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetStream(s->blas, s->st);
        if (bs != CUBLAS_STATUS_SUCCESS) {
            st = cll_err(CLL_ERR_DEVICE, "%s:%d: cuBLAS setup: %s", __FILE__, __LINE__, cublasGetStatusString(bs));
            goto fail;
        }
        s->gemm.blas = s->blas;
    }
#undef STRY
    /* the decode graph now, not in the first step: capturing it loads every kernel of the step
     * (CUDA loads a kernel on its first launch, CUDA_MODULE_LOADING=LAZY by default), which cost the
     * first decode step of a context ~50 ms (H200, l2-7b: a 128-step batched-bench run at one
     * sequence 495 -> 566 tok/s). A profiled state (CLLAMA_CUDA_PROFILE=1) runs eagerly. The graph
     * reads token, position and sequence from s->io at replay; a one-token batch is contiguous,
     * as cu_forward sets it. A rank of the one-GPU simulated split captures nothing: its all-reduce
     * meets the other ranks at a host barrier and waits on their streams' events, which a capture
     * cannot hold (launch_step runs its steps eagerly) */
    if (s->prof.mode != 1 && cll_cu_comm_capturable(s->p.comm)) {
        s->pf_contig = true;
        s->pf_p0 = 0;
        s->pf_seq = 0;
        s->n_seg = 0;
        s->rows_distinct = false;
        if (!cll_cu_comm_enter(s->p.comm)) {
            st = CLL_ERR_DEVICE;
            goto fail;
        }
        st = capture(s);
        cll_cu_comm_leave(s->p.comm);
        if (st != CLL_OK) goto fail;
    }
    *out = s;
    return CLL_OK;
fail:
    if (s->prof.ev)
        for (int i = 0; i < CLL_PROF_EVENTS; i++)
            if (s->prof.ev[i]) cudaEventDestroy(s->prof.ev[i]);
    free(s->prof.ev);
    free(s->prof.kind);
    free(s->kc);
    free(s->vc);
    s->kc = s->vc = NULL;
    if (s->exec) cudaGraphExecDestroy(s->exec);
    if (s->graph) cudaGraphDestroy(s->graph);
    if (s->arena) cudaFree(s->arena);
    if (s->hio) cudaFreeHost(s->hio);
    if (s->hkeys) cudaFreeHost(s->hkeys);
    if (s->st) cudaStreamDestroy(s->st);
    if (s->blas) cublasDestroy(s->blas);
    free(s);
    return st;
}

static void cu_state_free(cll_driver_state *s) {
    if (!s) return;
    cudaSetDevice(s->dm->device);
    if (s->st) cudaStreamSynchronize(s->st);
    prof_report(s);
    if (s->prof.ev)
        for (int i = 0; i < CLL_PROF_EVENTS; i++)
            if (s->prof.ev[i]) cudaEventDestroy(s->prof.ev[i]);
    free(s->prof.ev);
    free(s->prof.kind);
    for (int i = 0; i < 2; i++)
        if (s->fwd_ev[i]) cudaEventDestroy(s->fwd_ev[i]);
    /* a split whose communicators were aborted leaks its graphs: destroying one that captured a collective
     * runs NCCL's clean-up against the freed communicator (cuda/comm.cuh) */
    if (!cll_cu_comm_failed(s->p.comm)) {
        if (s->exec) cudaGraphExecDestroy(s->exec);
        for (int i = 0; i <= CLL_CU_GRAPH_MAX_TOKENS; i++)
            if (s->batch_graph[i].exec) cudaGraphExecDestroy(s->batch_graph[i].exec);
        if (s->graph) cudaGraphDestroy(s->graph);
    }
    if (s->blas) cublasDestroy(s->blas);
    if (s->st) cudaStreamDestroy(s->st);
    if (s->arena) cudaFree(s->arena);
    if (s->hio) cudaFreeHost(s->hio);
    if (s->hkeys) cudaFreeHost(s->hkeys);
    free(s->kc);
    free(s->vc);
    free(s);
}

static size_t cu_state_bytes(const cll_driver_state *s) { return s->bytes; }

static void cu_counters(const cll_driver_state *s, cll_driver_counters *out) {
    *out = s->c;
    out->tp = 1;
}

static const char *cu_model_desc(const cll_driver_model *dm) { return dm->desc; }

/* the logits rows a decode hands back, page-locked: a 32-sequence step's 4 MB copy is one DMA
 * instead of the driver's staged pageable copy (llama.cpp's output buffer is pinned too) */
static void *cu_host_alloc(size_t bytes) {
    static int pin = -2; /* CLLAMA_CUDA_PINNED=0: pageable rows instead (A/B; read once per process) */
    if (cll_cu_env_nonneg(&pin, "CLLAMA_CUDA_PINNED") == 0) return NULL;
    void *p = NULL;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocDefault) != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: the caller takes pageable memory instead */
        return NULL;
    }
    return p;
}
static void cu_host_free(void *p) {
    if (p) cudaFreeHost(p);
}

extern "C" const cll_driver cll_cuda_driver = {
    "cuda", true, cll_cu_model_create, cll_cu_model_free, cu_model_desc, cu_state_create,
    cu_state_free, cu_state_bytes, cu_forward, cu_counters, CLL_CU_TOPK_MAX, cu_host_alloc, cu_host_free,
    cu_prepare_batches, NULL, cll_cu_comm_create, cll_cu_comm_free, cll_cu_comm_abort,
};
