/* cuda/ops/norm: the row-wise kernels around the products: RMSNorm + q8_1 (block input), the
 * fused block tail (MoE slot sum, post norm, residual add, next norm + q8_1), and the gated
 * activation + q8_1 (FFN down input); each may also write its rows as f16 in the fused rows' order
 * (xh / yh: what cll_cu_gemm_fused would convert them to) or in plain order (what cll_cu_gemm converts
 * X to for a cuBLAS f16 product), so the product needs no conversion kernel of its own.
 * Owns nothing. Rule: rounding as src/cpu (double-summed squares, (x*scale)*w, slot sums in
 * order, no fma contraction where the CPU has none).
 * Launch geometry: norms one block per row (grid n). Rows of d % 4 == 0, d <= 8192 (every model
 * we serve) keep the row in registers: V float4 per thread (V = 1, 2, 4; NT = cdiv(d/4, V)
 * rounded to a warp, <= 512), ONE pass of global loads all in flight together (the norm
 * weights are loaded before the PDL wait: they are constants), block reductions in double,
 * then x / xn / q8_1 stored from registers (8 lanes per q8_1 block). Other rows take the
 * strided NORM_THREADS fallback. The old strided loops issued one dependent round trip to
 * memory per 512 floats per pass (x, then t, then x again, then w): ~12 us for a 4096 row.
 * act grid (cdiv(f, 256), n) x 256 threads, one warp per q8_1 block (one row: the decode step); rows of
 * a prompt or a batched step four values a thread (act_q8_f4_kernel).
 * Registers: <= 128 (launch bound 512); smem: 256 B (double reduction). */
#include "cuda/ops/ops.cuh"

#define NORM_THREADS 512

/* element j of a row as f16 at its place in the fused rows' order (cll_cu_fused_xpos; d % 32 == 0),
 * or at j (plain: the order a cuBLAS f16 product reads) */
static __device__ __forceinline__ void store_xh(uint16_t *xh, int64_t j, float v, bool plain) {
    xh[plain ? j : (j & ~(int64_t)31) + cll_cu_fused_xpos((int)(j & 31))] = cll_f2h(v);
}
/* elements 4i..4i+3 (one float4): four consecutive places of either order, one 8-byte store */
static __device__ __forceinline__ void store_xh4(uint16_t *xh, int64_t i, float4 v, bool plain) {
    const int64_t j = 4 * i;
    const uint2 h = make_uint2((uint32_t)cll_f2h(v.x) | (uint32_t)cll_f2h(v.y) << 16,
                               (uint32_t)cll_f2h(v.z) | (uint32_t)cll_f2h(v.w) << 16);
    *(uint2 *)(xh + (plain ? j : (j & ~(int64_t)31) + cll_cu_fused_xpos((int)(j & 31)))) = h;
}

/* write xn = v-row, its q8_1 form and its fused-order f16 form (xh, NULL: none), one warp per 32
 * elements: val(j) gives element j */
template <typename F>
static __device__ __forceinline__ void norm_store_q8(F val, int64_t d, float *xn, cll_block_q8_1 *xq, uint16_t *xh,
                                                     bool plain) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const int64_t nblk = (d + 31) / 32;
    for (int64_t b = warp; b < nblk; b += nw) {
        const int64_t j = b * 32 + lane;
        const float v = j < d ? val(j) : 0.0f;
        if (xn && j < d) xn[j] = v;
        if (xq) cll_warp_q8_1(v, xq + b, lane);
        if (xh && j < d) store_xh(xh, j, v, plain);
    }
}


/* the register rows' tail: xn = (x * scale) * w from registers, stored with its q8_1 form */
template <int V>
static __device__ __forceinline__ void norm_store_regs(const float4 (&xv)[V], const float4 (&wv)[V], double sum, int d,
                                                       float eps, float *xn, cll_block_q8_1 *xq, uint16_t *xh,
                                                       bool plain) {
    const int NT = blockDim.x, d4 = d >> 2;
    const float scale = 1.0f / sqrtf((float)(sum / (double)d) + eps);
#pragma unroll
    for (int k = 0; k < V; k++) {
        const int i = threadIdx.x + k * NT;
        const float4 v = i < d4 ? cll_f4_mul(cll_f4_scale(xv[k], scale), wv[k]) : make_float4(0.f, 0.f, 0.f, 0.f);
        if (xn && i < d4) ((float4 *)xn)[i] = v;
        if (xq) cll_q8_1_store_f4(v, xq + (i >> 3), i & 7, (i & ~7) < d4); /* a partial last block is zero-padded */
        if (xh && i < d4) store_xh4(xh, i, v, plain);
    }
}

/* load a weight vector's float4s (NULL: ones) */
template <int V>
static __device__ __forceinline__ void load_w4(const float *w, int d4, float4 (&wv)[V]) {
    const int NT = blockDim.x;
#pragma unroll
    for (int k = 0; k < V; k++) {
        const int i = threadIdx.x + k * NT;
        wv[k] = w && i < d4 ? __ldg((const float4 *)w + i) : make_float4(1.f, 1.f, 1.f, 1.f);
    }
}

template <int V>
__global__ static void __launch_bounds__(CLL_NORM_REG_MAX_NT) rmsnorm_q8_regs(const float *x, const float *w, int d,
                                                                           float eps, float *xn, cll_block_q8_1 *xq,
                                                                           uint16_t *xh, bool plain) {
    __shared__ double red[32];
    const int NT = blockDim.x, d4 = d >> 2;
    float4 wv[V], xv[V];
    load_w4<V>(w, d4, wv);
    cll_pdl_wait();
    cll_pdl_trigger();
    const int64_t r = blockIdx.x;
    const float4 *x4 = (const float4 *)(x + r * d);
    double acc = 0.0;
#pragma unroll
    for (int k = 0; k < V; k++) {
        const int i = threadIdx.x + k * NT;
        xv[k] = i < d4 ? x4[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int k = 0; k < V; k++) acc += cll_f4_sq_d(xv[k]);
    const double sum = cll_block_sum_d(acc, red);
    norm_store_regs<V>(xv, wv, sum, d, eps, xn ? xn + r * d : nullptr, xq ? xq + r * ((d + 31) / 32) : nullptr, xh ? xh + r * d : nullptr,
                       plain);
}


__global__ static void rmsnorm_q8_kernel(const float *x, const float *w, int64_t d, float eps, float *xn,
                                         cll_block_q8_1 *xq, uint16_t *xh, bool plain) {
    cll_pdl_wait();
    cll_pdl_trigger();
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
    norm_store_q8([&](int64_t j) { return w ? (xr[j] * scale) * w[j] : xr[j] * scale; }, d, xn ? xn + r * d : nullptr,
                  xq ? xq + r * ((d + 31) / 32) : nullptr, xh ? xh + r * d : nullptr, plain);
}

cudaError_t cll_cu_rmsnorm_q8(const float *x, const float *w, int64_t n, int64_t d, float eps, float *xn, void *xq,
                              cudaStream_t s, void *xh, bool xh_plain) {
    if (n <= 0) return cudaSuccess;
    if (xh && d % 32) return cudaErrorInvalidValue;
    uint16_t *h = (uint16_t *)xh;
    int v, nt;
    if (cll_norm_regs_shape(d, &v, &nt)) {
        cll_block_q8_1 *q = (cll_block_q8_1 *)xq;
        const int di = (int)d;
        const bool pl = xh_plain;
        if (v == 1) CLL_CU_RET(cll_cu_launch(rmsnorm_q8_regs<1>, dim3((unsigned)n), dim3(nt), 0, s, x, w, di, eps, xn, q, h, pl));
        else if (v == 2) CLL_CU_RET(cll_cu_launch(rmsnorm_q8_regs<2>, dim3((unsigned)n), dim3(nt), 0, s, x, w, di, eps, xn, q, h, pl));
        else CLL_CU_RET(cll_cu_launch(rmsnorm_q8_regs<4>, dim3((unsigned)n), dim3(nt), 0, s, x, w, di, eps, xn, q, h, pl));
        return cudaGetLastError();
    }
    CLL_CU_RET(cll_cu_launch(rmsnorm_q8_kernel, dim3((unsigned)n), dim3(NORM_THREADS), 0, s, x, w, d, eps, xn,
                             (cll_block_q8_1 *)xq, h, xh_plain));
    return cudaGetLastError();
}

__global__ static void quantize_rows_q8_kernel(const float *x, int64_t ld, int64_t cols, cll_block_q8_1 *xq) {
    cll_pdl_wait();
    cll_pdl_trigger();
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

template <int V>
__global__ static void __launch_bounds__(CLL_NORM_REG_MAX_NT) resid_norm_q8_regs(cll_cu_resid_args a, int d, float eps) {
    __shared__ double red[32];
    const int NT = blockDim.x, d4 = d >> 2;
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
    float4 pw[V], nw[V], xv[V], tv[V];
    /* the norm weights are constants: in flight before the wait */
    if (a.post) load_w4<V>(a.post, d4, pw);
    if (a.next_norm) load_w4<V>(a.next, d4, nw);
    cll_pdl_wait();
    cll_pdl_trigger();
    const int64_t r = blockIdx.x;
    float4 *x4 = (float4 *)(a.x + r * d);
    const float4 *t4 = (const float4 *)(a.t + r * d);
    const float *mw = a.moe ? a.moe_w + r * a.n_used : nullptr;
    const float4 *m4 = a.moe ? (const float4 *)(a.moe + r * a.n_used * d) : nullptr;
#pragma unroll
    for (int k = 0; k < V; k++) {
        const int i = threadIdx.x + k * NT;
        xv[k] = i < d4 ? x4[i] : zero;
        if (i >= d4) {
            tv[k] = zero;
        } else if (m4) { /* the CPU scales each slot, then adds the slots in order */
            tv[k] = cll_f4_scale(m4[i], mw[0]);
            for (int u = 1; u < a.n_used; u++) tv[k] = cll_f4_add(tv[k], cll_f4_scale(m4[(int64_t)u * d4 + i], mw[u]));
        } else {
            tv[k] = t4[i];
        }
    }
    double acc = 0.0;
    if (a.post) {
#pragma unroll
        for (int k = 0; k < V; k++) acc += cll_f4_sq_d(tv[k]);
        const double s1 = cll_block_sum_d(acc, red);
        const float ps = 1.0f / sqrtf((float)(s1 / (double)d) + eps);
#pragma unroll
        for (int k = 0; k < V; k++) xv[k] = cll_f4_add(xv[k], cll_f4_mul(cll_f4_scale(tv[k], ps), pw[k]));
        acc = 0.0;
    } else {
#pragma unroll
        for (int k = 0; k < V; k++) xv[k] = cll_f4_add(xv[k], tv[k]);
    }
#pragma unroll
    for (int k = 0; k < V; k++) {
        const int i = threadIdx.x + k * NT;
        if (i < d4) x4[i] = xv[k];
        acc += cll_f4_sq_d(xv[k]);
    }
    if (!a.next_norm) return;
    const double sum = cll_block_sum_d(acc, red);
    norm_store_regs<V>(xv, nw, sum, d, eps, a.xn ? a.xn + r * d : nullptr, a.xq ? (cll_block_q8_1 *)a.xq + r * ((d + 31) / 32) : nullptr,
                       a.xh ? (uint16_t *)a.xh + r * d : nullptr, a.xh_plain);
}

__global__ static void resid_norm_q8_kernel(cll_cu_resid_args a, int64_t d, float eps) {
    cll_pdl_wait();
    cll_pdl_trigger();
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
    norm_store_q8([&](int64_t j) { return w ? (x[j] * scale) * w[j] : x[j] * scale; }, d, a.xn ? a.xn + r * d : nullptr,
                  a.xq ? (cll_block_q8_1 *)a.xq + r * ((d + 31) / 32) : nullptr, a.xh ? (uint16_t *)a.xh + r * d : nullptr,
                  a.xh_plain);
}

cudaError_t cll_cu_resid_norm_q8(const cll_cu_resid_args *a, int64_t n, int64_t d, float eps, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    if (a->xh && d % 32) return cudaErrorInvalidValue;
    int v, nt;
    if (cll_norm_regs_shape(d, &v, &nt)) {
        const int di = (int)d;
        if (v == 1) CLL_CU_RET(cll_cu_launch(resid_norm_q8_regs<1>, dim3((unsigned)n), dim3(nt), 0, s, *a, di, eps));
        else if (v == 2) CLL_CU_RET(cll_cu_launch(resid_norm_q8_regs<2>, dim3((unsigned)n), dim3(nt), 0, s, *a, di, eps));
        else CLL_CU_RET(cll_cu_launch(resid_norm_q8_regs<4>, dim3((unsigned)n), dim3(nt), 0, s, *a, di, eps));
        return cudaGetLastError();
    }
    CLL_CU_RET(cll_cu_launch(resid_norm_q8_kernel, dim3((unsigned)n), dim3(NORM_THREADS), 0, s, *a, d, eps));
    return cudaGetLastError();
}

__global__ static void act_q8_kernel(const float *gu, int64_t ld, int64_t f, bool gelu, float *y, cll_block_q8_1 *yq,
                                     uint16_t *yh, bool yh_plain, const void *pf, size_t pf_bytes) {
    cll_pdl_wait();
    cll_pdl_trigger();
    if (threadIdx.x == 0) cll_l2_prefetch_share(pf, pf_bytes, blockIdx.y * gridDim.x + blockIdx.x, gridDim.x * gridDim.y);
    const int64_t r = blockIdx.y;
    const int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x & 31;
    const int64_t nblk = (f + 31) / 32, b = j / 32;
    float v = 0.0f;
    if (j < f) {
        v = cll_act_gated(gu[r * ld + j], gu[r * ld + f + j], gelu);
        if (y) y[r * f + j] = v;
        if (yh) store_xh(yh + r * f, j, v, yh_plain);
    }
    if (yq && b < nblk) cll_warp_q8_1(v, yq + r * nblk + b, lane);
}

/* rows of a prompt or a batched step (n > 1; f and ld multiples of 4): four values a thread from float4
 * loads of g and u (one 4-byte load a value above, ~1.8 TB/s on an l2-7b pp512), 8 lanes a q8_1 block;
 * the per-value arithmetic and the q8_1 rounding are act_q8_kernel's */
__global__ static void act_q8_f4_kernel(const float *gu, int64_t ld, int64_t f, bool gelu, float *y, cll_block_q8_1 *yq,
                                        uint16_t *yh, bool yh_plain) {
    cll_pdl_wait();
    cll_pdl_trigger();
    const int64_t r = blockIdx.y, f4 = f >> 2;
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (i < f4) {
        const float4 g = ((const float4 *)(gu + r * ld))[i], u = ((const float4 *)(gu + r * ld + f))[i];
        v = make_float4(cll_act_gated(g.x, u.x, gelu), cll_act_gated(g.y, u.y, gelu), cll_act_gated(g.z, u.z, gelu),
                        cll_act_gated(g.w, u.w, gelu));
        if (y) ((float4 *)(y + r * f))[i] = v;
        if (yh) store_xh4(yh + r * f, i, v, yh_plain);
    }
    if (yq) cll_q8_1_store_f4(v, yq + r * ((f + 31) / 32) + (i >> 3), (int)(i & 7), (i & ~(int64_t)7) < f4);
}

cudaError_t cll_cu_act_q8(const float *gu, int64_t ld_gu, int64_t n, int64_t f, bool gelu, float *y, void *yq,
                          cudaStream_t s, const void *pf, size_t pf_bytes, void *yh, bool yh_plain) {
    if (n <= 0) return cudaSuccess;
    if (!y && !yq && !yh) return cudaErrorInvalidValue;
    if (pf && ((uintptr_t)pf % 16 || pf_bytes % 16)) return cudaErrorInvalidValue;
    if (yh && f % 32) return cudaErrorInvalidValue;
    if (n > 1 && !pf && f % 4 == 0 && ld_gu % 4 == 0 && (uintptr_t)gu % 16 == 0 && (uintptr_t)y % 16 == 0) {
        const dim3 g4((unsigned)cll_cdiv(f / 4, 256), (unsigned)n);
        CLL_CU_RET(cll_cu_launch(act_q8_f4_kernel, g4, dim3(256), 0, s, gu, ld_gu, f, gelu, y, (cll_block_q8_1 *)yq,
                                 (uint16_t *)yh, yh_plain));
        return cudaGetLastError();
    }
    dim3 grid((unsigned)cll_cdiv(f, 256), (unsigned)n);
    CLL_CU_RET(cll_cu_launch(act_q8_kernel, dim3(grid), dim3(256), 0, s, gu, ld_gu, f, gelu, y, (cll_block_q8_1 *)yq,
                             (uint16_t *)yh, yh_plain, pf, pf_bytes));
    return cudaGetLastError();
}
