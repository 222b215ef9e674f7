/* cuda/matmul/gemm_fused: the fused dequant-in-tile product on f16 tensor cores (rows
 * gemm_<type>_split_fused_f16: Q4_0, Q8_0, Q4_K, Q6_K in the split layout). Y (n x rows, f32) =
 * X (n x cols, f16) . W^T, each weight byte read once per 64 tokens as quantized bytes. The pick gives
 * it a batched decode step of cll_cu_fused_min_tokens(type)..CLL_CU_FUSED_MAX sequences (cuda/pick.h),
 * where it replaced the resident f16 panels through cuBLAS (3.6x the bytes on Q4_0); the int8 tile of
 * gemv_mma.cu scales every group's int32 result per token, so its cost grows with the token count.
 *
 * Why f16: a weight's scales are folded into the operand when it is decoded (once per weight, shared
 * by every token), so the tensor cores accumulate a whole row in f32 with no per-group work per
 * token. Q4_0 and Q8_0 decode to the resident panel's value exactly, in f16 arithmetic ((q - 8) and q
 * are exact in f16, and one f16 multiply by d rounds the exact product once, as the panel's f32
 * product rounded to f16 does). Q4_K and Q6_K decode in f16 over f16 scales (d * sc, dmin * m rounded
 * to f16 once per group): within an f16 ulp of the panel's value, not always equal to it (the exact
 * f32 decode took ~2.5x the instructions per weight, and the kernel is bound by its instructions and
 * their latency: ncu on the H200, 16 tokens, ~9.5 cycles between a warp's instructions with 18 warps
 * resident). X is the f16 rounding the panel GEMM takes (cll_cu_gemm_fused converts it once per
 * product, or the norm / activation kernel before it wrote it so). The gate holds the product to the
 * gemm rows' bar (f16 roundings).
 *
 * Geometry: 256-thread blocks, 8 warps x 16 rows = 128 weight rows x up to 64 tokens (NTL tiles of 8:
 * 1, 2, 4 or 8, the launch's count rounded up, whole unrolled tile loops) per block, every warp over the
 * block's K range for its own 16 rows. A stage is one chunk (256 values) of the 128 rows' quantized
 * bytes (CuPieces, cuda/matmul/mma_stage.cuh; each thread copies the same pieces of every chunk,
 * FgSlots: a piece's address at the first chunk plus c x its step) and of the nt tokens' f16 values
 * (512 B a token, padded to FG_XP = 576 = 64 mod 128: the 16-byte B reads of a quarter warp, two
 * tokens x 4 lanes, fall on disjoint banks; Q4_0 and Q4_K at 17-32 tokens: the compact tile, FgGeo,
 * unpadded and swizzled, three blocks an SM). NS stages by cp.async, the first weights before the PDL
 * wait: 2 up to 32 tokens (three blocks an SM up to 16 tokens: l2-7b Q4_0 at 16 sequences 3366 vs
 * 3112 tok/s with 3 stages and two blocks; at 17-32 tokens three stages at two blocks, the tokens'
 * padding traded for a swizzle to fit, 32 sequences Q4_0 4725 / 4717 vs 4829 / 4917), 3 above. Per chunk a warp's lanes first turn its 16 rows'
 * scales into f16 pairs (prep, a per-warp table), then per 32-value group a lane decodes its 16
 * operand values (rows r and r + 8, 8 values each: the A fragments of two m16n8k16 steps) once and
 * issues two mma per tile of 8 tokens. The k index of the mma is a permutation of the group's
 * elements (lane q's 32-bit word of quants holds elements 4q..4q+3 and 16+4q..16+4q+3): A and B take
 * the same one, and X is stored in it (cll_cu_gemm_fused converts X with cll_cu_fused_xpos), so one
 * LDS.128 gives a token's B words of both steps. K is split over ks blocks (gridDim.y,
 * cll_cu_fused_ks: the count whose blocks fill their last wave best) with partials in the split-K
 * scratch; the last block of a row tile (an atomic ticket, reset by that block) adds them in split
 * order (deterministic).
 * Instructions (sm_90a SASS, Q4_0, 2 tiles): ~57 a warp per 32-value group (43 in the group loop: 4
 * mma, 30 decode, 2 B loads), down from ~93 when every copy recomputed its piece's address and the
 * B words took two LDS.64 a tile; the kernel is bound by its instruction issue (ncu, H200).
 * Owns nothing. Rule: tokens past nt in the last tile read unstaged shared memory; their columns are
 * never written (an mma column depends on its own B column only). */
#include <cuda_fp16.h>
#include <stdio.h>

#include "cuda/matmul/kernels.cuh"
#include "cuda/matmul/split.cuh"
#include "cuda/matmul/mma_stage.cuh"
#include "cuda/pick.h"

#define FG_WARPS 8
#define FG_BM (FG_WARPS * MMA_ROWS) /* 128 rows per block */
#define FG_TILES 8                  /* tokens per launch: 8 tiles of 8 */
#define FG_XP 576                   /* bytes per token and chunk: 256 halves, padded (576 mod 128 = 64) */

/* The compact 17-32 token tile (Q4_0 and Q4_K: the formats whose 128-row stage is 18 KB): the same
 * work in 73.7 KB of shared memory instead of 81.9, so three blocks an SM instead of two (24 warps: the
 * 32-token kernel is bound by dependent waits with too few warps, docs/cuda.md); the tokens' f16 values
 * unpadded (512 B a token, an odd token's 64-byte groups swapped in pairs, offset ^ 64: the quarter
 * warp's two tokens still fall on disjoint banks), the scale table one word a (row, group) (CuFg::pack /
 * unpack) or, for Q4_K, its uint2 entries half a chunk at a time; registers capped at 80 (ptxas: Q4_K
 * spills 8 bytes, outside the group loop). CLLAMA_CUDA_FG3 (fg_compact) picks it per type (A/B). */
template <int T, int NTL, bool C3> struct FgGeo {
    static_assert(!C3 || (NTL == 4 && (T == CLL_TYPE_Q4_0 || T == CLL_TYPE_Q4_K)), "compact tile: Q4_0 / Q4_K, 17-32 tokens");
    static constexpr uint32_t xp = C3 ? 512 : FG_XP; /* bytes a token and chunk */
    /* the scale table: tw words a (row, group) for tg groups of the chunk at a time (Q4_0: d's pair,
     * one word; Q4_K: d1 and -m1 pairs, two words, half a chunk at a time) */
    static constexpr int tw = C3 && T == CLL_TYPE_Q4_0 ? 1 : 2;
    static constexpr int tg = C3 && T == CLL_TYPE_Q4_K ? MMA_G / 2 : MMA_G;
    /* the swizzle of token t's 64-byte group offsets */
    static __device__ __forceinline__ uint32_t sw(int t) { return C3 ? (uint32_t)(t & 1) << 6 : 0u; }
};

/* c += A (16x16 f16, row-major fragments a0..a3) . B (16x8 f16, b0 b1), f32 accumulate */
static __device__ __forceinline__ void fg_mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

static __device__ __forceinline__ uint32_t h2u(__half2 h) { return *(const uint32_t *)&h; }
static __device__ __forceinline__ __half2 u2h(uint32_t u) { return *(const __half2 *)&u; }

/* nibble pairs of one word (bytes 4q..4q+3: low nibbles elements 4q+j, high 16+4q+j) as f16 pairs:
 * p[0] / p[1] = 1024 + nib of the low nibbles of bytes (0, 1) / (2, 3), p[2] / p[3] = 1024 + 16 nib of
 * their high nibbles (left in place: one shift for all four, fg_nib_val scales them back) */
/* (a & M) | 0x64006400 in one LOP3 (the compiler emits an AND and an OR) */
template <uint32_t M> static __device__ __forceinline__ uint32_t fg_and_or(uint32_t a) {
    uint32_t d;
    asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "n"(M), "n"(0x64006400u));
    return d;
}
static __device__ __forceinline__ void fg_nib_pairs(uint32_t w, uint32_t (&p)[4]) {
    const uint32_t t = __byte_perm(w, 0, 0x3120); /* bytes 0, 2, 1, 3: byte pairs (0, 1) and (2, 3) per half */
    const uint32_t u = t >> 8;
    p[0] = fg_and_or<0x000F000Fu>(t);
    p[1] = fg_and_or<0x000F000Fu>(u);
    p[2] = fg_and_or<0x00F000F0u>(t);
    p[3] = fg_and_or<0x00F000F0u>(u);
}
/* pair k of fg_nib_pairs as nib - off (exact in f16: 1024 + nib - (1024 + off), or (1024 + 16 nib) / 16
 * - (64 + off) in one fma) */
static __device__ __forceinline__ __half2 fg_nib_val(const uint32_t (&p)[4], int k, float off) {
    return k < 2 ? __hsub2(u2h(p[k]), __float2half2_rn(1024.0f + off))
                 : __hfma2(u2h(p[k]), __float2half2_rn(0.0625f), __float2half2_rn(-64.0f - off));
}

/* per format, over a staged chunk (s: one row's P bytes):
 * prep(s, g0, dpos, out): the scales of row s's groups g0..g0+3 as f16 pairs (both halves the same),
 * once per (row, group) and chunk into the warp's table, not once per lane and mma;
 * row(s, sc, gi, q, ..): the row's 8 operand values of lane q in group gi as four f16 pairs: l01 / l23
 * = elements (4q, 4q+1) / (4q+2, 4q+3), h01 / h23 = 16 + the same (the A fragments' words of the two
 * k16 steps) */
template <int T> struct CuFg;

template <> struct CuFg<CLL_TYPE_Q4_0> : CuPieces<CLL_TYPE_Q4_0> {
    /* the compact tile's table entry (FgGeo): d's pair is the whole of it */
    static __device__ __forceinline__ uint32_t pack(uint2 sc) { return sc.x; }
    static __device__ __forceinline__ uint2 unpack(uint32_t u) { return make_uint2(u, 0); }
    static __device__ __forceinline__ void prep(const uint8_t *s, int g0, int, uint2 (&out)[4]) {
        const uint2 d = *(const uint2 *)(s + 128 + 2 * g0); /* g0 % 4 == 0: 8-byte aligned */
        out[0] = make_uint2((d.x & 0xFFFF) | d.x << 16, 0);
        out[1] = make_uint2((d.x >> 16) | (d.x & 0xFFFF0000u), 0);
        out[2] = make_uint2((d.y & 0xFFFF) | d.y << 16, 0);
        out[3] = make_uint2((d.y >> 16) | (d.y & 0xFFFF0000u), 0);
    }
    /* d * (nib - 8): 1024 + nib minus 1032, exact; one f16 multiply rounds the exact product once, as
     * the panel's f32 product rounded to f16 does */
    static __device__ __forceinline__ void row(const uint8_t *s, uint2 sc, int gi, int q, uint32_t &l01, uint32_t &l23,
                                               uint32_t &h01, uint32_t &h23) {
        const __half2 d = u2h(sc.x);
        uint32_t p[4];
        fg_nib_pairs(lds32(s + 16 * gi + 4 * q), p);
        l01 = h2u(__hmul2(fg_nib_val(p, 0, 8.0f), d));
        l23 = h2u(__hmul2(fg_nib_val(p, 1, 8.0f), d));
        h01 = h2u(__hmul2(fg_nib_val(p, 2, 8.0f), d));
        h23 = h2u(__hmul2(fg_nib_val(p, 3, 8.0f), d));
    }
};

template <> struct CuFg<CLL_TYPE_Q8_0> : CuPieces<CLL_TYPE_Q8_0> {
    static __device__ __forceinline__ void prep(const uint8_t *s, int g0, int, uint2 (&out)[4]) {
        const uint2 d = *(const uint2 *)(s + 256 + 2 * g0);
        out[0] = make_uint2((d.x & 0xFFFF) | d.x << 16, 0);
        out[1] = make_uint2((d.x >> 16) | (d.x & 0xFFFF0000u), 0);
        out[2] = make_uint2((d.y & 0xFFFF) | d.y << 16, 0);
        out[3] = make_uint2((d.y >> 16) | (d.y & 0xFFFF0000u), 0);
    }
    /* four int8 (one word) as two f16 pairs d * q: (q ^ 0x80) | 0x6400 is 1024 + 128 + q, minus 1152
     * (exact), times d (one rounding of the exact product, as the panel) */
    static __device__ __forceinline__ void word(uint32_t w, __half2 d, uint32_t &p01, uint32_t &p23) {
        const uint32_t u = w ^ 0x80808080u;
        const __half2 off = __float2half2_rn(1152.0f);
        p01 = h2u(__hmul2(__hsub2(u2h(__byte_perm(u, 0x64646464u, 0x4140)), off), d));
        p23 = h2u(__hmul2(__hsub2(u2h(__byte_perm(u, 0x64646464u, 0x4342)), off), d));
    }
    static __device__ __forceinline__ void row(const uint8_t *s, uint2 sc, int gi, int q, uint32_t &l01, uint32_t &l23,
                                               uint32_t &h01, uint32_t &h23) {
        word(lds32(s + 32 * gi + 4 * q), u2h(sc.x), l01, l23);
        word(lds32(s + 32 * gi + 16 + 4 * q), u2h(sc.x), h01, h23);
    }
};

template <> struct CuFg<CLL_TYPE_Q4_K> : CuPieces<CLL_TYPE_Q4_K> {
    /* d1 = f16(d * sc), -m1 = -f16(dmin * m); the super-block header read once for the NG groups
     * (prep: four, prep2: two, for the compact tile's half-chunk table) */
    template <int NG> static __device__ __forceinline__ void prepn(const uint8_t *s, int g0, uint2 (&out)[NG]) {
        const uint4 h = *(const uint4 *)(s + 128);
        const float d = cll_h2f((uint16_t)(h.x & 0xFFFF)), dmin = cll_h2f((uint16_t)(h.x >> 16));
#pragma unroll
        for (int k = 0; k < NG; k++) {
            int sc, m;
            CuSp<CLL_TYPE_Q4_K>::sm(h.y, h.z, h.w, g0 + k, &sc, &m);
            out[k] = make_uint2(h2u(__float2half2_rn(__fmul_rn(d, (float)sc))), h2u(__float2half2_rn(-__fmul_rn(dmin, (float)m))));
        }
    }
    static __device__ __forceinline__ void prep(const uint8_t *s, int g0, int, uint2 (&out)[4]) { prepn<4>(s, g0, out); }
    static __device__ __forceinline__ void prep2(const uint8_t *s, int g0, uint2 (&out)[2]) { prepn<2>(s, g0, out); }
    /* d1 * nib - m1 in f16 (one rounding of the exact value over the f16 scales): within an f16 ulp of
     * the panel's f16(f32 value), not always equal to it */
    static __device__ __forceinline__ void row(const uint8_t *s, uint2 sc, int gi, int q, uint32_t &l01, uint32_t &l23,
                                               uint32_t &h01, uint32_t &h23) {
        const __half2 d1 = u2h(sc.x), m1 = u2h(sc.y);
        uint32_t p[4];
        fg_nib_pairs(lds32(s + 16 * gi + 4 * q), p);
        l01 = h2u(__hfma2(fg_nib_val(p, 0, 0.0f), d1, m1));
        l23 = h2u(__hfma2(fg_nib_val(p, 1, 0.0f), d1, m1));
        h01 = h2u(__hfma2(fg_nib_val(p, 2, 0.0f), d1, m1));
        h23 = h2u(__hfma2(fg_nib_val(p, 3, 0.0f), d1, m1));
    }
};

template <> struct CuFg<CLL_TYPE_Q6_K> : CuPieces<CLL_TYPE_Q6_K> {
    /* f16(d * sc) of each group's two 16-value halves (d once for the four) */
    static __device__ __forceinline__ void prep(const uint8_t *s, int g0, int dpos, uint2 (&out)[4]) {
        const uint2 scw = *(const uint2 *)(s + 192 + 2 * g0);
        const float d = cll_h2f((uint16_t)lds16(s + 208 + dpos));
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const uint32_t w = ((k < 2 ? scw.x : scw.y) >> (16 * (k & 1))) & 0xFFFF;
            out[k] = make_uint2(h2u(__float2half2_rn(__fmul_rn(d, (float)(int8_t)(w & 0xFF)))),
                                h2u(__float2half2_rn(__fmul_rn(d, (float)(int8_t)(w >> 8)))));
        }
    }
    /* ds * (q - 32) in f16 (q - 32 exact: 0x6400 | q is 1024 + q, minus 1056); q = ql nibble | 2 high
     * bits from qh' (the int8 row's assembly, gemv_mma.cu); within an f16 ulp of the panel's value */
    static __device__ __forceinline__ void row(const uint8_t *s, uint2 sc, int gi, int q, uint32_t &l01, uint32_t &l23,
                                               uint32_t &h01, uint32_t &h23) {
        const uint32_t w = lds32(s + 16 * gi + 4 * q);
        const uint32_t hx = lds32(s + 128 + 8 * gi), hy = lds32(s + 132 + 8 * gi);
        const uint32_t lo = (w & 0x0F0F0F0Fu) | (((hx >> (2 * q)) & 0x03030303u) << 4);
        const uint32_t hi = ((w >> 4) & 0x0F0F0F0Fu) | (((hy >> (2 * q)) & 0x03030303u) << 4);
        const __half2 da = u2h(sc.x), db = u2h(sc.y), off = __float2half2_rn(1056.0f);
        l01 = h2u(__hmul2(__hsub2(u2h(__byte_perm(lo, 0x64646464u, 0x4140)), off), da));
        l23 = h2u(__hmul2(__hsub2(u2h(__byte_perm(lo, 0x64646464u, 0x4342)), off), da));
        h01 = h2u(__hmul2(__hsub2(u2h(__byte_perm(hi, 0x64646464u, 0x4140)), off), db));
        h23 = h2u(__hmul2(__hsub2(u2h(__byte_perm(hi, 0x64646464u, 0x4342)), off), db));
    }
};

/* the pieces of the block's weight chunks this thread copies: slot k is piece i = tid + k x threads of
 * the FG_BM x NP pieces (row i / NP, piece i % NP). A slot keeps its piece's offset from the block's
 * first row at the block's first chunk, its step and its shared-memory offset; chunk c (relative) is
 * that offset + c x step (WIN: rounded down to 16), so a copy is a handful of integer instructions and a
 * cp.async (the per-chunk piece() walk with 64-bit selects and a cvta per copy cost as many instructions
 * per chunk as the tile's mma loop) */
template <class F> struct FgSlots {
    static constexpr int N = (FG_BM * F::NP + FG_WARPS * 32 - 1) / (FG_WARPS * 32);
    static_assert(FG_BM * F::P <= 65536, "stage offsets in 16 bits");
    /* registers: two a slot (Q6_K's 7 slots spilled at three blocks an SM with 64-bit addresses) */
    const uint8_t *wb;     /* the block's first row */
    uint32_t off[N];       /* the piece at chunk c0, bytes from wb (a block's 128 rows span < 4 GB); ~0u: none */
    uint32_t ds[N];        /* offset within a stage (low 16 bits) | bytes per chunk << 16 */
    __device__ __forceinline__ void init(const uint8_t *W, int64_t row0, int64_t rows, int64_t rs, int ng, int c0) {
        /* through an opaque move: left to itself the compiler recomputes W + row0 x rs from the kernel
         * parameters for every copy of every chunk (~6 instructions a slot) to save two registers */
        asm volatile("mov.b64 %0, %1;" : "=l"(wb) : "l"(W + row0 * rs));
#pragma unroll
        for (int k = 0; k < N; k++) {
            const int i = threadIdx.x + k * FG_WARPS * 32, r = i / F::NP, j = i % F::NP;
            const int64_t rr = row0 + r < rows ? r : rows - 1 - row0;
            const uint8_t *row = wb + rr * rs;
            const uint8_t *a = F::piece(row, ng, MMA_G * c0, j);
            if constexpr (F::WIN)
                if (j == F::NP - 1) a = row + F::d_off(ng, MMA_G * c0);
            off[k] = i < FG_BM * F::NP ? (uint32_t)(a - wb) : ~0u;
            ds[k] = (uint32_t)(r * F::P + 16 * j) | F::step(j) << 16;
        }
    }
    /* chunk c0 + c into the stage at shared address sbuf */
    __device__ __forceinline__ void copy(uint32_t sbuf, int c) const {
#pragma unroll
        for (int k = 0; k < N; k++)
            if (off[k] != ~0u) {
                const uint8_t *a = wb + off[k] + (uint32_t)c * (ds[k] >> 16);
                if constexpr (F::WIN) a = (const uint8_t *)((uintptr_t)a & ~(uintptr_t)15);
                mma_cp16s(sbuf + (ds[k] & 0xFFFFu), a);
            }
    }
};

/* the tokens' f16 values of a chunk after the weights (32 pieces of 16 B a token): warp w copies
 * tokens w, w + 8, .. (< nt), lane l piece l; xb: this thread's piece of token w at chunk c0 */
template <class G, int NTL>
static __device__ __forceinline__ void fg_stage_x(uint32_t sx, const __half *xb, int64_t ldxh, int c, int nt) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
    for (int k = 0; k < NTL; k++) {
        const int t = warp + FG_WARPS * k;
        if (t < nt) mma_cp16s(sx + t * G::xp + ((16 * lane) ^ G::sw(t)), xb + (int64_t)k * FG_WARPS * ldxh + 256 * c);
    }
}

/* NTL tiles of 8 tokens (the launch's nt rounded up to 1, 2, 4 or 8 tiles: whole unrolled tile loops;
 * the columns past nt are computed and dropped); NS pipeline stages. xh: the fused rows' f16 X
 * (cll_cu_gemm_fused: each 32-value group in the order fg_xpos gives) */
template <int T, int NTL, int NS, int UG, bool C3>
__global__ void __launch_bounds__(FG_WARPS * 32, NTL <= 2 || C3 ? 3 : 1) /* <= 2 tiles, C3: three blocks an SM (<= 85 registers) */
k_fgemm(const uint8_t *__restrict__ W, int64_t rows, int ng, int64_t rs, const __half *__restrict__ xh, int64_t ldxh,
        float *__restrict__ y, int64_t ldy, int nt, float *ws, int *tickets, int early) {
    typedef CuFg<T> F;
    typedef FgGeo<T, NTL, C3> G;
    /* NS stages x (FG_BM rows x P of weights | NTL x 8 tokens x G::xp of f16) */
    extern __shared__ __align__(16) uint8_t sm[];
    /* a warp's rows' scales of the current chunk: a uint2 each, or one word (C3) */
    __shared__ __align__(8) uint32_t tab[FG_WARPS][G::tg][MMA_ROWS][G::tw];
    __shared__ int last;
    if (early) cll_pdl_trigger();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r = lane >> 2, q = lane & 3;
    const int64_t row0 = (int64_t)blockIdx.x * FG_BM;
    const int ks = (int)gridDim.y, nchunks = ng / MMA_G;
    const int c0 = (int)((int64_t)blockIdx.y * nchunks / ks), n = (int)((int64_t)(blockIdx.y + 1) * nchunks / ks) - c0;
    constexpr uint32_t wbytes = (uint32_t)FG_BM * F::P, stage_bytes = wbytes + (uint32_t)NTL * 8 * G::xp;
    const uint32_t s0a = (uint32_t)__cvta_generic_to_shared(sm);
    FgSlots<F> slots;
    slots.init(W, row0, rows, rs, ng, c0);
    const __half *xb = xh + (int64_t)warp * ldxh + 256 * (int64_t)c0 + 8 * lane;
    /* the first stages' weights depend on nothing earlier: they go out before the wait; each stage's
     * commit group then closes with its activations (groups complete in order) */
#pragma unroll
    for (int c = 0; c < NS - 1; c++)
        if (c < n) slots.copy(s0a + c * stage_bytes, c);
    cll_pdl_wait(); /* X's producer */
#pragma unroll
    for (int c = 0; c < NS - 1; c++) {
        if (c < n) fg_stage_x<G, NTL>(s0a + c * stage_bytes + wbytes, xb, ldxh, c, nt);
        mma_commit();
    }
    float acc[NTL][4];
#pragma unroll
    for (int t = 0; t < NTL; t++) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.0f;
    const uint8_t *ws0 = sm + (warp * MMA_ROWS) * F::P; /* the warp's first row in stage 0 */
    for (int c = 0; c < n; c++) {
        mma_wait<NS - 2>();
        __syncthreads(); /* stage c landed for every thread; stage c-1's buffer is free */
        if (c + NS - 1 < n) {
            const uint32_t nb = s0a + ((c + NS - 1) % NS) * stage_bytes;
            slots.copy(nb, c + NS - 1);
            fg_stage_x<G, NTL>(nb + wbytes, xb, ldxh, c + NS - 1, nt);
        }
        mma_commit();
        const uint32_t so = (c % NS) * stage_bytes;
        const uint8_t *st = ws0 + so;
        const int dp = F::dpos(ng, MMA_G * (c0 + c));
        const uint8_t *s0 = st + r * F::P, *s1 = s0 + 8 * F::P;
        /* token r of each tile: lane q's 8 values of every group (fg_xpos: the elements 4q.. of step 0,
         * then 16 + 4q.. of step 1), one LDS.128 */
        const uint8_t *xr = sm + so + wbytes + r * G::xp + 16 * q;
        const uint32_t sw = G::sw(r); /* token r + 8 t has r's parity */
        /* the chunk's groups in G::tg-group halves (one, or two for the compact Q4_K tile) */
#pragma unroll
        for (int h = 0; h < MMA_G / G::tg; h++) {
            { /* the warp's 16 rows' scales, once per (row, group): a lane one row, tg / 2 groups */
                const int pr = lane & 15, pg = (lane >> 4) * (G::tg / 2);
                uint2 sc[G::tg / 2];
                if constexpr (G::tg == MMA_G) F::prep(st + pr * F::P, pg, dp, sc);
                else F::prep2(st + pr * F::P, h * G::tg + pg, sc);
#pragma unroll
                for (int k = 0; k < G::tg / 2; k++) {
                    if constexpr (G::tw == 1) tab[warp][pg + k][pr][0] = F::pack(sc[k]);
                    else *(uint2 *)tab[warp][pg + k][pr] = sc[k];
                }
            }
            __syncwarp();
            /* one and two tiles unrolled by 4, more by 2 (the 17-64 token kernels were not re-measured). H200,
             * l2-7b speed_tg (same call, 91d7143), unroll 2 / 4 / 8: Q4_K_M 4 sequences 1100.8 / 1112.2 / 1127.7,
             * 8 1960.0 / 1982.2 / 1980.3, 16 3107.5 / 3150.6 / 3161.3; Q4_0 4 1367.6 / 1373.6 / 1368.1, 8 2145.4 /
             * 2161.9 / 2160.8, 16 3388.5 / 3438.7 / 3466.3 */
#pragma unroll UG
            for (int gj = 0; gj < G::tg; gj++) {
                const int gi = h * G::tg + gj;
                uint32_t k0[4], k1[4];
                if constexpr (G::tw == 1) {
                    F::row(s0, F::unpack(tab[warp][gj][r][0]), gi, q, k0[0], k0[2], k1[0], k1[2]);
                    F::row(s1, F::unpack(tab[warp][gj][r + 8][0]), gi, q, k0[1], k0[3], k1[1], k1[3]);
                } else {
                    F::row(s0, *(const uint2 *)tab[warp][gj][r], gi, q, k0[0], k0[2], k1[0], k1[2]);
                    F::row(s1, *(const uint2 *)tab[warp][gj][r + 8], gi, q, k0[1], k0[3], k1[1], k1[3]);
                }
#pragma unroll
                for (int t = 0; t < NTL; t++) {
                    const uint4 b = *(const uint4 *)(xr + 8 * t * G::xp + ((64 * gi) ^ sw));
                    fg_mma(acc[t], k0, b.x, b.y);
                    fg_mma(acc[t], k1, b.z, b.w);
                }
            }
            __syncwarp(); /* the table's readers before the next writers */
        }
    }
    mma_wait<0>();
    mma_tile_out<NTL>(acc, NTL, row0 + warp * MMA_ROWS + r, q, nt, rows, row0, FG_BM, y, ldy, ws, tickets, &last);
}

template <int T, int NTL, int NS, bool C3> static constexpr size_t fg_smem(void) {
    return (size_t)NS * ((size_t)FG_BM * CuFg<T>::P + (size_t)NTL * 8 * FgGeo<T, NTL, C3>::xp);
}

/* UG: the group loop's unroll (one and two tiles 4, more 2: at 17-32 tokens 4 measured 0.5-1% slower,
 * H200 tenth session) */
template <int T, int NTL, int NS, bool C3 = false, int UG = (NTL <= 2 ? 4 : 2)>
static cudaError_t fg_launch_one(const cll_cu_weight *w, const __half *xh, int t0, int nt, float *y, int64_t ldy,
                                 const cll_cu_splitk *sk, cudaStream_t st) {
    static int bps = 0; /* resident blocks per SM, asked once (the same on every GPU of one model) */
    static int opened[64]; /* the dynamic shared memory, per device */
    constexpr size_t smem = fg_smem<T, NTL, NS, C3>();
    CLL_CU_RET(cll_cu_open_smem(opened, k_fgemm<T, NTL, NS, UG, C3>, (int)smem));
    if (!bps) {
        CLL_CU_RET(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, k_fgemm<T, NTL, NS, UG, C3>, FG_WARPS * 32, smem));
        if (bps < 1) return cudaErrorInvalidConfiguration;
    }
    const int64_t tiles = cll_cdiv(w->rows, FG_BM);
    /* split-K by how well the blocks fill their last wave (capping it at 4 or 2 for the 8-12 splits of
     * the o / down products at 16-32 tokens measured 1-26% slower, H200 tenth session) */
    const int ks = cll_cu_fused_ks(tiles, w->cols / 256, (int64_t)cll_cu_sm_count() * bps, nt, w->rows,
                                   sk && sk->ws ? sk->ws_floats : 0, sk && sk->tickets ? sk->n_tickets : 0);
    return cll_cu_launch(k_fgemm<T, NTL, NS, UG, C3>, dim3((unsigned)tiles, (unsigned)ks), dim3(FG_WARPS * 32), smem, st, w->d,
                         w->rows, (int)(w->cols / 32), (int64_t)w->row_stride, xh + (int64_t)t0 * w->cols,
                         (int64_t)w->cols, y + (int64_t)t0 * ldy, ldy, nt, sk ? sk->ws : (float *)NULL,
                         sk ? sk->tickets : (int *)NULL, cll_cu_gemv_early_trigger());
}

/* the compact 17-32 token tile (FgGeo) for type T: CLLAMA_CUDA_FG3 = a mask (1: Q4_0, 2: Q4_K; unset:
 * FG_COMPACT_DEFAULT) */
#define FG_COMPACT_DEFAULT 3
template <int T> static bool fg_compact(void) {
    static int c = -2; /* read once per process; not state */
    const int m = cll_cu_env_nonneg(&c, "CLLAMA_CUDA_FG3");
    return ((m < 0 ? FG_COMPACT_DEFAULT : m) >> (T == CLL_TYPE_Q4_K)) & 1;
}

template <int T>
static cudaError_t fg_launch(const cll_cu_weight *w, const void *xh, int64_t n, float *y, int64_t ldy,
                             const cll_cu_splitk *sk, cudaStream_t st) {
    if (w->layout != CLL_CU_LAYOUT_SPLIT || w->type != (uint32_t)T || w->n_mat != 1 || w->cols % 256 ||
        w->cols / 32 > INT32_MAX || ((uintptr_t)w->d & 15) || w->row_stride % 16 || ((uintptr_t)xh & 15) || n < 0 ||
        ldy < w->rows)
        return cudaErrorInvalidValue;
    /* launches of at most 64 tokens, balanced (65 -> 33 + 32); each the fewest tiles that hold it */
    const int64_t cap = 8 * FG_TILES, launches = (n + cap - 1) / cap, each = launches ? (n + launches - 1) / launches : 0;
    for (int64_t t0 = 0; t0 < n; t0 += each) {
        const int nt = (int)(n - t0 < each ? n - t0 : each);
        const __half *x = (const __half *)xh;
        constexpr bool c3ok = T == CLL_TYPE_Q4_0 || T == CLL_TYPE_Q4_K;
        const cudaError_t e = nt <= 8    ? fg_launch_one<T, 1, 2>(w, x, (int)t0, nt, y, ldy, sk, st)
                              : nt <= 16 ? fg_launch_one<T, 2, 2>(w, x, (int)t0, nt, y, ldy, sk, st)
                              : nt <= 32 ? (c3ok && fg_compact<T>() ? fg_launch_one<T, 4, 2, c3ok>(w, x, (int)t0, nt, y, ldy, sk, st)
                                                                 : fg_launch_one<T, 4, 2>(w, x, (int)t0, nt, y, ldy, sk, st))
                                         : fg_launch_one<T, 8, 3>(w, x, (int)t0, nt, y, ldy, sk, st);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

cll_cu_fgemm_fn cll_cu_sp_fused_gemm(uint32_t type) {
    switch (type) {
    case CLL_TYPE_Q4_0: return fg_launch<CLL_TYPE_Q4_0>;
    case CLL_TYPE_Q8_0: return fg_launch<CLL_TYPE_Q8_0>;
    case CLL_TYPE_Q4_K: return fg_launch<CLL_TYPE_Q4_K>;
    case CLL_TYPE_Q6_K: return fg_launch<CLL_TYPE_Q6_K>;
    default: return NULL;
    }
}
