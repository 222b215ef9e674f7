/* cuda/matmul/rows: the CUDA kernel table (backend "cuda": one gemv row and one gemm row per
 * served format), the format-blind entry points (get_rows, weight upload, the default gemv row)
 * and the dispatch from a type to its family's kernels.
 * Owns the table (static, its impl structs filled once on first use from the family files).
 * Rule: every row here is walked by the gate (tests/cuda_kernels_test.c) and kbench. */
#include <string.h>

#include <mutex>
#include <thread>
#include <vector>

#include "cuda/matmul/matmul_internal.cuh"
#include "cuda/common.cuh"

extern "C" {
#include "cuda/cuda.h"
#include "kernels/registry.h"
}

const cll_cu_fmt_ops *cll_cu_fmt_ops_get(uint32_t type) {
    const cll_cu_fmt_ops *o = cll_cu_fmt_float(type);
    if (!o) o = cll_cu_fmt_legacy(type);
    if (!o) o = cll_cu_fmt_kquant(type);
    if (!o) o = cll_cu_fmt_iq(type);
    return o;
}

bool cll_cu_type_served(uint32_t type) { return cll_cu_fmt_ops_get(type) != NULL; }

size_t cll_cu_row_stride(uint32_t type, int layout, int64_t cols) {
    if (!cll_cu_type_served(type) || cols <= 0) return 0;
    uint64_t rb = cll_row_bytes(type, (uint64_t)cols);
    if (layout == CLL_CU_LAYOUT_SPLIT) {
        const cll_cu_sp_ops *sp = cll_cu_sp_ops_get(type);
        if (!sp || cols % sp->qk) return 0;
        rb = sp->row_bytes(cols);
    } else if (layout != 0) {
        return 0;
    }
    return (size_t)((rb + 15) & ~(uint64_t)15);
}

size_t cll_cu_weight_bytes(uint32_t type, int layout, int64_t rows, int64_t cols, int64_t n_mat) {
    return cll_cu_row_stride(type, layout, cols) * (size_t)rows * (size_t)n_mat;
}

cudaError_t cll_cu_weight_upload_l(cll_cu_weight *w, const void *host, uint32_t type, int layout, int64_t rows,
                                   int64_t cols, int64_t n_mat, void *dev_dst) {
    const size_t rs = cll_cu_row_stride(type, layout, cols); /* 0: no such layout, or a ragged cols */
    if (!rs || rows <= 0 || n_mat <= 0 || ((uintptr_t)dev_dst & 15)) return cudaErrorInvalidValue;
    const cll_cu_sp_ops *sp = layout == CLL_CU_LAYOUT_SPLIT ? cll_cu_sp_ops_get(type) : NULL;
    const size_t rb = (size_t)cll_row_bytes(type, (uint64_t)cols);
    const size_t total = rs * (size_t)rows * (size_t)n_mat;
    if (!sp) {
        if (rs != rb) CLL_CU_RET(cudaMemset(dev_dst, 0, total));
        CLL_CU_RET(cudaMemcpy2D(dev_dst, rs, host, rb, rb, (size_t)(rows * n_mat), cudaMemcpyHostToDevice));
    } else { /* repacked on the host in slabs of <= 32 MB (rows split over up to 16 threads), padding zeroed */
        const int64_t nrow = rows * n_mat;
        int64_t slab = (int64_t)(((size_t)32 << 20) / rs);
        if (slab < 1) slab = 1;
        if (slab > nrow) slab = nrow;
        unsigned nt = std::thread::hardware_concurrency();
        if (nt < 1) nt = 1;
        if (nt > 16) nt = 16;
        if ((int64_t)nt > slab) nt = (unsigned)slab;
        std::vector<uint8_t> st((size_t)slab * rs);
        for (int64_t r0 = 0; r0 < nrow; r0 += slab) {
            const int64_t n = nrow - r0 < slab ? nrow - r0 : slab;
            const int64_t per = (n + nt - 1) / nt;
            auto part = [&](int64_t a) {
                const int64_t m = n - a < per ? n - a : per;
                if (m <= 0) return;
                memset(st.data() + (size_t)a * rs, 0, (size_t)m * rs);
                sp->pack((const uint8_t *)host + (size_t)(r0 + a) * rb, st.data() + (size_t)a * rs, m, cols, rb, rs);
            };
            std::vector<std::thread> th;
            try {
                for (unsigned t = 1; t < nt; t++) th.emplace_back(part, (int64_t)t * per);
            } catch (...) { /* no threads to be had: the rest on this one */
            }
            part(0);
            for (int64_t a = (int64_t)(th.size() + 1) * per; a < n; a += per) part(a);
            for (auto &t : th) t.join();
            CLL_CU_RET(cudaMemcpy((uint8_t *)dev_dst + (size_t)r0 * rs, st.data(), (size_t)n * rs, cudaMemcpyHostToDevice));
        }
    }
    cll_cu_weight_desc(w, type, layout, rows, cols, n_mat, dev_dst);
    return cudaSuccess;
}

cudaError_t cll_cu_weight_upload(cll_cu_weight *w, const void *host, uint32_t type, int64_t rows, int64_t cols,
                                 int64_t n_mat, void *dev_dst) {
    return cll_cu_weight_upload_l(w, host, type, 0, rows, cols, n_mat, dev_dst);
}

void cll_cu_weight_desc(cll_cu_weight *w, uint32_t type, int layout, int64_t rows, int64_t cols, int64_t n_mat,
                        const void *dev) {
    const size_t rs = cll_cu_row_stride(type, layout, cols);
    w->type = type;
    w->layout = layout;
    w->rows = rows;
    w->cols = cols;
    w->n_mat = n_mat;
    w->row_stride = rs;
    w->mat_stride = rs * (size_t)rows;
    w->d = (const uint8_t *)dev;
}

cudaError_t cll_cu_get_rows(const cll_cu_weight *w, const int32_t *ids, int64_t n, float *out, int64_t ld_out, float scale,
                            cudaStream_t s) {
    if (w->layout == CLL_CU_LAYOUT_SPLIT) {
        const cll_cu_sp_ops *sp = cll_cu_sp_ops_get(w->type);
        return sp ? sp->get_rows(w, ids, n, out, ld_out, scale, s) : cudaErrorInvalidValue;
    }
    const cll_cu_fmt_ops *o = cll_cu_fmt_ops_get(w->type);
    if (!o || w->layout != 0) return cudaErrorInvalidValue;
    return o->get_rows(w, ids, n, out, ld_out, scale, s);
}

/* ---- the table ---- */
/* any token count; a CUDA device of sm_80+ (cp.async) or an unnamed one (device 0) */
static bool cu_row_ok(const cll_kernel_row *r, const cll_kernel_shape *s) {
    const cll_cu_fmt_ops *o = cll_cu_fmt_ops_get(r->wtype);
    if (s->device != CLL_KDEVICE_CPU && s->device < CLL_KDEVICE_CUDA_SM(8, 0)) return false;
    return o && s->wtype == r->wtype && s->cols > 0 && s->rows > 0 && s->cols % o->qk == 0;
}

/* the f16 MoE row stages whole 32-element groups */
static bool cu_moe_f16_ok(const cll_kernel_row *r, const cll_kernel_shape *s) {
    return cu_row_ok(r, s) && s->cols % 32 == 0;
}

/* the few-token rows serve a batch of 2..CLL_CU_FEW_MAX tokens of one product (a site whose token
 * count is not fixed, n_tokens 0, is not theirs: they are never a decode row) */
static bool cu_few_ok(const cll_kernel_row *r, const cll_kernel_shape *s) {
    return s->n_tokens >= 2 && s->n_tokens <= CLL_CU_FEW_MAX && cu_row_ok(r, s);
}

/* the int8 mma rows: 2..64 tokens, whole 256-value chunks, mma.sync int8 (sm_80+) */
static bool cu_mma_ok(const cll_kernel_row *r, const cll_kernel_shape *s) {
    return s->n_tokens >= 2 && s->n_tokens <= CLL_CU_MMA_MAX && s->cols % 256 == 0 && cu_row_ok(r, s);
}

/* the fused f16 GEMM rows: any token count, whole 256-value chunks, mma.sync f16 (sm_80+) */
static bool cu_fused_ok(const cll_kernel_row *r, const cll_kernel_shape *s) {
    return s->cols % 256 == 0 && cu_row_ok(r, s);
}

/* the split decode rows (one product per activation row) leave the few-token class (2..8 tokens of
 * one product) to the few-token rows */
static bool cu_sp_ok(const cll_kernel_row *r, const cll_kernel_shape *s) {
    return !(s->n_tokens >= 2 && s->n_tokens <= CLL_CU_FEW_MAX) && cu_row_ok(r, s);
}

/* the bulk-copy rows need sm_90 (cp.async.bulk, mbarrier tx counts) */
static bool cu_tma_ok(const cll_kernel_row *r, const cll_kernel_shape *s) {
    if (s->device != CLL_KDEVICE_CPU && s->device < CLL_KDEVICE_CUDA_SM(9, 0)) return false;
    return cu_sp_ok(r, s);
}

/* the types in table order; impls filled once from the family files */
#define CU_TYPES(X)                                                                                          \
    X(f32, F32) X(f16, F16) X(bf16, BF16) X(q4_0, Q4_0) X(q4_1, Q4_1) X(q5_0, Q5_0) X(q5_1, Q5_1) X(q8_0, Q8_0) \
    X(iq4_nl, IQ4_NL) X(q2_K, Q2_K) X(q3_K, Q3_K) X(q4_K, Q4_K) X(q5_K, Q5_K) X(q6_K, Q6_K) X(iq2_xxs, IQ2_XXS) \
    X(iq2_xs, IQ2_XS) X(iq2_s, IQ2_S) X(iq3_xxs, IQ3_XXS) X(iq3_s, IQ3_S) X(iq4_xs, IQ4_XS)
#define CU_COUNT_ONE(n, T) +1
enum { CU_NTYPES = 0 CU_TYPES(CU_COUNT_ONE) };
static const uint32_t k_types[CU_NTYPES] = {
#define CU_TYPE_ID(n, T) CLL_TYPE_##T,
    CU_TYPES(CU_TYPE_ID)
#undef CU_TYPE_ID
};
static cll_cu_gemv_impl k_gemv_impl[CU_NTYPES];
static const cll_cu_gemv_impl k_gemm_impl = {NULL, false, 0, NULL, false, false, false, NULL, false};
/* the split rows, table order */
static const uint32_t k_sp_types[] = {CLL_TYPE_Q4_0, CLL_TYPE_Q8_0, CLL_TYPE_Q5_1, CLL_TYPE_Q4_K,
                                      CLL_TYPE_Q6_K, CLL_TYPE_IQ4_XS, CLL_TYPE_IQ3_S, CLL_TYPE_Q5_K, CLL_TYPE_Q3_K,
                                      CLL_TYPE_Q4_1, CLL_TYPE_Q5_0, CLL_TYPE_IQ4_NL, CLL_TYPE_Q2_K};
enum { CU_NSP = sizeof k_sp_types / sizeof k_sp_types[0] };
static cll_cu_gemv_impl k_sp_impl[CU_NSP], k_spx2_impl[CU_NSP], k_spx4_impl[CU_NSP], k_spx4p_impl[CU_NSP],
    k_tma_impl[CU_NSP], k_few_impl[CU_NSP], k_mma_impl[CU_NSP], k_fused_impl[CU_NSP], k_spu2_impl[CU_NSP],
    k_spu2b8_impl[CU_NSP], k_spu1b8_impl[CU_NSP], k_spu4b6_impl[CU_NSP], k_spx4b6p_impl[CU_NSP], k_spx2u1p_impl[CU_NSP], k_spr2g_impl[CU_NSP],
    k_spr2u1g_impl[CU_NSP], k_spr2pre_impl[CU_NSP], k_spr2pre1w_impl[CU_NSP], k_spr2ks4_impl[CU_NSP];
/* the grouped MoE rows: layout 0 (block types, k_types order) and split */
static cll_cu_gemv_impl k_moe_impl[CU_NTYPES], k_moe_sp_impl[CU_NSP];
/* a layout-0 row stays a default unless its type has a default split row (cll_cu_sp_default < 0: its
 * split rows are not yet defaults) */
static bool has_split(uint32_t t) {
    for (int i = 0; i < CU_NSP; i++)
        if (k_sp_types[i] == t) return cll_cu_sp_default(t) >= 0;
    return false;
}
#define CU_DEF(T) (!has_split(CLL_TYPE_##T))

/* gemv: the block formats stage through shared memory and dot against q8_1; floats read f32 x */
#define CU_GEMV_PARAMS_BLK "layout=0 warps=4 rows/warp=1 stage=cp.async 2x~2KB/warp act=q8_1 dp4a"
#define CU_GEMV_PARAMS_SP "layout=1(split) warps=4 rows/warp=1 lane/32-group ld=16B x4 groups/lane double-buffered act=q8_1 dp4a pdl"
#define CU_GEMV_PARAMS_SPX2 "layout=1(split) warps=4 rows/warp=2 split-K=1|2|4 by shape lane/32-group ld=16B x2 groups x2 rows double-buffered act=q8_1 in smem dp4a pdl"
#define CU_GEMV_PARAMS_SPX4 "layout=1(split) warps=4 rows/warp=4 split-K=1|2|4 by shape lane/32-group ld=16B x1 group x4 rows double-buffered act=q8_1 in smem dp4a pdl"
#define CU_GEMV_PARAMS_SPX4P "layout=1(split) warps=4 rows/warp=4 split-K=1|2|4 by shape persistent grid (1 wave, tiles looped, activation staged once per block) ld=16B x1 group x4 rows act=q8_1 in smem dp4a pdl"
#define CU_GEMV_PARAMS_SPU2 "layout=1(split) warps=4 rows/warp=1 lane/32-group ld=16B x2 groups/lane double-buffered act=q8_1 dp4a pdl (w4u4's sums)"
#define CU_GEMV_PARAMS_SPU2B8 "layout=1(split) warps=4 rows/warp=1 lane/32-group ld=16B x2 groups/lane double-buffered >=8 blocks/SM act=q8_1 dp4a pdl (w4u4's sums)"
#define CU_GEMV_PARAMS_SPU1B8 "layout=1(split) warps=4 rows/warp=1 lane/32-group ld=16B x1 group/lane double-buffered >=8 blocks/SM act=q8_1 dp4a pdl (w4u4's sums)"
#define CU_GEMV_PARAMS_SPU4B6 "layout=1(split) warps=4 rows/warp=1 lane/32-group ld=16B x4 groups/lane double-buffered >=6 blocks/SM act=q8_1 dp4a pdl (w4u4's sums)"
#define CU_GEMV_PARAMS_SPX4B6P "layout=1(split) warps=4 rows/warp=4 split-K=1|2|4 as r4 persistent grid ld=16B x1 group x4 rows double-buffered >=6 blocks/SM act=q8_1 in smem dp4a pdl (r4's sums)"
#define CU_GEMV_PARAMS_SPX2U1P4 "layout=1(split) warps=4 rows/warp=2 split-K=1|2|4 as r4 persistent grid ld=16B x1 group x2 rows double-buffered >=7 blocks/SM act=q8_1 in smem dp4a pdl (r4's sums)"
#define CU_GEMV_PARAMS_SPX2U1P2 "layout=1(split) warps=4 rows/warp=2 split-K=1|2|4 as r2 persistent grid ld=16B x1 group x2 rows double-buffered >=7 blocks/SM act=q8_1 in smem dp4a pdl (r2's sums)"
#define CU_GEMV_PARAMS_SPR2G "layout=1(split) warps=4 rows/warp=2 lane/32-group ld=16B x2 groups x2 rows double-buffered act=q8_1 from global (L1, once per group for both rows, no smem, no barrier) dp4a pdl (w4u4's sums)"
#define CU_GEMV_PARAMS_SPR2G4 "layout=1(split) warps=4 rows/warp=2 lane/32-group ld=16B x2 groups x2 rows double-buffered >=4 blocks/SM act=q8_1 from global (L1, once per group for both rows, no smem, no barrier) dp4a pdl (w4u4's sums)"
#define CU_GEMV_PARAMS_SPR2PRE "layout=1(split) warps=4 rows/warp=2 lane/32-group ld=16B x4 groups x2 rows (a row of <= 4096 columns whole in flight before the PDL wait; longer rows as w4r2u2) act=q8_1 from global (L1, once per group for both rows, no smem, no barrier) dp4a pdl (w4u4's sums)"
#define CU_GEMV_PARAMS_SPR2PRE1W "layout=1(split) warps=4 rows/warp=2 lane/32-group ld=16B x4 groups x2 rows (a row of <= 4096 columns whole in flight before the PDL wait where the grid is one wave; else as the type's staging-free default) act=q8_1 from global (L1, once per group for both rows, no smem, no barrier) dp4a pdl (w4u4's sums)"
#define CU_GEMV_PARAMS_SPR2KS4 "layout=1(split) warps=4 rows/block=2 split-K=4 warps on rows of > 4096 columns (<= 16384), lane/32-group ld=16B x<=4 groups x2 rows all before the PDL wait, partials summed in smem, act=q8_1 from global (L1) dp4a pdl; rows of <= 4096 columns as the type's base form"
#define CU_GEMV_PARAMS_SPR2U1G "layout=1(split) warps=4 rows/warp=2 lane/32-group ld=16B x1 group x2 rows double-buffered >=7 blocks/SM act=q8_1 from global (L1, once per group for both rows, no smem, no barrier) dp4a pdl (w4u4's sums)"
#define CU_GEMV_PARAMS_TMA "layout=1(split) 128 threads persistent grid tile=rt rows (~16KB) one cp.async.bulk per tile mbarrier 4 stages in flight (first before the PDL wait) act=q8_1 in smem dp4a nb=1 (else r4_pt)"
#define CU_GEMV_PARAMS_FEW "layout=1(split) n_tokens 2-8 warps=8 rows/warp=4 tokens/launch<=8 (records<=100KB) act=q8_1 48B records in smem, LDS.128 split-K=1|2|4 persistent grid dp4a pdl"
#define CU_GEMV_PARAMS_MMA "layout=1(split) n_tokens 2-64 cols%256 mma.sync m16n8k32 int8 (Q6_K 2x m16n8k16), weights + q8_1 by cp.async 3 stages, pdl; 2-8 tokens: 8 warps x 16 rows, K split over the warps in 256-value chunks; 9-64: 128 rows x 64 tokens per block, split-K over blocks (last-block ticket)"
#define CU_GEMV_PARAMS_FLT "layout=0 warps=4 rows/warp=1 ld=16B x4/lane act=f32"
#define CU_GEMM_PARAMS_FUSED "layout=1(split) cols%256 fused dequant-in-tile: 128 rows x <=64 tokens per block (8 warps x 16 rows, 1/2/4/8 tiles of 8 tokens), weights (quantized) + f16 X (in the mma's order, one LDS.128 per tile and group) by cp.async (2 stages up to 32 tokens, 3 above), operand decoded once per weight to f16 (Q4_0/Q8_0 the panel's value, K-quants within an f16 ulp), per-warp scale table, mma.sync m16n8k16 f16 f32-accumulate, split-K over blocks (last-block ticket), pdl"
#define CU_GEMM_PARAMS "layout=0 panel=f16 slab<=panel_bytes cublasGemmEx fp32-accumulate"
static const cll_kernel_row k_rows[] = {
    {"gemv_f32_warp_ld16", CLL_KOP_GEMV, CLL_TYPE_F32, 0, CU_GEMV_PARAMS_FLT, 0, 1, cu_row_ok, true, true, &k_gemv_impl[0]},
    {"gemv_f16_warp_ld16", CLL_KOP_GEMV, CLL_TYPE_F16, 0, CU_GEMV_PARAMS_FLT, 0, 1, cu_row_ok, true, true, &k_gemv_impl[1]},
    {"gemv_bf16_warp_ld16", CLL_KOP_GEMV, CLL_TYPE_BF16, 0, CU_GEMV_PARAMS_FLT, 0, 1, cu_row_ok, true, true, &k_gemv_impl[2]},
#define CU_GEMV_ROW(n, T, i)                                                                                 \
    {"gemv_" #n "_stage_dp4a", CLL_KOP_GEMV, CLL_TYPE_##T, 0, CU_GEMV_PARAMS_BLK, 0, 1, cu_row_ok, CU_DEF(T), CU_DEF(T), &k_gemv_impl[i]},
    CU_GEMV_ROW(q4_0, Q4_0, 3) CU_GEMV_ROW(q4_1, Q4_1, 4) CU_GEMV_ROW(q5_0, Q5_0, 5) CU_GEMV_ROW(q5_1, Q5_1, 6)
    CU_GEMV_ROW(q8_0, Q8_0, 7) CU_GEMV_ROW(iq4_nl, IQ4_NL, 8) CU_GEMV_ROW(q2_K, Q2_K, 9) CU_GEMV_ROW(q3_K, Q3_K, 10)
    CU_GEMV_ROW(q4_K, Q4_K, 11) CU_GEMV_ROW(q5_K, Q5_K, 12) CU_GEMV_ROW(q6_K, Q6_K, 13)
    CU_GEMV_ROW(iq2_xxs, IQ2_XXS, 14) CU_GEMV_ROW(iq2_xs, IQ2_XS, 15) CU_GEMV_ROW(iq2_s, IQ2_S, 16)
    CU_GEMV_ROW(iq3_xxs, IQ3_XXS, 17) CU_GEMV_ROW(iq3_s, IQ3_S, 18) CU_GEMV_ROW(iq4_xs, IQ4_XS, 19)
#undef CU_GEMV_ROW
    /* layout 1 (split, cuda/matmul/split.cuh): w4u4 one row per warp; r2/r4: 2/4 rows per warp,
     * activation staged in shared memory, split-K by shape (gemv_split.cu); r4_pt: r4 on a
     * one-wave persistent grid. The default per type (cll_cu_sp_default: 0 w4u4, 1 r2, 2 r4, 3 r4_pt, 9 r4b6_pt,
     * 11 r2u1b7_r4ks_pt: CU_SP_FAM's codes) is the
     * best average of cuda_kbench over the eight 7B/8B decode shapes on the H200, 2026-12-01
     * (% of 4300 GB/s): q4_0 r4_pt 64.3 (w4u4 60.6), q8_0 r4_pt 76.5 (72.5), q5_1 w4u4 72.3
     * (r2 71.9), q4_K r4_pt 59.7 (57.8), q6_K r2 70.8 (70.3), iq4_xs w4u4 46.8 (r4 43.1).
     * Re-picked in the whole step where kbench and the graph disagree (l2-7b tg128, same call):
     * q5_1 r4_pt 486.5 vs w4u4 439.2 tok/s; q8_0 r4_pt 395.1 vs tma 372.1; iq4_xs w4u4 429.0 vs
     * r2 407.7 vs tma 352.0. iq3_s (l3-8b tg128, 2026-12-01, one call): r4_pt 287.2, r2 282.7,
 * w4u4 257.2, the layout-0 stage row 232.8 tok/s.
 * Since 2026-12-03 (ninth session) three defaults are bit-exact variants of r4_pt (D 9, 11: the same
 * sums, so no output changes), each measured faster in the served step by the tuner's paired ABBA
 * races (12 rounds of tg128, H200, 95% CI of the ratio to r4_pt), below the 3% a crown needs:
 * q8_0 r2u1b7_r4ks_pt 0.983 [0.981, 0.984] (413.0 vs 405.9 tok/s best), q5_1 r2u1b7_r4ks_pt 0.979
 * [0.976, 0.982] (526.2 vs 514.4), iq3_s r4b6_pt 0.976 [0.973, 0.979] (335.8 vs 327.4; since its
 * nibble form, 2026-12-04, r2u1b7_r4ks_pt: 537.4-538.0 vs 530.7-532.1 tok/s, three pairs alternating
 * in one call, l3-8b tg128). Where a
 * variant cleared the bar it went to the h200 class defaults instead (tune/defaults/h200.json:
 * iq4_xs w4u2b8, 0.923). q4_0, q4_K and q6_K: every variant tied or lost (docs/tune.md).
 * Since 2026-12-04 (nineteenth session) five defaults are w4r2u2 (D 12, w4u4's family: 2 rows a
 * warp, the activation read once per group from L1 for both, no shared-memory staging and no
 * barrier; a probe showed the staging + barrier cost the smx rows ~3 us a product, docs/cuda.md):
 * cuda_kbench average over the eight shapes q4_0 73.3% (r4_pt 67.3), q5_1 78.4 (r2u1b7_r4ks_pt
 * 76.0), q4_K 65.3 (61.8), q6_K 78.0 (r2 74.1), iq3_s 68.7 (64.3); tg128 (H200, same call, two
 * alternating pairs): l2-7b Q4_0 605.2 / 607.9 -> 625.5 / 623.5, Q5_1 527.9 / 526.2 -> 540.6 /
 * 540.0, l3-8b IQ3_S 541.8 / 541.8 -> 545.7 / 546.8, Q6_K 434.6 / 434.7 -> 447.5 / 450.9, q3moe
 * Q4_K_M 954.5 / 956.0 -> 1045.9 / 1044.3, Q5_1 1028.3 / 1027.8 -> 1063.9 / 1063.6; l2-7b Q4_K_M
 * 528.6 / 526.1 -> 540.6 / 539.3, l3-8b Q4_K_M 484.0 / 480.6 -> 504.9 / 502.7 (previous call).
 * Q8_0 lost with w4r2u2 (4 blocks an SM, its registers: 388.8 / 389.1 vs 414.6 / 414.9) and
 * defaults to w4r2u1b7 (D 13: one group a lane at 7 blocks, 63 registers): kbench 83.2% (79.0),
 * tg128 414.0 / 412.0 -> 428.9 / 431.1 (ABBA, one call). iq4_xs keeps its rows (w4r2u2 474.5 /
 * 476.2 vs 476.6 / 472.2, w4r2u1b7 475.7 vs 473.2: its table lookups bound it).
 * Since 2026-12-04 (twentieth session) q4_K and iq3_s default to w4r2pre (D 14: four groups a lane,
 * so a row of <= 4096 columns is whole in flight before the PDL wait, while the attention or norm
 * kernel before it runs; no second buffer, so w4r2u2's registers; longer rows run w4r2u2): tg128
 * (H200, ABBA in one call) l2-7b Q4_K_M 540.0 / 540.2 -> 553.9 / 553.2, l3-8b Q4_K_M 504.4 / 503.8
 * -> 512.9 / 512.9, l3-8b IQ3_S 545.8 / 542.4 -> 557.0 / 557.2; cuda_kbench q4_K 65.0% -> 69.1%.
 * It lost on q4_0 (626.4 / 626.4 vs 619.6 / 618.6: its q|k|v and gate|up run several waves, 71.6 ->
 * 65.6% in kbench), q5_1 (539.4 / 539.0 vs 533.8 / 533.6) and q8_0 (430.3 vs 387.5), tied q6_K.
 * q8_0 and q6_K default to w4r2pre1w (D 15: w4r2pre only where the grid is one wave, the 4096-row
 * o of a 7B / 8B; every other product as before, q8_0's w4r2u1b7, q6_K's w4r2u2): l2-7b Q8_0 432.2
 * / 431.9 -> 435.6 / 435.4, l3-8b Q6_K 450.7 / 450.1 -> 454.4 / 453.5 (ABBA, one call); q4_0 (625.4
 * / 626.2 vs 624.8 / 624.8) and q5_1 (540.3 / 539.6 vs 538.6 / 539.3) tied and keep w4r2u2.
 * Since 2026-12-04 (twenty-first session) q4_K, q6_K, iq3_s and q5_1 default to w4r2ks4 (D 16, a family
 * of its own: the down product's long rows split over a block's 4 warps, every chunk in flight before
 * the PDL wait; the other rows as before, cll_cu_sp_base): cuda_kbench on the 7B down (4096 x 11008)
 * q4_K 51.8% -> 63.9%, q6_K 63.5 -> 78.7, q5_1 63.1 -> 78.3, q4_0 58.2 -> 67.3, q8_0 71.3 -> 66.2; tg128
 * (H200, ABBA in one call) l2-7b Q4_K_M 551.8 / 552.9 -> 559.3 / 562.3, l3-8b Q6_K 451.5 / 452.2 ->
 * 458.6 / 456.7, l3-8b IQ3_S 561.9 / 562.7 -> 568.3 / 568.0, l2-7b Q5_1 538.2 / 537.5 -> 539.6 / 540.5;
 * q4_0 (625.7 / 623.5 vs 624.2 / 625.1) and iq4_xs (472.4 / 474.9 vs 473.4 / 475.7) tied, q8_0 lost in
 * kbench: they keep their forms.
 * Since 2026-12-05 (twenty-ninth session) iq4_xs defaults to w4r2ks4 over w4r2u2 (as q5_1): after its
 * sign-mode lookup (cu_kv8d) the lookups no longer bound it, and on an H100 80GB HBM3 (l2-7b IQ4_XS tg128,
 * one call) w4u4 448.6, w4r2u2 509.7, w4r2pre 504.8, w4r2ks4 over w4u4 469.0; then w4r2ks4 over w4r2u2
 * 514.4 / 516.6 / 514.7 vs w4r2u2 510.0 / 509.7 / 506.9 (alternating, the next call). The h200 class
 * crown (w4u2b8) was retired with it. q5_K joined the split types (l2-7b Q5_K_M tg128, H100: the layout-0
 * row 278.6, split w4u4 398.5, w4r2u2 368.1, w4r2pre 423.7, w4r2ks4 over w4r2pre 443.1 / 442.1 vs w4r2pre
 * 425.6 / 427.1 alternating) with Q4_K's forms; q3_K's split rows are registered but not yet defaults
 * (cll_cu_sp_default -1: no device run yet).
 * Since 2026-12-06 (thirty-fifth session) iq4_xs's w4r2ks4 falls back to w4r2pre1w (cll_cu_sp_base 15, as
 * q6_K) on the rows it does not split: the o product whole in flight before the wait (cuda_kbench 4096 x 4096
 * 5.78 -> 4.98 us), l2-7b IQ4_XS tg128 513.98 / 514.28 -> 519.30 / 519.69 (H100, ABBA in one call, the same
 * sums). q4_0 on w4r2ks4 (over w4r2u2) lost in that call (538.53 / 538.38 -> 534.94 / 533.88) although its
 * down product alone ran 11.53 -> 10.11 us in kbench: it keeps w4r2u2. */
/* bit_exact: with the type's default row. Forms sum in different orders (lanes per row, split-K,
 * per-group vs per-lane); a row's sums depend only on its lanes' group order and the split-K
 * factor, so the rows of one numerics family are bit-exact with each other (the gate checks every
 * claim). The family of split form k (D and k use these codes): 0 w4u4 and its variants (5 w4u2, 6 w4u2b8, 7 w4u1b8, 8 w4u4b6); 1 r2 and 10 r2u1b7_pt; 2 r4,
 * 3 r4_pt, 9 r4b6_pt and 11 r2u1b7_r4ks_pt (split-K as r4); 4 tma; 12 w4r2u2, 13 w4r2u1b7, 14 w4r2pre and 15 w4r2pre1w (family 0); 16 w4r2ks4 (its own:
 * split-K over warps on the long rows) */
#define CU_SP_FAM(k) (((k) >= 5 && (k) <= 8) || ((k) >= 12 && (k) <= 15) ? 0 : (k) == 10 ? 1 : (k) == 3 || (k) == 9 || (k) == 11 ? 2 : (k))
#define CU_SP_EXACT(D, k) (CU_SP_FAM(D) == CU_SP_FAM(k))
/* each split type's default form (the codes above, cll_cu_sp_default): every row of the type reads it */
#define CU_SPD(T) cll_cu_sp_default(CLL_TYPE_##T)
#define CU_SP_ROW(n, T, i)                                                                                \
    {"gemv_" #n "_split_w4u4_dp4a", CLL_KOP_GEMV, CLL_TYPE_##T, 0, CU_GEMV_PARAMS_SP, CLL_CU_LAYOUT_SPLIT, 1, cu_sp_ok, \
     CU_SP_EXACT(CU_SPD(T), 0), (CU_SPD(T)) == 0, &k_sp_impl[i]},                                                            \
    {"gemv_" #n "_split_r2_smx_ks", CLL_KOP_GEMV, CLL_TYPE_##T, 0, CU_GEMV_PARAMS_SPX2, CLL_CU_LAYOUT_SPLIT, 1, cu_sp_ok, \
     CU_SP_EXACT(CU_SPD(T), 1), (CU_SPD(T)) == 1, &k_spx2_impl[i]},                                                          \
    {"gemv_" #n "_split_r4_smx_ks", CLL_KOP_GEMV, CLL_TYPE_##T, 0, CU_GEMV_PARAMS_SPX4, CLL_CU_LAYOUT_SPLIT, 1, cu_sp_ok, \
     CU_SP_EXACT(CU_SPD(T), 2), (CU_SPD(T)) == 2, &k_spx4_impl[i]},                                                          \
    {"gemv_" #n "_split_r4_smx_ks_pt", CLL_KOP_GEMV, CLL_TYPE_##T, 0, CU_GEMV_PARAMS_SPX4P, CLL_CU_LAYOUT_SPLIT, 1,  \
     cu_sp_ok, CU_SP_EXACT(CU_SPD(T), 3), (CU_SPD(T)) == 3, &k_spx4p_impl[i]},                                             \
    {"gemv_" #n "_split_tma", CLL_KOP_GEMV, CLL_TYPE_##T, 0, CU_GEMV_PARAMS_TMA, CLL_CU_LAYOUT_SPLIT, 1,      \
     cu_tma_ok, CU_SP_EXACT(CU_SPD(T), 4), (CU_SPD(T)) == 4, &k_tma_impl[i]},                                            \
    {"gemv_" #n "_split_few", CLL_KOP_GEMV, CLL_TYPE_##T, 0, CU_GEMV_PARAMS_FEW, CLL_CU_LAYOUT_SPLIT, 1,       \
     cu_few_ok, false, (CU_SPD(T)) >= 0, &k_few_impl[i]}, /* the batch form of a type whose split rows serve */
    CU_SP_ROW(q4_0, Q4_0, 0) CU_SP_ROW(q8_0, Q8_0, 1) CU_SP_ROW(q5_1, Q5_1, 2) CU_SP_ROW(q4_K, Q4_K, 3)
    CU_SP_ROW(q6_K, Q6_K, 4) CU_SP_ROW(iq4_xs, IQ4_XS, 5) CU_SP_ROW(iq3_s, IQ3_S, 6) CU_SP_ROW(q5_K, Q5_K, 7)
    CU_SP_ROW(q3_K, Q3_K, 8) CU_SP_ROW(q4_1, Q4_1, 9) CU_SP_ROW(q5_0, Q5_0, 10) CU_SP_ROW(iq4_nl, IQ4_NL, 11)
    CU_SP_ROW(q2_K, Q2_K, 12)
#undef CU_SP_ROW
    /* the bit-exact variants (rows of a numerics family that only launch differently: the tuner's
     * arms, and the defaults of Q4_0 and Q8_0; cuda/matmul/gemv_split.cu says which type has which) */
#define CU_SPV_ROW(n, T, i, k, suffix, params, impl)                                                       \
    {"gemv_" #n "_split_" suffix, CLL_KOP_GEMV, CLL_TYPE_##T, 0, params, CLL_CU_LAYOUT_SPLIT, 1, cu_sp_ok,        \
     CU_SP_EXACT(CU_SPD(T), k), (CU_SPD(T)) == (k), &impl[i]},
    CU_SPV_ROW(iq4_xs, IQ4_XS, 5, 5, "w4u2_dp4a", CU_GEMV_PARAMS_SPU2, k_spu2_impl)
    CU_SPV_ROW(iq4_xs, IQ4_XS, 5, 6, "w4u2b8_dp4a", CU_GEMV_PARAMS_SPU2B8, k_spu2b8_impl)
    CU_SPV_ROW(iq4_xs, IQ4_XS, 5, 7, "w4u1b8_dp4a", CU_GEMV_PARAMS_SPU1B8, k_spu1b8_impl)
    CU_SPV_ROW(iq4_xs, IQ4_XS, 5, 8, "w4u4b6_dp4a", CU_GEMV_PARAMS_SPU4B6, k_spu4b6_impl)
    CU_SPV_ROW(q4_0, Q4_0, 0, 9, "r4b6_smx_ks_pt", CU_GEMV_PARAMS_SPX4B6P, k_spx4b6p_impl)
    CU_SPV_ROW(q5_1, Q5_1, 2, 9, "r4b6_smx_ks_pt", CU_GEMV_PARAMS_SPX4B6P, k_spx4b6p_impl)
    CU_SPV_ROW(iq3_s, IQ3_S, 6, 9, "r4b6_smx_ks_pt", CU_GEMV_PARAMS_SPX4B6P, k_spx4b6p_impl)
    CU_SPV_ROW(q4_0, Q4_0, 0, 11, "r2u1b7_smx_r4ks_pt", CU_GEMV_PARAMS_SPX2U1P4, k_spx2u1p_impl)
    CU_SPV_ROW(q8_0, Q8_0, 1, 11, "r2u1b7_smx_r4ks_pt", CU_GEMV_PARAMS_SPX2U1P4, k_spx2u1p_impl)
    CU_SPV_ROW(q5_1, Q5_1, 2, 11, "r2u1b7_smx_r4ks_pt", CU_GEMV_PARAMS_SPX2U1P4, k_spx2u1p_impl)
    CU_SPV_ROW(q4_K, Q4_K, 3, 11, "r2u1b7_smx_r4ks_pt", CU_GEMV_PARAMS_SPX2U1P4, k_spx2u1p_impl)
    CU_SPV_ROW(iq3_s, IQ3_S, 6, 11, "r2u1b7_smx_r4ks_pt", CU_GEMV_PARAMS_SPX2U1P4, k_spx2u1p_impl)
    CU_SPV_ROW(q6_K, Q6_K, 4, 10, "r2u1b7_smx_ks_pt", CU_GEMV_PARAMS_SPX2U1P2, k_spx2u1p_impl)
    /* the rows without activation staging, every type: w4r2u2 (Q8_0's capped at 4 blocks an SM), w4r2u1b7,
     * w4r2pre, w4r2pre1w and w4r2ks4 (not a bit-exact variant: split-K on the long rows) */
#define CU_SPG_ROWS(n, T, i, p2)                                                                             \
    CU_SPV_ROW(n, T, i, 12, "w4r2u2_dp4a", p2, k_spr2g_impl)                                                 \
    CU_SPV_ROW(n, T, i, 13, "w4r2u1b7_dp4a", CU_GEMV_PARAMS_SPR2U1G, k_spr2u1g_impl)                         \
    CU_SPV_ROW(n, T, i, 14, "w4r2pre_dp4a", CU_GEMV_PARAMS_SPR2PRE, k_spr2pre_impl)                         \
    CU_SPV_ROW(n, T, i, 15, "w4r2pre1w_dp4a", CU_GEMV_PARAMS_SPR2PRE1W, k_spr2pre1w_impl)                   \
    CU_SPV_ROW(n, T, i, 16, "w4r2ks4_dp4a", CU_GEMV_PARAMS_SPR2KS4, k_spr2ks4_impl)
    CU_SPG_ROWS(q4_0, Q4_0, 0, CU_GEMV_PARAMS_SPR2G) CU_SPG_ROWS(q8_0, Q8_0, 1, CU_GEMV_PARAMS_SPR2G4)
    CU_SPG_ROWS(q5_1, Q5_1, 2, CU_GEMV_PARAMS_SPR2G) CU_SPG_ROWS(q4_K, Q4_K, 3, CU_GEMV_PARAMS_SPR2G)
    CU_SPG_ROWS(q6_K, Q6_K, 4, CU_GEMV_PARAMS_SPR2G) CU_SPG_ROWS(iq4_xs, IQ4_XS, 5, CU_GEMV_PARAMS_SPR2G)
    CU_SPG_ROWS(iq3_s, IQ3_S, 6, CU_GEMV_PARAMS_SPR2G) CU_SPG_ROWS(q5_K, Q5_K, 7, CU_GEMV_PARAMS_SPR2G)
    CU_SPG_ROWS(q3_K, Q3_K, 8, CU_GEMV_PARAMS_SPR2G) CU_SPG_ROWS(q4_1, Q4_1, 9, CU_GEMV_PARAMS_SPR2G)
    CU_SPG_ROWS(q5_0, Q5_0, 10, CU_GEMV_PARAMS_SPR2G) CU_SPG_ROWS(iq4_nl, IQ4_NL, 11, CU_GEMV_PARAMS_SPR2G)
    CU_SPG_ROWS(q2_K, Q2_K, 12, CU_GEMV_PARAMS_SPR2G)
#undef CU_SPG_ROWS
#undef CU_SPV_ROW
#undef CU_SPD
    /* the int8 tensor-core few-token rows (cuda/matmul/gemv_mma.cu): not the registry default of the
     * n2-8 class (the dp4a row is), but the pick (cll_cu_pick_form) takes them from the token count
     * where they measured faster on the H200 (cll_cu_mma_min_tokens, cuda/matmul/pick.cu: Q4_0 from 6,
     * Q4_K from 4), unless a pin names the class's row or CLLAMA_CUDA_FEW_MMA=0. They sum a row's
     * groups in another order than the one-token rows, so a batched step's logits differ from each
     * sequence's alone by float reassociation, which the q8_1 rounding of the next activations can
     * amplify: on two tiny random golden files 5e-2..8e-2 on the GPU, the size a 1-ulp nudge of every
     * batched product gives on the CPU (6.4e-2) */
#define CU_MMA_ROW(n, T, i)                                                                                  \
    {"gemv_" #n "_split_mma", CLL_KOP_GEMV, CLL_TYPE_##T, 0, CU_GEMV_PARAMS_MMA, CLL_CU_LAYOUT_SPLIT, 1, cu_mma_ok, \
     false, false, &k_mma_impl[i]},
    CU_MMA_ROW(q4_0, Q4_0, 0) CU_MMA_ROW(q8_0, Q8_0, 1) CU_MMA_ROW(q4_K, Q4_K, 3) CU_MMA_ROW(q6_K, Q6_K, 4)
#undef CU_MMA_ROW
    /* the fused dequant-in-tile GEMM rows (cuda/matmul/gemm_fused.cu): not the registry default of the
     * gemm op (the cuBLAS panels serve prefill), but the pick (cll_cu_pick_form) gives them a batch of
     * cll_cu_fused_min_tokens(type)..CLL_CU_FUSED_MAX tokens (a batched decode step of 4..32 sequences for
     * Q4_K / Q6_K, 9..32 for Q4_0 / Q8_0) */
#define CU_FUSED_ROW(n, T, i)                                                                                \
    {"gemm_" #n "_split_fused_f16", CLL_KOP_GEMM, CLL_TYPE_##T, 0, CU_GEMM_PARAMS_FUSED, CLL_CU_LAYOUT_SPLIT, 1,     \
     cu_fused_ok, false, false, &k_fused_impl[i]},
    CU_FUSED_ROW(q4_0, Q4_0, 0) CU_FUSED_ROW(q8_0, Q8_0, 1) CU_FUSED_ROW(q4_K, Q4_K, 3) CU_FUSED_ROW(q6_K, Q6_K, 4)
#undef CU_FUSED_ROW
    {"gemm_f32_cublas_f32", CLL_KOP_GEMM, CLL_TYPE_F32, 0, "layout=0 cublasGemmEx f32 (no panel)", 0, 1, cu_row_ok, true, true, &k_gemm_impl},
    {"gemm_f16_cublas_direct", CLL_KOP_GEMM, CLL_TYPE_F16, 0, "layout=0 cublasGemmEx f16 weight in place, x->f16", 0, 1, cu_row_ok, true, true, &k_gemm_impl},
    {"gemm_bf16_cublas_direct", CLL_KOP_GEMM, CLL_TYPE_BF16, 0, "layout=0 cublasGemmEx bf16 weight in place, x->bf16", 0, 1, cu_row_ok, true, true, &k_gemm_impl},
#define CU_GEMM_ROW(n, T) {"gemm_" #n "_panel_f16_cublas", CLL_KOP_GEMM, CLL_TYPE_##T, 0, CU_GEMM_PARAMS, 0, 1, cu_row_ok, true, true, &k_gemm_impl},
    CU_GEMM_ROW(q4_0, Q4_0) CU_GEMM_ROW(q4_1, Q4_1) CU_GEMM_ROW(q5_0, Q5_0) CU_GEMM_ROW(q5_1, Q5_1) CU_GEMM_ROW(q8_0, Q8_0)
    CU_GEMM_ROW(iq4_nl, IQ4_NL) CU_GEMM_ROW(q2_K, Q2_K) CU_GEMM_ROW(q3_K, Q3_K) CU_GEMM_ROW(q4_K, Q4_K) CU_GEMM_ROW(q5_K, Q5_K)
    CU_GEMM_ROW(q6_K, Q6_K) CU_GEMM_ROW(iq2_xxs, IQ2_XXS) CU_GEMM_ROW(iq2_xs, IQ2_XS) CU_GEMM_ROW(iq2_s, IQ2_S)
    CU_GEMM_ROW(iq3_xxs, IQ3_XXS) CU_GEMM_ROW(iq3_s, IQ3_S) CU_GEMM_ROW(iq4_xs, IQ4_XS)
#undef CU_GEMM_ROW
    /* grouped MoE prefill (cuda/matmul/moe_gemm.cuh): every expert's tokens in one launch,
     * weight tiles dequantized in shared memory, WMMA f16 -> f32; one row per type and layout
     * (the expert weights are uploaded in the layout of their gemv row) */
#define CU_MOE_PARAMS "tile=64 rows x 64 tokens of one expert, K step 64, deq->smem f16, wmma 16x16x16 f32-accumulate"
    {"moe_f16_wmma_f16", CLL_KOP_MOE, CLL_TYPE_F16, 0, "layout=0 f16 rows copied to smem (cols % 32 == 0) " CU_MOE_PARAMS, 0, 1,
     cu_moe_f16_ok, true, true, &k_moe_impl[1]},
#define CU_MOE_ROW(n, T, i) {"moe_" #n "_deq_wmma_f16", CLL_KOP_MOE, CLL_TYPE_##T, 0, "layout=0 " CU_MOE_PARAMS, 0, 1, cu_row_ok, true, true, &k_moe_impl[i]},
    CU_MOE_ROW(q4_0, Q4_0, 3) CU_MOE_ROW(q4_1, Q4_1, 4) CU_MOE_ROW(q5_0, Q5_0, 5) CU_MOE_ROW(q5_1, Q5_1, 6)
    CU_MOE_ROW(q8_0, Q8_0, 7) CU_MOE_ROW(iq4_nl, IQ4_NL, 8) CU_MOE_ROW(q2_K, Q2_K, 9) CU_MOE_ROW(q3_K, Q3_K, 10)
    CU_MOE_ROW(q4_K, Q4_K, 11) CU_MOE_ROW(q5_K, Q5_K, 12) CU_MOE_ROW(q6_K, Q6_K, 13)
    CU_MOE_ROW(iq2_xxs, IQ2_XXS, 14) CU_MOE_ROW(iq2_xs, IQ2_XS, 15) CU_MOE_ROW(iq2_s, IQ2_S, 16)
    CU_MOE_ROW(iq3_xxs, IQ3_XXS, 17) CU_MOE_ROW(iq3_s, IQ3_S, 18) CU_MOE_ROW(iq4_xs, IQ4_XS, 19)
#undef CU_MOE_ROW
#define CU_MOE_SP_ROW(n, T, i) {"moe_" #n "_split_deq_wmma_f16", CLL_KOP_MOE, CLL_TYPE_##T, 0, "layout=1(split) " CU_MOE_PARAMS, CLL_CU_LAYOUT_SPLIT, 1, cu_row_ok, true, true, &k_moe_sp_impl[i]},
    CU_MOE_SP_ROW(q4_0, Q4_0, 0) CU_MOE_SP_ROW(q8_0, Q8_0, 1) CU_MOE_SP_ROW(q5_1, Q5_1, 2) CU_MOE_SP_ROW(q4_K, Q4_K, 3)
    CU_MOE_SP_ROW(q6_K, Q6_K, 4) CU_MOE_SP_ROW(iq4_xs, IQ4_XS, 5) CU_MOE_SP_ROW(iq3_s, IQ3_S, 6)
    CU_MOE_SP_ROW(q5_K, Q5_K, 7) CU_MOE_SP_ROW(q3_K, Q3_K, 8) CU_MOE_SP_ROW(q4_1, Q4_1, 9)
    CU_MOE_SP_ROW(q5_0, Q5_0, 10) CU_MOE_SP_ROW(iq4_nl, IQ4_NL, 11) CU_MOE_SP_ROW(q2_K, Q2_K, 12)
#undef CU_MOE_SP_ROW
};
static const cll_kernel_table k_table = {"cuda", k_rows, sizeof k_rows / sizeof k_rows[0]};

static void fill_impls(void) {
    for (int i = 0; i < CU_NTYPES; i++) {
        const cll_cu_fmt_ops *o = cll_cu_fmt_ops_get(k_types[i]);
        k_gemv_impl[i].gemv = o ? o->gemv : NULL;
        k_gemv_impl[i].needs_q8 = o && o->qk > 1;
        k_gemv_impl[i].layout = 0;
        k_gemv_impl[i].acts_out = o && o->qk == 1; /* the float rows (k_gemv_f_gu) */
        k_moe_impl[i].moe = o ? o->moe : NULL;
        k_moe_impl[i].layout = 0;
    }
    for (int i = 0; i < CU_NSP; i++) {
        const cll_cu_sp_ops *o = cll_cu_sp_ops_get(k_sp_types[i]);
        k_sp_impl[i].gemv = o ? o->gemv : NULL;
        k_sp_impl[i].needs_q8 = true;
        k_sp_impl[i].layout = CLL_CU_LAYOUT_SPLIT;
        k_sp_impl[i].routes = true; /* k_gemv_sp / k_gemv_spx honour cll_cu_route */
        k_spx2_impl[i] = k_sp_impl[i];
        k_spx2_impl[i].gemv = o ? o->gemv_r2 : NULL;
        k_spx2_impl[i].acts = true; /* k_gemv_spx stages its input: it can compute it (act_in) */
        /* a row of the same kind as base (its flags) with another kernel */
        auto like = [i](cll_cu_gemv_impl *dst, const cll_cu_gemv_impl &base, cll_cu_gemv_fn fn) {
            dst[i] = base;
            dst[i].gemv = fn;
        };
        like(k_spx4_impl, k_spx2_impl[i], o ? o->gemv_r4 : NULL);
        like(k_spx4p_impl, k_spx2_impl[i], o ? o->gemv_r4p : NULL);
        like(k_spu2_impl, k_sp_impl[i], o ? o->gemv_u2 : NULL);
        like(k_spu2b8_impl, k_sp_impl[i], o ? o->gemv_u2b8 : NULL);
        like(k_spu1b8_impl, k_sp_impl[i], o ? o->gemv_u1b8 : NULL);
        like(k_spu4b6_impl, k_sp_impl[i], o ? o->gemv_u4b6 : NULL);
        like(k_spx4b6p_impl, k_spx2_impl[i], o ? o->gemv_r4b6p : NULL);
        like(k_spx2u1p_impl, k_spx2_impl[i], o ? o->gemv_r2u1p : NULL);
        like(k_spr2g_impl, k_sp_impl[i], o ? o->gemv_r2g : NULL);
        like(k_spr2u1g_impl, k_sp_impl[i], o ? o->gemv_r2u1g : NULL);
        like(k_spr2pre_impl, k_sp_impl[i], o ? o->gemv_r2pre : NULL);
        like(k_spr2pre1w_impl, k_sp_impl[i], o ? o->gemv_r2pre1w : NULL);
        like(k_spr2ks4_impl, k_sp_impl[i], o ? o->gemv_r2ks4 : NULL);
        /* the R = 2 rows (w4r2ks4: its base form, one of them, on the gate|up rows) activate a gate|up pair
         * themselves (act_out: k_gemv_sp_act) */
        for (cll_cu_gemv_impl *r2 : {k_spr2g_impl, k_spr2u1g_impl, k_spr2pre_impl, k_spr2pre1w_impl, k_spr2ks4_impl})
            r2[i].acts_out = r2[i].gemv != NULL;
        k_tma_impl[i] = k_sp_impl[i];
        k_tma_impl[i].gemv = cll_cu_sp_tma_gemv(k_sp_types[i]);
        k_tma_impl[i].routes = false;
        k_tma_impl[i].acts = false;
        k_few_impl[i] = k_tma_impl[i];
        k_few_impl[i].gemv = cll_cu_sp_few_gemv(k_sp_types[i]);
        k_few_impl[i].few = true;
        k_mma_impl[i] = k_few_impl[i];
        k_mma_impl[i].gemv = cll_cu_sp_mma_gemv(k_sp_types[i]);
        k_fused_impl[i].fgemm = cll_cu_sp_fused_gemm(k_sp_types[i]);
        k_fused_impl[i].layout = CLL_CU_LAYOUT_SPLIT;
        k_moe_sp_impl[i].moe = o ? o->moe : NULL;
        k_moe_sp_impl[i].layout = CLL_CU_LAYOUT_SPLIT;
    }
}

const cll_kernel_table *cll_cu_kernel_table(void) {
    static std::once_flag once;
    std::call_once(once, fill_impls);
    return &k_table;
}

extern "C" const struct cll_kernel_table *cll_cuda_kernel_table(void) { return cll_cu_kernel_table(); }
extern "C" bool cll_cuda_gemv_tile_pinned(uint32_t type, int layout, int64_t rows, int64_t cols) {
    return cll_cu_gemv_tile_pinned(type, layout, rows, cols);
}

/* the shape a row lookup asks about: a weight of this type, rows x cols, n_tokens (0: any) */
static cll_kernel_shape cu_shape(uint32_t type, int64_t rows, int64_t cols, int64_t n_tokens) {
    cll_kernel_shape sh = {};
    sh.wtype = type;
    sh.rows = rows;
    sh.cols = cols;
    sh.n_tokens = n_tokens;
    return sh;
}

const cll_cu_gemv_impl *cll_cu_gemv_default(uint32_t type, int64_t rows, int64_t cols) {
    const cll_kernel_table *t = cll_cu_kernel_table();
    cll_kernel_shape sh = cu_shape(type, rows, cols, 0);
    /* the default row unless an override (CLLAMA_KERNEL, a tune sidecar) names another */
    const cll_kernel_row *r = cll_kernels_select(t, CLL_KOP_GEMV, &sh, -1, NULL);
    return r ? (const cll_cu_gemv_impl *)r->impl : NULL;
}

const cll_cu_gemv_impl *cll_cu_gemv_few_default(uint32_t type, int layout, int64_t rows, int64_t cols, int n_tokens,
                                                bool *forced) {
    const cll_kernel_table *t = cll_cu_kernel_table();
    cll_kernel_shape sh = cu_shape(type, rows, cols, n_tokens); /* its class: n2-8 */
    const cll_kernel_row *r = cll_kernels_select(t, CLL_KOP_GEMV, &sh, layout, forced);
    const cll_cu_gemv_impl *impl = r ? (const cll_cu_gemv_impl *)r->impl : NULL;
    return impl && impl->few && impl->gemv ? impl : NULL;
}

bool cll_cu_gemv_tile_pinned(uint32_t type, int layout, int64_t rows, int64_t cols) {
    const cll_kernel_table *t = cll_cu_kernel_table();
    cll_kernel_shape sh = cu_shape(type, rows, cols, CLL_CU_FEW_MAX + 1); /* its class: n9-64 */
    bool forced = false;
    const cll_kernel_row *r = cll_kernels_select(t, CLL_KOP_GEMV, &sh, layout, &forced);
    const cll_cu_gemv_impl *impl = r ? (const cll_cu_gemv_impl *)r->impl : NULL;
    return forced && impl && impl->gemv && impl->gemv == cll_cu_sp_mma_gemv(type);
}

const cll_cu_gemv_impl *cll_cu_gemv_mma_row(uint32_t type, int layout, int64_t rows, int64_t cols) {
    const cll_kernel_table *t = cll_cu_kernel_table();
    cll_kernel_shape sh = cu_shape(type, rows, cols, CLL_CU_FEW_MAX);
    for (size_t i = 0; i < t->n; i++) {
        const cll_kernel_row *r = &t->rows[i];
        const cll_cu_gemv_impl *impl = (const cll_cu_gemv_impl *)r->impl;
        if (r->wtype == type && r->layout == layout && (r->op & CLL_KOP_GEMV) && impl && impl->few && impl->gemv &&
            impl->gemv == cll_cu_sp_mma_gemv(type) && cll_kernel_row_supported(r, &sh))
            return impl;
    }
    return NULL;
}

const cll_cu_gemv_impl *cll_cu_gemm_fused_row(uint32_t type, int layout, int64_t rows, int64_t cols) {
    const cll_kernel_table *t = cll_cu_kernel_table();
    cll_kernel_shape sh = cu_shape(type, rows, cols, 0);
    for (size_t i = 0; i < t->n; i++) {
        const cll_kernel_row *r = &t->rows[i];
        const cll_cu_gemv_impl *impl = (const cll_cu_gemv_impl *)r->impl;
        if (r->wtype == type && r->layout == layout && (r->op & CLL_KOP_GEMM) && impl && impl->fgemm &&
            cll_kernel_row_supported(r, &sh))
            return impl;
    }
    return NULL;
}

const cll_cu_gemv_impl *cll_cu_moe_default(uint32_t type, int layout, int64_t rows, int64_t cols) {
    const cll_kernel_table *t = cll_cu_kernel_table();
    cll_kernel_shape sh = cu_shape(type, rows, cols, 0);
    const cll_kernel_row *r = cll_kernels_select(t, CLL_KOP_MOE, &sh, layout, NULL);
    const cll_cu_gemv_impl *impl = r ? (const cll_cu_gemv_impl *)r->impl : NULL;
    return impl && impl->moe ? impl : NULL;
}
