/* cuda/matmul/gemm: the prefill product Y (n x rows) = X (n x cols) . W[mat]^T on tensor cores.
 * Quantized weights are dequantized slab by slab into an f16 panel (slab = as many rows as fit
 * in panel_bytes, a multiple of 128 when more than 128 fit) and multiplied by cublasGemmEx
 * (f16 x f16, fp32 accumulate, fp32 out); X is converted once to f16 in xh. F16/BF16 weights are
 * read in place (X converted to f16/bf16), F32 weights run an f32 GemmEx. Panel kernels: one
 * thread per element, 256-thread blocks, grid (cols/256, slab rows). cll_cu_gemm_fused converts X
 * the same way, each 32-value group permuted as the fused rows read it (cll_cu_fused_xpos), for a
 * fused dequant-in-tile row (gemm_fused.cu: no panel, no cuBLAS). Owns nothing
 * (scratch is the caller's).
 * Rule: everything runs on the caller's stream; the panel is reused only after the GEMM that
 * read it (stream order). */
#include <cuda_bf16.h>

#include "cuda/matmul/matmul_internal.cuh"
#include "cuda/common.cuh"

/* perm: the fused rows' order (cll_cu_fused_xpos within each 32-value group; cols % 32 == 0) */
__global__ void k_x_to_half(const float *__restrict__ x, int64_t ldx, int64_t cols, int64_t total, bool bf16, bool perm,
                            uint16_t *__restrict__ xh) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    cll_pdl_wait(); /* X's producer */
    cll_pdl_trigger(); /* as the small kernels: the product after it (its weights) may launch now */
    if (i >= total) return;
    const float v = x[(i / cols) * ldx + i % cols];
    const uint16_t h = bf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(v)) : cll_f2h(v);
    xh[perm ? (i & ~(int64_t)31) + cll_cu_fused_xpos((int)(i & 31)) : i] = h;
}

/* X (n x cols, row stride ldx) to f16 / bf16 in g->xh (dense) */
static cudaError_t x_half(const cll_cu_gemm_ctx *g, const float *x, int64_t ldx, int64_t n, int64_t cols, bool bf16,
                          cudaStream_t s, bool perm = false) {
    const int64_t total = n * cols;
    /* a programmatic launch (cuda/common.cuh): a plain one drained the stream before every product of a
     * batched decode step (two per product with the fused rows) */
    return cll_cu_launch(k_x_to_half, dim3((unsigned)cll_cdiv(total, 256)), dim3(256), 0, s, x, ldx, cols, total, bf16,
                         perm, (uint16_t *)g->xh);
}

static cudaError_t blas_err(cublasStatus_t st) { return st == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown; }

/* the panel kernel of a weight's type in its layout; NULL for floats (read in place) and for a
 * layout the type lacks */
static cll_cu_panel_fn panel_of(const cll_cu_weight *w) {
    if (w->layout == CLL_CU_LAYOUT_SPLIT) {
        const cll_cu_sp_ops *sp = cll_cu_sp_ops_get(w->type);
        return sp ? sp->panel : NULL;
    }
    const cll_cu_fmt_ops *o = cll_cu_fmt_ops_get(w->type);
    return w->layout == 0 && o ? o->panel : NULL;
}

int cll_cu_gemm_x_kind(const cll_cu_weight *w) {
    return w->type == CLL_TYPE_F32 ? 0 : w->type == CLL_TYPE_BF16 ? 2 : 1;
}

cudaError_t cll_cu_gemm(const cll_cu_gemm_ctx *g, const cll_cu_weight *w, int64_t mat, const float *x, int64_t ldx,
                        int64_t n, float *y, int64_t ldy, cudaStream_t s, bool x_ready) {
    const cll_cu_fmt_ops *o = cll_cu_fmt_ops_get(w->type);
    if (w->layout != 0 && !(w->layout == CLL_CU_LAYOUT_SPLIT && cll_cu_sp_ops_get(w->type))) return cudaErrorInvalidValue;
    const cll_cu_panel_fn panel = panel_of(w);
    if (!o || mat < 0 || mat >= w->n_mat || n < 0 || ldy < w->rows) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    const int64_t rows = w->rows, cols = w->cols;
    const uint8_t *W = w->d + mat * w->mat_stride;
    const float one = 1.0f, zero = 0.0f;
    if (blas_err(cublasSetStream(g->blas, s)) != cudaSuccess) return cudaErrorUnknown;
    if (w->type == CLL_TYPE_F32)
        return blas_err(cublasGemmEx(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, (int)n, (int)cols, &one, W, CUDA_R_32F,
                                     (int)(w->row_stride / 4), x, CUDA_R_32F, (int)ldx, &zero, y, CUDA_R_32F, (int)ldy,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    const bool bf16 = w->type == CLL_TYPE_BF16;
    const cudaDataType ht = bf16 ? CUDA_R_16BF : CUDA_R_16F;
    if (!g->xh || g->xh_bytes < (size_t)(n * cols) * 2) return cudaErrorInvalidValue;
    if (!x_ready) CLL_CU_RET(x_half(g, x, ldx, n, cols, bf16, s));
    if (!panel) /* F16 / BF16: the weight is the panel */
        return blas_err(cublasGemmEx(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, (int)n, (int)cols, &one, W, ht,
                                     (int)(w->row_stride / 2), g->xh, ht, (int)cols, &zero, y, CUDA_R_32F, (int)ldy,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    int64_t slab = g->panel ? (int64_t)(g->panel_bytes / ((size_t)cols * 2)) : 0;
    if (slab < 1) return cudaErrorInvalidValue;
    if (slab > 65408) slab = 65408; /* the panel kernel's grid.y */
    if (slab > 128) slab -= slab % 128;
    if (slab > rows) slab = rows;
    for (int64_t r0 = 0; r0 < rows; r0 += slab) {
        const int64_t nr = rows - r0 < slab ? rows - r0 : slab;
        CLL_CU_RET(panel(w, mat, r0, nr, g->panel, false, s));
        CLL_CU_RET(blas_err(cublasGemmEx(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)nr, (int)n, (int)cols, &one, g->panel,
                                         CUDA_R_16F, (int)cols, g->xh, CUDA_R_16F, (int)cols, &zero, y + r0, CUDA_R_32F,
                                         (int)ldy, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)));
    }
    return cudaSuccess;
}

cudaError_t cll_cu_gemm_fused(const cll_cu_gemm_ctx *g, cll_cu_fgemm_fn f, const cll_cu_weight *w, const float *x,
                              int64_t ldx, int64_t n, float *y, int64_t ldy, const cll_cu_splitk *sk, cudaStream_t s,
                              bool x_ready) {
    if (!f || n < 0 || !g->xh || g->xh_bytes < (size_t)(n * w->cols) * 2 || w->cols % 32) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    if (!x_ready) CLL_CU_RET(x_half(g, x, ldx, n, w->cols, false, s, true));
    return f(w, g->xh, n, y, ldy, sk, s);
}

bool cll_cu_weight_has_panel(const cll_cu_weight *w) { return panel_of(w) != NULL; }

cudaError_t cll_cu_panel_full(const cll_cu_weight *w, void *dst, cudaStream_t s) {
    const cll_cu_panel_fn panel = panel_of(w);
    if (!panel || w->cols % 32) return cudaErrorInvalidValue;
    for (int64_t m = 0; m < w->n_mat; m++)
        for (int64_t r0 = 0; r0 < w->rows; r0 += 65535) { /* the panel kernel's grid.y */
            const int64_t nr = w->rows - r0 < 65535 ? w->rows - r0 : 65535;
            CLL_CU_RET(panel(w, m, r0, nr, (uint16_t *)dst + (m * w->rows + r0) * w->cols, false, s));
        }
    return cudaSuccess;
}
