/* formats/dequant_iq: reference to_f32 for the i-quants (IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, IQ4_XS): grid lookups times signs times a sub-scale.
 * Operand order follows ggml (db = d * (0.5 + s) * 0.25, then db * grid * sign), which
 * makes the results bit-identical with ggml's dequantizers. */
#include <string.h>

#include "formats/dequant.h"
#include "formats/iq_tables.h"

#define H2F cll_fp16_to_f32

static inline float sgn(uint8_t signs, int j) { return (signs & cll_kmask_iq2xs[j]) ? -1.f : 1.f; }

void cll_dequant_iq2_xxs(const void *src, float *y, int64_t n) {
    const cll_block_iq2_xxs *x = src;
    for (int64_t i = 0; i < n / CLL_QK_K; i++) {
        const float d = H2F(x[i].d);
        for (int ib = 0; ib < 8; ib++) {
            uint32_t aux[2];
            memcpy(aux, x[i].qs + 4 * ib, 8);
            const uint8_t *idx = (const uint8_t *)aux;
            const float db = d * (0.5f + (aux[1] >> 28)) * 0.25f;
            for (int l = 0; l < 4; l++, y += 8) {
                const uint8_t *grid = (const uint8_t *)(cll_iq2xxs_grid + idx[l]);
                const uint8_t signs = cll_ksigns_iq2xs[(aux[1] >> 7 * l) & 127];
                for (int j = 0; j < 8; j++) y[j] = db * grid[j] * sgn(signs, j);
            }
        }
    }
}

void cll_dequant_iq2_xs(const void *src, float *y, int64_t n) {
    const cll_block_iq2_xs *x = src;
    for (int64_t i = 0; i < n / CLL_QK_K; i++) {
        const float d = H2F(x[i].d);
        for (int ib = 0; ib < 8; ib++) {
            float db[2];
            db[0] = d * (0.5f + (x[i].scales[ib] & 0xf)) * 0.25f;
            db[1] = d * (0.5f + (x[i].scales[ib] >> 4)) * 0.25f;
            for (int l = 0; l < 4; l++, y += 8) {
                const uint16_t q = x[i].qs[4 * ib + l];
                const uint8_t *grid = (const uint8_t *)(cll_iq2xs_grid + (q & 511));
                const uint8_t signs = cll_ksigns_iq2xs[q >> 9];
                for (int j = 0; j < 8; j++) y[j] = db[l / 2] * grid[j] * sgn(signs, j);
            }
        }
    }
}

void cll_dequant_iq2_s(const void *src, float *y, int64_t n) {
    const cll_block_iq2_s *x = src;
    for (int64_t i = 0; i < n / CLL_QK_K; i++) {
        const float d = H2F(x[i].d);
        const uint8_t *qs = x[i].qs, *signs = x[i].qs + CLL_QK_K / 8;
        for (int ib = 0; ib < 8; ib++, qs += 4, signs += 4) {
            float db[2];
            db[0] = d * (0.5f + (x[i].scales[ib] & 0xf)) * 0.25f;
            db[1] = d * (0.5f + (x[i].scales[ib] >> 4)) * 0.25f;
            for (int l = 0; l < 4; l++, y += 8) {
                const float dl = db[l / 2];
                const int idx = qs[l] | ((x[i].qh[ib] << (8 - 2 * l)) & 0x300);
                const uint8_t *grid = (const uint8_t *)(cll_iq2s_grid + idx);
                for (int j = 0; j < 8; j++) y[j] = dl * grid[j] * sgn(signs[l], j);
            }
        }
    }
}

void cll_dequant_iq3_xxs(const void *src, float *y, int64_t n) {
    const cll_block_iq3_xxs *x = src;
    for (int64_t i = 0; i < n / CLL_QK_K; i++) {
        const float d = H2F(x[i].d);
        const uint8_t *qs = x[i].qs, *scales_and_signs = x[i].qs + CLL_QK_K / 4;
        for (int ib = 0; ib < 8; ib++, qs += 8) {
            uint32_t aux;
            memcpy(&aux, scales_and_signs + 4 * ib, 4);
            const float db = d * (0.5f + (aux >> 28)) * 0.5f;
            for (int l = 0; l < 4; l++, y += 8) {
                const uint8_t signs = cll_ksigns_iq2xs[(aux >> 7 * l) & 127];
                const uint8_t *g1 = (const uint8_t *)(cll_iq3xxs_grid + qs[2 * l + 0]);
                const uint8_t *g2 = (const uint8_t *)(cll_iq3xxs_grid + qs[2 * l + 1]);
                for (int j = 0; j < 4; j++) {
                    y[j + 0] = db * g1[j] * sgn(signs, j);
                    y[j + 4] = db * g2[j] * sgn(signs, j + 4);
                }
            }
        }
    }
}

void cll_dequant_iq3_s(const void *src, float *y, int64_t n) {
    const cll_block_iq3_s *x = src;
    for (int64_t i = 0; i < n / CLL_QK_K; i++) {
        const float d = H2F(x[i].d);
        const uint8_t *qs = x[i].qs, *qh = x[i].qh, *signs = x[i].signs;
        for (int ib = 0; ib < 8; ib++, qs += 8, signs += 4) {
            /* groups 2k and 2k+1 share scales[k]: low nibble, then high nibble */
            const uint8_t s = (ib & 1) ? (x[i].scales[ib / 2] >> 4) : (x[i].scales[ib / 2] & 0xf);
            const float db = d * (1 + 2 * s);
            for (int l = 0; l < 4; l++, y += 8) {
                const uint8_t *g1 = (const uint8_t *)(cll_iq3s_grid + (qs[2 * l + 0] | ((qh[ib] << (8 - 2 * l)) & 256)));
                const uint8_t *g2 = (const uint8_t *)(cll_iq3s_grid + (qs[2 * l + 1] | ((qh[ib] << (7 - 2 * l)) & 256)));
                for (int j = 0; j < 4; j++) {
                    y[j + 0] = db * g1[j] * sgn(signs[l], j);
                    y[j + 4] = db * g2[j] * sgn(signs[l], j + 4);
                }
            }
        }
    }
}

void cll_dequant_iq1_s(const void *src, float *y, int64_t n) {
    const cll_block_iq1_s *x = src;
    for (int64_t i = 0; i < n / CLL_QK_K; i++) {
        const float d = H2F(x[i].d);
        const uint8_t *qs = x[i].qs;
        for (int ib = 0; ib < 8; ib++, qs += 4) {
            const uint16_t qh = x[i].qh[ib];
            const float dl = d * (2 * ((qh >> 12) & 7) + 1);
            const float delta = (qh & 0x8000) ? -CLL_IQ1S_DELTA : CLL_IQ1S_DELTA;
            for (int l = 0; l < 4; l++, y += 8) {
                const int8_t *grid = (const int8_t *)(cll_iq1s_grid + (qs[l] | (((qh >> 3 * l) & 7) << 8)));
                for (int j = 0; j < 8; j++) y[j] = dl * (grid[j] + delta);
            }
        }
    }
}

uint16_t cll_iq1m_scale_bits(const cll_block_iq1_m *b) {
    uint16_t sc[4];
    memcpy(sc, b->scales, 8);
    return (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
}

void cll_dequant_iq1_m(const void *src, float *y, int64_t n) {
    const cll_block_iq1_m *x = src;
    for (int64_t i = 0; i < n / CLL_QK_K; i++) {
        uint16_t sc[4];
        memcpy(sc, x[i].scales, 8);
        const float d = H2F(cll_iq1m_scale_bits(&x[i]));
        const uint8_t *qs = x[i].qs, *qh = x[i].qh;
        for (int ib = 0; ib < 8; ib++, qs += 4, qh += 2) {
            const float dl1 = d * (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 0x7) + 1);
            const float dl2 = d * (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 0x7) + 1);
            int idx[4];
            float delta[4];
            idx[0] = qs[0] | ((qh[0] << 8) & 0x700);
            idx[1] = qs[1] | ((qh[0] << 4) & 0x700);
            idx[2] = qs[2] | ((qh[1] << 8) & 0x700);
            idx[3] = qs[3] | ((qh[1] << 4) & 0x700);
            delta[0] = (qh[0] & 0x08) ? -CLL_IQ1M_DELTA : CLL_IQ1M_DELTA;
            delta[1] = (qh[0] & 0x80) ? -CLL_IQ1M_DELTA : CLL_IQ1M_DELTA;
            delta[2] = (qh[1] & 0x08) ? -CLL_IQ1M_DELTA : CLL_IQ1M_DELTA;
            delta[3] = (qh[1] & 0x80) ? -CLL_IQ1M_DELTA : CLL_IQ1M_DELTA;
            for (int l = 0; l < 4; l++, y += 8) {
                const float dl = l < 2 ? dl1 : dl2;
                const int8_t *grid = (const int8_t *)(cll_iq1s_grid + idx[l]);
                for (int j = 0; j < 8; j++) y[j] = dl * (grid[j] + delta[l]);
            }
        }
    }
}

void cll_dequant_iq4_xs(const void *src, float *y, int64_t n) {
    const cll_block_iq4_xs *x = src;
    for (int64_t i = 0; i < n / CLL_QK_K; i++) {
        const float d = H2F(x[i].d);
        const uint8_t *qs = x[i].qs;
        for (int ib = 0; ib < 8; ib++, qs += 16, y += 32) {
            const int ls = ((x[i].scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((x[i].scales_h >> 2 * ib) & 3) << 4);
            const float dl = d * (ls - 32);
            for (int j = 0; j < 16; j++) {
                y[j + 0] = dl * cll_kvalues_iq4nl[qs[j] & 0xf];
                y[j + 16] = dl * cll_kvalues_iq4nl[qs[j] >> 4];
            }
        }
    }
}
