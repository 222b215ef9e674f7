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
 * kernel that has a tail). */
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

#endif
