/* cuda/matmul/matmul_internal: how the format families (gemv_*.cu) export their kernels to the
 * format-blind entry points (rows.cu: table, get_rows, upload; gemm.cu).
 * Owns nothing. Rule: one cll_cu_fmt_ops per served type; a type without one is not served. */
#ifndef CLL_CUDA_MATMUL_INTERNAL_CUH
#define CLL_CUDA_MATMUL_INTERNAL_CUH

#include "cuda/common.cuh" /* the CLL_TYPE_ codes (formats.h, extern "C") */
#include "cuda/matmul/matmul.cuh"

typedef cudaError_t (*cll_cu_get_rows_fn)(const cll_cu_weight *w, const int32_t *ids, int64_t n, float *out,
                                          int64_t ld_out, float scale, cudaStream_t s);
/* rows [r0, r0+nr) of matrix mat -> f16 (bf16 when bf16) panel, nr x cols, dense */
typedef cudaError_t (*cll_cu_panel_fn)(const cll_cu_weight *w, int64_t mat, int64_t r0, int64_t nr, void *panel,
                                       bool bf16, cudaStream_t s);

typedef struct {
    uint32_t type;
    cll_cu_gemv_fn gemv;         /* reads q8_1 (block types) or f32 x (F32/F16/BF16) */
    cll_cu_get_rows_fn get_rows;
    cll_cu_panel_fn panel;       /* NULL: the gemm reads the weight as is (F16, BF16, F32) */
    int bb, qk;                  /* bytes and elements per block */
    int stage_blocks;            /* gemv stage (0: no smem stage) */
    const char *gemv_name;
    cll_cu_moe_fn moe;           /* grouped MoE product (cuda/matmul/moe_gemm.cuh); NULL: none */
} cll_cu_fmt_ops;

/* the layout-1 ("split", cuda/matmul/split.cuh) rows of a type: gemv, get_rows and panel over
 * the split layout, and the host repack of n file rows (src_stride apart) into split rows
 * (dst_stride apart) */
typedef void (*cll_cu_pack_fn)(const uint8_t *src, uint8_t *dst, int64_t n, int64_t cols, size_t src_stride,
                               size_t dst_stride);
typedef struct {
    uint32_t type;
    cll_cu_gemv_fn gemv;         /* k_gemv_sp: one row per warp, activation from global */
    cll_cu_gemv_fn gemv_r2;      /* k_gemv_spx<R=2, U=2>: smem activation, split-K by shape */
    cll_cu_gemv_fn gemv_r4;      /* k_gemv_spx<R=4, U=1> */
    cll_cu_gemv_fn gemv_r4p;     /* the same, persistent grid (one wave, tiles looped) */
    /* bit-exact variants (NULL where a type has none; gemv_split.cu's SP_OPS): */
    cll_cu_gemv_fn gemv_u2;      /* k_gemv_sp, 2 groups a lane in flight (as gemv) */
    cll_cu_gemv_fn gemv_u2b8;    /* ... at >= 8 blocks an SM (<= 64 registers) */
    cll_cu_gemv_fn gemv_u1b8;    /* 1 group a lane, >= 8 blocks */
    cll_cu_gemv_fn gemv_u4b6;    /* 4 groups a lane, >= 6 blocks (<= 80 registers) */
    cll_cu_gemv_fn gemv_r4b6p;   /* k_gemv_spx<R=4, U=1>, persistent, >= 6 blocks (as gemv_r4) */
    cll_cu_gemv_fn gemv_r2u1p;   /* k_gemv_spx<R=2, U=1>, persistent, >= 7 blocks, split-K as the
                                    type's default (r4: as gemv_r4; Q6_K: as gemv_r2) */
    cll_cu_gemv_fn gemv_r2g;     /* k_gemv_sp<R=2, U=2>: 2 rows a warp, activation from global (as gemv) */
    cll_cu_gemv_fn gemv_r2u1g;   /* k_gemv_sp<R=2, U=1>, >= 7 blocks an SM (as gemv) */
    cll_cu_gemv_fn gemv_r2pre;   /* k_gemv_sp<R=2, U=4, ONE>: a row of <= 4096 columns whole in flight
                                    before the PDL wait; longer rows as gemv_r2g (as gemv) */
    cll_cu_gemv_fn gemv_r2pre1w; /* the same only where the grid is one wave, else the type's
                                    staging-free default (as gemv) */
    cll_cu_gemv_fn gemv_r2ks4;   /* k_gemv_spk: rows of > 4096 columns split over 4 warps, all loads
                                    before the PDL wait; other rows as the type's default (its own
                                    numerics: not bit-exact with gemv) */
    cll_cu_get_rows_fn get_rows;
    cll_cu_panel_fn panel;
    cll_cu_pack_fn pack;
    int qk;
    const char *gemv_name;
    cll_cu_moe_fn moe;           /* grouped MoE product over the split layout */
    size_t (*row_bytes)(int64_t cols); /* a row's device bytes in this layout (before the 16-byte
                                          rounding): the file's, or more (IQ3_S's nibble form) */
} cll_cu_sp_ops;
const cll_cu_sp_ops *cll_cu_sp_ops_get(uint32_t type);
/* each split type's one-token form for the rows w4r2ks4 does not split (rows.cu's form codes: 0 w4u4,
 * 12 w4r2u2, 13 w4r2u1b7, 14 w4r2pre, 15 w4r2pre1w): the default of the types below that keep it, and
 * w4r2ks4's fallback on the short rows (gemv_split.cu). IQ4_XS moved from 12 to 15 in the thirty-fifth
 * session (its 4096-row o product whole in flight before the wait: cuda_kbench 5.78 -> 4.98 us on an H100;
 * l2-7b IQ4_XS tg128 513.98 / 514.28 -> 519.30 / 519.69, ABBA in one call; the same sums, family 0) */
static constexpr int cll_cu_sp_base(uint32_t t) {
    return t == CLL_TYPE_Q4_0 || t == CLL_TYPE_Q5_1 || t == CLL_TYPE_Q3_K || t == CLL_TYPE_Q4_1 ||
                   t == CLL_TYPE_Q5_0 || t == CLL_TYPE_IQ4_NL || t == CLL_TYPE_Q2_K
               ? 12
           : t == CLL_TYPE_Q4_K || t == CLL_TYPE_IQ3_S || t == CLL_TYPE_Q5_K ? 14
           : t == CLL_TYPE_Q8_0 || t == CLL_TYPE_Q6_K || t == CLL_TYPE_IQ4_XS ? 15
                                                                           : 0;
}
/* each split type's default one-token form, named once: 16 (w4r2ks4: the long down rows split over a
 * block's 4 warps, every other row by cll_cu_sp_base) for Q4_K, Q5_K, Q6_K, IQ3_S, Q5_1 and IQ4_XS, which measured
 * faster with it in the step (docs/cuda.md), and since the thirty-second session for Q2_K, Q3_K, Q4_1, Q5_0 and
 * IQ4_NL (their split rows, written in the twenty-ninth, first gated there on an H100: every w4r2ks4 shape,
 * tails and expert calls included; l2-7b tg128 layout-0 row -> w4r2ks4, same call: Q2_K 324.7 -> 410.1,
 * Q3_K_M 342.8 -> 515.1, Q4_1 421.0 -> 520.6, Q5_0 326.9 -> 482.2, IQ4_NL 357.8 -> 525.4 tok/s); the base form
 * for the others; -1 would keep a split type's layout-0 row the default (its split rows serving only where
 * named: CLLAMA_KERNEL, a tune race). The registry's default and bit-exact flags (rows.cu) read it */
static constexpr int cll_cu_sp_default(uint32_t t) {
    return t == CLL_TYPE_Q4_K || t == CLL_TYPE_Q6_K || t == CLL_TYPE_IQ3_S || t == CLL_TYPE_Q5_1 || t == CLL_TYPE_IQ4_XS ||
                   t == CLL_TYPE_Q5_K || t == CLL_TYPE_Q3_K || t == CLL_TYPE_Q4_1 || t == CLL_TYPE_Q5_0 ||
                   t == CLL_TYPE_IQ4_NL || t == CLL_TYPE_Q2_K
               ? 16
               : cll_cu_sp_base(t);
}
/* the bulk-copy (TMA) split gemv of a type (gemv_tma.cu), NULL if none; nb > 1 or mat_ids calls
 * go on to the type's r4_pt row */
cll_cu_gemv_fn cll_cu_sp_tma_gemv(uint32_t type);
/* the few-token split gemv of a type (gemv_few.cu), NULL if none; nb 1, mat_ids or a fused tail
 * go on to the type's r4_pt row */
cll_cu_gemv_fn cll_cu_sp_few_gemv(uint32_t type);
/* the int8 tensor-core few-token gemv of a type (gemv_mma.cu: Q4_0, Q8_0, Q4_K, Q6_K), NULL if none;
 * what it does not serve goes on to the dp4a few row */
cll_cu_gemv_fn cll_cu_sp_mma_gemv(uint32_t type);
/* the fused f16 tensor-core GEMM of a split type (gemm_fused.cu); NULL for types it lacks */
cll_cu_fgemm_fn cll_cu_sp_fused_gemm(uint32_t type);
/* its geometry for a rows x cols product (rows per tile, stages, stage and shared bytes);
 * false when the shape does not fit its shared memory */
bool cll_cu_tma_geometry(int64_t rows, int64_t cols, size_t row_stride, int *rt, int *ns, uint32_t *stage_bytes,
                         size_t *smem);

/* per family: the ops of type, or NULL */
const cll_cu_fmt_ops *cll_cu_fmt_legacy(uint32_t type);
const cll_cu_fmt_ops *cll_cu_fmt_kquant(uint32_t type);
const cll_cu_fmt_ops *cll_cu_fmt_iq(uint32_t type);
const cll_cu_fmt_ops *cll_cu_fmt_float(uint32_t type);
/* any family */
const cll_cu_fmt_ops *cll_cu_fmt_ops_get(uint32_t type);

/* compares the device copies of the i-quant codebooks (and the inline kvalues/ksigns) with the
 * C tables: cudaSuccess and *same = true when bit-identical */
cudaError_t cll_cu_iq_tables_check(bool *same);

#endif
