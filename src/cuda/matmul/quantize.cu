/* cuda/matmul/quantize: f32 activations -> q8_1 blocks, byte-exact with cll_quantize_q8_1 (ggml-cpu's
 * quantize_row_q8_1: d = amax/127, q = round-half-even(x * (127/amax)), s = fp16(d * sum(q))).
 * Launch geometry: one warp per 32-element block, 8 blocks per 256-thread block, grid covers
 * n * cols/32 blocks. No shared memory. Programmatic dependent launch (waits first thing). Owns nothing. Rule: IEEE division and no FMA contraction
 * in the scale math, or the bytes would drift from the CPU's. */
#include "cuda/matmul/kernels.cuh"

__global__ void k_quantize_q8_1(const float *__restrict__ x, int64_t ld, int64_t nbr, int64_t nblk_total,
                                cll_block_q8_1 *__restrict__ out) {
    cll_pdl_wait(); /* first: x is the previous kernel's output */
    const int64_t blk = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (blk >= nblk_total) return;
    const int64_t r = blk / nbr, c = blk % nbr;
    const float v = x[r * ld + c * 32 + lane];
    const float amax = cll_warp_max(fabsf(v));
    const float d = __fdiv_rn(amax, 127.0f);
    const float id = amax != 0.0f ? __fdiv_rn(127.0f, amax) : 0.0f;
    const int q = (int)rintf(__fmul_rn(v, id));
    const int sum = __reduce_add_sync(0xffffffffu, q);
    cll_block_q8_1 *o = out + blk;
    o->qs[lane] = (int8_t)q;
    if (lane == 0) {
        o->d = cll_f2h(d);
        o->s = cll_f2h(__fmul_rn(d, (float)sum));
    }
}

cudaError_t cll_cu_quantize_q8_1(const float *x, int64_t ld, int64_t n, int64_t cols, void *xq, cudaStream_t s) {
    if (cols % 32 || n < 0) return cudaErrorInvalidValue;
    const int64_t nbr = cols / 32, total = n * nbr;
    if (total == 0) return cudaSuccess;
    return cll_cu_launch(k_quantize_q8_1, dim3((unsigned)cll_cdiv(total, 8)), dim3(256), 0, s, x, ld, nbr, total,
                        (cll_block_q8_1 *)xq);
}
