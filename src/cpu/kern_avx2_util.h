/* cpu/kern_avx2_util: the small AVX2 building blocks every *_avx2.c kernel file shares
 * (fp16 scalar loads, nibble and high-bit unpacking of the legacy quants).
 * Owns nothing. Rule: include only from files compiled with the *_avx2.c flag set; anything
 * whose float summation ORDER matters (ggml-exact rows) stays in its own file. */
#ifndef CLL_KERN_AVX2_UTIL_H
#define CLL_KERN_AVX2_UTIL_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))

INLINE float h2f(uint16_t h) { return _cvtsh_ss(h); }

/* 16 packed nibbles -> 32 bytes in element order (low nibbles = elements 0..15, high 16..31) */
INLINE __m256i nibbles32(const uint8_t *qs) {
    const __m128i v = _mm_loadu_si128((const __m128i *)qs);
    const __m128i m4 = _mm_set1_epi8(15);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m4), _mm_and_si128(v, m4));
}

/* 32 bits -> 32 bytes: byte j = 0xff where bit j is set (the 5th bit of the Q5 quants) */
INLINE __m256i bits32(const uint8_t *qh) {
    uint32_t b;
    memcpy(&b, qh, 4);
    const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                                          3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)b), shuf);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

#endif
