/* formats/dequant: the per-type reference dequantizers and quantizers behind the
 * traits table (one family per file: dequant_legacy.c, dequant_kquant.c, dequant_iq.c,
 * quantize.c). Internal to formats: other modules reach them through cll_type_traits.
 * Rule: each to_f32 performs ggml's float operations in ggml's order, so results are
 * bit-identical with ggml's reference dequantizer (tests/formats_test.c proves it). */
#ifndef CLL_FORMATS_DEQUANT_H
#define CLL_FORMATS_DEQUANT_H

#include <stdint.h>

#include "formats/blocks.h"
#include "formats/formats.h"

/* E8M0 exponent -> 2^(e-127) / 2, exactly (MXFP4 stores doubled E2M1 values) */
static inline float cll_e8m0_to_f32_half(uint8_t e) {
    union { uint32_t u; float f; } v;
    v.u = e < 2 ? (uint32_t)0x00200000 << e : (uint32_t)(e - 1) << 23;
    return v.f;
}

/* Q4_K / Q5_K 6-bit scale and min of sub-block j (0..7) from the packed 12 bytes */
static inline void cll_q4k_scale_min(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* IQ1_M's fp16 super-scale bits: the top nibble of each of its 4 scale words */
uint16_t cll_iq1m_scale_bits(const cll_block_iq1_m *b);

/* Q3_K: unpack the 16 6-bit scales (still biased by 32) */
void cll_q3k_scales(const uint8_t packed[12], int8_t out[16]);

void cll_dequant_f32(const void *src, float *dst, int64_t n);
void cll_dequant_f16(const void *src, float *dst, int64_t n);
void cll_dequant_bf16(const void *src, float *dst, int64_t n);
void cll_dequant_q4_0(const void *src, float *dst, int64_t n);
void cll_dequant_q4_1(const void *src, float *dst, int64_t n);
void cll_dequant_q5_0(const void *src, float *dst, int64_t n);
void cll_dequant_q5_1(const void *src, float *dst, int64_t n);
void cll_dequant_q8_0(const void *src, float *dst, int64_t n);
void cll_dequant_iq4_nl(const void *src, float *dst, int64_t n);
void cll_dequant_mxfp4(const void *src, float *dst, int64_t n);

void cll_dequant_q2_K(const void *src, float *dst, int64_t n);
void cll_dequant_q3_K(const void *src, float *dst, int64_t n);
void cll_dequant_q4_K(const void *src, float *dst, int64_t n);
void cll_dequant_q5_K(const void *src, float *dst, int64_t n);
void cll_dequant_q6_K(const void *src, float *dst, int64_t n);
void cll_dequant_tq1_0(const void *src, float *dst, int64_t n);
void cll_dequant_tq2_0(const void *src, float *dst, int64_t n);

void cll_dequant_iq2_xxs(const void *src, float *dst, int64_t n);
void cll_dequant_iq2_xs(const void *src, float *dst, int64_t n);
void cll_dequant_iq2_s(const void *src, float *dst, int64_t n);
void cll_dequant_iq3_xxs(const void *src, float *dst, int64_t n);
void cll_dequant_iq3_s(const void *src, float *dst, int64_t n);
void cll_dequant_iq1_s(const void *src, float *dst, int64_t n);
void cll_dequant_iq1_m(const void *src, float *dst, int64_t n);
void cll_dequant_iq4_xs(const void *src, float *dst, int64_t n);

/* weight quantizers (ggml's *_ref, no importance matrix; quantize.c, quantize_kquant.c) */
void cll_quantize_f32(const float *x, void *dst, int64_t n);
void cll_quantize_f16(const float *x, void *dst, int64_t n);
void cll_quantize_bf16(const float *x, void *dst, int64_t n);
void cll_quantize_q4_0(const float *x, void *dst, int64_t n);
void cll_quantize_q4_1(const float *x, void *dst, int64_t n);
void cll_quantize_q5_0(const float *x, void *dst, int64_t n);
void cll_quantize_q5_1(const float *x, void *dst, int64_t n);
void cll_quantize_q8_0_ref(const float *x, void *dst, int64_t n);
void cll_quantize_q4_K(const float *x, void *dst, int64_t n);
void cll_quantize_q5_K(const float *x, void *dst, int64_t n);
void cll_quantize_q6_K(const float *x, void *dst, int64_t n);

#endif
