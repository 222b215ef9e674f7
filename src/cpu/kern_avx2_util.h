/* cpu/kern_avx2_util: the small AVX2 building blocks the AVX2 and AVX-512 kernel files share
 * (fp16 loads, 4-byte broadcasts, nibble and high-bit unpacking of the legacy quants).
 * Owns nothing. Rule: include only from files compiled with the AVX2 flag set or a wider one; anything
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

/* 8 fp16 values -> 8 floats */
INLINE __m256 load_fp16x8(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

/* the 4 bytes at p in every 32-bit lane */
INLINE __m256i bcast32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* Compiler-only ordering: the pointer p "depends" on v, so loads through p are emitted
 * after v is computed. GCC otherwise hoists every independent vpmaddubsw of a tile to
 * the top and spills the products; the CPU still overlaps the work out of order. */
#define AFTER(p, v) __asm__("" : "+r"(p) : "x"(v))

/* the r8 records' Q5 high bits: bit g of the qh bytes moved to bit 4 (16-bit shifts stay
 * in-byte), the 5th bit of register g */
INLINE __m256i hbit(__m256i qh, const int g) {
    const __m256i h = g <= 4 ? _mm256_slli_epi16(qh, 4 - g) : _mm256_srli_epi16(qh, g - 4);
    return _mm256_and_si256(h, _mm256_set1_epi8(0x10));
}

#endif
