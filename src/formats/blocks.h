/* formats/blocks: the byte layout of one block of every quantized GGML type.
 * Plain C shared by the host code and the CUDA kernels (.cu includes it): fp16 fields
 * are uint16_t bit patterns, no C++-only syntax, sizes pinned by _Static_assert.
 * Rule: these structs are the on-disk layout exactly (GGUF tensor bytes); never reorder.
 * "fp16" below = IEEE half bits; QK_K = 256 elements per super-block. */
#ifndef CLL_FORMATS_BLOCKS_H
#define CLL_FORMATS_BLOCKS_H

#include <stdint.h>

#define CLL_QK4_0 32
#define CLL_QK4_1 32
#define CLL_QK5_0 32
#define CLL_QK5_1 32
#define CLL_QK8_0 32
#define CLL_QK8_1 32
#define CLL_QK4_NL 32
#define CLL_QK_MXFP4 32
#define CLL_QK_K 256

#if defined(__cplusplus)
#define CLL_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define CLL_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

/* ---- legacy 32-element blocks ----------------------------------------------------
 * Nibble packing shared by Q4_0/Q4_1/Q5_x/IQ4_NL/MXFP4: qs[j] low nibble = element j,
 * high nibble = element j+16 (j < 16). Q5 keeps the 5th bit of element i in bit i of qh. */

/* Q4_0: x = d * (q - 8)                     | d fp16 | qs[16] (4-bit) |            18 B */
typedef struct { uint16_t d; uint8_t qs[16]; } cll_block_q4_0;
/* Q4_1: x = d * q + m                       | d fp16 | m fp16 | qs[16] |           20 B */
typedef struct { uint16_t d, m; uint8_t qs[16]; } cll_block_q4_1;
/* Q5_0: x = d * (q - 16), q = nibble | qh bit << 4   | d | qh[4] | qs[16] |        22 B */
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; } cll_block_q5_0;
/* Q5_1: x = d * q + m                       | d | m | qh[4] | qs[16] |             24 B */
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; } cll_block_q5_1;
/* Q8_0: x = d * q                           | d fp16 | qs[32] int8 |               34 B */
typedef struct { uint16_t d; int8_t qs[32]; } cll_block_q8_0;
/* Q8_1 (activations): x = d * q, s = d * sum(q)   | d fp16 | s fp16 | qs[32] int8 | 36 B */
typedef struct { uint16_t d, s; int8_t qs[32]; } cll_block_q8_1;
/* IQ4_NL: x = d * kvalues_iq4nl[q]          | d fp16 | qs[16] (4-bit index) |      18 B */
typedef struct { uint16_t d; uint8_t qs[16]; } cll_block_iq4_nl;
/* MXFP4: x = e8m0_half(e) * kvalues_mxfp4[q]   | e (E8M0 exponent) | qs[16] |      17 B */
typedef struct { uint8_t e; uint8_t qs[16]; } cll_block_mxfp4;

/* ---- K-quants: 256-element super-blocks ------------------------------------------- */

/* Q2_K: 16 sub-blocks of 16. x = d*(sc&15)*q - dmin*(sc>>4), q 2-bit.
 * | scales[16] (lo nibble scale, hi nibble min) | qs[64] | d fp16 | dmin fp16 |   84 B
 * qs: for each 128-half h, byte qs[32h + l] holds elements 128h + 32s + l at bits 2s. */
typedef struct { uint8_t scales[16]; uint8_t qs[64]; uint16_t d, dmin; } cll_block_q2_K;
/* Q3_K: 16 sub-blocks of 16. x = d*(sc-32)*(q2 - (hbit ? 0 : 4)), sc 6-bit.
 * | hmask[32] (bit s of hmask[l] = high bit of element 32s+l) | qs[64] (2-bit, as Q2_K)
 * | scales[12] (16 x 6 bit: low nibbles in bytes 0..7, high 2-bit pairs in 8..11) | d |  110 B */
typedef struct { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; } cll_block_q3_K;
/* Q4_K: 8 sub-blocks of 32. x = d*sc*q - dmin*m, sc/m 6-bit.
 * | d fp16 | dmin fp16 | scales[12] (8 scales + 8 mins, 6 bit each) | qs[128] |       144 B
 * qs[32c + l]: low nibble = element 64c + l, high nibble = element 64c + 32 + l.
 * scales: j<4: sc = s[j]&63, m = s[j+4]&63; j>=4: sc = (s[j+4]&15)|(s[j-4]>>6)<<4,
 *         m = (s[j+4]>>4)|(s[j]>>6)<<4. */
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; } cll_block_q4_K;
/* Q5_K: as Q4_K plus a 5th bit: bit (2c) / (2c+1) of qh[l] for the low / high nibble of
 * chunk c.  | d | dmin | scales[12] | qh[32] | qs[128] |                             176 B */
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; } cll_block_q5_K;
/* Q6_K: 16 sub-blocks of 16. x = d*sc*(q - 32), q 6-bit, sc int8.
 * | ql[128] (low 4 bits) | qh[64] (high 2 bits) | scales[16] int8 | d fp16 |       210 B
 * per 128-half: ql[l] lo/hi nibble -> elements l / l+64, ql[l+32] -> l+32 / l+96,
 * qh[l] bits 0-1,2-3,4-5,6-7 -> elements l, l+32, l+64, l+96. */
typedef struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; } cll_block_q6_K;
/* Q8_K (activations): x = d * q; bsums[i] = sum of q[16i .. 16i+15].
 * | d f32 | qs[256] int8 | bsums[16] int16 |                                          292 B */
typedef struct { float d; int8_t qs[256]; int16_t bsums[16]; } cll_block_q8_K;

/* ---- i-quants (256-element super-blocks, 8 groups of 32) --------------------------- */

/* IQ2_XXS: per group 2 u32: aux0 = 4 grid indices (8 bit, iq2xxs_grid), aux1 = 4 x 7-bit
 * sign indices (ksigns) + 4-bit scale in bits 28-31. x = d*(0.5+s)/4 * grid * sign.
 * | d fp16 | qs[32] u16 |                                                             66 B */
typedef struct { uint16_t d; uint16_t qs[32]; } cll_block_iq2_xxs;
/* IQ2_XS: qs[i] = 9-bit index into iq2xs_grid | 7-bit sign index << 9;
 * scales[g] = two 4-bit scales (first / second 16 of group g).
 * | d fp16 | qs[32] u16 | scales[8] |                                                74 B */
typedef struct { uint16_t d; uint16_t qs[32]; uint8_t scales[8]; } cll_block_iq2_xs;
/* IQ2_S: 10-bit indices into iq2s_grid: low 8 bits qs[i], high 2 bits from qh[group];
 * explicit sign bytes (one per 8 elements) follow the indices inside qs.
 * | d fp16 | qs[64] (32 index bytes, then 32 sign bytes) | qh[8] | scales[8] |       82 B */
typedef struct { uint16_t d; uint8_t qs[64]; uint8_t qh[8]; uint8_t scales[8]; } cll_block_iq2_s;
/* IQ3_XXS: qs[0..63] = 8-bit indices into iq3xxs_grid (4 elements each); then per group
 * a u32 = 4 x 7-bit sign indices + 4-bit scale (bits 28-31). x = d*(0.5+s)/2 * grid * sign.
 * | d fp16 | qs[96] |                                                                  98 B */
typedef struct { uint16_t d; uint8_t qs[96]; } cll_block_iq3_xxs;
/* IQ3_S: 9-bit indices into iq3s_grid (low 8 in qs, 9th bit in qh), explicit signs,
 * 4-bit scales (two groups per byte). x = d*(1+2s) * grid * sign.
 * | d fp16 | qs[64] | qh[8] | signs[32] | scales[4] |                                110 B */
typedef struct { uint16_t d; uint8_t qs[64]; uint8_t qh[8]; uint8_t signs[32]; uint8_t scales[4]; } cll_block_iq3_s;
/* IQ1_S: 11-bit indices into iq1s_grid (low 8 in qs, high 3 in qh[g] bits 3l..3l+2);
 * qh[g] bits 12-14 = scale s, bit 15 = delta sign. x = d*(2s+1) * (grid +- 1/8).
 * | d fp16 | qs[32] | qh[8] u16 |                                                     50 B */
typedef struct { uint16_t d; uint8_t qs[32]; uint16_t qh[8]; } cll_block_iq1_s;
/* IQ1_M: no separate d: the fp16 super-scale is the top nibbles of the 4 u16 in scales.
 * qh[2g + k] nibbles: bits 0-2 = index high bits, bit 3 = delta sign (per 8 elements);
 * scales (as u16[4]): 3-bit sub-scales (4 per u16, one per 16 elements) + d nibble.
 * | qs[32] | qh[16] | scales[8] |                                                     56 B */
typedef struct { uint8_t qs[32]; uint8_t qh[16]; uint8_t scales[8]; } cll_block_iq1_m;
/* IQ4_XS: 8 groups of 32, 6-bit scale each (low 4 in scales_l nibbles, high 2 in
 * scales_h bits 2g..2g+1). x = d*(ls-32) * kvalues_iq4nl[q]; nibbles as IQ4_NL per group.
 * | d fp16 | scales_h u16 | scales_l[4] | qs[128] |                                  136 B */
typedef struct { uint16_t d; uint16_t scales_h; uint8_t scales_l[4]; uint8_t qs[128]; } cll_block_iq4_xs;

/* ---- ternary -------------------------------------------------------------------- */

/* TQ1_0: base-3 packing, 5 trits per byte in qs (elements 0..239), 4 per byte in qh
 * (240..255); trit = (uint8(q * 3^n) * 3) >> 8, x = d * (trit - 1).
 * | qs[48] | qh[4] | d fp16 |                                                         54 B */
typedef struct { uint8_t qs[48]; uint8_t qh[4]; uint16_t d; } cll_block_tq1_0;
/* TQ2_0: 2 bits per element, x = d * (q - 1); qs[32c + m] bits 2l -> element 128c+32l+m.
 * | qs[64] | d fp16 |                                                                 66 B */
typedef struct { uint8_t qs[64]; uint16_t d; } cll_block_tq2_0;

CLL_STATIC_ASSERT(sizeof(cll_block_q4_0) == 18, "q4_0 size");
CLL_STATIC_ASSERT(sizeof(cll_block_q4_1) == 20, "q4_1 size");
CLL_STATIC_ASSERT(sizeof(cll_block_q5_0) == 22, "q5_0 size");
CLL_STATIC_ASSERT(sizeof(cll_block_q5_1) == 24, "q5_1 size");
CLL_STATIC_ASSERT(sizeof(cll_block_q8_0) == 34, "q8_0 size");
CLL_STATIC_ASSERT(sizeof(cll_block_q8_1) == 36, "q8_1 size");
CLL_STATIC_ASSERT(sizeof(cll_block_iq4_nl) == 18, "iq4_nl size");
CLL_STATIC_ASSERT(sizeof(cll_block_mxfp4) == 17, "mxfp4 size");
CLL_STATIC_ASSERT(sizeof(cll_block_q2_K) == 84, "q2_K size");
CLL_STATIC_ASSERT(sizeof(cll_block_q3_K) == 110, "q3_K size");
CLL_STATIC_ASSERT(sizeof(cll_block_q4_K) == 144, "q4_K size");
CLL_STATIC_ASSERT(sizeof(cll_block_q5_K) == 176, "q5_K size");
CLL_STATIC_ASSERT(sizeof(cll_block_q6_K) == 210, "q6_K size");
CLL_STATIC_ASSERT(sizeof(cll_block_q8_K) == 292, "q8_K size");
CLL_STATIC_ASSERT(sizeof(cll_block_iq2_xxs) == 66, "iq2_xxs size");
CLL_STATIC_ASSERT(sizeof(cll_block_iq2_xs) == 74, "iq2_xs size");
CLL_STATIC_ASSERT(sizeof(cll_block_iq2_s) == 82, "iq2_s size");
CLL_STATIC_ASSERT(sizeof(cll_block_iq3_xxs) == 98, "iq3_xxs size");
CLL_STATIC_ASSERT(sizeof(cll_block_iq3_s) == 110, "iq3_s size");
CLL_STATIC_ASSERT(sizeof(cll_block_iq1_s) == 50, "iq1_s size");
CLL_STATIC_ASSERT(sizeof(cll_block_iq1_m) == 56, "iq1_m size");
CLL_STATIC_ASSERT(sizeof(cll_block_iq4_xs) == 136, "iq4_xs size");
CLL_STATIC_ASSERT(sizeof(cll_block_tq1_0) == 54, "tq1_0 size");
CLL_STATIC_ASSERT(sizeof(cll_block_tq2_0) == 66, "tq2_0 size");

#endif
