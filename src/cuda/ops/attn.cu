/* cuda/ops/attn: attention of n query tokens over the KV cache, split over key chunks.
 * One kernel: one block per (head, chunk, token); its 4 warps stride the chunk's keys 4 at a
 * time (loads of 4 keys in flight), each keeping an online softmax (max, sum, acc[hd_v]) in
 * registers, merged through smem into one partial in global memory. The last block of a
 * (token, head) to finish (atomic count) merges the partials: rescale to the global max,
 * normalize, write f32 and the q8_1 form of the output row (threadFenceReduction pattern).
 * Owns nothing. Rule: grids are sized for n_ctx; chunks past a token's length exit at once,
 * so one captured graph serves every decode position. q was rounded to fp16 upstream (F16
 * cache), dots and softmax in f32 with max subtraction, as src/cpu/ops.c cll_ops_attn_head.
 * Launch geometry: grid (n_head, n_chunks, n) x 128 threads. Any head dim <= 256 (lane j
 * holds dims j, j+32, ...); heads that are not whole q8_1 blocks get a separate quantize.
 * Registers: 56 (ptxas, q + acc 8 each per lane, no spills); smem: 4 x (2 + 256) floats.
 * Counts: (n, n_head) ints, zeroed once at state creation; the merging block re-zeroes its own. */
#include "cuda/ops/ops.cuh"

#define ATTN_WARPS 4
#define ATTN_MAX_T 8 /* head dim <= 256: 8 elements per lane */
#define ATTN_UNROLL 4

template <bool F16>
static __device__ __forceinline__ float kv_load(const void *base, int64_t i) {
    if (F16) return cll_h2f(((const uint16_t *)base)[i]);
    return ((const float *)base)[i];
}

/* the last chunk block of (token r, head h) to finish: rescale the nc partials to the global
 * max, normalize, write out (and its q8_1 form when a head is whole q8_1 blocks). Partials are
 * read with ld.cg: other blocks wrote them, and L1 is not coherent. */
static __device__ void attn_merge(const cll_cu_attn_args &a, int64_t r, int h, int32_t nc) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t stride = a.hd_v + 2;
    const float *p = a.part + (r * a.n_head + h) * a.n_chunks * stride;
    float M = -INFINITY;
    for (int c = 0; c < nc; c++) M = fmaxf(M, __ldcg(p + c * stride));
    float L = 0.0f;
    for (int c = 0; c < nc; c++) L += __ldcg(p + c * stride + 1) * expf(__ldcg(p + c * stride) - M);
    const float inv = L > 0.0f ? 1.0f / L : 0.0f;
    const int64_t row = (int64_t)a.n_head * a.hd_v;
    const bool q8 = a.outq && a.hd_v % 32 == 0;
    for (int g = warp; g < (a.hd_v + 31) / 32; g += ATTN_WARPS) { /* warp-uniform */
        const int d = g * 32 + lane;
        float o = 0.0f;
        if (d < a.hd_v) {
            for (int c = 0; c < nc; c++) o += __ldcg(p + c * stride + 2 + d) * expf(__ldcg(p + c * stride) - M);
            o *= inv;
            a.out[r * row + (int64_t)h * a.hd_v + d] = o;
        }
        if (q8) cll_warp_q8_1(o, (cll_block_q8_1 *)a.outq + r * ((row + 31) / 32) + ((int64_t)h * a.hd_v + d) / 32, lane);
    }
}

template <bool F16>
__global__ static void attn_chunk_kernel(cll_cu_attn_args a) {
    cll_pdl_wait();
    __shared__ float sm[ATTN_WARPS][2 + 256];
    const int h = blockIdx.x, c = blockIdx.y;
    const int64_t r = blockIdx.z;
    const int32_t pos = a.pos[r];
    const int32_t lo = (a.n_swa > 0 && pos - a.n_swa + 1 > 0) ? pos - a.n_swa + 1 : 0, hi = pos + 1;
    const int32_t c0 = lo + c * a.chunk;
    if (c0 >= hi) return; /* past this token's length */
    const int32_t c1 = min(c0 + a.chunk, hi);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int hk = a.hd_k, hv = a.hd_v;
    const int kvh = h / (a.n_head / a.n_kv);
    const int64_t base = (int64_t)a.seq[r] * a.n_ctx;
    const int64_t ks = (int64_t)a.n_kv * a.hd_k, vs = (int64_t)a.n_kv * a.hd_v;
    const float *q = a.q + r * a.ld_q + (int64_t)h * a.hd_k;
    float qr[ATTN_MAX_T], acc[ATTN_MAX_T];
#pragma unroll
    for (int t = 0; t < ATTN_MAX_T; t++) {
        qr[t] = lane + 32 * t < hk ? q[lane + 32 * t] : 0.0f;
        acc[t] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    /* ATTN_UNROLL keys per step: their K and V loads are independent and in flight together */
    for (int32_t j0 = c0 + warp * ATTN_UNROLL; j0 < c1; j0 += ATTN_WARPS * ATTN_UNROLL) {
        float sc[ATTN_UNROLL];
        float mn = m;
#pragma unroll
        for (int u = 0; u < ATTN_UNROLL; u++) {
            const int32_t j = j0 + u;
            float dot = 0.0f;
            if (j < c1) {
                const int64_t ko = (base + j) * ks + (int64_t)kvh * a.hd_k;
#pragma unroll
                for (int t = 0; t < ATTN_MAX_T; t++)
                    if (lane + 32 * t < hk) dot += qr[t] * kv_load<F16>(a.kc, ko + lane + 32 * t);
            }
            sc[u] = j < c1 ? cll_warp_sum(dot) * a.scale : -INFINITY;
            mn = fmaxf(mn, sc[u]);
        }
        const float corr = m == -INFINITY ? 0.0f : expf(m - mn);
        l *= corr;
#pragma unroll
        for (int t = 0; t < ATTN_MAX_T; t++) acc[t] *= corr;
#pragma unroll
        for (int u = 0; u < ATTN_UNROLL; u++) {
            const int32_t j = j0 + u;
            if (j >= c1) continue;
            const float p = expf(sc[u] - mn);
            l += p;
            const int64_t vo = (base + j) * vs + (int64_t)kvh * a.hd_v;
#pragma unroll
            for (int t = 0; t < ATTN_MAX_T; t++)
                if (lane + 32 * t < hv) acc[t] += p * kv_load<F16>(a.vc, vo + lane + 32 * t);
        }
        m = mn;
    }
    if (lane == 0) {
        sm[warp][0] = m;
        sm[warp][1] = l;
    }
#pragma unroll
    for (int t = 0; t < ATTN_MAX_T; t++)
        if (lane + 32 * t < hv) sm[warp][2 + lane + 32 * t] = acc[t];
    __syncthreads();
    float M = -INFINITY;
    for (int w = 0; w < ATTN_WARPS; w++) M = fmaxf(M, sm[w][0]);
    float *out = a.part + ((r * a.n_head + h) * a.n_chunks + c) * (int64_t)(a.hd_v + 2);
    for (int d = threadIdx.x; d < a.hd_v + 2; d += blockDim.x) {
        float v;
        if (d == 0) {
            v = M;
        } else {
            v = 0.0f;
            for (int w = 0; w < ATTN_WARPS; w++) {
                const float e = sm[w][0] == -INFINITY ? 0.0f : expf(sm[w][0] - M);
                v += sm[w][d] * e; /* d == 1: the sums, d >= 2: acc */
            }
        }
        out[d] = v;
    }
    /* the last of the token's nc chunk blocks to land merges them (the count resets itself, so
     * the next launch and the next replay start from zero) */
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    const int32_t nc = min((int32_t)((hi - lo + a.chunk - 1) / a.chunk), a.n_chunks);
    if (threadIdx.x == 0) {
        int *cnt = a.count + r * a.n_head + h;
        last = atomicAdd(cnt, 1) == nc - 1;
        if (last) *cnt = 0;
    }
    __syncthreads();
    if (last) attn_merge(a, r, h, nc);
}

cudaError_t cll_cu_attention(const cll_cu_attn_args *a, int64_t n, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    if (a->hd_k > 32 * ATTN_MAX_T || a->hd_v > 32 * ATTN_MAX_T || a->n_kv <= 0 ||
        a->n_head % a->n_kv || a->chunk <= 0 || a->n_chunks <= 0 || !a->count)
        return cudaErrorInvalidValue;
    dim3 g1((unsigned)a->n_head, (unsigned)a->n_chunks, (unsigned)n);
    if (a->kv_f16) CLL_CU_RET(cll_cu_launch(attn_chunk_kernel<true>, dim3(g1), dim3(32 * ATTN_WARPS), 0, s, *a));
    else CLL_CU_RET(cll_cu_launch(attn_chunk_kernel<false>, dim3(g1), dim3(32 * ATTN_WARPS), 0, s, *a));
    if (a->outq && a->hd_v % 32) /* heads straddle q8_1 blocks: quantize the rows apart */
        return cll_cu_quantize_rows_q8(a->out, (int64_t)a->n_head * a->hd_v, n, (int64_t)a->n_head * a->hd_v, a->outq, s);
    return cudaSuccess;
}
