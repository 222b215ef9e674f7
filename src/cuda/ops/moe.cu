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
        if (e == -1) continue; /* a slot another rank serves */
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
        bool live = i < n_slots;
        if (live) {
            e = sel[i];
            live = e != -1;
            if ((unsigned)e >= (unsigned)E) e = 0;
        }
        for (int w = 0; w < nw; w++) {
            if (warp == w) {
                const unsigned act = __ballot_sync(0xffffffffu, live);
                const unsigned same = __match_any_sync(0xffffffffu, live ? e : -1) & act;
                if (live) {
                    const int rank = __popc(same & ((1u << lane) - 1u));
                    ids[pos[e] + rank] = i;
                }
                __syncwarp();
                /* the highest lane of each group advances the expert's position */
                if (live && (same >> lane) == 1u) pos[e] += __popc(same);
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

/* expert parallel: the local id of each routed slot (sel - e0 for the experts [e0, e0 + here)), else
 * other */
__global__ static void moe_localize_kernel(const int32_t *sel, int64_t n, int32_t e0, int32_t here, int32_t other,
                                           int32_t *out) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int32_t e = sel[i] - e0;
    out[i] = e >= 0 && e < here ? e : other;
}

cudaError_t cll_cu_moe_localize(const int32_t *sel, int64_t n_slots, int32_t e0, int32_t here, int32_t other, int32_t *out,
                                cudaStream_t s) {
    if (n_slots <= 0) return cudaSuccess;
    if (here < 1 || e0 < 0) return cudaErrorInvalidValue;
    moe_localize_kernel<<<(unsigned)cll_cdiv(n_slots, 256), 256, 0, s>>>(sel, n_slots, e0, here, other, out);
    return cudaGetLastError();
}

/* expert parallel: zero the output rows (d floats each) of the slots routed outside [e0, e0 + here) */
__global__ static void moe_zero_foreign_kernel(const int32_t *sel, int32_t e0, int32_t here, float *y, int64_t d) {
    const int64_t slot = blockIdx.x;
    const int32_t e = sel[slot] - e0;
    if (e >= 0 && e < here) return;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) y[slot * d + j] = 0.0f;
}

cudaError_t cll_cu_moe_zero_foreign(const int32_t *sel, int64_t n_slots, int32_t e0, int32_t here, float *y, int64_t d,
                                    cudaStream_t s) {
    if (n_slots <= 0) return cudaSuccess;
    if (n_slots > INT32_MAX) return cudaErrorInvalidValue;
    moe_zero_foreign_kernel<<<(unsigned)n_slots, 256, 0, s>>>(sel, e0, here, y, d);
    return cudaGetLastError();
}

/* expert parallel: a rank's weighted sum of its token's slots (the foreign ones are zero rows), the rows the
 * ranks then all-reduce; the residual kernel's slot order and rounding (scale each slot, add in order) */
__global__ static void moe_combine_kernel(const float *y, int64_t ld, const float *w, int32_t k, int64_t d, float *t) {
    cll_pdl_wait();
    cll_pdl_trigger();
    const int64_t r = blockIdx.y, j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= d) return;
    const float *yr = y + r * k * ld, *wr = w + r * k;
    float v = __fmul_rn(yr[j], wr[0]);
    for (int32_t u = 1; u < k; u++) v = __fadd_rn(v, __fmul_rn(yr[(int64_t)u * ld + j], wr[u]));
    t[r * d + j] = v;
}

cudaError_t cll_cu_moe_combine(const float *y, int64_t ld, const float *w, int64_t n, int32_t k, int64_t d, float *t,
                               cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    if (k < 1 || ld < d || n > 65535) return cudaErrorInvalidValue;
    CLL_CU_RET(cll_cu_launch(moe_combine_kernel, dim3((unsigned)cll_cdiv(d, 256), (unsigned)n), dim3(256), 0, s, y, ld, w, k,
                             d, t));
    return cudaGetLastError();
}
