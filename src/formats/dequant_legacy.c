/* formats/dequant_legacy: reference to_f32 for the plain and 32-element block types
 * (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4).
 * Every expression keeps ggml's operand order (q * d, then + m): float multiply and
 * add are not associative, and bit-exactness with the goldens depends on it. */
#include <string.h>

#include "formats/dequant.h"
#include "formats/iq_tables.h"

#define H2F cll_fp16_to_f32

void cll_dequant_f32(const void *src, float *dst, int64_t n) { memcpy(dst, src, (size_t)n * sizeof(float)); }

void cll_dequant_f16(const void *src, float *dst, int64_t n) {
    const uint16_t *h = src;
    for (int64_t i = 0; i < n; i++) dst[i] = H2F(h[i]);
}

void cll_dequant_bf16(const void *src, float *dst, int64_t n) {
    const uint16_t *h = src;
    for (int64_t i = 0; i < n; i++) dst[i] = cll_bf16_to_f32(h[i]);
}

void cll_dequant_q4_0(const void *src, float *y, int64_t n) {
    const cll_block_q4_0 *x = src;
    for (int64_t i = 0; i < n / CLL_QK4_0; i++, y += 32) {
        const float d = H2F(x[i].d);
        for (int j = 0; j < 16; j++) {
            const int x0 = (x[i].qs[j] & 0x0F) - 8;
            const int x1 = (x[i].qs[j] >> 4) - 8;
            y[j] = x0 * d;
            y[j + 16] = x1 * d;
        }
    }
}

void cll_dequant_q4_1(const void *src, float *y, int64_t n) {
    const cll_block_q4_1 *x = src;
    for (int64_t i = 0; i < n / CLL_QK4_1; i++, y += 32) {
        const float d = H2F(x[i].d), m = H2F(x[i].m);
        for (int j = 0; j < 16; j++) {
            const int x0 = x[i].qs[j] & 0x0F;
            const int x1 = x[i].qs[j] >> 4;
            y[j] = x0 * d + m;
            y[j + 16] = x1 * d + m;
        }
    }
}

void cll_dequant_q5_0(const void *src, float *y, int64_t n) {
    const cll_block_q5_0 *x = src;
    for (int64_t i = 0; i < n / CLL_QK5_0; i++, y += 32) {
        const float d = H2F(x[i].d);
        uint32_t qh;
        memcpy(&qh, x[i].qh, 4);
        for (int j = 0; j < 16; j++) {
            const uint8_t h0 = (uint8_t)(((qh >> j) << 4) & 0x10);
            const uint8_t h1 = (uint8_t)((qh >> (j + 12)) & 0x10);
            const int x0 = ((x[i].qs[j] & 0x0F) | h0) - 16;
            const int x1 = ((x[i].qs[j] >> 4) | h1) - 16;
            y[j] = x0 * d;
            y[j + 16] = x1 * d;
        }
    }
}

void cll_dequant_q5_1(const void *src, float *y, int64_t n) {
    const cll_block_q5_1 *x = src;
    for (int64_t i = 0; i < n / CLL_QK5_1; i++, y += 32) {
        const float d = H2F(x[i].d), m = H2F(x[i].m);
        uint32_t qh;
        memcpy(&qh, x[i].qh, 4);
        for (int j = 0; j < 16; j++) {
            const uint8_t h0 = (uint8_t)(((qh >> j) << 4) & 0x10);
            const uint8_t h1 = (uint8_t)((qh >> (j + 12)) & 0x10);
            const int x0 = (x[i].qs[j] & 0x0F) | h0;
            const int x1 = (x[i].qs[j] >> 4) | h1;
            y[j] = x0 * d + m;
            y[j + 16] = x1 * d + m;
        }
    }
}

void cll_dequant_q8_0(const void *src, float *y, int64_t n) {
    const cll_block_q8_0 *x = src;
    for (int64_t i = 0; i < n / CLL_QK8_0; i++, y += 32) {
        const float d = H2F(x[i].d);
        for (int j = 0; j < 32; j++) y[j] = x[i].qs[j] * d;
    }
}

void cll_dequant_iq4_nl(const void *src, float *y, int64_t n) {
    const cll_block_iq4_nl *x = src;
    for (int64_t i = 0; i < n / CLL_QK4_NL; i++, y += 32) {
        const float d = H2F(x[i].d);
        for (int j = 0; j < 16; j++) {
            y[j] = d * cll_kvalues_iq4nl[x[i].qs[j] & 0xf];
            y[j + 16] = d * cll_kvalues_iq4nl[x[i].qs[j] >> 4];
        }
    }
}

void cll_dequant_mxfp4(const void *src, float *y, int64_t n) {
    const cll_block_mxfp4 *x = src;
    for (int64_t i = 0; i < n / CLL_QK_MXFP4; i++, y += 32) {
        const float d = cll_e8m0_to_f32_half(x[i].e);
        for (int j = 0; j < 16; j++) {
            y[j] = cll_kvalues_mxfp4[x[i].qs[j] & 0xf] * d;
            y[j + 16] = cll_kvalues_mxfp4[x[i].qs[j] >> 4] * d;
        }
    }
}
