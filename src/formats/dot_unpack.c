/* formats/dot_unpack: legacy, K-quant and ternary blocks as integers + scales.
 * Element order is the same as the dequantizers'; see dot_unpack.h for the formula. */
#include <string.h>

#include "formats/dot_unpack.h"
#include "formats/iq_tables.h"

#define H2F cll_fp16_to_f32

bool cll_dot_unpack_supported(uint32_t wtype) {
    switch (wtype) {
    case CLL_TYPE_Q4_0: case CLL_TYPE_Q4_1: case CLL_TYPE_Q5_0: case CLL_TYPE_Q5_1: case CLL_TYPE_Q8_0:
    case CLL_TYPE_IQ4_NL: case CLL_TYPE_MXFP4:
    case CLL_TYPE_Q2_K: case CLL_TYPE_Q3_K: case CLL_TYPE_Q4_K: case CLL_TYPE_Q5_K: case CLL_TYPE_Q6_K:
    case CLL_TYPE_TQ1_0: case CLL_TYPE_TQ2_0:
    case CLL_TYPE_IQ2_XXS: case CLL_TYPE_IQ2_XS: case CLL_TYPE_IQ2_S: case CLL_TYPE_IQ3_XXS:
    case CLL_TYPE_IQ3_S: case CLL_TYPE_IQ1_S: case CLL_TYPE_IQ1_M: case CLL_TYPE_IQ4_XS:
        return true;
    default:
        return false;
    }
}

/* 5-bit value j of a Q5 block: low nibble from qs, bit 4 from qh bit j */
static inline int q5_val(const uint8_t qs[16], uint32_t qh, int j) {
    const int nib = j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4);
    return nib | (int)(((qh >> j) & 1) << 4);
}

void cll_dot_unpack32(uint32_t wtype, const void *row, int64_t i, cll_unpacked32 *u) {
    u->m = 0.0f;
    switch (wtype) {
    case CLL_TYPE_Q4_0: {
        const cll_block_q4_0 *b = (const cll_block_q4_0 *)row + i;
        u->d = H2F(b->d);
        for (int j = 0; j < 16; j++) {
            u->v[j] = (int8_t)((b->qs[j] & 0xF) - 8);
            u->v[j + 16] = (int8_t)((b->qs[j] >> 4) - 8);
        }
        break;
    }
    case CLL_TYPE_Q4_1: {
        const cll_block_q4_1 *b = (const cll_block_q4_1 *)row + i;
        u->d = H2F(b->d);
        u->m = H2F(b->m);
        for (int j = 0; j < 16; j++) {
            u->v[j] = (int8_t)(b->qs[j] & 0xF);
            u->v[j + 16] = (int8_t)(b->qs[j] >> 4);
        }
        break;
    }
    case CLL_TYPE_Q5_0: {
        const cll_block_q5_0 *b = (const cll_block_q5_0 *)row + i;
        uint32_t qh;
        memcpy(&qh, b->qh, 4);
        u->d = H2F(b->d);
        for (int j = 0; j < 32; j++) u->v[j] = (int8_t)(q5_val(b->qs, qh, j) - 16);
        break;
    }
    case CLL_TYPE_Q5_1: {
        const cll_block_q5_1 *b = (const cll_block_q5_1 *)row + i;
        uint32_t qh;
        memcpy(&qh, b->qh, 4);
        u->d = H2F(b->d);
        u->m = H2F(b->m);
        for (int j = 0; j < 32; j++) u->v[j] = (int8_t)q5_val(b->qs, qh, j);
        break;
    }
    case CLL_TYPE_Q8_0: {
        const cll_block_q8_0 *b = (const cll_block_q8_0 *)row + i;
        u->d = H2F(b->d);
        memcpy(u->v, b->qs, 32);
        break;
    }
    case CLL_TYPE_IQ4_NL: {
        const cll_block_iq4_nl *b = (const cll_block_iq4_nl *)row + i;
        u->d = H2F(b->d);
        for (int j = 0; j < 16; j++) {
            u->v[j] = cll_kvalues_iq4nl[b->qs[j] & 0xF];
            u->v[j + 16] = cll_kvalues_iq4nl[b->qs[j] >> 4];
        }
        break;
    }
    case CLL_TYPE_MXFP4: {
        const cll_block_mxfp4 *b = (const cll_block_mxfp4 *)row + i;
        u->d = cll_e8m0_to_f32_half(b->e);
        for (int j = 0; j < 16; j++) {
            u->v[j] = cll_kvalues_mxfp4[b->qs[j] & 0xF];
            u->v[j + 16] = cll_kvalues_mxfp4[b->qs[j] >> 4];
        }
        break;
    }
    default:
        memset(u, 0, sizeof *u);
        break;
    }
}

static void unpack_q2_K(const cll_block_q2_K *b, cll_unpacked256 *u) {
    u->d = H2F(b->d);
    u->dmin = H2F(b->dmin);
    for (int sb = 0; sb < 16; sb++) {
        u->sc[sb] = b->scales[sb] & 0xF;
        u->m[sb] = b->scales[sb] >> 4;
    }
    int e = 0;
    for (int half = 0; half < 2; half++)
        for (int shift = 0; shift < 8; shift += 2)
            for (int l = 0; l < 32; l++) u->v[e++] = (int8_t)((b->qs[32 * half + l] >> shift) & 3);
}

static void unpack_q3_K(const cll_block_q3_K *b, cll_unpacked256 *u) {
    int8_t scales[16];
    cll_q3k_scales(b->scales, scales);
    u->d = H2F(b->d);
    for (int sb = 0; sb < 16; sb++) u->sc[sb] = (int16_t)(scales[sb] - 32);
    int e = 0;
    uint8_t m = 1;
    for (int half = 0; half < 2; half++)
        for (int shift = 0; shift < 8; shift += 2, m <<= 1)
            for (int l = 0; l < 32; l++)
                u->v[e++] = (int8_t)(((b->qs[32 * half + l] >> shift) & 3) - ((b->hmask[l] & m) ? 0 : 4));
}

/* Q4_K and Q5_K share scales and nibble order; qh is NULL for Q4_K */
static void unpack_q45_K(uint16_t d, uint16_t dmin, const uint8_t scales[12], const uint8_t *qh,
                         const uint8_t qs[128], cll_unpacked256 *u) {
    u->d = H2F(d);
    u->dmin = H2F(dmin);
    for (int c = 0; c < 8; c++) {
        uint8_t sc, m;
        cll_q4k_scale_min(c, scales, &sc, &m);
        u->sc[2 * c] = u->sc[2 * c + 1] = sc;
        u->m[2 * c] = u->m[2 * c + 1] = m;
    }
    for (int c = 0; c < 4; c++) {
        for (int l = 0; l < 32; l++) {
            int lo = qs[32 * c + l] & 0xF, hi = qs[32 * c + l] >> 4;
            if (qh) {
                lo += ((qh[l] >> (2 * c)) & 1) << 4;
                hi += ((qh[l] >> (2 * c + 1)) & 1) << 4;
            }
            u->v[64 * c + l] = (int8_t)lo;
            u->v[64 * c + 32 + l] = (int8_t)hi;
        }
    }
}

static void unpack_q6_K(const cll_block_q6_K *b, cll_unpacked256 *u) {
    u->d = H2F(b->d);
    for (int sb = 0; sb < 16; sb++) u->sc[sb] = b->scales[sb];
    for (int half = 0; half < 2; half++) {
        const uint8_t *ql = b->ql + 64 * half, *qh = b->qh + 32 * half;
        int8_t *v = u->v + 128 * half;
        for (int l = 0; l < 32; l++) {
            v[l + 0] = (int8_t)(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
            v[l + 32] = (int8_t)(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
            v[l + 64] = (int8_t)(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            v[l + 96] = (int8_t)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
    }
}

static inline int8_t tq1_trit(uint8_t q, uint8_t pow3) {
    const uint8_t r = (uint8_t)(q * pow3);
    return (int8_t)((((uint16_t)r * 3) >> 8) - 1);
}

static void unpack_tq1_0(const cll_block_tq1_0 *b, cll_unpacked256 *u) {
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    u->d = H2F(b->d);
    for (int sb = 0; sb < 16; sb++) u->sc[sb] = 1;
    int e = 0;
    for (int t = 0; t < 5; t++)
        for (int m = 0; m < 32; m++) u->v[e++] = tq1_trit(b->qs[m], pow3[t]);
    for (int t = 0; t < 5; t++)
        for (int m = 0; m < 16; m++) u->v[e++] = tq1_trit(b->qs[32 + m], pow3[t]);
    for (int t = 0; t < 4; t++)
        for (int m = 0; m < 4; m++) u->v[e++] = tq1_trit(b->qh[m], pow3[t]);
}

static void unpack_tq2_0(const cll_block_tq2_0 *b, cll_unpacked256 *u) {
    u->d = H2F(b->d);
    for (int sb = 0; sb < 16; sb++) u->sc[sb] = 1;
    int e = 0;
    for (int c = 0; c < 64; c += 32)
        for (int l = 0; l < 4; l++)
            for (int m = 0; m < 32; m++) u->v[e++] = (int8_t)(((b->qs[c + m] >> (2 * l)) & 3) - 1);
}

void cll_dot_unpack256(uint32_t wtype, const void *row, int64_t i, cll_unpacked256 *u) {
    memset(u, 0, sizeof *u);
    switch (wtype) {
    case CLL_TYPE_Q2_K: unpack_q2_K((const cll_block_q2_K *)row + i, u); break;
    case CLL_TYPE_Q3_K: unpack_q3_K((const cll_block_q3_K *)row + i, u); break;
    case CLL_TYPE_Q4_K: {
        const cll_block_q4_K *b = (const cll_block_q4_K *)row + i;
        unpack_q45_K(b->d, b->dmin, b->scales, NULL, b->qs, u);
        break;
    }
    case CLL_TYPE_Q5_K: {
        const cll_block_q5_K *b = (const cll_block_q5_K *)row + i;
        unpack_q45_K(b->d, b->dmin, b->scales, b->qh, b->qs, u);
        break;
    }
    case CLL_TYPE_Q6_K: unpack_q6_K((const cll_block_q6_K *)row + i, u); break;
    case CLL_TYPE_TQ1_0: unpack_tq1_0((const cll_block_tq1_0 *)row + i, u); break;
    case CLL_TYPE_TQ2_0: unpack_tq2_0((const cll_block_tq2_0 *)row + i, u); break;
    default: cll_dot_unpack256_iq(wtype, row, i, u); break;
    }
}
