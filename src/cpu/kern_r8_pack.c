/* cpu/kern_r8_pack: the "r8" repacked weight layouts. Eight consecutive rows are
 * interleaved block by block so that one 32-byte load holds 4 consecutive quants of
 * each of the 8 rows (row r in bytes 4r..4r+3): an int8 multiply-add against a 4-byte
 * broadcast of the activations then leaves one int32 per row in each 32-bit lane, and
 * a GEMM tile reuses every loaded weight byte for several tokens.
 *
 * Records (one per block of 32 / super-block of 256, for a group of 8 rows):
 *   q4_0  144 B: d[8] fp16 | q[4 c][32]  lo nibble = elems 8c..8c+3, hi = 8c+4..8c+7
 *   q8_0  272 B: d[8] fp16 | q[8 g][32]  int8 elems 4g..4g+3
 *   q4_1  160 B: d[8] m[8] fp16 | q[4 c][32] as q4_0 (unsigned nibbles, no offset)
 *   q5_1  192 B: the q4_1 record (low 4 bits), then qh[32]: byte 4r+i, bit 2c = 5th bit of
 *                elem 8c+i, bit 2c+1 = 5th bit of elem 8c+4+i (the bit of register g at bit g)
 *   q4_K 1184 B: d[8] dmin[8] fp16 | sc[8 s][8 r] u8 | m[4 j][8 r][2] u8 (mins of subs 2j,2j+1)
 *                | q[4 p][8 c][32]: lo nibble = sub 2p elems 4c..4c+3, hi = sub 2p+1
 *   q5_K 1440 B: the q4_K record, then qh[8 c][32]: bit s = 5th bit of sub s, elems 4c..4c+3
 *   q6_K 1680 B: d[8] fp16 | sc[8 k][8 r][2] int8 (16-elem subs 2k,2k+1)
 *                | ql[4 p][8 c][32]: lo nibble = low 4 bits of chunk 2p, hi = chunk 2p+1
 *                | qh[2 h][8 c][32]: bits 2i..2i+1 = high 2 bits of chunk 4h+i
 * where chunk = 32 elements, c / g = group of 4 elements within a chunk or block. */
#include <string.h>

#include "cpu/kern_common.h"

/* ---- decode one plain block into unsigned quants (the layout-independent step) ---- */

static void q4_0_quants(const cll_block_q4_0 *b, uint8_t q[32]) {
    for (int j = 0; j < 16; j++) {
        q[j] = b->qs[j] & 15;
        q[j + 16] = b->qs[j] >> 4;
    }
}

static void q4k_scale_min(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

static void q4_K_quants(const cll_block_q4_K *b, uint8_t q[256], uint8_t sc[8], uint8_t m[8]) {
    for (int s = 0; s < 8; s++) {
        q4k_scale_min(s, b->scales, &sc[s], &m[s]);
        for (int l = 0; l < 32; l++) {
            uint8_t byte = b->qs[32 * (s / 2) + l];
            q[32 * s + l] = (s & 1) ? byte >> 4 : byte & 15;
        }
    }
}

static void q5_K_quants(const cll_block_q5_K *b, uint8_t q[256], uint8_t sc[8], uint8_t m[8]) {
    for (int s = 0; s < 8; s++) {
        q4k_scale_min(s, b->scales, &sc[s], &m[s]);
        for (int l = 0; l < 32; l++) {
            uint8_t byte = b->qs[32 * (s / 2) + l];
            q[32 * s + l] = (uint8_t)(((s & 1) ? byte >> 4 : byte & 15) | (((b->qh[l] >> s) & 1) << 4));
        }
    }
}

static void q6_K_quants(const cll_block_q6_K *b, uint8_t q[256]) {
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = b->ql + 64 * h, *qh = b->qh + 32 * h;
        uint8_t *o = q + 128 * h;
        for (int l = 0; l < 32; l++) {
            o[l] = (uint8_t)((ql[l] & 15) | ((qh[l] & 3) << 4));
            o[l + 32] = (uint8_t)((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4));
            o[l + 64] = (uint8_t)((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
            o[l + 96] = (uint8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
        }
    }
}

/* ---- sizes ---- */

size_t cll_kern_r8_size_q4_0(int64_t rows, int64_t cols) { return (size_t)(rows / 8) * (size_t)(cols / 32) * 144; }
size_t cll_kern_r8_size_q4_1(int64_t rows, int64_t cols) { return (size_t)(rows / 8) * (size_t)(cols / 32) * 160; }
size_t cll_kern_r8_size_q5_1(int64_t rows, int64_t cols) { return (size_t)(rows / 8) * (size_t)(cols / 32) * 192; }
size_t cll_kern_r8_size_q8_0(int64_t rows, int64_t cols) { return (size_t)(rows / 8) * (size_t)(cols / 32) * 272; }
size_t cll_kern_r8_size_q4_K(int64_t rows, int64_t cols) { return (size_t)(rows / 8) * (size_t)(cols / 256) * 1184; }
size_t cll_kern_r8_size_q5_K(int64_t rows, int64_t cols) { return (size_t)(rows / 8) * (size_t)(cols / 256) * 1440; }
size_t cll_kern_r8_size_q6_K(int64_t rows, int64_t cols) { return (size_t)(rows / 8) * (size_t)(cols / 256) * 1680; }

/* ---- packers ---- */

void cll_kern_r8_pack_q4_0(const void *src, void *dst, int64_t rows, int64_t cols) {
    const int64_t nb = cols / 32;
    const cll_block_q4_0 *w = src;
    uint8_t *o = dst;
    for (int64_t g = 0; g < rows / 8; g++)
        for (int64_t b = 0; b < nb; b++, o += 144) {
            uint16_t *d = (uint16_t *)o;
            uint8_t *qs = o + 16;
            for (int r = 0; r < 8; r++) {
                const cll_block_q4_0 *blk = &w[(g * 8 + r) * nb + b];
                uint8_t q[32];
                q4_0_quants(blk, q);
                d[r] = blk->d;
                for (int c = 0; c < 4; c++)
                    for (int i = 0; i < 4; i++)
                        qs[32 * c + 4 * r + i] = (uint8_t)(q[8 * c + i] | (q[8 * c + 4 + i] << 4));
            }
        }
}

/* q4_1 and q5_1 share the record; q5_1 appends the 5th bits */
static void pack_q45_1(const void *src, void *dst, int64_t rows, int64_t cols, bool q5) {
    const int64_t nb = cols / 32;
    const size_t bsz = q5 ? sizeof(cll_block_q5_1) : sizeof(cll_block_q4_1), rec = q5 ? 192 : 160;
    const uint8_t *w = src;
    uint8_t *o = dst;
    for (int64_t g = 0; g < rows / 8; g++)
        for (int64_t b = 0; b < nb; b++, o += rec) {
            uint16_t *d = (uint16_t *)o, *m = d + 8;
            uint8_t *qs = o + 32, *qh = o + 160;
            if (q5) memset(qh, 0, 32);
            for (int r = 0; r < 8; r++) {
                const uint8_t *blk = w + ((size_t)(g * 8 + r) * (size_t)nb + (size_t)b) * bsz;
                uint8_t q[32];
                if (q5) {
                    const cll_block_q5_1 *b5 = (const cll_block_q5_1 *)blk;
                    uint32_t h;
                    memcpy(&h, b5->qh, 4);
                    for (int j = 0; j < 16; j++) {
                        q[j] = (uint8_t)((b5->qs[j] & 15) | (((h >> j) & 1) << 4));
                        q[j + 16] = (uint8_t)((b5->qs[j] >> 4) | (((h >> (j + 16)) & 1) << 4));
                    }
                } else {
                    const cll_block_q4_1 *b4 = (const cll_block_q4_1 *)blk;
                    for (int j = 0; j < 16; j++) {
                        q[j] = b4->qs[j] & 15;
                        q[j + 16] = b4->qs[j] >> 4;
                    }
                }
                memcpy(&d[r], blk, 2); /* d, m lead both block types */
                memcpy(&m[r], blk + 2, 2);
                for (int c = 0; c < 4; c++)
                    for (int i = 0; i < 4; i++) {
                        const uint8_t lo = q[8 * c + i], hi = q[8 * c + 4 + i];
                        qs[32 * c + 4 * r + i] = (uint8_t)((lo & 15) | ((hi & 15) << 4));
                        if (q5) qh[4 * r + i] |= (uint8_t)(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
                    }
            }
        }
}

void cll_kern_r8_pack_q4_1(const void *src, void *dst, int64_t rows, int64_t cols) {
    pack_q45_1(src, dst, rows, cols, false);
}

void cll_kern_r8_pack_q5_1(const void *src, void *dst, int64_t rows, int64_t cols) {
    pack_q45_1(src, dst, rows, cols, true);
}

void cll_kern_r8_pack_q8_0(const void *src, void *dst, int64_t rows, int64_t cols) {
    const int64_t nb = cols / 32;
    const cll_block_q8_0 *w = src;
    uint8_t *o = dst;
    for (int64_t g = 0; g < rows / 8; g++)
        for (int64_t b = 0; b < nb; b++, o += 272) {
            uint16_t *d = (uint16_t *)o;
            int8_t *qs = (int8_t *)(o + 16);
            for (int r = 0; r < 8; r++) {
                const cll_block_q8_0 *blk = &w[(g * 8 + r) * nb + b];
                d[r] = blk->d;
                for (int gg = 0; gg < 8; gg++)
                    for (int i = 0; i < 4; i++) qs[32 * gg + 4 * r + i] = blk->qs[4 * gg + i];
            }
        }
}

/* q4_K and q5_K share the record; q5_K appends the 5th bits */
static void pack_q45_K(const void *src, void *dst, int64_t rows, int64_t cols, bool q5) {
    const int64_t nb = cols / 256;
    const size_t bsz = q5 ? sizeof(cll_block_q5_K) : sizeof(cll_block_q4_K), rec = q5 ? 1440 : 1184;
    const uint8_t *w = src;
    uint8_t *o = dst;
    for (int64_t g = 0; g < rows / 8; g++)
        for (int64_t b = 0; b < nb; b++, o += rec) {
            uint16_t *d = (uint16_t *)o, *dmin = d + 8;
            uint8_t *sc = o + 32, *mm = o + 96, *qs = o + 160, *qh = o + 1184;
            if (q5) memset(qh, 0, 256);
            for (int r = 0; r < 8; r++) {
                const uint8_t *blk = w + ((size_t)(g * 8 + r) * (size_t)nb + (size_t)b) * bsz;
                uint8_t q[256], s[8], m[8];
                if (q5) q5_K_quants((const cll_block_q5_K *)blk, q, s, m);
                else q4_K_quants((const cll_block_q4_K *)blk, q, s, m);
                memcpy(&d[r], blk, 2); /* d, dmin lead both block types */
                memcpy(&dmin[r], blk + 2, 2);
                for (int k = 0; k < 8; k++) sc[8 * k + r] = s[k];
                for (int j = 0; j < 4; j++) {
                    mm[16 * j + 2 * r] = m[2 * j];
                    mm[16 * j + 2 * r + 1] = m[2 * j + 1];
                }
                for (int p = 0; p < 4; p++)
                    for (int c = 0; c < 8; c++)
                        for (int i = 0; i < 4; i++)
                            qs[256 * p + 32 * c + 4 * r + i] =
                                (uint8_t)((q[64 * p + 4 * c + i] & 15) | ((q[64 * p + 32 + 4 * c + i] & 15) << 4));
                if (q5)
                    for (int k = 0; k < 8; k++)
                        for (int c = 0; c < 8; c++)
                            for (int i = 0; i < 4; i++)
                                qh[32 * c + 4 * r + i] |= (uint8_t)((q[32 * k + 4 * c + i] >> 4) << k);
            }
        }
}

void cll_kern_r8_pack_q4_K(const void *src, void *dst, int64_t rows, int64_t cols) {
    pack_q45_K(src, dst, rows, cols, false);
}

void cll_kern_r8_pack_q5_K(const void *src, void *dst, int64_t rows, int64_t cols) {
    pack_q45_K(src, dst, rows, cols, true);
}

void cll_kern_r8_pack_q6_K(const void *src, void *dst, int64_t rows, int64_t cols) {
    const int64_t nb = cols / 256;
    const cll_block_q6_K *w = src;
    uint8_t *o = dst;
    for (int64_t g = 0; g < rows / 8; g++)
        for (int64_t b = 0; b < nb; b++, o += 1680) {
            uint16_t *d = (uint16_t *)o;
            int8_t *sc = (int8_t *)(o + 16);
            uint8_t *ql = o + 144, *qh = o + 1168;
            memset(qh, 0, 512);
            for (int r = 0; r < 8; r++) {
                const cll_block_q6_K *blk = &w[(g * 8 + r) * nb + b];
                uint8_t q[256];
                q6_K_quants(blk, q);
                d[r] = blk->d;
                for (int k = 0; k < 8; k++) {
                    sc[16 * k + 2 * r] = blk->scales[2 * k];
                    sc[16 * k + 2 * r + 1] = blk->scales[2 * k + 1];
                }
                for (int p = 0; p < 4; p++)
                    for (int c = 0; c < 8; c++)
                        for (int i = 0; i < 4; i++)
                            ql[256 * p + 32 * c + 4 * r + i] =
                                (uint8_t)((q[64 * p + 4 * c + i] & 15) | ((q[64 * p + 32 + 4 * c + i] & 15) << 4));
                for (int k = 0; k < 8; k++)
                    for (int c = 0; c < 8; c++)
                        for (int i = 0; i < 4; i++)
                            qh[256 * (k / 4) + 32 * c + 4 * r + i] |= (uint8_t)((q[32 * k + 4 * c + i] >> 4) << (2 * (k % 4)));
            }
        }
}
