/* cpu/kern_plain_avx2: AVX2 rows on the layout stored in the file (no repacking), for
 * the 32-element formats and F32/F16, plus the driver every plain AVX2 row uses: rows
 * outer, tokens inner, so a row (<= a few KiB) stays in L1 while all tokens read it.
 * Serves shapes the r8 rows refuse (rows % 8 != 0) and types without an r8 layout.
 * Weights widen to bytes in element order; vpmaddubsw takes them unsigned (with an
 * offset fixed by the activation sums) or via the sign trick (|w| x sign(a, w)). */
#include <immintrin.h>
#include <string.h>

#include "cpu/kern_avx2_util.h"
#include "cpu/kern_common.h"
#include "cpu/kern_plain_avx2.h"
#include "formats/iq_tables.h"


INLINE float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}



/* 32 bits -> 32 bytes, 0x10 where the bit is set (the 5th bit of Q5 quants) */
INLINE __m256i bits_to_0x10(const uint8_t *qh) { return _mm256_and_si256(bits32(qh), _mm256_set1_epi8(0x10)); }

/* sum over pairs of unsigned w x signed a, widened to 8 int32 */
INLINE __m256i dot_u8s8(__m256i w, __m256i a) { return _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1)); }
/* signed w x signed a via the sign trick (|w| <= 127 or 128 is fine: pairs fit int16) */
INLINE __m256i dot_s8s8(__m256i w, __m256i a) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(a, w)), _mm256_set1_epi16(1));
}

static float dot_q4_0(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q4_0 *x = (const cll_block_q4_0 *)w;
    const kact_q8_0x *y = (const kact_q8_0x *)act;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < cols / 32; b++) {
        __m256i s = _mm256_sub_epi32(dot_u8s8(nibbles32(x[b].qs), _mm256_loadu_si256((const __m256i *)y[b].qs)),
                                     _mm256_set1_epi32(y[b].s8 / 8)); /* 8 lanes x sum(a): the -8 offset */
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(h2f(x[b].d) * y[b].d), acc);
    }
    return hsum_ps(acc);
}

static float dot_q5_0(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q5_0 *x = (const cll_block_q5_0 *)w;
    const kact_q8_0x *y = (const kact_q8_0x *)act;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < cols / 32; b++) {
        __m256i q = _mm256_or_si256(nibbles32(x[b].qs), bits_to_0x10(x[b].qh));
        __m256i s = _mm256_sub_epi32(dot_u8s8(q, _mm256_loadu_si256((const __m256i *)y[b].qs)),
                                     _mm256_set1_epi32(y[b].s8 / 4)); /* 8 lanes x 2 sum(a): the -16 offset */
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(h2f(x[b].d) * y[b].d), acc);
    }
    return hsum_ps(acc);
}

static float dot_q8_0(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q8_0 *x = (const cll_block_q8_0 *)w;
    const kact_q8_0x *y = (const kact_q8_0x *)act;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < cols / 32; b++) {
        __m256i s = dot_s8s8(_mm256_loadu_si256((const __m256i *)x[b].qs), _mm256_loadu_si256((const __m256i *)y[b].qs));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(h2f(x[b].d) * y[b].d), acc);
    }
    return hsum_ps(acc);
}

static float dot_iq4_nl(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_iq4_nl *x = (const cll_block_iq4_nl *)w;
    const kact_q8_0x *y = (const kact_q8_0x *)act;
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)cll_kvalues_iq4nl));
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < cols / 32; b++) {
        __m256i q = _mm256_shuffle_epi8(lut, nibbles32(x[b].qs));
        __m256i s = dot_s8s8(q, _mm256_loadu_si256((const __m256i *)y[b].qs));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(h2f(x[b].d) * y[b].d), acc);
    }
    return hsum_ps(acc);
}

/* Q4_1 / Q5_1 with Q8_1: d*da*sum(q*a) + m*s (s = ggml's fp16 d*sum(a)) */
static float dot_q4_1(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q4_1 *x = (const cll_block_q4_1 *)w;
    const cll_block_q8_1 *y = (const cll_block_q8_1 *)act;
    __m256 acc = _mm256_setzero_ps();
    float macc = 0;
    for (int64_t b = 0; b < cols / 32; b++) {
        __m256i s = dot_u8s8(nibbles32(x[b].qs), _mm256_loadu_si256((const __m256i *)y[b].qs));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(h2f(x[b].d) * h2f(y[b].d)), acc);
        macc += h2f(x[b].m) * h2f(y[b].s);
    }
    return hsum_ps(acc) + macc;
}

static float dot_q5_1(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const cll_block_q5_1 *x = (const cll_block_q5_1 *)w;
    const cll_block_q8_1 *y = (const cll_block_q8_1 *)act;
    __m256 acc = _mm256_setzero_ps();
    float macc = 0;
    for (int64_t b = 0; b < cols / 32; b++) {
        __m256i q = _mm256_or_si256(nibbles32(x[b].qs), bits_to_0x10(x[b].qh));
        __m256i s = dot_u8s8(q, _mm256_loadu_si256((const __m256i *)y[b].qs));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(h2f(x[b].d) * h2f(y[b].d)), acc);
        macc += h2f(x[b].m) * h2f(y[b].s);
    }
    return hsum_ps(acc) + macc;
}

static float dot_f32(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const float *x = (const float *)w, *y = (const float *)act;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= cols; i += 32) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), _mm256_loadu_ps(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), _mm256_loadu_ps(y + i + 24), a3);
    }
    for (; i + 8 <= cols; i += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
    float s = hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < cols; i++) s += x[i] * y[i];
    return s;
}

INLINE __m256 ld_h8(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

static float dot_f16(const uint8_t *w, const uint8_t *act, int64_t cols) {
    const uint16_t *x = (const uint16_t *)w, *y = (const uint16_t *)act;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= cols; i += 32) {
        a0 = _mm256_fmadd_ps(ld_h8(x + i), ld_h8(y + i), a0);
        a1 = _mm256_fmadd_ps(ld_h8(x + i + 8), ld_h8(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(ld_h8(x + i + 16), ld_h8(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(ld_h8(x + i + 24), ld_h8(y + i + 24), a3);
    }
    for (; i + 8 <= cols; i += 8) a0 = _mm256_fmadd_ps(ld_h8(x + i), ld_h8(y + i), a0);
    float s = hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < cols; i++) s += _cvtsh_ss(x[i]) * _cvtsh_ss(y[i]);
    return s;
}

typedef float (*dot_fn)(const uint8_t *w, const uint8_t *act, int64_t cols);

static dot_fn dot_for(uint32_t t) {
    switch (t) {
    case CLL_TYPE_F32: return dot_f32;
    case CLL_TYPE_F16: return dot_f16;
    case CLL_TYPE_Q4_0: return dot_q4_0;
    case CLL_TYPE_Q4_1: return dot_q4_1;
    case CLL_TYPE_Q5_0: return dot_q5_0;
    case CLL_TYPE_Q5_1: return dot_q5_1;
    case CLL_TYPE_Q8_0: return dot_q8_0;
    case CLL_TYPE_IQ4_NL: return dot_iq4_nl;
    case CLL_TYPE_Q2_K: return cll_kern_dot_q2_K_avx2;
    case CLL_TYPE_Q3_K: return cll_kern_dot_q3_K_avx2;
    case CLL_TYPE_Q4_K: return cll_kern_dot_q4_K_avx2;
    case CLL_TYPE_Q5_K: return cll_kern_dot_q5_K_avx2;
    case CLL_TYPE_Q6_K: return cll_kern_dot_q6_K_avx2;
    case CLL_TYPE_IQ4_XS: return cll_kern_dot_iq4_xs_avx2;
    default: return NULL;
    }
}

bool cll_kern_plain_avx2_has(uint32_t wtype) { return dot_for(wtype) != NULL; }

void cll_kern_run_plain_avx2(const kern_args *a, int64_t r0, int64_t r1) {
    const dot_fn dot = dot_for(a->wtype);
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = a->w + (size_t)r * a->w_row_bytes;
        /* the next row streams in while this one is read n times */
        if (r + 1 < r1) _mm_prefetch((const char *)(w + a->w_row_bytes), _MM_HINT_T0);
        for (int64_t t = 0; t < a->n; t++) a->y[t * a->ldy + r] = dot(w, a->act + t * a->act_stride, a->cols);
    }
}
