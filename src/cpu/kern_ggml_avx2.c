/* cpu/kern_ggml_avx2: the reference-numerics rows (see kern_ggml.h). Each dot product
 * follows ggml-cpu's x86 AVX2 vec_dot for its type (ggml/src/ggml-cpu/arch/x86/quants.c,
 * read for the order of operations; the code here is ours):
 *   - integer lanes: 8 int32 lanes per block, lane k holding the products of bytes
 *     4k..4k+3 of every 32-byte chunk (maddubs then madd), times the sub-block scale;
 *   - per block one float scale, computed as ggml does (fp16(x.d) * fp16(y.d) for the
 *     32-element formats; y.d * fp16(x.d) for the K-quants), then acc = fma(scale, lanes, acc);
 *   - Q4_1 / Q5_1: unsigned quants against Q8_1, the m * s offsets summed in a scalar added
 *     after the horizontal sum;
 *   - one horizontal sum at the end: (hi128 + lo128), then + movehl, then + movehdup;
 *   - Q4_K: the min correction in its own 4-lane accumulator (fma with -y.d * fp16(dmin)),
 *     reduced the same way and added last.
 * The integer parts are exact in any order; what must match is which integers land in
 * which float lane and the float operation sequence, and that is what this file pins. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "cpu/kern_avx2_util.h"
#include "cpu/kern_ggml.h"
#include "formats/iq_tables.h"


/* ggml's hsum_float_8 order */
INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}


/* signed x signed bytes, 4 consecutive products per int32 lane, as float (ggml's
 * mul_sum_i8_pairs_float: |w| times sign(a, w), maddubs, madd with ones) */
INLINE __m256 dot4_s8_ps(__m256i w, __m256i a) {
    const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}



/* unsigned x signed bytes, 4 consecutive products per int32 lane, as float (ggml's
 * mul_sum_us8_pairs_float without VNNI: maddubs, madd with ones) */
INLINE __m256 dot4_u8_ps(__m256i w, __m256i a) {
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1)));
}

/* Q4_0: nibble - 8, signed lanes like Q8_0's */
static float dot_q4_0(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q4_0 *x = (const cll_block_q4_0 *)w;
    const kact_q8_0x *y = (const kact_q8_0x *)act;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < cols / 32; b++) {
        const __m256i q = _mm256_sub_epi8(nibbles32(x[b].qs), _mm256_set1_epi8(8));
        const __m256 p = dot4_s8_ps(q, _mm256_loadu_si256((const __m256i *)y[b].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[b].d) * y[b].d), p, acc);
    }
    return hsum8(acc);
}

/* Q4_1 / Q5_1 against Q8_1: unsigned quants, lanes fma'd with fp16(x.d) * fp16(y.d); the
 * offsets m * s (s = ggml's fp16 d*sum(a)) gather in one float, one fma per block (ggml's
 * `summs += m * s` is contracted to vfmadd231ss in the shipped build), added after the hsum */
static float dot_q4_1(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q4_1 *x = (const cll_block_q4_1 *)w;
    const cll_block_q8_1 *y = (const cll_block_q8_1 *)act;
    __m256 acc = _mm256_setzero_ps();
    float summs = 0.0f;
    for (int64_t b = 0; b < cols / 32; b++) {
        summs = fmaf(h2f(x[b].m), h2f(y[b].s), summs);
        const __m256 p = dot4_u8_ps(nibbles32(x[b].qs), _mm256_loadu_si256((const __m256i *)y[b].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[b].d) * h2f(y[b].d)), p, acc);
    }
    return hsum8(acc) + summs;
}

static float dot_q5_1(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q5_1 *x = (const cll_block_q5_1 *)w;
    const cll_block_q8_1 *y = (const cll_block_q8_1 *)act;
    const __m256i b4 = _mm256_set1_epi8(0x10);
    __m256 acc = _mm256_setzero_ps();
    float summs = 0.0f;
    for (int64_t b = 0; b < cols / 32; b++) {
        summs = fmaf(h2f(x[b].m), h2f(y[b].s), summs);
        const __m256i q = _mm256_or_si256(nibbles32(x[b].qs), _mm256_and_si256(bits32(x[b].qh), b4));
        const __m256 p = dot4_u8_ps(q, _mm256_loadu_si256((const __m256i *)y[b].qs));
        acc = _mm256_fmadd_ps(p, _mm256_set1_ps(h2f(x[b].d) * h2f(y[b].d)), acc);
    }
    return hsum8(acc) + summs;
}

/* IQ4_NL / IQ4_XS: nibbles through the 16-entry non-linear table (signed), lanes as Q8_0's */
INLINE __m256i iq4_values32(const uint8_t *qs) {
    const __m128i tab = _mm_loadu_si128((const __m128i *)cll_kvalues_iq4nl);
    const __m128i v = _mm_loadu_si128((const __m128i *)qs), m4 = _mm_set1_epi8(15);
    return _mm256_set_m128i(_mm_shuffle_epi8(tab, _mm_and_si128(_mm_srli_epi16(v, 4), m4)),
                            _mm_shuffle_epi8(tab, _mm_and_si128(v, m4)));
}

/* IQ4_NL: two accumulators, even blocks and odd blocks (ggml takes blocks in pairs), summed
 * before the hsum; an odd last block goes scalar: sumf += d * isum after the hsum */
static float dot_iq4_nl(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_iq4_nl *x = (const cll_block_iq4_nl *)w;
    const kact_q8_0x *y = (const kact_q8_0x *)act;
    const int64_t nb = cols / 32;
    __m256 acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 1 < nb; b += 2) {
        const __m256 p1 = dot4_s8_ps(iq4_values32(x[b].qs), _mm256_loadu_si256((const __m256i *)y[b].qs));
        const __m256 p2 = dot4_s8_ps(iq4_values32(x[b + 1].qs), _mm256_loadu_si256((const __m256i *)y[b + 1].qs));
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(y[b].d * h2f(x[b].d)), p1, acc1);
        acc2 = _mm256_fmadd_ps(_mm256_set1_ps(y[b + 1].d * h2f(x[b + 1].d)), p2, acc2);
    }
    float sumf = hsum8(_mm256_add_ps(acc1, acc2));
    for (; b < nb; b++) {
        int isum = 0;
        for (int j = 0; j < 16; j++)
            isum += y[b].qs[j] * cll_kvalues_iq4nl[x[b].qs[j] & 15] + y[b].qs[j + 16] * cll_kvalues_iq4nl[x[b].qs[j] >> 4];
        const float t = y[b].d * h2f(x[b].d) * (float)isum; /* not contracted in ggml's build: */
        sumf += t;                                           /* mulss, mulss, addss */
    }
    return sumf;
}

/* Q5_0: the quant is (nibble | bit4 << 4) - 16, taken signed (a clear 5th bit ORs 0xF0 into
 * the nibble), so lanes are signed 4-product sums like Q8_0's */
static float dot_q5_0(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q5_0 *x = (const cll_block_q5_0 *)w;
    const kact_q8_0x *y = (const kact_q8_0x *)act;
    const __m256i hi = _mm256_set1_epi8((char)0xF0);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < cols / 32; b++) {
        const __m256i q = _mm256_or_si256(nibbles32(x[b].qs), _mm256_andnot_si256(bits32(x[b].qh), hi));
        const __m256 p = dot4_s8_ps(q, _mm256_loadu_si256((const __m256i *)y[b].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[b].d) * y[b].d), p, acc);
    }
    return hsum8(acc);
}

static float dot_q8_0(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q8_0 *x = (const cll_block_q8_0 *)w;
    const kact_q8_0x *y = (const kact_q8_0x *)act;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < cols / 32; b++) {
        const __m256 p = dot4_s8_ps(_mm256_loadu_si256((const __m256i *)x[b].qs),
                                    _mm256_loadu_si256((const __m256i *)y[b].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[b].d) * y[b].d), p, acc);
    }
    return hsum8(acc);
}

/* Q4_K 6-bit scales and mins of the 8 sub-blocks */
static void q4_K_scales(const uint8_t *s, int16_t sc[8], int16_t mn[8]) {
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            sc[j] = s[j] & 63;
            mn[j] = s[j + 4] & 63;
        } else {
            sc[j] = (int16_t)((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
            mn[j] = (int16_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
        }
    }
}

static float dot_q4_K(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q4_K *x = (const cll_block_q4_K *)w;
    const cll_block_q8_K *y = (const cll_block_q8_K *)act;
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_m = _mm_setzero_ps();
    for (int64_t b = 0; b < cols / 256; b++) {
        const float d = y[b].d * h2f(x[b].d);
        const float dmin = -y[b].d * h2f(x[b].dmin);
        int16_t sc[8], mn[8];
        q4_K_scales(x[b].scales, sc, mn);
        /* min correction: lane m = mn[2m]*S[2m] + mn[2m+1]*S[2m+1], S = 32-element sums of the activations */
        const __m128i bs0 = _mm_loadu_si128((const __m128i *)y[b].bsums);
        const __m128i bs1 = _mm_loadu_si128((const __m128i *)(y[b].bsums + 8));
        const __m128i s32 = _mm_hadd_epi16(bs0, bs1);
        const __m128i prod = _mm_madd_epi16(_mm_loadu_si128((const __m128i *)mn), s32);
        acc_m = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(prod), acc_m);
        __m256i sumi = _mm256_setzero_si256();
        const uint8_t *q4 = x[b].qs;
        const int8_t *q8 = y[b].qs;
        for (int j = 0; j < 4; j++, q4 += 32, q8 += 64) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)q4);
            const __m256i lo = _mm256_and_si256(bits, m4), hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
            const __m256i pl = _mm256_madd_epi16(_mm256_set1_epi16(sc[2 * j]),
                                                 _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)q8)));
            const __m256i ph = _mm256_madd_epi16(
                _mm256_set1_epi16(sc[2 * j + 1]), _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(q8 + 32))));
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(pl, ph));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    acc_m = _mm_add_ps(acc_m, _mm_movehl_ps(acc_m, acc_m));
    acc_m = _mm_add_ss(acc_m, _mm_movehdup_ps(acc_m));
    return hsum8(acc) + _mm_cvtss_f32(acc_m);
}

/* scale of elements 0..15 (s0) and 16..31 (s1) of a 32-byte chunk, as 16-bit lanes (ggml's
 * get_scale_shuffle_q3k of the 16-bit scales) */
INLINE __m256i scale_pair16(int16_t s0, int16_t s1) {
    return _mm256_setr_epi16(s0, s0, s0, s0, s0, s0, s0, s0, s1, s1, s1, s1, s1, s1, s1, s1);
}

/* Q2_K: per 128 elements, 32 bytes of qs, chunk c = bits 2c..2c+1 against q8[32c..], scales
 * 8j+2c / 8j+2c+1 (low nibble of scales[]); the mins (high nibble) against bsums go into the
 * SAME float accumulator first: acc = fma(dmin, lanes(mins*bsums), acc), then fma(d, sumi, acc) */
static float dot_q2_K(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q2_K *x = (const cll_block_q2_K *)w;
    const cll_block_q8_K *y = (const cll_block_q8_K *)act;
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < cols / 256; b++) {
        const float d = y[b].d * h2f(x[b].d);
        const float dmin = -y[b].d * h2f(x[b].dmin);
        const __m128i ms = _mm_loadu_si128((const __m128i *)x[b].scales);
        const __m256i mins = _mm256_cvtepi8_epi16(_mm_and_si128(_mm_srli_epi16(ms, 4), _mm_set1_epi8(15)));
        const __m256i prod = _mm256_madd_epi16(mins, _mm256_loadu_si256((const __m256i *)y[b].bsums));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(prod), acc);
        __m256i sumi = _mm256_setzero_si256();
        const uint8_t *q2 = x[b].qs;
        const int8_t *q8 = y[b].qs;
        for (int j = 0; j < 2; j++, q2 += 32) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)q2);
            for (int c = 0; c < 4; c++, q8 += 32) {
                const __m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * c), m3);
                const __m256i p = _mm256_maddubs_epi16(q, _mm256_loadu_si256((const __m256i *)q8));
                const int16_t s0 = x[b].scales[8 * j + 2 * c] & 15, s1 = x[b].scales[8 * j + 2 * c + 1] & 15;
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(scale_pair16(s0, s1), p));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum8(acc);
}

/* Q3_K: q = (2 low bits) - 4 * (hmask bit clear), hmask bit 4j+c for chunk c of the j-th 128;
 * 6-bit scales - 32, 8j+2c / 8j+2c+1 as Q2_K's; one fma(d, sumi, acc) per super-block */
static float dot_q3_K(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q3_K *x = (const cll_block_q3_K *)w;
    const cll_block_q8_K *y = (const cll_block_q8_K *)act;
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < cols / 256; b++) {
        const float d = y[b].d * h2f(x[b].d);
        uint32_t aux[3], sc32[4];
        memcpy(aux, x[b].scales, 12);
        sc32[0] = (aux[0] & 0x0f0f0f0f) | (((aux[2] >> 0) & 0x03030303) << 4);
        sc32[1] = (aux[1] & 0x0f0f0f0f) | (((aux[2] >> 2) & 0x03030303) << 4);
        sc32[2] = ((aux[0] >> 4) & 0x0f0f0f0f) | (((aux[2] >> 4) & 0x03030303) << 4);
        sc32[3] = ((aux[1] >> 4) & 0x0f0f0f0f) | (((aux[2] >> 6) & 0x03030303) << 4);
        const uint8_t *sc8 = (const uint8_t *)sc32;
        const __m256i hb = _mm256_loadu_si256((const __m256i *)x[b].hmask);
        __m256i sumi = _mm256_setzero_si256();
        const uint8_t *q3 = x[b].qs;
        const int8_t *q8 = y[b].qs;
        for (int j = 0; j < 2; j++, q3 += 32) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)q3);
            for (int c = 0; c < 4; c++, q8 += 32) {
                const int bit = 4 * j + c;
                const __m256i ql = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * c), m3);
                const __m256i qh = _mm256_slli_epi16(
                    _mm256_srli_epi16(_mm256_andnot_si256(hb, _mm256_slli_epi16(one, bit)), bit), 2);
                const __m256i a = _mm256_loadu_si256((const __m256i *)q8);
                const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(ql, a), _mm256_maddubs_epi16(qh, a));
                const int16_t s0 = (int16_t)sc8[8 * j + 2 * c] - 32, s1 = (int16_t)sc8[8 * j + 2 * c + 1] - 32;
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(scale_pair16(s0, s1), p));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum8(acc);
}

/* Q5_K: Q4_K's lanes with the 5th bit (bit 2j of qh[l] for element l of the j-th 64's first
 * 32, bit 2j+1 for its second 32); the min correction is one integer per super-block, taken
 * to float and fma'd into a scalar (ggml's `summs += dmin * isum`, contracted), added last */
static float dot_q5_K(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q5_K *x = (const cll_block_q5_K *)w;
    const cll_block_q8_K *y = (const cll_block_q8_K *)act;
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    float summs = 0.0f;
    for (int64_t b = 0; b < cols / 256; b++) {
        const float d = y[b].d * h2f(x[b].d);
        const float dmin = -y[b].d * h2f(x[b].dmin);
        int16_t sc[8], mn[8];
        q4_K_scales(x[b].scales, sc, mn);
        int32_t isum = 0;
        for (int m = 0; m < 8; m++) isum += mn[m] * (y[b].bsums[2 * m] + y[b].bsums[2 * m + 1]);
        summs = fmaf(dmin, (float)isum, summs);
        const __m256i hb = _mm256_loadu_si256((const __m256i *)x[b].qh);
        __m256i sumi = _mm256_setzero_si256();
        const uint8_t *q5 = x[b].qs;
        const int8_t *q8 = y[b].qs;
        for (int j = 0; j < 4; j++, q5 += 32, q8 += 64) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)q5);
            const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * j), one), 4);
            const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * j + 1), one), 4);
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(bits, m4), h0);
            const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 4), m4), h1);
            const __m256i pl = _mm256_madd_epi16(_mm256_set1_epi16(sc[2 * j]),
                                                 _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)q8)));
            const __m256i ph = _mm256_madd_epi16(
                _mm256_set1_epi16(sc[2 * j + 1]), _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(q8 + 32))));
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(pl, ph));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum8(acc) + summs;
}

/* IQ4_XS: per 32 elements a 6-bit scale - 32 (low nibble in scales_l, 2 high bits in
 * scales_h); integer lanes, one fma(fp16(x.d) * y.d, sumi, acc) per super-block */
static float dot_iq4_xs(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_iq4_xs *x = (const cll_block_iq4_xs *)w;
    const cll_block_q8_K *y = (const cll_block_q8_K *)act;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < cols / 256; b++) {
        __m256i sumi = _mm256_setzero_si256();
        for (int g = 0; g < 8; g++) {
            const int16_t ls = (int16_t)((((x[b].scales_l[g / 2] >> (4 * (g & 1))) & 15) |
                                          (((x[b].scales_h >> (2 * g)) & 3) << 4)) -
                                         32);
            const __m256i q = iq4_values32(x[b].qs + 16 * g), a = _mm256_loadu_si256((const __m256i *)(y[b].qs + 32 * g));
            const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(a, q));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p16, _mm256_set1_epi16(ls)));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[b].d) * y[b].d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum8(acc);
}

/* Q6_K: per 128-element half, 4 chunks of 32: chunk c takes the low (c < 2) or high nibbles
 * of ql[32(c&1) ..] and qh bits 2c..2c+1; its first 16 elements use scale 8h+2c, the next 16
 * scale 8h+2c+1. The lanes first sum sc*q*a with q in [0, 63]; the -32 offset comes last,
 * lane k losing 32*(sc[2k]*bsum[2k] + sc[2k+1]*bsum[2k+1]) (whole 16-element sub-blocks,
 * not the lane's own bytes: that moves integers between lanes, so it must be this way). */
static float dot_q6_K(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q6_K *x = (const cll_block_q6_K *)w;
    const cll_block_q8_K *y = (const cll_block_q8_K *)act;
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < cols / 256; b++) {
        const float d = y[b].d * h2f(x[b].d);
        const uint8_t *ql = x[b].ql, *qh = x[b].qh;
        const int8_t *q8 = y[b].qs;
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++, ql += 64, qh += 32, q8 += 128) {
            const __m256i l0 = _mm256_loadu_si256((const __m256i *)ql), l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            const __m256i hb = _mm256_loadu_si256((const __m256i *)qh);
            __m256i q[4];
            q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(hb, m2), 4));
            q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m2), 4));
            q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m2), 4));
            q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m2), 4));
            for (int c = 0; c < 4; c++) {
                const __m256i a = _mm256_loadu_si256((const __m256i *)(q8 + 32 * c));
                const __m256i p = _mm256_maddubs_epi16(q[c], a);
                const int8_t s0 = x[b].scales[8 * h + 2 * c], s1 = x[b].scales[8 * h + 2 * c + 1];
                const __m256i sc = _mm256_setr_epi16(s0, s0, s0, s0, s0, s0, s0, s0, s1, s1, s1, s1, s1, s1, s1, s1);
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(sc, p));
            }
        }
        const __m256i off = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)y[b].bsums),
                                              _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[b].scales)));
        sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(off, 5));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum8(acc);
}

typedef float (*dot_fn)(const uint8_t *w, const uint8_t *act, int64_t cols);

static dot_fn dot_for(uint32_t t) {
    switch (t) {
    case CLL_TYPE_Q4_0: return dot_q4_0;
    case CLL_TYPE_Q4_1: return dot_q4_1;
    case CLL_TYPE_Q5_0: return dot_q5_0;
    case CLL_TYPE_Q5_1: return dot_q5_1;
    case CLL_TYPE_Q8_0: return dot_q8_0;
    case CLL_TYPE_Q2_K: return dot_q2_K;
    case CLL_TYPE_Q3_K: return dot_q3_K;
    case CLL_TYPE_Q4_K: return dot_q4_K;
    case CLL_TYPE_Q5_K: return dot_q5_K;
    case CLL_TYPE_Q6_K: return dot_q6_K;
    case CLL_TYPE_IQ4_NL: return dot_iq4_nl;
    case CLL_TYPE_IQ4_XS: return dot_iq4_xs;
    default: return NULL;
    }
}

bool cll_kern_ggml_supports(const cll_kernel_row *r, const cll_kernel_shape *s) {
    (void)r;
    return dot_for(s->wtype) != NULL;
}

/* rows outer, tokens inner (a row stays in L1 while every token reads it); each output is
 * one independent dot product, so the thread split cannot change a bit */
static void run(const kern_args *a, int64_t r0, int64_t r1) {
    const dot_fn dot = dot_for(a->wtype);
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = a->w + (size_t)r * a->w_row_bytes;
        if (r + 1 < r1) _mm_prefetch((const char *)(w + a->w_row_bytes), _MM_HINT_T0);
        for (int64_t t = 0; t < a->n; t++) a->y[t * a->ldy + r] = dot(w, a->act + t * a->act_stride, a->cols);
    }
}

const kern_impl cll_kern_ggml_impl_q8_0x = {KACT_Q8_0X, 1, NULL, NULL, run};
const kern_impl cll_kern_ggml_impl_q8_1 = {KACT_Q8_1, 1, NULL, NULL, run};
const kern_impl cll_kern_ggml_impl_q8_K = {KACT_Q8_K, 1, NULL, NULL, run};
