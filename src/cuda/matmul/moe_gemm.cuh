/* cuda/matmul/moe_gemm: the grouped MoE prefill product (cll_cu_moe_args, matmul.cuh): every
 * expert's slots in ONE launch, each weight tile dequantized into shared memory (never a
 * panel in global memory) and multiplied on tensor cores (WMMA f16 x f16 -> f32).
 *
 * k_moe_gemm<D> launch geometry: 128 threads (4 warps), grid (ceil(rows/64), tiles). A block
 * owns one tile (CLL_CU_MOE_BN = 64 slots of one expert; found by a binary search of toff,
 * blocks past toff[n_expert] exit) times 64 weight rows, and walks K in steps of 64: each
 * thread dequantizes one 32-element group of one weight row (D::deq, the bit-exact element
 * decoder of the format and layout) and converts 32 activations of one slot to f16 (float4
 * loads: ldx % 4 == 0 and x 16-byte aligned, checked at launch); each warp
 * then runs 2 x 2 16x16x16 fragments (a 32 x 32 corner of the 64 x 64 tile) per 16 of K.
 * The fp32 tile goes through shared memory (column-major: slot-major) so the store of a slot's
 * 64 outputs is contiguous. Shared memory 36.3 KB static (rows padded by 8 halves / 4 floats).
 * Numerics: the dense prefill's (f16 weight, f16 activation, fp32 accumulate); each output
 * depends only on its own weight row and slot row, not on which tile or lane computed it.
 * Owns nothing. Rule: included by the family files that export a format's moe entry. */
#ifndef CLL_CUDA_MATMUL_MOE_GEMM_CUH
#define CLL_CUDA_MATMUL_MOE_GEMM_CUH

#include <cuda_fp16.h>
#include <mma.h>

#include "cuda/common.cuh"
#include "cuda/matmul/matmul.cuh"

#define CLL_MOE_BM 64
#define CLL_MOE_BK 64
#define CLL_MOE_LD (CLL_MOE_BK + 8)  /* halves per staged row */
#define CLL_MOE_LDC (CLL_MOE_BM + 4) /* floats per staged slot */

/* element decoders over a whole row: layout 0 (file blocks) and the split layout; stage32:
 * group g of a row -> 32 halves at dst (16-byte aligned) */
template <class F> struct CuMoeRowL0 {
    static __device__ __forceinline__ float deq(const uint8_t *row, int64_t cols, int64_t e) {
        (void)cols;
        return F::deq(row + (e / F::QK) * F::BB, (int)(e % F::QK));
    }
    static __device__ __forceinline__ void stage32(const uint8_t *row, int64_t cols, int64_t g, __half *dst) {
        float v[32];
#pragma unroll
        for (int j = 0; j < 32; j++) v[j] = deq(row, cols, (g << 5) + j);
        cll_store32_half(v, false, dst);
    }
};
template <class S> struct CuMoeRowSp {
    static __device__ __forceinline__ float deq(const uint8_t *row, int64_t cols, int64_t e) {
        return S::deq(row, cols / 32, e);
    }
    /* the group decoder (S::deq32: the quants in one load, the scales once; the floats deq gives):
     * per element, Q4_K's grouped product ran 10x slower than on its f16 panel (H100, q3moe) */
    static __device__ __forceinline__ void stage32(const uint8_t *row, int64_t cols, int64_t g, __half *dst) {
        float v[32];
        S::deq32(row, cols / 32, g, v);
        cll_store32_half(v, false, dst);
    }
};

/* the tile yt of a grouped launch: expert *e (the one whose tiles [toff[e], toff[e+1]) hold yt;
 * -1 past the last tile), its first sorted slot *t0 and its slot count *nt (<= CLL_CU_MOE_BN) */
static __device__ __forceinline__ void cll_moe_tile(int32_t yt, const int32_t *off, const int32_t *toff, int32_t n_expert,
                                                    int32_t *e, int32_t *t0, int32_t *nt) {
    *e = -1;
    *t0 = 0;
    *nt = 0;
    if (yt >= toff[n_expert]) return;
    int lo = 0, hi = n_expert;
    while (hi - lo > 1) {
        const int mid = (lo + hi) >> 1;
        if (toff[mid] <= yt) lo = mid;
        else hi = mid;
    }
    *e = lo;
    *t0 = off[lo] + (yt - toff[lo]) * CLL_CU_MOE_BN;
    *nt = min(CLL_CU_MOE_BN, off[lo + 1] - *t0);
}

/* a warp's 32 x 32 output tile += A rows [wr, wr+32) . B rows [wc, wc+32)^T over BK staged columns
 * (f16 in shared memory, LD halves per row; 2 x 2 WMMA 16x16x16 fragments, f32 accumulate): the
 * inner step of both grouped kernels */
template <int BK, int LD>
static __device__ __forceinline__ void cll_moe_mma32(
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> (&acc)[2][2], const __half *a, const __half *b, int wr, int wc) {
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
        nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __half, nvcuda::wmma::row_major> fa[2];
        nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, __half, nvcuda::wmma::col_major> fb[2];
#pragma unroll
        for (int i = 0; i < 2; i++) nvcuda::wmma::load_matrix_sync(fa[i], a + (wr + 16 * i) * LD + kk, LD);
#pragma unroll
        for (int j = 0; j < 2; j++) nvcuda::wmma::load_matrix_sync(fb[j], b + (wc + 16 * j) * LD + kk, LD);
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < 2; j++) nvcuda::wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
}

template <class D>
__global__ void __launch_bounds__(128) k_moe_gemm(const uint8_t *__restrict__ W, size_t mat_stride, size_t row_stride,
                                                  int32_t rows, int32_t cols, const float *__restrict__ x, int64_t ldx,
                                                  int32_t x_div, const int32_t *__restrict__ ids,
                                                  const int32_t *__restrict__ off, const int32_t *__restrict__ toff,
                                                  int32_t n_expert, int32_t tile0, float *__restrict__ y, int64_t ldy) {
    using namespace nvcuda;
    constexpr int BN = CLL_CU_MOE_BN;
    __shared__ __align__(128) __half ws[CLL_MOE_BM * CLL_MOE_LD];
    __shared__ __align__(128) __half xs[BN * CLL_MOE_LD];
    __shared__ __align__(128) float cs[BN * CLL_MOE_LDC];
    __shared__ int32_t sid[BN];
    __shared__ int32_t s_e, s_t0, s_nt;
    const int tid = threadIdx.x;
    if (tid == 0) cll_moe_tile(tile0 + (int32_t)blockIdx.y, off, toff, n_expert, &s_e, &s_t0, &s_nt);
    __syncthreads();
    const int e = s_e, nt = s_nt;
    if (e < 0 || nt <= 0) return;
    if (tid < BN) sid[tid] = tid < nt ? ids[s_t0 + tid] : -1;
    __syncthreads();
    const int32_t r0 = (int32_t)blockIdx.x * CLL_MOE_BM;
    const int warp = tid >> 5, wr = (warp >> 1) * 32, wc = (warp & 1) * 32;
    /* staging roles: row / slot lr, columns lc .. lc+31 of the K step */
    const int lr = tid >> 1, lc = (tid & 1) * 32;
    const int32_t gr = r0 + lr;
    const uint8_t *wrow = W + (size_t)e * mat_stride + (size_t)(gr < rows ? gr : 0) * row_stride;
    const int32_t xid = sid[lr];
    const float *xrow = xid >= 0 ? x + (int64_t)(xid / x_div) * ldx : NULL;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);
    for (int32_t k0 = 0; k0 < cols; k0 += CLL_MOE_BK) {
        /* cols % 32 == 0: a 32-element group is all in or all out; the group fixed and the element
         * a constant, the decoder's block and scale reads fold into one set per group */
        const int32_t c0 = k0 + lc;
        const int64_t g = c0 >> 5;
        float v[32];
        if (gr < rows && c0 < cols) {
            D::stage32(wrow, cols, g, ws + lr * CLL_MOE_LD + lc);
        } else {
#pragma unroll
            for (int j = 0; j < 32; j++) v[j] = 0.0f;
            cll_store32_half(v, false, ws + lr * CLL_MOE_LD + lc);
        }
        if (xrow && c0 < cols) {
            const float4 *x4 = (const float4 *)(xrow + c0);
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const float4 q = __ldg(x4 + j);
                v[4 * j] = q.x;
                v[4 * j + 1] = q.y;
                v[4 * j + 2] = q.z;
                v[4 * j + 3] = q.w;
            }
        } else {
#pragma unroll
            for (int j = 0; j < 32; j++) v[j] = 0.0f;
        }
        cll_store32_half(v, false, xs + lr * CLL_MOE_LD + lc);
        __syncthreads();
        cll_moe_mma32<CLL_MOE_BK, CLL_MOE_LD>(acc, ws, xs, wr, wc);
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(cs + (wc + 16 * j) * CLL_MOE_LDC + wr + 16 * i, acc[i][j], CLL_MOE_LDC,
                                    wmma::mem_col_major);
    __syncthreads();
    for (int i = tid; i < BN * CLL_MOE_BM; i += 128) {
        const int t = i / CLL_MOE_BM, r = i % CLL_MOE_BM;
        if (t < nt && r0 + r < rows) y[(int64_t)sid[t] * ldy + r0 + r] = cs[t * CLL_MOE_LDC + r];
    }
}

#ifdef CLL_CU_MOE_F16 /* defined by the one file that exports it (gemv_float.cu) */
/* ---- the f16 form (moe_f16_wmma_f16): both operands f16 with K contiguous, so the tiles
 * stream through a two-stage cp.async pipeline (16-byte zero-filling copies) with nothing to
 * decode: weight rows (an F16 file or the resident panel) and the slots' activation rows
 * gathered once in sorted order (k_moe_gather_f16). Block: 256 threads (8 warps, 4 x 2 over a
 * 128-row x 64-slot tile, 2 x 2 WMMA fragments each), K step 32; shared memory 33.8 KB (the
 * stages, then the fp32 tile, share one buffer). */
#define CLL_MOE16_BM 128
#define CLL_MOE16_BK 32
#define CLL_MOE16_LD (CLL_MOE16_BK + 8)
#define CLL_MOE16_LDC (CLL_MOE16_BM + 4)

__global__ static void k_moe_gather_f16(const float *__restrict__ x, int64_t ldx, int32_t x_div,
                                        const int32_t *__restrict__ ids, const int32_t *__restrict__ placed, int32_t cols,
                                        __half *__restrict__ xh) {
    const int64_t j = blockIdx.x; /* sorted position */
    if (j >= *placed) return; /* the slots another tensor-parallel rank serves were left out of the sort */
    const float *xr = x + (int64_t)(ids[j] / x_div) * ldx;
    __half2 *d = (__half2 *)(xh + j * cols);
    for (int c = 2 * threadIdx.x; c < cols; c += 2 * blockDim.x) d[c / 2] = __floats2half2_rn(xr[c], xr[c + 1]);
}

static __device__ __forceinline__ void moe_cp16(void *smem, const void *gmem, bool ok) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(ok ? 16 : 0));
}

__global__ static void __launch_bounds__(256) k_moe_gemm_f16(const uint8_t *__restrict__ W, size_t mat_stride, size_t row_stride,
                                                      int32_t rows, int32_t cols, const __half *__restrict__ xh,
                                                      const int32_t *__restrict__ ids, const int32_t *__restrict__ off,
                                                      const int32_t *__restrict__ toff, int32_t n_expert, int32_t tile0,
                                                      float *__restrict__ y, int64_t ldy) {
    using namespace nvcuda;
    constexpr int BN = CLL_CU_MOE_BN, BM = CLL_MOE16_BM, BK = CLL_MOE16_BK, LD = CLL_MOE16_LD, LDC = CLL_MOE16_LDC;
    constexpr int A_ST = BM * LD, B_ST = BN * LD; /* halves per stage */
    constexpr size_t PIPE = (size_t)2 * (A_ST + B_ST) * 2, CT = (size_t)BN * LDC * 4;
    __shared__ __align__(128) unsigned char smem[PIPE > CT ? PIPE : CT];
    __shared__ int32_t sid[BN];
    __shared__ int32_t s_e, s_t0, s_nt;
    __half *as = (__half *)smem, *bs = as + 2 * A_ST;
    float *cs = (float *)smem;
    const int tid = threadIdx.x;
    if (tid == 0) cll_moe_tile(tile0 + (int32_t)blockIdx.y, off, toff, n_expert, &s_e, &s_t0, &s_nt);
    __syncthreads();
    const int e = s_e, nt = s_nt, t0 = s_t0;
    if (e < 0 || nt <= 0) return;
    if (tid < BN) sid[tid] = tid < nt ? ids[t0 + tid] : -1;
    const int32_t r0 = (int32_t)blockIdx.x * BM;
    const uint8_t *We = W + (size_t)e * mat_stride;
    /* copy roles: A 128 rows x 4 chunks (2 per thread), B 64 slots x 4 chunks (1 per thread) */
    const int ar = tid >> 2, ac = (tid & 3) * 8;
    const bool aok0 = r0 + ar < rows, aok1 = r0 + ar + 64 < rows, bok = ar < nt;
    const uint8_t *ag0 = We + (size_t)(aok0 ? r0 + ar : 0) * row_stride;
    const uint8_t *ag1 = We + (size_t)(aok1 ? r0 + ar + 64 : 0) * row_stride;
    const __half *bg = xh + (int64_t)(bok ? t0 + ar : 0) * cols;
    auto load = [&](int st, int32_t k0) {
        moe_cp16(as + st * A_ST + ar * LD + ac, ag0 + (size_t)(k0 + ac) * 2, aok0);
        moe_cp16(as + st * A_ST + (ar + 64) * LD + ac, ag1 + (size_t)(k0 + ac) * 2, aok1);
        moe_cp16(bs + st * B_ST + ar * LD + ac, bg + k0 + ac, bok);
        asm volatile("cp.async.commit_group;\n" ::);
    };
    const int warp = tid >> 5, wr = (warp >> 1) * 32, wc = (warp & 1) * 32;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);
    const int nk = cols / BK;
    load(0, 0);
    for (int k = 0; k < nk; k++) {
        const int st = k & 1;
        if (k + 1 < nk) {
            load(st ^ 1, (k + 1) * BK);
            asm volatile("cp.async.wait_group 1;\n" ::);
        } else {
            asm volatile("cp.async.wait_group 0;\n" ::);
        }
        __syncthreads();
        const __half *a = as + st * A_ST, *b = bs + st * B_ST;
        cll_moe_mma32<BK, LD>(acc, a, b, wr, wc);
        __syncthreads(); /* the stage is free for the load two steps on (and, last, for cs) */
    }
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(cs + (wc + 16 * j) * LDC + wr + 16 * i, acc[i][j], LDC, wmma::mem_col_major);
    __syncthreads();
    for (int i = tid; i < BN * BM; i += 256) {
        const int t = i / BM, r = i % BM;
        if (t < nt && r0 + r < rows) y[(int64_t)sid[t] * ldy + r0 + r] = cs[t * LDC + r];
    }
}

static cudaError_t cu_moe_f16_launch(const cll_cu_weight *w, const cll_cu_moe_args *a, cudaStream_t st) {
    if (a->max_tiles <= 0 || a->n_slots <= 0) return cudaSuccess;
    if (w->type != CLL_TYPE_F16 || w->rows > INT32_MAX / 2 || w->cols > INT32_MAX / 2 || w->cols % 32 ||
        w->row_stride % 16 || a->x_div < 1 || a->n_expert < 1 || a->n_expert > w->n_mat || a->ldy < w->rows ||
        a->max_tiles > INT32_MAX / 2 || !a->xh || a->xh_bytes < (size_t)a->n_slots * (size_t)w->cols * 2 ||
        a->n_slots > INT32_MAX)
        return cudaErrorInvalidValue;
    k_moe_gather_f16<<<(unsigned)a->n_slots, 128, 0, st>>>(a->x, a->ldx, a->x_div, a->ids, a->off + a->n_expert,
                                                            (int32_t)w->cols, (__half *)a->xh);
    CLL_CU_RET(cudaGetLastError());
    for (int64_t t0 = 0; t0 < a->max_tiles; t0 += 65535) {
        const int64_t nt = a->max_tiles - t0 < 65535 ? a->max_tiles - t0 : 65535;
        const dim3 grid((unsigned)cll_cdiv(w->rows, CLL_MOE16_BM), (unsigned)nt);
        k_moe_gemm_f16<<<grid, 256, 0, st>>>(w->d, w->mat_stride, w->row_stride, (int32_t)w->rows, (int32_t)w->cols,
                                             (const __half *)a->xh, a->ids, a->off, a->toff, a->n_expert, (int32_t)t0,
                                             a->y, a->ldy);
        CLL_CU_RET(cudaGetLastError());
    }
    return cudaSuccess;
}
#endif

template <class D> static cudaError_t cu_moe_launch(const cll_cu_weight *w, const cll_cu_moe_args *a, cudaStream_t st) {
    if (a->max_tiles <= 0) return cudaSuccess;
    if (w->rows > INT32_MAX / 2 || w->cols > INT32_MAX / 2 || a->x_div < 1 || a->n_expert < 1 || a->n_expert > w->n_mat ||
        a->ldy < w->rows || a->max_tiles > INT32_MAX / 2 || w->cols % 32 || a->ldx % 4 || ((uintptr_t)a->x & 15))
        return cudaErrorInvalidValue;
    for (int64_t t0 = 0; t0 < a->max_tiles; t0 += 65535) { /* grid.y <= 65535 */
        const int64_t nt = a->max_tiles - t0 < 65535 ? a->max_tiles - t0 : 65535;
        const dim3 grid((unsigned)cll_cdiv(w->rows, CLL_MOE_BM), (unsigned)nt);
        k_moe_gemm<D><<<grid, 128, 0, st>>>(w->d, w->mat_stride, w->row_stride, (int32_t)w->rows, (int32_t)w->cols, a->x,
                                            a->ldx, a->x_div, a->ids, a->off, a->toff, a->n_expert, (int32_t)t0, a->y,
                                            a->ldy);
        CLL_CU_RET(cudaGetLastError());
    }
    return cudaSuccess;
}

#endif
