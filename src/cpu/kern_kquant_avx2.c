/* cpu/kern_kquant_avx2: one-row AVX2 dot products of the 256-element formats (Q2_K..Q6_K,
 * IQ4_XS) with Q8_K activations, on the file layout. Quants widen to unsigned bytes;
 * vpmaddwd multiplies the int16 pair sums by the sub-block scale, and offsets / mins are
 * settled once per super-block with the activation bsums (16-element sums). */
#include <immintrin.h>
#include <string.h>

#include "cpu/kern_avx2_util.h"
#include "cpu/kern_common.h"
#include "cpu/kern_plain_avx2.h"
#include "formats/iq_tables.h"


INLINE int hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

INLINE __m256i ld(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
/* int16 scale s0 for the low 16 elements (low 128-bit lane), s1 for the high 16 */
INLINE __m256i scale2(int s0, int s1) { return _mm256_set_m128i(_mm_set1_epi16((short)s1), _mm_set1_epi16((short)s0)); }

/* Q4_K/Q5_K: one 64-element chunk, low nibbles x a[0..31] at scale s0, high x a[32..63] at s1,
 * added to the int32 accumulator (integer adds: order-free) */
INLINE __m256i acc_pair(__m256i isum, __m256i lo, __m256i hi, const int8_t *a, int s0, int s1) {
    isum = _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(lo, ld(a)), _mm256_set1_epi16((short)s0)));
    return _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(hi, ld(a + 32)), _mm256_set1_epi16((short)s1)));
}

/* the K-quant min correction: sum over the 8 sub-blocks of min x (sum of its 32 activations) */
INLINE int min_sum(const int m[8], const int16_t *bsums) {
    int msum = 0;
    for (int j = 0; j < 8; j++) msum += m[j] * (bsums[2 * j] + bsums[2 * j + 1]);
    return msum;
}

static void q4k_scale_min(int j, const uint8_t *q, int *sc, int *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

float cll_kern_dot_q4_K_avx2(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q4_K *x = (const cll_block_q4_K *)w;
    const cll_block_q8_K *y = (const cll_block_q8_K *)act;
    const __m256i m4 = _mm256_set1_epi8(15);
    float sum = 0;
    for (int64_t b = 0; b < cols / 256; b++) {
        int sc[8], m[8];
        for (int j = 0; j < 8; j++) q4k_scale_min(j, x[b].scales, &sc[j], &m[j]);
        __m256i isum = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            __m256i v = ld(x[b].qs + 32 * c);
            __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            isum = acc_pair(isum, lo, hi, y[b].qs + 64 * c, sc[2 * c], sc[2 * c + 1]);
        }
        sum += h2f(x[b].d) * y[b].d * (float)hsum_epi32(isum) - h2f(x[b].dmin) * y[b].d * (float)min_sum(m, y[b].bsums);
    }
    return sum;
}

float cll_kern_dot_q5_K_avx2(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q5_K *x = (const cll_block_q5_K *)w;
    const cll_block_q8_K *y = (const cll_block_q8_K *)act;
    const __m256i m4 = _mm256_set1_epi8(15), b4 = _mm256_set1_epi8(0x10);
    float sum = 0;
    for (int64_t b = 0; b < cols / 256; b++) {
        int sc[8], m[8];
        for (int j = 0; j < 8; j++) q4k_scale_min(j, x[b].scales, &sc[j], &m[j]);
        const __m256i qh = ld(x[b].qh);
        __m256i isum = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            __m256i v = ld(x[b].qs + 32 * c);
            const __m256i bl = _mm256_set1_epi8((char)(1 << (2 * c))), bh = _mm256_set1_epi8((char)(2 << (2 * c)));
            __m256i lo = _mm256_or_si256(_mm256_and_si256(v, m4),
                                         _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, bl), bl), b4));
            __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4),
                                         _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, bh), bh), b4));
            isum = acc_pair(isum, lo, hi, y[b].qs + 64 * c, sc[2 * c], sc[2 * c + 1]);
        }
        sum += h2f(x[b].d) * y[b].d * (float)hsum_epi32(isum) - h2f(x[b].dmin) * y[b].d * (float)min_sum(m, y[b].bsums);
    }
    return sum;
}

float cll_kern_dot_q6_K_avx2(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q6_K *x = (const cll_block_q6_K *)w;
    const cll_block_q8_K *y = (const cll_block_q8_K *)act;
    const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
    float sum = 0;
    for (int64_t b = 0; b < cols / 256; b++) {
        const int8_t *sc = x[b].scales;
        __m256i isum = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = x[b].ql + 64 * h;
            const int8_t *aq = y[b].qs + 128 * h;
            const __m256i vh = ld(x[b].qh + 32 * h), l0 = ld(ql), l1 = ld(ql + 32);
            __m256i q[4];
            q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(vh, 4), m30));
            q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(vh, 2), m30));
            q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(vh, m30));
            q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                   _mm256_and_si256(_mm256_srli_epi16(vh, 2), m30));
            for (int i = 0; i < 4; i++)
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(q[i], ld(aq + 32 * i)),
                                                                scale2(sc[8 * h + 2 * i], sc[8 * h + 2 * i + 1])));
        }
        int corr = 0;
        for (int s = 0; s < 16; s++) corr += sc[s] * y[b].bsums[s];
        sum += h2f(x[b].d) * y[b].d * (float)(hsum_epi32(isum) - 32 * corr);
    }
    return sum;
}

float cll_kern_dot_q2_K_avx2(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q2_K *x = (const cll_block_q2_K *)w;
    const cll_block_q8_K *y = (const cll_block_q8_K *)act;
    const __m256i m3 = _mm256_set1_epi8(3);
    float sum = 0;
    for (int64_t b = 0; b < cols / 256; b++) {
        const uint8_t *sc = x[b].scales;
        __m256i isum = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i v = ld(x[b].qs + 32 * h);
            for (int j = 0; j < 4; j++) {
                __m256i q = _mm256_and_si256(_mm256_srli_epi16(v, 2 * j), m3);
                const int s0 = 8 * h + 2 * j;
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(q, ld(y[b].qs + 128 * h + 32 * j)),
                                                                scale2(sc[s0] & 15, sc[s0 + 1] & 15)));
            }
        }
        int msum = 0;
        for (int s = 0; s < 16; s++) msum += (sc[s] >> 4) * y[b].bsums[s];
        sum += h2f(x[b].d) * y[b].d * (float)hsum_epi32(isum) - h2f(x[b].dmin) * y[b].d * (float)msum;
    }
    return sum;
}

/* Q3_K's 16 six-bit scales (biased by 32) from their 12-byte packing */
static void q3k_scales(const uint8_t *p, int out[16]) {
    for (int s = 0; s < 16; s++) {
        int lo = s < 8 ? p[s] & 15 : p[s - 8] >> 4;
        int hi = (p[8 + (s & 3)] >> (2 * (s >> 2))) & 3;
        out[s] = (lo | (hi << 4)) - 32;
    }
}

float cll_kern_dot_q3_K_avx2(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q3_K *x = (const cll_block_q3_K *)w;
    const cll_block_q8_K *y = (const cll_block_q8_K *)act;
    const __m256i m3 = _mm256_set1_epi8(3), b2 = _mm256_set1_epi8(4);
    float sum = 0;
    for (int64_t b = 0; b < cols / 256; b++) {
        int sc[16];
        q3k_scales(x[b].scales, sc);
        const __m256i hm = ld(x[b].hmask);
        __m256i isum = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i v = ld(x[b].qs + 32 * h);
            for (int j = 0; j < 4; j++) {
                const __m256i bit = _mm256_set1_epi8((char)(1 << (4 * h + j)));
                /* u = q2 + 4*hbit in 0..7; the quant is u - 4 */
                __m256i u = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 2 * j), m3),
                                            _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), bit), b2));
                const int s0 = 8 * h + 2 * j;
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(u, ld(y[b].qs + 128 * h + 32 * j)),
                                                                scale2(sc[s0], sc[s0 + 1])));
            }
        }
        int corr = 0;
        for (int s = 0; s < 16; s++) corr += sc[s] * y[b].bsums[s];
        sum += h2f(x[b].d) * y[b].d * (float)(hsum_epi32(isum) - 4 * corr);
    }
    return sum;
}

float cll_kern_dot_iq4_xs_avx2(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_iq4_xs *x = (const cll_block_iq4_xs *)w;
    const cll_block_q8_K *y = (const cll_block_q8_K *)act;
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)cll_kvalues_iq4nl));
    const __m128i m4 = _mm_set1_epi8(15);
    float sum = 0;
    for (int64_t b = 0; b < cols / 256; b++) {
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            const int ls = ((x[b].scales_l[ib / 2] >> (4 * (ib % 2))) & 15) | (((x[b].scales_h >> (2 * ib)) & 3) << 4);
            __m128i v = _mm_loadu_si128((const __m128i *)(x[b].qs + 16 * ib));
            __m256i idx = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m4), _mm_and_si128(v, m4));
            __m256i q = _mm256_shuffle_epi8(lut, idx);
            __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(q), _mm256_sign_epi8(ld(y[b].qs + 32 * ib), q));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, _mm256_set1_epi16((short)(ls - 32))));
        }
        sum += h2f(x[b].d) * y[b].d * (float)hsum_epi32(isum);
    }
    return sum;
}
