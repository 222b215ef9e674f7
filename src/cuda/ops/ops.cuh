/* cuda/ops: the non-matmul kernels of the CUDA forward (norms, residuals, activations, rope +
 * KV store, attention, MoE routing, the output head's softcap / argmax / row gather).
 * Every op runs over n token rows; what changes per decode step (token, pos, seq) is read
 * from device arrays, so the same launches are replayed from a CUDA graph.
 * Owns nothing: buffers are the driver state's. Rule: numerics follow the CPU reference
 * (src/cpu/ops.c): f32 norms with double sums, iterated rope theta, fp16-rounded q over an
 * F16 cache, max-subtracted softmax, ggml-cpu's q8_1 activation rounding (half to even). */
#ifndef CLL_CUDA_OPS_CUH
#define CLL_CUDA_OPS_CUH

#include "cuda/common.cuh"
#include "model/rope.h"


/* q8_1 blocks per row of cols floats (a partial last block is zero-padded) */
static inline int64_t cll_cu_q8_blocks(int64_t cols) { return (cols + 31) / 32; }

/* One warp quantizes 32 values (lane j holds element j) to a q8_1 block exactly as
 * cll_quantize_q8_1: d = amax/127, id = 127/amax, q = round-half-even(v*id), s = d*sum(q). */
static __device__ __forceinline__ void cll_warp_q8_1(float v, cll_block_q8_1 *blk, int lane) {
    const float amax = cll_warp_max(fabsf(v));
    const float d = amax / 127.f;
    const float id = amax != 0.0f ? 127.f / amax : 0.0f;
    const int q = __float2int_rn(v * id);
    int sum = q;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    blk->qs[lane] = (int8_t)q;
    if (lane == 0) {
        blk->d = cll_f2h(d);
        blk->s = cll_f2h(d * (float)sum);
    }
}

/* ggml-cpu's GELU-tanh: the fp16 table entry of fp16(x) (cll_ops_gelu_table_init), saturated
 * outside (-10, 10) */
static __device__ __forceinline__ float gelu_fp16_table(float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    const float k_sqrt_2_over_pi = 0.79788456080286535587989211986876f, k_a = 0.044715f;
    const float xh = __half2float(__float2half_rn(x));
    const float y = 0.5f * xh * (1.0f + tanhf(k_sqrt_2_over_pi * xh * fmaf(k_a * xh, xh, 1.0f)));
    return __half2float(__float2half_rn(y));
}
/* the gated FFN activation of one element: GELU-tanh(g) * u or SiLU(g) * u, as src/cpu rounds it
 * (the act kernel, cuda/ops/norm.cu, and the fused staging of cuda/matmul/split.cuh) */
static __device__ __forceinline__ float cll_act_gated(float g, float u, bool gelu) {
    return gelu ? __fmul_rn(gelu_fp16_table(g), u) : __fmul_rn(g / (1.0f + expf(-g)), u);
}

/* q8_1 of 32 elements held as one float4 by each of 8 consecutive lanes (sub = lane & 7), as
 * cll_warp_q8_1 rounds them (amax over the 32, q = rn(v * 127/amax), s = d * sum q). Every lane
 * of the warp calls it (zeros past the row); write: this lane's group is a block of the row. */
static __device__ __forceinline__ void cll_q8_1_store_f4(float4 v, cll_block_q8_1 *blk, int sub, bool write) {
    float amax = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
#pragma unroll
    for (int o = 1; o < 8; o <<= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float d = amax / 127.f;
    const float id = amax != 0.0f ? 127.f / amax : 0.0f;
    const int q0 = __float2int_rn(v.x * id), q1 = __float2int_rn(v.y * id), q2 = __float2int_rn(v.z * id),
              q3 = __float2int_rn(v.w * id);
    int sum = q0 + q1 + q2 + q3;
#pragma unroll
    for (int o = 1; o < 8; o <<= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (write) {
        *(char4 *)(blk->qs + 4 * sub) = make_char4((signed char)q0, (signed char)q1, (signed char)q2, (signed char)q3);
        if (sub == 0) {
            blk->d = cll_f2h(d);
            blk->s = cll_f2h(d * (float)sum);
        }
    }
}

/* the row kernels' float4 arithmetic, each operation rounded alone (no contraction) */
static __device__ __forceinline__ float4 cll_f4_mul(float4 a, float4 b) {
    return make_float4(__fmul_rn(a.x, b.x), __fmul_rn(a.y, b.y), __fmul_rn(a.z, b.z), __fmul_rn(a.w, b.w));
}
static __device__ __forceinline__ float4 cll_f4_scale(float4 a, float s) {
    return make_float4(__fmul_rn(a.x, s), __fmul_rn(a.y, s), __fmul_rn(a.z, s), __fmul_rn(a.w, s));
}
static __device__ __forceinline__ float4 cll_f4_add(float4 a, float4 b) {
    return make_float4(__fadd_rn(a.x, b.x), __fadd_rn(a.y, b.y), __fadd_rn(a.z, b.z), __fadd_rn(a.w, b.w));
}
static __device__ __forceinline__ double cll_f4_sq_d(float4 a) { /* (double)(v*v) per element, in order */
    return (double)__fmul_rn(a.x, a.x) + (double)__fmul_rn(a.y, a.y) + (double)__fmul_rn(a.z, a.z) +
           (double)__fmul_rn(a.w, a.w);
}

/* The register-row shape of cuda/ops/norm.cu's norm kernels for a d-float row, or false (their strided
 * fallback): V float4 a thread (1, 2 or 4) on NT threads (cdiv(d / 4, V) rounded up to a warp, <= 512);
 * thread t holds float4s t + NT k (k < V). The polled residual tail (cuda/matmul/epilogue.cuh) replays
 * that kernel's sums from it, so both take the shape from here. */
#define CLL_NORM_REG_MAX_NT 512
static __host__ __device__ __forceinline__ bool cll_norm_regs_shape(int64_t d, int *v, int *nt) {
    if (d <= 0 || d % 4 || d > 4 * CLL_NORM_REG_MAX_NT * 4) return false;
    const int64_t d4 = d / 4;
    *v = d4 <= CLL_NORM_REG_MAX_NT ? 1 : d4 <= 2 * CLL_NORM_REG_MAX_NT ? 2 : 4;
    *nt = (int)(((d4 + *v - 1) / *v + 31) / 32 * 32);
    return true;
}

/* sum of a double over the block (blockDim.x a multiple of 32, <= 1024); every thread gets it.
 * red: __shared__ double[32]. */
static __device__ __forceinline__ double cll_block_sum_d(double v, double *red) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    __syncthreads(); /* red may still be read by a previous call */
    if (lane == 0) red[warp] = v;
    __syncthreads();
    double t = lane < nw ? red[lane] : 0.0;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
    return t;
}

/* xn = rmsnorm(x) * w, and its q8_1 form xq (both (n, d), xq row stride q8_blocks(d)).
 * w NULL = 1. xn NULL = skip (nothing reads the f32 rows). xq NULL = skip the quantization. xh: xn as f16 in the fused rows' order
 * (cll_cu_fused_xpos per 32 values, row stride d, d % 32 == 0; NULL = skip), or in plain order
 * (xh_plain: what a cuBLAS f16 product reads) */
cudaError_t cll_cu_rmsnorm_q8(const float *x, const float *w, int64_t n, int64_t d, float eps, float *xn, void *xq,
                              cudaStream_t s, void *xh = NULL, bool xh_plain = false);

/* q8_1 form of n rows of cols floats (row stride ld), zero-padded last block */
cudaError_t cll_cu_quantize_rows_q8(const float *x, int64_t ld, int64_t n, int64_t cols, void *xq, cudaStream_t s);

/* The block tail, fused: t = moe ? sum_k moe[k] * moe_w[k] (slot order) : t;
 * t = post ? rmsnorm(t) * post : t; x += t; then (next != NULL or next_plain) the next
 * block's input xn = rmsnorm(x) * next with its q8_1 form xq (xq may be NULL).
 * moe: (n, n_used, d) slot outputs, moe_w (n, n_used); NULL for a dense FFN. */
typedef struct {
    float *x;              /* (n, d) residual stream, updated */
    float *t;              /* (n, d) block output; scratch for the MoE sum / post norm */
    const float *moe;      /* (n, n_used, d) or NULL */
    const float *moe_w;    /* (n, n_used) */
    int32_t n_used;
    const float *post;     /* (d) post norm or NULL */
    bool next_norm;        /* write xn / xq */
    const float *next;     /* (d) next norm weight (NULL = 1) */
    float *xn;             /* (n, d), or NULL: nothing reads the f32 rows (the next product reads xh) */
    void *xq;              /* (n, q8_blocks(d)) or NULL */
    void *xh;              /* (n, d) xn as f16 in the fused rows' order (d % 32 == 0), or NULL */
    bool xh_plain;         /* xh in plain order instead (a cuBLAS f16 product's X) */
} cll_cu_resid_args;
cudaError_t cll_cu_resid_norm_q8(const cll_cu_resid_args *a, int64_t n, int64_t d, float eps, cudaStream_t s);

/* y = act(g) * u (rows r < n: g at gu + r*ld_gu, u at gu + r*ld_gu + f), y (n, f) f32 (NULL = skip:
 * nothing reads it) and its q8_1 form (row stride q8_blocks(f); NULL = skip). gelu: GELU-tanh as
 * ggml-cpu's fp16 table. pf: the blocks ask L2 for [pf, pf + pf_bytes) once the wait is over (the next
 * product's weights; a hint, NULL: none). yh: y as f16 in the fused rows' order (row stride f,
 * f % 32 == 0; NULL = skip), or in plain order (yh_plain). At least one of y, yq, yh. */
cudaError_t cll_cu_act_q8(const float *gu, int64_t ld_gu, int64_t n, int64_t f, bool gelu, float *y, void *yq,
                          cudaStream_t s, const void *pf = NULL, size_t pf_bytes = 0, void *yh = NULL,
                          bool yh_plain = false);

/* Where the cell of (seq, pos) lies in a layer's cache (rows of n_kv*hd): with a paged KV (blk
 * non-NULL) the block table of the step (stride block ids per sequence, blocks of 1 << shift
 * cells: model/kvpage.h), else seq * n_ctx + pos. The table is written by a copy before the
 * step's kernels and only read by them. */
typedef struct {
    const int32_t *blk;
    int32_t stride, shift;
} cll_cu_kvmap;
static __device__ __forceinline__ int64_t cll_cu_kv_cell(const cll_cu_kvmap &m, int32_t n_ctx, int32_t seq, int32_t pos) {
    if (!m.blk) return (int64_t)seq * n_ctx + pos;
    return ((int64_t)__ldg(m.blk + (int64_t)seq * m.stride + (pos >> m.shift)) << m.shift) + (pos & ((1 << m.shift) - 1));
}

/* Per token row i < n of qkv (row stride ld, q | k | v): add biases, per-head q/k RMS norm,
 * rope at pos[i], q *= q_scale (1 = none), q rounded to fp16 when the cache is F16 (in place),
 * then k and v stored to the cache at the cell of (seq[i], pos[i]) (cll_cu_kv_cell). */
typedef struct {
    float *qkv;            /* (n, ld) */
    int64_t ld;
    const int32_t *pos, *seq; /* (n) device */
    const float *bq, *bk, *bv;          /* biases or NULL */
    const float *q_norm, *k_norm;       /* (hd_k) or NULL */
    const float *rope_ff;               /* (n_rot/2) frequency factors or NULL */
    void *kc, *vc;                      /* this layer's cache: (cells, n_kv*hd) */
    bool kv_f16;
    int32_t n_head, n_kv, hd_k, hd_v, n_rot, n_ctx;
    cll_cu_kvmap map;                   /* paged KV: the block tables (blk NULL: seq * n_ctx + pos) */
    bool neox;
    cll_rope rp;                        /* base, linear / YaRN scaling (model/rope.h) */
    float q_scale, eps;
} cll_cu_rope_args;
cudaError_t cll_cu_qkv_rope_store(const cll_cu_rope_args *a, int64_t n, cudaStream_t s);

/* Attention of n query tokens (q rows of qkv, stride ld_q) over their sequence's cache cells
 * [lo, pos] (lo = pos - n_swa + 1 on sliding layers). Keys are split into n_chunks chunks of
 * chunk cells from lo; each (token, head, chunk) block writes a partial (max, sum, acc[hd_v])
 * to part, and the last of them to land writes out (n, n_head*hd_v) f32 and its q8_1 form
 * (NULL = skip).
 * Chunks past the current length are empty (the grids are sized for n_ctx, so a graph replays). */
typedef struct {
    const float *q;        /* (n, ld_q) with heads at h*hd_k */
    int64_t ld_q;
    const void *kc, *vc;
    bool kv_f16;
    const int32_t *pos, *seq;
    int32_t n_head, n_kv, hd_k, hd_v, n_ctx, n_swa; /* n_swa 0: full */
    cll_cu_kvmap map;      /* paged KV (cll_cu_kv_cell) */
    float scale;
    int32_t chunk, n_chunks;
    int32_t min_chunk;     /* GQA kernel: fewest keys per chunk (0: CLLAMA_CUDA_ATTN_MIN_CHUNK, else cll_cu_attn_min_chunk) */
    int32_t gran;          /* set by cll_cu_attention, not the caller: chunk boundaries on multiples of this many keys
                            * from the window's start (the streaming kernels' tile; <= 1: any key; cll_cu_attn_chunk_span) */
    int32_t kv_pf_keys;    /* split GQA kernel: keys of its first sub-chunk whose K / V rows a block asks L2 for
                            * first (set by cll_cu_attention: cll_cu_attn_kv_pf_keys, or CLLAMA_CUDA_ATTN_KV_PF; 0 none) */
    int32_t pre_kv;        /* split GQA kernel, set by cll_cu_attention: a chunk one pass of each phase covers loads its
                            * cached K / V rows into registers before the PDL wait (CLLAMA_CUDA_ATTN_PRE=0: off) */
    int32_t l2pf_tiles;    /* TMA tensor-core streaming kernels, set by cll_cu_attention from CLLAMA_CUDA_ATTN_L2PF (0
                            * unset, the default): as tile t + NS is asked for, tile t + NS + l2pf_tiles is asked of L2
                            * (cll_tma_prefetch_2d), so more of the cache is in flight than the stages hold */
    int32_t drop;          /* split GQA kernel, set by cll_cu_attention from CLLAMA_CUDA_ATTN_DROP (0 unset): stages left
                            * out to time the others (a measurement: the output is wrong). Bits: 1 the fused rope and its
                            * k / v store, 2 the scores, 4 the softmax, 8 the p v sums, 16 the tail (nothing written),
                            * 32 everything after the PDL wait (the kernel boundary alone) */
    float *part;           /* (n, n_head, n_chunks, hd_v + 2) */
    int *count;            /* (n, n_head) chunk blocks landed; zero between launches (self-resetting) */
    float *out;            /* (n, n_head*hd_v) */
    void *outq;            /* (n, q8_blocks(n_head*hd_v)) or NULL */
    /* the tensor-core prefill kernel only (cll_cu_attention_prefill_ok; NULL elsewhere): out as f16 rows too,
     * in the fused rows' order (cll_cu_fused_xpos; n_head*hd_v % 32 == 0) or plain (outh_plain), what the
     * o product reads (no conversion kernel of its own) */
    void *outh;
    bool outh_plain;
    /* decode (cll_cu_attention_fuses_rope): the attention blocks do the rope step themselves from
     * the raw q|k|v rows in rope.qkv (q not written back), and the blocks whose chunk holds a row's
     * pos store k and v of its new cell (the cll_cu_qkv_rope_store launch is skipped) */
    bool fuse_rope;
    cll_cu_rope_args rope;
    /* every row of the batch in a sequence of its own (the host checked; a batched decode step): a
     * row's blocks read no cell another row writes, so the fused rope serves n > 1 too */
    bool distinct_rows;
    /* prefill (n > 1): the batch rows are positions prefill_p0, prefill_p0 + 1, .. of sequence
     * prefill_seq (the host checked): the tensor-core kernel (cuda/ops/attn_prefill.cu) may run */
    bool prefill_contig;
    int32_t prefill_p0, prefill_seq;
    /* tensor-core prefill: (row, head, split) entries part holds (0: no split-K over the keys), and a
     * split count forced (0: cll_cu_attn_prefill_splits' choice; 1: none) */
    int64_t part_cap;
    int32_t pf_splits;
    /* warps per block of the GQA kernel (4, 8 or 16; 0: cll_cu_attn_warps' choice) */
    int32_t warps;
    /* GQA kernels: most chunks a token's keys use (0: the kernel's default cap, cll_cu_attn_active_chunks
     * with CLLAMA_CUDA_ATTN_PER_SM; -1: n_chunks) */
    int32_t act_chunks;
    /* decode form: CLL_CU_ATTN_AUTO (0: the CLLAMA_CUDA_ATTN_STREAM knob, else cll_cu_attn_form's
     * choice by n_ctx), CLL_CU_ATTN_SPLIT or CLL_CU_ATTN_STREAM */
    int32_t form;
    /* decode (n == 1), GQA kernels: once the wait is over, the blocks ask L2 for [pf, pf + pf_bytes)
     * (the o weights, read next) when this token's K and V rows are at most pf_kv_max bytes: over a
     * short context the attention is latency-bound and the memory idle; deep, the keys fill it and
     * would evict the lines. A hint: the results do not depend on it (NULL: none) */
    const void *pf;
    size_t pf_bytes;
    int64_t pf_kv_max;
    /* this layer's K and V tensor maps in device memory (cll_cu_attn_tmaps), what the streaming form's
     * TMA pipeline reads (CLL_CU_ATTN_STREAM_TMA); NULL: none (that form then runs STREAM_TC) */
    const void *tmk, *tmv;
} cll_cu_attn_args;
/* The K and V tensor maps of one layer's unpaged F16 cache (kc, vc: cells x n_kv*hd halves) for the
 * streaming form's TMA pipeline: 2-D, rows = cells, boxes of 64 cells x 64 halves with 128-byte
 * swizzling; written to dst (device memory, 2 x CLL_CU_TMAP_BYTES, 64-byte aligned): K's then V's.
 * cudaErrorNotSupported where they cannot be made (head dim not 64 / 128, a device before sm_90, a
 * driver without cuTensorMapEncodeTiled): the caller leaves tmk / tmv NULL. */
#define CLL_CU_TMAP_BYTES 128
cudaError_t cll_cu_attn_tmaps(void *dst, const void *kc, const void *vc, int32_t n_kv, int32_t hd, int64_t cells);
/* whether launches of form (cll_cu_attn_args.form; CLL_CU_ATTN_AUTO: the CLLAMA_CUDA_ATTN_STREAM knob, else
 * AUTO's choice) may run a TMA form, so the caches need their maps: one asked for (3|4), or AUTO's for an
 * MHA cache (CLL_CU_ATTN_TMA_AUTO, group = n_head / n_kv = 1) */
bool cll_cu_attn_tma_wanted(int form, int group);
/* runs the tensor-core prefill kernel when cll_cu_attention_prefill_ok, else the split kernels */
cudaError_t cll_cu_attention(const cll_cu_attn_args *a, int64_t n, cudaStream_t s);
/* the tensor-core prefill path serves these args: n > 1, prefill_contig, F16 cache, head dim 64
 * or 128 (k == v), and CLLAMA_CUDA_ATTN_PREFILL_TC not 0 */
bool cll_cu_attention_prefill_ok(const cll_cu_attn_args *a, int64_t n);
cudaError_t cll_cu_attention_prefill(const cll_cu_attn_args *a, int64_t n, cudaStream_t s);
/* whether cll_cu_attention can take the rope step (fuse_rope) for these args and n tokens:
 * n == 1 or distinct_rows up to CLL_CU_FUSE_ROPE_MAX_ROWS, the GQA kernel's head dims, and
 * CLLAMA_CUDA_FUSE_ROPE not 0. Every chunk block of a row ropes its heads' q again, so the fusion
 * pays while the rope kernel's launch costs more than that: H200, l2-7b speed_tg fused / rope kernel
 * (same call, 3e5cae5): Q4_0 2 976 / 879, 4 1466 / 1392, 16 3466 / 3367, 32 4536 / 4686, 64 7493 /
 * 7757; Q4_K_M 2 759 / 696, 16 3175 / 3114, 32 4504 / 4513, 64 7544 / 7590, when a 32-row step split
 * a short context in two chunks. Since the chunk floor widens for wide grids (cll_cu_attn_min_chunk),
 * a 32-row step over <= 256 keys is one chunk a row and the cap of 16 / 64 rows gave (tenth session,
 * 4b9f0fa, same call, two runs each): Q4_K_M 32 4542 4529 / 4654 4647, 64 7878 7794 / 7792 7801; Q4_0
 * 32 4971 4923 / 4971 4990, 64 8081 8004 / 7822 7931: hence 32. CLLAMA_CUDA_FUSE_ROPE_ROWS=N moves it */
#define CLL_CU_FUSE_ROPE_MAX_ROWS 32
bool cll_cu_attention_fuses_rope(const cll_cu_attn_args *a, int64_t n);

/* MoE routing per token: softmax over the n_expert router logits, top-k (ties to the lower
 * id), optional renormalization (sum clamped to >= 2^-14 as the CPU does). */
cudaError_t cll_cu_moe_route(const float *logits, int64_t n, int32_t n_expert, int32_t k, bool renorm, int32_t *sel,
                             float *selw, cudaStream_t s);
/* The slots of a batch (sel: n_slots expert ids, slot = token * n_used + k) bucketed by expert
 * for the grouped product (cll_cu_moe_args): off[e] = first sorted position of expert e
 * (off[n_expert] = n_slots), ids[off[e] ..] = its slots in ascending order, toff[e] = its first
 * tile of tile slots (toff[n_expert] = the tile count). An id of -1 is a slot another tensor-parallel
 * rank serves: left out (off[n_expert] then counts the others); any other id outside [0, n_expert)
 * counts as expert 0 (never a read out of bounds). One block, n_expert <= 8192; stable and
 * deterministic. */
cudaError_t cll_cu_moe_sort(const int32_t *sel, int64_t n_slots, int32_t n_expert, int32_t tile, int32_t *ids,
                            int32_t *off, int32_t *toff, cudaStream_t s);
/* expert parallel (a rank holds experts [e0, e0 + here)): out[i] = sel[i] - e0 for its slots, else
 * other (-1: left out of the grouped sort, and a defined zero row on a gemv) */
cudaError_t cll_cu_moe_localize(const int32_t *sel, int64_t n_slots, int32_t e0, int32_t here, int32_t other, int32_t *out,
                                cudaStream_t s);
/* zero the rows (d floats at y + slot * d) of the slots whose routed expert is outside [e0, e0 + here) */
cudaError_t cll_cu_moe_zero_foreign(const int32_t *sel, int64_t n_slots, int32_t e0, int32_t here, float *y, int64_t d,
                                    cudaStream_t s);
/* expert parallel: t (n, d) = per token, the sum over its k slots (rows of y at stride ld, slot = token * k + u)
 * of y * w, scaled then added in slot order as the residual kernel's MoE sum; the rows a rank all-reduces
 * (k times fewer than the slots') */
cudaError_t cll_cu_moe_combine(const float *y, int64_t ld, const float *w, int64_t n, int32_t k, int64_t d, float *t,
                               cudaStream_t s);

/* dst row r = src row rows[r] (n rows of d floats) */
cudaError_t cll_cu_gather_rows(const float *src, int64_t ld_src, const int32_t *rows, int64_t n, int64_t d,
                               float *dst, int64_t ld_dst, cudaStream_t s);

/* x = tanh(x / c) * c over n floats */
cudaError_t cll_cu_softcap(float *x, int64_t n, float c, cudaStream_t s);

/* keys[r] = max over row r of (ordered logit bits << 32 | ~id): the argmax of each of n rows
 * of n_vocab logits, lowest id on ties. One launch, nothing to zero first: part is a scratch of
 * (n, cll_cu_argmax_blocks(n_vocab)) keys, count (n) ints zeroed once (self-resetting). */
int64_t cll_cu_argmax_blocks(int64_t n_vocab);
cudaError_t cll_cu_argmax(const float *logits, int64_t n, int64_t n_vocab, unsigned long long *keys,
                          unsigned long long *part, int *count, cudaStream_t s);
static inline __host__ __device__ int32_t cll_cu_argmax_id(unsigned long long key) {
    return (int32_t)(0xffffffffu - (uint32_t)key);
}
/* the k best candidates of each of n rows (k <= CLL_CU_TOPK_MAX), in the CPU sampler's order
 * (descending logit, ties to the lower id): ids (n, k) and their logits vals (n, k) */
#define CLL_CU_TOPK_MAX 256
cudaError_t cll_cu_topk(const float *logits, int64_t n, int64_t n_vocab, int k, int32_t *ids, float *vals,
                        cudaStream_t s);

#endif
