/* cuda/ops/rope: the step between the q|k|v product and attention, fused: biases, per-head
 * q/k RMS norm, rope (norm or neox pairs, frequency factors, freq scale), q prescale, q rounded
 * to fp16 for an F16 cache, and k/v stored to the cache at (seq, pos).
 * Owns nothing. Rule: the CPU's rounding (cpu/forward.c task_qkv): theta iterated in float,
 * rotations as separate products and a difference (the CPU build does not contract to fma); the
 * same arithmetic, bit for bit, as the decode attention's fused rope (attn.cu fa_rope: the gate
 * compares the caches and outputs of both).
 * Launch geometry: grid (ceil((n_head + 2*n_kv) / ROPE_HPB), n), 128 threads (4 warps); a block
 * computes its token's rope angles once (cos/sin of each pair into shared memory: they were
 * recomputed per head, with the iterated theta, ~65 us a layer of a 512-token prefill on the H200),
 * then each warp takes one head (q, k or v). V4 (rows, heads and cache 16 / 8-byte aligned, the head
 * dims multiples of 4): a lane moves 4 values a load or store (a head of 128 in one round trip). With
 * 16 heads a block, a warp's 4 heads one after another and a value a lane a load, a warp waited ~16
 * dependent round trips to memory: 24.5 us a layer of an l2-7b pp512 (H200, twenty-first session).
 * smem: 2 x 128 angles + 4 x 256 floats. */
#include "cuda/ops/ops.cuh"

#define ROPE_THREADS 128
#define ROPE_WARPS (ROPE_THREADS / 32)
#define ROPE_HPB ROPE_WARPS /* heads a block: one a warp */
#define ROPE_MAX_HD 256

/* 4 f32 values as 4 f16 in one 8-byte store */
static __device__ __forceinline__ void store_h4(uint16_t *d, float4 v) {
    *(uint2 *)d = make_uint2((uint32_t)cll_f2h(v.x) | (uint32_t)cll_f2h(v.y) << 16,
                             (uint32_t)cll_f2h(v.z) | (uint32_t)cll_f2h(v.w) << 16);
}
/* src + bias (4 values at i; the bias read a value at a time: its alignment is the model's) */
static __device__ __forceinline__ float4 ld_biased4(const float *src, const float *bias, int i) {
    float4 v = *(const float4 *)(src + i);
    if (bias) v = make_float4(v.x + bias[i], v.y + bias[i + 1], v.z + bias[i + 2], v.w + bias[i + 3]);
    return v;
}

template <bool V4> __global__ static void __launch_bounds__(ROPE_THREADS) qkv_rope_store_kernel(cll_cu_rope_args a) {
    cll_pdl_wait();
    cll_pdl_trigger();
    __shared__ float cs[ROPE_MAX_HD / 2], sn[ROPE_MAX_HD / 2];
    __shared__ __align__(16) float wbuf[ROPE_WARPS][ROPE_MAX_HD];
    const int64_t r = blockIdx.y;
    const int H = a.n_head, KV = a.n_kv, NH = H + 2 * KV;
    const int h_lo = blockIdx.x * ROPE_HPB, h_hi = min(NH, h_lo + ROPE_HPB);
    const int32_t pos = a.pos[r];
    const int half = a.n_rot / 2;
    if (h_lo < H + KV) { /* the block ropes a q or k head: this token's angles */
        const float theta_scale = powf(a.rp.base, -2.0f / (float)a.n_rot);
        for (int i = threadIdx.x; i < half; i += blockDim.x) {
            float theta = (float)pos;
            for (int k = 0; k < i; k++) theta *= theta_scale; /* iterated as ggml does */
            cll_rope_angle(a.rp, theta, i, a.rope_ff ? a.rope_ff[i] : 1.0f, &cs[i], &sn[i]);
        }
    }
    __syncthreads();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float *buf = wbuf[warp];
    const int64_t slot = cll_cu_kv_cell(a.map, a.n_ctx, a.seq[r], pos);
    for (int h = h_lo + warp; h < h_hi; h += ROPE_WARPS) {
        const int kind = h < H ? 0 : h < H + KV ? 1 : 2; /* q, k, v */
        const int hh = kind == 0 ? h : kind == 1 ? h - H : h - H - KV;
        const int hd = kind == 2 ? a.hd_v : a.hd_k;
        float *src = a.qkv + r * a.ld +
                     (kind == 0 ? (int64_t)hh * a.hd_k
                                : kind == 1 ? (int64_t)H * a.hd_k + (int64_t)hh * a.hd_k
                                            : (int64_t)(H + KV) * a.hd_k + (int64_t)hh * a.hd_v);
        const float *bias = kind == 0 ? a.bq : kind == 1 ? a.bk : a.bv;
        if (kind == 2) {
            const int64_t off = slot * ((int64_t)KV * a.hd_v) + (int64_t)hh * a.hd_v;
            if constexpr (V4) {
                const float *bv = bias ? bias + (int64_t)hh * hd : nullptr;
                for (int i = 4 * lane; i < hd; i += 128) {
                    const float4 v = ld_biased4(src, bv, i);
                    if (a.kv_f16) store_h4((uint16_t *)a.vc + off + i, v);
                    else *(float4 *)((float *)a.vc + off + i) = v;
                }
            } else {
                for (int i = lane; i < hd; i += 32) {
                    const float v = bias ? src[i] + bias[(int64_t)hh * hd + i] : src[i];
                    if (a.kv_f16) ((uint16_t *)a.vc)[off + i] = cll_f2h(v);
                    else ((float *)a.vc)[off + i] = v;
                }
            }
            continue;
        }
        if constexpr (V4) {
            const float *bq = bias ? bias + (int64_t)hh * hd : nullptr;
            for (int i = 4 * lane; i < hd; i += 128) *(float4 *)(buf + i) = ld_biased4(src, bq, i);
        } else {
            for (int i = lane; i < hd; i += 32) buf[i] = bias ? src[i] + bias[(int64_t)hh * hd + i] : src[i];
        }
        __syncwarp();
        const float *nw = kind == 0 ? a.q_norm : a.k_norm;
        if (nw) { /* fa_rope's warp reduction, in double */
            double acc = 0.0;
            for (int i = lane; i < hd; i += 32) acc += (double)(buf[i] * buf[i]);
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
            const float scale = 1.0f / sqrtf((float)(acc / (double)hd) + a.eps);
            __syncwarp();
            for (int i = lane; i < hd; i += 32) buf[i] = (buf[i] * scale) * nw[i];
            __syncwarp();
        }
        for (int i = lane; i < half; i += 32) {
            const float c = cs[i], s = sn[i];
            const int i0 = a.neox ? i : 2 * i, i1 = a.neox ? i + half : 2 * i + 1;
            const float x0 = buf[i0], x1 = buf[i1];
            buf[i0] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
            buf[i1] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
        }
        __syncwarp();
        if (kind == 0) {
            auto qv = [&](float v) {
                if (a.q_scale != 1.0f) v *= a.q_scale;
                return a.kv_f16 ? __half2float(__float2half_rn(v)) : v; /* llama.cpp dots an fp16 q with an F16 cache */
            };
            if constexpr (V4) {
                for (int i = 4 * lane; i < hd; i += 128) {
                    const float4 v = *(const float4 *)(buf + i);
                    *(float4 *)(src + i) = make_float4(qv(v.x), qv(v.y), qv(v.z), qv(v.w));
                }
            } else {
                for (int i = lane; i < hd; i += 32) src[i] = qv(buf[i]);
            }
        } else {
            const int64_t off = slot * ((int64_t)KV * a.hd_k) + (int64_t)hh * a.hd_k;
            if constexpr (V4) {
                for (int i = 4 * lane; i < hd; i += 128) {
                    const float4 v = *(const float4 *)(buf + i);
                    if (a.kv_f16) store_h4((uint16_t *)a.kc + off + i, v);
                    else *(float4 *)((float *)a.kc + off + i) = v;
                }
            } else {
                for (int i = lane; i < hd; i += 32) {
                    if (a.kv_f16) ((uint16_t *)a.kc)[off + i] = cll_f2h(buf[i]);
                    else ((float *)a.kc)[off + i] = buf[i];
                }
            }
        }
        __syncwarp();
    }
}

cudaError_t cll_cu_qkv_rope_store(const cll_cu_rope_args *a, int64_t n, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    if (a->hd_k > ROPE_MAX_HD || a->hd_v > ROPE_MAX_HD || a->n_rot > a->hd_k) return cudaErrorInvalidValue;
    dim3 grid((unsigned)cll_cdiv(a->n_head + 2 * a->n_kv, ROPE_HPB), (unsigned)n);
    /* 16-byte rows (f32 q|k|v, f32 cache) and 8-byte f16 cache rows: every head starts at a multiple of 4 */
    const size_t ce = a->kv_f16 ? 8 : 16;
    const bool v4 = a->ld % 4 == 0 && a->hd_k % 4 == 0 && a->hd_v % 4 == 0 && (uintptr_t)a->qkv % 16 == 0 &&
                    (uintptr_t)a->kc % ce == 0 && (uintptr_t)a->vc % ce == 0;
    CLL_CU_RET(cll_cu_launch(v4 ? qkv_rope_store_kernel<true> : qkv_rope_store_kernel<false>, dim3(grid),
                             dim3(ROPE_THREADS), 0, s, *a));
    return cudaGetLastError();
}
