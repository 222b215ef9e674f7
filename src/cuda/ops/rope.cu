/* cuda/ops/rope: the step between the q|k|v product and attention, fused: biases, per-head
 * q/k RMS norm, rope (norm or neox pairs, frequency factors, freq scale), q prescale, q rounded
 * to fp16 for an F16 cache, and k/v stored to the cache at (seq, pos).
 * Owns nothing. Rule: the CPU's rounding (cpu/forward.c task_qkv): theta iterated in float,
 * rotations as separate products and a difference (the CPU build does not contract to fma).
 * Launch geometry: grid (n_head + 2*n_kv, n), 128 threads; one block per (token, head) of q, k
 * or v. Registers: < 40; smem: head (<= 256 floats) + 256 B reduction. */
#include "cuda/ops/ops.cuh"

#define ROPE_THREADS 128
#define ROPE_MAX_HD 256

__global__ static void qkv_rope_store_kernel(cll_cu_rope_args a) {
    cll_pdl_wait();
    cll_pdl_trigger();
    __shared__ float buf[ROPE_MAX_HD];
    __shared__ double red[32];
    const int64_t r = blockIdx.y;
    const int h = blockIdx.x;
    const int H = a.n_head, KV = a.n_kv;
    const int kind = h < H ? 0 : h < H + KV ? 1 : 2; /* q, k, v */
    const int hh = kind == 0 ? h : kind == 1 ? h - H : h - H - KV;
    const int hd = kind == 2 ? a.hd_v : a.hd_k;
    float *src = a.qkv + r * a.ld +
                 (kind == 0 ? (int64_t)hh * a.hd_k
                            : kind == 1 ? (int64_t)H * a.hd_k + (int64_t)hh * a.hd_k
                                        : (int64_t)(H + KV) * a.hd_k + (int64_t)hh * a.hd_v);
    const float *bias = kind == 0 ? a.bq : kind == 1 ? a.bk : a.bv;
    const int32_t pos = a.pos[r];
    const int64_t slot = cll_cu_kv_cell(a.map, a.n_ctx, a.seq[r], pos);
    for (int i = threadIdx.x; i < hd; i += blockDim.x) buf[i] = bias ? src[i] + bias[(int64_t)hh * hd + i] : src[i];
    if (kind == 2) {
        const int64_t off = slot * ((int64_t)KV * a.hd_v) + (int64_t)hh * a.hd_v;
        for (int i = threadIdx.x; i < hd; i += blockDim.x) {
            if (a.kv_f16) ((uint16_t *)a.vc)[off + i] = cll_f2h(buf[i]);
            else ((float *)a.vc)[off + i] = buf[i];
        }
        return;
    }
    __syncthreads();
    const float *nw = kind == 0 ? a.q_norm : a.k_norm;
    if (nw) {
        double acc = 0.0;
        for (int i = threadIdx.x; i < hd; i += blockDim.x) acc += (double)(buf[i] * buf[i]);
        const double sum = cll_block_sum_d(acc, red);
        const float scale = 1.0f / sqrtf((float)(sum / (double)hd) + a.eps);
        for (int i = threadIdx.x; i < hd; i += blockDim.x) buf[i] = (buf[i] * scale) * nw[i];
        __syncthreads();
    }
    const int half = a.n_rot / 2;
    const float theta_scale = powf(a.rope_base, -2.0f / (float)a.n_rot);
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        float theta = (float)pos;
        for (int k = 0; k < i; k++) theta *= theta_scale; /* iterated as ggml does */
        const float t = a.freq_scale * (a.rope_ff ? theta / a.rope_ff[i] : theta);
        const float c = cosf(t), s = sinf(t);
        const int i0 = a.neox ? i : 2 * i, i1 = a.neox ? i + half : 2 * i + 1;
        const float x0 = buf[i0], x1 = buf[i1];
        buf[i0] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
        buf[i1] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
    }
    __syncthreads();
    if (kind == 0) {
        for (int i = threadIdx.x; i < hd; i += blockDim.x) {
            float v = buf[i];
            if (a.q_scale != 1.0f) v *= a.q_scale;
            if (a.kv_f16) v = __half2float(__float2half_rn(v)); /* llama.cpp dots an fp16 q with an F16 cache */
            src[i] = v;
        }
    } else {
        const int64_t off = slot * ((int64_t)KV * a.hd_k) + (int64_t)hh * a.hd_k;
        for (int i = threadIdx.x; i < hd; i += blockDim.x) {
            if (a.kv_f16) ((uint16_t *)a.kc)[off + i] = cll_f2h(buf[i]);
            else ((float *)a.kc)[off + i] = buf[i];
        }
    }
}

cudaError_t cll_cu_qkv_rope_store(const cll_cu_rope_args *a, int64_t n, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    if (a->hd_k > ROPE_MAX_HD || a->hd_v > ROPE_MAX_HD || a->n_rot > a->hd_k) return cudaErrorInvalidValue;
    dim3 grid((unsigned)(a->n_head + 2 * a->n_kv), (unsigned)n);
    CLL_CU_RET(cll_cu_launch(qkv_rope_store_kernel, dim3(grid), dim3(ROPE_THREADS), 0, s, *a));
    return cudaGetLastError();
}
