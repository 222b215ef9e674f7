/* cuda/matmul/epilogue: the fused residual tail of a decode gemv (cll_cu_resid_epi, matmul.cuh).
 * Why: between the o (or down) product and the next gemv the step used to run one residual +
 * RMS norm + q8_1 kernel of a single block; its launch and its two PDL waits sat on the critical
 * path twice per layer. Here the gemv's row writers do the residual add and keep the squares;
 * each block leaves one partial sum; the grid's last block sums the partials and writes the norm.
 * Rounding as cuda/ops/norm.cu: x + y in f32, squares of the f32 sums summed in double, scale =
 * 1/sqrtf(sum/d + eps), (x * scale) * w, ggml's q8_1. Every double sum runs in a fixed order
 * (a thread's rows in its own order, block trees, partials by index), so a step is
 * bit-reproducible. The last block's loads go out in batches (4 float4 or 8 doubles per thread)
 * so it waits for a few L2 round trips, not one per element.
 * Owns nothing. Rule: every thread of every block reaches cll_epi_finish (no early returns in a
 * kernel that has a ticket tail); a polled tail's producers skip it, its consumer block returns
 * from cll_epi_poll_consume. */
#ifndef CLL_CUDA_MATMUL_EPILOGUE_CUH
#define CLL_CUDA_MATMUL_EPILOGUE_CUH

#include "cuda/matmul/matmul.cuh"
#include "cuda/ops/ops.cuh"

/* the writer of output row `row` (value v): x[row] += v; returns the square to accumulate */
static __device__ __forceinline__ double cll_epi_row(const cll_cu_resid_epi &e, int64_t row, float v) {
    const float xv = __fadd_rn(e.x[row], v);
    e.x[row] = xv;
    return (double)__fmul_rn(xv, xv);
}

/* every thread of every block, after the block's last y write; d = the product's rows;
 * acc = this thread's sum of cll_epi_row results */
static __device__ __noinline__ void cll_epi_finish(const cll_cu_resid_epi e, int64_t d, double acc) {
    __shared__ int last;
    __shared__ double red[32];
    const int nt = blockDim.x, tid = threadIdx.x;
    const unsigned nblk = gridDim.x * gridDim.y * gridDim.z, bid = blockIdx.x + gridDim.x * blockIdx.y;
    const double bs = cll_block_sum_d(acc, red);
    if (tid == 0) e.part[bid] = bs;
    __threadfence(); /* this block's x and partial before its ticket */
    __syncthreads();
    if (tid == 0) last = atomicAdd(e.ticket, 1) == (int)(nblk - 1);
    __syncthreads();
    if (!last) return;
    __threadfence();
    double s = 0.0;
    for (unsigned b0 = 0; b0 < nblk; b0 += 8u * (unsigned)nt) {
        double v[8];
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const unsigned i = b0 + (unsigned)tid + (unsigned)(k * nt);
            v[k] = i < nblk ? __ldcg(e.part + i) : 0.0;
        }
#pragma unroll
        for (int k = 0; k < 8; k++) s += v[k];
    }
    const double sum = cll_block_sum_d(s, red);
    const float scale = 1.0f / sqrtf((float)(sum / (double)d) + e.eps);
    cll_block_q8_1 *xq = (cll_block_q8_1 *)e.xq;
    if (d % 4 == 0) { /* float4s, 4 per thread in flight; 8 lanes per q8_1 block */
        const int64_t d4 = d >> 2;
        const float4 one = make_float4(1.f, 1.f, 1.f, 1.f), zero = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int64_t base = 0; base < d4; base += 4 * (int64_t)nt) { /* uniform trip count */
            float4 xv[4], wv[4];
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const int64_t i = base + tid + (int64_t)k * nt;
                xv[k] = i < d4 ? __ldcg((const float4 *)e.x + i) : zero;
                wv[k] = i < d4 && e.norm ? __ldg((const float4 *)e.norm + i) : one;
            }
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const int64_t i = base + tid + (int64_t)k * nt;
                float4 v = make_float4(__fmul_rn(__fmul_rn(xv[k].x, scale), wv[k].x), __fmul_rn(__fmul_rn(xv[k].y, scale), wv[k].y),
                                       __fmul_rn(__fmul_rn(xv[k].z, scale), wv[k].z), __fmul_rn(__fmul_rn(xv[k].w, scale), wv[k].w));
                if (i >= d4) v = zero;
                else ((float4 *)e.xn)[i] = v;
                if (xq) cll_q8_1_store_f4(v, xq + (i >> 3), (int)(i & 7), (i & ~(int64_t)7) < d4);
            }
        }
    } else { /* odd widths (tests): a warp per 32 elements */
        const int lane = tid & 31, warp = tid >> 5, nw = nt >> 5;
        const int64_t nq = (d + 31) / 32;
        for (int64_t b = warp; b < nq; b += nw) {
            const int64_t j = b * 32 + lane;
            float v = 0.0f;
            if (j < d) {
                v = __fmul_rn(__ldcg(e.x + j), scale);
                if (e.norm) v = __fmul_rn(v, e.norm[j]);
                e.xn[j] = v;
            }
            if (xq) cll_warp_q8_1(v, xq + b, lane);
        }
    }
    if (tid == 0) *e.ticket = 0; /* for the next launch / replay */
}

/* ---- the polled tail (cll_cu_resid_epi.slot) ----
 * The ticket tail above held every producer block for a fence and an atomic and made the last one read
 * the partials back; here no producer waits for anything: a row's writer stores its value into its slot
 * and its block leaves, and one consumer block (the grid's last: it starts after every producer, so it
 * spins only on blocks already running) polls the slots as they land. It is the residual kernel
 * (cuda/ops/norm.cu resid_norm_q8_regs<V>, no post norm, no MoE) replayed by 128 threads: the kernel
 * runs NT threads of V float4s (cll_norm_regs_shape), thread t here plays its threads t + 128 j (j < 4),
 * each summing its squares in the kernel's order; the lanes of a real warp are the lanes of one of the
 * kernel's warps, so each reduces with the same butterfly, and the NT / 32 warp sums meet as
 * cll_block_sum_d's second stage does. The sum, the scale, x, xn and the q8_1 bytes are the kernel's, bit
 * for bit (the gate holds them to it). Rows: cll_cu_resid_poll_ok's (V <= 2: NT <= 4 x 128 threads). */

/* the widths the polled tail serves (cll_cu_resid_poll_ok): those whose norm a 128-thread consumer block
 * replays (the norm kernel's register shape at V <= 2 on NT <= 4 x 128 threads: rows % 4 == 0, 4 <= rows <= 4096) */
static inline bool cll_cu_resid_poll_rows(int64_t rows) {
    int v = 0, nt = 0;
    return rows >= 4 && cll_norm_regs_shape(rows, &v, &nt) && v <= 2 && nt <= 4 * 128;
}

/* a row's writer: its value into its slot (relaxed: the consumer polls it) */
static __device__ __forceinline__ void cll_epi_poll_row(const cll_cu_resid_epi &e, int64_t row, float v) {
    cll_st_relaxed_u32(e.slot + row, __float_as_uint(v));
}

static __device__ __forceinline__ bool cll_u4_has_empty(uint4 u) {
    return u.x == CLL_CU_SLOT_EMPTY || u.y == CLL_CU_SLOT_EMPTY || u.z == CLL_CU_SLOT_EMPTY || u.w == CLL_CU_SLOT_EMPTY;
}

template <int V>
static __device__ __forceinline__ void cll_epi_poll_consume_v(const cll_cu_resid_epi &e, int d, int NT) {
    constexpr int J = 4; /* the kernel's threads a thread plays: NT <= 512 = J x 128 */
    __shared__ double red[32];
    const int t = threadIdx.x, BT = blockDim.x, lane = t & 31, d4 = d >> 2;
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f), one = make_float4(1.f, 1.f, 1.f, 1.f);
    float4 *x4 = (float4 *)e.x;
    /* the norm weights are constants: asked into L1 before the wait (no registers held) */
#pragma unroll
    for (int j = 0; j < J; j++)
#pragma unroll
        for (int k = 0; k < V; k++) {
            const int vt = t + BT * j, i = vt + NT * k;
            if (e.norm && vt < NT && i < d4 && (i & 7) == 0) asm volatile("prefetch.global.L1 [%0];" ::"l"(e.norm + 4 * i));
        }
    cll_pdl_wait(); /* x: the kernels before this launch wrote it */
    float4 xv[J][V];
    uint4 yv[J][V];
#pragma unroll
    for (int j = 0; j < J; j++)
#pragma unroll
        for (int k = 0; k < V; k++) {
            const int vt = t + BT * j, i = vt + NT * k;
            const bool in = vt < NT && i < d4;
            xv[j][k] = in ? x4[i] : zero;
            yv[j][k] = in ? cll_ld_relaxed_v4(e.slot + 4 * i) : make_uint4(0u, 0u, 0u, 0u);
        }
    for (unsigned polls = 0;; polls++) { /* each thread until its own slots are full */
        bool pending = false;
#pragma unroll
        for (int j = 0; j < J; j++)
#pragma unroll
            for (int k = 0; k < V; k++) pending |= cll_u4_has_empty(yv[j][k]);
        if (!pending) break;
        if (polls >= CLL_CU_POLL_MAX) __trap();
#pragma unroll
        for (int j = 0; j < J; j++)
#pragma unroll
            for (int k = 0; k < V; k++)
                if (cll_u4_has_empty(yv[j][k])) yv[j][k] = cll_ld_relaxed_v4(e.slot + 4 * (t + BT * j + NT * k));
    }
    /* x + t in f32 as the kernel adds them, stored; the slots emptied; each played thread's squares */
    double acc[J];
#pragma unroll
    for (int j = 0; j < J; j++) {
        acc[j] = 0.0;
#pragma unroll
        for (int k = 0; k < V; k++) {
            const int vt = t + BT * j, i = vt + NT * k;
            const uint4 u = yv[j][k];
            xv[j][k] = cll_f4_add(xv[j][k], make_float4(__uint_as_float(u.x), __uint_as_float(u.y),
                                                        __uint_as_float(u.z), __uint_as_float(u.w)));
            if (vt < NT && i < d4) {
                x4[i] = xv[j][k];
                *(uint4 *)(e.slot + 4 * i) = make_uint4(CLL_CU_SLOT_EMPTY, CLL_CU_SLOT_EMPTY, CLL_CU_SLOT_EMPTY,
                                                        CLL_CU_SLOT_EMPTY);
            }
            acc[j] += cll_f4_sq_d(xv[j][k]);
        }
    }
    /* the kernel's block sum: each of its warps' butterflies, then the NT / 32 warp sums' */
#pragma unroll
    for (int j = 0; j < J; j++) {
        double v = acc[j];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        const int vw = (t + BT * j) >> 5;
        if (lane == 0 && vw < (NT >> 5)) red[vw] = v;
    }
    __syncthreads();
    double sum = lane < (NT >> 5) ? red[lane] : 0.0;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const float scale = 1.0f / sqrtf((float)(sum / (double)d) + e.eps);
    cll_block_q8_1 *xq = (cll_block_q8_1 *)e.xq;
#pragma unroll
    for (int j = 0; j < J; j++) {
        if (t + BT * j >= NT) continue; /* warp-uniform: NT and BT j are multiples of 32 */
#pragma unroll
        for (int k = 0; k < V; k++) {
            const int i = t + BT * j + NT * k;
            const float4 w = e.norm && i < d4 ? __ldg((const float4 *)e.norm + i) : one;
            const float4 v = i < d4 ? cll_f4_mul(cll_f4_scale(xv[j][k], scale), w) : zero;
            if (e.xn && i < d4) ((float4 *)e.xn)[i] = v;
            if (xq) cll_q8_1_store_f4(v, xq + (i >> 3), i & 7, (i & ~7) < d4);
        }
    }
}

/* the consumer block of a polled tail over d rows (128 threads; cll_cu_resid_poll_ok's d) */
static __device__ __noinline__ void cll_epi_poll_consume(const cll_cu_resid_epi e, int64_t d) {
    int v = 0, nt = 0;
    if (!cll_norm_regs_shape(d, &v, &nt) || v > 2 || nt > 4 * (int)blockDim.x) __trap(); /* the launcher checked */
    if (v == 1) cll_epi_poll_consume_v<1>(e, (int)d, nt);
    else cll_epi_poll_consume_v<2>(e, (int)d, nt);
}

#endif
