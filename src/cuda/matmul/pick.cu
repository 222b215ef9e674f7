/* cuda/matmul/pick: which form serves a product site (cll_cu_pick_form) and whether the model
 * keeps its f16 prefill panels resident (cll_cu_panels_budget, cll_cu_panels_keep): pure functions of their arguments,
 * no device, no environment (the driver reads the knobs and passes them), so the host part of
 * tests/cuda_kernels_test.c checks them on a machine without a GPU.
 * Owns nothing. Rule: the driver dispatches on these answers, not on its own copies of the rules. */
#include "cuda/pick.h"

extern "C" {
#include "formats/formats.h"
#include "kernels/registry.h"
}

static bool is_float(uint32_t t) { return t == CLL_TYPE_F32 || t == CLL_TYPE_F16 || t == CLL_TYPE_BF16; }

cll_cu_form cll_cu_pick_form(const cll_cu_form_query *q) {
    if (q->n_tokens <= 1) return CLL_CU_FORM_GEMV; /* decode (experts: the gemv over mat_ids) */
    /* the weight read once for all tokens: the int8 tensor-core rows from mma_min to mma_max tokens,
     * the dp4a rows up to few_tokens; the knob few_max caps both */
    const int64_t few_max = q->few_max > 0 && q->few_max < q->few_tokens ? q->few_max : q->few_tokens;
    int64_t mma_max = q->mma_max > q->few_tokens ? q->mma_max : q->few_tokens;
    if (q->few_max > 0 && q->few_max < mma_max) mma_max = q->few_max;
    if (q->n_mat <= 1 && (q->device == CLL_KDEVICE_CPU || q->device >= CLL_KDEVICE_CUDA_SM(8, 0))) {
        if (q->fused && q->fused_min >= 1 && q->n_tokens >= q->fused_min && q->n_tokens <= q->fused_max)
            return CLL_CU_FORM_GEMM_FUSED;
        if (q->mma_min > 0 && q->n_tokens >= q->mma_min && q->n_tokens <= mma_max) return CLL_CU_FORM_GEMV_FEW_MMA;
        if (q->n_tokens <= few_max) return CLL_CU_FORM_GEMV_FEW;
    }
    if (q->n_mat > 1) {
        if (q->grouped_off || !q->grouped_row || (q->device != CLL_KDEVICE_CPU && q->device < CLL_KDEVICE_CUDA_SM(8, 0)))
            return CLL_CU_FORM_MOE_TOKENS;
        return q->resident || q->wtype == CLL_TYPE_F16 ? CLL_CU_FORM_MOE_GROUPED_F16 : CLL_CU_FORM_MOE_GROUPED;
    }
    if (is_float(q->wtype)) return CLL_CU_FORM_GEMM_DIRECT;
    return q->resident ? CLL_CU_FORM_GEMM_RESIDENT : CLL_CU_FORM_GEMM_PANEL;
}

int32_t cll_cu_attn_prefill_splits(int64_t n, int32_t n_head, int64_t keys, int64_t part_cap, int32_t n_sm) {
    if (n < 1 || n_head < 1 || keys < 1 || n_sm < 1) return 1;
    const int64_t blocks = (n + 63) / 64 * n_head, want = 3 * (int64_t)n_sm;
    if (blocks >= want) return 1;
    int64_t s = (want + blocks - 1) / blocks;
    const int64_t by_tiles = (keys + 63) / 64 / 4, by_part = part_cap / (n * n_head);
    if (s > by_tiles) s = by_tiles;
    if (s > by_part) s = by_part;
    if (s > 64) s = 64;
    return s < 1 ? 1 : (int32_t)s;
}

const char *cll_cu_form_name(cll_cu_form f) {
    switch (f) {
    case CLL_CU_FORM_GEMV: return "gemv";
    case CLL_CU_FORM_GEMV_FEW: return "gemv few tokens";
    case CLL_CU_FORM_GEMV_FEW_MMA: return "gemv few tokens, int8 tensor cores";
    case CLL_CU_FORM_GEMM_DIRECT: return "gemm direct";
    case CLL_CU_FORM_GEMM_PANEL: return "gemm streamed f16 panel";
    case CLL_CU_FORM_GEMM_RESIDENT: return "gemm resident f16 panel";
    case CLL_CU_FORM_MOE_TOKENS: return "moe token by token";
    case CLL_CU_FORM_MOE_GROUPED: return "moe grouped (decoding tiles)";
    case CLL_CU_FORM_MOE_GROUPED_F16: return "moe grouped (f16 rows)";
    case CLL_CU_FORM_GEMM_FUSED: return "gemm fused dequant tile, f16 tensor cores";
    }
    return "?";
}

int64_t cll_cu_gemm_tokens(int64_t n, int64_t cap, int32_t pad) {
    if (pad <= 1 || n <= 1) return n;
    const int64_t r = (n + pad - 1) / pad * pad;
    return r <= cap ? r : cap > n ? cap : n;
}

int cll_cu_product_parts(const uint32_t *types, const int64_t *cols, int nt, bool runs, int *starts) {
    if (nt < 1) return 0;
    bool same = true;
    for (int i = 1; i < nt; i++) same &= types[i] == types[0] && cols[i] == cols[0];
    int np = 0;
    for (int i = 0; i < nt; i++)
        if (i == 0 || (!same && (!runs || types[i] != types[i - 1] || cols[i] != cols[i - 1]))) starts[np++] = i;
    return np;
}

size_t cll_cu_panels_budget(size_t free_after, int mode, size_t cap) {
    const size_t gib = (size_t)1 << 30, spare = free_after > gib ? free_after - gib : 0;
    if (mode == 1) return free_after / 2;
    if (mode == 2) return spare;
    if (mode == 3) return cap < spare ? cap : spare;
    return 0;
}

size_t cll_cu_panels_keep(const size_t *bytes, int n, size_t budget, bool *keep) {
    size_t kept = 0;
    for (int i = 0; i < n; i++) {
        keep[i] = bytes[i] > 0 && bytes[i] <= budget - kept; /* kept <= budget throughout */
        if (keep[i]) kept += bytes[i];
    }
    return kept;
}

static int64_t cdiv64(int64_t a, int64_t b) { return (a + b - 1) / b; }

int cll_cu_few_tokens_per_launch(int64_t ng, int nb) {
    const int64_t per = ng * CLL_CU_FEW_XW * 4;
    int64_t fit = per > 0 ? CLL_CU_FEW_SMEM_MAX / per : 0;
    if (fit > CLL_CU_FEW_MAX) fit = CLL_CU_FEW_MAX;
    if (fit < 2 || nb < 1) return 0;
    return (int)cdiv64((int64_t)nb, cdiv64((int64_t)nb, fit));
}

int cll_cu_few_pick_ks_log2(int64_t rows, int64_t ng, int R, int64_t slots) {
    int best = 0;
    double best_eff = -1.0;
    if (slots < 1) slots = 1;
    for (int l = 0; l <= 2; l++) {
        if (l > 0 && ng < ((int64_t)64 << l)) break;
        const int64_t tiles = cdiv64(rows, (int64_t)(CLL_CU_FEW_WARPS >> l) * R);
        const double eff = (double)tiles / (double)(cdiv64(tiles, slots) * slots);
        if (eff > best_eff + 1e-9) {
            best_eff = eff;
            best = l;
        }
    }
    return best;
}

/* cuda_kbench on the H200 (2026-12-02, % of 4.3 TB/s over the 7B shapes, weights read once per
 * launch), dp4a row vs mma row: q4_0 2 tokens 59.6 vs 41.3, 4: 43.7 vs 38.4, 8: 26.1 vs 34.4 (the
 * l2-7b Q4_0 file at 8 sequences: 1797 vs 2177 tok/s); q4_K 44.4 vs 33.3, 29.0 vs 31.3, 16.3 vs 28.8;
 * q6_K at 8 tokens 24.9 vs 20.1 (the dp4a row throughout). Q8_0: the dp4a row was not measured beside
 * it, so it stays on the dp4a row. */
int32_t cll_cu_mma_min_tokens(uint32_t wtype) {
    switch (wtype) {
    case CLL_TYPE_Q4_0: return 6;
    case CLL_TYPE_Q4_K: return 4;
    case CLL_TYPE_Q8_0:
    case CLL_TYPE_Q6_K: return CLL_CU_FEW_MAX + 1; /* the tile beyond the dp4a rows' 8 tokens */
    default: return 0;
    }
}

/* H200, l2-7b, speed_tg with the fused rows from 2 tokens vs the default forms (same call, 6d44e80):
 * Q4_K_M 2 601.8 / 692.8, 4 1124.6 / 1041.5, 8 1954.6 / 1698.6; Q4_0 2 673.0 / 867.4, 4 1254.6 /
 * 1399.2, 8 2152.5 / 2144.7 (the K-quant file's Q4_K and Q6_K weights took the fused rows together) */
int32_t cll_cu_fused_min_tokens(uint32_t wtype) {
    return wtype == CLL_TYPE_Q4_K || wtype == CLL_TYPE_Q6_K ? 4 : CLL_CU_FUSED_MIN;
}

int cll_cu_mma_tile_ks(int64_t tiles, int64_t nchunks, int64_t slots, int nt, int64_t rows, int64_t ws_floats,
                       int n_tickets) {
    if (tiles < 1 || nt < 1 || rows < 1 || ws_floats <= 0 || tiles > n_tickets || 4 * tiles >= 3 * slots) return 1;
    int64_t ks = slots / tiles;
    if (ks > nchunks / 3) ks = nchunks / 3;
    while (ks > 1 && ks * nt * rows > ws_floats) ks--;
    return ks < 2 ? 1 : (int)ks;
}

int cll_cu_fused_ks(int64_t tiles, int64_t nchunks, int64_t slots, int nt, int64_t rows, int64_t ws_floats,
                    int n_tickets) {
    if (tiles < 1 || nt < 1 || rows < 1 || slots < 1) return 1;
    int best = 1;
    double best_eff = (double)tiles / (double)(cdiv64(tiles, slots) * slots);
    for (int ks = 2; ks <= 16 && ks <= nchunks / 2; ks++) {
        if (ws_floats <= 0 || tiles > n_tickets || (int64_t)ks * nt * rows > ws_floats) break;
        const int64_t units = tiles * ks;
        const double eff = (double)units / (double)(cdiv64(units, slots) * slots);
        if (eff > best_eff + 0.02) {
            best = ks;
            best_eff = eff;
        }
    }
    return best;
}
int cll_cu_attn_heads_per_block(int32_t n_head, int32_t n_kv, int32_t n_chunks, int64_t n_rows, int32_t min_blocks) {
    if (n_kv <= 0 || n_head < n_kv) return 1;
    const int G = n_head / n_kv, gq = G < 8 ? G : 8;
    int hg = gq <= 1 ? 1 : gq <= 2 ? 2 : gq <= 4 ? 4 : 8;
    while (hg > 1 && (int64_t)n_kv * ((G + hg - 1) / hg) * n_chunks * n_rows < min_blocks) hg /= 2;
    return hg;
}

int32_t cll_cu_attn_min_chunk(int32_t want, int64_t pairs, int32_t n_sm) {
    if (want > 0) return want;
    if (n_sm < 1) return CLL_CU_ATTN_MIN_CHUNK; /* the device not known: the narrow floor */
    return pairs >= 2 * (int64_t)n_sm ? CLL_CU_ATTN_MIN_CHUNK_WIDE : CLL_CU_ATTN_MIN_CHUNK;
}

int cll_cu_attn_loads(int32_t want, int32_t hg) { return want == 8 && hg <= 2 ? 8 : 4; }

bool cll_cu_attn_capped(int want, int64_t blocks, int32_t n_sm) {
    if (want == 0 || want == 1) return want == 1;
    return n_sm > 0 && blocks > (int64_t)CLL_CU_ATTN_UNCAPPED_PER_SM * n_sm;
}

int32_t cll_cu_attn_kv_pf_keys(int64_t pairs, int32_t n_sm, int32_t full) {
    const bool wide = n_sm > 0 && pairs > (int64_t)CLL_CU_ATTN_UNCAPPED_PER_SM * n_sm;
    return wide && full > CLL_CU_ATTN_KV_PF_WIDE ? CLL_CU_ATTN_KV_PF_WIDE : full;
}

int cll_cu_attn_warps(int32_t want, int64_t blocks, int32_t n_sm, int32_t hd, int32_t hg, bool f16) {
    auto fits = [&](int w) { return w == 4 || (f16 && (int64_t)w * hg * hd <= 8192); };
    if ((want == 4 || want == 8 || want == 16) && fits(want)) return want;
    if (n_sm < 1) n_sm = 1;
    const int w = blocks <= n_sm ? 16 : blocks <= 4 * (int64_t)n_sm ? 8 : 4;
    return fits(w) ? w : fits(8) && w > 8 ? 8 : 4;
}

int32_t cll_cu_attn_active_chunks(int32_t n_chunks, int64_t blocks_per_chunk, int32_t n_sm, int32_t per_sm) {
    if (n_chunks < 1) return 1;
    if (per_sm <= 0 || blocks_per_chunk < 1 || n_sm < 1) return n_chunks;
    const int64_t cap = (int64_t)per_sm * n_sm / blocks_per_chunk;
    return cap < 1 ? 1 : cap < n_chunks ? (int32_t)cap : n_chunks;
}

int cll_cu_attn_form(int want, bool f16, int32_t n_ctx, int64_t n_rows, int hd, int group) {
    if (!f16) return CLL_CU_ATTN_SPLIT;
    if (want == CLL_CU_ATTN_STREAM_TC || cll_cu_attn_form_tma(want)) return hd <= 128 ? want : CLL_CU_ATTN_STREAM;
    if (want == CLL_CU_ATTN_SPLIT || want == CLL_CU_ATTN_STREAM) return want;
    if (n_rows != 1 || n_ctx < CLL_CU_ATTN_STREAM_MIN_CTX) return CLL_CU_ATTN_SPLIT;
    if (hd > 128) return CLL_CU_ATTN_STREAM;
    if (CLL_CU_ATTN_TMA_AUTO && group == 1) return CLL_CU_ATTN_STREAM_TMA_TK;
    return CLL_CU_ATTN_TC_AUTO ? CLL_CU_ATTN_STREAM_TC : CLL_CU_ATTN_STREAM;
}

bool cll_cu_attn_tma_serves(bool paged, bool has_maps, int hd) { return !paged && has_maps && (hd == 64 || hd == 128); }

int cll_cu_attn_stream_ns(int want, int hd, int group, int smem_optin) {
    if (hd != 128 || smem_optin < CLL_CU_ATTN_NS_DEEP_SMEM) return 0;
    if (want == 0 || want == CLL_CU_ATTN_NS_DEEP) return want;
    return group > 1 ? CLL_CU_ATTN_NS_DEEP : 0;
}

bool cll_cu_attn_stream_wi(int want, int hg) {
    if (want == 0 || want == 1) return want == 1;
    return hg == 1;
}

bool cll_cu_attn_stream_pw(int want) {
    if (want == 0 || want == 1) return want == 1;
    return CLL_CU_ATTN_PW_AUTO;
}

bool cll_cu_gu_actq(int want, uint32_t type) {
    if (want == 0 || want == 1) return want == 1;
    return type != CLL_TYPE_Q8_0;
}

bool cll_cu_sp_pre(int pre, int64_t ng, int64_t rows, int64_t nb, int u, int minb, int32_t n_sm, bool experts) {
    if (pre <= 0 || experts || ng <= 0 || ng > 32 * (int64_t)u) return false;
    return pre == 1 || (rows + 7) / 8 * nb <= (int64_t)minb * n_sm;
}

bool cll_cu_sp_ks(int64_t ng, int ks, int u, bool experts) {
    return !experts && ng > 128 && ng <= 32 * (int64_t)ks * u;
}

bool cll_cu_gemv_f_pre(int64_t nvec, int64_t blocks, int32_t n_sm, int32_t hold, int mode) {
    const bool fits = nvec > 0 && hold > 0 && nvec <= 32 * (int64_t)hold && blocks > 0;
    return mode == 0 ? false : mode == 2 ? fits : fits && blocks <= n_sm;
}
