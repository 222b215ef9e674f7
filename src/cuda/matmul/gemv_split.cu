/* cuda/matmul/gemv_split: the layout-1 ("split") rows: decode gemv (k_gemv_sp; k_gemv_sp2, two weights of
 * two types in one launch: cll_cu_gemv_pair), get_rows and the gemm panel over the split layout, and the
 * host repack the upload runs (cll_cu_sp_pack_rows).
 * Launch geometry, register budget and the layout itself: see cuda/matmul/split.cuh
 * (128-thread blocks, R = 1 or 2 rows per warp, grid (ceil(rows/4R), nb), no shared memory, U
 * groups per lane per iteration, register double buffer; programmatic dependent launch).
 * get_rows / panel: one thread per element, 256-thread blocks, grid (cols/256, ids or rows).
 * Owns nothing. Rule: deq is bit-exact with to_f32; dots are exact int sums per group (16 for Q6_K)
 * times float scales, as the layout-0 rows (the gate holds both to the same bar). */
#include <stdlib.h>

#include "cuda/matmul/kernels.cuh"
#include "cuda/matmul/split.cuh"
#include "cuda/matmul/epilogue.cuh"
#include "cuda/ops/route.cuh"
#include "cuda/pick.h"

/* the self-routing prologue (cll_cu_route): the PDL wait (the router product wrote the logits),
 * the token's routing in warp 0, block (0, 0) publishes it; returns slot b's expert */
static __device__ __forceinline__ int32_t sp_route(const cll_cu_route &rt, int b) {
    __shared__ float pr[CLL_CU_ROUTE_EMAX];
    __shared__ int32_t sel[CLL_CU_ROUTE_KMAX];
    __shared__ float selw[CLL_CU_ROUTE_KMAX];
    cll_pdl_wait();
    if (threadIdx.x < 32) {
        cll_route_warp(rt.logits, rt.n_expert, rt.k, rt.renorm, pr, sel, selw);
        if (blockIdx.x == 0 && blockIdx.y == 0 && (int)threadIdx.x < rt.k) {
            rt.sel[threadIdx.x] = sel[threadIdx.x];
            rt.selw[threadIdx.x] = selw[threadIdx.x];
        }
    }
    __syncthreads();
    return sel[b];
}

#define SP_WARPS 4
#define SP_U 4
/* >= 5 blocks (20 warps) per SM: caps registers at 102 (Q6_K would take 107; 80 spills); the
 * bit-exact variants name their own cap (MINB) */
#define SP_MIN_BLOCKS 5
/* the w4r2pre body (SP_GP / SP_GP1's ONE kernel; k_gemv_sp2's parts, whose bits must stay theirs): groups a
 * lane, the whole row of <= 32 SP_PRE_U groups in flight before the PDL wait, 2 rows a warp */
#define SP_PRE_U 4
/* w4r2ks4 (SP_GK, k_gemv_spk): warps a row pair, and chunks a lane (cll_cu_sp_ks: which rows it splits) */
#define SP_KS 4
#define SP_KS_U 4

/* ONE: the launcher guarantees ng <= 32 U (the whole row in the first U groups a lane, loaded before
 * the PDL wait): no second buffer, so U = 4 costs the registers of U = 2 double-buffered */
/* the gate|up pair activated by the launch (cll_cu_gemv_args.act_out) as k_gemv_sp's R = 2 body reads it:
 * warp p of the grid sums gate row p and up row f + p, lane 0 writes act(gate_p, up_p) to y[p]; yq: the
 * q8_1 blocks too. A q8_1 block's 32 values come from 8 blocks of 4 warps, which do not wait for each
 * other: each producer warp stores its value into slot p with a relaxed store and leaves, and f / 32
 * consumer warps placed after the producers in the grid each poll one q8_1 block's 32 slots, write the
 * block (the act kernel's bytes: cll_warp_q8_1) and empty the slots for the next launch. A block is never
 * made to wait for another block's join, so no slot of the multi-wave grid is held by a join (the
 * forty-seventh session's ticket and cluster joins held each block until its q8_1 block was whole and
 * lost 6-10%: docs/cuda.md). The consumers spin only on producers dispatched before them (the grid's
 * blocks start in index order, and the next kernel's blocks launch only once every block here has
 * triggered), and there are f / 128 of them: a few per SM */
struct SpAct {
    float *y;
    cll_block_q8_1 *yq;
    uint32_t *slot; /* f words, all CLL_CU_SLOT_EMPTY between launches (yq only) */
    int64_t f;
    bool gelu;
};


/* a consumer warp: q8_1 block g of the activation once its 32 slots are full (each lane polls its own slot;
 * the producers wrote them with relaxed stores and never wait), then the slots emptied for the next launch */
static __device__ __forceinline__ void sp_act_consume(const SpAct &act, int64_t g, int lane) {
    uint32_t *sl = act.slot + g * 32 + lane;
    uint32_t u = cll_ld_relaxed_u32(sl);
    for (unsigned polls = 0; __any_sync(0xffffffffu, u == CLL_CU_SLOT_EMPTY); polls++) {
        if (polls >= CLL_CU_POLL_MAX) __trap(); /* a producer that never stored: an error, not a hung step */
        if (u == CLL_CU_SLOT_EMPTY) u = cll_ld_relaxed_u32(sl);
    }
    cll_warp_q8_1(__uint_as_float(u), act.yq + g, lane);
    cll_st_relaxed_u32(sl, CLL_CU_SLOT_EMPTY);
}

/* the body of k_gemv_sp as block bx of its rows (k_gemv_sp: blockIdx.x; k_gemv_sp2: the block's place in
 * its part); the grid-wide steps (the early trigger, the next weights' L2 prefetch) read the launch's grid */
/* ACT (R = 2): the gate|up pair activated by the launch (act) */
template <class S, int WARPS, int U, bool EPI, bool RT, int R, bool ONE, bool ACT = false>
static __device__ __forceinline__ void
sp_gemv_dev(const uint8_t *__restrict__ W, int64_t rows, int64_t ng, int64_t row_stride, int64_t mat_stride, int64_t n_mat,
            const int32_t *__restrict__ mat_ids, const cll_block_q8_1 *__restrict__ xq, int64_t xq_stride,
            float *__restrict__ y, int64_t y_stride, int early, const void *pfn, size_t pfb, const cll_cu_resid_epi &epi,
            const cll_cu_route &rt, int64_t bx, const SpAct *act = nullptr) {
    typedef typename S::Wv Wv;
    static_assert(ACT == 0 || (R == 2 && !EPI && !RT), "an activated launch: R = 2, no tail, no route");
    if (early) cll_pdl_trigger(); /* the next kernel may launch now */
    double epi_acc = 0.0; /* the fused residual tail: this thread's squares */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    /* ACT: the warp's pair p (gate row p, up row f + p) */
    const int64_t p = bx * WARPS + warp;
    const int64_t row0 = ACT ? p : p * R;
    const int b = blockIdx.y;
    const bool live = ACT ? p < act->f : row0 < rows; /* warp-uniform */
    if constexpr (SpTables<S>::on) { /* the codebook into shared memory (a constant: before the wait) */
        SpTables<S>::stage();
        __syncthreads();
    }
    int64_t mat = 0;
    bool bad = false;
    if (RT || mat_ids) { /* the router wrote the logits / ids: wait for it before choosing the matrix */
        if (RT) mat = sp_route(rt, b);
        else {
            cll_pdl_wait();
            mat = mat_ids[b];
        }
        bad = mat < 0 || mat >= n_mat;
        if (bad) mat = 0;
    }
    /* R > 1: a partial last warp reads its last row again (clamped) and drops those sums */
    const uint8_t *wr[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int64_t rr = ACT ? (r == 0 ? p : act->f + p) : row0 + r < rows ? row0 + r : rows - 1;
        wr[r] = W + mat * mat_stride + (live ? rr : 0) * row_stride;
    }
    Wv cur[R][U] = {};
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int64_t g = lane + 32 * u;
        if (live && g < ng) {
#pragma unroll
            for (int r = 0; r < R; r++) cur[r][u] = S::load(wr[r], ng, g);
        }
    }
    if (!RT && !mat_ids) cll_pdl_wait(); /* the activation's producer */
    const cll_block_q8_1 *xb = xq + b * xq_stride;
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = 0.0f;
    /* dead warps (past the rows, or a bad router id: a defined zero) skip the loop but still
     * reach the tail */
    for (int64_t g0 = 0; live && !bad && g0 < ng; g0 += 32 * U) {
        Wv nxt[R][U] = {};
        const int64_t g1 = g0 + 32 * U;
        if (!ONE && g1 < ng) { /* warp-uniform: the next iteration's loads go out before this one decodes */
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int64_t g = g1 + lane + 32 * u;
                if (g < ng) {
#pragma unroll
                    for (int r = 0; r < R; r++) nxt[r][u] = S::load(wr[r], ng, g);
                }
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t g = g0 + lane + 32 * u;
            if (g < ng) {
                const CuX x = sp_ldx(xb + g); /* once per group for the warp's R rows */
#pragma unroll
                for (int r = 0; r < R; r++) acc[r] += S::dot(cur[r][u], g, x);
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int r = 0; r < R; r++) cur[r][u] = nxt[r][u];
    }
    if constexpr (ACT) {
        /* the rows' sums as the plain launch writes them, then the act kernel's arithmetic on them */
        const float g = cll_warp_sum(acc[0]), u = cll_warp_sum(acc[R - 1]);
        const float v = live ? cll_act_gated(g, u, act->gelu) : 0.0f;
        if (live && lane == 0) {
            act->y[p] = v;
            if (act->yq) cll_st_relaxed_u32(act->slot + p, __float_as_uint(v)); /* for the consumers; then leave */
        }
        cll_l2_prefetch_next(pfn, pfb);
    } else {
#pragma unroll
        for (int r = 0; r < R; r++) {
            const float v = cll_warp_sum(acc[r]);
            if (live && lane == 0 && row0 + r < rows) {
                y[b * y_stride + row0 + r] = v;
                if (EPI) {
                    if (epi.slot) cll_epi_poll_row(epi, row0 + r, v); /* the polled tail: then leave */
                    else epi_acc += cll_epi_row(epi, row0 + r, v);
                }
            }
        }
        cll_l2_prefetch_next(pfn, pfb);
        if (EPI && !epi.slot) cll_epi_finish(epi, rows, epi_acc);
    }
}

/* k_gemv_sp's R = 2 body activated: blocks [0, nprod) the producers (f / WARPS), then (yq) the consumers */
template <class S, int U, int MINB, bool ONE>
__global__ void __launch_bounds__(SP_WARPS * 32, MINB)
k_gemv_sp_act(const uint8_t *__restrict__ W, int64_t ng, int64_t row_stride, const cll_block_q8_1 *__restrict__ xq,
              int early, const void *pfn, size_t pfb, const SpAct act) {
    const cll_cu_resid_epi epi = {};
    const cll_cu_route rt = {};
    const int64_t nprod = (act.f + SP_WARPS - 1) / SP_WARPS;
    if (blockIdx.x >= nprod) { /* the grid's last blocks: a warp a q8_1 block, polling its slots */
        if (early) cll_pdl_trigger();
        const int64_t g = (blockIdx.x - nprod) * SP_WARPS + (threadIdx.x >> 5);
        if (g < act.f / 32) sp_act_consume(act, g, threadIdx.x & 31);
        return;
    }
    sp_gemv_dev<S, SP_WARPS, U, false, false, 2, ONE, true>(W, 2 * act.f, ng, row_stride, 0, 1, nullptr, xq, 0, nullptr, 0,
                                                         early, pfn, pfb, epi, rt, blockIdx.x, &act);
}

template <class S, int WARPS, int U, bool EPI, bool RT, int MINB = SP_MIN_BLOCKS, int R = 1, bool ONE = false>
__global__ void __launch_bounds__(WARPS * 32, MINB)
k_gemv_sp(const uint8_t *__restrict__ W, int64_t rows, int64_t ng, int64_t row_stride, int64_t mat_stride, int64_t n_mat,
          const int32_t *__restrict__ mat_ids, const cll_block_q8_1 *__restrict__ xq, int64_t xq_stride,
          float *__restrict__ y, int64_t y_stride, int early, const void *pfn, size_t pfb, const cll_cu_resid_epi epi,
          const cll_cu_route rt) {
    if (EPI && epi.slot && blockIdx.x == gridDim.x - 1) { /* the polled tail's consumer, after every producer */
        if (early) cll_pdl_trigger();
        cll_epi_poll_consume(epi, rows);
        return;
    }
    sp_gemv_dev<S, WARPS, U, EPI, RT, R, ONE>(W, rows, ng, row_stride, mat_stride, n_mat, mat_ids, xq, xq_stride, y, y_stride,
                                             early, pfn, pfb, epi, rt, blockIdx.x);
}

/* ---- k_gemv_sp2<S1, S2>: two products over one q8_1 activation in one launch ----
 * The q|k|v product of a file whose v weight has another type (Q4_K_M: Q6_K v in half the layers; IQ3_S:
 * a Q4_K v in every layer) ran as two launches, the second a short grid (1024-4096 rows) with its own ramp,
 * PDL wait and tail on the step's critical path. Here blocks [0, nb1) run part 1's rows and the rest part
 * 2's, each with the w4r2pre body (k_gemv_sp<U = 4, R = 2, ONE>: the whole row in flight before the PDL
 * wait) its own launch would have run, so every output has the bits of the two launches
 * (cll_cuda_gate_gemv_pair holds it to that). */
template <class S1, class S2>
__global__ void __launch_bounds__(SP_WARPS * 32, SP_MIN_BLOCKS)
k_gemv_sp2(const uint8_t *__restrict__ W1, int64_t rows1, int64_t ng1, int64_t rs1, float *__restrict__ y1, int64_t nb1,
           const uint8_t *__restrict__ W2, int64_t rows2, int64_t ng2, int64_t rs2, float *__restrict__ y2,
           const cll_block_q8_1 *__restrict__ xq, int early, const void *pfn, size_t pfb) {
    const cll_cu_resid_epi epi = {};
    const cll_cu_route rt = {};
    if ((int64_t)blockIdx.x < nb1)
        sp_gemv_dev<S1, SP_WARPS, SP_PRE_U, false, false, 2, true>(W1, rows1, ng1, rs1, 0, 1, nullptr, xq, 0, y1, 0,
                                                                   early, pfn, pfb, epi, rt, blockIdx.x);
    else
        sp_gemv_dev<S2, SP_WARPS, SP_PRE_U, false, false, 2, true>(W2, rows2, ng2, rs2, 0, 1, nullptr, xq, 0, y2, 0,
                                                                   early, pfn, pfb, epi, rt, (int64_t)blockIdx.x - nb1);
}

/* ---- k_gemv_spk<S, KS, U, MINB>: the long rows (down) split over KS warps ----
 * A 4096-row down product (11008 or 14336 columns) runs one wave of blocks whose warps each walk 11-14
 * groups a lane in 6-7 dependent rounds of loads (w4r2u2: 50-64% of 4300 GB/s in cuda_kbench). Here
 * the KS warps of a 128-thread block share two rows (a block per 2 rows when KS = 4): warp k takes
 * the 32-group chunks k, k + KS, .. (every load instruction still reads 32 consecutive records), all
 * of them (at most U a lane) loaded before the PDL wait, then dotted against the q8_1 row from L1;
 * each lane's partial sums meet in shared memory and are added in warp order, then the warp sum.
 * The sums' order differs from w4u4's (a numerics family of its own: the gate holds it to the CPU
 * reference, not to the default's bits). EPI: the fused residual tail (its row writers are the KS = 0
 * warps' lane 0, so y is the plain run's bit for bit). Rows of <= 128 groups, rows past KS x U chunks
 * and expert products run the fallback launcher F (the type's base form, cll_cu_sp_base). */
template <class S, int KS, int U, int MINB, bool EPI>
__global__ void __launch_bounds__(SP_WARPS * 32, MINB)
k_gemv_spk(const uint8_t *__restrict__ W, int64_t rows, int64_t ng, int64_t row_stride,
           const cll_block_q8_1 *__restrict__ xq, int64_t xq_stride, float *__restrict__ y, int64_t y_stride, int early,
           const void *pfn, size_t pfb, const cll_cu_resid_epi epi) {
    typedef typename S::Wv Wv;
    constexpr int R = 2, RP = SP_WARPS / KS; /* row pairs a block */
    __shared__ float part[SP_WARPS][R][32];
    if (early) cll_pdl_trigger(); /* the next kernel may launch now */
    if (EPI && epi.slot && blockIdx.x == gridDim.x - 1) { /* the polled tail's consumer, after every producer */
        cll_epi_poll_consume(epi, rows);
        return;
    }
    double epi_acc = 0.0; /* the fused residual tail: this thread's squares */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, ks = warp % KS;
    const int64_t row0 = ((int64_t)blockIdx.x * RP + warp / KS) * R;
    const int b = blockIdx.y;
    const bool live = row0 < rows; /* warp-uniform */
    const uint8_t *wr[R];
#pragma unroll
    for (int r = 0; r < R; r++) wr[r] = W + (live ? (row0 + r < rows ? row0 + r : rows - 1) : 0) * row_stride;
    Wv cur[R][U] = {};
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int64_t g = 32 * (ks + KS * u) + lane;
        if (live && g < ng) {
#pragma unroll
            for (int r = 0; r < R; r++) cur[r][u] = S::load(wr[r], ng, g);
        }
    }
    cll_pdl_wait(); /* the activation's producer */
    const cll_block_q8_1 *xb = xq + b * xq_stride;
    float acc[R] = {};
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int64_t g = 32 * (ks + KS * u) + lane;
        if (live && g < ng) {
            const CuX x = sp_ldx(xb + g);
#pragma unroll
            for (int r = 0; r < R; r++) acc[r] += S::dot(cur[r][u], g, x);
        }
    }
#pragma unroll
    for (int r = 0; r < R; r++) part[warp][r][lane] = acc[r];
    __syncthreads();
    if (ks == 0 && live) {
#pragma unroll
        for (int r = 0; r < R; r++) {
            float v = part[warp][r][lane];
#pragma unroll
            for (int k = 1; k < KS; k++) v += part[warp + k][r][lane];
            v = cll_warp_sum(v);
            if (lane == 0 && row0 + r < rows) {
                y[b * y_stride + row0 + r] = v;
                if (EPI) {
                    if (epi.slot) cll_epi_poll_row(epi, row0 + r, v);
                    else epi_acc += cll_epi_row(epi, row0 + r, v);
                }
            }
        }
    }
    cll_l2_prefetch_next(pfn, pfb);
    if (EPI && !epi.slot) cll_epi_finish(epi, rows, epi_acc);
}

/* a self-routing launch: one token's nb == k slots, nothing else asked of the kernel */
static bool sp_route_ok(const cll_cu_gemv_args *a) {
    const cll_cu_route &r = a->route;
    return r.k >= 1 && r.k <= CLL_CU_ROUTE_KMAX && r.k <= r.n_expert && r.n_expert <= CLL_CU_ROUTE_EMAX && a->nb == r.k &&
           !a->mat_ids && !a->epi.on && r.sel && r.selw;
}

/* a launch that can carry the polled residual tail: one dense product of one token of a width it serves
 * (cll_cu_resid_poll_rows), nothing else fused; the consumer block is 128 threads */
static_assert(SP_WARPS * 32 == 128, "the polled tail's consumer replays the norm kernel on 128 threads");
static bool sp_poll_shape(const cll_cu_weight *w, const cll_cu_gemv_args *a) {
    return a->nb == 1 && !a->mat_ids && !a->route.logits && !a->act_in.gu && !a->act_out.y && w->n_mat == 1 &&
           cll_cu_resid_poll_rows(w->rows);
}

/* the gate|up pair activated by the launch (cll_cu_gemv_args.act_out) on k_gemv_sp's R = 2 body: its checks, then
 * f / 4 producer blocks and (yq) f / 128 consumer blocks */
template <class S, int U, int MINB, bool ONE>
static cudaError_t sp_act_launch(const cll_cu_weight *w, const cll_cu_gemv_args *a, cudaStream_t st) {
    const int64_t f = a->act_out.f;
    if (a->nb != 1 || a->mat_ids || a->epi.on || a->route.logits || w->n_mat != 1 || f < 1 || w->rows < 2 * f)
        return cudaErrorInvalidValue;
    if (a->act_out.yq && (f % 32 || !a->act_out.slot)) return cudaErrorNotSupported;
    SpAct act;
    act.y = a->act_out.y;
    act.yq = (cll_block_q8_1 *)a->act_out.yq;
    act.slot = (uint32_t *)a->act_out.slot;
    act.f = f;
    act.gelu = a->act_out.gelu;
    const unsigned nprod = (unsigned)cll_cdiv(f, SP_WARPS), ncons = act.yq ? (unsigned)cll_cdiv(f / 32, SP_WARPS) : 0u;
    return cll_cu_launch(k_gemv_sp_act<S, U, MINB, ONE>, dim3(nprod + ncons), dim3(SP_WARPS * 32), 0, st, w->d,
                         w->cols / 32, (int64_t)w->row_stride, (const cll_block_q8_1 *)a->xq,
                         cll_cu_gemv_early_trigger(), a->pf_next, a->pf_bytes, act);
}

/* U: groups per lane in flight (4: the w4u4 rows; 1 / 2 their variants), MINB: the resident
 * blocks an SM the registers are capped for, R: rows a warp (one activation read per group for
 * all R). A row's sum depends on none of them (each lane adds its groups l, l + 32, .. in that
 * order, then the warp sum), so the variants are bit-exact with w4u4 */
/* PRE (k_gemv_sp<ONE>): 1 every row of <= 32 U groups whole before the PDL wait, 2 only where the grid
 * is also one wave (<= MINB blocks an SM: the 4096-row o of a 7B); the other products run the
 * fallback <FU, FMINB> (double-buffered, the same sums), and so do the expert products (mat_ids or a
 * route: their loads wait for the router, so nothing goes out early) */
template <class S, int U = SP_U, int MINB = SP_MIN_BLOCKS, int R = 1, int PRE = 0, int FU = 2, int FMINB = MINB>
static cudaError_t sp_gemv_launch(const cll_cu_weight *w, const cll_cu_gemv_args *a, cudaStream_t st) {
    if (!a->xq || a->nb <= 0 || a->nb > 65535 || w->cols % S::QK || w->layout != CLL_CU_LAYOUT_SPLIT)
        return cudaErrorInvalidValue;
    constexpr bool ONE = PRE > 0;
    static_assert(!ONE || (R == 2 && SP_WARPS == 4), "cll_cu_sp_pre counts blocks of 8 rows");
    if (ONE && !cll_cu_sp_pre(PRE, w->cols / 32, w->rows, a->nb, U, MINB, cll_cu_sm_count(), a->mat_ids || a->route.logits))
        return sp_gemv_launch<S, FU, FMINB, R>(w, a, st);
    dim3 grid((unsigned)cll_cdiv(w->rows, SP_WARPS * R), (unsigned)a->nb);
    if (a->epi.on && (a->nb != 1 || grid.x > CLL_CU_EPI_MAX_BLOCKS)) return cudaErrorInvalidValue;
    if (a->epi.on && a->epi.slot) { /* the polled tail: one consumer block after the producers */
        if (!sp_poll_shape(w, a)) return cudaErrorNotSupported;
        grid.x += 1;
    }
    if (a->route.logits && !sp_route_ok(a)) return cudaErrorInvalidValue;
    if (a->act_in.gu) return cudaErrorNotSupported; /* the staging of k_gemv_spx only */
    if (a->act_out.y) {
        if constexpr (R == 2) return sp_act_launch<S, U, MINB, ONE>(w, a, st);
        return cudaErrorNotSupported;
    }
    auto k = a->route.logits ? k_gemv_sp<S, SP_WARPS, U, false, true, MINB, R, ONE>
             : a->epi.on     ? k_gemv_sp<S, SP_WARPS, U, true, false, MINB, R, ONE>
                             : k_gemv_sp<S, SP_WARPS, U, false, false, MINB, R, ONE>;
    return cll_cu_launch(k, grid, dim3(SP_WARPS * 32), 0, st, w->d, w->rows, w->cols / 32,
                        (int64_t)w->row_stride, (int64_t)w->mat_stride, w->n_mat, a->mat_ids, (const cll_block_q8_1 *)a->xq,
                        a->xq_stride, a->y, a->y_stride, cll_cu_gemv_early_trigger(), a->pf_next, a->pf_bytes,
                        a->epi, a->route);
}

/* the long rows split over KS warps (k_gemv_spk), everything else by F (the type's base form) */
template <class S, int KS, int U, int MINB, cll_cu_gemv_fn F>
static cudaError_t spk_gemv_launch(const cll_cu_weight *w, const cll_cu_gemv_args *a, cudaStream_t st) {
    if (!a->xq || a->nb <= 0 || a->nb > 65535 || w->cols % S::QK || w->layout != CLL_CU_LAYOUT_SPLIT)
        return cudaErrorInvalidValue;
    const int64_t ng = w->cols / 32;
    const bool split = cll_cu_sp_ks(ng, KS, U, a->mat_ids || a->route.logits || a->act_in.gu);
    if (a->act_out.y) return split ? cudaErrorNotSupported : F(w, a, st); /* cll_cu_acts_out_ok */
    if (!split) return F(w, a, st);
    dim3 grid((unsigned)cll_cdiv(w->rows, 2 * (SP_WARPS / KS)), (unsigned)a->nb);
    if (a->epi.on && (a->nb != 1 || grid.x > CLL_CU_EPI_MAX_BLOCKS)) return cudaErrorInvalidValue;
    if (a->epi.on && a->epi.slot) { /* the polled tail: one consumer block after the producers */
        if (!sp_poll_shape(w, a)) return cudaErrorNotSupported;
        grid.x += 1;
    }
    auto k = a->epi.on ? k_gemv_spk<S, KS, U, MINB, true> : k_gemv_spk<S, KS, U, MINB, false>;
    return cll_cu_launch(k, grid, dim3(SP_WARPS * 32), 0, st, w->d, w->rows, ng, (int64_t)w->row_stride,
                         (const cll_block_q8_1 *)a->xq, a->xq_stride, a->y, a->y_stride, cll_cu_gemv_early_trigger(),
                         a->pf_next, a->pf_bytes, a->epi);
}

/* ---- k_gemv_spx<S, R, U, EPI>: R rows per warp, the activation staged in shared memory, split-K ----
 * 128-thread blocks (4 warps). The block first issues its weight loads (U groups x R rows per
 * lane, before the PDL wait), then stages the whole q8_1 activation row into dynamic shared
 * memory (sp_stage_x: per 32-value block its 9 words plus the integer sums of its two halves,
 * 11 words, L1-allocating loads: every block of the SM reads the same row) and syncs. A lane
 * then reads its group's words with conflict-free 32-bit LDS (stride 11, odd), once per group
 * for all R rows of its warp, and the offset terms (Q4_0's -8 sum y, Q4_K's m sum y, Q6_K's
 * -32 sum y) come from the staged sums instead of 8 dp4a per row-group.
 * Split-K: ks (1, 2 or 4) warps of a block share the same R rows; warp w takes K slice w % ks
 * (32-group chunks kslice, kslice+ks, ..: every load instruction still reads 32 consecutive
 * records) and rows (w / ks)*R ..; partial sums meet in shared memory, summed in a fixed order.
 * A block covers RB = (4/ks)*R rows; grid (ceil(rows/RB), nb). ks is picked by the launcher
 * (sp_pick_ks: a pure function of rows, cols, nb and the SM count). Warps whose rows are all
 * past the end load nothing but still reach every barrier; a partial warp reads its last row
 * again (clamped) and drops those results. */
#define SPX_WARPS 4
/* activation rows above 45 KB (cols > 33512) take k_gemv_sp: an unopened kernel gets 48 KB of shared
 * memory with its static arrays counted (red, the tail's 260 bytes, sp_route's 2.3 KB), so the staged
 * row leaves them 3 KB (a TMA row's tail took a launch just past 48 KB: gemv_tma.cu) */
#define SPX_MAX_SMEM (45 * 1024)

template <class S, int R, int U, bool EPI, bool RT, bool ACT, int MINB = SP_MIN_BLOCKS>
__global__ void __launch_bounds__(SPX_WARPS * 32, MINB)
k_gemv_spx(const uint8_t *__restrict__ W, int64_t rows, int64_t ng, int64_t row_stride, int64_t mat_stride,
           int64_t n_mat, const int32_t *__restrict__ mat_ids, const cll_block_q8_1 *__restrict__ xq, int64_t xq_stride,
           float *__restrict__ y, int64_t y_stride, int ks_log2, int early, const void *pfn, size_t pfb,
           const cll_cu_resid_epi epi, const cll_cu_route rt, const float *__restrict__ gu, int64_t gu_ld, bool gelu) {
    typedef typename S::Wv Wv;
    if (early) cll_pdl_trigger(); /* the next kernel may launch now */
    double epi_acc = 0.0; /* the fused residual tail: this thread's squares */
    extern __shared__ int sx[]; /* ng x SP_XW words: the q8_1 activation row and its sums */
    __shared__ float red[SPX_WARPS][R];
    SpTables<S>::stage(); /* a codebook to shared memory (no split form has one today); the staging barrier orders it */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int ks = 1 << ks_log2, kslice = warp & (ks - 1);
    const int64_t rb = (int64_t)(SPX_WARPS >> ks_log2) * R; /* rows per tile (block) */
    const int64_t tiles = (rows + rb - 1) / rb;
    const int b = blockIdx.y;
    int64_t mat = 0;
    bool bad = false;
    if (RT || mat_ids) { /* the router wrote the logits / ids: wait for it before choosing the matrix */
        if (RT) mat = sp_route(rt, b);
        else {
            cll_pdl_wait();
            mat = mat_ids[b];
        }
        bad = mat < 0 || mat >= n_mat;
        if (bad) mat = 0;
    }
    const uint8_t *Wm = W + mat * mat_stride;
    /* chunk j of this warp: groups 32 * (kslice + ks * j) + lane */
    const int ngi = (int)ng; /* < 2^31 groups: 32-bit group arithmetic */
    const int cstep = 32 * ks;
    const int gl = 32 * kslice + lane;
    bool staged = false;
    /* tiles blockIdx.x, + gridDim.x, ..: one tile per block unless the launcher made the grid
     * smaller than the tile count (persistent rows), then the staged activation serves them all */
    for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const int64_t row0 = tile * rb + (int64_t)(warp >> ks_log2) * R;
        const bool live = row0 < rows; /* warp-uniform */
        const bool run = live && !bad;
        const uint8_t *wr[R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int64_t rr = row0 + r < rows ? row0 + r : rows - 1;
            wr[r] = Wm + (live ? rr : 0) * row_stride;
        }
        Wv cur[R][U] = {};
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int g = gl + cstep * u;
            if (run && g < ngi) {
#pragma unroll
                for (int r = 0; r < R; r++) cur[r][u] = S::load(wr[r], ng, g);
            }
        }
        if (!staged) { /* first tile: its weights are in flight; now the activation */
            staged = true;
            if (!RT && !mat_ids) cll_pdl_wait(); /* the activation's producer */
            if (ACT) sp_stage_act(gu + b * gu_ld, (int64_t)ngi * 32, gelu, ngi, sx, threadIdx.x, SPX_WARPS * 32);
            else sp_stage_x(xq + b * xq_stride, ngi, sx, threadIdx.x, SPX_WARPS * 32);
            __syncthreads();
        }
        float acc[R];
#pragma unroll
        for (int r = 0; r < R; r++) acc[r] = 0.0f;
        if (run) {
            for (int j0 = 0; 32 * kslice + cstep * j0 < ngi; j0 += U) {
                Wv nxt[R][U] = {};
                if (32 * kslice + cstep * (j0 + U) < ngi) { /* warp-uniform: next loads before this decode */
#pragma unroll
                    for (int u = 0; u < U; u++) {
                        const int g = gl + cstep * (j0 + U + u);
                        if (g < ngi) {
#pragma unroll
                            for (int r = 0; r < R; r++) nxt[r][u] = S::load(wr[r], ng, g);
                        }
                    }
                }
#pragma unroll
                for (int u = 0; u < U; u++) {
                    const int g = gl + cstep * (j0 + u);
                    if (g < ngi) {
                        const CuX x = sp_ldx_sm(sx + SP_XW * g);
#pragma unroll
                        for (int r = 0; r < R; r++) acc[r] += S::dot(cur[r][u], g, x);
                    }
                }
#pragma unroll
                for (int u = 0; u < U; u++)
#pragma unroll
                    for (int r = 0; r < R; r++) cur[r][u] = nxt[r][u];
            }
        }
#pragma unroll
        for (int r = 0; r < R; r++) acc[r] = cll_warp_sum(acc[r]);
        if (ks == 1) {
            if (live && lane == 0) {
#pragma unroll
                for (int r = 0; r < R; r++)
                    if (row0 + r < rows) {
                        y[b * y_stride + row0 + r] = acc[r]; /* bad: acc stayed 0 */
                        if (EPI) epi_acc += cll_epi_row(epi, row0 + r, acc[r]);
                    }
            }
            continue;
        }
        if (lane == 0) {
#pragma unroll
            for (int r = 0; r < R; r++) red[warp][r] = acc[r];
        }
        __syncthreads();
        if (threadIdx.x < rb) {
            const int t = threadIdx.x, rg = t / R, r = t % R;
            const int64_t row = tile * rb + t;
            if (row < rows) {
                float v = 0.0f;
                for (int k = 0; k < ks; k++) v += red[rg * ks + k][r];
                y[b * y_stride + row] = v;
                if (EPI) epi_acc += cll_epi_row(epi, row, v);
            }
        }
        __syncthreads(); /* red is rewritten by the next tile */
    }
    cll_l2_prefetch_next(pfn, pfb);
    if (EPI) cll_epi_finish(epi, rows, epi_acc);
}

/* split-K factor (log2) of k_gemv_spx, a pure function of the shape, the SM count and the
 * kernel's residency (bps: blocks per SM, from its registers and this shape's shared memory):
 * the largest ks in {4, 2, 1} whose grid still fits in one wave (ceil(rows / ((4/ks)*R)) * nb
 * <= SMs * bps) and leaves every slice >= 2 groups per lane (ng >= 64 * ks); shapes that fill a
 * wave at ks = 1 stay at 1. More warps per row only while the grid fits in one wave: a second,
 * partial wave of short blocks costs a second memory round trip. H200, 132 SMs, ~5 blocks of 4
 * warps per SM (91-96 registers): r4 4096x4096 -> ks 2 (512 blocks), 4096x11008 / 4096x14336
 * -> 2, 12288 rows and up -> 1; r2: 4096 rows -> ks 1 (512 blocks of 8 rows; ks 2 = 1024 blocks > 660). */
static int sp_pick_ks_log2(int64_t rows, int64_t ng, int nb, int sms, int bps, int R) {
    for (int l = 2; l > 0; l--) {
        const int64_t blocks = cll_cdiv(rows, (int64_t)(SPX_WARPS >> l) * R) * (int64_t)nb;
        if (blocks <= (int64_t)sms * bps && ng >= (int64_t)64 * (1 << l)) return l;
    }
    return 0;
}
/* resident blocks per SM of k_gemv_spx<S, R, U> at smem bytes of dynamic shared memory (the last
 * answer cached per kernel: decode calls one kernel with a handful of widths) */
template <class S, int R, int U, int MINB = SP_MIN_BLOCKS> static int spx_blocks_per_sm(size_t smem) {
    static size_t last_smem = (size_t)-1;
    static int last = 0;
    if (smem != last_smem) {
        int n = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k_gemv_spx<S, R, U, false, false, false, MINB>, SPX_WARPS * 32, smem) != cudaSuccess ||
            n <= 0) {
            cudaGetLastError();
            n = 4;
        }
        last = n;
        last_smem = smem;
    }
    return last;
}

/* PT: persistent grid, at most one wave (SMs x resident blocks) of blocks per product, each
 * walking tiles blockIdx.x, + gridDim.x, .. with the activation staged once.
 * KR, KU: the kernel whose split-K pick this launch takes. A row's sum depends on R, U and the
 * grid walk only through ks (each warp adds its chunks in order, the ks partials meet in a fixed
 * order), so a variant that picks ks as <KR, KU> would is bit-exact with that kernel's rows:
 * r4b6_pt (MINB = 6) and r2u1b7_r4ks_pt (R = 2, U = 1) with r4 / r4_pt (KR = 4, KU = 1), r2u1b7_pt
 * with r2 (KR = 2, KU = 2). MINB: the resident blocks an SM its registers are capped for; the
 * split-K pick reads the <KR, KU> kernel's residency at that kernel's own cap */
template <class S, int R, int U, bool PT, int KR = R, int KU = U, int MINB = SP_MIN_BLOCKS>
static cudaError_t spx_gemv_launch(const cll_cu_weight *w, const cll_cu_gemv_args *a, cudaStream_t st) {
    const bool act = a->act_in.gu != NULL;
    if ((!a->xq && !act) || a->nb <= 0 || a->nb > 65535 || w->cols % S::QK || w->layout != CLL_CU_LAYOUT_SPLIT)
        return cudaErrorInvalidValue;
    if (a->epi.on && a->epi.slot) return cudaErrorNotSupported; /* the polled tail: k_gemv_sp / k_gemv_spk only */
    const int64_t ng = w->cols / 32;
    const size_t smem = (size_t)ng * SP_XW * 4;
    if (act && (smem > SPX_MAX_SMEM || a->epi.on || a->route.logits)) return cudaErrorNotSupported;
    if (smem > SPX_MAX_SMEM) return sp_gemv_launch<S>(w, a, st);
    const int sms = cll_cu_sm_count(), bps = spx_blocks_per_sm<S, R, U, MINB>(smem);
    const int kbps = spx_blocks_per_sm<S, KR, KU>(smem); /* the kernel whose split-K this takes, at its residency */
    const int l = sp_pick_ks_log2(w->rows, ng, a->nb, sms, kbps, KR);
    const int64_t rb = (int64_t)(SPX_WARPS >> l) * R;
    int64_t gx = cll_cdiv(w->rows, rb);
    if (PT) { /* one wave over all nb products */
        const int64_t per = cll_cdiv((int64_t)sms * bps, (int64_t)a->nb);
        if (gx > per) gx = per;
    }
    const dim3 grid((unsigned)gx, (unsigned)a->nb);
    if (a->epi.on && (a->nb != 1 || grid.x > CLL_CU_EPI_MAX_BLOCKS)) return cudaErrorInvalidValue;
    if (a->route.logits && !sp_route_ok(a)) return cudaErrorInvalidValue;
    auto k = act               ? k_gemv_spx<S, R, U, false, false, true, MINB>
             : a->route.logits ? k_gemv_spx<S, R, U, false, true, false, MINB>
             : a->epi.on       ? k_gemv_spx<S, R, U, true, false, false, MINB>
                               : k_gemv_spx<S, R, U, false, false, false, MINB>;
    return cll_cu_launch(k, grid, dim3(SPX_WARPS * 32), smem, st, w->d, w->rows, ng,
                             (int64_t)w->row_stride, (int64_t)w->mat_stride, w->n_mat, a->mat_ids,
                             (const cll_block_q8_1 *)a->xq, a->xq_stride, a->y, a->y_stride, l, cll_cu_gemv_early_trigger(),
                             a->pf_next, a->pf_bytes, a->epi, a->route, a->act_in.gu, a->act_in.ld, a->act_in.gelu);
}

template <class S>
__global__ void k_sp_get_rows(const uint8_t *__restrict__ W, int64_t rows, int64_t cols, int64_t row_stride,
                              const int32_t *__restrict__ ids, float *__restrict__ out, int64_t ld_out, float scale) {
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t i = blockIdx.y;
    if (e >= cols) return;
    const int64_t r = ids[i];
    float v = NAN;
    if (r >= 0 && r < rows) {
        v = S::deq(W + r * row_stride, cols / 32, e);
        if (scale != 1.0f) v = __fmul_rn(v, scale);
    }
    out[i * ld_out + e] = v;
}

template <class S>
static cudaError_t sp_get_rows_launch(const cll_cu_weight *w, const int32_t *ids, int64_t n, float *out, int64_t ld_out,
                                      float scale, cudaStream_t st) {
    for (int64_t i0 = 0; i0 < n; i0 += 65535) {
        const int64_t ni = n - i0 < 65535 ? n - i0 : 65535;
        const dim3 grid((unsigned)cll_cdiv(w->cols, 256), (unsigned)ni);
        k_sp_get_rows<S><<<grid, 256, 0, st>>>(w->d, w->rows, w->cols, (int64_t)w->row_stride, ids + i0,
                                               out + i0 * ld_out, ld_out, scale);
        CLL_CU_RET(cudaGetLastError());
    }
    return cudaSuccess;
}

/* one thread per 32-element group, as k_panel (kernels.cuh) */
template <class S, bool BF>
__global__ void k_sp_panel(const uint8_t *__restrict__ W, int64_t cols, int64_t row_stride, int64_t r0,
                           uint16_t *__restrict__ panel) {
    const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t r = blockIdx.y;
    if (g >= cols / 32) return;
    const uint8_t *row = W + (r0 + r) * row_stride;
    float v[32];
    S::deq32(row, cols / 32, g, v);
    cll_store32_half(v, BF, panel + r * cols + (g << 5));
}

template <class S>
static cudaError_t sp_panel_launch(const cll_cu_weight *w, int64_t mat, int64_t r0, int64_t nr, void *panel, bool bf16,
                                   cudaStream_t st) {
    const dim3 grid((unsigned)cll_cdiv(w->cols / 32, 128), (unsigned)nr);
    const uint8_t *Wm = w->d + mat * w->mat_stride;
    if (bf16)
        k_sp_panel<S, true><<<grid, 128, 0, st>>>(Wm, w->cols, (int64_t)w->row_stride, r0, (uint16_t *)panel);
    else
        k_sp_panel<S, false><<<grid, 128, 0, st>>>(Wm, w->cols, (int64_t)w->row_stride, r0, (uint16_t *)panel);
    return cudaGetLastError();
}

template <class S, int T> static size_t sp_row_bytes(int64_t cols) { return SpBytes<S>::row((uint32_t)T, cols); }

template <class S> static void sp_pack_rows(const uint8_t *src, uint8_t *dst, int64_t n, int64_t cols, size_t src_stride,
                                            size_t dst_stride) {
    for (int64_t r = 0; r < n; r++) S::pack(src + (size_t)r * src_stride, dst + (size_t)r * dst_stride, cols / 32);
}

/* the bit-exact variants a type has (NULL: none): rows that launch its default's sums differently,
 * for the tuner to race. W: IQ4_XS (default w4u4): w4u2, w4u2 and w4u1 at >= 8 blocks an SM
 * (<= 64 registers), w4u4 at >= 6; X: r4 at >= 6 blocks (72-80 registers: Q4_0, Q5_1, IQ3_S; the
 * K-quants and Q8_0 spill there); Y: r2 with one group a row in flight at >= 7 blocks (56-72
 * registers), split-K as r4 (the r4_pt types) or as r2 (Q6_K, default r2). Left out after
 * measuring (H200, tune serving races, l2-7b, same call): more in flight does not pay, fewer
 * registers might: IQ4_XS w4u8 (4 blocks) -15.8% and w4u2 +3.0% against w4u4; Q4_K r2 (U = 2)
 * with r4's split-K -1.5%, Q6_K r2_pt -0.5%; r4 with U = 2 spills on Q4_K / Q8_0 / Q6_K. */
#define SP_W(T)                                                                                              \
    sp_gemv_launch<CuSp<T>, 2>, sp_gemv_launch<CuSp<T>, 2, 8>, sp_gemv_launch<CuSp<T>, 1, 8>,                    \
        sp_gemv_launch<CuSp<T>, 4, 6>
#define SP_NOW NULL, NULL, NULL, NULL
#define SP_X(T) spx_gemv_launch<CuSp<T>, 4, 1, true, 4, 1, 6>
#define SP_Y4(T) spx_gemv_launch<CuSp<T>, 2, 1, true, 4, 1, 7>
#define SP_Y2(T) spx_gemv_launch<CuSp<T>, 2, 1, true, 2, 2, 7>
/* G: w4u4's sums over 2 rows a warp, 2 groups a lane, the activation read from global (L1) per
 * group (no staging, no barrier: k_gemv_sp<R = 2>); 88-96 registers at >= 5 blocks an SM, no
 * spill, except Q8_0 (its 34-byte groups: 72 bytes of spill at 96), capped at 4 blocks (G4) */
#define SP_G(T) sp_gemv_launch<CuSp<T>, 2, SP_MIN_BLOCKS, 2>
#define SP_G4(T) sp_gemv_launch<CuSp<T>, 2, 4, 2>
/* G1: the same with one group a lane in flight at >= 7 blocks an SM (Q8_0 fits it unspilled) */
#define SP_G1(T) sp_gemv_launch<CuSp<T>, 1, 7, 2>
/* GP: a row of up to 128 groups (4096 columns: q|k|v, o, gate|up of a 7B/8B) four groups a lane,
 * all in flight before the PDL wait while the kernel before it (attention, a norm) still runs, no
 * second buffer (k_gemv_sp<ONE>); a longer row (down) runs G's kernel (Q8_0: G4's). GP1: the same
 * only where the grid is one wave, else the type's staging-free default (Q8_0: G1's, others G's) */
#define SP_GP(T) sp_gemv_launch<CuSp<T>, SP_PRE_U, (T) == CLL_TYPE_Q8_0 ? 4 : SP_MIN_BLOCKS, 2, 1>
#define SP_GP1(T)                                                                                             \
    sp_gemv_launch<CuSp<T>, SP_PRE_U, (T) == CLL_TYPE_Q8_0 ? 4 : SP_MIN_BLOCKS, 2, 2, (T) == CLL_TYPE_Q8_0 ? 1 : 2,     \
                   (T) == CLL_TYPE_Q8_0 ? 7 : SP_MIN_BLOCKS>
/* GK: k_gemv_spk on the long rows (4 warps a row pair, up to 16 chunks: 16384 columns), the other rows by
 * the type's base form (cll_cu_sp_base's code, launched as its row does) */
template <uint32_t T> static constexpr cll_cu_gemv_fn sp_base_launch() {
    constexpr int d = cll_cu_sp_base(T);
    static_assert(d == 0 || (d >= 12 && d <= 15), "a split default without staging (w4r2ks4's fallback)");
    return d == 15   ? SP_GP1(T)
           : d == 14 ? SP_GP(T)
           : d == 13 ? SP_G1(T)
           : d == 12 ? (T == CLL_TYPE_Q8_0 ? SP_G4(T) : SP_G(T))
                     : sp_gemv_launch<CuSp<T>>;
}
#define SP_GK(T) spk_gemv_launch<CuSp<T>, SP_KS, SP_KS_U, SP_MIN_BLOCKS, sp_base_launch<T>()>
#define SP_OPS(T, NAME, W, X, Y, G)                                                                           \
    {T, sp_gemv_launch<CuSp<T>>, spx_gemv_launch<CuSp<T>, 2, 2, false>, spx_gemv_launch<CuSp<T>, 4, 1, false>,    \
     spx_gemv_launch<CuSp<T>, 4, 1, true>, W, X, Y, G, SP_G1(T), SP_GP(T), SP_GP1(T), SP_GK(T),                                     \
     sp_get_rows_launch<CuSp<T>>, sp_panel_launch<CuSp<T>>, sp_pack_rows<CuSp<T>>, CuSp<T>::QK, NAME,                \
     cu_moe_launch<CuMoeRowSp<CuSp<T>>>, sp_row_bytes<CuSp<T>, T>}
static const cll_cu_sp_ops k_sp_ops[] = {
    SP_OPS(CLL_TYPE_Q4_0, "gemv_q4_0_split_w4u4_dp4a", SP_NOW, SP_X(CLL_TYPE_Q4_0), SP_Y4(CLL_TYPE_Q4_0), SP_G(CLL_TYPE_Q4_0)),
    SP_OPS(CLL_TYPE_Q8_0, "gemv_q8_0_split_w4u4_dp4a", SP_NOW, NULL, SP_Y4(CLL_TYPE_Q8_0), SP_G4(CLL_TYPE_Q8_0)),
    SP_OPS(CLL_TYPE_Q5_1, "gemv_q5_1_split_w4u4_dp4a", SP_NOW, SP_X(CLL_TYPE_Q5_1), SP_Y4(CLL_TYPE_Q5_1), SP_G(CLL_TYPE_Q5_1)),
    SP_OPS(CLL_TYPE_Q4_K, "gemv_q4_K_split_w4u4_dp4a", SP_NOW, NULL, SP_Y4(CLL_TYPE_Q4_K), SP_G(CLL_TYPE_Q4_K)),
    SP_OPS(CLL_TYPE_Q6_K, "gemv_q6_K_split_w4u4_dp4a", SP_NOW, NULL, SP_Y2(CLL_TYPE_Q6_K), SP_G(CLL_TYPE_Q6_K)),
    SP_OPS(CLL_TYPE_IQ4_XS, "gemv_iq4_xs_split_w4u4_dp4a", SP_W(CLL_TYPE_IQ4_XS), NULL, NULL, SP_G(CLL_TYPE_IQ4_XS)),
    SP_OPS(CLL_TYPE_IQ3_S, "gemv_iq3_s_split_w4u4_dp4a", SP_NOW, SP_X(CLL_TYPE_IQ3_S), SP_Y4(CLL_TYPE_IQ3_S), SP_G(CLL_TYPE_IQ3_S)),
    SP_OPS(CLL_TYPE_Q5_K, "gemv_q5_K_split_w4u4_dp4a", SP_NOW, NULL, NULL, SP_G(CLL_TYPE_Q5_K)),
    SP_OPS(CLL_TYPE_Q3_K, "gemv_q3_K_split_w4u4_dp4a", SP_NOW, NULL, NULL, SP_G(CLL_TYPE_Q3_K)),
    SP_OPS(CLL_TYPE_Q4_1, "gemv_q4_1_split_w4u4_dp4a", SP_NOW, NULL, NULL, SP_G(CLL_TYPE_Q4_1)),
    SP_OPS(CLL_TYPE_Q5_0, "gemv_q5_0_split_w4u4_dp4a", SP_NOW, NULL, NULL, SP_G(CLL_TYPE_Q5_0)),
    SP_OPS(CLL_TYPE_IQ4_NL, "gemv_iq4_nl_split_w4u4_dp4a", SP_NOW, NULL, NULL, SP_G(CLL_TYPE_IQ4_NL)),
    SP_OPS(CLL_TYPE_Q2_K, "gemv_q2_K_split_w4u4_dp4a", SP_NOW, NULL, NULL, SP_G(CLL_TYPE_Q2_K)),
};

const cll_cu_sp_ops *cll_cu_sp_ops_get(uint32_t type) {
    for (size_t i = 0; i < sizeof k_sp_ops / sizeof k_sp_ops[0]; i++)
        if (k_sp_ops[i].type == type) return &k_sp_ops[i];
    return NULL;
}

/* whether row fn of the split type of w runs the w4r2pre body (k_gemv_sp<SP_PRE_U, SP_MIN_BLOCKS, R = 2, ONE>;
 * Q8_0's runs at 4 blocks an SM, so it is not k_gemv_sp2's) on
 * this one-token shape: its w4r2pre / w4r2pre1w row where that launches ONE, or its w4r2ks4 row where the
 * rows are too short to split and the type's base form is one of those two (cll_cu_sp_base 14 / 15) */
static bool sp_runs_pre(cll_cu_gemv_fn fn, const cll_cu_weight *w) {
    const cll_cu_sp_ops *o = cll_cu_sp_ops_get(w->type);
    if (!fn || !o || w->type == CLL_TYPE_Q8_0 || w->layout != CLL_CU_LAYOUT_SPLIT || w->n_mat != 1) return false;
    const int64_t ng = w->cols / 32;
    int pre = 0;
    if (fn == o->gemv_r2pre) pre = 1;
    else if (fn == o->gemv_r2pre1w) pre = 2;
    else if (fn == o->gemv_r2ks4 && !cll_cu_sp_ks(ng, SP_KS, SP_KS_U, false))
        pre = cll_cu_sp_base(w->type) == 14 ? 1 : cll_cu_sp_base(w->type) == 15 ? 2 : 0;
    return pre && cll_cu_sp_pre(pre, ng, w->rows, 1, SP_PRE_U, SP_MIN_BLOCKS, cll_cu_sm_count(), false);
}

bool cll_cu_resid_poll_ok(cll_cu_gemv_fn fn, const cll_cu_weight *w) {
    if (!fn || w->n_mat != 1 || !cll_cu_resid_poll_rows(w->rows)) return false;
    const cll_cu_fmt_ops *fo = cll_cu_fmt_float(w->type); /* the float rows' gemv (k_gemv_f; its gate|up pair aside) */
    if (fo) return w->layout == 0 && fn == fo->gemv;
    const cll_cu_sp_ops *o = cll_cu_sp_ops_get(w->type);
    if (!o || w->layout != CLL_CU_LAYOUT_SPLIT) return false;
    /* k_gemv_sp's launchers (the staging rows k_gemv_spx refuse it); w4r2ks4: k_gemv_spk or its base form */
    for (cll_cu_gemv_fn f : {o->gemv, o->gemv_u2, o->gemv_u2b8, o->gemv_u1b8, o->gemv_u4b6, o->gemv_r2g, o->gemv_r2u1g,
                             o->gemv_r2pre, o->gemv_r2pre1w, o->gemv_r2ks4})
        if (f == fn) return true;
    return false;
}

bool cll_cu_acts_out_ok(cll_cu_gemv_fn fn, const cll_cu_weight *w) {
    const cll_cu_sp_ops *o = cll_cu_sp_ops_get(w->type);
    if (!o || w->layout != CLL_CU_LAYOUT_SPLIT) return true;
    return !(fn == o->gemv_r2ks4 && cll_cu_sp_ks(w->cols / 32, SP_KS, SP_KS_U, false));
}

template <class S1, class S2>
static cudaError_t sp_pair_launch(const cll_cu_weight *w1, float *y1, const cll_cu_weight *w2, float *y2,
                                  const cll_cu_gemv_args *a, cudaStream_t st) {
    const int64_t nb1 = cll_cdiv(w1->rows, 2 * SP_WARPS), nb2 = cll_cdiv(w2->rows, 2 * SP_WARPS);
    return cll_cu_launch(k_gemv_sp2<S1, S2>, dim3((unsigned)(nb1 + nb2)), dim3(SP_WARPS * 32), 0, st, w1->d, w1->rows,
                         w1->cols / 32, (int64_t)w1->row_stride, y1, nb1, w2->d, w2->rows, w2->cols / 32,
                         (int64_t)w2->row_stride, y2, (const cll_block_q8_1 *)a->xq, cll_cu_gemv_early_trigger(),
                         a->pf_next, a->pf_bytes);
}

/* the type pairs of the q|k|v products of llama.cpp's mixes (q|k type, then v type): Q4_K_M and Q3_K_M
 * (Q4_K, Q6_K and Q5_K v), Q5_K_M (Q5_K, Q6_K), IQ3_S / IQ3_M (IQ3_S, Q4_K) */
#define SP_PAIRS(X)                                                                                          \
    X(Q4_K, Q6_K) X(Q4_K, Q5_K) X(Q5_K, Q6_K) X(IQ3_S, Q4_K)
cudaError_t cll_cu_gemv_pair(cll_cu_gemv_fn f1, const cll_cu_weight *w1, float *y1, cll_cu_gemv_fn f2,
                             const cll_cu_weight *w2, float *y2, const cll_cu_gemv_args *a, cudaStream_t st) {
    if (!a || a->nb != 1 || a->mat_ids || a->route.logits || a->epi.on || a->act_in.gu || !a->xq ||
        w1->cols != w2->cols || !sp_runs_pre(f1, w1) || !sp_runs_pre(f2, w2))
        return cudaErrorNotSupported;
#define SP_PAIR(A, B)                                                                                        \
    if (w1->type == CLL_TYPE_##A && w2->type == CLL_TYPE_##B)                                               \
        return sp_pair_launch<CuSp<CLL_TYPE_##A>, CuSp<CLL_TYPE_##B>>(w1, y1, w2, y2, a, st);
    SP_PAIRS(SP_PAIR)
#undef SP_PAIR
    return cudaErrorNotSupported;
}
