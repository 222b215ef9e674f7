/* cpu/kern_lowq_avx2: the AVX2 decode rows (see kern_lowq.h): a one-row GEMV with
 * SIMD decoders, and the d8 GEMM (8 rows decoded once per token chunk, 8x4 tiles of
 * vpmaddubsw against 4-byte activation broadcasts, int16 scale pairs by vpmaddwd). */
#include "cpu/kern_lowq.h"
#include "cpu/kern_plain_avx2.h"

INLINE int lq_hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* ---- IQ3_S repacked for AVX2 ("x3" layout) ----------------------------------------------
 * IQ3_S decode on AVX2 is a vpgatherdd of the 512-entry grid per 8 groups of 4 (no byte
 * permute wide enough to index it, unlike VBMI's vpermi2b): decode-bound, ~15 tok/s on a 1B
 * file where the K-quants run at the memory roofline. Every IQ3_S level is v = +-m with m odd
 * in 1..15, so u = v + 16 is odd in 1..31 and w = (u - 1) / 2 fits a nibble: the load-time
 * pack resolves the grid and the signs once into nibbles (Q4_K's order: sub-blocks 2q and
 * 2q+1 share 32 bytes, low and high nibble), keeping d and the 4-bit scales: 136 bytes per
 * super-block instead of 110. The decoder then yields the same u, scales and corrections as
 * dec_iq3_s, so the rows below are bit for bit the plain-layout AVX2 rows. */
/* X3_BYTES, X3_NIB and dec_iq3_x are in cpu/kern_lowq.h (the AVX-512 z16 GEMM decodes x3 too) */

size_t cll_kern_iq3x_size(int64_t rows, int64_t cols) { return (size_t)rows * (size_t)(cols / 256) * X3_BYTES; }

void cll_kern_iq3x_pack(const void *src, void *dst, int64_t rows, int64_t cols) {
    const int64_t nb = cols / 256;
    const cll_block_iq3_s *x = src;
    uint8_t *o = dst;
    for (int64_t i = 0; i < rows * nb; i++, x++, o += X3_BYTES) {
        memset(o, 0, X3_BYTES);
        memcpy(o, &x->d, 2);
        memcpy(o + 2, x->scales, 4);
        uint8_t *nib = o + X3_NIB;
        for (int ib = 0; ib < 8; ib++)
            for (int k = 0; k < 8; k++) {
                const uint32_t g = cll_iq3s_grid[x->qs[8 * ib + k] | (((x->qh[ib] >> k) & 1) << 8)];
                for (int e = 0; e < 4; e++) {
                    const int j = 4 * k + e, m = (int)((g >> (8 * e)) & 0xff);
                    const int u = 16 + (((x->signs[4 * ib + j / 8] >> (j % 8)) & 1) ? -m : m);
                    nib[32 * (ib >> 1) + j] |= (uint8_t)(((u - 1) / 2) << (4 * (ib & 1)));
                }
            }
    }
}

/* ---- GEMV: decode one super-block, dot it with one token ----------------------------- */

/* int16 scales rearranged once per block: evens (sub 2c) in the low lane, odds in the high
 * lane, so chunk c's pair is one in-lane vpshufb of word c */
INLINE __m256i lq_scale_eo(__m256i sc) {
    const __m256i eo = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0, 1, 4, 5, 8, 9, 12, 13,
                                        2, 3, 6, 7, 10, 11, 14, 15);
    return _mm256_permute4x64_epi64(_mm256_shuffle_epi8(sc, eo), 0xD8);
}
INLINE __m256i lq_scale_pair(__m256i e, int c) {
    return _mm256_shuffle_epi8(e, _mm256_set1_epi16((short)(0x0100 * (2 * c + 1) + 2 * c)));
}

INLINE float dot_dec(const kdec256 *k, const cll_block_q8_K *a) {
    __m256i isum = _mm256_setzero_si256();
    const __m256i e = lq_scale_eo(lq_ld(k->sc));
#pragma GCC unroll 8
    for (int c = 0; c < 8; c++) {
        const __m256i p = _mm256_maddubs_epi16(lq_ld(k->u + 32 * c), lq_ld(a->qs + 32 * c));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, lq_scale_pair(e, c)));
    }
    const int corr = lq_hsum_epi32(_mm256_madd_epi16(lq_ld(k->mc), lq_ld(a->bsums)));
    return a->d * (k->d * (float)lq_hsum_epi32(isum) - k->fm * (float)corr);
}

/* one instance per type (T constant; x3: IQ3_S in the x3 layout): no call in the block loop, the
 * sum stays in a register */
INLINE void run_gemv(const kern_args *a, int64_t r0, int64_t r1, const uint32_t T, const int x3) {
    const int64_t nb = a->cols / 256;
    const size_t bsz = x3 ? X3_BYTES : cll_type_traits_get(T)->type_size, rb = x3 ? (size_t)nb * X3_BYTES : a->w_row_bytes;
    kdec256 k;
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = a->w + (size_t)r * rb;
        if (r + 1 < r1) _mm_prefetch((const char *)(w + rb), _MM_HINT_T0);
        for (int64_t t = 0; t < a->n; t++) {
            const cll_block_q8_K *y = (const cll_block_q8_K *)(a->act + t * a->act_stride);
            float s = 0;
            for (int64_t b = 0; b < nb; b++) {
                if (x3) dec_iq3_x(w + (size_t)b * bsz, &k);
                else lq_decode(T, w, b, bsz, &k);
                s += dot_dec(&k, y + b);
            }
            a->y[t * a->ldy + r] = s;
        }
    }
}

/* ---- IQ4_XS GEMV: the token's q8_K values are regrouped once per call so that one 32-byte
 * load of the weights (two sub-blocks) gives, by nibble, the two vectors to dot: chunk 2k of
 * the regrouped block = [a 0..15 of sub 2k | a 0..15 of sub 2k+1], chunk 2k+1 the same with
 * 16..31. Then ggml's sign trick (|q| x sign(a, q): IQ4_XS levels -127..113 overflow an
 * offset u = q + 128 in vpmaddubsw) and one int16 scale vector per sub-block pair. */
#define IQ4_ACT_MAX 65536 /* cols regrouped at once (wider rows: the plain dot) */
static _Thread_local int8_t g_iq4act[IQ4_ACT_MAX] __attribute__((aligned(64)));


INLINE void iq4_regroup(const cll_block_q8_K *y, int64_t nb, int8_t *o) {
    for (int64_t b = 0; b < nb; b++)
        for (int k = 0; k < 4; k++) {
            const __m256i A = lq_ld(y[b].qs + 64 * k), B = lq_ld(y[b].qs + 64 * k + 32);
            lq_st(o + 256 * b + 64 * k, _mm256_permute2x128_si256(A, B, 0x20));
            lq_st(o + 256 * b + 64 * k + 32, _mm256_permute2x128_si256(A, B, 0x31));
        }
}

INLINE float dot_iq4_xs_rg(const cll_block_iq4_xs *x, const cll_block_q8_K *y, const int8_t *ar, int64_t nb) {
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)cll_kvalues_iq4nl));
    const __m256i m4 = _mm256_set1_epi8(15);
    const __m256i sh_l = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28), sh_h = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        uint32_t sl;
        memcpy(&sl, x[b].scales_l, 4);
        const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)sl), sh_l), _mm256_set1_epi32(15));
        const __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(x[b].scales_h), sh_h), _mm256_set1_epi32(3));
        const __m256i ls = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
        const __m256i lw = _mm256_or_si256(_mm256_and_si256(ls, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(ls, 16));
        const int8_t *a = ar + 256 * b;
        __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            const __m256i v = lq_ld(x[b].qs + 32 * k);
            const __m256i q0 = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, m4));
            const __m256i q1 = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
            const __m256i p0 = _mm256_maddubs_epi16(_mm256_abs_epi8(q0), _mm256_sign_epi8(lq_ld(a + 64 * k), q0));
            const __m256i p1 = _mm256_maddubs_epi16(_mm256_abs_epi8(q1), _mm256_sign_epi8(lq_ld(a + 64 * k + 32), q1));
            const __m256i s = _mm256_permutevar8x32_epi32(lw, _mm256_setr_epi32(2 * k, 2 * k, 2 * k, 2 * k, 2 * k + 1, 2 * k + 1,
                                                                              2 * k + 1, 2 * k + 1));
            isum = _mm256_add_epi32(isum, _mm256_add_epi32(_mm256_madd_epi16(p0, s), _mm256_madd_epi16(p1, s)));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[b].d) * y[b].d), _mm256_cvtepi32_ps(isum), acc);
    }
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

static void run_gemv_iq4_xs(const kern_args *a, int64_t r0, int64_t r1) {
    const int64_t nb = a->cols / 256;
    for (int64_t t = 0; t < a->n; t++) {
        const uint8_t *act = a->act + t * a->act_stride;
        const int rg = a->cols <= IQ4_ACT_MAX;
        if (rg) iq4_regroup((const cll_block_q8_K *)act, nb, g_iq4act);
        for (int64_t r = r0; r < r1; r++) {
            const uint8_t *w = a->w + (size_t)r * a->w_row_bytes;
            if (r + 1 < r1) _mm_prefetch((const char *)(w + a->w_row_bytes), _MM_HINT_T0);
            a->y[t * a->ldy + r] = rg ? dot_iq4_xs_rg((const cll_block_iq4_xs *)w, (const cll_block_q8_K *)act, g_iq4act, nb)
                                      : cll_kern_dot_iq4_xs_avx2(w, act, a->cols);
        }
    }
}

void cll_kern_run_lowq_gemv_avx2(const kern_args *a, int64_t r0, int64_t r1) {
    switch (a->wtype) {
    case CLL_TYPE_Q2_K: run_gemv(a, r0, r1, CLL_TYPE_Q2_K, 0); break;
    case CLL_TYPE_Q3_K: run_gemv(a, r0, r1, CLL_TYPE_Q3_K, 0); break;
    case CLL_TYPE_IQ3_S: run_gemv(a, r0, r1, CLL_TYPE_IQ3_S, 0); break;
    /* formats' unpacker as the decoder (the scalar row's own unpack), SIMD dot */
    case CLL_TYPE_IQ2_XXS: run_gemv(a, r0, r1, CLL_TYPE_IQ2_XXS, 0); break;
    case CLL_TYPE_IQ2_XS: run_gemv(a, r0, r1, CLL_TYPE_IQ2_XS, 0); break;
    case CLL_TYPE_IQ2_S: run_gemv(a, r0, r1, CLL_TYPE_IQ2_S, 0); break;
    case CLL_TYPE_IQ3_XXS: run_gemv(a, r0, r1, CLL_TYPE_IQ3_XXS, 0); break;
    case CLL_TYPE_IQ4_XS: run_gemv_iq4_xs(a, r0, r1); break;
    default: break;
    }
}

bool cll_kern_lowq_gemv_avx2_has(uint32_t wtype) { return cll_kern_lowq_d8_avx2_has(wtype); }

/* ---- GEMM: d8 records, 8 rows x T tokens --------------------------------------------- */

/* small: u <= 31, so the 4 vpmaddubsw sums of a 16-element sub-block fit int16 */
/* sgn (IQ4_XS): the record holds the signed levels v (off 0, no correction); vpmaddubsw gets
 * |v| x sign(a, v) (ggml's trick: |a| <= 127 for q8_K, so a pair sum <= 32258 fits int16) */
INLINE void tile_d8(const uint8_t *recs, int64_t nb, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                    const int T, const int small, const int add, const int sgn) {
    __m256 acc[4];
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) acc[t] = add ? _mm256_loadu_ps(y + t * ldy) : _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *rec = recs + b * KD8_REC;
        const __m256i *q = (const __m256i *)rec, *sc = (const __m256i *)(rec + KD8_SC);
        __m256i isum[4];
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) isum[t] = _mm256_setzero_si256();
        for (int j = 0; j < 16; j++) {
            const __m256i v0 = lq_ld(q + 4 * j), v1 = lq_ld(q + 4 * j + 1), v2 = lq_ld(q + 4 * j + 2),
                          v3 = lq_ld(q + 4 * j + 3), s = lq_ld(sc + j);
            const __m256i w0 = sgn ? _mm256_abs_epi8(v0) : v0, w1 = sgn ? _mm256_abs_epi8(v1) : v1;
            const __m256i w2 = sgn ? _mm256_abs_epi8(v2) : v2, w3 = sgn ? _mm256_abs_epi8(v3) : v3;
#pragma GCC unroll 4
            for (int t = 0; t < T; t++) {
                const int8_t *aq = ((const cll_block_q8_K *)(act + t * stride) + b)->qs + 16 * j;
                __m256i a0 = lq_bcast32(aq), a1 = lq_bcast32(aq + 4), a2 = lq_bcast32(aq + 8), a3 = lq_bcast32(aq + 12);
                if (sgn) {
                    a0 = _mm256_sign_epi8(a0, v0);
                    a1 = _mm256_sign_epi8(a1, v1);
                    a2 = _mm256_sign_epi8(a2, v2);
                    a3 = _mm256_sign_epi8(a3, v3);
                }
                const __m256i p0 = _mm256_maddubs_epi16(w0, a0), p1 = _mm256_maddubs_epi16(w1, a1);
                const __m256i p2 = _mm256_maddubs_epi16(w2, a2), p3 = _mm256_maddubs_epi16(w3, a3);
                if (small) {
                    const __m256i p = _mm256_add_epi16(_mm256_add_epi16(p0, p1), _mm256_add_epi16(p2, p3));
                    isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(p, s));
                } else {
                    const __m256i e = _mm256_add_epi32(_mm256_madd_epi16(p0, s), _mm256_madd_epi16(p1, s));
                    const __m256i f = _mm256_add_epi32(_mm256_madd_epi16(p2, s), _mm256_madd_epi16(p3, s));
                    isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(e, f));
                }
            }
        }
        const __m256 dw = _mm256_loadu_ps((const float *)(rec + KD8_D)), fw = _mm256_loadu_ps((const float *)(rec + KD8_FM));
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) {
            const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
            const __m256 da = _mm256_set1_ps(ab->d);
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(isum[t]), acc[t]);
            if (!sgn) acc[t] = _mm256_fnmadd_ps(_mm256_mul_ps(fw, da), _mm256_cvtepi32_ps(lq_corr8(rec, ab)), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

static _Thread_local uint8_t g_d8[LQ_SEG * KD8_REC] __attribute__((aligned(64)));

/* IQ4_XS signed decode (off 0, no correction: the sign trick of tile_d8 instead of u = v + 128,
 * whose pair sums overflow vpmaddubsw): levels -127..113, scale ls - 32 per 32 */
INLINE void dec_iq4_xs_s(const uint8_t *blk, kdec256 *o) {
    const cll_block_iq4_xs *x = (const cll_block_iq4_xs *)blk;
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)cll_kvalues_iq4nl));
#pragma GCC unroll 8
    for (int ib = 0; ib < 8; ib++) lq_st(o->u + 32 * ib, _mm256_shuffle_epi8(lut, nibbles32(x->qs + 16 * ib)));
    uint32_t sl;
    memcpy(&sl, x->scales_l, 4);
    const uint32_t sh = x->scales_h;
    for (int ib = 0; ib < 8; ib++) {
        const int16_t ls = (int16_t)((((sl >> (4 * ib)) & 15) | (((sh >> (2 * ib)) & 3) << 4)) - 32);
        o->sc[2 * ib] = o->sc[2 * ib + 1] = ls;
        o->mc[2 * ib] = o->mc[2 * ib + 1] = 0;
    }
    o->d = h2f(x->d);
    o->fm = 0;
}

static void build_d8_iq4_xs_s(const uint8_t *w, size_t row_bytes, int64_t b, uint8_t *rec) {
    kdec256 k[8];
    for (int r = 0; r < 8; r++) dec_iq4_xs_s(w + (size_t)r * row_bytes + (size_t)b * sizeof(cll_block_iq4_xs), &k[r]);
    lq_interleave_d8(k, rec, 0);
}

/* tokens [t0, t1) of one 8-row group over nbs decoded blocks (act: the first block's) */
INLINE void sweep_d8(const uint8_t *recs, int64_t nbs, const uint8_t *act, size_t st, float *y, int64_t ldy,
                     int64_t t0, int64_t t1, const int small, const int add, const int sgn) {
    int64_t t = t0;
    for (; t + 4 <= t1; t += 4) tile_d8(recs, nbs, act + t * st, st, y + t * ldy, ldy, 4, small, add, sgn);
    const uint8_t *at = act + t * st;
    float *yt = y + t * ldy;
    switch (t1 - t) {
    case 3: tile_d8(recs, nbs, at, st, yt, ldy, 3, small, add, sgn); break;
    case 2: tile_d8(recs, nbs, at, st, yt, ldy, 2, small, add, sgn); break;
    case 1: tile_d8(recs, nbs, at, st, yt, ldy, 1, small, add, sgn); break;
    default: break;
    }
}

/* token chunk: the activations of a chunk (plus the group's d8 records, <= 184 KiB) stay in
 * the L2 while the group sweeps them; 512 KiB of a 1 MiB (Zen4) / 2 MiB L2 */
static int64_t lq_chunk(size_t act_stride) {
    int64_t c = (int64_t)((512u * 1024u) / act_stride);
    return c < 4 ? 4 : c & ~(int64_t)3;
}

/* x3: IQ3_S in the x3 layout (rows of nb * X3_BYTES) */
INLINE void run_d8(const kern_args *a, int64_t r0, int64_t r1, const int x3) {
    const int64_t nb = a->cols / 256;
    const size_t bsz = cll_type_traits_get(a->wtype)->type_size, st = a->act_stride;
    const size_t rb = x3 ? (size_t)nb * X3_BYTES : a->w_row_bytes;
    const int small = x3 || a->wtype == CLL_TYPE_Q2_K || a->wtype == CLL_TYPE_Q3_K || a->wtype == CLL_TYPE_IQ3_S;
    const int64_t chunk = lq_chunk(st);
    const int sgn = !x3 && a->wtype == CLL_TYPE_IQ4_XS;
    for (int64_t t0 = 0; t0 < a->n; t0 += chunk) {
        const int64_t t1 = t0 + chunk < a->n ? t0 + chunk : a->n;
        for (int64_t g = r0 / 8; g < r1 / 8; g++) {
            const uint8_t *wg = a->w + (size_t)g * 8 * rb;
            for (int64_t b0 = 0; b0 < nb; b0 += LQ_SEG) {
                const int64_t nbs = nb - b0 < LQ_SEG ? nb - b0 : LQ_SEG;
                const uint8_t *act = a->act + (size_t)b0 * sizeof(cll_block_q8_K);
                float *y = a->y + g * 8;
                if (sgn) {
                    for (int64_t b = 0; b < nbs; b++) build_d8_iq4_xs_s(wg, rb, b0 + b, g_d8 + b * KD8_REC);
                    if (b0) sweep_d8(g_d8, nbs, act, st, y, a->ldy, t0, t1, 0, 1, 1);
                    else sweep_d8(g_d8, nbs, act, st, y, a->ldy, t0, t1, 0, 0, 1);
                    continue;
                }
                for (int64_t b = 0; b < nbs; b++) {
                    if (x3) {
                        kdec256 k[8];
                        for (int r = 0; r < 8; r++) dec_iq3_x(wg + (size_t)r * rb + (size_t)(b0 + b) * X3_BYTES, &k[r]);
                        lq_interleave_d8(k, g_d8 + b * KD8_REC, 0);
                    } else
                        lq_build_d8(a->wtype, wg, rb, bsz, b0 + b, g_d8 + b * KD8_REC, 0);
                }
                if (small) {
                    if (b0) sweep_d8(g_d8, nbs, act, st, y, a->ldy, t0, t1, 1, 1, 0);
                    else sweep_d8(g_d8, nbs, act, st, y, a->ldy, t0, t1, 1, 0, 0);
                } else {
                    if (b0) sweep_d8(g_d8, nbs, act, st, y, a->ldy, t0, t1, 0, 1, 0);
                    else sweep_d8(g_d8, nbs, act, st, y, a->ldy, t0, t1, 0, 0, 0);
                }
            }
        }
    }
}

void cll_kern_run_lowq_d8_avx2(const kern_args *a, int64_t r0, int64_t r1) { run_d8(a, r0, r1, 0); }

bool cll_kern_lowq_d8_avx2_has(uint32_t wtype) {
    return wtype == CLL_TYPE_Q2_K || wtype == CLL_TYPE_Q3_K || wtype == CLL_TYPE_IQ3_S || wtype == CLL_TYPE_IQ2_XXS ||
           wtype == CLL_TYPE_IQ2_XS || wtype == CLL_TYPE_IQ2_S || wtype == CLL_TYPE_IQ3_XXS || wtype == CLL_TYPE_IQ4_XS;
}

void cll_kern_run_iq3x_gemv_avx2(const kern_args *a, int64_t r0, int64_t r1) { run_gemv(a, r0, r1, CLL_TYPE_IQ3_S, 1); }
void cll_kern_run_iq3x_d8_avx2(const kern_args *a, int64_t r0, int64_t r1) { run_d8(a, r0, r1, 1); }
