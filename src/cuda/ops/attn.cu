/* cuda/ops/attn: attention of n query tokens over the KV cache, split over key chunks.
 * Main path (hd_k == hd_v in {64, 128, 256}): attn_gqa_kernel below, one block per (kv head,
 * chunk, token) serving the q heads of the GQA group (K/V read once per group), chunk size
 * adapted to the live length. The fallback for other head dims (attn_chunk_kernel):
 * one block per (head, chunk, token); its 4 warps stride the chunk's keys 4 at a
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
#include <cuda.h> /* CUtensorMap and its enums (the encoder is reached through the runtime's entry point) */
#include <cudaTypedefs.h>

#include "cuda/ops/ops.cuh"
#include "cuda/pick.h"

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
    cll_pdl_trigger();
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
    const int32_t seq = a.seq[r];
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
                const int64_t ko = cll_cu_kv_cell(a.map, a.n_ctx, seq, j) * ks + (int64_t)kvh * a.hd_k;
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
            const int64_t vo = cll_cu_kv_cell(a.map, a.n_ctx, seq, j) * vs + (int64_t)kvh * a.hd_v;
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

/* ---- the GQA kernel: one block per (kv head, q-head subgroup, chunk, token) -------------------
 * Serves hg <= HG q heads of one kv head, so K/V are read once per group. Head dim HD (64, 128,
 * 256; hd_k == hd_v). The live length len = pos + 1 - lo is split into nc = cdiv(len, eff)
 * chunks of eff = max(min_chunk, cdiv(len, n_chunks)) keys (min_chunk: cll_cu_attn_min_chunk) (the grid covers n_chunks; blocks
 * past nc exit after the wait). A block walks its chunk in sub-chunks of FA_CS keys:
 *   A: scores: HD/8 lanes per key (8 dims per lane, one 16 B load for F16), U keys in flight per
 *      lane (4, or 8: cll_cu_attn_loads), q of the hg heads in registers, dot reduced over the key's
 *      lanes -> smem S[h][j];
 *   B: per head online softmax over the sub-chunk (warp per head): p in S, running m, l, corr;
 *   C: V: warp per key, HD/32 dims per lane, U keys in flight, acc[h][dims] += p * v (a warp's keys
 *      w, w + W, w + 2W, .. in that order for either U: the same sums).
 * The K and V rows of the first sub-chunk are prefetched into L2 before the PDL wait (only the
 * newest cell is written by the kernel before; L2 is coherent). nc == 1 writes the output
 * directly; else the partials (acc at idx*HD, (m, l) after all acc) and the last block of the
 * group merges. Partials: idx = (r*n_head + h)*n_chunks + c; acc (n, H, n_chunks, HD) then
 * (m, l) pairs: n*H*n_chunks*(HD+2) floats <= part_cap*(hd_v+2). */
#define FA_WARPS 4 /* the default block: 4 warps (cll_cu_attn_warps may give a small grid 8 or 16) */
#define FA_CS 128
/* fewest keys a chunk holds (cll_cu_attn_min_chunk, cuda/pick.h): at 128 a decode step over <= 128
 * keys is one chunk a head group (no partials, no merge), and a 16-warp block scores 128 keys in one
 * pass. H200 tg128, same call: l2-7b Q4_0 587.9 (32) / 595.5 (64) / 608.9 (128) tok/s, q3moe Q4_K_M
 * 856.3 / 888.7 (128); cuda_kbench -A, 128 keys: 7.9 -> 5.7 us (MHA); 1024 and 8192 keys unchanged.
 * A batched step of many rows takes 256 (the pick) */
/* live chunks for about this many blocks an SM (cll_cu_attn_active_chunks; 0: every chunk of the
 * grid, one per min_chunk keys) */
#define FA_PER_SM 0
#define FA_MIN_BLOCKS CLL_CU_ATTN_MIN_BLOCKS

/* N f16 values held two a word (the low half first) to floats */
template <int N> static __device__ __forceinline__ void h2_unpack(const uint32_t *w, float (&v)[N]) {
#pragma unroll
    for (int i = 0; i < N / 2; i++) {
        const float2 f = __half22float2(*(const __half2 *)&w[i]);
        v[2 * i] = f.x;
        v[2 * i + 1] = f.y;
    }
}

/* N values of a row the fused rope left in shared memory, rounded to f16 as the cache stores them */
template <int N> static __device__ __forceinline__ void f16_round(const float *p, float (&v)[N]) {
#pragma unroll
    for (int e = 0; e < N; e++) v[e] = __half2float(__float2half_rn(p[e]));
}

template <bool F16, int N>
static __device__ __forceinline__ void kv_ld(const void *base, int64_t off, float (&v)[N]) {
    if constexpr (F16) {
        const uint16_t *p = (const uint16_t *)base + off;
        uint32_t w[N / 2];
        if constexpr (N == 8) {
            const uint4 u = *(const uint4 *)p;
            w[0] = u.x; w[1] = u.y; w[2] = u.z; w[3] = u.w;
        } else if constexpr (N == 4) {
            const uint2 u = *(const uint2 *)p;
            w[0] = u.x; w[1] = u.y;
        } else {
            w[0] = *(const unsigned int *)p;
        }
        h2_unpack<N>(w, v);
    } else {
        const float *p = (const float *)base + off;
        if constexpr (N == 2) {
            const float2 f = *(const float2 *)p;
            v[0] = f.x; v[1] = f.y;
        } else {
#pragma unroll
            for (int i = 0; i < N / 4; i++) {
                const float4 f = ((const float4 *)p)[i];
                v[4 * i] = f.x; v[4 * i + 1] = f.y; v[4 * i + 2] = f.z; v[4 * i + 3] = f.w;
            }
        }
    }
}

static __device__ __forceinline__ void prefetch_l2(const void *p) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

/* write the block's output heads: val(h, dq) is the float4 of dims 4dq.. of head h (unscaled),
 * inv[h] its normalizer; f32 row and its q8_1 form (8 lanes per block). All threads call. */
template <int HD, int HG, int W, typename F>
static __device__ __forceinline__ void fa_write_out(const cll_cu_attn_args &a, int64_t r, int h0, int hg,
                                                    const float *inv, F val) {
    constexpr int Q = HD / 4;
    const int64_t row = (int64_t)a.n_head * HD;
    float *out = a.out + r * row;
    cll_block_q8_1 *oq = a.outq ? (cll_block_q8_1 *)a.outq + r * ((row + 31) / 32) : nullptr;
    constexpr int NT = 32 * W, KT = (HG * Q + NT - 1) / NT;
#pragma unroll
    for (int k = 0; k < KT; k++) { /* uniform bound: whole warps take part */
        const int t = k * NT + threadIdx.x, h = t / Q, dq = t % Q;
        const bool ok = t < HG * Q && h < hg;
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (ok) {
            v = val(h, dq, k);
            const float s = inv[h];
            v = make_float4(v.x * s, v.y * s, v.z * s, v.w * s);
            ((float4 *)(out + (int64_t)(h0 + h) * HD))[dq] = v;
        }
        if (oq) cll_q8_1_store_f4(v, oq + ((int64_t)(h0 + h) * HD + 4 * dq) / 32, dq & 7, ok);
    }
}

/* fa_rope's angle for this thread's pairs, before the PDL wait (pos comes from the step's io copy): a
 * block of a multiple of n_rot / 2 threads meets one pair index i = threadIdx.x % (n_rot / 2) in every
 * row, so its cos and sin (the iterated theta, cll_rope_angle) are known before the q|k|v rows land. On
 * only where the rope step needs no whole-row pass first (no q / k RMS norm: llama, mistral, qwen2) */
struct FaRopeCS {
    float c, s;
    bool on;
};
static __device__ FaRopeCS fa_rope_pre(const cll_cu_rope_args &R, bool fused, int32_t pos) {
    FaRopeCS p{1.0f, 0.0f, false};
    const int half = fused ? R.n_rot / 2 : 0;
    if (half <= 0 || R.q_norm || R.k_norm || blockDim.x % half) return p;
    const int i = (int)threadIdx.x % half;
    const float theta_scale = powf(R.rp.base, -2.0f / (float)R.n_rot);
    float theta = (float)pos;
    for (int k = 0; k < i; k++) theta *= theta_scale; /* iterated as ggml does */
    cll_rope_angle(R.rp, theta, i, R.rope_ff ? R.rope_ff[i] : 1.0f, &p.c, &p.s);
    p.on = true;
    return p;
}

/* The rope step of one decode token inside an attention block (cuda/ops/rope.cu's rounding):
 * biases, per-head q/k RMS norm, rope, q prescale and fp16 rounding into buf rows 0..hg-1;
 * with store, k (row hg) and v (row hg+1) of kv head kvh are stored to the cache at (seq, pos)
 * (every block whose chunk holds pos stores the same bytes). Ends with a block barrier, so the
 * block's plain loads see the stored cell. Whole block. pre: fa_rope_pre's angle (on: the one-pass form). */
static __device__ void fa_rope(const cll_cu_rope_args &R, float *buf, int hd, int64_t r, int h0, int hg, int kvh,
                               int32_t pos, bool store, const FaRopeCS &pre) {
    const int H = R.n_head, KV = R.n_kv;
    const float *src = R.qkv + r * R.ld;
    const int64_t ko = store ? cll_cu_kv_cell(R.map, R.n_ctx, R.seq[r], pos) * ((int64_t)KV * hd) + (int64_t)kvh * hd : 0;
    /* element i of buf row `row` (q heads 0..hg-1, k hg, v hg+1) from the q|k|v row, bias added */
    auto src_at = [&](int row, int i) -> float {
        const float *bias = row < hg ? R.bq : row == hg ? R.bk : R.bv;
        const int64_t off = row < hg ? (int64_t)(h0 + row) * hd : (int64_t)(row == hg ? H : H + KV) * hd + (int64_t)kvh * hd;
        const int64_t bo = row < hg ? (int64_t)(h0 + row) * hd : (int64_t)kvh * hd;
        return bias ? src[off + i] + bias[bo + i] : src[off + i];
    };
    /* a finished element: q prescaled and rounded as the cache is (llama.cpp dots an fp16 q with an F16
     * cache), k and v stored to the cell; every row's value stays in buf */
    auto finish = [&](int row, int i, float v) {
        if (row < hg) {
            if (R.q_scale != 1.0f) v *= R.q_scale;
            if (R.kv_f16) v = __half2float(__float2half_rn(v));
        } else {
            void *cache = row == hg ? R.kc : R.vc;
            if (R.kv_f16) ((uint16_t *)cache)[ko + i] = cll_f2h(v);
            else ((float *)cache)[ko + i] = v;
        }
        buf[row * hd + i] = v;
    };
    if (pre.on) { /* one pass: a thread loads its pair's two values, turns them by the angle it computed before
                   * the wait, and finishes both; then the dims past n_rot and the v row; one barrier instead
                   * of four, the same bits */
        const int half = R.n_rot / 2, nrope = hg + (store ? 1 : 0), rest = hd - 2 * half;
        for (int idx = threadIdx.x; idx < nrope * half; idx += blockDim.x) {
            const int row = idx / half, i = idx % half; /* i == threadIdx.x % half: pre's pair */
            const int i0 = R.neox ? i : 2 * i, i1 = R.neox ? i + half : 2 * i + 1;
            const float x0 = src_at(row, i0), x1 = src_at(row, i1);
            finish(row, i0, __fsub_rn(__fmul_rn(x0, pre.c), __fmul_rn(x1, pre.s)));
            finish(row, i1, __fadd_rn(__fmul_rn(x0, pre.s), __fmul_rn(x1, pre.c)));
        }
        for (int idx = threadIdx.x; idx < nrope * rest + (store ? hd : 0); idx += blockDim.x) {
            const bool roped = idx < nrope * rest;
            const int row = roped ? idx / rest : hg + 1, i = roped ? 2 * half + idx % rest : idx - nrope * rest;
            finish(row, i, src_at(row, i));
        }
        __syncthreads();
        return;
    }
    const int nrows = hg + (store ? 2 : 0);
    for (int idx = threadIdx.x; idx < nrows * hd; idx += blockDim.x) buf[idx] = src_at(idx / hd, idx % hd);
    __syncthreads();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    if (R.q_norm || R.k_norm)
        for (int row = warp; row < nrows; row += nw) { /* warp per head; v has no norm */
            const float *w = row < hg ? R.q_norm : row == hg ? R.k_norm : nullptr;
            if (!w) continue;
            float *b = buf + row * hd;
            double acc = 0.0;
            for (int i = lane; i < hd; i += 32) acc += (double)(b[i] * b[i]);
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
            const float scale = 1.0f / sqrtf((float)(acc / (double)hd) + R.eps);
            for (int i = lane; i < hd; i += 32) b[i] = (b[i] * scale) * w[i];
        }
    __syncthreads();
    const int half = R.n_rot / 2;
    const float theta_scale = powf(R.rp.base, -2.0f / (float)R.n_rot);
    const int nrope = hg + (store ? 1 : 0); /* q heads and k */
    for (int idx = threadIdx.x; idx < nrope * half; idx += blockDim.x) {
        const int row = idx / half, i = idx % half;
        float theta = (float)pos;
        for (int k = 0; k < i; k++) theta *= theta_scale; /* iterated as ggml does */
        float c, sn;
        cll_rope_angle(R.rp, theta, i, R.rope_ff ? R.rope_ff[i] : 1.0f, &c, &sn);
        const int i0 = R.neox ? i : 2 * i, i1 = R.neox ? i + half : 2 * i + 1;
        float *b = buf + row * hd;
        const float x0 = b[i0], x1 = b[i1];
        b[i0] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, sn));
        b[i1] = __fadd_rn(__fmul_rn(x0, sn), __fmul_rn(x1, c));
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < nrows * hd; idx += blockDim.x) finish(idx / hd, idx % hd, buf[idx]);
    __syncthreads();
}

bool cll_cu_attention_fuses_rope(const cll_cu_attn_args *a, int64_t n) {
    static int on = -1, max_rows = -1;
    const int hd = a->hd_k;
    const bool rows_ok =
        n == 1 || (a->distinct_rows && n <= cll_cu_env_pos_int(&max_rows, "CLLAMA_CUDA_FUSE_ROPE_ROWS", CLL_CU_FUSE_ROPE_MAX_ROWS));
    return cll_cu_env_flag(&on, "CLLAMA_CUDA_FUSE_ROPE", true) && rows_ok && a->hd_v == hd &&
           (hd == 64 || hd == 128 || hd == 256) && a->n_kv > 0 && a->n_head % a->n_kv == 0 && a->rope.n_rot <= hd;
}

/* a GQA block's place: kv head, its q heads [h0, h0 + hg), token r, chunk c of nc live chunks
 * covering keys [c0, c1) of the live window [lo, pos] (cll_cu_attn_chunk_span over live =
 * min(act_chunks, n_chunks) chunks: key spans of max(min_chunk, len / live), or the streaming kernels'
 * whole tiles where a.gran says so); pos / seq come from the step's io copy, never from a kernel, so
 * they are readable before the PDL wait */
struct FaGeo {
    int kvh, h0, hg, c;
    int64_t r, base;
    int32_t pos, seq, c0, c1, nc, keys;
    __device__ FaGeo(const cll_cu_attn_args &a) {
        const int G = a.n_head / a.n_kv;
        const int n_sub = (int)gridDim.x / a.n_kv; /* the grid's x is n_kv * n_sub */
        const int hg_all = (G + n_sub - 1) / n_sub;
        kvh = blockIdx.x / n_sub;
        const int sg = blockIdx.x % n_sub;
        h0 = kvh * G + sg * hg_all;
        hg = min(hg_all, G - sg * hg_all);
        c = blockIdx.y;
        r = blockIdx.z;
        pos = a.pos[r];
        const int32_t lo = (a.n_swa > 0 && pos - a.n_swa + 1 > 0) ? pos - a.n_swa + 1 : 0, hi = pos + 1, len = hi - lo;
        const int32_t nch = cll_cu_attn_live_chunks(a.act_chunks, a.n_chunks);
        nc = cll_cu_attn_chunk_span(lo, hi, nch, a.min_chunk, a.gran, c, &c0, &c1);
        keys = len;
        seq = a.seq[r];
        base = (int64_t)seq * a.n_ctx;
    }
};

/* decode: the block's share of a.pf (the next product's weights) into L2 when this token's K and V
 * rows are few (cll_cu_attn_args.pf); after the wait, so it does not race the q|k|v product */
static __device__ __forceinline__ void fa_pf_next(const cll_cu_attn_args &a, const FaGeo &g) {
    if (!a.pf || threadIdx.x != 0 || gridDim.z != 1) return;
    if ((int64_t)g.keys * a.n_kv * (a.hd_k + a.hd_v) * (a.kv_f16 ? 2 : 4) > a.pf_kv_max) return;
    cll_l2_prefetch_share(a.pf, a.pf_bytes, (size_t)blockIdx.y * gridDim.x + blockIdx.x, (size_t)gridDim.x * gridDim.y);
}

/* a head's online-softmax step, once its keys' sum of e^(s - mn) is known (every lane holds it): lane 0
 * rescales the head's running sum by e^(mo - mn) (0 for the first keys), moves its max to mn and keeps
 * the factor for the head's acc (sm_c) */
static __device__ __forceinline__ void fa_commit_head(int h, float mo, float mn, float sum, int lane, float *sm_m,
                                                      float *sm_l, float *sm_c) {
    if (lane != 0) return;
    const float corr = mo == -INFINITY ? 0.0f : expf(mo - mn);
    sm_l[h] = sm_l[h] * corr + sum;
    sm_m[h] = mn;
    sm_c[h] = corr;
}

/* q of the block's heads into registers: lane (key slot, lane-in-key l) holds dims 8l..8l+7 of
 * each head (zeros past hg); from the fused rope's rows or the q rows */
template <int HD, int HG>
static __device__ __forceinline__ void fa_load_q(const cll_cu_attn_args &a, const FaGeo &g, const float *buf, int l,
                                                 float (&qv)[HG][8]) {
    const float *qb = a.fuse_rope ? buf : a.q + g.r * a.ld_q;
    const int64_t q0 = a.fuse_rope ? 0 : g.h0;
#pragma unroll
    for (int h = 0; h < HG; h++) {
        if (h < g.hg) {
            const float4 x0 = *(const float4 *)(qb + (q0 + h) * HD + 8 * l);
            const float4 x1 = *(const float4 *)(qb + (q0 + h) * HD + 8 * l + 4);
            qv[h][0] = x0.x; qv[h][1] = x0.y; qv[h][2] = x0.z; qv[h][3] = x0.w;
            qv[h][4] = x1.x; qv[h][5] = x1.y; qv[h][6] = x1.z; qv[h][7] = x1.w;
        } else {
#pragma unroll
            for (int e = 0; e < 8; e++) qv[h][e] = 0.0f;
        }
    }
}

/* The end both GQA kernels share: red[w][h][d] holds warp w's unnormalized sums, sm_m / sm_l the
 * block's running max and sum per head (all synced before the call). One live chunk writes the
 * output; else the block writes its partials and the last block of the group to land merges them
 * (S: SC floats a head of scratch; inv, last: block-shared). Partials: idx = (r*n_head + h)*n_chunks + c;
 * acc (n, H, n_chunks, HD) then (m, l) pairs. Whole block. */
template <int HD, int HG, int W, int SC>
static __device__ void fa_tail(const cll_cu_attn_args &a, const FaGeo &g, const float (*red)[HG][HD], float (*S)[SC],
                               float *sm_m, const float *sm_l, float *inv, bool *last) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t r = g.r;
    const int h0 = g.h0, hg = g.hg, c = g.c, nc = g.nc;
    constexpr int Q = HD / 4;
    auto block_acc = [&](int h, int dq, int) {
        float4 v = *(const float4 *)&red[0][h][4 * dq];
#pragma unroll
        for (int w = 1; w < W; w++) {
            const float4 b = *(const float4 *)&red[w][h][4 * dq];
            v.x += b.x; v.y += b.y; v.z += b.z; v.w += b.w;
        }
        return v;
    };
    if (nc == 1) {
        if (threadIdx.x < HG) inv[threadIdx.x] = sm_l[threadIdx.x] > 0.0f ? 1.0f / sm_l[threadIdx.x] : 0.0f;
        __syncthreads();
        fa_write_out<HD, HG, W>(a, r, h0, hg, inv, block_acc);
        return;
    }
    /* partials */
    const int64_t H = a.n_head, NCH = a.n_chunks;
    float *pacc = a.part;
    float *pml = a.part + (int64_t)gridDim.z * H * NCH * HD;
    for (int t = threadIdx.x; t < hg * Q; t += blockDim.x) {
        const int h = t / Q, dq = t % Q;
        const int64_t idx = (r * H + h0 + h) * NCH + c;
        ((float4 *)(pacc + idx * HD))[dq] = block_acc(h, dq, 0);
        if (dq == 0) {
            pml[2 * idx] = sm_m[h];
            pml[2 * idx + 1] = sm_l[h];
        }
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        int *cnt = a.count + r * H + h0;
        *last = atomicAdd(cnt, 1) == nc - 1;
        if (*last) *cnt = 0; /* self-resetting for the next launch / replay */
    }
    __syncthreads();
    if (!*last) return;
    /* merge: per head M = max m_c, L = sum l_c e^(m_c - M), o = sum acc_c e^(m_c - M) / L.
     * Partials are read with ld.cg (other blocks wrote them; L1 is not coherent). */
    for (int h = warp; h < hg; h += W) {
        const float *ml = pml + 2 * ((r * H + h0 + h) * NCH);
        float M = -INFINITY;
        for (int cc = lane; cc < nc; cc += 32) M = fmaxf(M, __ldcg(ml + 2 * cc));
        M = cll_warp_max(M);
        float L = 0.0f;
        for (int cc = lane; cc < nc; cc += 32) L += __ldcg(ml + 2 * cc + 1) * expf(__ldcg(ml + 2 * cc) - M);
        L = cll_warp_sum(L);
        if (lane == 0) {
            sm_m[h] = M;
            inv[h] = L > 0.0f ? 1.0f / L : 0.0f;
        }
    }
    constexpr int KT = (HG * Q + 32 * W - 1) / (32 * W);
    float4 o[KT];
#pragma unroll
    for (int k = 0; k < KT; k++) o[k] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int p0 = 0; p0 < nc; p0 += SC) { /* chunk weights of a piece to smem, then the sums */
        const int pn = min(SC, nc - p0);
        __syncthreads();
        for (int t = threadIdx.x; t < hg * pn; t += blockDim.x) {
            const int h = t / pn, cc = t % pn;
            S[h][cc] = expf(__ldcg(pml + 2 * ((r * H + h0 + h) * NCH + p0 + cc)) - sm_m[h]);
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < KT; k++) {
            const int t = threadIdx.x + k * 32 * W, h = t / Q, dq = t % Q;
            if (t >= HG * Q || h >= hg) continue;
            const float4 *pa = (const float4 *)(pacc + ((r * H + h0 + h) * NCH + p0) * HD) + dq;
#pragma unroll 8
            for (int cc = 0; cc < pn; cc++) {
                const float4 b = __ldcg(pa + (int64_t)cc * Q);
                const float e = S[h][cc];
                o[k].x = fmaf(b.x, e, o[k].x);
                o[k].y = fmaf(b.y, e, o[k].y);
                o[k].z = fmaf(b.z, e, o[k].z);
                o[k].w = fmaf(b.w, e, o[k].w);
            }
        }
    }
    __syncthreads();
    fa_write_out<HD, HG, W>(a, r, h0, hg, inv, [&](int, int, int k) { return o[k]; });
}

/* PG: the cache is paged (a.map.blk): every key's row comes from the block table; else the rows of
 * a sequence are consecutive from seq * n_ctx (the address arithmetic of the unpaged kernel stays
 * what it was: a per-key table lookup there cost the l2-7b decode step ~10% on the H200) */
template <bool F16, int HD, int HG, bool PG, int W, int U, int MINB = 1>
__global__ static void __launch_bounds__(32 * W, MINB) attn_gqa_kernel(cll_cu_attn_args a) {
    constexpr int LPK = HD / 8, KPW = 32 / LPK, NV = HD / 32; /* U: keys in flight a warp (4 or 8) */
    __shared__ float S[HG][FA_CS];
    __shared__ float sm_m[HG], sm_l[HG], sm_c[HG];
    __shared__ __align__(16) float red[W][HG][HD];
    __shared__ bool last;
    /* paged: the cells of the sub-chunk's keys, looked up once per sub-chunk by the whole block (one
     * table read a thread, all in flight together) instead of a dependent table read before every
     * K and V load of the two phases */
    __shared__ int32_t cell[PG ? FA_CS : 1];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const FaGeo g(a);
    const int kvh = g.kvh, h0 = g.h0, hg = g.hg, c = g.c;
    const int64_t r = g.r, base = g.base;
    const int32_t pos = g.pos, seq = g.seq, nc = g.nc, c0 = g.c0, c1 = g.c1;
    /* a chunk this step leaves empty (tg128's 1-128 keys in a 5-chunk grid: 4 blocks of 5) leaves at once,
     * before the PDL wait: it held its SM slot until the q|k|v product was done, and the o product's
     * blocks could launch only once the last such block had come and gone. Unless it owes its share of
     * the next product's L2 prefetch (a.pf, after the wait) */
    if (c >= nc && !a.pf) return;
    const int64_t ks = (int64_t)a.n_kv * HD; /* hd_k == hd_v == HD */
    /* the cache row of the key at position p */
    auto krow = [&](int32_t p) -> int64_t { return PG ? cll_cu_kv_cell(a.map, a.n_ctx, seq, p) : base + p; };
    constexpr int ESZ = F16 ? 2 : 4;
    /* PRE: a chunk that one pass of each phase covers (a decode step over <= 128 keys: tg128's steps)
     * has its cached K and V rows loaded into registers before the PDL wait, in the lanes that dot them
     * (kpre: phase A's, vpre: phase C's); those cells were written by earlier steps, not by the kernel
     * this one waits for. The new cell (pos) is stored by the fused rope after the wait: its registers
     * take the rope's rows, rounded as the cache stores them. Two L2 round trips off the block's chain */
    constexpr bool PRE = F16 && HD <= 128 && W == 16; /* the small grids (one block an SM) of a single token's step;
                                                       * wider grids keep their registers (154-255 vs 80-163) */
    /* slots a lane holds (a 16-warp block, U = 4: phase A's 4 cover FA_CS keys, phase C's 4 a chunk of <= 64 keys;
     * 8 of phase C's before the wait, every key of FA_CS, measured slower in the step at the register cap) */
    constexpr int PA = PRE ? (U < FA_CS / (W * KPW) ? U : FA_CS / (W * KPW)) : 1;
    constexpr int PC = PRE ? (U < FA_CS / W ? U : FA_CS / W) : 1;
    /* PL: phase C's slots past PC for a 65-128-key chunk, loaded after phase A's dots (kpre is dead then) and
     * in flight through the softmax; a <= 64-key chunk keeps its own p v path (vpre in the loop below: run
     * through the new slot loop it was ~0.3 us slower). ptxas, sm_90a: the MHA body 124 -> 128 registers, no
     * spill; GQA 4 116 -> 160 B spilled (docs/cuda.md, thirty-seventh session) */
    constexpr int PL = PRE ? FA_CS / W - PC : 1;
    uint32_t kpre[PA][4], vpre[PC][PRE ? NV / 2 : 1], vlate[PL > 0 ? PL : 1][PRE ? NV / 2 : 1];
    const bool preA = PRE && a.pre_kv && a.fuse_rope && c < nc && c1 - c0 <= FA_CS && c1 - c0 <= W * KPW * PA;
    const bool preC = preA && c1 - c0 <= W * PC;
    if constexpr (PRE) {
        if (preA) {
            const int cs = c1 - c0, sub = lane / LPK, l = lane % LPK;
            const int64_t kvo = (int64_t)kvh * HD;
#pragma unroll
            for (int u = 0; u < PA; u++) {
                const int jj = (u * W + warp) * KPW + sub;
                if (jj < cs && c0 + jj != pos) {
                    const uint4 w = *(const uint4 *)((const uint16_t *)a.kc + krow(c0 + jj) * ks + kvo + 8 * l);
                    kpre[u][0] = w.x, kpre[u][1] = w.y, kpre[u][2] = w.z, kpre[u][3] = w.w;
                }
            }
            /* the chunk's first W PC keys (all of a <= 64-key chunk); the rest: vlate, after phase A */
#pragma unroll
            for (int u = 0; u < PC; u++) {
                const int jj = u * W + warp;
                if (jj < cs && c0 + jj != pos) {
                    const uint16_t *p = (const uint16_t *)a.vc + krow(c0 + jj) * ks + kvo + NV * lane;
#pragma unroll
                    for (int i = 0; i < NV / 2; i++) vpre[u][i] = ((const uint32_t *)p)[i];
                }
            }
        }
    }
    if (c < nc && !preC) { /* K and V rows of the first sub-chunk to L2, 128 B lines (a 65-128-key chunk too:
                            * its V rows past slot PC are loaded into vlate after phase A) */
        constexpr int LINES = (HD * ESZ + 127) / 128;
        const int nk = min(c1 - c0, a.kv_pf_keys);
        for (int i = threadIdx.x; i < 2 * nk * LINES; i += blockDim.x) {
            const int which = i / (nk * LINES), rem = i % (nk * LINES), j = rem / LINES, ln = rem % LINES;
            const char *row = (const char *)(which ? a.vc : a.kc) + (krow(c0 + j) * ks + (int64_t)kvh * HD) * ESZ;
            prefetch_l2(row + ln * 128);
        }
    }
    const FaRopeCS rcs = fa_rope_pre(a.rope, a.fuse_rope && c < nc, pos);
    cll_pdl_wait();
    cll_pdl_trigger();
    fa_pf_next(a, g);
    if (c >= nc || (a.drop & 32)) return;
    float *buf = &red[0][0][0]; /* fused rope: rows q 0..hg-1, k hg, v hg+1 (red is free until the end) */
    if (a.fuse_rope && !(a.drop & 1)) fa_rope(a.rope, buf, HD, r, h0, hg, kvh, pos, pos >= c0 && pos < c1, rcs);
    /* q of the group's heads: lane (key group slot sub, lane-in-key l) holds dims 8l..8l+7 */
    const int sub = lane / LPK, l = lane % LPK;
    float qv[HG][8];
    fa_load_q<HD, HG>(a, g, buf, l, qv);
    if (threadIdx.x < HG) {
        sm_m[threadIdx.x] = -INFINITY;
        sm_l[threadIdx.x] = 0.0f;
    }
    float acc[HG][NV];
#pragma unroll
    for (int h = 0; h < HG; h++)
#pragma unroll
        for (int e = 0; e < NV; e++) acc[h][e] = 0.0f;
    const int64_t kvo = (int64_t)kvh * HD;
    for (int32_t s0 = c0; s0 < c1; s0 += FA_CS) {
        const int cs = min(FA_CS, c1 - s0);
        const int64_t rb = (base + s0) * ks + kvo; /* unpaged: the sub-chunk's first row */
        if constexpr (PG) {
            for (int j = threadIdx.x; j < cs; j += 32 * W) cell[j] = (int32_t)krow(s0 + j);
            __syncthreads();
        }
        /* A: scores */
        for (int jb = 0; !(a.drop & 2) && jb < cs; jb += W * KPW * U) {
            float kv[U][8];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int jj = jb + (u * W + warp) * KPW + sub;
                if (preA && jj < cs) { /* the registers loaded before the wait (one pass: jb == 0; u < PA, as
                                        * jj < cs <= W KPW PA) */
                    if constexpr (PRE) {
                        if (s0 + jj == pos) f16_round<8>(buf + hg * HD + 8 * l, kv[u]);
                        else h2_unpack<8>(kpre[u < PA ? u : PA - 1], kv[u]);
                    }
                } else if (jj < cs)
                    kv_ld<F16, 8>(a.kc, (PG ? (int64_t)cell[jj] * ks + kvo : rb + (int64_t)jj * ks) + 8 * l, kv[u]);
                else
#pragma unroll
                    for (int e = 0; e < 8; e++) kv[u][e] = 0.0f;
            }
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int jj = jb + (u * W + warp) * KPW + sub;
#pragma unroll
                for (int h = 0; h < HG; h++) {
                    if (h >= hg) continue; /* block-uniform */
                    float dot = 0.0f;
#pragma unroll
                    for (int e = 0; e < 8; e++) dot = fmaf(qv[h][e], kv[u][e], dot);
#pragma unroll
                    for (int o = LPK / 2; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
                    if (l == 0 && jj < cs) S[h][jj] = dot * a.scale;
                }
            }
        }
        if constexpr (PRE && PL > 0) {
            if (preA && !preC) { /* a 65-128-key chunk: its V rows past slot PC, in flight through the softmax */
#pragma unroll
                for (int u = 0; u < PL; u++) {
                    const int jj = (PC + u) * W + warp;
                    if (jj < cs && s0 + jj != pos) {
                        const uint16_t *p = (const uint16_t *)a.vc + krow(s0 + jj) * ks + kvo + NV * lane;
#pragma unroll
                        for (int i = 0; i < NV / 2; i++) vlate[u][i] = ((const uint32_t *)p)[i];
                    }
                }
            }
        }
        __syncthreads();
        /* B: online softmax per head over the sub-chunk */
        for (int h = warp; !(a.drop & 4) && h < hg; h += W) {
            float mx = -INFINITY;
            for (int j = lane; j < cs; j += 32) mx = fmaxf(mx, S[h][j]);
            mx = cll_warp_max(mx);
            const float mo = sm_m[h], mn = fmaxf(mo, mx);
            float sum = 0.0f;
            for (int j = lane; j < cs; j += 32) {
                const float p = expf(S[h][j] - mn);
                S[h][j] = p;
                sum += p;
            }
            fa_commit_head(h, mo, mn, cll_warp_sum(sum), lane, sm_m, sm_l, sm_c);
        }
        __syncthreads();
        /* C: acc = acc * corr + sum_j p_j v_j */
#pragma unroll
        for (int h = 0; h < HG; h++) {
            const float cr = h < hg ? sm_c[h] : 0.0f;
#pragma unroll
            for (int e = 0; e < NV; e++) acc[h][e] *= cr;
        }
        if constexpr (PRE) {
            /* a 65-128-key chunk: key jj = u W + warp from slot u (vpre, then vlate), in the order the loop
             * below takes them (U a pass: the same sums) */
            if (preA && !preC && !(a.drop & 8)) {
#pragma unroll
                for (int u = 0; u < PC + PL; u++) {
                    const int jj = u * W + warp;
                    if (jj >= cs) continue; /* warp-uniform */
                    float vv[NV];
                    if (s0 + jj == pos) f16_round<NV>(buf + (hg + 1) * HD + NV * lane, vv);
                    else if (u < PC) h2_unpack<NV>(vpre[u < PC ? u : 0], vv);
                    else h2_unpack<NV>(vlate[u >= PC && u - PC < PL ? u - PC : 0], vv);
#pragma unroll
                    for (int h = 0; h < HG; h++) {
                        if (h >= hg) continue;
                        const float p = S[h][jj];
#pragma unroll
                        for (int e = 0; e < NV; e++) acc[h][e] = fmaf(p, vv[e], acc[h][e]);
                    }
                }
            }
        }
        for (int jb = 0; !(preA && !preC) && !(a.drop & 8) && jb < cs; jb += W * U) {
            float vv[U][NV];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int jj = jb + u * W + warp;
                if (preC && jj < cs) { /* one pass: jb == 0; u < PC, as jj < cs <= W PC */
                    if constexpr (PRE) {
                        if (s0 + jj == pos) f16_round<NV>(buf + (hg + 1) * HD + NV * lane, vv[u]);
                        else h2_unpack<NV>(vpre[u < PC ? u : PC - 1], vv[u]);
                    }
                } else if (jj < cs)
                    kv_ld<F16, NV>(a.vc, (PG ? (int64_t)cell[jj] * ks + kvo : rb + (int64_t)jj * ks) + NV * lane, vv[u]);
            }
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int jj = jb + u * W + warp;
                if (jj >= cs) continue; /* warp-uniform */
#pragma unroll
                for (int h = 0; h < HG; h++) {
                    if (h >= hg) continue;
                    const float p = S[h][jj];
#pragma unroll
                    for (int e = 0; e < NV; e++) acc[h][e] = fmaf(p, vv[u][e], acc[h][e]);
                }
            }
        }
        __syncthreads(); /* S is rewritten by the next sub-chunk */
    }
    if (a.drop & 16) return;
#pragma unroll
    for (int h = 0; h < HG; h++)
#pragma unroll
        for (int e = 0; e < NV; e++) red[warp][h][NV * lane + e] = acc[h][e];
    __syncthreads();
    __shared__ float inv[HG];
    fa_tail<HD, HG, W, FA_CS>(a, g, red, S, sm_m, sm_l, inv, &last);
}

/* ---- the streaming GQA kernel (long contexts): a block walks its chunk in tiles of FS_TK keys
 * whose K and V rows stream into shared memory through an NS-stage cp.async pipeline (FsGeo<HD>::NS, or
 * NSX: cll_cu_attn_stream_ns)
 * (16-byte copies, NS - 1 tiles in flight while one is scored), so a few blocks an SM keep the
 * bytes in flight that the split kernel above gets only from thousands of one-sub-chunk blocks.
 * 8 warps (a 4-warp block of 32-key tiles ran its own chain: 1.65 TB/s at 8192 keys); per tile:
 * scores (HD/8 lanes a key, 8 dims a lane, q in registers) -> S, online softmax (warp per head),
 * acc += p v (warp per key, HD/32 dims a lane), then fa_tail as above. The first NS - 1 tiles are
 * requested before the PDL wait; the newest cell (pos, stored by the fused rope after the wait) is
 * patched into its tile from the rope rows. F16 cache, head dim 64, 128 or 256; the same arithmetic
 * per key as attn_gqa_kernel but in other sum orders. WI (one q head a block, cll_cu_attn_stream_wi):
 * the tile body without the two inner barriers and the one-warp softmax: warp w scores its TK / W keys
 * of the tile, keeps its own running max, sum and acc, and the warps' states meet once before fa_tail.
 * TC (CLL_CU_ATTN_STREAM_TC, head dims <= 128): the WI scheme on tensor cores, 8 keys a warp: S = Q K^T
 * by mma m16n8k16 (K by ldmatrix from XOR-swizzled rows), the softmax in quads of lanes, O += P V by
 * one mma m16n8k16 an n-tile (p as f16 hi + lo, its two k-halves against the same V rows, V by ldmatrix
 * .trans; two m16n8k8 before 2026-12-07); docs/cuda.md "The tensor-core tile body".
 * Issuing each tile's copies before the wait for the oldest (NS tiles in flight instead of NS - 1, a
 * second barrier a tile) was measured and left out: no gain in the step (docs/cuda.md). */
#define FS_TK 64
#define FS_PHASED 0 /* the tile bodies (TC: cll_cu_attn_form; WI / PHASED: cll_cu_attn_stream_wi) */
#define FS_WI 1
#define FS_TC 2
/* live chunks for about FS_PER_SM blocks an SM (cll_cu_attn_active_chunks; the form: cll_cu_attn_form) */
#define FS_PER_SM 2
#define FS_WARPS 8
template <int HD> struct FsGeo {
    static constexpr int ROWB = HD * 2;                 /* bytes of a K or V row */
    static constexpr int STAGE = 2 * FS_TK * ROWB;      /* a tile's K rows then its V rows */
    static constexpr int NS = HD <= 64 ? 4 : HD <= 128 ? 3 : 2; /* stages: 64-128 KB a block */
    static constexpr int SMEM = NS * STAGE;
};

static __device__ __forceinline__ void fs_cp16(void *sdst, const void *gsrc) {
    const uint32_t sa = (uint32_t)__cvta_generic_to_shared(sdst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(gsrc) : "memory");
}
static __device__ __forceinline__ void fs_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> static __device__ __forceinline__ void fs_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* 16 bytes global -> shared, zeros instead where !ok (src is then not read) */
static __device__ __forceinline__ void fs_cp16z(void *sdst, const void *gsrc, bool ok) {
    const uint32_t sa = (uint32_t)__cvta_generic_to_shared(sdst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(sa), "l"(gsrc), "r"(ok ? 16 : 0) : "memory");
}

/* a 32-bit word of shared memory, read where it stands in the code (volatile: not hoisted out of a loop
 * into a register for its whole span) */
static __device__ __forceinline__ uint32_t fs_lds(const uint32_t *p) {
    uint32_t v;
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"((uint32_t)__cvta_generic_to_shared(p)));
    return v;
}

/* four 8x8 f16 matrices from shared memory (lane l gives row l % 8 of matrix l / 8); T: transposed */
template <bool T> static __device__ __forceinline__ void fs_ldm4(const unsigned char *p, uint32_t (&r)[4]) {
    const uint32_t sa = (uint32_t)__cvta_generic_to_shared(p);
    if constexpr (T)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(sa));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(sa));
}

/* c += A B, m16n8k16 f16 -> f32, with A's rows 8-15 zero: a = (a0, a2) of rows 0-7; c[0..1] are
 * row lane / 4's, c[2..3] (rows 8-15) stay 0 */
static __device__ __forceinline__ void fs_mma16816(float (&c)[4], const uint32_t (&a)[2], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(0u), "r"(a[1]), "r"(0u), "r"(b0), "r"(b1));
}

/* c (row lane / 4 of an m16n8 tile) += (A_hi + A_lo) B in ONE m16n8k16 (A's rows 8-15 zero): k 0-7
 * take the hi halves a_hi against B's 8 rows b, k 8-15 the lo halves a_lo against the same rows again.
 * The p v product of the tile body (p as f16 hi + lo) was two m16n8k8 a tile and n-tile, each with its
 * own zero rows to marshal: half the mma and most of the ~100 register moves a tile went with them
 * (a different summation inside the mma: the bits of this body, held to the f64 reference and the TMA
 * pipelines to the cp.async one's by the gates) */
static __device__ __forceinline__ void fs_mma16816_hl(float (&c)[2], uint32_t a_hi, uint32_t a_lo, uint32_t b) {
    float z2 = 0.0f, z3 = 0.0f; /* rows 8-15: nothing */
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(z2), "+f"(z3)
                 : "r"(a_hi), "r"(0u), "r"(a_lo), "r"(0u), "r"(b), "r"(b));
}

/* 8 dims of a staged K row (f16, 16 bytes) as floats; zeros for a key past the tile */
static __device__ __forceinline__ void fs_k8(const unsigned char *p, bool live, float (&kv)[8]) {
    if (!live) {
#pragma unroll
        for (int q = 0; q < 8; q++) kv[q] = 0.0f;
        return;
    }
    const uint4 u = *(const uint4 *)p;
    const float2 f0 = __half22float2(*(const __half2 *)&u.x), f1 = __half22float2(*(const __half2 *)&u.y);
    const float2 f2 = __half22float2(*(const __half2 *)&u.z), f3 = __half22float2(*(const __half2 *)&u.w);
    kv[0] = f0.x; kv[1] = f0.y; kv[2] = f1.x; kv[3] = f1.y;
    kv[4] = f2.x; kv[5] = f2.y; kv[6] = f3.x; kv[7] = f3.y;
}

/* lane's NV dims of a staged V row (f16) as floats */
template <int NV> static __device__ __forceinline__ void fs_v(const unsigned char *row, int lane, float (&vv)[NV]) {
    const uint16_t *vr = (const uint16_t *)row + NV * lane;
    if constexpr (NV == 4) {
        const uint2 u = *(const uint2 *)vr;
        const float2 f0 = __half22float2(*(const __half2 *)&u.x), f1 = __half22float2(*(const __half2 *)&u.y);
        vv[0] = f0.x; vv[1] = f0.y; vv[2] = f1.x; vv[3] = f1.y;
    } else {
#pragma unroll
        for (int q = 0; q < NV; q++) vv[q] = cll_h2f(vr[q]);
    }
}

/* TMQ: 0 the cp.async pipeline, 1 the TMA one (a block barrier a tile before a stage is refilled), 2 the
 * TMA one with tickets (TKT: the last warp to finish reading a stage refills it; no block barrier) */
template <int HD, int HG, bool PG, int BODY, int NSX = 0, bool PW = false, int TMQ = 0>
__global__ static void __launch_bounds__(32 * FS_WARPS, BODY == FS_TC && NSX == 0 ? FS_PER_SM : 1) attn_stream_kernel(cll_cu_attn_args a) {
    constexpr bool WI = BODY == FS_WI, TC = BODY == FS_TC, TMA = TMQ != 0, TKT = TMQ == 2;
    static_assert(!PW || TC, "the per-warp pipeline: the tensor-core body only (a warp reads only its own keys' rows)");
    static_assert(!TMA || (TC && !PG && !PW && (HD == 64 || HD == 128)),
                  "the TMA pipeline: the tensor-core body over an unpaged cache, 64-dim boxes");
    static_assert(!TC || HD <= 128, "the tensor-core body keeps HD / 8 accumulators and HD / 8 q fragments a lane");
    constexpr int W = FS_WARPS, LPK = HD / 8, KPW = 32 / LPK, NV = HD / 32, TK = FS_TK;
    constexpr int ROWB = FsGeo<HD>::ROWB, STAGE = FsGeo<HD>::STAGE, NS = NSX ? NSX : FsGeo<HD>::NS, CPR = ROWB / 16;
    static_assert(W * HG * HD * 4 <= NS * STAGE, "the reduction buffer aliases the stages");
    extern __shared__ __align__(16) unsigned char fs_smem_raw[];
    /* TMA: the stages start on a 1024-byte boundary (the 128-byte swizzle repeats every 8 rows of 128
     * bytes, keyed on the address; the launch adds 1 KB for the padding) */
    unsigned char *const fs_smem = TMA ? fs_smem_raw + ((1024u - (cll_smem_u32(fs_smem_raw) & 1023u)) & 1023u) : fs_smem_raw;
    __shared__ __align__(8) uint64_t fs_full[TMA ? NS : 1]; /* TMA: stage s's tile landed (its phase parity) */
    __shared__ int fs_tk[TKT ? NS : 1]; /* TKT: warps done with stage s's tiles (W a tile; the W-th refills) */
    __shared__ float S[HG][TK];
    __shared__ float sm_m[HG], sm_l[HG], sm_c[HG], inv[HG];
    __shared__ __align__(16) float buf[(HG + 2) * HD]; /* fused rope: q rows 0..hg-1, k hg, v hg+1 */
    __shared__ bool last;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const FaGeo g(a);
    if (g.c >= g.nc && !a.pf) return; /* an empty chunk leaves before the wait (attn_gqa_kernel) */
    const int64_t ks = (int64_t)a.n_kv * HD, kvo = (int64_t)g.kvh * HD;
    auto krow = [&](int32_t p) -> int64_t { return PG ? cll_cu_kv_cell(a.map, a.n_ctx, g.seq, p) : g.base + p; };
    /* TC: the byte offset of 16-byte chunk c of row j in a K or V tile, chunks XOR-swizzled by j % 8
     * so the 8 rows an ldmatrix matrix reads (one chunk each) fall in distinct banks. TMA: the tile is
     * HD / 64 boxes of TK rows x 128 bytes (dims 64b .. 64b + 63 in box b), in each the TMA engine's
     * 128-byte swizzle: chunk c of row j at chunk c ^ (j % 8) of the row's 128 bytes */
    auto fs_swz = [](int j, int c) -> int {
        if constexpr (TMA) return (c >> 3) * (TK * 128) + j * 128 + (((c & 7) ^ (j & 7)) << 4);
        else return j * ROWB + ((c ^ (j & 7)) << 4);
    };
    const int nt = g.c < g.nc ? (g.c1 - g.c0 + TK - 1) / TK : 0;
    /* TMA: the calling thread asks for tile t (< nt): its K and V boxes (HD / 64 each), STAGE bytes
     * counted on stage t % NS's barrier; rows past the chunk come too (other cells, or zeros past the
     * cache), so the body zeroes a last tile's V rows past it */
    /* tile t's K and V boxes asked of L2 only (a.l2pf_tiles ahead of the stages; nothing past the chunk) */
    auto tma_l2 = [&](int t) {
        if constexpr (TMA) {
            if (t >= nt) return;
            const int32_t y = (int32_t)(g.base + g.c0 + t * TK);
#pragma unroll
            for (int b = 0; b < HD / 64; b++) {
                cll_tma_prefetch_2d(a.tmk, g.kvh * HD + 64 * b, y);
                cll_tma_prefetch_2d(a.tmv, g.kvh * HD + 64 * b, y);
            }
        }
    };
    auto tma_tile = [&](int t) {
        if constexpr (TMA) {
            const int sg = t % NS;
            unsigned char *st = fs_smem + sg * STAGE;
            const int32_t y = (int32_t)(g.base + g.c0 + t * TK);
            cll_mbar_expect_tx(&fs_full[sg], (uint32_t)STAGE);
#pragma unroll
            for (int b = 0; b < HD / 64; b++) {
                cll_tma_load_2d(st + b * (TK * 128), a.tmk, g.kvh * HD + 64 * b, y, &fs_full[sg]);
                cll_tma_load_2d(st + TK * ROWB + b * (TK * 128), a.tmv, g.kvh * HD + 64 * b, y, &fs_full[sg]);
            }
        }
    };
    /* tile t's K and V rows into stage t % NS (one commit group per call, empty past the chunk) */
    auto issue = [&](int t) {
        if constexpr (TMA) { /* one thread */
            if (t < nt && threadIdx.x == 0) tma_tile(t);
            return;
        }
        if (t < nt) {
            const int32_t k0 = g.c0 + t * TK;
            const int nk = min(TK, g.c1 - k0);
            unsigned char *st = fs_smem + (t % NS) * STAGE;
            if (PW) { /* the warp's own KW rows of the tile (the only ones its body reads), a K and a V copy
                       * per 16-byte chunk, zeros past the chunk as below */
                constexpr int KW = TK / W;
                for (int i = lane; i < KW * CPR; i += 32) {
                    const int j = warp * KW + i / CPR, q = i % CPR;
                    const bool ok = j < nk;
                    const int64_t o = (krow(k0 + (ok ? j : 0)) * ks + kvo) * 2 + q * 16;
                    fs_cp16z(st + fs_swz(j, q), (const char *)a.kc + o, ok);
                    fs_cp16z(st + TK * ROWB + fs_swz(j, q), (const char *)a.vc + o, ok);
                }
            } else if (TC) { /* thread: chunk q of rows j, j + RPI, ..: a K and a V copy per row; every
                                 * row of the tile, zeros past the chunk (p = 0 must meet a finite V) */
                const int q = threadIdx.x % CPR;
                for (int j = threadIdx.x / CPR; j < TK; j += 32 * W / CPR) {
                    const bool ok = j < nk;
                    const int64_t o = (krow(k0 + (ok ? j : 0)) * ks + kvo) * 2 + q * 16;
                    fs_cp16z(st + fs_swz(j, q), (const char *)a.kc + o, ok);
                    fs_cp16z(st + TK * ROWB + fs_swz(j, q), (const char *)a.vc + o, ok);
                }
            } else
                for (int i = threadIdx.x; i < 2 * TK * CPR; i += 32 * W) {
                    const int which = i / (TK * CPR), rem = i % (TK * CPR), j = rem / CPR, q = rem % CPR;
                    if (j < nk)
                        fs_cp16(st + which * TK * ROWB + j * ROWB + q * 16,
                                (const char *)(which ? a.vc : a.kc) + (krow(k0 + j) * ks + kvo) * 2 + q * 16);
                }
        }
        fs_commit();
    };
    if constexpr (TMA) {
        if (threadIdx.x == 0) {
            for (int i = 0; i < NS; i++) cll_mbar_init(&fs_full[i], 1); /* one arrival: the issuing thread's */
            if constexpr (TKT)
                for (int i = 0; i < NS; i++) fs_tk[i] = 0;
            cll_mbar_init_fence();
        }
        __syncthreads();
    }
    /* cells before pos were written by earlier steps: their copies may start before the wait;
     * pos itself is patched below (fused rope) or, unfused, everything waits */
    if (a.fuse_rope)
        for (int t = 0; t < NS - 1; t++) issue(t);
    const FaRopeCS rcs = fa_rope_pre(a.rope, a.fuse_rope && g.c < g.nc, g.pos);
    cll_pdl_wait();
    cll_pdl_trigger();
    fa_pf_next(a, g);
    if (g.c >= g.nc) return;
    if (!a.fuse_rope)
        for (int t = 0; t < NS - 1; t++) issue(t);
    if (PW || TKT) issue(NS - 1); /* the last stage is free: its tile streams while the rope runs */
    if constexpr (TKT)
        if (threadIdx.x == 0) /* the tiles after the stages', asked of L2 (CLLAMA_CUDA_ATTN_L2PF) */
            for (int t = NS; t < NS + a.l2pf_tiles; t++) tma_l2(t);
    const bool has_pos = g.pos >= g.c0 && g.pos < g.c1;
    if (a.fuse_rope) fa_rope(a.rope, buf, HD, g.r, g.h0, g.hg, g.kvh, g.pos, has_pos, rcs);
    const int sub = lane / LPK, l = lane % LPK;
    float qv[HG][8];
    fa_load_q<HD, HG>(a, g, buf, l, qv);
    if (threadIdx.x < HG) {
        sm_m[threadIdx.x] = -INFINITY;
        sm_l[threadIdx.x] = 0.0f;
    }
    float acc[HG][NV];
#pragma unroll
    for (int h = 0; h < HG; h++)
#pragma unroll
        for (int e = 0; e < NV; e++) acc[h][e] = 0.0f;
    float wm[HG], wl[HG]; /* WI: the warp's running max and sum per head (every lane the same) */
#pragma unroll
    for (int h = 0; h < HG; h++) wm[h] = -INFINITY, wl[h] = 0.0f;
    /* TC: lane holds head lane / 4's running max and sum (its quad the same), its o at dims
     * 8n + 2 (lane % 4) + {0, 1} (C rows 0-7 of each m16n8 tile), and q as A fragments (row = head),
     * exact in f16: both rope paths round q to f16 for an F16 cache, the only cache this kernel reads */
    constexpr int TKS = TC ? HD / 16 : 1, TNT = TC ? HD / 8 : 1;
    float tm = -INFINITY, tl = 0.0f, tacc[TNT][2];
    /* QS (TC at two blocks an SM): the q fragments live in shared memory, lane-major (every warp's are the
     * same; warp 0 writes them), and each tile reads them back (fs_lds): held in registers they pushed the
     * body past its 128 registers, and ptxas spilled them and loop scalars to local memory (48-116 bytes a
     * thread, ~10 local accesses a warp a tile on the MHA kernel's critical path; H100 kbench -A l2-7b 8192
     * keys 56.2 -> 53.0 us, tg128 @ d8192 l2-7b Q4_K_M 274.3 / 274.8 -> 286.5 / 285.6, docs/cuda.md). The
     * deep-staged body (NSX, one block an SM, up to 255 registers) never spilled and keeps them in registers
     * (shared: l3-8b 8192 keys 19.6 -> 20.0 us) */
    constexpr bool QS = TC && NSX == 0;
    __shared__ uint32_t qs[QS ? TKS * 2 * 32 : 1];
    uint32_t qf[TKS][2];
    if constexpr (TC) {
        const int hq = lane >> 2, cq = (lane & 3) * 2;
        const float *qb = a.fuse_rope ? buf : a.q + g.r * a.ld_q;
        const int64_t q0 = a.fuse_rope ? 0 : g.h0;
#pragma unroll
        for (int k = 0; k < TKS; k++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                float x0 = 0.0f, x1 = 0.0f;
                if (hq < g.hg) {
                    const float *qp = qb + (q0 + hq) * HD + 16 * k + 8 * hf + cq;
                    x0 = qp[0];
                    x1 = qp[1];
                }
                const __half2 h2 = __floats2half2_rn(x0, x1);
                if constexpr (QS) {
                    if (warp == 0) qs[(2 * k + hf) * 32 + lane] = *(const uint32_t *)&h2;
                } else {
                    qf[k][hf] = *(const uint32_t *)&h2;
                }
            }
#pragma unroll
        for (int n = 0; n < TNT; n++) tacc[n][0] = tacc[n][1] = 0.0f;
        if constexpr (QS) __syncthreads(); /* qs written */
    }
    for (int t = 0; t < nt; t++) {
        if constexpr (PW) {
            /* NS tiles of the warp's rows in flight while it waits for the oldest: tile t + NS - 1 goes to
             * the stage of tile t - 1, which this warp alone read (tiles 0 .. NS - 1 went out before) */
            if (t > 0) {
                __syncwarp();
                issue(t + NS - 1);
            }
            fs_wait<NS - 1>(); /* this lane's copies of tile t landed */
            __syncwarp();      /* the warp's */
        } else if constexpr (TMA) {
            cll_mbar_wait(&fs_full[t % NS], (uint32_t)((t / NS) & 1)); /* tile t's boxes landed */
            if constexpr (!TKT) {
                __syncthreads(); /* tile t - 1 is consumed: its stage takes tile t + NS - 1 */
                issue(t + NS - 1);
            } /* TKT: tile t + NS is asked for by the last warp done with tile t (below) */
        } else {
            fs_wait<NS - 2>(); /* this thread's copies of tile t landed */
            __syncthreads();   /* everyone's; and tile t - 1 is consumed, so its stage takes tile t + NS - 1 */
            issue(t + NS - 1);
        }
        const unsigned char *st = fs_smem + (t % NS) * STAGE;
        const int32_t k0 = g.c0 + t * TK;
        const int cs = min(TK, g.c1 - k0);
        /* the new cell from the rope rows: the block writes it, or (PW, TKT: no block barrier) the warp
         * whose keys hold it (the tensor-core body's warp reads only its own 8 keys' K and V rows) */
        constexpr bool OWN = PW || TKT;
        if (a.fuse_rope && has_pos && g.pos >= k0 && g.pos < k0 + cs && (!OWN || (g.pos - k0) / (TK / W) == warp)) {
            uint16_t *sb = (uint16_t *)(fs_smem + (t % NS) * STAGE);
            for (int i = OWN ? lane : threadIdx.x; i < 2 * HD; i += OWN ? 32 : 32 * W) {
                const int which = i / HD, d = i % HD;
                /* TC: the swizzled row (16-byte chunk d / 8 moved by fs_swz) */
                const int at = TC ? fs_swz(g.pos - k0, d / 8) / 2 + d % 8 : (g.pos - k0) * (ROWB / 2) + d;
                sb[which * TK * (ROWB / 2) + at] = cll_f2h(buf[(g.hg + which) * HD + d]);
            }
            if constexpr (TMA) cll_fence_proxy_async_smem(); /* before the TMA engine refills the stage */
            if constexpr (OWN) __syncwarp();
            else __syncthreads();
        }
        if constexpr (TC) {
            /* warp w: keys 8w .. 8w+7 of the tile on its own running (max, sum, o), by mma.sync.
             * S (head x key) = Q K^T: m16n8k16, A = q (rows = heads), B = K rows by ldmatrix
             * (8 keys x 8 dims a matrix); O (head x dim) += P V: m16n8k8, A = p (the S tile's C
             * fragment is P's A fragment), hi + lo f16 halves of p, B = V rows by ldmatrix .trans */
            constexpr int KW = TK / W;
            static_assert(KW == 8, "the tensor-core body takes 8 keys a warp");
            const int j0 = warp * KW, r = j0 + (lane & 7);
            if constexpr (TMA)
                if (cs < TK && j0 + KW > cs) { /* the chunk's last tile: the warp's V rows past the chunk to 0
                                                 * (p = 0 must meet a finite V; K's scores there are masked) */
                    unsigned char *vz = fs_smem + (t % NS) * STAGE + TK * ROWB;
                    for (int i = lane; i < KW * CPR; i += 32) {
                        const int j = j0 + i / CPR;
                        if (j >= cs) *(uint4 *)(vz + fs_swz(j, i % CPR)) = make_uint4(0u, 0u, 0u, 0u);
                    }
                    __syncwarp();
                }
            float sc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int m = 0; m < HD / 32; m++) { /* 4 chunks of 8 dims: k-steps 2m, 2m + 1 */
                uint32_t b[4];
                fs_ldm4<false>(st + fs_swz(r, 4 * m + (lane >> 3)), b);
                if constexpr (QS) {
                    const uint32_t q0[2] = {fs_lds(qs + (4 * m) * 32 + lane), fs_lds(qs + (4 * m + 1) * 32 + lane)};
                    const uint32_t q1[2] = {fs_lds(qs + (4 * m + 2) * 32 + lane), fs_lds(qs + (4 * m + 3) * 32 + lane)};
                    fs_mma16816(sc, q0, b[0], b[1]);
                    fs_mma16816(sc, q1, b[2], b[3]);
                } else {
                    fs_mma16816(sc, qf[2 * m], b[0], b[1]);
                    fs_mma16816(sc, qf[2 * m + 1], b[2], b[3]);
                }
            }
            const int kk = j0 + (lane & 3) * 2;
            const float e0 = kk < cs ? sc[0] * a.scale : -INFINITY, e1 = kk + 1 < cs ? sc[1] * a.scale : -INFINITY;
            float mx = fmaxf(e0, e1);
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float mn = fmaxf(tm, mx);
            const bool live = mn != -INFINITY;
            const float p0 = live ? expf(e0 - mn) : 0.0f, p1 = live ? expf(e1 - mn) : 0.0f; /* -inf: 0 */
            float sum = p0 + p1;
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            const float corr = tm == -INFINITY ? 0.0f : expf(tm - mn);
            tl = tl * corr + sum;
            tm = mn;
            const __half2 ph = __floats2half2_rn(p0, p1);
            const float2 pb = __half22float2(ph);
            const __half2 pl = __floats2half2_rn(p0 - pb.x, p1 - pb.y);
            const uint32_t ahi = *(const uint32_t *)&ph, alo = *(const uint32_t *)&pl;
            const unsigned char *vt = st + TK * ROWB;
            /* the running o rescaled only when some lane's max moved (corr 1 leaves it as it is: the same
             * bits), which at depth is the first tiles only: 32 multiplies a tile left out */
            if (__any_sync(0xffffffffu, corr != 1.0f)) {
#pragma unroll
                for (int n = 0; n < TNT; n++) tacc[n][0] *= corr, tacc[n][1] *= corr;
            }
#pragma unroll
            for (int m = 0; m < HD / 32; m++) { /* dims 32m .. 32m+31: n-tiles 4m .. 4m+3 */
                uint32_t b[4];
                fs_ldm4<true>(vt + fs_swz(r, 4 * m + (lane >> 3)), b);
#pragma unroll
                for (int i = 0; i < 4; i++) fs_mma16816_hl(tacc[4 * m + i], ahi, alo, b[i]);
            }
            if constexpr (TKT) {
                /* this warp is done with the stage (its ldmatrix results are in registers): the last of
                 * the W warps to say so asks for tile t + NS into it. The fences order every warp's reads
                 * of the stage before the ticket, and the ticket before the refill; a stage's count only
                 * grows (W a tile), its tiles t, t + NS, .. never interleave: no warp reads tile t + NS
                 * before it is asked for, and it is asked for after the W-th ticket of tile t */
                __syncwarp();
                if (lane == 0) {
                    __threadfence_block();
                    const int done = atomicAdd(&fs_tk[t % NS], 1) + 1;
                    if (done % W == 0 && t + NS < nt) {
                        __threadfence_block();
                        tma_tile(t + NS);
                        if (a.l2pf_tiles) tma_l2(t + NS + a.l2pf_tiles);
                    }
                }
            }
        } else if constexpr (WI) {
            /* warp w scores, weighs and sums keys w*KW .. w*KW+KW-1 of the tile on its own running
             * (max, sum, acc): no block barrier between the phases, no one-warp softmax */
            constexpr int KW = TK / W, NP = KW / KPW;
            const int j0 = warp * KW;
            float e[HG][NP];
#pragma unroll
            for (int p = 0; p < NP; p++) {
                const int jj = j0 + p * KPW + sub;
                float kv[8];
                fs_k8(st + jj * ROWB + 16 * l, jj < cs, kv);
#pragma unroll
                for (int h = 0; h < HG; h++) {
                    float dot = 0.0f;
#pragma unroll
                    for (int q = 0; q < 8; q++) dot = fmaf(qv[h][q], kv[q], dot);
#pragma unroll
                    for (int o = LPK / 2; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
                    e[h][p] = jj < cs ? dot * a.scale : -INFINITY;
                }
            }
#pragma unroll
            for (int h = 0; h < HG; h++) {
                if (h >= g.hg) continue; /* block-uniform */
                float mx = e[h][0];
#pragma unroll
                for (int p = 1; p < NP; p++) mx = fmaxf(mx, e[h][p]);
#pragma unroll
                for (int o = LPK; o < 32; o <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
                const float mn = fmaxf(wm[h], mx);
                if (mn == -INFINITY) continue; /* no key of this warp yet: nothing to add */
                float sum = 0.0f;
#pragma unroll
                for (int p = 0; p < NP; p++) {
                    e[h][p] = expf(e[h][p] - mn); /* -inf: 0 */
                    sum += e[h][p];
                }
#pragma unroll
                for (int o = LPK; o < 32; o <<= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
                const float corr = wm[h] == -INFINITY ? 0.0f : expf(wm[h] - mn);
                wl[h] = wl[h] * corr + sum;
                wm[h] = mn;
#pragma unroll
                for (int q = 0; q < NV; q++) acc[h][q] *= corr;
            }
            /* acc += p_j v_j over the warp's keys: p_j from the lanes that scored key j */
            const unsigned char *vt = st + TK * ROWB;
#pragma unroll
            for (int j = 0; j < KW; j++) {
                const int jj = j0 + j;
                if (jj >= cs) break; /* warp-uniform */
                float vv[NV];
                fs_v<NV>(vt + jj * ROWB, lane, vv);
#pragma unroll
                for (int h = 0; h < HG; h++) {
                    if (h >= g.hg) continue;
                    const float p = __shfl_sync(0xffffffffu, e[h][j / KPW], (j % KPW) * LPK);
#pragma unroll
                    for (int q = 0; q < NV; q++) acc[h][q] = fmaf(p, vv[q], acc[h][q]);
                }
            }
        } else {
            /* scores */
#pragma unroll
            for (int jb = 0; jb < TK; jb += W * KPW) {
                const int jj = jb + warp * KPW + sub;
                float kv[8];
                fs_k8(st + jj * ROWB + 16 * l, jj < cs, kv);
#pragma unroll
                for (int h = 0; h < HG; h++) {
                    if (h >= g.hg) continue; /* block-uniform */
                    float dot = 0.0f;
#pragma unroll
                    for (int e = 0; e < 8; e++) dot = fmaf(qv[h][e], kv[e], dot);
#pragma unroll
                    for (int o = LPK / 2; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
                    if (l == 0 && jj < cs) S[h][jj] = dot * a.scale;
                }
            }
            __syncthreads();
            /* online softmax per head: warp per head, a lane per 32 keys */
            for (int h = warp; h < g.hg; h += W) {
                float sc[TK / 32];
                float mx = -INFINITY;
#pragma unroll
                for (int i = 0; i < TK / 32; i++) {
                    sc[i] = lane + 32 * i < cs ? S[h][lane + 32 * i] : -INFINITY;
                    mx = fmaxf(mx, sc[i]);
                }
                mx = cll_warp_max(mx);
                const float mo = sm_m[h], mn = fmaxf(mo, mx);
                float sum = 0.0f;
#pragma unroll
                for (int i = 0; i < TK / 32; i++) {
                    const float p = lane + 32 * i < cs ? expf(sc[i] - mn) : 0.0f;
                    S[h][lane + 32 * i] = p;
                    sum += p;
                }
                fa_commit_head(h, mo, mn, cll_warp_sum(sum), lane, sm_m, sm_l, sm_c);
            }
            __syncthreads();
            /* acc = acc * corr + sum_j p_j v_j: warp per key, NV dims a lane */
#pragma unroll
            for (int h = 0; h < HG; h++) {
                const float cr = h < g.hg ? sm_c[h] : 0.0f;
#pragma unroll
                for (int e = 0; e < NV; e++) acc[h][e] *= cr;
            }
            const unsigned char *vt = st + TK * ROWB;
            for (int j = warp; j < cs; j += W) {
                float vv[NV];
                fs_v<NV>(vt + j * ROWB, lane, vv);
#pragma unroll
                for (int h = 0; h < HG; h++) {
                    if (h >= g.hg) continue;
                    const float p = S[h][j];
#pragma unroll
                    for (int e = 0; e < NV; e++) acc[h][e] = fmaf(p, vv[e], acc[h][e]);
                }
            }
        }
    }
    fs_wait<0>();
    __syncthreads(); /* the stages are free: they hold the per-warp sums now */
    float (*red)[HG][HD] = (float (*)[HG][HD])fs_smem;
    if constexpr (TC) { /* as WI below, a head's state in its quad of lanes */
        __shared__ float swm[W][8], swl[W][8];
        const int hq = lane >> 2;
        if ((lane & 3) == 0) swm[warp][hq] = tm, swl[warp][hq] = tl;
        __syncthreads();
        float M = -INFINITY;
#pragma unroll
        for (int w = 0; w < W; w++) M = fmaxf(M, swm[w][hq]);
        const float sc = tm == -INFINITY ? 0.0f : expf(tm - M);
        if (hq < HG)
#pragma unroll
            for (int n = 0; n < TNT; n++) {
                red[warp][hq][8 * n + (lane & 3) * 2] = tacc[n][0] * sc;
                red[warp][hq][8 * n + (lane & 3) * 2 + 1] = tacc[n][1] * sc;
            }
        if (threadIdx.x < HG) {
            const int h = threadIdx.x;
            float Mh = -INFINITY, L = 0.0f;
#pragma unroll
            for (int w = 0; w < W; w++) Mh = fmaxf(Mh, swm[w][h]);
#pragma unroll
            for (int w = 0; w < W; w++) L += swm[w][h] == -INFINITY ? 0.0f : swl[w][h] * expf(swm[w][h] - Mh);
            sm_m[h] = Mh;
            sm_l[h] = L;
        }
    } else if constexpr (WI) { /* the warps' states to one: M = max m_w, each warp's sums scaled by e^(m_w - M) */
        __shared__ float swm[W][HG], swl[W][HG];
        if (lane == 0)
#pragma unroll
            for (int h = 0; h < HG; h++) swm[warp][h] = wm[h], swl[warp][h] = wl[h];
        __syncthreads();
#pragma unroll
        for (int h = 0; h < HG; h++) {
            float M = -INFINITY;
#pragma unroll
            for (int w = 0; w < W; w++) M = fmaxf(M, swm[w][h]);
            const float sc = wm[h] == -INFINITY ? 0.0f : expf(wm[h] - M);
#pragma unroll
            for (int e = 0; e < NV; e++) acc[h][e] *= sc;
            if (threadIdx.x == h) {
                float L = 0.0f;
#pragma unroll
                for (int w = 0; w < W; w++) L += swm[w][h] == -INFINITY ? 0.0f : swl[w][h] * expf(swm[w][h] - M);
                sm_m[h] = M;
                sm_l[h] = L;
            }
        }
    }
    if constexpr (!TC)
#pragma unroll
        for (int h = 0; h < HG; h++)
#pragma unroll
            for (int e = 0; e < NV; e++) red[warp][h][NV * lane + e] = acc[h][e];
    __syncthreads();
    fa_tail<HD, HG, W, TK>(a, g, red, S, sm_m, sm_l, inv, &last);
}

template <int D, int HGV, int BODY, int NSX = 0, bool PW = false, int TMA = 0>
static cudaError_t fs_launch_body(const cll_cu_attn_args *a, dim3 g, cudaStream_t s) {
    constexpr int SMEM = (NSX ? NSX : FsGeo<D>::NS) * FsGeo<D>::STAGE + (TMA ? 1024 : 0);
    static int opened[2][64]; /* the dynamic shared memory, per instantiation and device */
    auto k = TMA ? attn_stream_kernel<D, HGV, false, BODY, NSX, PW, TMA>
             : a->map.blk ? attn_stream_kernel<D, HGV, true, BODY, NSX, PW>
                          : attn_stream_kernel<D, HGV, false, BODY, NSX, PW>;
    /* and the largest shared-memory carveout (two blocks an SM at FsGeo's depth) */
    CLL_CU_RET(cll_cu_open_smem(opened[a->map.blk ? 1 : 0], k, SMEM, true));
    return cll_cu_launch(k, g, dim3(32 * FS_WARPS), (size_t)SMEM, s, *a);
}
/* tc: the tensor-core body (head dims up to 128; 256 keeps the CUDA-core ones); ns: its stages
 * (cll_cu_attn_stream_ns: 0 FsGeo's, CLL_CU_ATTN_NS_DEEP for head dim 128) */
template <int D, int HGV>
static cudaError_t fs_launch(const cll_cu_attn_args *a, dim3 g, bool tc, int ns, bool pw, int tma, cudaStream_t s) {
    if constexpr (D <= 128)
        if (tc) {
            if constexpr (D == 128)
                if (ns == CLL_CU_ATTN_NS_DEEP)
                    return tma == 2 ? fs_launch_body<D, HGV, FS_TC, CLL_CU_ATTN_NS_DEEP, false, 2>(a, g, s)
                           : tma    ? fs_launch_body<D, HGV, FS_TC, CLL_CU_ATTN_NS_DEEP, false, 1>(a, g, s)
                           : pw     ? fs_launch_body<D, HGV, FS_TC, CLL_CU_ATTN_NS_DEEP, true>(a, g, s)
                                    : fs_launch_body<D, HGV, FS_TC, CLL_CU_ATTN_NS_DEEP>(a, g, s);
            return tma == 2 ? fs_launch_body<D, HGV, FS_TC, 0, false, 2>(a, g, s)
                   : tma    ? fs_launch_body<D, HGV, FS_TC, 0, false, 1>(a, g, s)
                   : pw     ? fs_launch_body<D, HGV, FS_TC, 0, true>(a, g, s)
                            : fs_launch_body<D, HGV, FS_TC>(a, g, s);
        }
    static int c_wi = -2; /* CLLAMA_CUDA_ATTN_STREAM_WI=0|1 forces the CUDA-core tile body (A/B) */
    return cll_cu_attn_stream_wi(cll_cu_env_tri(&c_wi, "CLLAMA_CUDA_ATTN_STREAM_WI"), HGV)
               ? fs_launch_body<D, HGV, FS_WI>(a, g, s)
               : fs_launch_body<D, HGV, FS_PHASED>(a, g, s);
}
template <int D>
static cudaError_t fs_launch_hg(const cll_cu_attn_args *a, dim3 g, int HG, bool tc, int ns, bool pw, int tma, cudaStream_t s) {
    return HG == 1   ? fs_launch<D, 1>(a, g, tc, ns, pw, tma, s)
           : HG == 2 ? fs_launch<D, 2>(a, g, tc, ns, pw, tma, s)
           : HG == 4 ? fs_launch<D, 4>(a, g, tc, ns, pw, tma, s)
                     : fs_launch<D, 8>(a, g, tc, ns, pw, tma, s);
}

/* one GQA launch of W warps a block: wider blocks only where their reduction buffer fits (W * HG *
 * HD floats <= 32 KB) and the cache is F16 (else the 4-warp block). cap: the one-head 4-warp block
 * of head size 128 over an F16 cache at 64 registers, 8 resident an SM instead of 6 (80 registers,
 * the paged one 87; H200 ptxas: no spill at 64 for either since the paged kernel reads its keys'
 * cells from shared memory: its per-key table reads spilled 44 bytes there);
 * cll_cu_attn_capped picks it for a batched step's wide grid */
template <bool F, int D, int HGV, int WV, int U>
static cudaError_t fa_launch_u(const cll_cu_attn_args *a, dim3 g, bool cap, cudaStream_t s) {
    const dim3 b(32 * WV);
    if constexpr (F && D == 128 && HGV == 1 && WV == 4 && U == 4) {
        if (cap) return a->map.blk ? cll_cu_launch(attn_gqa_kernel<F, D, HGV, true, WV, U, 8>, g, b, 0, s, *a)
                                   : cll_cu_launch(attn_gqa_kernel<F, D, HGV, false, WV, U, 8>, g, b, 0, s, *a);
    }
    return a->map.blk ? cll_cu_launch(attn_gqa_kernel<F, D, HGV, true, WV, U>, g, b, 0, s, *a)
                      : cll_cu_launch(attn_gqa_kernel<F, D, HGV, false, WV, U>, g, b, 0, s, *a);
}
/* U = 8 keys in flight a warp: F16 caches, hg <= 2 (cll_cu_attn_loads) */
template <bool F, int D, int HGV, int WV>
static cudaError_t fa_launch_w(const cll_cu_attn_args *a, dim3 g, int U, bool cap, cudaStream_t s) {
    if constexpr (F && HGV <= 2) {
        if (U == 8) return fa_launch_u<F, D, HGV, WV, 8>(a, g, cap, s);
    }
    return fa_launch_u<F, D, HGV, WV, 4>(a, g, cap, s);
}
template <bool F, int D, int HGV>
static cudaError_t fa_launch(const cll_cu_attn_args *a, dim3 g, int W, int U, bool cap, cudaStream_t s) {
    if constexpr (F && 16 * HGV * D <= 8192) {
        if (W == 16) return fa_launch_w<F, D, HGV, 16>(a, g, U, cap, s);
    }
    if constexpr (F && 8 * HGV * D <= 8192) {
        if (W == 8) return fa_launch_w<F, D, HGV, 8>(a, g, U, cap, s);
    }
    return fa_launch_w<F, D, HGV, 4>(a, g, U, cap, s);
}

/* the form CLLAMA_CUDA_ATTN_STREAM asks for (read once): 0 the split kernel, 1 the streaming one
 * (CUDA-core body), 2 the streaming one (tensor-core body), 3 that body fed by the TMA engine, 4 and
 * above the same with its stages refilled by tickets (no block barrier a tile); unset:
 * CLL_CU_ATTN_AUTO (cll_cu_attn_form's choice by n_ctx) */
static int attn_env_form(void) {
    static int c_stream = -2;
    const int s = cll_cu_env_nonneg(&c_stream, "CLLAMA_CUDA_ATTN_STREAM");
    return s < 0 ? CLL_CU_ATTN_AUTO : s == 0 ? CLL_CU_ATTN_SPLIT : s == 1 ? CLL_CU_ATTN_STREAM
           : s == 2 ? CLL_CU_ATTN_STREAM_TC : s == 3 ? CLL_CU_ATTN_STREAM_TMA : CLL_CU_ATTN_STREAM_TMA_TK;
}

bool cll_cu_attn_tma_wanted(int form, int group) {
    if (form == CLL_CU_ATTN_AUTO) form = attn_env_form(); /* as the launcher reads it */
    return form == CLL_CU_ATTN_AUTO ? CLL_CU_ATTN_TMA_AUTO && group == 1 : cll_cu_attn_form_tma(form);
}

static_assert(sizeof(CUtensorMap) == CLL_CU_TMAP_BYTES, "a tensor map is 128 bytes");

/* cuTensorMapEncodeTiled through the runtime's driver entry point (no link against libcuda); NULL
 * where the driver lacks it. Looked up once (a C++ static: thread-safe for the tp ranks' threads). */
static PFN_cuTensorMapEncodeTiled_v12000 tmap_encoder(void) {
    static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
        void *p = NULL;
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess) {
            (void)cudaGetLastError();
            p = NULL;
        }
        return (PFN_cuTensorMapEncodeTiled_v12000)p;
    }();
    return fn;
}

cudaError_t cll_cu_attn_tmaps(void *dst, const void *kc, const void *vc, int32_t n_kv, int32_t hd, int64_t cells) {
    if (!dst || !kc || !vc || n_kv <= 0 || (hd != 64 && hd != 128) || cells <= 0 || cells > INT32_MAX ||
        (uintptr_t)dst % 64 || (uintptr_t)kc % 16 || (uintptr_t)vc % 16)
        return cudaErrorNotSupported;
    int dev = 0, major = 0;
    CLL_CU_RET(cudaGetDevice(&dev));
    CLL_CU_RET(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    const PFN_cuTensorMapEncodeTiled_v12000 enc = major >= 9 ? tmap_encoder() : NULL;
    if (!enc) return cudaErrorNotSupported;
    alignas(64) CUtensorMap m[2];
    const cuuint64_t dims[2] = {(cuuint64_t)n_kv * (cuuint64_t)hd, (cuuint64_t)cells}; /* halves of a cell, cells */
    const cuuint64_t strides[1] = {(cuuint64_t)n_kv * (cuuint64_t)hd * 2};                /* bytes of a cell */
    const cuuint32_t box[2] = {64, FS_TK}, estr[2] = {1, 1};
    for (int i = 0; i < 2; i++)
        if (enc(&m[i], CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, (void *)(i ? vc : kc), dims, strides, box, estr,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
            return cudaErrorNotSupported;
    CLL_CU_RET(cudaMemcpy(dst, m, sizeof m, cudaMemcpyHostToDevice));
    /* a copy from pageable memory may return before its DMA lands, and the maps are read by kernels on
     * non-blocking streams: wait for the legacy stream that carried it (not the device: another rank's
     * thread may be capturing a graph on it) */
    return cudaStreamSynchronize(0);
}

cudaError_t cll_cu_attention(const cll_cu_attn_args *a, int64_t n, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    if (cll_cu_attention_prefill_ok(a, n)) return cll_cu_attention_prefill(a, n, s);
    if (a->outh) return cudaErrorInvalidValue; /* the f16 rows: the tensor-core prefill kernel's only */
    if (a->hd_k > 32 * ATTN_MAX_T || a->hd_v > 32 * ATTN_MAX_T || a->n_kv <= 0 ||
        a->n_head % a->n_kv || a->chunk <= 0 || a->n_chunks <= 0 || !a->count)
        return cudaErrorInvalidValue;
    const int hd = a->hd_k;
    if (a->fuse_rope && !cll_cu_attention_fuses_rope(a, n)) return cudaErrorInvalidValue;
    if (a->pf && ((uintptr_t)a->pf % 16 || a->pf_bytes % 16)) return cudaErrorInvalidValue;
    if (a->hd_v == hd && (hd == 64 || hd == 128 || hd == 256)) {
        static int c_min = -1, c_per_sm = -1, c_warps = -1;
        /* fewest keys a chunk (0: by the grid, cll_cu_attn_min_chunk) */
        const int env_min = cll_cu_env_pos_int(&c_min, "CLLAMA_CUDA_ATTN_MIN_CHUNK", 0);
        /* live chunks for about N blocks an SM (0: each kernel's own default) */
        const int env_per_sm = cll_cu_env_pos_int(&c_per_sm, "CLLAMA_CUDA_ATTN_PER_SM", 0);
        /* 4, 8 or 16 warps a split block (0: by the grid) */
        const int env_warps = cll_cu_env_pos_int(&c_warps, "CLLAMA_CUDA_ATTN_WARPS", 0);
        cll_cu_attn_args ac = *a;
        if (ac.warps <= 0) ac.warps = env_warps;
        a = &ac;
        const int G = a->n_head / a->n_kv;
        /* a small grid (decode over a short context: one chunk per head group) leaves most SMs idle
         * and each block runs its heads one after another: fewer q heads per block, more blocks
         * (each head's arithmetic is the same for any HG; K/V rows are re-read from L2). H200
         * tg128: l3-8b Q4_K_M 8 -> 32 blocks, 422.5 -> 445.6 tok/s; q3moe Q4_K_M 4 -> 32, 755.8 -> 849.0 */
        const int HG = cll_cu_attn_heads_per_block(a->n_head, a->n_kv, a->n_chunks, n, FA_MIN_BLOCKS);
        const int n_sub = (G + HG - 1) / HG;
        dim3 g((unsigned)(a->n_kv * n_sub), (unsigned)a->n_chunks, (unsigned)n);
        if (ac.min_chunk <= 0) ac.min_chunk = cll_cu_attn_min_chunk(env_min, (int64_t)g.x * g.z, cll_cu_sm_count());
        /* keys of the first sub-chunk a split block asks L2 for before its wait (cll_cu_attn_kv_pf_keys;
         * CLLAMA_CUDA_ATTN_KV_PF=N keys, 0 none, forces it for A/B runs) */
        static int c_kvpf = -2;
        const int kvpf = cll_cu_env_nonneg(&c_kvpf, "CLLAMA_CUDA_ATTN_KV_PF");
        ac.kv_pf_keys = kvpf >= 0 ? kvpf : cll_cu_attn_kv_pf_keys((int64_t)g.x * g.z, cll_cu_sm_count(), FA_CS);
        static int c_pre = -1; /* CLLAMA_CUDA_ATTN_PRE=0: the register preload off (A/B runs) */
        ac.pre_kv = cll_cu_env_flag(&c_pre, "CLLAMA_CUDA_ATTN_PRE", true) ? 1 : 0;
        static int c_l2pf = -2; /* CLLAMA_CUDA_ATTN_L2PF=N: the ticketed TMA kernel asks L2 for tiles N past its stages */
        const int l2pf = cll_cu_env_nonneg(&c_l2pf, "CLLAMA_CUDA_ATTN_L2PF");
        ac.l2pf_tiles = l2pf > 0 ? (l2pf < 8 ? l2pf : 8) : 0;
        static int c_drop = -2; /* CLLAMA_CUDA_ATTN_DROP=bits: the split kernel's stages left out (a measurement) */
        const int drop = cll_cu_env_nonneg(&c_drop, "CLLAMA_CUDA_ATTN_DROP");
        ac.drop = drop > 0 ? drop : 0;
        const int form = cll_cu_attn_form(a->form ? a->form : attn_env_form(), a->kv_f16, a->n_ctx, n, hd, G);
        const bool tc = form == CLL_CU_ATTN_STREAM_TC || cll_cu_attn_form_tma(form);
        const bool stream = cll_cu_attn_form_stream(form);
        /* 0 the cp.async pipeline, 1 the TMA one (a block barrier a tile), 2 the TMA one with tickets */
        const int tma = cll_cu_attn_form_tma(form) && cll_cu_attn_tma_serves(a->map.blk != NULL, a->tmk && a->tmv, hd)
                            ? (form == CLL_CU_ATTN_STREAM_TMA_TK ? 2 : 1)
                            : 0;
        static int c_ns = -2; /* CLLAMA_CUDA_ATTN_NS=0|5 forces the tensor-core body's stages (A/B) */
        const int ns = tc ? cll_cu_attn_stream_ns(cll_cu_env_nonneg(&c_ns, "CLLAMA_CUDA_ATTN_NS"), hd, G, cll_cu_smem_optin()) : 0;
        if (ac.act_chunks == 0) /* a deep-staged block has its SM to itself */
            ac.act_chunks = cll_cu_attn_active_chunks(a->n_chunks, (int64_t)g.x * g.z, cll_cu_sm_count(),
                                                      env_per_sm > 0 ? env_per_sm
                                                      : stream      ? (ns ? 1 : FS_PER_SM)
                                                                    : FA_PER_SM);
        /* the grid's chunks: the live ones only (cll_cu_attn_live_chunks). It launched n_chunks, the
         * context's: tg128 @ d8192's 12296-cell context ran 97 chunks' blocks for 8 live ones, ~2800 idle
         * blocks a layer cycling through the SMs' two stage slots after the live ones
         * (CLLAMA_CUDA_ATTN_FULL_GRID=1: the old grid, A/B) */
        static int c_full = -1;
        const int32_t live = cll_cu_attn_live_chunks(ac.act_chunks, a->n_chunks);
        if (!cll_cu_env_flag(&c_full, "CLLAMA_CUDA_ATTN_FULL_GRID", false)) g.y = (unsigned)live;
        if (stream) {
            /* whole tiles a chunk (cll_cu_attn_chunk_span); CLLAMA_CUDA_ATTN_TILE_CHUNKS=0: key spans (A/B) */
            static int c_tc = -1;
            ac.gran = cll_cu_env_flag(&c_tc, "CLLAMA_CUDA_ATTN_TILE_CHUNKS", true) ? FS_TK : 1;
            static int c_pw = -2; /* CLLAMA_CUDA_ATTN_PW=0|1 forces the tensor-core body's pipeline (A/B) */
            const bool pw = tc && !tma && cll_cu_attn_stream_pw(cll_cu_env_nonneg(&c_pw, "CLLAMA_CUDA_ATTN_PW"));
            if (hd == 64) CLL_CU_RET(fs_launch_hg<64>(a, g, HG, tc, ns, pw, tma, s));
            else if (hd == 128) CLL_CU_RET(fs_launch_hg<128>(a, g, HG, tc, ns, pw, tma, s));
            else CLL_CU_RET(fs_launch_hg<256>(a, g, HG, tc, ns, pw, 0, s));
            return cudaGetLastError();
        }
        const int64_t blocks = (int64_t)g.x * live * g.z;
        const int W = cll_cu_attn_warps(a->warps, blocks, cll_cu_sm_count(), hd, HG, a->kv_f16);
        const int U = cll_cu_attn_loads(cll_cuda_knobs_now()->attn_loads8 ? 8 : 4, HG); /* a runtime knob */
        static int c_cap = -2; /* CLLAMA_CUDA_ATTN_MINB8=0|1 forces the register cap off / on (A/B) */
        const bool cap = cll_cu_attn_capped(cll_cu_env_tri(&c_cap, "CLLAMA_CUDA_ATTN_MINB8"), blocks, cll_cu_sm_count());
#define FA_HG(F, D)                                                                                          \
    do {                                                                                                     \
        if (HG == 1) CLL_CU_RET((fa_launch<F, D, 1>(a, g, W, U, cap, s)));                                   \
        else if (HG == 2) CLL_CU_RET((fa_launch<F, D, 2>(a, g, W, U, cap, s)));                              \
        else if (HG == 4) CLL_CU_RET((fa_launch<F, D, 4>(a, g, W, U, cap, s)));                              \
        else CLL_CU_RET((fa_launch<F, D, 8>(a, g, W, U, cap, s)));                                           \
    } while (0)
        if (a->kv_f16) {
            if (hd == 64) FA_HG(true, 64);
            else if (hd == 128) FA_HG(true, 128);
            else FA_HG(true, 256);
        } else {
            if (hd == 64) FA_HG(false, 64);
            else if (hd == 128) FA_HG(false, 128);
            else FA_HG(false, 256);
        }
#undef FA_HG
        return cudaGetLastError();
    }
    dim3 g1((unsigned)a->n_head, (unsigned)a->n_chunks, (unsigned)n);
    if (a->kv_f16) CLL_CU_RET(cll_cu_launch(attn_chunk_kernel<true>, dim3(g1), dim3(32 * ATTN_WARPS), 0, s, *a));
    else CLL_CU_RET(cll_cu_launch(attn_chunk_kernel<false>, dim3(g1), dim3(32 * ATTN_WARPS), 0, s, *a));
    if (a->outq && a->hd_v % 32) /* heads straddle q8_1 blocks: quantize the rows apart */
        return cll_cu_quantize_rows_q8(a->out, (int64_t)a->n_head * a->hd_v, n, (int64_t)a->n_head * a->hd_v, a->outq, s);
    return cudaSuccess;
}
