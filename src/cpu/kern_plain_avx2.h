/* cpu/kern_plain_avx2: one-row dot products on the file layout for the 256-element
 * formats (kern_kquant_avx2.c), used by the plain AVX2 driver in kern_plain_avx2.c.
 * Owns nothing. Rule: act is the type's vec_dot_type row (Q8_K), cols % 256 == 0. */
#ifndef CLL_CPU_KERN_PLAIN_AVX2_H
#define CLL_CPU_KERN_PLAIN_AVX2_H

#include <stdint.h>

float cll_kern_dot_q2_K_avx2(const uint8_t *w, const uint8_t *act, int64_t cols);
float cll_kern_dot_q3_K_avx2(const uint8_t *w, const uint8_t *act, int64_t cols);
float cll_kern_dot_q4_K_avx2(const uint8_t *w, const uint8_t *act, int64_t cols);
float cll_kern_dot_q5_K_avx2(const uint8_t *w, const uint8_t *act, int64_t cols);
float cll_kern_dot_q6_K_avx2(const uint8_t *w, const uint8_t *act, int64_t cols);
float cll_kern_dot_iq4_xs_avx2(const uint8_t *w, const uint8_t *act, int64_t cols);

#endif
