/* formats/dot_unpack_iq: i-quant super-blocks as integers + scales. The odd half-steps
 * of the i-quant scales become integers: (0.5 + s) / 4 = (2s + 1) / 8, so sc = 2s + 1
 * and the /8 (IQ2) or /4 (IQ3_XXS) folds into d; IQ1's grid +- 1/8 becomes 8*g +- 1. */
#include <string.h>

#include "formats/dot_unpack.h"
#include "formats/iq_tables.h"

#define H2F cll_fp16_to_f32

static inline int8_t signed_mag(uint8_t mag, uint8_t signs, int j) {
    return (int8_t)((signs & cll_kmask_iq2xs[j]) ? -(int)mag : (int)mag);
}

static void unpack_iq2_xxs(const cll_block_iq2_xxs *b, cll_unpacked256 *u) {
    u->d = H2F(b->d) * 0.125f;
    for (int ib = 0; ib < 8; ib++) {
        uint32_t aux[2];
        memcpy(aux, b->qs + 4 * ib, 8);
        const uint8_t *idx = (const uint8_t *)aux;
        u->sc[2 * ib] = u->sc[2 * ib + 1] = (int16_t)(2 * (aux[1] >> 28) + 1);
        for (int l = 0; l < 4; l++) {
            const uint8_t *grid = (const uint8_t *)(cll_iq2xxs_grid + idx[l]);
            const uint8_t signs = cll_ksigns_iq2xs[(aux[1] >> 7 * l) & 127];
            for (int j = 0; j < 8; j++) u->v[32 * ib + 8 * l + j] = signed_mag(grid[j], signs, j);
        }
    }
}

static void unpack_iq2_xs(const cll_block_iq2_xs *b, cll_unpacked256 *u) {
    u->d = H2F(b->d) * 0.125f;
    for (int ib = 0; ib < 8; ib++) {
        u->sc[2 * ib] = (int16_t)(2 * (b->scales[ib] & 0xf) + 1);
        u->sc[2 * ib + 1] = (int16_t)(2 * (b->scales[ib] >> 4) + 1);
        for (int l = 0; l < 4; l++) {
            const uint16_t q = b->qs[4 * ib + l];
            const uint8_t *grid = (const uint8_t *)(cll_iq2xs_grid + (q & 511));
            const uint8_t signs = cll_ksigns_iq2xs[q >> 9];
            for (int j = 0; j < 8; j++) u->v[32 * ib + 8 * l + j] = signed_mag(grid[j], signs, j);
        }
    }
}

static void unpack_iq2_s(const cll_block_iq2_s *b, cll_unpacked256 *u) {
    u->d = H2F(b->d) * 0.125f;
    const uint8_t *qs = b->qs, *signs = b->qs + CLL_QK_K / 8;
    for (int ib = 0; ib < 8; ib++, qs += 4, signs += 4) {
        u->sc[2 * ib] = (int16_t)(2 * (b->scales[ib] & 0xf) + 1);
        u->sc[2 * ib + 1] = (int16_t)(2 * (b->scales[ib] >> 4) + 1);
        for (int l = 0; l < 4; l++) {
            const int idx = qs[l] | ((b->qh[ib] << (8 - 2 * l)) & 0x300);
            const uint8_t *grid = (const uint8_t *)(cll_iq2s_grid + idx);
            for (int j = 0; j < 8; j++) u->v[32 * ib + 8 * l + j] = signed_mag(grid[j], signs[l], j);
        }
    }
}

static void unpack_iq3_xxs(const cll_block_iq3_xxs *b, cll_unpacked256 *u) {
    u->d = H2F(b->d) * 0.25f;
    const uint8_t *qs = b->qs, *scales_and_signs = b->qs + CLL_QK_K / 4;
    for (int ib = 0; ib < 8; ib++, qs += 8) {
        uint32_t aux;
        memcpy(&aux, scales_and_signs + 4 * ib, 4);
        u->sc[2 * ib] = u->sc[2 * ib + 1] = (int16_t)(2 * (aux >> 28) + 1);
        for (int l = 0; l < 4; l++) {
            const uint8_t signs = cll_ksigns_iq2xs[(aux >> 7 * l) & 127];
            const uint8_t *g1 = (const uint8_t *)(cll_iq3xxs_grid + qs[2 * l + 0]);
            const uint8_t *g2 = (const uint8_t *)(cll_iq3xxs_grid + qs[2 * l + 1]);
            for (int j = 0; j < 4; j++) {
                u->v[32 * ib + 8 * l + j] = signed_mag(g1[j], signs, j);
                u->v[32 * ib + 8 * l + j + 4] = signed_mag(g2[j], signs, j + 4);
            }
        }
    }
}

static void unpack_iq3_s(const cll_block_iq3_s *b, cll_unpacked256 *u) {
    u->d = H2F(b->d);
    const uint8_t *qs = b->qs, *signs = b->signs;
    for (int ib = 0; ib < 8; ib++, qs += 8, signs += 4) {
        const uint8_t s = (ib & 1) ? (b->scales[ib / 2] >> 4) : (b->scales[ib / 2] & 0xf);
        u->sc[2 * ib] = u->sc[2 * ib + 1] = (int16_t)(1 + 2 * s);
        for (int l = 0; l < 4; l++) {
            const uint8_t *g1 = (const uint8_t *)(cll_iq3s_grid + (qs[2 * l + 0] | ((b->qh[ib] << (8 - 2 * l)) & 256)));
            const uint8_t *g2 = (const uint8_t *)(cll_iq3s_grid + (qs[2 * l + 1] | ((b->qh[ib] << (7 - 2 * l)) & 256)));
            for (int j = 0; j < 4; j++) {
                u->v[32 * ib + 8 * l + j] = signed_mag(g1[j], signs[l], j);
                u->v[32 * ib + 8 * l + j + 4] = signed_mag(g2[j], signs[l], j + 4);
            }
        }
    }
}

/* 8 IQ1 values 8*grid + delta (delta = +-1) */
static void iq1_eight(int8_t *v, int idx, int delta) {
    const int8_t *grid = (const int8_t *)(cll_iq1s_grid + idx);
    for (int j = 0; j < 8; j++) v[j] = (int8_t)(8 * grid[j] + delta);
}

static void unpack_iq1_s(const cll_block_iq1_s *b, cll_unpacked256 *u) {
    u->d = H2F(b->d) * 0.125f;
    const uint8_t *qs = b->qs;
    for (int ib = 0; ib < 8; ib++, qs += 4) {
        const uint16_t qh = b->qh[ib];
        u->sc[2 * ib] = u->sc[2 * ib + 1] = (int16_t)(2 * ((qh >> 12) & 7) + 1);
        const int delta = (qh & 0x8000) ? -1 : 1;
        for (int l = 0; l < 4; l++) iq1_eight(u->v + 32 * ib + 8 * l, qs[l] | (((qh >> 3 * l) & 7) << 8), delta);
    }
}

static void unpack_iq1_m(const cll_block_iq1_m *b, cll_unpacked256 *u) {
    uint16_t sc[4];
    memcpy(sc, b->scales, 8);
    u->d = H2F(cll_iq1m_scale_bits(b)) * 0.125f;
    const uint8_t *qs = b->qs, *qh = b->qh;
    for (int ib = 0; ib < 8; ib++, qs += 4, qh += 2) {
        u->sc[2 * ib] = (int16_t)(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 0x7) + 1);
        u->sc[2 * ib + 1] = (int16_t)(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 0x7) + 1);
        int8_t *v = u->v + 32 * ib;
        iq1_eight(v + 0, qs[0] | ((qh[0] << 8) & 0x700), (qh[0] & 0x08) ? -1 : 1);
        iq1_eight(v + 8, qs[1] | ((qh[0] << 4) & 0x700), (qh[0] & 0x80) ? -1 : 1);
        iq1_eight(v + 16, qs[2] | ((qh[1] << 8) & 0x700), (qh[1] & 0x08) ? -1 : 1);
        iq1_eight(v + 24, qs[3] | ((qh[1] << 4) & 0x700), (qh[1] & 0x80) ? -1 : 1);
    }
}

static void unpack_iq4_xs(const cll_block_iq4_xs *b, cll_unpacked256 *u) {
    u->d = H2F(b->d);
    const uint8_t *qs = b->qs;
    for (int ib = 0; ib < 8; ib++, qs += 16) {
        const int ls = ((b->scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((b->scales_h >> 2 * ib) & 3) << 4);
        u->sc[2 * ib] = u->sc[2 * ib + 1] = (int16_t)(ls - 32);
        for (int j = 0; j < 16; j++) {
            u->v[32 * ib + j] = cll_kvalues_iq4nl[qs[j] & 0xf];
            u->v[32 * ib + j + 16] = cll_kvalues_iq4nl[qs[j] >> 4];
        }
    }
}

bool cll_dot_unpack256_iq(uint32_t wtype, const void *row, int64_t i, cll_unpacked256 *u) {
    switch (wtype) {
    case CLL_TYPE_IQ2_XXS: unpack_iq2_xxs((const cll_block_iq2_xxs *)row + i, u); return true;
    case CLL_TYPE_IQ2_XS: unpack_iq2_xs((const cll_block_iq2_xs *)row + i, u); return true;
    case CLL_TYPE_IQ2_S: unpack_iq2_s((const cll_block_iq2_s *)row + i, u); return true;
    case CLL_TYPE_IQ3_XXS: unpack_iq3_xxs((const cll_block_iq3_xxs *)row + i, u); return true;
    case CLL_TYPE_IQ3_S: unpack_iq3_s((const cll_block_iq3_s *)row + i, u); return true;
    case CLL_TYPE_IQ1_S: unpack_iq1_s((const cll_block_iq1_s *)row + i, u); return true;
    case CLL_TYPE_IQ1_M: unpack_iq1_m((const cll_block_iq1_m *)row + i, u); return true;
    case CLL_TYPE_IQ4_XS: unpack_iq4_xs((const cll_block_iq4_xs *)row + i, u); return true;
    default: return false;
    }
}
