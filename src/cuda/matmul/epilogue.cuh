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

/* ---- the folded norm (on = CLL_CU_EPI_FOLD, cll_cu_norm_in) ----
 * Why: the separate residual + norm kernel costs a launch and two PDL edges on the critical path
 * twice a layer, and the ticket tail above serializes the norm in one block. Folded, nothing waits
 * for the whole row: a block that owns 32 output rows quantizes them itself (the q8_1 scale of
 * x * norm is the normed row's times rms, so the quants are the same up to rounding), and the
 * products that read them apply 1/rms to their sums. */

/* the power of two c a fold scales x * norm by: 2^-k for the hint's exponent k (hint * c in
 * [0.5, 1)), 1 without a usable hint (the first fold of a context: hint 0) */
static __device__ __forceinline__ float cll_fold_c(float hint) {
    if (!(hint > 1e-30f && hint < 1e30f)) return 1.0f;
    int k;
    frexpf(hint, &k);
    return ldexpf(1.0f, -k);
}

/* warp 0 of block blk of a fold launch, after the block's 32 row sums are known: lane j holds row
 * 32 blk + j's value v. x += v; xq block blk = q8_1(c * x * norm); part[blk] = sum of x^2 (double,
 * butterfly order); block 0 leaves c in hint[1] */
static __device__ __forceinline__ void cll_epi_fold(const cll_cu_resid_epi &e, int64_t blk, float v, int lane) {
    const int64_t row = blk * 32 + lane;
    const float c = e.hint ? cll_fold_c(e.hint[0]) : 1.0f;
    if (e.hint && blk == 0 && lane == 0) e.hint[1] = c;
    const float xv = __fadd_rn(e.x[row], v);
    e.x[row] = xv;
    const float xw = __fmul_rn(e.norm ? __fmul_rn(xv, e.norm[row]) : xv, c); /* c: exact (a power of two) */
    if (e.xn) e.xn[row] = xw;
    if (e.xq) cll_warp_q8_1(xw, (cll_block_q8_1 *)e.xq + blk, lane);
    double sq = (double)__fmul_rn(xv, xv);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
    if (lane == 0) e.part[blk] = sq;
}

/* a folded norm's partials, loaded by a consumer's lane right after its PDL wait (four a lane:
 * n_part <= CLL_CU_NIN_MAX_PART); every lane of the warp calls both halves */
struct CllNinPart {
    double p[4];
    float c;
};
static __device__ __forceinline__ CllNinPart cll_nin_load(const cll_cu_norm_in &n, int lane) {
    CllNinPart r;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const int i = lane + 32 * k;
        r.p[k] = n.part && i < n.n_part ? __ldcg(n.part + i) : 0.0;
    }
    r.c = n.hint ? __ldcg(n.hint + 1) : 1.0f;
    return r;
}
/* 1/(c rms) from the loaded partials (1 when n.part is NULL): the same bits in every lane and warp;
 * thread 0 of block 0 leaves rms in hint[0] */
static __device__ __forceinline__ float cll_nin_scale(const cll_cu_norm_in &n, const CllNinPart &q) {
    if (!n.part) return 1.0f;
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < 4; k++) s += q.p[k];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    const float rms = sqrtf((float)(s / (double)n.d) + n.eps);
    if (n.hint && threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0) n.hint[0] = rms;
    return __fmul_rn(1.0f / rms, 1.0f / q.c); /* 1/c: exact (a power of two) */
}

#endif
