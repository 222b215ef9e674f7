/* cuda/ops/route: the MoE routing of one token by one warp (softmax over the router logits, top-k
 * with ties to the lower id, optional renormalization), shared by the routing kernel (ops/moe.cu)
 * and the decode expert gemvs that route for themselves (cll_cu_route, matmul/matmul.cuh).
 * Rule: as cpu/forward.c moe_route: max-subtracted exp, double-summed, probs scaled by a float
 * inverse, top-k with NaN below every number and ties to the lower id, renorm sum clamped to
 * >= 2^-14; both callers run this one body, so they agree bit for bit.
 * Owns nothing. Whole warp; pr is E floats of scratch (shared memory), sel / selw get K entries. */
#ifndef CLL_CUDA_OPS_ROUTE_CUH
#define CLL_CUDA_OPS_ROUTE_CUH

#include "cuda/common.cuh"

static __device__ __forceinline__ void cll_route_warp(const float *lg, int32_t E, int32_t K, bool renorm, float *pr,
                                                      int32_t *sel, float *selw) {
    const int lane = threadIdx.x & 31;
    float mx = -INFINITY;
    for (int x = lane; x < E; x += 32) mx = fmaxf(mx, lg[x]);
    mx = cll_warp_max(mx);
    double sum = 0.0;
    for (int x = lane; x < E; x += 32) {
        const float e = expf(lg[x] - mx);
        pr[x] = e;
        sum += (double)e;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const float inv = (float)(1.0 / sum);
    for (int x = lane; x < E; x += 32) pr[x] *= inv;
    __syncwarp();
    float wsum = 0.0f;
    for (int k = 0; k < K; k++) {
        /* rank keys: a probability (>= 0), NaN -1 (below every number, as on the CPU), a taken
         * expert -3; the lane's first best, then the lowest id among equal keys: always an
         * untaken expert in [0, E) (NaN logits once routed to id E, past the weights) */
        float bv = -4.0f;
        int bi = E;
        for (int x = lane; x < E; x += 32) {
            const float kx = isnan(pr[x]) ? -1.0f : pr[x];
            if (kx > bv) {
                bv = kx;
                bi = x;
            }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
            const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
            if (ov > bv || (ov == bv && oi < bi)) {
                bv = ov;
                bi = oi;
            }
        }
        __syncwarp();
        const float pv = pr[bi]; /* the probability itself (NaN stays NaN) */
        __syncwarp();
        if (lane == 0) {
            sel[k] = bi;
            selw[k] = pv;
            pr[bi] = -3.0f;
        }
        __syncwarp();
        wsum += pv;
    }
    if (renorm) {
        if (wsum < 6.103515625e-5f) wsum = 6.103515625e-5f;
        __syncwarp();
        for (int k = lane; k < K; k += 32) selw[k] = selw[k] / wsum;
    }
    __syncwarp();
}

#endif
