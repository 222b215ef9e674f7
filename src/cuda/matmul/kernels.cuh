/* cuda/matmul/kernels: the kernel templates every format family instantiates (gemv_*.cu):
 *  - k_gemv_q8<F, WARPS>: block formats x q8_1 activations (the decode hot path);
 *  - k_get_rows<F>, k_panel<F>: element dequantizers for the embedding lookup and the f16/bf16
 *    gemm panel (correctness first; the panel form is the next speed issue).
 * Owns nothing. Rule: one weight byte is read once per product; outputs are written by exactly
 * one lane each (no atomics), so a NaN-poisoned output that stays NaN was never written.
 *
 * gemv launch geometry (k_gemv_q8): block = WARPS(4) warps, one output row per warp;
 * grid = (ceil(rows / 4), nb). A warp streams its row through a private double-buffered
 * shared-memory stage with cp.async.cg 16-byte copies (L1 bypassed: weights are read once):
 * stage = SB blocks, SB*BB a multiple of 16 and ~2 KB (Q4_0: 112 blocks = 2016 B, ~4 copies of
 * 16 B in flight per lane per stage, 2 stages = 8), so 4 warps x 2 x ~2 KB = ~16 KB smem per
 * block. While stage s+1 is in flight, the warp decodes stage s: 4 lanes per 32-element group
 * (8 groups per pass), activations read as int32 words of q8_1 straight from global (L1 hits:
 * every warp of the SM reads the same activation row). Register budget: < 64 per thread
 * (checked with -Xptxas -v: no spills, no local memory), so >= 8 blocks (32 warps) per SM.
 * Programmatic dependent launch: the first stage's copies are issued before the wait. Row tails: the last stage copies its bytes rounded up to 16, which stays inside the row's
 * padding (row_stride is a multiple of 16) and is never decoded. */
#ifndef CLL_CUDA_MATMUL_KERNELS_CUH
#define CLL_CUDA_MATMUL_KERNELS_CUH

#include <stdlib.h>

#include "cuda/formats.cuh"
#include "cuda/matmul/matmul.cuh"
#include "cuda/matmul/matmul_internal.cuh"
#include "cuda/matmul/epilogue.cuh"
#include "cuda/matmul/moe_gemm.cuh"

#define CLL_GEMV_WARPS 4

#define CLL_GEMV_STAGE_TARGET 2048

static __device__ __forceinline__ void cu_cp16(void *smem, const void *gmem) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
static __device__ __forceinline__ void cu_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> static __device__ __forceinline__ void cu_cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

/* stage geometry of a format: smallest block count whose bytes are a multiple of 16 (and, for
 * 32-element blocks, a multiple of 8 blocks so every pass of 8 groups is full), times k ~ 2 KB */
template <class F> struct CuStage {
    static constexpr int gcd16(int a) { return (a % 16 == 0) ? 16 : (a % 8 == 0) ? 8 : (a % 4 == 0) ? 4 : (a % 2 == 0) ? 2 : 1; }
    static constexpr int U0 = 16 / gcd16(F::BB);
    static constexpr int U = (F::GPB == 1 && U0 < 8) ? 8 : U0;
    static constexpr int K = (CLL_GEMV_STAGE_TARGET / (U * F::BB)) > 0 ? (CLL_GEMV_STAGE_TARGET / (U * F::BB)) : 1;
    static constexpr int SB = U * K;          /* blocks per stage */
    static constexpr int BYTES = SB * F::BB;  /* multiple of 16 */
};

template <class F, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
k_gemv_q8(const uint8_t *__restrict__ W, int64_t rows, int64_t nblk, int64_t row_stride, int64_t mat_stride, int64_t n_mat,
          const int32_t *__restrict__ mat_ids, const cll_block_q8_1 *__restrict__ xq, int64_t xq_stride,
          float *__restrict__ y, int64_t y_stride, int early, const void *pfn, size_t pfb, const cll_cu_resid_epi epi) {
    typedef CuStage<F> S;
    __shared__ __align__(16) uint8_t stage[WARPS][2][S::BYTES];
    if (early) cll_pdl_trigger(); /* the next kernel may launch now */
    double epi_acc = 0.0; /* the fused residual tail: this thread's squares */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t row = (int64_t)blockIdx.x * WARPS + warp;
    const int b = blockIdx.y;
    if (row >= rows) { /* warp-uniform; no block-wide barriers below but the tail's */
        cll_pdl_wait();
        if (epi.on) cll_epi_finish(epi, rows, epi_acc);
        return;
    }
    int64_t mat = 0;
    if (mat_ids) {
        cll_pdl_wait(); /* the router wrote the ids */
        mat = mat_ids[b];
        if (mat < 0 || mat >= n_mat) { /* bad router output: a defined zero, never a fault */
            if (lane == 0) y[b * y_stride + row] = 0.0f;
            return;
        }
    }
    const uint8_t *wr = W + mat * mat_stride + row * row_stride;
    const cll_block_q8_1 *xb = xq + b * xq_stride;
    const int64_t nst = (nblk + S::SB - 1) / S::SB;

    auto issue = [&](int64_t s) {
        const int64_t nb = min((int64_t)S::SB, nblk - s * S::SB);
        const int nch = (int)((nb * F::BB + 15) >> 4);
        const uint8_t *src = wr + s * S::BYTES;
        uint8_t *dst = stage[warp][s & 1];
        for (int c = lane; c < nch; c += 32) cu_cp16(dst + 16 * c, src + 16 * c);
        cu_cp_commit();
    };

    const int gl = lane >> 2, j = lane & 3;
    float acc = 0.0f;
    issue(0);                       /* weights: depend on no kernel */
    if (!mat_ids) cll_pdl_wait(); /* the activation's producer */
    for (int64_t s = 0; s < nst; s++) {
        if (s + 1 < nst) {
            issue(s + 1);
            cu_cp_wait<1>();
        } else {
            cu_cp_wait<0>();
        }
        __syncwarp();
        const uint8_t *sb = stage[warp][s & 1];
        const int64_t g0 = s * S::SB * F::GPB; /* first 32-group of the stage in the row */
        const int ng = (int)(min((int64_t)S::SB, nblk - s * S::SB) * F::GPB);
#pragma unroll 4
        for (int gi = gl; gi < ng; gi += 8) {
            const int bi = gi / F::GPB, g = gi % F::GPB;
            const cll_block_q8_1 *xa = xb + g0 + gi;
            const int *xqs = (const int *)xa->qs;
            const int y0 = __ldg(xqs + j), y1 = __ldg(xqs + 4 + j);
            const float2 ds = __half22float2(__ldg((const __half2 *)xa));
            acc += F::dot(sb + bi * F::BB, g, j, y0, y1, ds.x, ds.y);
        }
        __syncwarp();
    }
    acc = cll_warp_sum(acc);
    if (lane == 0) {
        y[b * y_stride + row] = acc;
        if (epi.on) epi_acc += cll_epi_row(epi, row, acc);
    }
    cll_l2_prefetch_next(pfn, pfb);
    if (epi.on) cll_epi_finish(epi, rows, epi_acc);
}

template <class F>
static cudaError_t cu_gemv_q8_launch(const cll_cu_weight *w, const cll_cu_gemv_args *a, cudaStream_t st) {
    if (!a->xq || a->nb <= 0 || a->nb > 65535 || w->cols % F::QK) return cudaErrorInvalidValue;
    const dim3 grid((unsigned)cll_cdiv(w->rows, CLL_GEMV_WARPS), (unsigned)a->nb);
    if (a->epi.on && (a->nb != 1 || grid.x > CLL_CU_EPI_MAX_BLOCKS)) return cudaErrorInvalidValue;
    if (a->epi.on && a->epi.slot) return cudaErrorNotSupported; /* the polled tail: the split rows only */
    CLL_CU_RET(cll_cu_launch(k_gemv_q8<F, CLL_GEMV_WARPS>, grid, dim3(CLL_GEMV_WARPS * 32), 0, st, w->d, w->rows,
                             w->cols / F::QK, (int64_t)w->row_stride, (int64_t)w->mat_stride, w->n_mat, a->mat_ids,
                             (const cll_block_q8_1 *)a->xq, a->xq_stride, a->y, a->y_stride, cll_cu_gemv_early_trigger(), a->pf_next,
                             a->pf_bytes, a->epi));
    return cudaGetLastError();
}

/* get_rows: one thread per element; exact to_f32 (times scale unless scale == 1) */
template <class F>
__global__ void k_get_rows(const uint8_t *__restrict__ W, int64_t rows, int64_t cols, int64_t row_stride,
                           const int32_t *__restrict__ ids, float *__restrict__ out, int64_t ld_out, float scale) {
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t i = blockIdx.y;
    if (e >= cols) return;
    const int64_t r = ids[i];
    float v = NAN; /* an id outside the matrix reads as NaN: visible, never a fault */
    if (r >= 0 && r < rows) {
        v = F::deq(W + r * row_stride + (e / F::QK) * F::BB, (int)(e % F::QK));
        if (scale != 1.0f) v = __fmul_rn(v, scale);
    }
    out[i * ld_out + e] = v;
}

template <class F>
static cudaError_t cu_get_rows_launch(const cll_cu_weight *w, const int32_t *ids, int64_t n, float *out, int64_t ld_out,
                                      float scale, cudaStream_t st) {
    for (int64_t i0 = 0; i0 < n; i0 += 65535) { /* grid.y <= 65535 ids per launch */
        const int64_t ni = n - i0 < 65535 ? n - i0 : 65535;
        const dim3 grid((unsigned)cll_cdiv(w->cols, 256), (unsigned)ni);
        k_get_rows<F><<<grid, 256, 0, st>>>(w->d, w->rows, w->cols, (int64_t)w->row_stride, ids + i0, out + i0 * ld_out,
                                            ld_out, scale);
        CLL_CU_RET(cudaGetLastError());
    }
    return cudaSuccess;
}

/* panel: rows [r0, r0+nr) of matrix W (already offset to the matrix) -> f16 or bf16 (nr x cols).
 * One thread per 32-element group: the element decoder runs 32 times with the group fixed and
 * the element a compile-time constant (the block and scale reads fold into one set per group),
 * the group's 64 bytes leave in four 16-byte stores. 128-thread blocks, grid (ceil(cols/4096), nr). */
template <class F, bool BF>
__global__ void k_panel(const uint8_t *__restrict__ W, int64_t cols, int64_t row_stride, int64_t r0, uint16_t *__restrict__ panel) {
    const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t r = blockIdx.y;
    if (g >= cols / 32) return;
    const uint8_t *row = W + (r0 + r) * row_stride;
    float v[32];
#pragma unroll
    for (int j = 0; j < 32; j++) v[j] = CuMoeRowL0<F>::deq(row, cols, (g << 5) + j);
    cll_store32_half(v, BF, panel + r * cols + (g << 5));
}

template <class F>
static cudaError_t cu_panel_launch(const cll_cu_weight *w, int64_t mat, int64_t r0, int64_t nr, void *panel, bool bf16,
                                   cudaStream_t st) {
    if (w->cols % 32) return cudaErrorInvalidValue;
    const dim3 grid((unsigned)cll_cdiv(w->cols / 32, 128), (unsigned)nr);
    const uint8_t *W = w->d + mat * w->mat_stride;
    if (bf16)
        k_panel<F, true><<<grid, 128, 0, st>>>(W, w->cols, (int64_t)w->row_stride, r0, (uint16_t *)panel);
    else
        k_panel<F, false><<<grid, 128, 0, st>>>(W, w->cols, (int64_t)w->row_stride, r0, (uint16_t *)panel);
    return cudaGetLastError();
}

/* the ops of one format, as the family files export them */
#define CLL_CU_FMT_OPS(T, NAME)                                                                              \
    {T, cu_gemv_q8_launch<CuFmt<T>>, cu_get_rows_launch<CuFmt<T>>, cu_panel_launch<CuFmt<T>>, CuFmt<T>::BB, \
     CuFmt<T>::QK, CuStage<CuFmt<T>>::SB, NAME, cu_moe_launch<CuMoeRowL0<CuFmt<T>>>}

#endif
