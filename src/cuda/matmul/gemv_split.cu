/* cuda/matmul/gemv_split: the layout-1 ("split") rows: decode gemv (k_gemv_sp), get_rows and the
 * gemm panel over the split layout, and the host repack the upload runs (cll_cu_sp_pack_rows).
 * Launch geometry, register budget and the layout itself: see cuda/matmul/split.cuh
 * (128-thread blocks, one row per warp, grid (ceil(rows/4), nb), no shared memory, U=4 groups
 * per lane per iteration, register double buffer; programmatic dependent launch).
 * get_rows / panel: one thread per element, 256-thread blocks, grid (cols/256, ids or rows).
 * Owns nothing. Rule: deq is bit-exact with to_f32; dots are exact int sums per group (16 for Q6_K)
 * times float scales, as the layout-0 rows (the gate holds both to the same bar). */
#include <stdlib.h>

#define CLL_CU_WANT_IQ 1
#include "cuda/matmul/kernels.cuh"
#include "cuda/matmul/split.cuh"

#define SP_WARPS 4
#define SP_U 4
/* >= 5 blocks (20 warps) per SM: caps registers at 102 (Q6_K would take 107; 80 spills) */
#define SP_MIN_BLOCKS 5

template <class S, int WARPS, int U>
__global__ void __launch_bounds__(WARPS * 32, SP_MIN_BLOCKS)
k_gemv_sp(const uint8_t *__restrict__ W, int64_t rows, int64_t ng, int64_t row_stride, int64_t mat_stride, int64_t n_mat,
          const int32_t *__restrict__ mat_ids, const cll_block_q8_1 *__restrict__ xq, int64_t xq_stride,
          float *__restrict__ y, int64_t y_stride) {
    typedef typename S::Wv Wv;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t row = (int64_t)blockIdx.x * WARPS + warp;
    const int b = blockIdx.y;
    const bool live = row < rows; /* warp-uniform */
    int64_t mat = 0;
    bool bad = false;
    if (mat_ids) { /* the router wrote the ids: wait for it before choosing the matrix */
        cu_pdl_wait();
        mat = mat_ids[b];
        bad = mat < 0 || mat >= n_mat;
        if (bad) mat = 0;
    }
    const uint8_t *wr = W + mat * mat_stride + (live ? row : 0) * row_stride;
    Wv cur[U] = {};
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int64_t g = lane + 32 * u;
        if (live && g < ng) cur[u] = S::load(wr, ng, g);
    }
    if (!mat_ids) cu_pdl_wait(); /* the activation's producer */
    if (!live) return;
    if (bad) { /* bad router output: a defined zero, never a fault */
        if (lane == 0) y[b * y_stride + row] = 0.0f;
        return;
    }
    const cll_block_q8_1 *xb = xq + b * xq_stride;
    float acc = 0.0f;
    for (int64_t g0 = 0; g0 < ng; g0 += 32 * U) {
        Wv nxt[U] = {};
        const int64_t g1 = g0 + 32 * U;
        if (g1 < ng) { /* warp-uniform: the next iteration's loads go out before this one decodes */
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int64_t g = g1 + lane + 32 * u;
                if (g < ng) nxt[u] = S::load(wr, ng, g);
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t g = g0 + lane + 32 * u;
            if (g < ng) acc += S::dot(cur[u], g, sp_ldx(xb + g));
        }
#pragma unroll
        for (int u = 0; u < U; u++) cur[u] = nxt[u];
    }
    acc = cll_warp_sum(acc);
    if (lane == 0) y[b * y_stride + row] = acc;
}

template <class S>
static cudaError_t sp_gemv_launch(const cll_cu_weight *w, const cll_cu_gemv_args *a, cudaStream_t st) {
    if (!a->xq || a->nb <= 0 || a->nb > 65535 || w->cols % S::QK || w->layout != CLL_CU_LAYOUT_SPLIT)
        return cudaErrorInvalidValue;
    const dim3 grid((unsigned)cll_cdiv(w->rows, SP_WARPS), (unsigned)a->nb);
    return cu_mm_launch(k_gemv_sp<S, SP_WARPS, SP_U>, grid, dim3(SP_WARPS * 32), st, w->d, w->rows, w->cols / 32,
                        (int64_t)w->row_stride, (int64_t)w->mat_stride, w->n_mat, a->mat_ids, (const cll_block_q8_1 *)a->xq,
                        a->xq_stride, a->y, a->y_stride);
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

template <class S, bool BF>
__global__ void k_sp_panel(const uint8_t *__restrict__ W, int64_t cols, int64_t row_stride, int64_t r0,
                           uint16_t *__restrict__ panel) {
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t r = blockIdx.y;
    if (e >= cols) return;
    const float v = S::deq(W + (r0 + r) * row_stride, cols / 32, e);
    panel[r * cols + e] = BF ? __bfloat16_as_ushort(__float2bfloat16_rn(v)) : cll_f2h(v);
}

template <class S>
static cudaError_t sp_panel_launch(const cll_cu_weight *w, int64_t mat, int64_t r0, int64_t nr, void *panel, bool bf16,
                                   cudaStream_t st) {
    const dim3 grid((unsigned)cll_cdiv(w->cols, 256), (unsigned)nr);
    const uint8_t *Wm = w->d + mat * w->mat_stride;
    if (bf16)
        k_sp_panel<S, true><<<grid, 256, 0, st>>>(Wm, w->cols, (int64_t)w->row_stride, r0, (uint16_t *)panel);
    else
        k_sp_panel<S, false><<<grid, 256, 0, st>>>(Wm, w->cols, (int64_t)w->row_stride, r0, (uint16_t *)panel);
    return cudaGetLastError();
}

template <class S> static void sp_pack_rows(const uint8_t *src, uint8_t *dst, int64_t n, int64_t cols, size_t src_stride,
                                            size_t dst_stride) {
    for (int64_t r = 0; r < n; r++) S::pack(src + (size_t)r * src_stride, dst + (size_t)r * dst_stride, cols / 32);
}

#define SP_OPS(T, NAME)                                                                                        \
    {T, sp_gemv_launch<CuSp<T>>, sp_get_rows_launch<CuSp<T>>, sp_panel_launch<CuSp<T>>, sp_pack_rows<CuSp<T>>, \
     CuSp<T>::QK, NAME}
static const cll_cu_sp_ops k_sp_ops[] = {
    SP_OPS(CLL_TYPE_Q4_0, "gemv_q4_0_split_w4u4_dp4a"),   SP_OPS(CLL_TYPE_Q8_0, "gemv_q8_0_split_w4u4_dp4a"),
    SP_OPS(CLL_TYPE_Q5_1, "gemv_q5_1_split_w4u4_dp4a"),   SP_OPS(CLL_TYPE_Q4_K, "gemv_q4_K_split_w4u4_dp4a"),
    SP_OPS(CLL_TYPE_Q6_K, "gemv_q6_K_split_w4u4_dp4a"),   SP_OPS(CLL_TYPE_IQ4_XS, "gemv_iq4_xs_split_w4u4_dp4a"),
};

const cll_cu_sp_ops *cll_cu_sp_ops_get(uint32_t type) {
    for (size_t i = 0; i < sizeof k_sp_ops / sizeof k_sp_ops[0]; i++)
        if (k_sp_ops[i].type == type) return &k_sp_ops[i];
    return NULL;
}
