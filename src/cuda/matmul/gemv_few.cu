/* cuda/matmul/gemv_few: the few-token split gemv (rows gemv_<type>_split_few): one product W . x_t
 * for 2..8 activation rows (the tokens of a batched decode step: one per sequence) that reads every
 * weight byte once for all of them, instead of once per token (the n = 1 rows launched nb times) or
 * an f16 panel of twice the bytes (the prefill gemm).
 *
 * k_gemv_few<S, R, NT>: 256-thread blocks (8 warps), R = 4 rows per warp (with 8 tokens, R = 2 made
 * it LDS-bound: 24 16-byte LDS per 2 rows of 32 groups; 2 blocks of <= 128 registers per SM either
 * way, no spills), up to NT tokens per launch (nt live, the rest skipped warp-uniformly). The block
 * first issues its first weight loads (before the PDL wait), then stages the nt q8_1 activation rows
 * into dynamic shared memory as 12-word records (d|s, qs[8], the integer sums of the two halves, one
 * pad word: 48 bytes, read back as three 16-byte LDS, conflict-free: the 8 lanes of a phase hit 8
 * disjoint 4-bank quads), syncs, then streams its rows: per 32-value group a lane decodes the R
 * rows' weights once and dots them with every token's record (up to FewDecNt tokens: the records
 * in registers and SpDec's dec / dot, which S::dot is made of, so the same sums as the n = 1 rows;
 * above, S::dot per token: the compiler did not share the decode across tokens, the activation
 * read is shared across rows).
 * Split-K over ks warps (1, 2 or 4: cll_cu_few_pick_ks_log2, cuda/pick.h) as the n = 1 r2/r4 rows;
 * partial sums meet in shared memory in a fixed order (deterministic), and each row sums its groups
 * in the n = 1 rows' order, so a batched step's logits equal each sequence's alone. Persistent grid:
 * min(tiles, SMs x resident blocks) blocks walk the tiles. Tokens beyond what one launch stages
 * (CLL_CU_FEW_SMEM_MAX of records: cll_cu_few_tokens_per_launch, 5-8 on 7B/8B shapes) go to further
 * launches of equal size. Other calls (nb 1, mat_ids, the fused residual tail) go on to the type's
 * r4_pt row, which is what they are. H200 (cuda_kbench -n, the 7B shapes, weight bytes once per
 * launch, % of 4.3 TB/s): q4_0 63.0 at 2 tokens, 48.9 at 4, ~26 at 8 (compute-bound); q4_K 57.8 / 30.9;
 * q6_K 71.7 / 43.3 (the decode shared across tokens; before: q4_0 60.2 / 44.1, q4_K 44.8 / 29.3, q6_K 60.8)
 * Owns nothing. Rule: the same dots as the register rows on the same records, so the gate holds it
 * to the same bar, token by token. */
#include <stdio.h>

#include "cuda/matmul/kernels.cuh"
#include "cuda/matmul/split.cuh"
#include "cuda/pick.h"

#define FEW_WARPS CLL_CU_FEW_WARPS
#define FEW_XW CLL_CU_FEW_XW
#define FEW_SMEM_MAX CLL_CU_FEW_SMEM_MAX
#define FEW_MIN_BLOCKS 2 /* 2 x 256 threads x <= 128 registers: the register file */
/* launches of up to v tokens hold the tokens' records in registers and decode a row's group once for
 * all of them (ptxas, sm_90a: Q4_0 at 4 tokens 128 registers, no spill; the K-quants and Q8_0 spill
 * at 4, so 2) */
template <class S> struct FewDecNt {
    static constexpr int v = 2;
};
template <> struct FewDecNt<CuSp<CLL_TYPE_Q4_0>> {
    static constexpr int v = 4;
};

/* stage rows t < nt of q8_1 blocks (ng each, xq_stride blocks apart) as FEW_XW-word records */
static __device__ __forceinline__ void few_stage_x(const cll_block_q8_1 *__restrict__ xq, int64_t xq_stride, int ng,
                                                   int nt, int *sx, int tid, int nthreads) {
    for (int i = tid; i < nt * ng; i += nthreads) {
        const int t = i / ng, g = i - t * ng;
        int w[9], a, b;
        sp_ldq8_sums(xq + t * xq_stride + g, w, &a, &b);
        int4 *d = (int4 *)(sx + FEW_XW * i);
        d[0] = make_int4(w[0], w[1], w[2], w[3]);
        d[1] = make_int4(w[4], w[5], w[6], w[7]);
        d[2] = make_int4(w[8], a, b, 0);
    }
}

static __device__ __forceinline__ CuX few_ldx(const int *p) {
    const int4 a = ((const int4 *)p)[0], b = ((const int4 *)p)[1], c = ((const int4 *)p)[2];
    CuX x;
    const float2 ds = __half22float2(*(const __half2 *)&a.x);
    x.d = ds.x;
    x.s = ds.y;
    x.y[0] = a.y, x.y[1] = a.z, x.y[2] = a.w;
    x.y[3] = b.x, x.y[4] = b.y, x.y[5] = b.z, x.y[6] = b.w;
    x.y[7] = c.x;
    x.sl = c.y;
    x.sh = c.z;
    return x;
}

template <class S, int R, int NT>
__global__ void __launch_bounds__(FEW_WARPS * 32, FEW_MIN_BLOCKS)
k_gemv_few(const uint8_t *__restrict__ W, int64_t rows, int64_t ng, int64_t row_stride,
           const cll_block_q8_1 *__restrict__ xq, int64_t xq_stride, float *__restrict__ y, int64_t y_stride, int nt,
           int ks_log2, int early, const void *pfn, size_t pfb) {
    typedef typename S::Wv Wv;
    if (early) cll_pdl_trigger();
    extern __shared__ __align__(16) int sx[]; /* nt x ng records */
    __shared__ float red[FEW_WARPS][R][NT];
    SpTables<S>::stage(); /* a codebook to shared memory (no split form has one today); the staging barrier orders it */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int ks = 1 << ks_log2, kslice = warp & (ks - 1);
    const int64_t rb = (int64_t)(FEW_WARPS >> ks_log2) * R;
    const int64_t tiles = (rows + rb - 1) / rb;
    const int ngi = (int)ng;
    const int cstep = 32 * ks;
    const int gl = 32 * kslice + lane;
    bool staged = false;
    for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const int64_t row0 = tile * rb + (int64_t)(warp >> ks_log2) * R;
        const bool live = row0 < rows; /* warp-uniform */
        const uint8_t *wr[R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int64_t rr = row0 + r < rows ? row0 + r : rows - 1;
            wr[r] = W + (live ? rr : 0) * row_stride;
        }
        Wv cur[R] = {};
        if (live && gl < ngi) {
#pragma unroll
            for (int r = 0; r < R; r++) cur[r] = S::load(wr[r], ng, gl);
        }
        if (!staged) { /* the first tile's weights are in flight; now the activations */
            staged = true;
            cll_pdl_wait();
            few_stage_x(xq, xq_stride, ngi, nt, sx, threadIdx.x, FEW_WARPS * 32);
            __syncthreads();
        }
        float acc[R][NT];
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int t = 0; t < NT; t++) acc[r][t] = 0.0f;
        if (live) {
            for (int g = gl; g < ngi; g += cstep) {
                Wv nxt[R] = {};
                if (g + cstep < ngi) { /* the next group's loads go out before this one decodes */
#pragma unroll
                    for (int r = 0; r < R; r++) nxt[r] = S::load(wr[r], ng, g + cstep);
                }
                if constexpr (NT <= FewDecNt<S>::v) {
                    /* the tokens' records in registers, then each row's group decoded once for all
                     * of them (SpDec: the same sums as S::dot) */
                    CuX xs[NT];
#pragma unroll
                    for (int t = 0; t < NT; t++)
                        if (t < nt) xs[t] = few_ldx(sx + FEW_XW * (t * ngi + g));
#pragma unroll
                    for (int r = 0; r < R; r++) {
                        const typename SpDec<S>::D dd = SpDec<S>::dec(cur[r], g);
#pragma unroll
                        for (int t = 0; t < NT; t++)
                            if (t < nt) acc[r][t] += SpDec<S>::dot(dd, xs[t]);
                    }
                } else {
#pragma unroll
                    for (int t = 0; t < NT; t++) {
                        if (t < nt) {
                            const CuX x = few_ldx(sx + FEW_XW * (t * ngi + g));
#pragma unroll
                            for (int r = 0; r < R; r++) acc[r][t] += S::dot(cur[r], g, x);
                        }
                    }
                }
#pragma unroll
                for (int r = 0; r < R; r++) cur[r] = nxt[r];
            }
        }
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int t = 0; t < NT; t++) acc[r][t] = cll_warp_sum(acc[r][t]);
        if (ks == 1) {
            if (live && lane == 0) {
#pragma unroll
                for (int r = 0; r < R; r++)
                    if (row0 + r < rows) {
#pragma unroll
                        for (int t = 0; t < NT; t++)
                            if (t < nt) y[t * y_stride + row0 + r] = acc[r][t];
                    }
            }
            continue;
        }
        if (lane == 0) {
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
                for (int t = 0; t < NT; t++) red[warp][r][t] = acc[r][t];
        }
        __syncthreads();
        for (int i = threadIdx.x; i < rb * nt; i += FEW_WARPS * 32) {
            const int t = i / (int)rb, j = i - t * (int)rb, rg = j / R, r = j % R;
            const int64_t row = tile * rb + j;
            if (row < rows) {
                float v = 0.0f;
                for (int k = 0; k < ks; k++) v += red[rg * ks + k][r][t];
                y[t * y_stride + row] = v;
            }
        }
        __syncthreads(); /* red is rewritten by the next tile */
    }
    if (!staged) cll_pdl_wait(); /* a block without a tile still waits before it exits */
    cll_l2_prefetch_next(pfn, pfb);
}

template <class S, int R, int NT> static int few_blocks_per_sm(size_t smem) {
    /* opened once to the most any launch stages: the limit counts the static red[] too, so a
     * launch of exactly 48 KB of records (8 tokens x 4096 cols) is already past the default */
    static int opened[64]; /* per device */
    if (cll_cu_open_smem(opened, k_gemv_few<S, R, NT>, FEW_SMEM_MAX) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k_gemv_few<S, R, NT>, FEW_WARPS * 32, smem) != cudaSuccess) {
        cudaGetLastError();
        n = 0;
    }
    return n;
}

template <class S, int R, int NT>
static cudaError_t few_launch_one(const cll_cu_weight *w, const cll_cu_gemv_args *a, int t0, int nt, cudaStream_t st) {
    const int64_t ng = w->cols / 32;
    const size_t smem = (size_t)nt * (size_t)ng * FEW_XW * 4;
    const int bps = few_blocks_per_sm<S, R, NT>(smem);
    if (bps <= 0) return cudaErrorInvalidConfiguration;
    const int64_t slots = (int64_t)cll_cu_sm_count() * bps;
    const int l = cll_cu_few_pick_ks_log2(w->rows, ng, R, slots);
    const int64_t tiles = cll_cdiv(w->rows, (int64_t)(FEW_WARPS >> l) * R);
    const unsigned grid = (unsigned)(tiles < slots ? tiles : slots);
    const bool last = t0 + nt >= a->nb;
    return cll_cu_launch(k_gemv_few<S, R, NT>, dim3(grid), dim3(FEW_WARPS * 32), smem, st, w->d, w->rows, ng,
                         (int64_t)w->row_stride, (const cll_block_q8_1 *)a->xq + (int64_t)t0 * a->xq_stride, a->xq_stride,
                         a->y + (int64_t)t0 * a->y_stride, a->y_stride, nt, l, cll_cu_gemv_early_trigger(),
                         last ? a->pf_next : (const void *)NULL, last ? a->pf_bytes : (size_t)0);
}

template <class S>
static cudaError_t few_gemv_launch(const cll_cu_weight *w, const cll_cu_gemv_args *a, cudaStream_t st) {
    if (!a->xq || a->nb <= 0 || a->nb > 65535 || w->cols % S::QK || w->layout != CLL_CU_LAYOUT_SPLIT)
        return cudaErrorInvalidValue;
    const int per = cll_cu_few_tokens_per_launch(w->cols / 32, a->nb);
    if (a->nb == 1 || a->mat_ids || a->epi.on || per < 2 || a->xq_stride <= 0 || a->y_stride <= 0) {
        /* independent products, or a row too wide to stage two tokens: the r4_pt row */
        const cll_cu_sp_ops *o = cll_cu_sp_ops_get(w->type);
        return o ? o->gemv_r4p(w, a, st) : cudaErrorInvalidValue;
    }
    for (int t0 = 0; t0 < a->nb; t0 += per) {
        const int nt = a->nb - t0 < per ? a->nb - t0 : per;
        cudaError_t e = nt <= 2 ? few_launch_one<S, 4, 2>(w, a, t0, nt, st)
                        : nt <= 4 ? few_launch_one<S, 4, 4>(w, a, t0, nt, st)
                                  : few_launch_one<S, 4, 8>(w, a, t0, nt, st);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

cll_cu_gemv_fn cll_cu_sp_few_gemv(uint32_t type) {
    switch (type) {
    case CLL_TYPE_Q4_0: return few_gemv_launch<CuSp<CLL_TYPE_Q4_0>>;
    case CLL_TYPE_Q8_0: return few_gemv_launch<CuSp<CLL_TYPE_Q8_0>>;
    case CLL_TYPE_Q5_1: return few_gemv_launch<CuSp<CLL_TYPE_Q5_1>>;
    case CLL_TYPE_Q4_K: return few_gemv_launch<CuSp<CLL_TYPE_Q4_K>>;
    case CLL_TYPE_Q5_K: return few_gemv_launch<CuSp<CLL_TYPE_Q5_K>>;
    case CLL_TYPE_Q3_K: return few_gemv_launch<CuSp<CLL_TYPE_Q3_K>>;
    case CLL_TYPE_Q2_K: return few_gemv_launch<CuSp<CLL_TYPE_Q2_K>>;
    case CLL_TYPE_IQ4_NL: return few_gemv_launch<CuSp<CLL_TYPE_IQ4_NL>>;
    case CLL_TYPE_Q5_0: return few_gemv_launch<CuSp<CLL_TYPE_Q5_0>>;
    case CLL_TYPE_Q4_1: return few_gemv_launch<CuSp<CLL_TYPE_Q4_1>>;
    case CLL_TYPE_Q6_K: return few_gemv_launch<CuSp<CLL_TYPE_Q6_K>>;
    case CLL_TYPE_IQ4_XS: return few_gemv_launch<CuSp<CLL_TYPE_IQ4_XS>>;
    case CLL_TYPE_IQ3_S: return few_gemv_launch<CuSp<CLL_TYPE_IQ3_S>>;
    default: return NULL;
    }
}
