/* cuda/matmul/split: weight layout 1 ("split", CLL_CU_LAYOUT_SPLIT) and the decode gemv that
 * streams it (k_gemv_sp), for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, IQ3_S.
 *
 * Layout 1: a row is re-cut at upload (host repack, cll_cu_sp_pack_row) into regions, each a run
 * of fixed-size records per 32-element group or per block, quants first, 16-byte aligned:
 *   Q4_0   [qs 16 B x ng][d 2 B x ng]
 *   Q8_0   [qs 32 B x ng][d 2 B x ng]
 *   Q5_1   [qs 16 B x ng][d, m, qh' 8 B x ng]       qh' bit 8b+w = high bit of element 4w+b
 *   Q2_K   [q 8 B x ng][sc 2 B x ng][d, dmin 4 B x nsb]   two-bit values in two words per group
 *   Q4_1   [qs 16 B x ng][d, m 4 B x ng]
 *   Q5_0   [qs 16 B x ng][qh' 4 B x ng][d 2 B x ng]   qh' as Q5_1's
 *   IQ4_NL [qs 16 B x ng][d 2 B x ng]                 nibbles in IQ4_XS's order
 *   Q4_K   [qs 16 B x ng][d, dmin, scales[12] 16 B x nsb]
 *   Q5_K   [qs 16 B x ng][qh' 4 B x ng][d, dmin, scales[12] 16 B x nsb]   qh' as Q5_1's
 *   Q3_K   [q2 | h << 2 nibbles 16 B x ng][sc0, sc1 int8 2 B x ng][d 2 B x nsb]  (146 B per 256: wider)
 *   Q6_K   [ql 16 B x ng][qh' 8 B x ng][scales int8 2 B x ng][d 2 B x nsb]
 *   IQ4_XS [qs 16 B x ng][d, scales_h, scales_l[4] 8 B x nsb]
 *   IQ3_S  [t + 8 nibbles 16 B x ng][d, 0, scales[4] 8 B x nsb]  (the grid expanded: 17 B per 32 values)
 * (ng = cols/32 groups, nsb = cols/256 super-blocks). A group's 16 quant bytes are in Q4_0 order
 * (byte i: element i low nibble, element i+16 high nibble), so lane word k pairs with activation
 * words k (low) and 4+k (high); IQ4_XS keeps the word pairing but orders each word's nibbles by
 * element (its table lookup then needs no interleave, CuSp<IQ4_XS>). The regions add up to
 * exactly the file's row bytes, so the row stride (rounded to 16) and every size are layout 0's,
 * except IQ3_S's (SpBytes: 17 / 13.75 of the file's; cll_cu_row_stride takes the layout). Element
 * decoders (deq: get_rows, gemm panel) read the same layout and stay bit-exact with to_f32.
 *
 * k_gemv_sp<S, WARPS=4, U=4, R=1> launch geometry: 128-thread blocks, R output rows per warp (1: the
 * w4u4 rows; 2: the w4r2u2 rows, U = 2, each activation group read once for both rows; the w4r2pre
 * rows, U = 4 with ONE: a row of <= 128 groups whole in the first loads, no second buffer), grid
 * (ceil(rows/(4R)), nb). Lane l takes groups l, l+32, .. : every load instruction of a warp reads
 * 32 consecutive records (512 B of quants for Q4_0). No shared memory. Per iteration a lane
 * issues the loads of U groups (U x 16-32 B of quants + side data, ld.global.nc.L1::no_allocate)
 * for the NEXT iteration before it decodes the current one (register double buffer), so a warp
 * keeps 2-4.6 KB in flight and an SM 24-32 warps: 60-100 KB, past the ~35 KB Little's law asks.
 * The q8_1 activation (36-byte blocks, 4-byte aligned: nine 32-bit __ldg per group, L1
 * resident) is read after cudaGridDependencySynchronize(); the first U groups of weights are
 * loaded before it (programmatic dependent launch: the prologue overlaps the previous kernel's
 * tail). With mat_ids (MoE) the matrix index comes from a producer, so the wait comes first.
 * Every thread reaches the wait before it may exit. Budget (-Xptxas -v, sm_90a, no spills, no
 * local memory): registers Q4_0 63, Q5_1 71, IQ4_XS 78, Q4_K 92, Q8_0 92, Q6_K capped at 102 by
 * __launch_bounds__(128, 5) (107 uncapped; a cap of 80 spills), so 20-32 warps per SM.
 * k_gemv_spx<S, R, U> (gemv_split.cu; rows *_split_r2_smx_ks, R=2 U=2, and *_split_r4_smx_ks,
 * R=4 U=1, the default): R rows per warp share each activation group read; the activation row
 * is staged once per block in shared memory (9 conflict-free LDS per group instead of 9 strided
 * __ldg); split-K over 1/2/4 warps of a block picked by shape (sp_pick_ks_log2); *_r4_smx_ks_pt:
 * the r4 kernel on a one-wave persistent grid (blocks loop over row tiles, activation staged
 * once per block). Registers (sm_90a, __launch_bounds__(128, 5) caps at 96, no spills, no stack):
 * r4 Q4_0 90, Q8_0 96, Q5_1 91, Q4_K 95, Q6_K 96, IQ4_XS 95; r2 87, 95, 90, 94, 95, 94:
 * 5 blocks (20 warps) per SM. Group indices are 32-bit there (cols < 2^36). */
#ifndef CLL_CUDA_MATMUL_SPLIT_CUH
#define CLL_CUDA_MATMUL_SPLIT_CUH

#include <string.h>

#include "cuda/formats.cuh"
extern "C" {
#include "formats/iq_tables.h" /* the host repack expands IQ3_S's grid */
}

#include "cuda/matmul/matmul.cuh"
#include "cuda/ops/ops.cuh"

/* unrolled on the device; the host pass (gcc) does not know the pragma */
#ifdef __CUDA_ARCH__
#define SP_UNROLL _Pragma("unroll")
#else
#define SP_UNROLL
#endif

/* ---- loads with host twins ---- */
struct CuQ4 {
    uint32_t x, y, z, w;
};
struct CuQ2 {
    uint32_t x, y;
};
/* a 4-byte and a 1-byte weight load (p 4-byte aligned / any) */
template <int M = 0> CU_HD uint32_t sp_ld4(const uint8_t *p) {
    uint32_t r;
#ifdef __CUDA_ARCH__
    if (M) r = *(const uint32_t *)p;
    else asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(r) : "l"(p));
#else
    memcpy(&r, p, 4);
#endif
    return r;
}
template <int M = 0> CU_HD uint32_t sp_ld1(const uint8_t *p) {
#ifdef __CUDA_ARCH__
    if (M) return *p;
    unsigned short r;
    asm volatile("ld.global.nc.L1::no_allocate.u8 %0, [%1];" : "=h"(r) : "l"(p));
    return r & 0xFF;
#else
    return *p;
#endif
}
/* weight bytes: streamed, read once (L1 bypass, 256 B L2 prefetch); p 16-byte aligned.
 * M = 1: the bytes are already in shared memory (the TMA-staged rows): plain loads. */
template <int M = 0> CU_HD CuQ4 sp_ld16(const uint8_t *p) {
    CuQ4 r;
#ifdef __CUDA_ARCH__
    if (M) {
        const uint4 v = *(const uint4 *)p;
        r.x = v.x, r.y = v.y, r.z = v.z, r.w = v.w;
    } else {
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                     : "l"(p));
    }
#else
    memcpy(&r, p, 16);
#endif
    return r;
}
template <int M = 0> CU_HD CuQ2 sp_ld8(const uint8_t *p) {
    CuQ2 r;
#ifdef __CUDA_ARCH__
    if (M) {
        const uint2 v = *(const uint2 *)p;
        r.x = v.x, r.y = v.y;
    } else {
        asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];" : "=r"(r.x), "=r"(r.y) : "l"(p));
    }
#else
    memcpy(&r, p, 8);
#endif
    return r;
}
template <int M = 0> CU_HD uint32_t sp_ld2(const uint8_t *p) {
    unsigned short r;
#ifdef __CUDA_ARCH__
    if (M) r = *(const unsigned short *)p;
    else asm volatile("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(r) : "l"(p));
#else
    memcpy(&r, p, 2);
#endif
    return r;
}
CU_HD float sp_h2f(uint32_t h) {
#ifdef __CUDA_ARCH__
    return cll_h2f((uint16_t)h);
#else
    return cll_fp16_to_f32((uint16_t)h);
#endif
}
/* a q8_1 activation block in registers: d, s, the 8 words of qs, and the integer sums of its
 * first and last 16 values (sl, sh: the offset terms of Q4_0 / Q4_K / Q6_K, computed once per
 * block of activations instead of once per weight row) */
struct CuX {
    float d, s;
    int y[8];
    int sl, sh;
};
CU_HD void sp_x_sums(CuX &x) {
    int a = 0, b = 0;
SP_UNROLL
    for (int k = 0; k < 4; k++) {
        a = cu_dp4a(0x01010101, x.y[k], a);
        b = cu_dp4a(0x01010101, x.y[4 + k], b);
    }
    x.sl = a;
    x.sh = b;
}
CU_HD CuX sp_ldx(const cll_block_q8_1 *b) {
    const int *p = (const int *)b;
    CuX x;
#ifdef __CUDA_ARCH__
    const float2 ds = __half22float2(__ldg((const __half2 *)b));
    x.d = ds.x;
    x.s = ds.y;
SP_UNROLL
    for (int k = 0; k < 8; k++) x.y[k] = __ldg(p + 1 + k);
#else
    x.d = cll_fp16_to_f32(b->d);
    x.s = cll_fp16_to_f32(b->s);
    for (int k = 0; k < 8; k++) memcpy(&x.y[k], p + 1 + k, 4);
#endif
    sp_x_sums(x);
    return x;
}
#ifdef __CUDACC__
/* a q8_1 activation block staged in shared memory as SP_XW = 11 words: d|s, qs[8], sl, sh
 * (odd stride: 32 lanes reading 32 consecutive blocks' word k hit 32 banks) */
#define SP_XW 11
static __device__ __forceinline__ CuX sp_ldx_sm(const int *p) {
    CuX x;
    const float2 ds = __half22float2(*(const __half2 *)p);
    x.d = ds.x;
    x.s = ds.y;
#pragma unroll
    for (int k = 0; k < 8; k++) x.y[k] = p[1 + k];
    x.sl = p[9];
    x.sh = p[10];
    return x;
}
/* stage ng q8_1 blocks from global xq into smem sx (SP_XW words each); all nt threads of the
 * block call it (no barrier inside) */
/* a q8_1 block's 9 words (d|s, qs[8]) and the integer sums of its two 16-value halves */
static __device__ __forceinline__ void sp_ldq8_sums(const cll_block_q8_1 *__restrict__ blk, int (&w)[9], int *a, int *b) {
    const int *src = (const int *)blk;
#pragma unroll
    for (int k = 0; k < 9; k++) w[k] = __ldg(src + k);
    int sa = 0, sb = 0;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        sa = __dp4a(0x01010101, w[1 + k], sa);
        sb = __dp4a(0x01010101, w[5 + k], sb);
    }
    *a = sa;
    *b = sb;
}
/* sp_stage_x of the act kernel's output without the act kernel: the gated activation of gu (f gate
 * then f up values) quantized per 32-element group as cll_warp_q8_1 does (same bits), a warp per
 * group; elements past f are zero (the act kernel's padding) */
static __device__ __forceinline__ void sp_stage_act(const float *__restrict__ gu, int64_t f, bool gelu, int ng, int *sx,
                                                    int tid, int nt) {
    const int lane = tid & 31, warp = tid >> 5, nw = nt >> 5;
    for (int g = warp; g < ng; g += nw) {
        const int64_t j = (int64_t)g * 32 + lane;
        const float v = j < f ? cll_act_gated(gu[j], gu[f + j], gelu) : 0.0f;
        const float amax = cll_warp_max(fabsf(v));
        const float d = amax / 127.f;
        const float id = amax != 0.0f ? 127.f / amax : 0.0f;
        const int q = __float2int_rn(v * id);
        int half = q; /* the sums of lanes 0..15 and 16..31 */
#pragma unroll
        for (int o = 8; o > 0; o >>= 1) half += __shfl_xor_sync(0xffffffffu, half, o);
        const int other = __shfl_xor_sync(0xffffffffu, half, 16);
        int *dst = sx + SP_XW * g;
        ((int8_t *)(dst + 1))[lane] = (int8_t)q;
        if (lane == 0) {
            const int sum = half + other;
            dst[0] = (int)((uint32_t)cll_f2h(d) | ((uint32_t)cll_f2h(d * (float)sum) << 16));
            dst[9] = half;
            dst[10] = other;
        }
    }
}
static __device__ __forceinline__ void sp_stage_x(const cll_block_q8_1 *__restrict__ xq, int ng, int *sx, int tid,
                                                  int nt) {
    for (int g = tid; g < ng; g += nt) {
        int w[9], a, b;
        sp_ldq8_sums(xq + g, w, &a, &b);
        int *d = sx + SP_XW * g;
#pragma unroll
        for (int k = 0; k < 9; k++) d[k] = w[k];
        d[9] = a;
        d[10] = b;
    }
}
#endif
CU_HD uint32_t sp_w(const CuQ4 &q, int k) { return k == 0 ? q.x : k == 1 ? q.y : k == 2 ? q.z : q.w; }
/* sum of 16-element lo/hi Q4_0-order nibble dots: low nibbles of q with y[0..3], high with y[4..7] */
CU_HD int sp_nib_dot(const CuQ4 &q, const CuX &x, int acc) {
SP_UNROLL
    for (int k = 0; k < 4; k++) {
        const uint32_t w = sp_w(q, k);
        acc = cu_dp4a((int)(w & 0x0F0F0F0Fu), x.y[k], acc);
        acc = cu_dp4a((int)((w >> 4) & 0x0F0F0F0Fu), x.y[4 + k], acc);
    }
    return acc;
}
/* a group's 32 nibbles of Q4_0 order as 8 words of int8 lanes: lo[k] pairs with activation word k,
 * hi[k] with word 4 + k (the masks once per group, not once per token) */
struct CuN {
    uint32_t lo[4], hi[4];
};
CU_HD CuN sp_nibs(const CuQ4 &q) {
    CuN n;
SP_UNROLL
    for (int k = 0; k < 4; k++) {
        const uint32_t w = sp_w(q, k);
        n.lo[k] = w & 0x0F0F0F0Fu;
        n.hi[k] = (w >> 4) & 0x0F0F0F0Fu;
    }
    return n;
}
/* sp_nib_dot over decoded nibbles: the same dp4a chain in the same order (sp_nib_dot stays written
 * out: defined as sp_nibs_dot(sp_nibs(q)) it compiles to other SASS for the one-token rows, sm_90a,
 * and those were not re-measured) */
CU_HD int sp_nibs_dot(const CuN &n, const CuX &x, int acc) {
SP_UNROLL
    for (int k = 0; k < 4; k++) {
        acc = cu_dp4a((int)n.lo[k], x.y[k], acc);
        acc = cu_dp4a((int)n.hi[k], x.y[4 + k], acc);
    }
    return acc;
}
/* a format's group decoded once and dotted with several tokens (the few-token rows): S::Dec,
 * S::dec(w, g), S::dotd(dec, x) where the format has them (and S::dot is dotd of dec, so the sums
 * are the same bits), else the undecoded registers and S::dot */
template <class S, class = void> struct SpDec {
    struct D {
        typename S::Wv w;
        int64_t g;
    };
    CU_HD D dec(const typename S::Wv &w, int64_t g) { return D{w, g}; }
    CU_HD float dot(const D &d, const CuX &x) { return S::dot(d.w, d.g, x); }
};
template <class S> struct SpDec<S, decltype((void)sizeof(typename S::Dec))> {
    typedef typename S::Dec D;
    CU_HD D dec(const typename S::Wv &w, int64_t g) { return S::dec(w, g); }
    CU_HD float dot(const D &d, const CuX &x) { return S::dotd(d, x); }
};
/* repack helper: 32 nibble/byte values -> 16 bytes in Q4_0 order */
static inline void sp_nibs16(const uint8_t v[32], uint8_t *out) {
    for (int i = 0; i < 16; i++) out[i] = (uint8_t)((v[i] & 15) | ((v[i + 16] & 15) << 4));
}
static inline uint16_t sp_rd16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* ---- per-format layout-1 descriptors ----
 * pack(src file row, dst, ng): host repack of one row. deq(row, ng, e): element e.
 * Wv / load(row, ng, g): the registers of group g. dot(w, g, x): the group's dot with q8_1 block x. */
template <int T> struct CuSp;

/* a group's 16 quant bytes at p (16-byte aligned: every split region is) as four words, one load */
CU_HD void sp_q16w(const uint8_t *p, uint32_t (&w)[4]) {
#ifdef __CUDA_ARCH__
    const uint4 v = *(const uint4 *)p;
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
#else
    memcpy(w, p, 16);
#endif
}
/* element l (0..31) of a group's nibbles in Q4_0 order (byte i: element i low, element 16 + i high) */
CU_HD int sp_nib(const uint32_t (&w)[4], int l) {
    const uint32_t b = (w[(l & 15) >> 2] >> (8 * (l & 3))) & 0xFFu;
    return (int)(l < 16 ? (b & 0xF) : (b >> 4));
}
/* the same from the group's 16 quant bytes q (one byte read: the element decoders) */
CU_HD int sp_nib_at(const uint8_t *q, int l) {
    const uint8_t b = q[l & 15];
    return l < 16 ? (b & 0xF) : (b >> 4);
}
/* the repack of a format whose bb-byte block is an hb-byte header then qb bytes of quants: every
 * group's quants first (qb each), then every group's header (hb each) */
static inline void sp_pack_hq(const uint8_t *s, uint8_t *d, int64_t ng, int bb, int hb, int qb) {
    for (int64_t g = 0; g < ng; g++) {
        memcpy(d + qb * g, s + bb * g + hb, (size_t)qb);
        memcpy(d + qb * ng + hb * g, s + bb * g, (size_t)hb);
    }
}

/* A group's high bits in Q5_1's order (qh' bit 8b + w = high bit of element 4w + b), which Q5_1, Q5_0
 * and Q5_K store: sp_qh_word from the file's order (bit e = element e), sp_qh_bit reads element l,
 * sp_qh_lo / sp_qh_hi move word k's bits to its lanes' bit 4 (the low nibbles: elements 4k + b; the
 * high ones: 16 + 4k + b) */
static inline uint32_t sp_qh_word(uint32_t qh) {
    uint32_t q2 = 0;
    for (int e = 0; e < 32; e++)
        if ((qh >> e) & 1) q2 |= 1u << (8 * (e & 3) + (e >> 2));
    return q2;
}
CU_HD int sp_qh_bit(uint32_t qh, int l) { return (int)((qh >> (8 * (l & 3) + (l >> 2))) & 1); }
CU_HD uint32_t sp_qh_lo(uint32_t qh, int k) { return (qh << (4 - k)) & 0x10101010u; }
CU_HD uint32_t sp_qh_hi(uint32_t qh, int k) { return (qh >> k) & 0x10101010u; }
/* IQ4_XS / IQ4_NL: a group's 16 file bytes (byte i: element i low nibble, element 16 + i high) re-cut
 * into word order (word k = elements 4k..4k+3 in bits 0..15, then 16+4k..19+4k), and where element l
 * lands: byte sp_iq4_byte(l), the high nibble when l is odd */
static inline void sp_iq4_pack16(const uint8_t *q, uint8_t *o) {
    uint8_t v[32];
    for (int i = 0; i < 16; i++) {
        v[i] = q[i] & 15;
        v[i + 16] = q[i] >> 4;
    }
    for (int k = 0; k < 4; k++)
        for (int h = 0; h < 2; h++) { /* h: the low or the high 16 elements */
            const uint8_t *e = v + 16 * h + 4 * k;
            o[4 * k + 2 * h] = (uint8_t)(e[0] | (e[1] << 4));
            o[4 * k + 2 * h + 1] = (uint8_t)(e[2] | (e[3] << 4));
        }
}
CU_HD int sp_iq4_byte(int l) { /* element 16h + 4k + j: byte 4k + 2h + j/2, nibble j&1 */
    const int li = l & 15;
    return 4 * (li >> 2) + 2 * (l >> 4) + ((li & 3) >> 1);
}
/* the codebook index of element l from the group's 16 bytes (word order) or its four words */
CU_HD int sp_iq4_at(const uint8_t *q, int l) {
    const uint8_t b = q[sp_iq4_byte(l)];
    return (l & 1) ? (b >> 4) : (b & 0xF);
}
CU_HD int sp_iq4_nib(const uint32_t (&w)[4], int l) {
    const int byte = sp_iq4_byte(l);
    const uint32_t b = (w[byte >> 2] >> (8 * (byte & 3))) & 0xFFu;
    return (int)((l & 1) ? (b >> 4) : (b & 0xF));
}

template <> struct CuSp<CLL_TYPE_Q4_0> {
    static constexpr int QK = 32, BB = 18;
    static void pack(const uint8_t *s, uint8_t *d, int64_t ng) { sp_pack_hq(s, d, ng, BB, 2, 16); }
    CU_HD float deq(const uint8_t *r, int64_t ng, int64_t e) {
        const int64_t g = e >> 5;
        const int l = (int)(e & 31);
        return FM((float)(sp_nib_at(r + 16 * g, l) - 8), sp_h2f(cu_ld16(r + 16 * ng + 2 * g)));
    }
    /* group g's 32 elements, each the float deq gives (one load of the quants, the scale once) */
    CU_HD void deq32(const uint8_t *r, int64_t ng, int64_t g, float *v) {
        uint32_t w[4];
        sp_q16w(r + 16 * g, w);
        const float d = sp_h2f(cu_ld16(r + 16 * ng + 2 * g));
SP_UNROLL
        for (int l = 0; l < 32; l++) v[l] = FM((float)(sp_nib(w, l) - 8), d);
    }
    struct Wv {
        CuQ4 q;
        uint32_t d;
    };
    template <int M = 0> CU_HD Wv load(const uint8_t *r, int64_t ng, int64_t g) { return Wv{sp_ld16<M>(r + 16 * g), sp_ld2<M>(r + 16 * ng + 2 * g)}; }
    /* the group decoded once for every token that dots it (SpDec) */
    struct Dec {
        CuN n;
        float d;
    };
    CU_HD Dec dec(const Wv &w, int64_t) { return Dec{sp_nibs(w.q), sp_h2f(w.d)}; }
    CU_HD float dotd(const Dec &w, const CuX &x) {
        const int sumi = sp_nibs_dot(w.n, x, 0) - 8 * (x.sl + x.sh); /* (q - 8): -8 * sum y */
        return (w.d * x.d) * (float)sumi;
    }
    /* dotd's arithmetic written out on the undecoded registers (the same bits): routed through dec,
     * the one-token rows measured ~1% slower (H200, l2-7b Q4_0 tg128 595.0 / 596.8 vs 600.6 / 604.7) */
    CU_HD float dot(const Wv &w, int64_t, const CuX &x) {
        const int sumi = sp_nib_dot(w.q, x, 0) - 8 * (x.sl + x.sh); /* (q - 8): -8 * sum y */
        return (sp_h2f(w.d) * x.d) * (float)sumi;
    }
};

template <> struct CuSp<CLL_TYPE_Q8_0> {
    static constexpr int QK = 32, BB = 34;
    static void pack(const uint8_t *s, uint8_t *d, int64_t ng) { sp_pack_hq(s, d, ng, BB, 2, 32); }
    CU_HD float deq(const uint8_t *r, int64_t ng, int64_t e) {
        const int64_t g = e >> 5;
        return FM((float)(int8_t)r[32 * g + (e & 31)], sp_h2f(cu_ld16(r + 32 * ng + 2 * g)));
    }
    CU_HD void deq32(const uint8_t *r, int64_t ng, int64_t g, float *v) {
        uint32_t a[4], b[4];
        sp_q16w(r + 32 * g, a);
        sp_q16w(r + 32 * g + 16, b);
        const float d = sp_h2f(cu_ld16(r + 32 * ng + 2 * g));
SP_UNROLL
        for (int l = 0; l < 32; l++) {
            const uint32_t wd = l < 16 ? a[l >> 2] : b[(l - 16) >> 2];
            v[l] = FM((float)(int8_t)((wd >> (8 * (l & 3))) & 0xFFu), d);
        }
    }
    struct Wv {
        CuQ4 a, b;
        uint32_t d;
    };
    template <int M = 0> CU_HD Wv load(const uint8_t *r, int64_t ng, int64_t g) {
        return Wv{sp_ld16<M>(r + 32 * g), sp_ld16<M>(r + 32 * g + 16), sp_ld2<M>(r + 32 * ng + 2 * g)};
    }
    CU_HD float dot(const Wv &w, int64_t, const CuX &x) {
        int s = 0;
SP_UNROLL
        for (int k = 0; k < 4; k++) {
            s = cu_dp4a((int)sp_w(w.a, k), x.y[k], s);
            s = cu_dp4a((int)sp_w(w.b, k), x.y[4 + k], s);
        }
        return (sp_h2f(w.d) * x.d) * (float)s;
    }
};

/* Q5_1 side record: d u16, m u16, qh' u32 (bit 8b+w = high bit of element 4w+b) */
template <> struct CuSp<CLL_TYPE_Q5_1> {
    static constexpr int QK = 32, BB = 24;
    static void pack(const uint8_t *s, uint8_t *d, int64_t ng) {
        for (int64_t g = 0; g < ng; g++) {
            const uint8_t *b = s + BB * g;
            memcpy(d + 16 * g, b + 8, 16);
            uint32_t qh;
            memcpy(&qh, b + 4, 4);
            const uint32_t q2 = sp_qh_word(qh);
            uint8_t *sd = d + 16 * ng + 8 * g;
            memcpy(sd, b, 4);
            memcpy(sd + 4, &q2, 4);
        }
    }
    CU_HD float deq(const uint8_t *r, int64_t ng, int64_t e) {
        const int64_t g = e >> 5;
        const int l = (int)(e & 31);
        const uint8_t *sd = r + 16 * ng + 8 * g;
        const uint32_t qh = cu_ld32a4(sd + 4);
        const int x = sp_nib_at(r + 16 * g, l) | (sp_qh_bit(qh, l) << 4);
        return FA(FM((float)x, cu_h2f(sd)), cu_h2f(sd + 2));
    }
    CU_HD void deq32(const uint8_t *r, int64_t ng, int64_t g, float *v) {
        uint32_t w[4];
        sp_q16w(r + 16 * g, w);
        const uint8_t *sd = r + 16 * ng + 8 * g;
        const uint32_t qh = cu_ld32a4(sd + 4);
        const float d = cu_h2f(sd), m = cu_h2f(sd + 2);
SP_UNROLL
        for (int l = 0; l < 32; l++) {
            const int x = sp_nib(w, l) | (sp_qh_bit(qh, l) << 4);
            v[l] = FA(FM((float)x, d), m);
        }
    }
    struct Wv {
        CuQ4 q;
        CuQ2 s;
    };
    template <int M = 0> CU_HD Wv load(const uint8_t *r, int64_t ng, int64_t g) { return Wv{sp_ld16<M>(r + 16 * g), sp_ld8<M>(r + 16 * ng + 8 * g)}; }
    CU_HD float dot(const Wv &w, int64_t, const CuX &x) {
        const uint32_t qh = w.s.y;
        int s = 0;
SP_UNROLL
        for (int k = 0; k < 4; k++) {
            const uint32_t q = sp_w(w.q, k);
            s = cu_dp4a((int)((q & 0x0F0F0F0Fu) | sp_qh_lo(qh, k)), x.y[k], s);
            s = cu_dp4a((int)(((q >> 4) & 0x0F0F0F0Fu) | sp_qh_hi(qh, k)), x.y[4 + k], s);
        }
        return (sp_h2f(w.s.x & 0xFFFF) * x.d) * (float)s + sp_h2f(w.s.x >> 16) * x.s;
    }
};

/* Q2_K: a group's 32 two-bit values as two words, A for its first 16 elements and B for its last 16 (bits
 * 8b + 2j of a word: element 4j + b of its half, so (A >> 2j) & 0x03030303 pairs with activation word j),
 * then the group's two scale bytes (sub-blocks 2g, 2g + 1: scale low nibble, min high nibble), then d |
 * dmin per super-block: [q 8 B x ng][sc 2 B x ng][d, dmin 4 B x nsb], the file's 84 B per 256 values */
template <> struct CuSp<CLL_TYPE_Q2_K> {
    static constexpr int QK = 256, BB = 84;
    static void pack(const uint8_t *s, uint8_t *d, int64_t ng) {
        for (int64_t g = 0; g < ng; g++) {
            const uint8_t *b = s + BB * (g >> 3);
            const int gg = (int)(g & 7), half = gg >> 2, sh = gg & 3;
            uint32_t w[2] = {0, 0};
            for (int l = 0; l < 32; l++) {
                const uint32_t v = (b[16 + 32 * half + l] >> (2 * sh)) & 3;
                const int i = l & 15;
                w[l >> 4] |= v << (8 * (i & 3) + 2 * (i >> 2));
            }
            memcpy(d + 8 * g, w, 8);
            d[8 * ng + 2 * g] = b[2 * gg];
            d[8 * ng + 2 * g + 1] = b[2 * gg + 1];
            if (gg == 0) memcpy(d + 10 * ng + 4 * (g >> 3), b + 80, 4);
        }
    }
    CU_HD int q2(uint32_t w, int i) { return (int)((w >> (8 * (i & 3) + 2 * (i >> 2))) & 3); }
    CU_HD float deq(const uint8_t *r, int64_t ng, int64_t e) {
        const int64_t g = e >> 5;
        const int l = (int)(e & 31);
        const uint8_t *c = r + 10 * ng + 4 * (g >> 3);
        const uint32_t sc = r[8 * ng + 2 * g + (l >> 4)];
        const float dl = FM(cu_h2f(c), (float)(sc & 0xF)), ml = FM(cu_h2f(c + 2), (float)(sc >> 4));
        return FS(FM(dl, (float)q2(cu_ld32a4(r + 8 * g + 4 * (l >> 4)), l & 15)), ml);
    }
    CU_HD void deq32(const uint8_t *r, int64_t ng, int64_t g, float *v) {
        const uint32_t a = cu_ld32a4(r + 8 * g), bw = cu_ld32a4(r + 8 * g + 4);
        const uint8_t *c = r + 10 * ng + 4 * (g >> 3);
        const uint32_t s0 = r[8 * ng + 2 * g], s1 = r[8 * ng + 2 * g + 1];
        const float d = cu_h2f(c), dm = cu_h2f(c + 2);
        const float dl0 = FM(d, (float)(s0 & 0xF)), ml0 = FM(dm, (float)(s0 >> 4));
        const float dl1 = FM(d, (float)(s1 & 0xF)), ml1 = FM(dm, (float)(s1 >> 4));
SP_UNROLL
        for (int l = 0; l < 16; l++) v[l] = FS(FM(dl0, (float)q2(a, l)), ml0);
SP_UNROLL
        for (int l = 0; l < 16; l++) v[16 + l] = FS(FM(dl1, (float)q2(bw, l)), ml1);
    }
    struct Wv {
        CuQ2 q;
        uint32_t sc, dm; /* the group's two scale bytes (low byte first); d | dmin */
    };
    template <int M = 0> CU_HD Wv load(const uint8_t *r, int64_t ng, int64_t g) {
        return Wv{sp_ld8<M>(r + 8 * g), sp_ld2<M>(r + 8 * ng + 2 * g), sp_ld4<M>(r + 10 * ng + 4 * (g >> 3))};
    }
    CU_HD float dot(const Wv &w, int64_t, const CuX &x) {
        int lo = 0, hi = 0;
SP_UNROLL
        for (int j = 0; j < 4; j++) {
            lo = cu_dp4a((int)((w.q.x >> (2 * j)) & 0x03030303u), x.y[j], lo);
            hi = cu_dp4a((int)((w.q.y >> (2 * j)) & 0x03030303u), x.y[4 + j], hi);
        }
        const int s0 = (int)(w.sc & 0xFF), s1 = (int)((w.sc >> 8) & 0xFF);
        const int isum = (s0 & 0xF) * lo + (s1 & 0xF) * hi, msum = (s0 >> 4) * x.sl + (s1 >> 4) * x.sh;
        return x.d * (sp_h2f(w.dm & 0xFFFF) * (float)isum - sp_h2f(w.dm >> 16) * (float)msum);
    }
};

/* Q4_1: Q4_0's quants, then d | m per group (4 B): d q + m, the dot as Q5_1's without the high bits */
template <> struct CuSp<CLL_TYPE_Q4_1> {
    static constexpr int QK = 32, BB = 20;
    static void pack(const uint8_t *s, uint8_t *d, int64_t ng) { sp_pack_hq(s, d, ng, BB, 4, 16); }
    CU_HD float deq(const uint8_t *r, int64_t ng, int64_t e) {
        const int64_t g = e >> 5;
        const int l = (int)(e & 31);
        const uint8_t *sd = r + 16 * ng + 4 * g;
        return FA(FM((float)sp_nib_at(r + 16 * g, l), cu_h2f(sd)), cu_h2f(sd + 2));
    }
    CU_HD void deq32(const uint8_t *r, int64_t ng, int64_t g, float *v) {
        uint32_t w[4];
        sp_q16w(r + 16 * g, w);
        const uint8_t *sd = r + 16 * ng + 4 * g;
        const float d = cu_h2f(sd), m = cu_h2f(sd + 2);
SP_UNROLL
        for (int l = 0; l < 32; l++) v[l] = FA(FM((float)sp_nib(w, l), d), m);
    }
    struct Wv {
        CuQ4 q;
        uint32_t s; /* d | m */
    };
    template <int M = 0> CU_HD Wv load(const uint8_t *r, int64_t ng, int64_t g) { return Wv{sp_ld16<M>(r + 16 * g), sp_ld4<M>(r + 16 * ng + 4 * g)}; }
    CU_HD float dot(const Wv &w, int64_t, const CuX &x) {
        return (sp_h2f(w.s & 0xFFFF) * x.d) * (float)sp_nib_dot(w.q, x, 0) + sp_h2f(w.s >> 16) * x.s;
    }
};

/* Q5_0: Q4_0's quants, Q5_1's high-bit word per group (bit 8b + w = high bit of element 4w + b), then
 * d per group: d ((q | h << 4) - 16) */
template <> struct CuSp<CLL_TYPE_Q5_0> {
    static constexpr int QK = 32, BB = 22;
    static void pack(const uint8_t *s, uint8_t *d, int64_t ng) {
        for (int64_t g = 0; g < ng; g++) {
            const uint8_t *b = s + BB * g;
            memcpy(d + 16 * g, b + 6, 16);
            uint32_t qh;
            memcpy(&qh, b + 2, 4);
            const uint32_t q2 = sp_qh_word(qh);
            memcpy(d + 16 * ng + 4 * g, &q2, 4);
            memcpy(d + 20 * ng + 2 * g, b, 2);
        }
    }
    CU_HD float deq(const uint8_t *r, int64_t ng, int64_t e) {
        const int64_t g = e >> 5;
        const int l = (int)(e & 31);
        const int x = (sp_nib_at(r + 16 * g, l) | (sp_qh_bit(cu_ld32a4(r + 16 * ng + 4 * g), l) << 4)) - 16;
        return FM((float)x, cu_h2f(r + 20 * ng + 2 * g));
    }
    CU_HD void deq32(const uint8_t *r, int64_t ng, int64_t g, float *v) {
        uint32_t w[4];
        sp_q16w(r + 16 * g, w);
        const uint32_t qh = cu_ld32a4(r + 16 * ng + 4 * g);
        const float d = cu_h2f(r + 20 * ng + 2 * g);
SP_UNROLL
        for (int l = 0; l < 32; l++) v[l] = FM((float)((sp_nib(w, l) | (sp_qh_bit(qh, l) << 4)) - 16), d);
    }
    struct Wv {
        CuQ4 q;
        uint32_t qh, d;
    };
    template <int M = 0> CU_HD Wv load(const uint8_t *r, int64_t ng, int64_t g) {
        return Wv{sp_ld16<M>(r + 16 * g), sp_ld4<M>(r + 16 * ng + 4 * g), sp_ld2<M>(r + 20 * ng + 2 * g)};
    }
    CU_HD float dot(const Wv &w, int64_t, const CuX &x) {
        int s = 0;
SP_UNROLL
        for (int k = 0; k < 4; k++) {
            const uint32_t q = sp_w(w.q, k);
            s = cu_dp4a((int)((q & 0x0F0F0F0Fu) | sp_qh_lo(w.qh, k)), x.y[k], s);
            s = cu_dp4a((int)(((q >> 4) & 0x0F0F0F0Fu) | sp_qh_hi(w.qh, k)), x.y[4 + k], s);
        }
        return (sp_h2f(w.d) * x.d) * (float)(s - 16 * (x.sl + x.sh));
    }
};

/* Q4_K / IQ4_XS / Q6_K: group g of a row is group g&7 of super-block g>>3 */
template <> struct CuSp<CLL_TYPE_Q4_K> {
    static constexpr int QK = 256, BB = 144;
    static void pack(const uint8_t *s, uint8_t *d, int64_t ng) {
        for (int64_t g = 0; g < ng; g++) {
            const uint8_t *b = s + BB * (g >> 3);
            const int gg = (int)(g & 7), c = gg >> 1, sh = 4 * (gg & 1);
            uint8_t v[32];
            for (int l = 0; l < 32; l++) v[l] = (uint8_t)((b[16 + 32 * c + l] >> sh) & 15);
            sp_nibs16(v, d + 16 * g);
            if (gg == 0) memcpy(d + 16 * ng + 16 * (g >> 3), b, 16);
        }
    }
    /* (sc, m) of group gg from the 12 scale bytes held as words a = bytes 0..3, b = 4..7, c = 8..11
     * (on the device byte gg & 3 of each word by one PRMT with zero fill instead of a shift and a mask) */
    CU_HD void sm(uint32_t a, uint32_t b, uint32_t c, int gg, int *sc, int *m) {
#ifdef __CUDA_ARCH__
        const uint32_t sel = 0x4440u | (uint32_t)(gg & 3);
        const int A = (int)__byte_perm(a, 0, sel), B = (int)__byte_perm(b, 0, sel), C = (int)__byte_perm(c, 0, sel);
#else
        const int sh = 8 * (gg & 3);
        const int A = (int)((a >> sh) & 0xFF), B = (int)((b >> sh) & 0xFF), C = (int)((c >> sh) & 0xFF);
#endif
        if (gg < 4) {
            *sc = A & 63;
            *m = B & 63;
        } else {
            *sc = (C & 0xF) | ((A >> 2) & 0x30);
            *m = (C >> 4) | ((B >> 2) & 0x30);
        }
    }
    CU_HD float deq(const uint8_t *r, int64_t ng, int64_t e) {
        const int64_t g = e >> 5;
        const int l = (int)(e & 31), gg = (int)(g & 7);
        const uint8_t *h = r + 16 * ng + 16 * (g >> 3);
        int sc, m;
        sm(cu_ld32a4(h + 4), cu_ld32a4(h + 8), cu_ld32a4(h + 12), gg, &sc, &m);
        const float d1 = FM(cu_h2f(h), (float)sc), m1 = FM(cu_h2f(h + 2), (float)m);
        return FS(FM(d1, (float)sp_nib_at(r + 16 * g, l)), m1);
    }
    CU_HD void deq32(const uint8_t *r, int64_t ng, int64_t g, float *v) {
        uint32_t w[4];
        sp_q16w(r + 16 * g, w);
        const uint8_t *h = r + 16 * ng + 16 * (g >> 3);
        int sc, m;
        sm(cu_ld32a4(h + 4), cu_ld32a4(h + 8), cu_ld32a4(h + 12), (int)(g & 7), &sc, &m);
        const float d1 = FM(cu_h2f(h), (float)sc), m1 = FM(cu_h2f(h + 2), (float)m);
SP_UNROLL
        for (int l = 0; l < 32; l++) v[l] = FS(FM(d1, (float)sp_nib(w, l)), m1);
    }
    struct Wv {
        CuQ4 q, h;
    };
    template <int M = 0> CU_HD Wv load(const uint8_t *r, int64_t ng, int64_t g) { return Wv{sp_ld16<M>(r + 16 * g), sp_ld16<M>(r + 16 * ng + 16 * (g >> 3))}; }
    /* x.d (d sc sum q y - dmin m sum y): the scales d sc and dmin m as floats once per group and row
     * (shared by every token of a few-token launch), the token's part in one conversion, one fma
     * and two products (explicitly rounded: every row of the split family computes the same bits) */
    struct Dec {
        CuN n;
        float fd, fm;
    };
    CU_HD Dec dec(const Wv &w, int64_t g) {
        int sc, m;
        sm(w.h.y, w.h.z, w.h.w, (int)(g & 7), &sc, &m);
        return Dec{sp_nibs(w.q), FM(sp_h2f(w.h.x & 0xFFFF), (float)sc), FM(sp_h2f(w.h.x >> 16), (float)m)};
    }
    CU_HD float dotd(const Dec &w, const CuX &x) {
        const float t = FFMA(w.fd, (float)sp_nibs_dot(w.n, x, 0), -FM(w.fm, (float)(x.sl + x.sh)));
        return FM(x.d, t);
    }
    CU_HD float dot(const Wv &w, int64_t g, const CuX &x) { return dotd(dec(w, g), x); }
};

/* Q5_K: Q4_K's regions with the high bits between them, [qs 16 B x ng][qh' 4 B x ng][d, dmin,
 * scales[12] 16 B x nsb]: qh' of a group as Q5_1's (bit 8b + w = high bit of element 4w + b), so a
 * word's high bits reach its lanes' bit 4 by one shift and mask; 176 B per 256 values, the file's */
template <> struct CuSp<CLL_TYPE_Q5_K> {
    static constexpr int QK = 256, BB = 176;
    static void pack(const uint8_t *s, uint8_t *d, int64_t ng) {
        for (int64_t g = 0; g < ng; g++) {
            const uint8_t *b = s + BB * (g >> 3);
            const int gg = (int)(g & 7), c = gg >> 1, sh = 4 * (gg & 1);
            uint8_t v[32];
            uint32_t qh = 0; /* the group's high bits in the file's element order */
            for (int l = 0; l < 32; l++) {
                v[l] = (uint8_t)((b[48 + 32 * c + l] >> sh) & 15);
                qh |= (uint32_t)((b[16 + l] >> gg) & 1) << l;
            }
            sp_nibs16(v, d + 16 * g);
            const uint32_t q2 = sp_qh_word(qh);
            memcpy(d + 16 * ng + 4 * g, &q2, 4);
            if (gg == 0) memcpy(d + 20 * ng + 16 * (g >> 3), b, 16);
        }
    }
    CU_HD float deq(const uint8_t *r, int64_t ng, int64_t e) {
        const int64_t g = e >> 5;
        const int l = (int)(e & 31), gg = (int)(g & 7);
        const uint8_t *h = r + 20 * ng + 16 * (g >> 3);
        int sc, m;
        CuSp<CLL_TYPE_Q4_K>::sm(cu_ld32a4(h + 4), cu_ld32a4(h + 8), cu_ld32a4(h + 12), gg, &sc, &m);
        const float d1 = FM(cu_h2f(h), (float)sc), m1 = FM(cu_h2f(h + 2), (float)m);
        const int x = sp_nib_at(r + 16 * g, l) | (sp_qh_bit(cu_ld32a4(r + 16 * ng + 4 * g), l) << 4);
        return FS(FM(d1, (float)x), m1);
    }
    CU_HD void deq32(const uint8_t *r, int64_t ng, int64_t g, float *v) {
        uint32_t w[4];
        sp_q16w(r + 16 * g, w);
        const uint32_t qh = cu_ld32a4(r + 16 * ng + 4 * g);
        const uint8_t *h = r + 20 * ng + 16 * (g >> 3);
        int sc, m;
        CuSp<CLL_TYPE_Q4_K>::sm(cu_ld32a4(h + 4), cu_ld32a4(h + 8), cu_ld32a4(h + 12), (int)(g & 7), &sc, &m);
        const float d1 = FM(cu_h2f(h), (float)sc), m1 = FM(cu_h2f(h + 2), (float)m);
SP_UNROLL
        for (int l = 0; l < 32; l++) v[l] = FS(FM(d1, (float)(sp_nib(w, l) | (sp_qh_bit(qh, l) << 4))), m1);
    }
    struct Wv {
        CuQ4 q, h;
        uint32_t qh;
    };
    template <int M = 0> CU_HD Wv load(const uint8_t *r, int64_t ng, int64_t g) {
        return Wv{sp_ld16<M>(r + 16 * g), sp_ld16<M>(r + 20 * ng + 16 * (g >> 3)), sp_ld4<M>(r + 16 * ng + 4 * g)};
    }
    /* Q4_K's decoded group with each lane's bit 4 from qh' (word k: elements 4k + b, bits 8b + k;
     * word 4 + k: elements 16 + 4k + b, bits 8b + 4 + k) */
    typedef CuSp<CLL_TYPE_Q4_K>::Dec Dec;
    CU_HD Dec dec(const Wv &w, int64_t g) {
        int sc, m;
        CuSp<CLL_TYPE_Q4_K>::sm(w.h.y, w.h.z, w.h.w, (int)(g & 7), &sc, &m);
        CuN n = sp_nibs(w.q);
SP_UNROLL
        for (int k = 0; k < 4; k++) {
            n.lo[k] |= sp_qh_lo(w.qh, k);
            n.hi[k] |= sp_qh_hi(w.qh, k);
        }
        return Dec{n, FM(sp_h2f(w.h.x & 0xFFFF), (float)sc), FM(sp_h2f(w.h.x >> 16), (float)m)};
    }
    CU_HD float dotd(const Dec &w, const CuX &x) { return CuSp<CLL_TYPE_Q4_K>::dotd(w, x); }
    CU_HD float dot(const Wv &w, int64_t g, const CuX &x) { return dotd(dec(w, g), x); }
};

/* IQ4_XS: a group's 16 quant bytes in word order: word k = elements 4k..4k+3 (bits 0..15, two per
 * byte, low nibble first) then 16+4k..19+4k (bits 16..31), so one word's table lookups give the
 * two activation words k and 4+k directly (cu_kv8d: the table split in halves by the sign mode of
 * prmt, 4 permutes and 4 dp4a per 8 values) */
template <> struct CuSp<CLL_TYPE_IQ4_XS> {
    static constexpr int QK = 256, BB = 136;
    static void pack(const uint8_t *s, uint8_t *d, int64_t ng) {
        for (int64_t g = 0; g < ng; g++) {
            const uint8_t *b = s + BB * (g >> 3);
            sp_iq4_pack16(b + 8 + 16 * (g & 7), d + 16 * g);
            if ((g & 7) == 0) memcpy(d + 16 * ng + 8 * (g >> 3), b, 8);
        }
    }
    CU_HD int ls(uint32_t hdr_hi, uint32_t sh, int gg) { /* hdr_hi = scales_l[4]; sh = scales_h */
        return (int)(((hdr_hi >> (4 * gg)) & 0xF) | (((sh >> (2 * gg)) & 3) << 4));
    }
    CU_HD float deq(const uint8_t *r, int64_t ng, int64_t e) {
        const int64_t g = e >> 5;
        const int l = (int)(e & 31), gg = (int)(g & 7);
        const uint8_t *h = r + 16 * ng + 8 * (g >> 3);
        const float dl = FM(cu_h2f(h), (float)(ls(cu_ld32a4(h + 4), cu_ld16(h + 2), gg) - 32));
        return FM(dl, (float)cu_kv1(sp_iq4_at(r + 16 * g, l)));
    }
    CU_HD void deq32(const uint8_t *r, int64_t ng, int64_t g, float *v) {
        uint32_t w[4];
        sp_q16w(r + 16 * g, w);
        const uint8_t *h = r + 16 * ng + 8 * (g >> 3);
        const float dl = FM(cu_h2f(h), (float)(ls(cu_ld32a4(h + 4), cu_ld16(h + 2), (int)(g & 7)) - 32));
SP_UNROLL
        for (int l = 0; l < 32; l++) v[l] = FM(dl, (float)cu_kv1(sp_iq4_nib(w, l)));
    }
    struct Wv {
        CuQ4 q;
        CuQ2 h;
    };
    template <int M = 0> CU_HD Wv load(const uint8_t *r, int64_t ng, int64_t g) { return Wv{sp_ld16<M>(r + 16 * g), sp_ld8<M>(r + 16 * ng + 8 * (g >> 3))}; }
    CU_HD float dot(const Wv &w, int64_t g, const CuX &x) {
        int s = 0;
SP_UNROLL
        for (int k = 0; k < 4; k++) s = cu_kv8d(sp_w(w.q, k), x.y[k], x.y[4 + k], s);
        const int isum = (ls(w.h.y, w.h.x >> 16, (int)(g & 7)) - 32) * s;
        return (x.d * sp_h2f(w.h.x & 0xFFFF)) * (float)isum;
    }
};

/* Q3_K split, the nibble form: a value is (q2 | h << 2) - 4 with q2 its two low bits and h its hmask
 * bit, so the upload stores n = q2 | h << 2 (0..7) as a nibble in Q4_0 order (the first 16 elements of
 * a group are the low nibbles, the last 16 the high ones: the group's two 16-value sub-blocks), each
 * group's two sub-block scales decoded to int8 (6 bits - 32) and d per super-block. The dot is Q4_0's
 * per sub-block: sc0 (sum n y - 4 sum y) over the low nibbles + sc1 (..) over the high ones, the same
 * integers as the file's 2-bit planes give. Per row: region A = 16 B of nibbles per group, region B =
 * the scales (2 B per group), region C = d (2 B per super-block): 146 B per 256 values against the
 * file's 110 (+32.7%: no plane unpacking a group; IQ3_S's nibble form measured the same trade; the
 * roofline counts the file's) */
template <> struct CuSp<CLL_TYPE_Q3_K> {
    static constexpr int QK = 256, BB = 110;
    static size_t row_bytes(int64_t cols) { return (size_t)(cols / 32) * 18 + (size_t)(cols / 256) * 2; }
    static void pack(const uint8_t *s, uint8_t *d, int64_t ng) {
        for (int64_t g = 0; g < ng; g++) {
            const uint8_t *b = s + BB * (g >> 3);
            const int gg = (int)(g & 7), half = gg >> 2, sh = gg & 3;
            uint8_t n[32];
            for (int l = 0; l < 32; l++)
                n[l] = (uint8_t)(((b[32 + 32 * half + l] >> (2 * sh)) & 3) | (((b[l] >> (4 * half + sh)) & 1) << 2));
            sp_nibs16(n, d + 16 * g);
            d[16 * ng + 2 * g] = (uint8_t)(int8_t)cu_q3k_scale(b + 96, 2 * gg);
            d[16 * ng + 2 * g + 1] = (uint8_t)(int8_t)cu_q3k_scale(b + 96, 2 * gg + 1);
            if (gg == 0) memcpy(d + 18 * ng + 2 * (g >> 3), b + 108, 2);
        }
    }
    CU_HD float deq(const uint8_t *r, int64_t ng, int64_t e) {
        const int64_t g = e >> 5;
        const int l = (int)(e & 31);
        const float dl = FM(cu_h2f(r + 18 * ng + 2 * (g >> 3)), (float)(int8_t)r[16 * ng + 2 * g + (l >> 4)]);
        return FM(dl, (float)(sp_nib_at(r + 16 * g, l) - 4));
    }
    CU_HD void deq32(const uint8_t *r, int64_t ng, int64_t g, float *v) {
        uint32_t w[4];
        sp_q16w(r + 16 * g, w);
        const float d = cu_h2f(r + 18 * ng + 2 * (g >> 3));
        const float d0 = FM(d, (float)(int8_t)r[16 * ng + 2 * g]), d1 = FM(d, (float)(int8_t)r[16 * ng + 2 * g + 1]);
SP_UNROLL
        for (int l = 0; l < 32; l++) v[l] = FM(l < 16 ? d0 : d1, (float)(sp_nib(w, l) - 4));
    }
    struct Wv {
        CuQ4 q;
        uint32_t sc, d; /* the group's two int8 scales (low byte first); d's f16 bits */
    };
    template <int M = 0> CU_HD Wv load(const uint8_t *r, int64_t ng, int64_t g) {
        return Wv{sp_ld16<M>(r + 16 * g), sp_ld2<M>(r + 16 * ng + 2 * g), sp_ld2<M>(r + 18 * ng + 2 * (g >> 3))};
    }
    struct Dec {
        CuN n;
        float d;
        int s0, s1;
    };
    CU_HD Dec dec(const Wv &w, int64_t) {
        return Dec{sp_nibs(w.q), sp_h2f(w.d), (int)(int8_t)(w.sc & 0xFF), (int)(int8_t)((w.sc >> 8) & 0xFF)};
    }
    CU_HD float dotd(const Dec &w, const CuX &x) {
        int lo = 0, hi = 0;
SP_UNROLL
        for (int k = 0; k < 4; k++) {
            lo = cu_dp4a((int)w.n.lo[k], x.y[k], lo);
            hi = cu_dp4a((int)w.n.hi[k], x.y[4 + k], hi);
        }
        const int isum = w.s0 * (lo - 4 * x.sl) + w.s1 * (hi - 4 * x.sh);
        return (w.d * x.d) * (float)isum;
    }
    CU_HD float dot(const Wv &w, int64_t g, const CuX &x) { return dotd(dec(w, g), x); }
};

/* IQ4_NL: IQ4_XS's nibble order per 32-value group (cu_kv8d on each word directly), then d per group */
template <> struct CuSp<CLL_TYPE_IQ4_NL> {
    static constexpr int QK = 32, BB = 18;
    static void pack(const uint8_t *s, uint8_t *d, int64_t ng) {
        for (int64_t g = 0; g < ng; g++) {
            sp_iq4_pack16(s + BB * g + 2, d + 16 * g);
            memcpy(d + 16 * ng + 2 * g, s + BB * g, 2);
        }
    }
    CU_HD float deq(const uint8_t *r, int64_t ng, int64_t e) {
        const int64_t g = e >> 5;
        return FM(cu_h2f(r + 16 * ng + 2 * g), (float)cu_kv1(sp_iq4_at(r + 16 * g, (int)(e & 31))));
    }
    CU_HD void deq32(const uint8_t *r, int64_t ng, int64_t g, float *v) {
        uint32_t w[4];
        sp_q16w(r + 16 * g, w);
        const float d = cu_h2f(r + 16 * ng + 2 * g);
SP_UNROLL
        for (int l = 0; l < 32; l++) v[l] = FM(d, (float)cu_kv1(sp_iq4_nib(w, l)));
    }
    struct Wv {
        CuQ4 q;
        uint32_t d;
    };
    template <int M = 0> CU_HD Wv load(const uint8_t *r, int64_t ng, int64_t g) { return Wv{sp_ld16<M>(r + 16 * g), sp_ld2<M>(r + 16 * ng + 2 * g)}; }
    CU_HD float dot(const Wv &w, int64_t, const CuX &x) {
        int s = 0;
SP_UNROLL
        for (int k = 0; k < 4; k++) s = cu_kv8d(sp_w(w.q, k), x.y[k], x.y[4 + k], s);
        return (sp_h2f(w.d) * x.d) * (float)s;
    }
};

/* Codebooks a split dot reads, copied into shared memory per block (SpTables<S>::stage(): every
 * thread, before the kernel's first barrier; the tables are constants, so before the PDL wait).
 * No split form has one today (IQ3_S's was replaced by its nibble form below); the hook stays for
 * a codebook format whose values do not fit a nibble. */
template <class S> struct SpTables {
    static constexpr bool on = false;
    static __device__ __forceinline__ void stage() {}
};

/* The device row bytes of a split form: the file's (the regions re-cut the same bytes) unless the
 * form says otherwise (SpBytes<S>::wider: IQ3_S's nibble form). */
template <class S, class = void> struct SpBytes {
    static constexpr bool wider = false;
    static size_t row(uint32_t type, int64_t cols) { return (size_t)cll_row_bytes(type, (uint64_t)cols); }
};
template <class S> struct SpBytes<S, decltype((void)S::row_bytes(0))> {
    static constexpr bool wider = true;
    static size_t row(uint32_t, int64_t cols) { return S::row_bytes(cols); }
};

/* IQ3_S split, the nibble form: every IQ3_S grid byte is an odd magnitude 1..15 and its sign bit
 * flips it, so a value is 2t + 1 with t in -8..7 (+m: t = (m - 1)/2; -m: t = -(m + 1)/2). The
 * upload expands each group's grid indices and signs into n = t + 8 (a nibble, Q4_0 order), so
 * the dot is Q4_0's: sum (2n - 15) y = 2 sum n y - 15 sum y (the staged half sums), the same
 * integer as the grid's sum (bit-exact with the former grid form), with no codebook gathers (8 a
 * group, from shared memory, were that form's bound: 332 tok/s on l3-8b). Per row: region A =
 * 16 B of nibbles per group, region C = per super-block d | 0 | scales[4] (8 B, one load).
 * 16 + 1 = 17 B per 32 values against the file's 13.75 (+23.6% device bytes; the roofline
 * counts the file's). */
template <> struct CuSp<CLL_TYPE_IQ3_S> {
    static constexpr int QK = 256, BB = 110;
    static size_t row_bytes(int64_t cols) { return (size_t)(cols / 32) * 17; }
    static void pack(const uint8_t *s, uint8_t *d, int64_t ng) {
        for (int64_t g = 0; g < ng; g++) {
            const uint8_t *b = s + BB * (g >> 3);
            const int gg = (int)(g & 7);
            uint8_t n[32];
            for (int k = 0; k < 8; k++) { /* values 4k..4k+3 of the group */
                const uint32_t idx = b[2 + 8 * gg + k] | (((uint32_t)b[66 + gg] >> k & 1) << 8);
                const uint32_t grid = cll_iq3s_grid[idx];
                for (int j = 0; j < 4; j++) {
                    const int l = 4 * k + j;
                    const int m = (int)((grid >> (8 * j)) & 0xFF); /* odd, 1..15 */
                    const bool neg = (b[74 + 4 * gg + (l >> 3)] >> (l & 7)) & 1;
                    const int t = neg ? -((m + 1) >> 1) : (m - 1) >> 1;
                    n[l] = (uint8_t)(t + 8);
                }
            }
            sp_nibs16(n, d + 16 * g);
            if (gg == 0) {
                uint8_t *c = d + 16 * ng + 8 * (g >> 3);
                memcpy(c, b, 2);
                c[2] = c[3] = 0;
                memcpy(c + 4, b + 106, 4);
            }
        }
    }
    CU_HD float deq(const uint8_t *r, int64_t ng, int64_t e) {
        const int64_t g = e >> 5;
        const int l = (int)(e & 31), gg = (int)(g & 7);
        const uint8_t *c = r + 16 * ng + 8 * (g >> 3);
        const uint32_t s = (c[4 + (gg >> 1)] >> (4 * (gg & 1))) & 0xF;
        const float db = FM(cu_h2f(c), (float)(1 + 2 * s));
        return FM(db, (float)(2 * sp_nib_at(r + 16 * g, l) - 15)); /* (db * m) * (+-1) of to_f32: the same float */
    }
    CU_HD void deq32(const uint8_t *r, int64_t ng, int64_t g, float *v) {
        uint32_t w[4];
        sp_q16w(r + 16 * g, w);
        const uint8_t *c = r + 16 * ng + 8 * (g >> 3);
        const int gg = (int)(g & 7);
        const uint32_t s = (c[4 + (gg >> 1)] >> (4 * (gg & 1))) & 0xF;
        const float db = FM(cu_h2f(c), (float)(1 + 2 * s));
SP_UNROLL
        for (int l = 0; l < 32; l++) v[l] = FM(db, (float)(2 * sp_nib(w, l) - 15));
    }
    struct Wv {
        CuQ4 q;
        CuQ2 h; /* d | 0, scales[4] */
    };
    template <int M = 0> CU_HD Wv load(const uint8_t *r, int64_t ng, int64_t g) {
        return Wv{sp_ld16<M>(r + 16 * g), sp_ld8<M>(r + 16 * ng + 8 * (g >> 3))};
    }
    CU_HD int mul(const CuQ2 &h, int64_t g) { return 1 + 2 * (int)((h.y >> (4 * (int)(g & 7))) & 0xF); }
    struct Dec {
        CuN n;
        float d;
        int m;
    };
    CU_HD Dec dec(const Wv &w, int64_t g) { return Dec{sp_nibs(w.q), sp_h2f(w.h.x & 0xFFFF), mul(w.h, g)}; }
    CU_HD float dotd(const Dec &w, const CuX &x) {
        const int s = 2 * sp_nibs_dot(w.n, x, 0) - 15 * (x.sl + x.sh);
        return (x.d * w.d) * (float)(w.m * s);
    }
    /* dotd's arithmetic on the undecoded registers (the same bits), written out as Q4_0's is: its
     * one-token rows measured slower routed through dec */
    CU_HD float dot(const Wv &w, int64_t g, const CuX &x) {
        const int s = 2 * sp_nib_dot(w.q, x, 0) - 15 * (x.sl + x.sh);
        return (x.d * sp_h2f(w.h.x & 0xFFFF)) * (float)(mul(w.h, g) * s);
    }
};

/* Q6_K: qh' of a group = 2 words; element 4w+b's 2 high bits at bits 8b + 2(w&3) of word w>>2 */
template <> struct CuSp<CLL_TYPE_Q6_K> {
    static constexpr int QK = 256, BB = 210;
    static void pack(const uint8_t *s, uint8_t *d, int64_t ng) {
        const int64_t nsb = ng >> 3;
        for (int64_t g = 0; g < ng; g++) {
            const uint8_t *b = s + BB * (g >> 3);
            const int gg = (int)(g & 7), h = gg >> 2, q = gg & 3;
            uint8_t lo[32];
            uint32_t H[2] = {0, 0};
            for (int l = 0; l < 32; l++) {
                const uint8_t lq = b[64 * h + 32 * (q & 1) + l];
                lo[l] = (uint8_t)((q >> 1) ? (lq >> 4) : (lq & 0xF));
                const uint32_t hi = (b[128 + 32 * h + l] >> (2 * q)) & 3;
                const int w = l >> 2, bb = l & 3;
                H[w >> 2] |= hi << (8 * bb + 2 * (w & 3));
            }
            sp_nibs16(lo, d + 16 * g);
            memcpy(d + 16 * ng + 8 * g, H, 8);
            memcpy(d + 24 * ng + 2 * g, b + 192 + 8 * h + 2 * q, 2);
            if (gg == 0) memcpy(d + 26 * ng + 2 * (g >> 3), b + 208, 2);
        }
        (void)nsb;
    }
    CU_HD float deq(const uint8_t *r, int64_t ng, int64_t e) {
        const int64_t g = e >> 5;
        const int l = (int)(e & 31), w = l >> 2, bb = l & 3;
        const uint8_t lq = r[16 * g + (l & 15)];
        const uint32_t H = cu_ld32a4(r + 16 * ng + 8 * g + 4 * (w >> 2));
        const int q = (((l < 16) ? (lq & 0xF) : (lq >> 4)) | (int)(((H >> (8 * bb + 2 * (w & 3))) & 3) << 4)) - 32;
        const float sc = (float)(int8_t)r[24 * ng + 2 * g + (l >> 4)];
        return FM(FM(cu_h2f(r + 26 * ng + 2 * (g >> 3)), sc), (float)q);
    }
    CU_HD void deq32(const uint8_t *r, int64_t ng, int64_t g, float *v) {
        uint32_t w[4];
        sp_q16w(r + 16 * g, w);
        const uint32_t H0 = cu_ld32a4(r + 16 * ng + 8 * g), H1 = cu_ld32a4(r + 16 * ng + 8 * g + 4);
        const float d = cu_h2f(r + 26 * ng + 2 * (g >> 3));
        const float ds0 = FM(d, (float)(int8_t)r[24 * ng + 2 * g]), ds1 = FM(d, (float)(int8_t)r[24 * ng + 2 * g + 1]);
SP_UNROLL
        for (int l = 0; l < 32; l++) {
            const int wq = l >> 2, bb = l & 3;
            const uint32_t H = (wq >> 2) ? H1 : H0;
            const int q = (sp_nib(w, l) | (int)(((H >> (8 * bb + 2 * (wq & 3))) & 3) << 4)) - 32;
            v[l] = FM(l < 16 ? ds0 : ds1, (float)q);
        }
    }
    struct Wv {
        CuQ4 q;
        CuQ2 h;
        uint32_t sc, d;
    };
    template <int M = 0> CU_HD Wv load(const uint8_t *r, int64_t ng, int64_t g) {
        return Wv{sp_ld16<M>(r + 16 * g), sp_ld8<M>(r + 16 * ng + 8 * g), sp_ld2<M>(r + 24 * ng + 2 * g), sp_ld2<M>(r + 26 * ng + 2 * (g >> 3))};
    }
    struct Dec {
        CuN n;
        int sc0, sc1;
        float d;
    };
    CU_HD Dec dec(const Wv &w, int64_t) {
        Dec o;
SP_UNROLL
        for (int k = 0; k < 4; k++) {
            const uint32_t q = sp_w(w.q, k);
            /* word k (elements 4k..) in qh' word 0, word 4+k (16+4k..) in qh' word 1 */
            const uint32_t h0 = ((w.h.x >> (2 * k)) & 0x03030303u) << 4;
            const uint32_t h1 = ((w.h.y >> (2 * k)) & 0x03030303u) << 4;
            o.n.lo[k] = (q & 0x0F0F0F0Fu) | h0;
            o.n.hi[k] = ((q >> 4) & 0x0F0F0F0Fu) | h1;
        }
        o.sc0 = (int)(int8_t)(w.sc & 0xFF);
        o.sc1 = (int)(int8_t)(w.sc >> 8);
        o.d = sp_h2f(w.d);
        return o;
    }
    CU_HD float dotd(const Dec &w, const CuX &x) {
        int s0 = -32 * x.sl, s1 = -32 * x.sh; /* -32 * sum y per half */
SP_UNROLL
        for (int k = 0; k < 4; k++) {
            s0 = cu_dp4a((int)w.n.lo[k], x.y[k], s0);
            s1 = cu_dp4a((int)w.n.hi[k], x.y[4 + k], s1);
        }
        const int isum = w.sc0 * s0 + w.sc1 * s1;
        return (x.d * w.d) * (float)isum;
    }
    CU_HD float dot(const Wv &w, int64_t g, const CuX &x) { return dotd(dec(w, g), x); }
};

#endif
