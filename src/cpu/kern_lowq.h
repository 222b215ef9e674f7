/* cpu/kern_lowq: the "decode" rows of the low-bit 256-element formats (Q2_K, Q3_K and the
 * i-quants IQ2_XXS/IQ2_XS/IQ2_S/IQ3_XXS/IQ3_S, IQ4_XS on VNNI), on the file layout.
 * A super-block is first decoded into unsigned bytes u = v + off (v the signed quant of
 * formats/dot_unpack.h, off a per-type constant), a signed int16 scale per 16 elements and
 * one correction per 16 elements (off * sc, or the Q2_K min) weighted by the activation
 * bsums; the integer dot is then vpmaddubsw / vpdpbusd on u, with no sign tricks:
 *   x . a = d * da * (sum_j sc_j * (u_j . a_j) - corr) , corr = sum_j mc_j * bsum_j (x fm/d)
 * GEMV (n == 1): one row at a time, the block decoded into L1 and dotted at once.
 * GEMM (n > 1):  8 rows are decoded once per token chunk into a "d8" record (the r8 byte
 * interleave of kern_r8_pack.c, built in a per-thread buffer) and swept by 8x4 tiles, so the
 * decode (grid lookups, sign expansion) is paid once per chunk, not once per token.
 * Owns nothing (the d8 buffer is per thread, static). Rule: include only from files
 * compiled with the AVX2 (or AVX-512) flag set. */
#ifndef CLL_CPU_KERN_LOWQ_H
#define CLL_CPU_KERN_LOWQ_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "cpu/kern_avx2_util.h"
#include "cpu/kern_common.h"
#include "formats/dot_unpack.h"
#include "formats/iq_tables.h"

/* one decoded super-block of one row */
typedef struct {
    uint8_t u[256];  /* v + off */
    int16_t sc[16];  /* scale per 16 elements */
    int16_t mc[16];  /* correction weights per 16 elements (times bsum, times fm) */
    float d, fm;     /* x . a = da * (d * sum sc u.a - fm * sum mc bsum) */
} kdec256;

/* d8 record: 8 rows x one super-block */
#define KD8_REC 2880
/* q[64 g][8 r][4] u8 | sc[16 j][8 r] int32 (VNNI) or [16 j][8 r][2] int16 (AVX2) |
 * mc[8 p][8 r][2] int16 (subs 2p, 2p+1) | d[8] f32 | fm[8] f32 */
#define KD8_SC 2048
#define KD8_MC 2560
#define KD8_D 2816
#define KD8_FM 2848

INLINE __m256i lq_ld(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
INLINE void lq_st(void *p, __m256i v) { _mm256_storeu_si256((__m256i *)p, v); }

/* ---- decoders -------------------------------------------------------------------- */

/* Q2_K: u = q (0..3), off 0; mc = the 4-bit mins with fm = dmin */
INLINE void dec_q2_K(const uint8_t *blk, kdec256 *o) {
    const cll_block_q2_K *x = (const cll_block_q2_K *)blk;
    const __m256i m3 = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; h++) {
        const __m256i v = lq_ld(x->qs + 32 * h);
        lq_st(o->u + 128 * h, _mm256_and_si256(v, m3));
        lq_st(o->u + 128 * h + 32, _mm256_and_si256(_mm256_srli_epi16(v, 2), m3));
        lq_st(o->u + 128 * h + 64, _mm256_and_si256(_mm256_srli_epi16(v, 4), m3));
        lq_st(o->u + 128 * h + 96, _mm256_and_si256(_mm256_srli_epi16(v, 6), m3));
    }
    const __m128i s = _mm_loadu_si128((const __m128i *)x->scales), m4 = _mm_set1_epi8(15);
    lq_st(o->sc, _mm256_cvtepu8_epi16(_mm_and_si128(s, m4)));
    lq_st(o->mc, _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), m4)));
    o->d = h2f(x->d);
    o->fm = h2f(x->dmin);
}

/* Q3_K: u = q2 + 4 * hbit (0..7), off 4 */
INLINE void dec_q3_K(const uint8_t *blk, kdec256 *o) {
    const cll_block_q3_K *x = (const cll_block_q3_K *)blk;
    const __m256i m3 = _mm256_set1_epi8(3), b2 = _mm256_set1_epi8(4), hm = lq_ld(x->hmask);
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        const __m256i v = lq_ld(x->qs + 32 * h);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            const int k = 4 * h + j; /* hmask bit k -> bit 2 (16-bit shifts: the mask keeps bytes apart) */
            const __m256i hb = k < 2 ? _mm256_slli_epi16(hm, 2 - k) : _mm256_srli_epi16(hm, k - 2);
            lq_st(o->u + 128 * h + 32 * j,
                  _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 2 * j), m3), _mm256_and_si256(hb, b2)));
        }
    }
    /* the 16 six-bit scales (ggml's kmask unpacking, in registers: a 128-bit store read back
     * as dwords stalls store forwarding), minus 32 */
    uint32_t a0, a1, a2;
    memcpy(&a0, x->scales, 4);
    memcpy(&a1, x->scales + 4, 4);
    memcpy(&a2, x->scales + 8, 4);
    const __m128i lo = _mm_srlv_epi32(_mm_setr_epi32((int)a0, (int)a1, (int)a0, (int)a1), _mm_setr_epi32(0, 0, 4, 4));
    const __m128i hi = _mm_srlv_epi32(_mm_set1_epi32((int)a2), _mm_setr_epi32(0, 2, 4, 6));
    const __m128i t = _mm_or_si128(_mm_and_si128(lo, _mm_set1_epi8(15)), _mm_slli_epi32(_mm_and_si128(hi, _mm_set1_epi8(3)), 4));
    const __m256i sc = _mm256_sub_epi16(_mm256_cvtepu8_epi16(t), _mm256_set1_epi16(32));
    lq_st(o->sc, sc);
    lq_st(o->mc, _mm256_slli_epi16(sc, 2)); /* 4 * sc */
    o->d = o->fm = h2f(x->d);
}

/* 32 sign bits -> +-g + off: s ? off - g : off + g */
INLINE __m256i lq_signed_off(__m256i g, const uint8_t *sign_bytes, __m256i off) {
    const __m256i s = bits32(sign_bytes);
    return _mm256_blendv_epi8(_mm256_add_epi8(off, g), _mm256_sub_epi8(off, g), s);
}

/* IQ3_S: grid magnitudes 1..15 with explicit signs, u = v + 16 (1..31), scale 1 + 2s per 32 */
INLINE void dec_iq3_s(const uint8_t *blk, kdec256 *o) {
    const cll_block_iq3_s *x = (const cll_block_iq3_s *)blk;
    const __m256i off = _mm256_set1_epi8(16);
    const __m256i sh = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), one = _mm256_set1_epi32(1);
    for (int ib = 0; ib < 8; ib++) {
        /* grid index k = qs[k] | bit k of qh << 8; vpgatherdd (8 scalar loads + inserts, ggml's
         * way, measured 11% slower: kbench -T iq3_s -t 1 -H gemv 1.83 -> 2.03 ms) */
        __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(x->qs + 8 * ib)));
        const __m256i hb = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(x->qh[ib]), sh), one);
        idx = _mm256_or_si256(idx, _mm256_slli_epi32(hb, 8));
        const __m256i g = _mm256_i32gather_epi32((const int *)cll_iq3s_grid, idx, 4);
        lq_st(o->u + 32 * ib, lq_signed_off(g, x->signs + 4 * ib, off));
    }
    const uint32_t s4 = (uint32_t)x->scales[0] | ((uint32_t)x->scales[1] << 8) | ((uint32_t)x->scales[2] << 16) |
                        ((uint32_t)x->scales[3] << 24);
    for (int ib = 0; ib < 8; ib++) {
        const int16_t s = (int16_t)(1 + 2 * ((s4 >> (4 * ib)) & 15));
        o->sc[2 * ib] = o->sc[2 * ib + 1] = s;
        o->mc[2 * ib] = o->mc[2 * ib + 1] = (int16_t)(16 * s);
    }
    o->d = o->fm = h2f(x->d);
}

/* IQ4_XS: non-linear levels -127..113 by nibble lookup, u = v + 128 (1..241: vpdpbusd only),
 * scale ls - 32 per 32 */
INLINE void dec_iq4_xs(const uint8_t *blk, kdec256 *o) {
    const cll_block_iq4_xs *x = (const cll_block_iq4_xs *)blk;
    const __m256i lut = _mm256_add_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)cll_kvalues_iq4nl)),
                                        _mm256_set1_epi8((char)128));
#pragma GCC unroll 8
    for (int ib = 0; ib < 8; ib++) lq_st(o->u + 32 * ib, _mm256_shuffle_epi8(lut, nibbles32(x->qs + 16 * ib)));
    uint32_t sl;
    memcpy(&sl, x->scales_l, 4);
    const uint32_t sh = x->scales_h;
    for (int ib = 0; ib < 8; ib++) {
        const int16_t ls = (int16_t)((((sl >> (4 * ib)) & 15) | (((sh >> (2 * ib)) & 3) << 4)) - 32);
        o->sc[2 * ib] = o->sc[2 * ib + 1] = ls;
        o->mc[2 * ib] = o->mc[2 * ib + 1] = (int16_t)(128 * ls);
    }
    o->d = o->fm = h2f(x->d);
}

/* 4 sign bytes (one per 8 elements) in a u32 -> +-g + off */
INLINE __m256i lq_signed_off32(__m256i g, uint32_t sb, __m256i off) {
    uint8_t b[4];
    memcpy(b, &sb, 4);
    return lq_signed_off(g, b, off);
}
INLINE uint32_t lq_ksigns4(uint32_t a) { /* 4 x 7-bit sign indices -> 4 sign bytes */
    return (uint32_t)cll_ksigns_iq2xs[a & 127] | ((uint32_t)cll_ksigns_iq2xs[(a >> 7) & 127] << 8) |
           ((uint32_t)cll_ksigns_iq2xs[(a >> 14) & 127] << 16) | ((uint32_t)cll_ksigns_iq2xs[(a >> 21) & 127] << 24);
}
INLINE __m256i lq_grid64x4(const uint64_t *grid, int i0, int i1, int i2, int i3) {
    return _mm256_setr_epi64x((long long)grid[i0], (long long)grid[i1], (long long)grid[i2], (long long)grid[i3]);
}
/* scale 2s + 1 per 16 from 8 bytes of two nibbles (IQ2_XS, IQ2_S) */
INLINE void lq_sc_nib16(const uint8_t *scales, int off, kdec256 *o) {
    const __m128i s = _mm_loadl_epi64((const __m128i *)scales), m4 = _mm_set1_epi8(15);
    const __m128i n = _mm_unpacklo_epi8(_mm_and_si128(s, m4), _mm_and_si128(_mm_srli_epi16(s, 4), m4)); /* lo, hi per byte */
    const __m256i sc = _mm256_add_epi16(_mm256_slli_epi16(_mm256_cvtepu8_epi16(n), 1), _mm256_set1_epi16(1));
    lq_st(o->sc, sc);
    lq_st(o->mc, _mm256_mullo_epi16(sc, _mm256_set1_epi16((short)off)));
}

/* IQ2_XXS: per 32: 4 grid bytes (8 elements each), 4 x 7-bit sign indices + 4-bit scale; d / 8 */
INLINE void dec_iq2_xxs(const uint8_t *blk, kdec256 *o) {
    const cll_block_iq2_xxs *x = (const cll_block_iq2_xxs *)blk;
    const __m256i off = _mm256_set1_epi8(44);
    for (int ib = 0; ib < 8; ib++) {
        uint32_t a0, a1;
        memcpy(&a0, x->qs + 4 * ib, 4);
        memcpy(&a1, x->qs + 4 * ib + 2, 4);
        const __m256i g = lq_grid64x4(cll_iq2xxs_grid, a0 & 255, (a0 >> 8) & 255, (a0 >> 16) & 255, a0 >> 24);
        lq_st(o->u + 32 * ib, lq_signed_off32(g, lq_ksigns4(a1), off));
        const int16_t sc = (int16_t)(2 * (a1 >> 28) + 1);
        o->sc[2 * ib] = o->sc[2 * ib + 1] = sc;
        o->mc[2 * ib] = o->mc[2 * ib + 1] = (int16_t)(44 * sc);
    }
    o->d = o->fm = h2f(x->d) * 0.125f;
}

/* IQ2_XS: 16-bit codes = 9-bit grid index | 7-bit sign index << 9; scales per 16 */
INLINE void dec_iq2_xs(const uint8_t *blk, kdec256 *o) {
    const cll_block_iq2_xs *x = (const cll_block_iq2_xs *)blk;
    const __m256i off = _mm256_set1_epi8(44);
    for (int ib = 0; ib < 8; ib++) {
        const uint16_t *q = x->qs + 4 * ib;
        const __m256i g = lq_grid64x4(cll_iq2xs_grid, q[0] & 511, q[1] & 511, q[2] & 511, q[3] & 511);
        const uint32_t sb = (uint32_t)cll_ksigns_iq2xs[q[0] >> 9] | ((uint32_t)cll_ksigns_iq2xs[q[1] >> 9] << 8) |
                            ((uint32_t)cll_ksigns_iq2xs[q[2] >> 9] << 16) | ((uint32_t)cll_ksigns_iq2xs[q[3] >> 9] << 24);
        lq_st(o->u + 32 * ib, lq_signed_off32(g, sb, off));
    }
    lq_sc_nib16(x->scales, 44, o);
    o->d = o->fm = h2f(x->d) * 0.125f;
}

/* IQ2_S: 10-bit grid index (qs | 2 bits of qh), explicit sign bytes after the 32 index bytes */
INLINE void dec_iq2_s(const uint8_t *blk, kdec256 *o) {
    const cll_block_iq2_s *x = (const cll_block_iq2_s *)blk;
    const __m256i off = _mm256_set1_epi8(44);
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *q = x->qs + 4 * ib;
        const int h = x->qh[ib];
        const __m256i g = lq_grid64x4(cll_iq2s_grid, q[0] | ((h << 8) & 0x300), q[1] | ((h << 6) & 0x300),
                                      q[2] | ((h << 4) & 0x300), q[3] | ((h << 2) & 0x300));
        lq_st(o->u + 32 * ib, lq_signed_off(g, x->qs + 32 + 4 * ib, off));
    }
    lq_sc_nib16(x->scales, 44, o);
    o->d = o->fm = h2f(x->d) * 0.125f;
}

/* IQ3_XXS: 8-bit indices into a 4-byte grid, per 32 a u32 of 4 x 7-bit sign indices + scale; d / 4 */
INLINE void dec_iq3_xxs(const uint8_t *blk, kdec256 *o) {
    const cll_block_iq3_xxs *x = (const cll_block_iq3_xxs *)blk;
    const __m256i off = _mm256_set1_epi8(64);
    const uint32_t *grid = cll_iq3xxs_grid;
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *q = x->qs + 8 * ib;
        uint32_t aux;
        memcpy(&aux, x->qs + 64 + 4 * ib, 4);
        const __m256i g = _mm256_setr_epi32((int)grid[q[0]], (int)grid[q[1]], (int)grid[q[2]], (int)grid[q[3]],
                                            (int)grid[q[4]], (int)grid[q[5]], (int)grid[q[6]], (int)grid[q[7]]);
        lq_st(o->u + 32 * ib, lq_signed_off32(g, lq_ksigns4(aux), off));
        const int16_t sc = (int16_t)(2 * (aux >> 28) + 1);
        o->sc[2 * ib] = o->sc[2 * ib + 1] = sc;
        o->mc[2 * ib] = o->mc[2 * ib + 1] = (int16_t)(64 * sc);
    }
    o->d = o->fm = h2f(x->d) * 0.25f;
}

/* any type formats/dot_unpack.c knows: its unpacked block, shifted by off (a portable
 * decoder: the GEMM rows of the formats without a SIMD decoder amortise it over tokens) */
INLINE void dec_generic(uint32_t wtype, const uint8_t *row, int64_t b, int off, kdec256 *o) {
    cll_unpacked256 un;
    cll_dot_unpack256(wtype, row, b, &un);
    const __m256i vo = _mm256_set1_epi8((char)off);
    for (int c = 0; c < 8; c++) lq_st(o->u + 32 * c, _mm256_add_epi8(lq_ld(un.v + 32 * c), vo));
    const __m256i sc = lq_ld(un.sc);
    lq_st(o->sc, sc);
    if (off) {
        lq_st(o->mc, _mm256_mullo_epi16(sc, _mm256_set1_epi16((short)off)));
        o->d = o->fm = un.d;
    } else {
        lq_st(o->mc, lq_ld(un.m));
        o->d = un.d;
        o->fm = un.dmin;
    }
}

/* the offset of a type's decoded bytes, and whether u <= 31 (4 maddubs sums fit int16) */
static inline int lq_off(uint32_t t) {
    switch (t) {
    case CLL_TYPE_Q2_K: return 0;
    case CLL_TYPE_Q3_K: return 4;
    case CLL_TYPE_IQ3_S: return 16;
    case CLL_TYPE_IQ2_XXS: case CLL_TYPE_IQ2_XS: case CLL_TYPE_IQ2_S: return 44; /* |v| <= 43 */
    case CLL_TYPE_IQ3_XXS: return 64; /* |v| <= 62 */
    case CLL_TYPE_IQ4_XS: return 128; /* -127..113: u <= 241, VNNI only */
    default: return -1;
    }
}

INLINE void lq_decode(uint32_t wtype, const uint8_t *row, int64_t b, size_t bsz, kdec256 *o) {
    switch (wtype) {
    case CLL_TYPE_Q2_K: dec_q2_K(row + (size_t)b * bsz, o); break;
    case CLL_TYPE_Q3_K: dec_q3_K(row + (size_t)b * bsz, o); break;
    case CLL_TYPE_IQ3_S: dec_iq3_s(row + (size_t)b * bsz, o); break;
    case CLL_TYPE_IQ4_XS: dec_iq4_xs(row + (size_t)b * bsz, o); break;
    case CLL_TYPE_IQ2_XXS: dec_iq2_xxs(row + (size_t)b * bsz, o); break;
    case CLL_TYPE_IQ2_XS: dec_iq2_xs(row + (size_t)b * bsz, o); break;
    case CLL_TYPE_IQ2_S: dec_iq2_s(row + (size_t)b * bsz, o); break;
    case CLL_TYPE_IQ3_XXS: dec_iq3_xxs(row + (size_t)b * bsz, o); break;
    default: dec_generic(wtype, row, b, lq_off(wtype), o); break;
    }
}

/* ---- d8 record builder: decode 8 rows of super-block b and interleave them ---------- */

/* 8x8 transpose of dwords: in[r] holds row r's groups 0..7, out[g] holds group g of rows 0..7 */
INLINE void lq_tr8(__m256i v[8]) {
    __m256i t[8], s[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        s[4 * i + 0] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        s[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        s[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        s[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int i = 0; i < 4; i++) {
        v[i] = _mm256_permute2x128_si256(s[i], s[4 + i], 0x20);
        v[i + 4] = _mm256_permute2x128_si256(s[i], s[4 + i], 0x31);
    }
}

/* interleave 8 decoded rows into a d8 record; sc32: scales as int32 per row (VNNI mullo),
 * else int16 pairs (AVX2 madd) */
INLINE void lq_interleave_d8(const kdec256 k[8], uint8_t *rec, int sc32) {
    for (int c = 0; c < 8; c++) { /* groups 8c..8c+7 */
        __m256i v[8];
        for (int r = 0; r < 8; r++) v[r] = lq_ld(k[r].u + 32 * c);
        lq_tr8(v);
        for (int i = 0; i < 8; i++) lq_st(rec + 32 * (8 * c + i), v[i]);
    }
    int16_t *mc = (int16_t *)(rec + KD8_MC);
    float *d = (float *)(rec + KD8_D), *fm = (float *)(rec + KD8_FM);
    for (int r = 0; r < 8; r++) {
        for (int j = 0; j < 16; j++) {
            if (sc32) ((int32_t *)(rec + KD8_SC))[8 * j + r] = k[r].sc[j];
            else {
                ((int16_t *)(rec + KD8_SC))[16 * j + 2 * r] = k[r].sc[j];
                ((int16_t *)(rec + KD8_SC))[16 * j + 2 * r + 1] = k[r].sc[j];
            }
        }
        for (int p = 0; p < 8; p++) {
            mc[16 * p + 2 * r] = k[r].mc[2 * p];
            mc[16 * p + 2 * r + 1] = k[r].mc[2 * p + 1];
        }
        d[r] = k[r].d;
        fm[r] = k[r].fm;
    }
}

INLINE void lq_build_d8(uint32_t wtype, const uint8_t *w, size_t row_bytes, size_t bsz, int64_t b, uint8_t *rec,
                        int sc32) {
    kdec256 k[8];
    for (int r = 0; r < 8; r++) lq_decode(wtype, w + (size_t)r * row_bytes, b, bsz, &k[r]);
    lq_interleave_d8(k, rec, sc32);
}

INLINE __m256i lq_bcast32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* per token: sum_j mc_j * bsum_j for the 8 rows (int32 lanes) */
INLINE __m256i lq_corr8(const uint8_t *rec, const cll_block_q8_K *ab) {
    const __m256i *mc = (const __m256i *)(rec + KD8_MC);
    __m256i s = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int p = 0; p < 8; p++) s = _mm256_add_epi32(s, _mm256_madd_epi16(lq_ld(mc + p), lq_bcast32(ab->bsums + 2 * p)));
    return s;
}

/* max decoded super-blocks of one 8-row group kept per thread (cols <= 64 * 256 at once;
 * wider rows run in segments that add into y) */
#define LQ_SEG 64

/* ---- IQ3_S in the x3 layout (kern_lowq_avx2.c packs it): d | 4-bit scales | 128 bytes of nibbles
 * w = (u - 1) / 2, the same u, scales and corrections as dec_iq3_s ---- */
#define X3_BYTES 136
#define X3_NIB 8 /* d (fp16) | scales[4] | 2 pad | nibbles[128] */

INLINE void dec_iq3_x(const uint8_t *blk, kdec256 *o) {
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
#pragma GCC unroll 8
    for (int ib = 0; ib < 8; ib++) {
        const __m256i v = lq_ld(blk + X3_NIB + 32 * (ib >> 1));
        const __m256i w = (ib & 1) ? _mm256_and_si256(_mm256_srli_epi16(v, 4), m4) : _mm256_and_si256(v, m4);
        lq_st(o->u + 32 * ib, _mm256_or_si256(_mm256_add_epi8(w, w), one)); /* u = 2w + 1 */
    }
    uint32_t s4;
    memcpy(&s4, blk + 2, 4);
    for (int ib = 0; ib < 8; ib++) {
        const int16_t s = (int16_t)(1 + 2 * ((s4 >> (4 * ib)) & 15));
        o->sc[2 * ib] = o->sc[2 * ib + 1] = s;
        o->mc[2 * ib] = o->mc[2 * ib + 1] = (int16_t)(16 * s);
    }
    uint16_t d;
    memcpy(&d, blk, 2);
    o->d = o->fm = h2f(d);
}

#endif
