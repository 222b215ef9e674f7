/* cuda/ops/moe: MoE routing on the device: softmax over the router logits, top-k experts
 * (ties to the lower id), optional renormalization; expert ids and weights land in device
 * memory where the expert gemv (mat_ids) reads them, so routing stays inside the decode graph.
 * Owns nothing. Rule: as cpu/forward.c moe_route: max-subtracted exp, double-summed, probs
 * scaled by a float inverse, renorm sum clamped to >= 2^-14.
 * Launch geometry: one warp per token (grid n x 32 threads); smem n_expert floats. */
#include "cuda/ops/ops.cuh"
#include "cuda/ops/route.cuh"

__global__ static void moe_route_kernel(const float *logits, int32_t E, int32_t K, bool renorm, int32_t *sel,
                                        float *selw) {
    cll_pdl_wait();
    cll_pdl_trigger();
    extern __shared__ float pr[]; /* (E) */
    const int64_t r = blockIdx.x;
    cll_route_warp(logits + r * E, E, K, renorm, pr, sel + r * K, selw + r * K);
}

cudaError_t cll_cu_moe_route(const float *logits, int64_t n, int32_t n_expert, int32_t k, bool renorm, int32_t *sel,
                             float *selw, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    if (k <= 0 || k > n_expert || n_expert > 8192) return cudaErrorInvalidValue;
    CLL_CU_RET(cll_cu_launch(moe_route_kernel, dim3((unsigned)n), dim3(32), (size_t)n_expert * sizeof(float), s, logits, n_expert, k, renorm, sel, selw));
    return cudaGetLastError();
}

/* counting sort of the slots by expert, stable: the slots are walked in chunks of the block's
 * width; per chunk every thread finds its rank among the chunk's earlier slots of the same
 * expert with a warp match mask plus the counts the chunk's earlier warps left in smem */
__global__ static void moe_sort_kernel(const int32_t *sel, int32_t n_slots, int32_t E, int32_t tile, int32_t *ids,
                                       int32_t *off, int32_t *toff) {
    extern __shared__ int32_t sm[]; /* cnt (E) | pos (E) | wcnt (warps x 32: per-warp scratch) */
    int32_t *cnt = sm, *pos = sm + E;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nw = blockDim.x >> 5;
    for (int i = tid; i < E; i += blockDim.x) cnt[i] = 0;
    __syncthreads();
    for (int i = tid; i < n_slots; i += blockDim.x) {
        int e = sel[i];
        if ((unsigned)e >= (unsigned)E) e = 0;
        atomicAdd(&cnt[e], 1);
    }
    __syncthreads();
    if (tid == 0) {
        int32_t o = 0, t = 0;
        for (int e = 0; e < E; e++) {
            off[e] = o;
            toff[e] = t;
            pos[e] = o;
            o += cnt[e];
            t += (cnt[e] + tile - 1) / tile;
        }
        off[E] = o;
        toff[E] = t;
    }
    __syncthreads();
    /* stable scatter: chunk by chunk, warp by warp in order (warp w waits its turn) */
    for (int base = 0; base < n_slots; base += (int)blockDim.x) {
        const int i = base + tid;
        int e = 0;
        if (i < n_slots) {
            e = sel[i];
            if ((unsigned)e >= (unsigned)E) e = 0;
        }
        for (int w = 0; w < nw; w++) {
            if (warp == w) {
                const unsigned act = __ballot_sync(0xffffffffu, i < n_slots);
                const unsigned same = __match_any_sync(0xffffffffu, i < n_slots ? e : -1) & act;
                if (i < n_slots) {
                    const int rank = __popc(same & ((1u << lane) - 1u));
                    ids[pos[e] + rank] = i;
                }
                __syncwarp();
                /* the highest lane of each group advances the expert's position */
                if (i < n_slots && (same >> lane) == 1u) pos[e] += __popc(same);
            }
            __syncthreads();
        }
    }
}

cudaError_t cll_cu_moe_sort(const int32_t *sel, int64_t n_slots, int32_t n_expert, int32_t tile, int32_t *ids,
                            int32_t *off, int32_t *toff, cudaStream_t s) {
    if (n_expert <= 0 || n_expert > 8192 || tile <= 0 || n_slots < 0 || n_slots > INT32_MAX / 2) return cudaErrorInvalidValue;
    moe_sort_kernel<<<1, 1024, (size_t)2 * (size_t)n_expert * sizeof(int32_t), s>>>(sel, (int32_t)n_slots, n_expert, tile,
                                                                                   ids, off, toff);
    return cudaGetLastError();
}
