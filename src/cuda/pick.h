/* cuda/pick: the form of a product site and the resident-panel policy (cuda/matmul/pick.cu):
 * pure functions, plain C, so tests without a GPU call them.
 * Owns nothing. Rule: the CUDA driver dispatches on these answers. */
#ifndef CLL_CUDA_PICK_H
#define CLL_CUDA_PICK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The form of a product site (cuda/matmul/pick.cu), a pure function of the site: n_tokens 1 is
 * the gemv (decode; experts over mat_ids); a batch takes, for a dense weight, cuBLAS on the weight
 * itself (floats) or on its f16 panel (resident, else decoded per product); for an expert weight
 * the grouped launch (decoding tiles, or f16 rows: resident panels and F16 files) when a grouped
 * row serves the weight as it is read and the knob allows, else the experts token by token.
 * A dense quantized weight with a fused row takes the fused dequant-in-tile GEMM for a batch of
 * fused_min..fused_max tokens (a batched decode step), before the few-token forms when fused_min
 * reaches into their range. */
typedef enum {
    CLL_CU_FORM_GEMV,
    CLL_CU_FORM_GEMV_FEW,
    CLL_CU_FORM_GEMV_FEW_MMA,
    CLL_CU_FORM_GEMM_DIRECT,
    CLL_CU_FORM_GEMM_PANEL,
    CLL_CU_FORM_GEMM_RESIDENT,
    CLL_CU_FORM_MOE_TOKENS,
    CLL_CU_FORM_MOE_GROUPED,
    CLL_CU_FORM_MOE_GROUPED_F16,
    CLL_CU_FORM_GEMM_FUSED,
} cll_cu_form;
typedef struct {
    uint32_t wtype;        /* the weight's type in the file */
    int64_t rows, cols, n_mat; /* n_mat > 1: an expert weight */
    int64_t n_tokens;
    bool resident;         /* the model keeps this weight's f16 panel */
    bool grouped_row;      /* a grouped (moe) row serves the weight as it is read (its panel if resident) */
    bool grouped_off;      /* CLLAMA_CUDA_MOE_GROUPED=0 */
    int32_t few_tokens;    /* the most tokens the weight's few-token gemv rows serve (0: none; 8 for
                            * the dp4a rows, gemv_few.cu, and the int8 mma rows, gemv_mma.cu) */
    int32_t few_max;       /* the knob CLLAMA_CUDA_FEW_MAX: most tokens a few-token form takes (0: no cap) */
    int32_t mma_min;       /* the int8 tensor-core few-token row serves this weight from this many tokens
                            * on (cll_cu_mma_min_tokens; 0: it does not) */
    int32_t mma_max;       /* ... up to this many (CLL_CU_MMA_MAX; 0: mma_min's few-token range only) */
    bool fused;            /* a fused dequant-in-tile GEMM row serves this dense weight (gemm_fused.cu) */
    int32_t fused_min, fused_max; /* ... for batches of this many tokens (CLLAMA_CUDA_FUSED_MIN / _MAX;
                            * fused_max 0: never) */
    int32_t device;        /* CLL_KDEVICE_CUDA_SM(major, minor), or 0 = not known */
} cll_cu_form_query;
/* the token range the driver gives the fused rows by default (the low end per type:
 * cll_cu_fused_min_tokens): a batched decode step of 9..32
 * sequences (below, the few-token gemvs; above, the prefill GEMMs on the f16 panels). H200, l2-7b,
 * speed_tg fused / panels (same call, seventh session): Q4_0 12 2751 / 2068, 16 3366 / 2695, 24 3902 /
 * 3688, 32 4640 / 4620, 64 6086 / 7699; Q4_K_M 12 2436 / 1990, 16 2997 / 2585, 24 3605 / 3550, 32 4312 /
 * 4459. Tenth session (4a952ce, same call, -npp 128 -ntg 128): 32 sequences fused / panels Q4_0 4888 /
 * 4572, Q4_K_M 4528 / 4342 (the fused kernel's cheaper staging since, and the output head's 32 rows
 * fused instead of a panel decoded per product), hence 32 */
#define CLL_CU_FUSED_MIN 9
#define CLL_CU_FUSED_MAX 32
/* the fewest tokens the driver gives a type's fused row by default (CLLAMA_CUDA_FUSED_MIN overrides
 * it for every type): Q4_K and Q6_K from 4 (ahead of their few-token rows), the others
 * CLL_CU_FUSED_MIN */
int32_t cll_cu_fused_min_tokens(uint32_t wtype);
cll_cu_form cll_cu_pick_form(const cll_cu_form_query *q);
/* q heads per block of the split GQA attention kernel (cuda/ops/attn.cu: 1, 2, 4 or 8, one kv
 * head's group): the largest power of two <= min(group, 8), halved while the grid (n_kv x
 * ceil(group / HG) x n_chunks x n_rows) would hold fewer than min_blocks blocks. A block runs its
 * heads one after another, so a small grid (decode over a short context: one chunk) wants them
 * spread; a group's K/V rows are then read once per block (from L2). */
#define CLL_CU_ATTN_MIN_BLOCKS 64 /* the kernel's floor: grids below it split a group's q heads */
int cll_cu_attn_heads_per_block(int32_t n_head, int32_t n_kv, int32_t n_chunks, int64_t n_rows, int32_t min_blocks);
/* warps per block of that kernel (4, 8 or 16) for a grid of `blocks` blocks of hg q heads of head
 * dim hd on n_sm SMs: want (4, 8, 16; the CLLAMA_CUDA_ATTN_WARPS knob) when it fits, else the
 * choice below. A block's phases run its keys W warps wide, and a grid smaller than the SMs leaves
 * each block an SM of its own, so a small grid takes wide blocks (the chain of dependent
 * instructions per warp, not the K/V loads, bounds a decode step's attention over a short context).
 * Wider than 4 only with an F16 cache and W * hg * hd <= 8192 (the block's 32 KB reduction buffer). */
int cll_cu_attn_warps(int32_t want, int64_t blocks, int32_t n_sm, int32_t hd, int32_t hg, bool f16);
/* key chunks a token's attention may use (<= n_chunks, the grid's): with per_sm > 0 about per_sm
 * blocks per SM over the grid's blocks_per_chunk blocks of one chunk (kv heads x q-head subgroups
 * x rows), at least one; per_sm <= 0: n_chunks (every chunk of >= min_chunk keys gets a block).
 * Over a long context the grid sized for n_ctx makes thousands of one-sub-chunk blocks, each a
 * short chain of dependent load rounds; fewer, longer chunks keep their next keys streaming
 * (CLLAMA_CUDA_ATTN_PER_SM; the kernel caps its chunks at this count, so a replayed graph grows
 * its chunks with the context, and the grid launches only that many: cll_cu_attn_live_chunks). */
int32_t cll_cu_attn_active_chunks(int32_t n_chunks, int64_t blocks_per_chunk, int32_t n_sm, int32_t per_sm);
/* Chunk c's keys [*c0, *c1) of a decode window [lo, hi) split over at most nch live chunks; returns nc, the
 * chunks that hold keys (chunks c >= nc get the empty span [hi, hi)). gran <= 1 (the split kernel): chunks
 * of eff = max(min_chunk, cdiv(len, nch)) keys, the last one shorter. gran > 1 (the streaming kernels, gran
 * = their tile): boundaries on multiples of gran keys from lo and the window's cdiv(len, gran) tiles dealt
 * as evenly as they go (the first T % nc chunks one tile more), at least cdiv(min_chunk, gran) tiles a
 * chunk; only the window's last tile is partial. With key spans (gran 1) every chunk of a deep window
 * ended in a partial tile: the TMA pipeline copies a tile's whole box, so at 8193 keys over 8 chunks it
 * read 135 tiles of K/V for 129 (136 at 8320 keys for 130; 23 for 17 at 1025 keys). A pure function:
 * the kernels call it and the tests hold it without a GPU. */
#ifdef __CUDACC__
#define CLL_CU_PURE_HD __host__ __device__
#else
#define CLL_CU_PURE_HD
#endif
/* The chunks a decode attention launch spreads a window over at most (its kernels' nch) and so the chunks
 * its grid launches (y): act_chunks where it caps n_chunks, else n_chunks. A block past them never holds a
 * key; the grid was n_chunks until the forty-third session (tg128 @ d8192's 97-chunk context launched ~2800
 * idle blocks a layer for 256 live ones: 1.8% of that step on an H100). */
static inline CLL_CU_PURE_HD int32_t cll_cu_attn_live_chunks(int32_t act_chunks, int32_t n_chunks) {
    return act_chunks > 0 && act_chunks < n_chunks ? act_chunks : n_chunks;
}
static inline CLL_CU_PURE_HD int32_t cll_cu_attn_chunk_span(int32_t lo, int32_t hi, int32_t nch, int32_t min_chunk,
                                                            int32_t gran, int32_t c, int32_t *c0, int32_t *c1) {
    const int32_t len = hi - lo;
    if (nch < 1) nch = 1;
    if (len <= 0) {
        *c0 = *c1 = hi;
        return 0;
    }
    int32_t nc;
    if (gran <= 1) {
        const int32_t per = (len + nch - 1) / nch, eff = min_chunk > per ? min_chunk : per;
        nc = (len + eff - 1) / eff;
        const int64_t s = (int64_t)lo + (int64_t)c * eff, e = s + eff;
        *c0 = c < nc ? (int32_t)s : hi;
        *c1 = c < nc ? (int32_t)(e < hi ? e : hi) : hi;
        return nc;
    }
    const int32_t tiles = (len + gran - 1) / gran;
    const int32_t mt = min_chunk > gran ? (min_chunk + gran - 1) / gran : 1;
    nc = (tiles + mt - 1) / mt;
    if (nc > nch) nc = nch;
    if (c >= nc) {
        *c0 = *c1 = hi;
        return nc;
    }
    const int32_t q = tiles / nc, r = tiles % nc;
    const int32_t t0 = c * q + (c < r ? c : r), t1 = t0 + q + (c < r ? 1 : 0);
    const int64_t e = (int64_t)lo + (int64_t)t1 * gran;
    *c0 = lo + t0 * gran;
    *c1 = e < hi ? (int32_t)e : hi;
    return nc;
}
/* the fewest keys a chunk of the split GQA kernel holds: want (> 0: the CLLAMA_CUDA_ATTN_MIN_CHUNK
 * knob or a caller's) wins; else CLL_CU_ATTN_MIN_CHUNK, or CLL_CU_ATTN_MIN_CHUNK_WIDE when the grid's
 * blocks of one chunk (kv-head groups x rows: `pairs`) already fill the SMs twice over (a batched
 * step of many sequences): splitting a short context there only adds partials and a merge. H200,
 * l2-7b speed_tg (-npp 128 -ntg 128, same call) 128 / 256: Q4_0 16 sequences 3835 / 4010, 32 5032 /
 * 5084, 4 1487 / 1471; Q4_K_M 16 3372 / 3508, 32 4622 / 4630, 4 1264 / 1232 */
#define CLL_CU_ATTN_MIN_CHUNK 128
#define CLL_CU_ATTN_MIN_CHUNK_WIDE 256
int32_t cll_cu_attn_min_chunk(int32_t want, int64_t pairs, int32_t n_sm);
/* keys in flight per warp in each phase of the split GQA kernel (4 or 8: the same sums in the same
 * order, only the load rounds per sub-chunk change): want 8 (the knob cuda.attn_loads8) gives 8 for
 * blocks of hg <= 2 q heads (more heads' q plus 8 keys of K would not fit the registers), else 4 */
int cll_cu_attn_loads(int32_t want, int32_t hg);
/* the one-head 4-warp split block capped at 64 registers (8 resident an SM) instead of its 80 (6 an
 * SM): want 0 / 1 (CLLAMA_CUDA_ATTN_MINB8) wins; else capped when the launch's live blocks do not
 * fit one wave of the uncapped block (more than CLL_CU_ATTN_UNCAPPED_PER_SM x n_sm; n_sm < 1: never).
 * H200, l2-7b speed_tg (-npp 128 -ntg 128, same call) capped / uncapped: Q4_0 32 sequences (1024
 * blocks) 5275 / 4964, 64 8197 / 7883; Q4_K_M 32 4856 / 4550; 16 sequences (512 blocks, one wave
 * either way) Q4_0 3803 / 3860, Q4_K_M 3439 / 3426 */
#define CLL_CU_ATTN_UNCAPPED_PER_SM 6
bool cll_cu_attn_capped(int want, int64_t blocks, int32_t n_sm);
/* keys of its first sub-chunk (of full, FA_CS) whose K and V rows a split attention block asks L2 for
 * before its PDL wait: all of them, except in a grid of more than CLL_CU_ATTN_UNCAPPED_PER_SM x n_sm
 * (kv head, row) pairs (a batched step of many sequences: 1000+ blocks asking 64 KB each overfill the
 * L2 before they read it), where CLL_CU_ATTN_KV_PF_WIDE. H200, l2-7b speed_tg (-npp 128 -ntg 128, same
 * call) full / none / 64 keys: Q4_0 32 sequences 5265, 5243 / 5311, 5273 / 5318; 64: 7971, 7920 / 8096,
 * 8048 / 8033; Q4_K_M 32 4857, 4851 / 4906, 4887 / 4924; 64 7925, 7888 / 8120, 8028 / 8106 */
#define CLL_CU_ATTN_KV_PF_WIDE 64
int32_t cll_cu_attn_kv_pf_keys(int64_t pairs, int32_t n_sm, int32_t full);
/* The decode attention's form (cuda/ops/attn.cu): the split kernel (thousands of short blocks over
 * a long context, each prefetching its one sub-chunk) or the streaming one (a few blocks an SM, each
 * walking a long chunk through a cp.async pipeline in shared memory), with a CUDA-core or (head dims
 * <= 128) a tensor-core tile body. want: a caller's or the CLLAMA_CUDA_ATTN_STREAM knob's choice
 * (CLL_CU_ATTN_SPLIT / _STREAM / _STREAM_TC, the last downgraded to _STREAM above head dim 128)
 * wins; CLL_CU_ATTN_AUTO takes the
 * streaming kernel (tensor-core body where CLL_CU_ATTN_TC_AUTO and hd <= 128) for one row (a single
 * stream's decode step) over an F16 cache of at least
 * CLL_CU_ATTN_STREAM_MIN_CTX cells a sequence (a graph is captured per n_ctx, so the choice holds for
 * every position of the context). Steps of several rows (a server's batches) keep the split kernel:
 * the streaming one was measured on one row only. F32 caches: split. */
#define CLL_CU_ATTN_AUTO 0
#define CLL_CU_ATTN_SPLIT 1
#define CLL_CU_ATTN_STREAM 2    /* the streaming kernel, a CUDA-core tile body (cll_cu_attn_stream_wi) */
#define CLL_CU_ATTN_STREAM_TC 3 /* the streaming kernel, the tensor-core tile body (head dims <= 128) */
/* the tensor-core body fed by the TMA engine: one thread asks for a tile's K and V rows as 2-D boxes of
 * a tensor map (64 keys x 64 dims, 128-byte swizzled) whose arrival an mbarrier counts, instead of
 * every thread issuing 16-byte cp.async copies. Where it cannot serve (cll_cu_attn_tma_serves) it
 * runs STREAM_TC. */
#define CLL_CU_ATTN_STREAM_TMA 4
/* STREAM_TMA without a block barrier a tile: every stage is refilled by the last warp to finish
 * reading it (a ticket counter a stage in shared memory), so NS tiles are in flight while the warps
 * score the oldest, and a slow warp holds back no other (the copy probe's order: ~4.1 TB/s over the
 * MHA cache, where the barrier's order read ~3.2; docs/cuda.md "How fast the cache can be read").
 * Same arithmetic, same sums as STREAM_TC, bit for bit. Where the TMA form cannot serve it runs
 * STREAM_TC as STREAM_TMA does. */
#define CLL_CU_ATTN_STREAM_TMA_TK 5
/* whether a form is one of the TMA pipelines (STREAM_TMA, STREAM_TMA_TK) */
static inline bool cll_cu_attn_form_tma(int form) {
    return form == CLL_CU_ATTN_STREAM_TMA || form == CLL_CU_ATTN_STREAM_TMA_TK;
}
/* whether a form runs the streaming kernel (any body or pipeline), not the split one */
static inline bool cll_cu_attn_form_stream(int form) {
    return form == CLL_CU_ATTN_STREAM || form == CLL_CU_ATTN_STREAM_TC || cll_cu_attn_form_tma(form);
}
#define CLL_CU_ATTN_STREAM_MIN_CTX 4096
/* hd: the head dim (STREAM_TC serves <= 128; a larger one gets STREAM); group: q heads a kv head. AUTO's streaming choice takes
 * the tensor-core body where CLL_CU_ATTN_TC_AUTO: H200 `cuda_kbench -A stream|tc` at 8192 keys, us a
 * layer, l2-7b (MHA) 48.5 / 48.2, l3-8b (GQA 4) 26.9 / 24.5, q3moe (GQA 8) 38.6 / 22.6; tg128 @ d8192
 * l2-7b Q4_K_M 299.1-299.8 / 301.8, Q4_0 322.6 / 322.3 (eighteenth session, same call) */
int cll_cu_attn_form(int want, bool f16, int32_t n_ctx, int64_t n_rows, int hd, int group);
#define CLL_CU_ATTN_TC_AUTO 1
/* AUTO's streaming choice for an MHA cache (group = n_head / n_kv = 1) takes STREAM_TMA_TK where this is
 * 1; GQA groups keep STREAM_TC. First run (thirty-second session, one call on an H100, 197 attention gates
 * passed, golden with 3 and 4 forced): `cuda_kbench -A` at 8192 keys, us a layer, tc / tma / tma_tk: l2-7b
 * (MHA) 58.7 / 58.8 / 52.8, l3-8b (GQA 4) 20.1 / 20.0 / 20.8, q3moe (GQA 8) 20.9 / 20.6 / 20.6; tg128 @
 * d8192 (2 | 4 | 3 | 4 | 2): l2-7b Q4_K_M 264.2 | 274.6 | 264.6 | 273.3 | 264.8, Q4_0 277.1 | 289.1 (2 | 4),
 * l3-8b Q4_K_M 368.0 | 365.2 | 368.8 | 365.3 | 368.6 tok/s. The barrier form (STREAM_TMA) tied STREAM_TC
 * everywhere and stays a knob. */
#define CLL_CU_ATTN_TMA_AUTO 1
/* STREAM_TMA's pipeline serves a launch whose cache is unpaged (the tile's 64 keys are 64 consecutive
 * rows of the map) with its tensor maps made (cll_cu_attn_tmaps; a driver without the entry point
 * has none) and a head dim of 64 or 128 (a 64-dim box is 128 bytes, the swizzle's span) */
bool cll_cu_attn_tma_serves(bool paged, bool has_maps, int hd);
/* The tensor-core streaming body's pipeline depth: 0 its default geometry (3 stages of 64-key K/V
 * tiles, 96 KB, two blocks an SM, registers capped at 128), or CLL_CU_ATTN_NS_DEEP stages (160 KB, one
 * block an SM, registers uncapped: no spills) for a GQA group (n_head / n_kv > 1) of head dim 128. want
 * 0 or CLL_CU_ATTN_NS_DEEP (CLLAMA_CUDA_ATTN_NS) forces either where the head dim is 128. H200
 * `cuda_kbench -A tc` (same call, us a layer at 8192 / 1024 keys) default vs 5 stages: l2-7b (MHA) 48.1
 * / 13.0 vs 50.8 / 13.4; l3-8b (GQA 4) 24.5 / 11.8 vs 19.1 / 10.2; q3moe (GQA 8) 22.7 / 11.5 vs 20.3 /
 * 10.0 (6 stages: 51.7, 19.8, 20.2 at 8192); tg128 @ d8192 l2-7b Q4_0 321.7, 320.7 vs 322.2, Q4_K_M
 * 302.1, 301.9 vs 299.4 (6: 318.5, 317.0; 296.5, 295.4) */
#define CLL_CU_ATTN_NS_DEEP 5
/* the deep kernel's shared memory: its stages (2 x 64 rows x 256 B each) and at most 8 KB of static
 * arrays; a device whose opt-in limit a block (smem_optin) is smaller gets 0 whatever want says (an
 * A100's 163 KB: its launch would fail) */
#define CLL_CU_ATTN_NS_DEEP_SMEM (CLL_CU_ATTN_NS_DEEP * 2 * 64 * 256 + 8 * 1024)
int cll_cu_attn_stream_ns(int want, int hd, int group, int smem_optin);
/* The streaming decode attention's tile body (cuda/ops/attn.cu attn_stream_kernel): warp-independent
 * (each warp scores, weighs and sums its own keys of a tile on its own running max and sum; the warps
 * meet once at the end) for one q head a block, block-phased (scores, a warp per head's softmax, then
 * the sums, three barriers a tile) for more. H200 (sixteenth session, same call): l2-7b (one head a
 * block) tg128 @ d8192 Q4_0 1201-1204 vs 1166-1173 GB/s, Q4_K_M 1196 vs 1159-1166; `cuda_kbench -A
 * stream` at 8192 keys l3-8b (4 heads) 29.6 vs 27.2 us a layer, q3moe (8) 46.5 vs 39.0. want 0 / 1
 * (CLLAMA_CUDA_ATTN_STREAM_WI) forces either; else by hg. */
bool cll_cu_attn_stream_wi(int want, int hg);
/* The tensor-core streaming body's pipeline (cuda/ops/attn.cu attn_stream_kernel<.., PW>): per warp (each
 * warp copies only its own 8 K/V rows of a tile, NS tiles of them in flight while it waits for the oldest,
 * no block barrier in the loop) where CLL_CU_ATTN_PW_AUTO, else the block's (the whole tile behind a block
 * barrier, NS - 1 tiles in flight during a wait). want 0 / 1 (CLLAMA_CUDA_ATTN_PW) forces either. Off:
 * the per-warp pipeline, gated on an H100, tied the block's (l2-7b Q4_K_M tg128 @ d8192 261.3 / 261.4
 * vs 260.2 / 261.5, ABBA; docs/cuda.md, "The H100 board") */
#define CLL_CU_ATTN_PW_AUTO 0
bool cll_cu_attn_stream_pw(int want);
/* Whether a one-token quantized gate|up pair of weight type `type` writes its activation and q8_1 blocks
 * itself (cll_cu_gemv_args.act_out.yq, polled slots; cuda/matmul/gemv_split.cu SpAct) instead of the act kernel
 * after it. want 0 / 1 (CLLAMA_CUDA_GU_ACTQ) forces either; else every type but Q8_0. H100, ABBA in one call
 * (tg128, default vs the act kernel; docs/cuda.md, "The quantized gate|up pair's activation by polled slots"):
 * l2-7b Q4_K_M 505.6 / 507.6 vs 500.7 / 500.7, l3-8b Q6_K 390.5 / 389.6 vs 382.5 / 384.4, IQ4_XS 521.6 / 522.1
 * vs 519.8 / 518.6, Q4_0 543.1 / 542.7 vs 541.9 / 540.0; Q8_0 lost (364.5 / 364.9 vs 367.3 / 366.2) */
bool cll_cu_gu_actq(int want, uint32_t type);
/* The float gemv's PRE form (cuda/matmul/gemv_float.cu): a row of nvec 16-byte vectors all in flight
 * before the PDL wait, when they fit the lane's hold (nvec <= 32 * hold) and the grid is at most
 * one block per SM (blocks <= n_sm: the MoE router, 128 rows x 2048 f32 = 32 blocks), where the
 * product is a chain of load rounds rather than a stream. mode (CLLAMA_CUDA_GEMV_F_PRE): 0 never, 2
 * whenever the row fits the hold whatever the grid (an A/B for the 4096-column products of an F16
 * 7B: the quantized rows gained from the whole row in flight before the wait), else (1) the rule above. */
bool cll_cu_gemv_f_pre(int64_t nvec, int64_t blocks, int32_t n_sm, int32_t hold, int mode);
/* The staging-free split gemv rows' own launch choices (cuda/matmul/gemv_split.cu), pure:
 * cll_cu_sp_pre: whether a w4r2pre (pre 1) or w4r2pre1w (pre 2) launch runs its ONE kernel (a row of
 * ng <= 32 u groups whole in flight before the PDL wait) rather than its fallback: not for expert
 * products (their loads wait for the router), and for pre 2 only when the grid (ceil(rows / 8) x nb
 * blocks) is one wave of minb blocks an SM. H200: l2-7b's o (4096 x 4096, 512 blocks) is one wave at 5
 * and at 4 blocks an SM, its q|k|v (1536 blocks) is not.
 * cll_cu_sp_ks: whether a w4r2ks4 launch splits its rows over ks warps (k_gemv_spk): rows of more than
 * 128 groups and at most ks x u chunks of 32 (a 7B / 8B down: 344 / 448 groups), not expert products (or
 * a staged activation input). */
bool cll_cu_sp_pre(int pre, int64_t ng, int64_t rows, int64_t nb, int u, int minb, int32_t n_sm, bool experts);
bool cll_cu_sp_ks(int64_t ng, int ks, int u, bool experts);
const char *cll_cu_form_name(cll_cu_form f);
/* Key splits of the tensor-core prefill attention (cuda/ops/attn_prefill.cu) for n query rows over
 * about `keys` cache cells: its grid is ceil(n/64) x n_head blocks, each walking every key tile of
 * its rows; a chunk of a long prompt deep in its cache (a server's 128-token chunks at 4k) gives
 * 64 blocks of 64 tiles each on 132 SMs. Splits the keys so the grid reaches about 3 blocks an SM,
 * each split at least 4 tiles of 64 keys, within part_cap (row, head, split) partials; 1: no split. */
int32_t cll_cu_attn_prefill_splits(int64_t n, int32_t n_head, int64_t keys, int64_t part_cap, int32_t n_sm);
/* The token count a cuBLAS product (the GEMM forms on f16 panels or float weights) of n tokens runs at:
 * n rounded up to a multiple of pad, at most cap (the rows its input and output buffers hold), never
 * below n. cuBLAS pays at the first call of each new shape: a server's prompt steps of a size not met
 * before (100, 135, 142, 151 tokens beside the warmed 96, 112, 128, ..) took 17-25 ms instead of 6-11,
 * with every module loaded up front as well (CUDA_MODULE_LOADING=EAGER: 15.6-28.7 ms), so it is not the
 * kernels' lazy loading; padded to 16, no step of the same load passed 12 ms (H200, l2-7b Q4_K_M, 64
 * streams + a 4k prompt, sixteenth session). The padded columns cost little at these widths (the
 * product reads its f16 panel once whatever n is) and compute values nobody reads: column j of the
 * product depends on column j of X only. pad <= 1: n. */
int64_t cll_cu_gemm_tokens(int64_t n, int64_t cap, int32_t pad);
#define CLL_CU_GEMM_PAD 16
/* The few-token gemv (a batched decode step: 2..few_max tokens of a dense weight, every weight
 * byte read once for all of them; cuda/matmul/gemv_few.cu): its geometry and the pure choices
 * its launcher makes. Records of the staged q8_1 activations are CLL_CU_FEW_XW words; one launch
 * stages at most CLL_CU_FEW_SMEM_MAX bytes of them. */
#define CLL_CU_FEW_MAX 8 /* the few-token rows: 2..8 tokens */
#define CLL_CU_GRAPH_MAX_TOKENS 64 /* batched decode steps up to this many tokens replay graphs */
#define CLL_CU_FEW_WARPS 8
#define CLL_CU_FEW_XW 12
#define CLL_CU_FEW_SMEM_MAX (100 * 1024)
/* from how many tokens the int8 tensor-core few-token row (gemv_mma.cu) beats the dp4a row
 * (gemv_few.cu) on a weight of this type: the crossover of cuda_kbench on the H200; 0: never */
int32_t cll_cu_mma_min_tokens(uint32_t wtype);
/* tokens per launch for rows of ng 32-value groups and nb tokens: the most that fit (at most 8),
 * balanced over the launches nb needs (8 where 5 fit -> 4 + 4); 0 when not even 2 fit */
int cll_cu_few_tokens_per_launch(int64_t ng, int nb);
/* split-K (log2, ks in 1/2/4 warps per row group) for rows x ng at R rows per warp on a persistent
 * grid of slots blocks: the ks whose tile count leaves the least idle tail (ties: smaller ks),
 * every K slice >= 2 groups per lane */
int cll_cu_few_pick_ks_log2(int64_t rows, int64_t ng, int R, int64_t slots);
/* the int8 tensor-core tile (9..64 tokens of one dense product, gemv_mma.cu): the split-K factor for
 * a launch of tiles row tiles (128 rows each) over nchunks chunks of 256 values, on a machine of
 * slots resident blocks, nt tokens of rows outputs each: 1 when the tiles fill at least 3/4 of the
 * slots or no scratch is given; else the most splits that still fit the slots (slots / tiles), each
 * split >= 3 chunks (the pipeline's depth), the partials (ks x nt x rows floats) within ws_floats
 * and a ticket per tile within n_tickets */
int cll_cu_mma_tile_ks(int64_t tiles, int64_t nchunks, int64_t slots, int nt, int64_t rows, int64_t ws_floats,
                       int n_tickets);
/* the fused dequant-in-tile GEMM (gemm_fused.cu): the split-K factor for tiles row tiles over nchunks
 * chunks of 256 values on slots resident blocks (nt tokens of rows outputs): the ks (1..16, each split
 * >= 2 chunks) whose tiles x ks blocks fill their last wave best, counted as the share of slot time
 * that does work (tiles / (waves x slots / ks)); a split must gain more than 2% of that share over
 * fewer splits (its partials and the last block's sum cost a little); partials (ks x nt x rows floats)
 * within ws_floats and a ticket per tile within n_tickets, else 1 */
int cll_cu_fused_ks(int64_t tiles, int64_t nchunks, int64_t slots, int nt, int64_t rows, int64_t ws_floats,
                    int n_tickets);
/* the split-K scratch a state gives the tile (cll_cu_splitk): partials of < 2 x sms row tiles of 128
 * rows x 64 tokens, and a ticket per row tile */
#define CLL_CU_SPLITK_FLOATS(sms) ((int64_t)2 * (sms) * 128 * 64)
#define CLL_CU_SPLITK_TICKETS 1024
#define CLL_CU_MMA_MAX 64 /* the most tokens of one product the int8 tensor-core rows serve per call */
/* ... and the most the driver gives them by default (CLLAMA_CUDA_MMA_MAX): the K-split kernel's 8. The
 * tile of 9..64 tokens is a row the tuner can race, not the default: on the H200 (l2-7b, 16/32/64
 * sequences, speed_tg) it ran Q4_0 2727/3660/4494 tok/s against the f16 panels' 2644/4455/7307, and
 * Q4_K_M 2044/2694/3251 against 2512/4318/7212 (cuda_kbench: 23/16/10% of 4.3 TB/s for q4_0 at
 * 16/32/64 tokens; it scales with the token count, so per-tile work, not the weight stream, bounds it) */
#define CLL_CU_MMA_DEFAULT_MAX 8
/* the weights of a product of nt tensors whose outputs are concatenated in order (q, k, v; gate, up):
 * starts[i] = the first tensor of weight i, the weights' count returned (1..nt). All of one type and
 * width: one weight. Otherwise, with runs, each run of consecutive tensors of one type and width is
 * one weight (a Q4_K_M layer's q|k beside its Q6_K v: two launches a product instead of three); without
 * runs, one weight a tensor. */
int cll_cu_product_parts(const uint32_t *types, const int64_t *cols, int nt, bool runs, int *starts);
/* the resident-panel policy: mode 0 off, 1 auto (half of free_after), 2 on (free_after less
 * 1 GiB), 3 a cap in bytes (CLLAMA_CUDA_PANELS=SIZE: at most cap, within what on allows): the
 * bytes of f16 panels the model may keep */
size_t cll_cu_panels_budget(size_t free_after, int mode, size_t cap);
/* which weights keep a panel within budget when not all fit: in the given order (the layers'),
 * each whose bytes still fit what is left (keep[i]); returns the bytes kept. Residency is per
 * weight (a kept panel serves its weight's prefill products, the others decode theirs per product),
 * so the budget is used, not forfeited: a quarter of an H100's free memory (auto's former share) held
 * 17 of q3moe-L24's 28 GiB of panels, and its streamed experts ran 2.1x slower than resident ones */
size_t cll_cu_panels_keep(const size_t *bytes, int n, size_t budget, bool *keep);

#ifdef __cplusplus
}
#endif

#endif
