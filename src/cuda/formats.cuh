/* cuda/formats: device-side decoding of every weight format the CUDA driver serves, in two forms:
 *  - dot lanes (the gemv hot path): a 32-element group of a block is split over 4 lanes; lane j
 *    owns elements 4j..4j+3 and 16+4j..16+4j+3, gets the two int32 words of the q8_1 activation
 *    at those elements (y0, y1), and returns its share of the group's dot as a float:
 *    exact int8 dp4a sums per 16-element half times the float scales (what ggml computes).
 *  - element dequantizers (get_rows, the gemm panel): deq(block, e) performs to_f32's float
 *    operations in ggml's order with no FMA contraction (__fmul_rn/__fadd_rn), so get_rows is
 *    bit-exact with the CPU reference dequantizers.
 * Owns nothing (the i-quant codebooks are in cuda/matmul/iq_grids.cuh, included when
 * CLL_CU_WANT_IQ is defined). Rule: block bytes are read at their file offsets (formats/blocks.h);
 * a block only guarantees 2-byte alignment unless its size is a multiple of 4 (noted per format). */
#ifndef CLL_CUDA_FORMATS_CUH
#define CLL_CUDA_FORMATS_CUH

#include "cuda/common.cuh"

#ifdef CLL_CU_WANT_IQ
#include "cuda/matmul/iq_grids.cuh"
extern "C" {
#include "formats/iq_tables.h"
}
/* the device copy on the device, the C table in the host pass (same bytes: the gate checks) */
#ifdef __CUDA_ARCH__
#define CU_GRID(name) cll_cu_##name
#else
#define CU_GRID(name) cll_##name
#endif
#endif

/* Every decoder is __host__ __device__: the host pass runs the very same code against the C
 * reference in a build without a GPU (cll_cuda_decode_check, cuda/matmul/decode_check.cu). The
 * few intrinsics they use get a host twin below. */
#define CU_HD static __host__ __device__ __forceinline__

/* ---- intrinsics with host twins ---- */
CU_HD uint32_t cu_vsub4(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
    return __vsub4(a, b);
#else
    uint32_t r = 0;
    for (int i = 0; i < 4; i++) r |= ((((a >> 8 * i) & 0xFFu) - ((b >> 8 * i) & 0xFFu)) & 0xFFu) << 8 * i;
    return r;
#endif
}
CU_HD int cu_dp4a(int a, int b, int c) {
#ifdef __CUDA_ARCH__
    return __dp4a(a, b, c);
#else
    for (int i = 0; i < 4; i++) c += (int)(int8_t)(a >> 8 * i) * (int)(int8_t)(b >> 8 * i);
    return c;
#endif
}
CU_HD uint32_t cu_perm(uint32_t x, uint32_t y, uint32_t sel) { /* selector nibbles < 8 */
#ifdef __CUDA_ARCH__
    return __byte_perm(x, y, sel);
#else
    const uint64_t v = (uint64_t)x | ((uint64_t)y << 32);
    uint32_t r = 0;
    for (int i = 0; i < 4; i++) r |= (uint32_t)((v >> (8 * ((sel >> 4 * i) & 7))) & 0xFF) << 8 * i;
    return r;
#endif
}
CU_HD int cu_popc(uint32_t x) {
#ifdef __CUDA_ARCH__
    return __popc(x);
#else
    return __builtin_popcount(x);
#endif
}
template <class T> CU_HD T cu_ldg(const T *p) {
#ifdef __CUDA_ARCH__
    return __ldg(p); /* was cu_ldg(p): unbounded recursion on the device (UB), so every grid
                        lookup of the i-quants read garbage while the host pass was right */
#else
    return *p;
#endif
}
CU_HD float cu_fmul(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    volatile float r = a * b;
    return r;
#endif
}
CU_HD float cu_fadd(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fadd_rn(a, b);
#else
    volatile float r = a + b;
    return r;
#endif
}
CU_HD float cu_fsub(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fsub_rn(a, b);
#else
    volatile float r = a - b;
    return r;
#endif
}

/* ---- small loads and byte tricks ---- */
CU_HD uint32_t cu_ld16(const uint8_t *p) { return *(const uint16_t *)p; }
/* u32 from a 2-byte aligned address */
CU_HD uint32_t cu_ld32a2(const uint8_t *p) {
    const uint16_t *q = (const uint16_t *)p;
    return (uint32_t)q[0] | ((uint32_t)q[1] << 16);
}
CU_HD uint32_t cu_ld32a4(const uint8_t *p) { return *(const uint32_t *)p; }
CU_HD float cu_h2f(const uint8_t *p) {
#ifdef __CUDA_ARCH__
    return cll_h2f((uint16_t)cu_ld16(p));
#else
    return cll_fp16_to_f32((uint16_t)cu_ld16(p));
#endif
}
/* 4 bits -> bit 0 of each byte (bit i -> byte i); the shifted copies never overlap */
CU_HD uint32_t cu_spread4(uint32_t bits) { return ((bits & 0xFu) * 0x00204081u) & 0x01010101u; }
/* PTX prmt in its default mode, the selector unmasked: byte n of the result is byte (s >> 4n) & 7 of
 * {x, y}, or, where bit 3 of that nibble is set, that byte's sign spread over all 8 bits (0x00 or
 * 0xFF). __byte_perm masks the selector to 3-bit nibbles first (an extra and a call); cu_prmt uses
 * the sign mode as part of a lookup (cu_kv8d) */
CU_HD uint32_t cu_prmt(uint32_t x, uint32_t y, uint32_t s) {
#ifdef __CUDA_ARCH__
    uint32_t r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(s));
    return r;
#else
    const uint64_t v = (uint64_t)x | ((uint64_t)y << 32);
    uint32_t r = 0;
    for (int i = 0; i < 4; i++) {
        const uint32_t n = (s >> 4 * i) & 15, b = (uint32_t)(v >> (8 * (n & 7))) & 0xFFu;
        r |= ((n & 8) ? ((b & 0x80u) ? 0xFFu : 0u) : b) << 8 * i;
    }
    return r;
#endif
}
/* apply 4 sign bits (1 = negative) to 4 unsigned bytes < 128 */
CU_HD int cu_sign4(uint32_t mag, uint32_t signbits) {
    const uint32_t m = cu_spread4(signbits) * 0xFFu;
    return (int)cu_vsub4(mag ^ m, m);
}
/* ggml's ksigns_iq2xs[i] = i | parity(i) << 7 (the gate checks it against the C table) */
CU_HD uint32_t cu_ksigns(uint32_t i) { return i | ((uint32_t)(cu_popc(i) & 1) << 7); }

/* a * b + c rounded once, on the device and on the host alike */
CU_HD float cu_ffma(float a, float b, float c) {
#ifdef __CUDA_ARCH__
    return __fmaf_rn(a, b, c);
#else
    return fmaf(a, b, c);
#endif
}

/* float ops that must not contract into FMA (bit-exact dequantizers); FFMA: one explicit fma */
#define FM(a, b) cu_fmul((a), (b))
#define FA(a, b) cu_fadd((a), (b))
#define FS(a, b) cu_fsub((a), (b))
#define FFMA(a, b, c) cu_ffma((a), (b), (c))

/* ---- format descriptors ----------------------------------------------------------------------
 * struct CuFmt<T>: BB bytes per block, QK elements per block, GPB 32-groups per block,
 * dot(b, g, j, y0, y1, dy, s): lane share of group g of block b (s = the q8_1 block's d*sum, used
 * only by the formats with an additive min, as ggml's q4_1/q5_1 dots do), deq(b, e): element e. */
template <int T> struct CuFmt;

/* ---- legacy 32-element blocks ---- */
template <> struct CuFmt<CLL_TYPE_Q4_0> {
    static constexpr int BB = 18, QK = 32, GPB = 1;
    CU_HD float dot(const uint8_t *b, int, int j, int y0, int y1, float dy, float) {
        const uint32_t q = cu_ld32a2(b + 2 + 4 * j);
        const int v0 = (int)cu_vsub4(q & 0x0F0F0F0Fu, 0x08080808u), v1 = (int)cu_vsub4((q >> 4) & 0x0F0F0F0Fu, 0x08080808u);
        return (cu_h2f(b) * dy) * (float)cu_dp4a(v1, y1, cu_dp4a(v0, y0, 0));
    }
    CU_HD float deq(const uint8_t *b, int e) {
        const uint8_t q = b[2 + (e & 15)];
        const int x = (e < 16 ? (q & 0xF) : (q >> 4)) - 8;
        return FM((float)x, cu_h2f(b));
    }
};
template <> struct CuFmt<CLL_TYPE_Q4_1> {
    static constexpr int BB = 20, QK = 32, GPB = 1;
    CU_HD float dot(const uint8_t *b, int, int j, int y0, int y1, float dy, float s) {
        const uint32_t q = cu_ld32a4(b + 4 + 4 * j);
        const int sumi = cu_dp4a((int)((q >> 4) & 0x0F0F0F0Fu), y1, cu_dp4a((int)(q & 0x0F0F0F0Fu), y0, 0));
        const float r = (cu_h2f(b) * dy) * (float)sumi;
        return j == 0 ? r + cu_h2f(b + 2) * s : r;
    }
    CU_HD float deq(const uint8_t *b, int e) {
        const uint8_t q = b[4 + (e & 15)];
        const int x = e < 16 ? (q & 0xF) : (q >> 4);
        return FA(FM((float)x, cu_h2f(b)), cu_h2f(b + 2));
    }
};
template <> struct CuFmt<CLL_TYPE_Q5_0> {
    static constexpr int BB = 22, QK = 32, GPB = 1;
    CU_HD float dot(const uint8_t *b, int, int j, int y0, int y1, float dy, float) {
        const uint32_t qh = cu_ld32a2(b + 2), q = cu_ld32a2(b + 6 + 4 * j);
        const uint32_t v0 = (q & 0x0F0F0F0Fu) | (cu_spread4(qh >> (4 * j)) << 4);
        const uint32_t v1 = ((q >> 4) & 0x0F0F0F0Fu) | (cu_spread4(qh >> (16 + 4 * j)) << 4);
        const int sumi = cu_dp4a((int)cu_vsub4(v1, 0x10101010u), y1, cu_dp4a((int)cu_vsub4(v0, 0x10101010u), y0, 0));
        return (cu_h2f(b) * dy) * (float)sumi;
    }
    CU_HD float deq(const uint8_t *b, int e) {
        const uint32_t qh = cu_ld32a2(b + 2);
        const uint8_t q = b[6 + (e & 15)];
        const int x = ((e < 16 ? (q & 0xF) : (q >> 4)) | (int)(((qh >> e) & 1) << 4)) - 16;
        return FM((float)x, cu_h2f(b));
    }
};
template <> struct CuFmt<CLL_TYPE_Q5_1> {
    static constexpr int BB = 24, QK = 32, GPB = 1;
    CU_HD float dot(const uint8_t *b, int, int j, int y0, int y1, float dy, float s) {
        const uint32_t qh = cu_ld32a4(b + 4), q = cu_ld32a4(b + 8 + 4 * j);
        const uint32_t v0 = (q & 0x0F0F0F0Fu) | (cu_spread4(qh >> (4 * j)) << 4);
        const uint32_t v1 = ((q >> 4) & 0x0F0F0F0Fu) | (cu_spread4(qh >> (16 + 4 * j)) << 4);
        const float r = (cu_h2f(b) * dy) * (float)cu_dp4a((int)v1, y1, cu_dp4a((int)v0, y0, 0));
        return j == 0 ? r + cu_h2f(b + 2) * s : r;
    }
    CU_HD float deq(const uint8_t *b, int e) {
        const uint32_t qh = cu_ld32a4(b + 4);
        const uint8_t q = b[8 + (e & 15)];
        const int x = (e < 16 ? (q & 0xF) : (q >> 4)) | (int)(((qh >> e) & 1) << 4);
        return FA(FM((float)x, cu_h2f(b)), cu_h2f(b + 2));
    }
};
template <> struct CuFmt<CLL_TYPE_Q8_0> {
    static constexpr int BB = 34, QK = 32, GPB = 1;
    CU_HD float dot(const uint8_t *b, int, int j, int y0, int y1, float dy, float) {
        const int v0 = (int)cu_ld32a2(b + 2 + 4 * j), v1 = (int)cu_ld32a2(b + 18 + 4 * j);
        return (cu_h2f(b) * dy) * (float)cu_dp4a(v1, y1, cu_dp4a(v0, y0, 0));
    }
    CU_HD float deq(const uint8_t *b, int e) {
        return FM((float)(int8_t)b[2 + e], cu_h2f(b));
    }
};
template <> struct CuFmt<CLL_TYPE_IQ4_NL> {
    static constexpr int BB = 18, QK = 32, GPB = 1;
    CU_HD float dot(const uint8_t *b, int, int j, int y0, int y1, float dy, float);
    CU_HD float deq(const uint8_t *b, int e);
};

/* IQ4_NL / IQ4_XS levels (kvalues_iq4nl), the same bytes as formats/iq_tables.c; the words are
 * checked against the C table by cll_cu_iq_tables_check() */
#define CLL_CU_KV_W0 0xbfad9881u
#define CLL_CU_KV_W1 0xf6eaddcfu
#define CLL_CU_KV_W2 0x26190d01u
#define CLL_CU_KV_W3 0x71594535u
/* s + the 8 table values of the nibbles of q . the activation words y_lo (nibbles 0..3) and y_hi
 * (4..7), for a word whose low 16 bits hold 4 consecutive elements and whose high 16 bits the 4
 * elements 16 further on (the split layout's IQ4_XS order, cuda/matmul/split.cuh). A nibble
 * n = l + 8h splits the table in halves: cu_prmt of the negative half (kv[0..7], all < 0) by n gives
 * kv[l] where h = 0 and -1 where h = 1 (the sign mode); cu_prmt of kv[8..15] + 1 (all in 2..114) by
 * n ^ 8 gives 0 where h = 0 and kv[l + 8] + 1 where h = 1. The two sum to kv[n] either way, and dp4a
 * is linear, so two dp4a over the halves give the lookup's exact integer sum: 11 integer instructions
 * a word (an xor, two shifts, 4 permutes, 4 dp4a), where a lookup by __byte_perm (two permutes in the
 * halves and one to pick, each selector masked to 3-bit nibbles) and 2 dp4a took ~15 (ggml's
 * get_int_from_table_16 takes 8 permutes). cll_cu_iq_tables_check runs it for every nibble pattern */
#define CLL_CU_KV_P0 0x271a0e02u /* kv[8..11] + 1 */
#define CLL_CU_KV_P1 0x725a4636u /* kv[12..15] + 1 */
CU_HD int cu_kv8d(uint32_t q, int y_lo, int y_hi, int s) {
    const uint32_t qx = q ^ 0x88888888u;
    s = cu_dp4a((int)cu_prmt(CLL_CU_KV_W0, CLL_CU_KV_W1, q), y_lo, s);
    s = cu_dp4a((int)cu_prmt(CLL_CU_KV_P0, CLL_CU_KV_P1, qx), y_lo, s);
    s = cu_dp4a((int)cu_prmt(CLL_CU_KV_W0, CLL_CU_KV_W1, q >> 16), y_hi, s);
    return cu_dp4a((int)cu_prmt(CLL_CU_KV_P0, CLL_CU_KV_P1, qx >> 16), y_hi, s);
}
/* the same for ggml's own IQ4_NL / IQ4_XS order (byte i of q: element i in its low nibble, element
 * 16 + i in its high one; y0 holds the 4 low elements' activations, y1 the high ones'): q's nibbles
 * read as selectors give the elements i, 16+i, i+1, 17+i, .. in turn, so the activations are
 * interleaved to match (two permutes by constant selectors) and cu_kv8d does the rest: the same
 * integer sum as a lookup of each byte's two nibbles and two dp4a (which took ~25), in 13 instructions */
CU_HD int cu_kv8i(uint32_t q, int y0, int y1, int s) {
    return cu_kv8d(q, (int)cu_perm((uint32_t)y0, (uint32_t)y1, 0x5140u), (int)cu_perm((uint32_t)y0, (uint32_t)y1, 0x7362u), s);
}
CU_HD int cu_kv1(int n) { /* one level: byte n of the table's words */
    const uint64_t h = (n & 8) ? ((uint64_t)CLL_CU_KV_W3 << 32 | CLL_CU_KV_W2) : ((uint64_t)CLL_CU_KV_W1 << 32 | CLL_CU_KV_W0);
    return (int8_t)((h >> (8 * (n & 7))) & 0xFF);
}

__host__ __device__ __forceinline__ float CuFmt<CLL_TYPE_IQ4_NL>::dot(const uint8_t *b, int, int j, int y0, int y1, float dy, float) {
    const int sumi = cu_kv8i(cu_ld32a2(b + 2 + 4 * j), y0, y1, 0);
    return (cu_h2f(b) * dy) * (float)sumi;
}
__host__ __device__ __forceinline__ float CuFmt<CLL_TYPE_IQ4_NL>::deq(const uint8_t *b, int e) {
    const uint8_t q = b[2 + (e & 15)];
    return FM(cu_h2f(b), (float)cu_kv1(e < 16 ? (q & 0xF) : (q >> 4)));
}

/* ---- K-quants: 256-element super-blocks, group g = elements 32g..32g+31 ---- */
/* Q2_K | scales[16] @0 | qs[64] @16 | d @80 | dmin @82 |  (84 B: 4-byte aligned) */
template <> struct CuFmt<CLL_TYPE_Q2_K> {
    static constexpr int BB = 84, QK = 256, GPB = 8;
    CU_HD float dot(const uint8_t *b, int g, int j, int y0, int y1, float dy, float) {
        const int h = g >> 2, sh = 2 * (g & 3);
        const int v0 = (int)((cu_ld32a4(b + 16 + 32 * h + 4 * j) >> sh) & 0x03030303u);
        const int v1 = (int)((cu_ld32a4(b + 32 + 32 * h + 4 * j) >> sh) & 0x03030303u);
        const uint32_t s0 = b[2 * g], s1 = b[2 * g + 1];
        const int isum = (int)(s0 & 15) * cu_dp4a(v0, y0, 0) + (int)(s1 & 15) * cu_dp4a(v1, y1, 0);
        const int msum = (int)(s0 >> 4) * cu_dp4a(0x01010101, y0, 0) + (int)(s1 >> 4) * cu_dp4a(0x01010101, y1, 0);
        return dy * (cu_h2f(b + 80) * (float)isum - cu_h2f(b + 82) * (float)msum);
    }
    CU_HD float deq(const uint8_t *b, int e) {
        const int half = e >> 7, s = (e >> 5) & 3, l = e & 31;
        const uint8_t sc = b[e >> 4];
        const float dl = FM(cu_h2f(b + 80), (float)(sc & 0xF)), ml = FM(cu_h2f(b + 82), (float)(sc >> 4));
        const int q = (b[16 + 32 * half + l] >> (2 * s)) & 3;
        return FS(FM(dl, (float)q), ml);
    }
};
/* Q3_K 6-bit scale of sub-block sb (0..15), minus 32 (cll_q3k_scales, one entry) */
CU_HD int cu_q3k_scale(const uint8_t *sc, int sb) {
    const int lo = sb < 8 ? (sc[sb] & 0xF) : (sc[sb - 8] >> 4);
    const int hi = (sc[8 + (sb & 3)] >> (2 * (sb >> 2))) & 3;
    return (lo | (hi << 4)) - 32;
}
/* Q3_K | hmask[32] @0 | qs[64] @32 | scales[12] @96 | d @108 |  (110 B: 2-byte aligned) */
template <> struct CuFmt<CLL_TYPE_Q3_K> {
    static constexpr int BB = 110, QK = 256, GPB = 8;
    CU_HD float dot(const uint8_t *b, int g, int j, int y0, int y1, float dy, float) {
        const int h = g >> 2, sh = 2 * (g & 3);
        const uint32_t q0 = (cu_ld32a2(b + 32 + 32 * h + 4 * j) >> sh) & 0x03030303u;
        const uint32_t q1 = (cu_ld32a2(b + 48 + 32 * h + 4 * j) >> sh) & 0x03030303u;
        const uint32_t m0 = (cu_ld32a2(b + 4 * j) >> g) & 0x01010101u, m1 = (cu_ld32a2(b + 16 + 4 * j) >> g) & 0x01010101u;
        const int v0 = (int)cu_vsub4(q0 | (m0 << 2), 0x04040404u), v1 = (int)cu_vsub4(q1 | (m1 << 2), 0x04040404u);
        const int isum = cu_q3k_scale(b + 96, 2 * g) * cu_dp4a(v0, y0, 0) + cu_q3k_scale(b + 96, 2 * g + 1) * cu_dp4a(v1, y1, 0);
        return (dy * cu_h2f(b + 108)) * (float)isum;
    }
    CU_HD float deq(const uint8_t *b, int e) {
        const int half = e >> 7, s = (e >> 5) & 3, l = e & 31;
        const float dl = FM(cu_h2f(b + 108), (float)cu_q3k_scale(b + 96, e >> 4));
        const int q = ((b[32 + 32 * half + l] >> (2 * s)) & 3) - ((b[l] >> (4 * half + s)) & 1 ? 0 : 4);
        return FM(dl, (float)q);
    }
};
/* Q4_K / Q5_K 6-bit scale and min of group g (cll_q4k_scale_min) */
CU_HD void cu_q4k_sm(const uint8_t *q, int g, int *sc, int *m) {
    if (g < 4) {
        *sc = q[g] & 63;
        *m = q[g + 4] & 63;
    } else {
        *sc = (q[g + 4] & 0xF) | ((q[g - 4] >> 6) << 4);
        *m = (q[g + 4] >> 4) | ((q[g] >> 6) << 4);
    }
}
/* Q4_K | d @0 | dmin @2 | scales[12] @4 | qs[128] @16 |  (144 B: 16-byte multiple) */
template <> struct CuFmt<CLL_TYPE_Q4_K> {
    static constexpr int BB = 144, QK = 256, GPB = 8;
    CU_HD float dot(const uint8_t *b, int g, int j, int y0, int y1, float dy, float) {
        const int c = g >> 1, sh = 4 * (g & 1);
        const int v0 = (int)((cu_ld32a4(b + 16 + 32 * c + 4 * j) >> sh) & 0x0F0F0F0Fu);
        const int v1 = (int)((cu_ld32a4(b + 32 + 32 * c + 4 * j) >> sh) & 0x0F0F0F0Fu);
        int sc, m;
        cu_q4k_sm(b + 4, g, &sc, &m);
        const int isum = sc * cu_dp4a(v1, y1, cu_dp4a(v0, y0, 0));
        const int msum = m * cu_dp4a(0x01010101, y1, cu_dp4a(0x01010101, y0, 0));
        return dy * (cu_h2f(b) * (float)isum - cu_h2f(b + 2) * (float)msum);
    }
    CU_HD float deq(const uint8_t *b, int e) {
        const int g = e >> 5, c = e >> 6, l = e & 31;
        int sc, m;
        cu_q4k_sm(b + 4, g, &sc, &m);
        const float d1 = FM(cu_h2f(b), (float)sc), m1 = FM(cu_h2f(b + 2), (float)m);
        const uint8_t q = b[16 + 32 * c + l];
        return FS(FM(d1, (float)((g & 1) ? (q >> 4) : (q & 0xF))), m1);
    }
};
/* Q5_K | d @0 | dmin @2 | scales[12] @4 | qh[32] @16 | qs[128] @48 |  (176 B: 16-byte multiple) */
template <> struct CuFmt<CLL_TYPE_Q5_K> {
    static constexpr int BB = 176, QK = 256, GPB = 8;
    CU_HD float dot(const uint8_t *b, int g, int j, int y0, int y1, float dy, float) {
        const int c = g >> 1, sh = 4 * (g & 1);
        const uint32_t h0 = (cu_ld32a4(b + 16 + 4 * j) >> g) & 0x01010101u, h1 = (cu_ld32a4(b + 32 + 4 * j) >> g) & 0x01010101u;
        const int v0 = (int)(((cu_ld32a4(b + 48 + 32 * c + 4 * j) >> sh) & 0x0F0F0F0Fu) | (h0 << 4));
        const int v1 = (int)(((cu_ld32a4(b + 64 + 32 * c + 4 * j) >> sh) & 0x0F0F0F0Fu) | (h1 << 4));
        int sc, m;
        cu_q4k_sm(b + 4, g, &sc, &m);
        const int isum = sc * cu_dp4a(v1, y1, cu_dp4a(v0, y0, 0));
        const int msum = m * cu_dp4a(0x01010101, y1, cu_dp4a(0x01010101, y0, 0));
        return dy * (cu_h2f(b) * (float)isum - cu_h2f(b + 2) * (float)msum);
    }
    CU_HD float deq(const uint8_t *b, int e) {
        const int g = e >> 5, c = e >> 6, l = e & 31;
        int sc, m;
        cu_q4k_sm(b + 4, g, &sc, &m);
        const float d1 = FM(cu_h2f(b), (float)sc), m1 = FM(cu_h2f(b + 2), (float)m);
        const uint8_t q = b[48 + 32 * c + l];
        const int x = ((g & 1) ? (q >> 4) : (q & 0xF)) + (((b[16 + l] >> g) & 1) ? 16 : 0);
        return FS(FM(d1, (float)x), m1);
    }
};
/* Q6_K | ql[128] @0 | qh[64] @128 | scales[16] int8 @192 | d @208 |  (210 B: 2-byte aligned) */
template <> struct CuFmt<CLL_TYPE_Q6_K> {
    static constexpr int BB = 210, QK = 256, GPB = 8;
    CU_HD float dot(const uint8_t *b, int g, int j, int y0, int y1, float dy, float) {
        const int h = g >> 2, q = g & 3;
        const uint8_t *ql = b + 64 * h + 32 * (q & 1) + 4 * j, *qh = b + 128 + 32 * h + 4 * j;
        const int lsh = 4 * (q >> 1), hsh = 2 * q;
        const uint32_t v0 = ((cu_ld32a2(ql) >> lsh) & 0x0F0F0F0Fu) | (((cu_ld32a2(qh) >> hsh) & 0x03030303u) << 4);
        const uint32_t v1 = ((cu_ld32a2(ql + 16) >> lsh) & 0x0F0F0F0Fu) | (((cu_ld32a2(qh + 16) >> hsh) & 0x03030303u) << 4);
        const int8_t *sc = (const int8_t *)(b + 192 + 8 * h + 2 * q);
        const int isum = sc[0] * cu_dp4a((int)cu_vsub4(v0, 0x20202020u), y0, 0) + sc[1] * cu_dp4a((int)cu_vsub4(v1, 0x20202020u), y1, 0);
        return (dy * cu_h2f(b + 208)) * (float)isum;
    }
    CU_HD float deq(const uint8_t *b, int e) {
        const int half = e >> 7, r = e & 127, qs = r >> 5, l = r & 31;
        const uint8_t lq = b[64 * half + l + 32 * (qs & 1)];
        const int q = (((qs >> 1) ? (lq >> 4) : (lq & 0xF)) | (((b[128 + 32 * half + l] >> (2 * qs)) & 3) << 4)) - 32;
        const float sc = (float)(int8_t)b[192 + 8 * half + (l >> 4) + 2 * qs];
        return FM(FM(cu_h2f(b + 208), sc), (float)q);
    }
};

/* ---- i-quants (need the codebooks) ---- */
#ifdef CLL_CU_WANT_IQ
/* half (0/1) of a u64 grid entry */
CU_HD uint32_t cu_g64(const uint64_t *grid, uint32_t idx, int half) {
    const uint2 v = cu_ldg((const uint2 *)(grid + idx));
    return half ? v.y : v.x;
}
/* IQ2_XXS | d @0 | qs u16[32] @2 |  (66 B): group g = aux0 (4 grid indices) @2+8g, aux1 @6+8g */
template <> struct CuFmt<CLL_TYPE_IQ2_XXS> {
    static constexpr int BB = 66, QK = 256, GPB = 8;
    CU_HD float dot(const uint8_t *b, int g, int j, int y0, int y1, float dy, float) {
        const uint8_t *p = b + 2 + 8 * g;
        const uint32_t aux1 = cu_ld32a2(p + 4);
        const int k0 = j >> 1, k1 = 2 + (j >> 1), hf = j & 1;
        const uint32_t s0 = cu_ksigns((aux1 >> (7 * k0)) & 127) >> (4 * hf), s1 = cu_ksigns((aux1 >> (7 * k1)) & 127) >> (4 * hf);
        const int v0 = cu_sign4(cu_g64(CU_GRID(iq2xxs_grid), p[k0], hf), s0);
        const int v1 = cu_sign4(cu_g64(CU_GRID(iq2xxs_grid), p[k1], hf), s1);
        const int isum = (int)(2 * (aux1 >> 28) + 1) * cu_dp4a(v1, y1, cu_dp4a(v0, y0, 0));
        return (dy * (cu_h2f(b) * 0.125f)) * (float)isum;
    }
    CU_HD float deq(const uint8_t *b, int e) {
        const int g = e >> 5, l = (e >> 3) & 3, jj = e & 7;
        const uint8_t *p = b + 2 + 8 * g;
        const uint32_t aux1 = cu_ld32a2(p + 4);
        const float db = FM(FM(cu_h2f(b), FA(0.5f, (float)(aux1 >> 28))), 0.25f);
        const uint8_t gv = (uint8_t)(cu_g64(CU_GRID(iq2xxs_grid), p[l], jj >> 2) >> (8 * (jj & 3)));
        const float sg = (cu_ksigns((aux1 >> (7 * l)) & 127) >> jj) & 1 ? -1.f : 1.f;
        return FM(FM(db, (float)gv), sg);
    }
};
/* IQ2_XS | d @0 | qs u16[32] @2 (9-bit grid index | 7-bit sign index << 9) | scales[8] @66 |  (74 B) */
template <> struct CuFmt<CLL_TYPE_IQ2_XS> {
    static constexpr int BB = 74, QK = 256, GPB = 8;
    CU_HD float dot(const uint8_t *b, int g, int j, int y0, int y1, float dy, float) {
        const int hf = j & 1;
        const uint32_t q0 = cu_ld16(b + 2 + 8 * g + 2 * (j >> 1)), q1 = cu_ld16(b + 2 + 8 * g + 4 + 2 * (j >> 1));
        const int v0 = cu_sign4(cu_g64(CU_GRID(iq2xs_grid), q0 & 511, hf), cu_ksigns(q0 >> 9) >> (4 * hf));
        const int v1 = cu_sign4(cu_g64(CU_GRID(iq2xs_grid), q1 & 511, hf), cu_ksigns(q1 >> 9) >> (4 * hf));
        const uint32_t sc = b[66 + g];
        const int isum = (int)(2 * (sc & 15) + 1) * cu_dp4a(v0, y0, 0) + (int)(2 * (sc >> 4) + 1) * cu_dp4a(v1, y1, 0);
        return (dy * (cu_h2f(b) * 0.125f)) * (float)isum;
    }
    CU_HD float deq(const uint8_t *b, int e) {
        const int g = e >> 5, l = (e >> 3) & 3, jj = e & 7;
        const uint32_t sc = b[66 + g];
        const float db = FM(FM(cu_h2f(b), FA(0.5f, (float)(l < 2 ? (sc & 0xF) : (sc >> 4)))), 0.25f);
        const uint32_t q = cu_ld16(b + 2 + 8 * g + 2 * l);
        const uint8_t gv = (uint8_t)(cu_g64(CU_GRID(iq2xs_grid), q & 511, jj >> 2) >> (8 * (jj & 3)));
        const float sg = (cu_ksigns(q >> 9) >> jj) & 1 ? -1.f : 1.f;
        return FM(FM(db, (float)gv), sg);
    }
};
/* IQ2_S | d @0 | qs[32] indices @2 | signs[32] @34 | qh[8] @66 | scales[8] @74 |  (82 B) */
template <> struct CuFmt<CLL_TYPE_IQ2_S> {
    static constexpr int BB = 82, QK = 256, GPB = 8;
    CU_HD float dot(const uint8_t *b, int g, int j, int y0, int y1, float dy, float) {
        const int hf = j & 1, l0 = j >> 1, l1 = 2 + (j >> 1);
        const uint32_t qh = b[66 + g];
        const uint32_t i0 = b[2 + 4 * g + l0] | ((qh << (8 - 2 * l0)) & 0x300), i1 = b[2 + 4 * g + l1] | ((qh << (8 - 2 * l1)) & 0x300);
        const int v0 = cu_sign4(cu_g64(CU_GRID(iq2s_grid), i0, hf), (uint32_t)b[34 + 4 * g + l0] >> (4 * hf));
        const int v1 = cu_sign4(cu_g64(CU_GRID(iq2s_grid), i1, hf), (uint32_t)b[34 + 4 * g + l1] >> (4 * hf));
        const uint32_t sc = b[74 + g];
        const int isum = (int)(2 * (sc & 15) + 1) * cu_dp4a(v0, y0, 0) + (int)(2 * (sc >> 4) + 1) * cu_dp4a(v1, y1, 0);
        return (dy * (cu_h2f(b) * 0.125f)) * (float)isum;
    }
    CU_HD float deq(const uint8_t *b, int e) {
        const int g = e >> 5, l = (e >> 3) & 3, jj = e & 7;
        const uint32_t sc = b[74 + g];
        const float dl = FM(FM(cu_h2f(b), FA(0.5f, (float)(l < 2 ? (sc & 0xF) : (sc >> 4)))), 0.25f);
        const uint32_t idx = b[2 + 4 * g + l] | (((uint32_t)b[66 + g] << (8 - 2 * l)) & 0x300);
        const uint8_t gv = (uint8_t)(cu_g64(CU_GRID(iq2s_grid), idx, jj >> 2) >> (8 * (jj & 3)));
        const float sg = (b[34 + 4 * g + l] >> jj) & 1 ? -1.f : 1.f;
        return FM(FM(dl, (float)gv), sg);
    }
};
/* IQ3_XXS | d @0 | qs[64] grid indices @2 (8 per group) | scales+signs u32[8] @66 |  (98 B) */
template <> struct CuFmt<CLL_TYPE_IQ3_XXS> {
    static constexpr int BB = 98, QK = 256, GPB = 8;
    CU_HD float dot(const uint8_t *b, int g, int j, int y0, int y1, float dy, float) {
        const uint32_t aux = cu_ld32a2(b + 66 + 4 * g);
        const int hf = j & 1;
        /* elements 4j..4j+3 <- grid[qs[8g+j]], 16+4j.. <- grid[qs[8g+4+j]]; signs of 8-group l = j>>1 (+2) */
        const int v0 = cu_sign4(cu_ldg(CU_GRID(iq3xxs_grid) + b[2 + 8 * g + j]), cu_ksigns((aux >> (7 * (j >> 1))) & 127) >> (4 * hf));
        const int v1 = cu_sign4(cu_ldg(CU_GRID(iq3xxs_grid) + b[2 + 8 * g + 4 + j]), cu_ksigns((aux >> (7 * (2 + (j >> 1)))) & 127) >> (4 * hf));
        const int isum = (int)(2 * (aux >> 28) + 1) * cu_dp4a(v1, y1, cu_dp4a(v0, y0, 0));
        return (dy * (cu_h2f(b) * 0.25f)) * (float)isum;
    }
    CU_HD float deq(const uint8_t *b, int e) {
        const int g = e >> 5, l = (e >> 3) & 3, jj = e & 7;
        const uint32_t aux = cu_ld32a2(b + 66 + 4 * g);
        const float db = FM(FM(cu_h2f(b), FA(0.5f, (float)(aux >> 28))), 0.5f);
        const uint32_t gw = cu_ldg(CU_GRID(iq3xxs_grid) + b[2 + 8 * g + 2 * l + (jj >> 2)]);
        const uint8_t gv = (uint8_t)(gw >> (8 * (jj & 3)));
        const float sg = (cu_ksigns((aux >> (7 * l)) & 127) >> jj) & 1 ? -1.f : 1.f;
        return FM(FM(db, (float)gv), sg);
    }
};
/* IQ3_S | d @0 | qs[64] @2 | qh[8] @66 | signs[32] @74 | scales[4] @106 |  (110 B) */
template <> struct CuFmt<CLL_TYPE_IQ3_S> {
    static constexpr int BB = 110, QK = 256, GPB = 8;
    CU_HD float dot(const uint8_t *b, int g, int j, int y0, int y1, float dy, float) {
        const uint32_t qh = b[66 + g];
        const uint32_t i0 = b[2 + 8 * g + j] | (((qh >> j) & 1) << 8), i1 = b[2 + 8 * g + 4 + j] | (((qh >> (4 + j)) & 1) << 8);
        const uint32_t sg0 = (uint32_t)b[74 + 4 * g + (j >> 1)] >> (4 * (j & 1));
        const uint32_t sg1 = (uint32_t)b[74 + 4 * g + 2 + (j >> 1)] >> (4 * (j & 1));
        const int v0 = cu_sign4(cu_ldg(CU_GRID(iq3s_grid) + i0), sg0), v1 = cu_sign4(cu_ldg(CU_GRID(iq3s_grid) + i1), sg1);
        const uint32_t s = (b[106 + (g >> 1)] >> (4 * (g & 1))) & 0xF;
        const int isum = (int)(1 + 2 * s) * cu_dp4a(v1, y1, cu_dp4a(v0, y0, 0));
        return (dy * cu_h2f(b)) * (float)isum;
    }
    CU_HD float deq(const uint8_t *b, int e) {
        const int g = e >> 5, p = (e >> 2) & 7, jj = e & 7;
        const uint32_t s = (b[106 + (g >> 1)] >> (4 * (g & 1))) & 0xF;
        const float db = FM(cu_h2f(b), (float)(1 + 2 * s));
        const uint32_t idx = b[2 + 8 * g + p] | ((((uint32_t)b[66 + g] >> p) & 1) << 8);
        const uint8_t gv = (uint8_t)(cu_ldg(CU_GRID(iq3s_grid) + idx) >> (8 * (e & 3)));
        const float sg = (b[74 + 4 * g + ((e >> 3) & 3)] >> jj) & 1 ? -1.f : 1.f;
        return FM(FM(db, (float)gv), sg);
    }
};
/* IQ4_XS | d @0 | scales_h u16 @2 | scales_l[4] @4 | qs[128] @8 |  (136 B: 8-byte multiple) */
template <> struct CuFmt<CLL_TYPE_IQ4_XS> {
    static constexpr int BB = 136, QK = 256, GPB = 8;
    CU_HD int ls(const uint8_t *b, int g) {
        return (int)(((b[4 + (g >> 1)] >> (4 * (g & 1))) & 0xF) | (((cu_ld16(b + 2) >> (2 * g)) & 3) << 4));
    }
    CU_HD float dot(const uint8_t *b, int g, int j, int y0, int y1, float dy, float) {
        const int isum = (ls(b, g) - 32) * cu_kv8i(cu_ld32a4(b + 8 + 16 * g + 4 * j), y0, y1, 0);
        return (dy * cu_h2f(b)) * (float)isum;
    }
    CU_HD float deq(const uint8_t *b, int e) {
        const int g = e >> 5, r = e & 31;
        const float dl = FM(cu_h2f(b), (float)(ls(b, g) - 32));
        const uint8_t q = b[8 + 16 * g + (r & 15)];
        return FM(dl, (float)cu_kv1(r < 16 ? (q & 0xF) : (q >> 4)));
    }
};
#endif /* CLL_CU_WANT_IQ */

#endif
