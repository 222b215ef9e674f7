/* cpu/kern_act_avx2: AVX2 activation quantizers, byte-identical with formats'
 * cll_quantize_q8_0 / cll_quantize_q8_1 / cll_quantize_q8_K (same float ops in the same order: amax, the
 * same scale expression, one multiply, round half to even). */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "cpu/kern_common.h"

static inline float hmax8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

static inline int hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* 8 floats -> 8 int32 rounded half-to-even, packed later */
static inline __m256i round8(__m256 v) { return _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); }

/* pack 4 x 8 int32 (values in [-127, 127]) into 32 int8 in element order */
static inline __m256i pack32(__m256i a, __m256i b, __m256i c, __m256i d) {
    __m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);
    __m256i q = _mm256_packs_epi16(ab, cd);
    /* packs interleave 128-bit lanes: restore element order */
    return _mm256_permutevar8x32_epi32(q, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* one 32-value block as ggml's Q8_0 quantizer: the int8 quants, *d = amax / 127, *sum = sum of the
 * quants (maddubs(1, q) sums byte pairs exactly) */
static inline __m256i q8_block32(const float *x, float *d, int *sum) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8), v2 = _mm256_loadu_ps(x + 16),
                 v3 = _mm256_loadu_ps(x + 24);
    const __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                                   _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
    const float amax = hmax8(m);
    *d = amax / 127.f;
    const __m256 vid = _mm256_set1_ps(amax != 0.0f ? 127.f / amax : 0.0f);
    const __m256i q = pack32(round8(_mm256_mul_ps(v0, vid)), round8(_mm256_mul_ps(v1, vid)),
                             round8(_mm256_mul_ps(v2, vid)), round8(_mm256_mul_ps(v3, vid)));
    *sum = hsum_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q), _mm256_set1_epi16(1)));
    return q;
}

void cll_kern_act_q8_0x_avx2(const float *x, kact_q8_0x *y, int64_t cols) {
    for (int64_t b = 0; b < cols / 32; b++, x += 32) {
        float d;
        int sum;
        _mm256_storeu_si256((__m256i *)y[b].qs, q8_block32(x, &d, &sum));
        y[b].d = cll_fp16_to_f32(cll_f32_to_fp16(d));
        y[b].s8 = 8 * sum;
    }
}

/* ggml's Q8_1 bytes: the Q8_0 quants and d, plus s = fp16(d * sum(q)) (the Q4_1 / Q5_1 rows) */
void cll_kern_act_q8_1_avx2(const float *x, cll_block_q8_1 *y, int64_t cols) {
    for (int64_t b = 0; b < cols / 32; b++, x += 32) {
        float d;
        int sum;
        _mm256_storeu_si256((__m256i *)y[b].qs, q8_block32(x, &d, &sum));
        y[b].d = cll_f32_to_fp16(d);
        y[b].s = cll_f32_to_fp16(d * (float)sum);
    }
}

void cll_kern_act_q8_K_avx2(const float *x, cll_block_q8_K *y, int64_t cols) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i ones8 = _mm256_set1_epi8(1);
    for (int64_t b = 0; b < cols / 256; b++, x += 256) {
        __m256 m = _mm256_setzero_ps();
        for (int j = 0; j < 256; j += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)));
        const float amax = hmax8(m);
        if (!amax) {
            memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        /* the first element whose magnitude is amax gives the signed max (ggml scans with >) */
        float max = 0;
        const __m256 va = _mm256_set1_ps(amax);
        for (int j = 0; j < 256; j += 8) {
            int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)), va, _CMP_EQ_OQ));
            if (mask) {
                max = x[j + __builtin_ctz((unsigned)mask)];
                break;
            }
        }
        const float iscale = -127.f / max;
        const __m256 vs = _mm256_set1_ps(iscale);
        const __m256i lim = _mm256_set1_epi32(127);
        for (int j = 0; j < 256; j += 32) {
            __m256i q0 = _mm256_min_epi32(round8(_mm256_mul_ps(vs, _mm256_loadu_ps(x + j))), lim);
            __m256i q1 = _mm256_min_epi32(round8(_mm256_mul_ps(vs, _mm256_loadu_ps(x + j + 8))), lim);
            __m256i q2 = _mm256_min_epi32(round8(_mm256_mul_ps(vs, _mm256_loadu_ps(x + j + 16))), lim);
            __m256i q3 = _mm256_min_epi32(round8(_mm256_mul_ps(vs, _mm256_loadu_ps(x + j + 24))), lim);
            __m256i q = pack32(q0, q1, q2, q3);
            _mm256_storeu_si256((__m256i *)(y[b].qs + j), q);
            /* bsums: pairs summed by maddubs(1, q), then 8 int16 per 16 elements */
            __m256i p = _mm256_maddubs_epi16(ones8, q);              /* 16 x int16 pair sums */
            __m128i h = _mm_hadd_epi16(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1)); /* quads */
            h = _mm_hadd_epi16(h, h);                                /* 8-sums: e0..7, e8..15 | e16..23, e24..31 */
            h = _mm_hadd_epi16(h, h);                                /* 16-sums: [e0..15, e16..31, ...] */
            y[b].bsums[j / 16] = (int16_t)_mm_extract_epi16(h, 0);
            y[b].bsums[j / 16 + 1] = (int16_t)_mm_extract_epi16(h, 1);
        }
        y[b].d = 1 / iscale;
    }
}

void cll_kern_act_f16_avx2(const float *x, uint16_t *dst, int64_t cols) {
    int64_t i = 0;
    for (; i + 8 <= cols; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < cols; i++) dst[i] = cll_f32_to_fp16(x[i]);
}
