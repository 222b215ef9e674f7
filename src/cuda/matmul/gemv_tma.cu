/* cuda/matmul/gemv_tma: the split-layout decode gemv fed by bulk copies (rows *_split_tma).
 * Why: the register-streamed rows (gemv_split.cu) keep ~9 KB per block in flight, bounded by
 * registers; at 4.3 TB/s and ~1.5 us loaded latency an SM needs ~50 KB in flight, so they reach
 * 53-65% of the bandwidth on the 7B shapes. Here the weight bytes never pass through registers
 * on their way in: a tile of rt consecutive rows of the split layout is one contiguous run of
 * rt * row_stride bytes, which one thread moves to shared memory with one
 * cp.async.bulk (the TMA engine), completion counted on an mbarrier. Each block keeps ns tiles
 * in flight (default 4 x ~16 KB; 2-3 blocks per SM: ~130-190 KB per SM), and its first ns tiles
 * go out before the PDL wait, so the weights stream while the previous kernel finishes.
 * Launch geometry: 128 threads, persistent grid min(tiles, SMs x resident blocks), block b takes
 * tiles b, b + grid, ...; dynamic shared memory = ns stages x stage bytes + the q8_1 activation
 * row (ng x 44 B, staged once per block after the wait: 11-word records with the two q sums).
 * Per tile, thread t takes groups t, t+128, ... of every row of the tile (one activation read per
 * group for all rt rows), sums per row in registers, warp sums, then 4 warp partials per row in
 * fixed order (deterministic). One product per launch (nb == 1, no mat_ids): other calls go to
 * the r4_pt row. Honours the fused residual tail (cuda/matmul/epilogue.cuh). Owns nothing. Rule: the same dots as the register rows (S::dot on the same
 * records), so the gate holds it to the same bar. */
#include <stdio.h>

#include "cuda/matmul/kernels.cuh"
#include "cuda/matmul/split.cuh"
#include "cuda/matmul/epilogue.cuh"

#define TMA_THREADS 128
#define TMA_WARPS (TMA_THREADS / 32)
#define TMA_RT_MAX 8
#define TMA_MAX_STAGES 8
#define TMA_SMEM_MAX (200 * 1024)

template <class S, bool EPI>
__global__ void __launch_bounds__(TMA_THREADS)
k_gemv_tma(const uint8_t *__restrict__ W, int64_t rows, int ng, int64_t row_stride, int rt, int ns, uint32_t stage_bytes,
           const cll_block_q8_1 *__restrict__ xq, float *__restrict__ y, int early, const void *pfn, size_t pfb,
           const cll_cu_resid_epi epi) {
    typedef typename S::Wv Wv;
    extern __shared__ __align__(128) uint8_t smem[];
    __shared__ __align__(8) uint64_t full[TMA_MAX_STAGES];
    __shared__ float red[2][TMA_WARPS][TMA_RT_MAX];
    if (early) cll_pdl_trigger(); /* the next kernel may launch now */
    double epi_acc = 0.0; /* the fused residual tail: this thread's squares */
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int64_t tiles = (rows + rt - 1) / rt;
    auto issue = [&](int64_t k) { /* local tile k of this block into its slot */
        const int64_t tile = blockIdx.x + k * gridDim.x;
        if (tile >= tiles) return;
        const int slot = (int)(k % ns);
        const int64_t r0 = tile * rt, nr = rows - r0 < rt ? rows - r0 : rt;
        const uint32_t bytes = (uint32_t)(nr * row_stride);
        cll_mbar_expect_tx(&full[slot], bytes);
        cll_bulk_g2s(smem + (size_t)slot * stage_bytes, W + r0 * row_stride, bytes, &full[slot]);
    };
    if (tid == 0) {
        for (int s = 0; s < ns; s++) cll_mbar_init(&full[s], 1);
        cll_mbar_init_fence();
        for (int k = 0; k < ns; k++) issue(k); /* weights depend on no kernel: before the wait */
    }
    SpTables<S>::stage(); /* a codebook to shared memory (no split form has one today); the barrier below orders it */
    cll_pdl_wait(); /* the activation's producer */
    int *sx = (int *)(smem + (size_t)ns * stage_bytes);
    sp_stage_x(xq, ng, sx, tid, TMA_THREADS);
    __syncthreads(); /* activation staged; barriers initialised */
    for (int64_t k = 0;; k++) {
        const int64_t tile = blockIdx.x + k * gridDim.x;
        if (tile >= tiles) break;
        const int slot = (int)(k % ns);
        cll_mbar_wait(&full[slot], (uint32_t)((k / ns) & 1));
        const uint8_t *st = smem + (size_t)slot * stage_bytes;
        const int64_t r0 = tile * rt;
        const int nr = (int)(rows - r0 < rt ? rows - r0 : rt);
        float acc[TMA_RT_MAX];
#pragma unroll
        for (int r = 0; r < TMA_RT_MAX; r++) acc[r] = 0.0f;
        for (int g = tid; g < ng; g += TMA_THREADS) {
            const CuX x = sp_ldx_sm(sx + SP_XW * g);
#pragma unroll
            for (int r = 0; r < TMA_RT_MAX; r++) {
                if (r < nr) {
                    const Wv w = S::template load<1>(st + (size_t)r * row_stride, ng, g);
                    acc[r] += S::dot(w, g, x);
                }
            }
        }
        float(*rd)[TMA_RT_MAX] = red[k & 1];
#pragma unroll
        for (int r = 0; r < TMA_RT_MAX; r++) {
            if (r < nr) {
                const float v = cll_warp_sum(acc[r]);
                if (lane == 0) rd[warp][r] = v;
            }
        }
        __syncthreads(); /* every thread is done with the slot, and the partials are in */
        if (tid == 0) issue(k + ns);
        if (tid < nr) {
            float v = rd[0][tid];
#pragma unroll
            for (int w = 1; w < TMA_WARPS; w++) v += rd[w][tid];
            y[r0 + tid] = v;
            if (EPI) epi_acc += cll_epi_row(epi, r0 + tid, v);
        }
    }
    cll_l2_prefetch_next(pfn, pfb);
    if (EPI) cll_epi_finish(epi, rows, epi_acc);
}

/* stages and target stage bytes: CLLAMA_CUDA_TMA="NS,KB" (default 4,16), for A/B runs */
static void tma_knobs(int *ns, int *kb) {
    static int s_ns = -1, s_kb = -1; /* process-wide setting read once; not state */
    if (s_ns < 0) {
        int a = 4, b = 16;
        const char *e = getenv("CLLAMA_CUDA_TMA");
        if (e && *e) sscanf(e, "%d,%d", &a, &b);
        s_ns = a < 2 ? 2 : a > TMA_MAX_STAGES ? TMA_MAX_STAGES : a;
        s_kb = b < 4 ? 4 : b > 64 ? 64 : b;
    }
    *ns = s_ns;
    *kb = s_kb;
}


/* the geometry of one product: rows per tile, stages, stage bytes, shared bytes; false: not this row's shape */
bool cll_cu_tma_geometry(int64_t rows, int64_t cols, size_t row_stride, int *rt, int *ns, uint32_t *stage_bytes,
                         size_t *smem) {
    int n, kb;
    tma_knobs(&n, &kb);
    if (rows <= 0 || cols <= 0 || cols % 32 || row_stride % 16) return false;
    int64_t r = (int64_t)kb * 1024 / (int64_t)row_stride;
    r = r < 1 ? 1 : r > TMA_RT_MAX ? TMA_RT_MAX : r;
    if (r > rows) r = rows;
    const size_t sb = (size_t)r * row_stride, act = (size_t)(cols / 32) * SP_XW * 4;
    while (n > 2 && (size_t)n * sb + act > TMA_SMEM_MAX) n--;
    if ((size_t)n * sb + act > TMA_SMEM_MAX || sb >= ((size_t)1 << 20)) return false;
    *rt = (int)r;
    *ns = n;
    *stage_bytes = (uint32_t)sb;
    *smem = (size_t)n * sb + act;
    return true;
}

template <class S> static cudaError_t tma_gemv_launch(const cll_cu_weight *w, const cll_cu_gemv_args *a, cudaStream_t st) {
    if (!a->xq || w->layout != CLL_CU_LAYOUT_SPLIT || w->cols % S::QK) return cudaErrorInvalidValue;
    if (a->epi.on && a->epi.slot) return cudaErrorNotSupported; /* the polled tail: k_gemv_sp / k_gemv_spk only */
    int rt, ns;
    uint32_t sb;
    size_t smem;
    const bool fits = cll_cu_tma_geometry(w->rows, w->cols, w->row_stride, &rt, &ns, &sb, &smem);
    if (a->nb != 1 || a->mat_ids || !fits || ((uintptr_t)w->d & 15)) { /* not this row's case: the r4_pt row */
        const cll_cu_sp_ops *o = cll_cu_sp_ops_get(w->type);
        return o ? o->gemv_r4p(w, a, st) : cudaErrorInvalidValue;
    }
    /* per kernel and device: opened to TMA_SMEM_MAX at the first launch, whatever its size: the 48 KB a
     * kernel gets unopened count its static shared memory too, and the tail's (cll_epi_finish) took a
     * 48640-byte q2_K 4096x4096 launch past it ("invalid argument" in the H100 gate, where the plain
     * kernel's 320 static bytes still fit) */
    static int opened[2][64];
    CLL_CU_RET(cll_cu_open_smem(opened[0], k_gemv_tma<S, false>, (int)TMA_SMEM_MAX));
    CLL_CU_RET(cll_cu_open_smem(opened[1], k_gemv_tma<S, true>, (int)TMA_SMEM_MAX));
    int bps = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, k_gemv_tma<S, false>, TMA_THREADS, smem) != cudaSuccess || bps <= 0) {
        cudaGetLastError();
        bps = 1;
    }
    const int64_t tiles = cll_cdiv(w->rows, rt), cap = (int64_t)cll_cu_sm_count() * bps;
    const unsigned grid = (unsigned)(tiles < cap ? tiles : cap);
    auto k = a->epi.on ? k_gemv_tma<S, true> : k_gemv_tma<S, false>;
    return cll_cu_launch(k, dim3(grid), dim3(TMA_THREADS), smem, st, w->d, w->rows, (int)(w->cols / 32),
                         (int64_t)w->row_stride, rt, ns, sb, (const cll_block_q8_1 *)a->xq, a->y,
                         cll_cu_gemv_early_trigger(), a->pf_next, a->pf_bytes, a->epi);
}

cll_cu_gemv_fn cll_cu_sp_tma_gemv(uint32_t type) {
    switch (type) {
    case CLL_TYPE_Q4_0: return tma_gemv_launch<CuSp<CLL_TYPE_Q4_0>>;
    case CLL_TYPE_Q8_0: return tma_gemv_launch<CuSp<CLL_TYPE_Q8_0>>;
    case CLL_TYPE_Q5_1: return tma_gemv_launch<CuSp<CLL_TYPE_Q5_1>>;
    case CLL_TYPE_Q4_K: return tma_gemv_launch<CuSp<CLL_TYPE_Q4_K>>;
    case CLL_TYPE_Q5_K: return tma_gemv_launch<CuSp<CLL_TYPE_Q5_K>>;
    case CLL_TYPE_Q3_K: return tma_gemv_launch<CuSp<CLL_TYPE_Q3_K>>;
    case CLL_TYPE_Q2_K: return tma_gemv_launch<CuSp<CLL_TYPE_Q2_K>>;
    case CLL_TYPE_IQ4_NL: return tma_gemv_launch<CuSp<CLL_TYPE_IQ4_NL>>;
    case CLL_TYPE_Q5_0: return tma_gemv_launch<CuSp<CLL_TYPE_Q5_0>>;
    case CLL_TYPE_Q4_1: return tma_gemv_launch<CuSp<CLL_TYPE_Q4_1>>;
    case CLL_TYPE_Q6_K: return tma_gemv_launch<CuSp<CLL_TYPE_Q6_K>>;
    case CLL_TYPE_IQ4_XS: return tma_gemv_launch<CuSp<CLL_TYPE_IQ4_XS>>;
    case CLL_TYPE_IQ3_S: return tma_gemv_launch<CuSp<CLL_TYPE_IQ3_S>>;
    default: return NULL;
    }
}
