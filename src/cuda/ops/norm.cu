/* cuda/ops/norm: the row-wise kernels around the products: RMSNorm + q8_1 (block input), the
 * fused block tail (MoE slot sum, post norm, residual add, next norm + q8_1), and the gated
 * activation + q8_1 (FFN down input).
 * Owns nothing. Rule: rounding as src/cpu (double-summed squares, (x*scale)*w, slot sums in
 * order, no fma contraction where the CPU has none).
 * Launch geometry: norms one block of NORM_THREADS per row (grid n); act grid (cdiv(f, 256), n)
 * x 256 threads, one warp per q8_1 block. Registers: < 40; smem: 256 B (double reduction). */
#include "cuda/ops/ops.cuh"

#define NORM_THREADS 512

/* write xn = v-row and its q8_1 form, one warp per 32 elements: val(j) gives element j */
template <typename F>
static __device__ __forceinline__ void norm_store_q8(F val, int64_t d, float *xn, cll_block_q8_1 *xq) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const int64_t nblk = (d + 31) / 32;
    for (int64_t b = warp; b < nblk; b += nw) {
        const int64_t j = b * 32 + lane;
        const float v = j < d ? val(j) : 0.0f;
        if (j < d) xn[j] = v;
        if (xq) cll_warp_q8_1(v, xq + b, lane);
    }
}

__global__ static void rmsnorm_q8_kernel(const float *x, const float *w, int64_t d, float eps, float *xn,
                                         cll_block_q8_1 *xq) {
    cll_pdl_wait();
    __shared__ double red[32];
    const int64_t r = blockIdx.x;
    const float *xr = x + r * d;
    double acc = 0.0;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
        const float v = xr[j];
        acc += (double)(v * v);
    }
    const double sum = cll_block_sum_d(acc, red);
    const float scale = 1.0f / sqrtf((float)(sum / (double)d) + eps);
    norm_store_q8([&](int64_t j) { return w ? (xr[j] * scale) * w[j] : xr[j] * scale; }, d, xn + r * d,
                  xq ? xq + r * ((d + 31) / 32) : nullptr);
}

cudaError_t cll_cu_rmsnorm_q8(const float *x, const float *w, int64_t n, int64_t d, float eps, float *xn, void *xq,
                              cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    CLL_CU_RET(cll_cu_launch(rmsnorm_q8_kernel, dim3((unsigned)n), dim3(NORM_THREADS), 0, s, x, w, d, eps, xn, (cll_block_q8_1 *)xq));
    return cudaGetLastError();
}

__global__ static void quantize_rows_q8_kernel(const float *x, int64_t ld, int64_t cols, cll_block_q8_1 *xq) {
    cll_pdl_wait();
    const int64_t r = blockIdx.y;
    const int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t nblk = (cols + 31) / 32, b = j / 32;
    if (b < nblk) cll_warp_q8_1(j < cols ? x[r * ld + j] : 0.0f, xq + r * nblk + b, threadIdx.x & 31);
}

cudaError_t cll_cu_quantize_rows_q8(const float *x, int64_t ld, int64_t n, int64_t cols, void *xq, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    dim3 grid((unsigned)cll_cdiv(cols, 256), (unsigned)n);
    CLL_CU_RET(cll_cu_launch(quantize_rows_q8_kernel, dim3(grid), dim3(256), 0, s, x, ld, cols, (cll_block_q8_1 *)xq));
    return cudaGetLastError();
}

__global__ static void resid_norm_q8_kernel(cll_cu_resid_args a, int64_t d, float eps) {
    cll_pdl_wait();
    __shared__ double red[32];
    const int64_t r = blockIdx.x;
    float *x = a.x + r * d, *t = a.t + r * d;
    const float *moe = a.moe ? a.moe + r * a.n_used * d : nullptr;
    const float *mw = a.moe ? a.moe_w + r * a.n_used : nullptr;
    double acc = 0.0;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
        float tv;
        if (moe) { /* the CPU scales each slot, then adds the slots in order */
            tv = __fmul_rn(moe[j], mw[0]);
            for (int k = 1; k < a.n_used; k++) tv = __fadd_rn(tv, __fmul_rn(moe[(int64_t)k * d + j], mw[k]));
        } else {
            tv = t[j];
        }
        if (a.post) {
            if (moe) t[j] = tv;
            acc += (double)(tv * tv);
        } else {
            const float xv = x[j] + tv;
            x[j] = xv;
            acc += (double)(xv * xv);
        }
    }
    double sum = cll_block_sum_d(acc, red);
    if (a.post) {
        const float ps = 1.0f / sqrtf((float)(sum / (double)d) + eps);
        acc = 0.0;
        for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
            const float xv = x[j] + (t[j] * ps) * a.post[j];
            x[j] = xv;
            acc += (double)(xv * xv);
        }
        sum = cll_block_sum_d(acc, red);
    }
    if (!a.next_norm) return;
    __syncthreads(); /* x rows written above are read by other warps below */
    const float scale = 1.0f / sqrtf((float)(sum / (double)d) + eps);
    const float *w = a.next;
    norm_store_q8([&](int64_t j) { return w ? (x[j] * scale) * w[j] : x[j] * scale; }, d, a.xn + r * d,
                  a.xq ? (cll_block_q8_1 *)a.xq + r * ((d + 31) / 32) : nullptr);
}

cudaError_t cll_cu_resid_norm_q8(const cll_cu_resid_args *a, int64_t n, int64_t d, float eps, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    CLL_CU_RET(cll_cu_launch(resid_norm_q8_kernel, dim3((unsigned)n), dim3(NORM_THREADS), 0, s, *a, d, eps));
    return cudaGetLastError();
}

/* ggml-cpu's GELU-tanh: the fp16 table entry of fp16(x) (cll_ops_gelu_table_init), saturated
 * outside (-10, 10) */
static __device__ __forceinline__ float gelu_fp16_table(float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    const float k_sqrt_2_over_pi = 0.79788456080286535587989211986876f, k_a = 0.044715f;
    const float xh = __half2float(__float2half_rn(x));
    const float y = 0.5f * xh * (1.0f + tanhf(k_sqrt_2_over_pi * xh * fmaf(k_a * xh, xh, 1.0f)));
    return __half2float(__float2half_rn(y));
}

__global__ static void act_q8_kernel(const float *gu, int64_t ld, int64_t f, bool gelu, float *y, cll_block_q8_1 *yq) {
    cll_pdl_wait();
    const int64_t r = blockIdx.y;
    const int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x & 31;
    const int64_t nblk = (f + 31) / 32, b = j / 32;
    float v = 0.0f;
    if (j < f) {
        const float g = gu[r * ld + j], u = gu[r * ld + f + j];
        v = gelu ? __fmul_rn(gelu_fp16_table(g), u) : __fmul_rn(g / (1.0f + expf(-g)), u);
        y[r * f + j] = v;
    }
    if (yq && b < nblk) cll_warp_q8_1(v, yq + r * nblk + b, lane);
}

cudaError_t cll_cu_act_q8(const float *gu, int64_t ld_gu, int64_t n, int64_t f, bool gelu, float *y, void *yq,
                          cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    dim3 grid((unsigned)cll_cdiv(f, 256), (unsigned)n);
    CLL_CU_RET(cll_cu_launch(act_q8_kernel, dim3(grid), dim3(256), 0, s, gu, ld_gu, f, gelu, y, (cll_block_q8_1 *)yq));
    return cudaGetLastError();
}
