/* cuda/ops/logits: the output head's small kernels: gather the rows that want logits, the
 * logit softcap, and the greedy argmax (lowest id on ties) so a greedy step copies back one id.
 * Owns nothing. Rule: argmax keys order logits as the CPU's float compare does (-0 == +0) and
 * break ties to the lower id; the argmax's last block per row writes the key (no zeroing
 * before; per-block keys in a scratch, a self-resetting count per row).
 * Launch geometry: gather grid n x 256; softcap 256-thread blocks over n floats; argmax grid
 * (cdiv(n_vocab, 256*ARGMAX_PER_THREAD), n) x 256 threads, the last block per row reduces. */
#include "cuda/ops/ops.cuh"

#define ARGMAX_PER_THREAD 8

__global__ static void gather_rows_kernel(const float *src, int64_t ld_src, const int32_t *rows, int64_t d, float *dst,
                                          int64_t ld_dst) {
    cll_pdl_wait();
    cll_pdl_trigger();
    const int64_t r = blockIdx.x;
    const float *s = src + (int64_t)rows[r] * ld_src;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) dst[r * ld_dst + j] = s[j];
}

cudaError_t cll_cu_gather_rows(const float *src, int64_t ld_src, const int32_t *rows, int64_t n, int64_t d,
                               float *dst, int64_t ld_dst, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    CLL_CU_RET(cll_cu_launch(gather_rows_kernel, dim3((unsigned)n), dim3(256), 0, s, src, ld_src, rows, d, dst, ld_dst));
    return cudaGetLastError();
}

__global__ static void softcap_kernel(float *x, int64_t n, float c) {
    cll_pdl_wait();
    cll_pdl_trigger();
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = tanhf(x[i] / c) * c;
}

cudaError_t cll_cu_softcap(float *x, int64_t n, float c, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    CLL_CU_RET(cll_cu_launch(softcap_kernel, dim3((unsigned)cll_cdiv(n, 256)), dim3(256), 0, s, x, n, c));
    return cudaGetLastError();
}

static __device__ __forceinline__ unsigned long long argmax_key(float v, int64_t id) {
    if (v == 0.0f) v = 0.0f; /* -0 ties with +0 */
    uint32_t u = __float_as_uint(v);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return ((unsigned long long)u << 32) | (0xffffffffu - (uint32_t)id);
}

__global__ static void argmax_kernel(const float *logits, int64_t V, unsigned long long *keys, unsigned long long *part,
                                     int *count) {
    cll_pdl_wait();
    cll_pdl_trigger();
    __shared__ unsigned long long red[32];
    __shared__ bool last;
    const int64_t r = blockIdx.y;
    const float *x = logits + r * V;
    unsigned long long best = 0;
    const int64_t b = (int64_t)blockIdx.x * blockDim.x * ARGMAX_PER_THREAD + threadIdx.x;
#pragma unroll
    for (int k = 0; k < ARGMAX_PER_THREAD; k++) {
        const int64_t i = b + (int64_t)k * blockDim.x;
        if (i < V) {
            const unsigned long long key = argmax_key(x[i], i);
            best = key > best ? key : best;
        }
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long ob = __shfl_xor_sync(0xffffffffu, best, o);
        best = ob > best ? ob : best;
    }
    if (lane == 0) red[warp] = best;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < nw; w++) best = red[w] > best ? red[w] : best;
        part[r * gridDim.x + blockIdx.x] = best;
        __threadfence();
        last = atomicAdd(count + r, 1) == (int)gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    /* the last block of the row: max over the blocks' keys (ld.cg: other blocks wrote them) */
    best = 0;
    for (unsigned i = threadIdx.x; i < gridDim.x; i += blockDim.x) {
        const unsigned long long k = __ldcg(part + r * gridDim.x + i);
        best = k > best ? k : best;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long ob = __shfl_xor_sync(0xffffffffu, best, o);
        best = ob > best ? ob : best;
    }
    __syncthreads();
    if (lane == 0) red[warp] = best;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < nw; w++) best = red[w] > best ? red[w] : best;
        keys[r] = best;
        count[r] = 0; /* self-resetting for the next launch / replay */
    }
}

int64_t cll_cu_argmax_blocks(int64_t n_vocab) { return cll_cdiv(n_vocab, 256 * ARGMAX_PER_THREAD); }

cudaError_t cll_cu_argmax(const float *logits, int64_t n, int64_t n_vocab, unsigned long long *keys,
                          unsigned long long *part, int *count, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    dim3 grid((unsigned)cll_cu_argmax_blocks(n_vocab), (unsigned)n);
    CLL_CU_RET(cll_cu_launch(argmax_kernel, dim3(grid), dim3(256), 0, s, logits, n_vocab, keys, part, count));
    return cudaGetLastError();
}

/* ---- top-k candidates (a sampling step: the host finishes top-p / min-p / temperature / the draw
 * on them) ----
 * One 1024-thread block per row. Keys are argmax_key's (ordered logit bits << 32 | ~id: distinct,
 * larger = higher logit, then lower id), so the k best candidates are exactly the k largest keys.
 * The k-th largest key is found by an 8-pass radix select (8 bits per pass from the top, a 256-bin
 * shared histogram of the keys that match the bits decided so far), the keys >= it are gathered (k
 * of them) and bitonic-sorted descending; the row's ids and logits go out in that order: the order
 * of the CPU sampler's top_k_select (descending logit, ties to the lower id). */
#define TOPK_THREADS 1024

__global__ static void __launch_bounds__(TOPK_THREADS) topk_kernel(const float *logits, int64_t V, int k, int32_t *ids,
                                                                   float *vals) {
    cll_pdl_wait();
    cll_pdl_trigger();
    __shared__ unsigned hist[256];
    __shared__ unsigned long long cand[CLL_CU_TOPK_MAX];
    __shared__ unsigned long long prefix_s;
    __shared__ int left_s, n_s;
    const int64_t r = blockIdx.x;
    const float *x = logits + r * V;
    unsigned long long prefix = 0, mask = 0;
    int left = k;
    for (int shift = 56; shift >= 0; shift -= 8) {
        for (int i = threadIdx.x; i < 256; i += TOPK_THREADS) hist[i] = 0;
        __syncthreads();
        for (int64_t i = threadIdx.x; i < V; i += TOPK_THREADS) {
            const unsigned long long key = argmax_key(x[i], i);
            if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255], 1u);
        }
        __syncthreads();
        if (threadIdx.x == 0) { /* the bin holding the left-th largest of the matching keys */
            unsigned cum = 0;
            int b = 255;
            for (; b > 0; b--) {
                if (cum + hist[b] >= (unsigned)left) break;
                cum += hist[b];
            }
            left_s = left - (int)cum;
            prefix_s = prefix | ((unsigned long long)b << shift);
        }
        __syncthreads();
        left = left_s;
        prefix = prefix_s;
        mask |= 255ull << shift;
        __syncthreads();
    }
    /* prefix is the k-th largest key: gather the keys >= it (exactly k: keys are distinct) */
    if (threadIdx.x == 0) n_s = 0;
    int kp = 1;
    while (kp < k) kp <<= 1;
    for (int i = threadIdx.x; i < kp; i += TOPK_THREADS) cand[i] = 0;
    __syncthreads();
    for (int64_t i = threadIdx.x; i < V; i += TOPK_THREADS) {
        const unsigned long long key = argmax_key(x[i], i);
        if (key >= prefix) {
            const int at = atomicAdd(&n_s, 1);
            if (at < k) cand[at] = key;
        }
    }
    __syncthreads();
    /* bitonic sort of kp keys, descending */
    for (int size = 2; size <= kp; size <<= 1)
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int i = threadIdx.x; i < kp; i += TOPK_THREADS) {
                const int j = i ^ stride;
                if (j > i) {
                    const bool desc = (i & size) == 0;
                    const unsigned long long a = cand[i], b = cand[j];
                    if (desc ? a < b : a > b) {
                        cand[i] = b;
                        cand[j] = a;
                    }
                }
            }
            __syncthreads();
        }
    for (int i = threadIdx.x; i < k; i += TOPK_THREADS) {
        const int32_t id = cll_cu_argmax_id(cand[i]);
        ids[r * k + i] = id;
        vals[r * k + i] = x[id];
    }
}

cudaError_t cll_cu_topk(const float *logits, int64_t n, int64_t n_vocab, int k, int32_t *ids, float *vals,
                        cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    if (k < 1 || k > CLL_CU_TOPK_MAX || k > n_vocab) return cudaErrorInvalidValue;
    CLL_CU_RET(cll_cu_launch(topk_kernel, dim3((unsigned)n), dim3(TOPK_THREADS), 0, s, logits, n_vocab, k, ids, vals));
    return cudaGetLastError();
}
