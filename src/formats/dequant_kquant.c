/* formats/dequant_kquant: reference to_f32 for the K-quants (Q2_K..Q6_K) and the
 * ternary types (TQ1_0, TQ2_0), all on 256-element super-blocks.
 * Operand order follows ggml (scale products first, then * q, then - min) so the
 * results are bit-identical with ggml's dequantizers. */
#include <string.h>

#include "formats/dequant.h"

#define H2F cll_fp16_to_f32

void cll_dequant_q2_K(const void *src, float *y, int64_t n) {
    const cll_block_q2_K *x = src;
    for (int64_t i = 0; i < n / CLL_QK_K; i++) {
        const float d = H2F(x[i].d), min = H2F(x[i].dmin);
        const uint8_t *q = x[i].qs;
        int is = 0;
        for (int half = 0; half < 2; half++, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int k = 0; k < 2; k++) {
                    const uint8_t sc = x[i].scales[is++];
                    const float dl = d * (sc & 0xF), ml = min * (sc >> 4);
                    for (int l = 0; l < 16; l++) *y++ = dl * (int8_t)((q[l + 16 * k] >> shift) & 3) - ml;
                }
            }
        }
    }
}

void cll_q3k_scales(const uint8_t packed[12], int8_t out[16]) {
    const uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
    uint32_t aux[4];
    memcpy(aux, packed, 12);
    const uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
    aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
    aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
    aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
    memcpy(out, aux, 16);
}

void cll_dequant_q3_K(const void *src, float *y, int64_t n) {
    const cll_block_q3_K *x = src;
    for (int64_t i = 0; i < n / CLL_QK_K; i++) {
        const float d_all = H2F(x[i].d);
        int8_t scales[16];
        cll_q3k_scales(x[i].scales, scales);
        const uint8_t *q = x[i].qs, *hm = x[i].hmask;
        uint8_t m = 1;
        int is = 0;
        for (int half = 0; half < 2; half++, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
                for (int k = 0; k < 2; k++) {
                    const float dl = d_all * (scales[is++] - 32);
                    for (int l = 16 * k; l < 16 * k + 16; l++)
                        *y++ = dl * ((int8_t)((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
                }
            }
        }
    }
}

void cll_dequant_q4_K(const void *src, float *y, int64_t n) {
    const cll_block_q4_K *x = src;
    for (int64_t i = 0; i < n / CLL_QK_K; i++) {
        const float d = H2F(x[i].d), min = H2F(x[i].dmin);
        const uint8_t *q = x[i].qs;
        for (int is = 0; is < 8; is += 2, q += 32) {
            uint8_t sc, m;
            cll_q4k_scale_min(is, x[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            cll_q4k_scale_min(is + 1, x[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (q[l] >> 4) - m2;
        }
    }
}

void cll_dequant_q5_K(const void *src, float *y, int64_t n) {
    const cll_block_q5_K *x = src;
    for (int64_t i = 0; i < n / CLL_QK_K; i++) {
        const float d = H2F(x[i].d), min = H2F(x[i].dmin);
        const uint8_t *ql = x[i].qs, *qh = x[i].qh;
        uint8_t u1 = 1, u2 = 2;
        for (int is = 0; is < 8; is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
            uint8_t sc, m;
            cll_q4k_scale_min(is, x[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            cll_q4k_scale_min(is + 1, x[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; l++) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
        }
    }
}

void cll_dequant_q6_K(const void *src, float *y, int64_t n) {
    const cll_block_q6_K *x = src;
    for (int64_t i = 0; i < n / CLL_QK_K; i++) {
        const float d = H2F(x[i].d);
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        const int8_t *sc = x[i].scales;
        for (int half = 0; half < 2; half++, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int8_t q1 = (int8_t)((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int8_t q2 = (int8_t)((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int8_t q3 = (int8_t)((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int8_t q4 = (int8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l + 0] = d * sc[is + 0] * q1;
                y[l + 32] = d * sc[is + 2] * q2;
                y[l + 64] = d * sc[is + 4] * q3;
                y[l + 96] = d * sc[is + 6] * q4;
            }
        }
    }
}

/* trit n of byte q: multiplying by 3^n (mod 256) rotates trit n to the top, *3>>8 reads it */
static inline int tq1_trit(uint8_t q, uint8_t pow3) {
    const uint8_t r = (uint8_t)(q * pow3);
    return (int)(((uint16_t)r * 3) >> 8);
}

void cll_dequant_tq1_0(const void *src, float *y, int64_t n) {
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    const cll_block_tq1_0 *x = src;
    for (int64_t i = 0; i < n / CLL_QK_K; i++) {
        const float d = H2F(x[i].d);
        for (int t = 0; t < 5; t++) /* qs[0..31]: elements 0..159 */
            for (int m = 0; m < 32; m++) *y++ = (float)(tq1_trit(x[i].qs[m], pow3[t]) - 1) * d;
        for (int t = 0; t < 5; t++) /* qs[32..47]: elements 160..239 */
            for (int m = 0; m < 16; m++) *y++ = (float)(tq1_trit(x[i].qs[32 + m], pow3[t]) - 1) * d;
        for (int t = 0; t < 4; t++) /* qh[0..3]: elements 240..255 */
            for (int m = 0; m < 4; m++) *y++ = (float)(tq1_trit(x[i].qh[m], pow3[t]) - 1) * d;
    }
}

void cll_dequant_tq2_0(const void *src, float *y, int64_t n) {
    const cll_block_tq2_0 *x = src;
    for (int64_t i = 0; i < n / CLL_QK_K; i++) {
        const float d = H2F(x[i].d);
        for (int c = 0; c < 64; c += 32)
            for (int l = 0; l < 4; l++)
                for (int m = 0; m < 32; m++) *y++ = (float)(((x[i].qs[c + m] >> (2 * l)) & 3) - 1) * d;
    }
}
