/* cuda/matmul/gemv_mma: the few-token product on int8 tensor cores (rows gemv_<type>_split_mma):
 * W . x_t for 2..8 tokens of one dense weight (a batched decode step), each weight byte read once,
 * for Q4_0, Q8_0, Q4_K and Q6_K in the split layout.
 *
 * Why: the dp4a few-token row (gemv_few.cu) spends ~8 dp4a per 32 weights per token, so its cost
 * grows with the token count (8 tokens: 22% of the bandwidth on the 7B shapes, compute-bound).
 * Here one mma.sync.m16n8k32 (int8 in, int32 out) multiplies a 32-value group of 16 weight rows
 * by the same group of 8 tokens' q8_1 values: the per-token work is the float scaling of 4 results
 * per thread, and the weight decode (nibbles to int8) is shared by every token.
 *
 * Geometry: 256-thread blocks (8 warps), 16 weight rows per block (one m16 tile), K split over the
 * 8 warps in chunks of 8 groups (256 values): warp w takes chunks w, w+8, .. . A stage holds the 8
 * warps' next chunks: the weight bytes (quants and scales of 16 rows x 8 groups, 144-272 B per row)
 * and the tokens' q8_1 blocks of the same groups (288 B per token), copied by cp.async in 16-byte
 * pieces by every thread of the block; MMA_NS stages, the first weights before the PDL wait. Per
 * group a thread reads its A fragment words (rows r, r+8; bytes 4q..4q+3 of the group, q = lane % 4)
 * with conflict-free 32-bit LDS (row pitch P = 16 mod 128 bytes, or 112), decodes them to int8
 * (Q4_0: nibble - 8, Q6_K: (ql | qh << 4) - 32, Q8_0: as stored, Q4_K: the nibbles unsigned, with a
 * second mma against ones for the offset term m * sum x), reads its B words (token r's q8_1 words q
 * and 4+q) and the two column tokens' d from the stage, issues the mma (Q6_K: two m16n8k16, one per
 * 16-value scale) and accumulates result * d_w * d_x in float, as the n = 1 rows do per group.
 * Partials of the 8 warps meet in shared memory in a fixed order (deterministic). Tokens past nt
 * (a launch holds at most 8; more go to balanced further launches) are never staged nor written;
 * rows past the end read the last row. Needs cols % 256 == 0 (whole chunks) and 16-byte aligned
 * rows; other calls go to the dp4a few row.
 * Slower than the dp4a row at 2-4 tokens: the pick takes it from cll_cu_mma_min_tokens on (Q4_0 6,
 * Q4_K 4; cuda/matmul/pick.cu has the H200 numbers). Its group sums meet in another order than the
 * one-token rows', so a batched step is not bit-identical to each sequence alone (golden
 * test_batched_parity holds it to the reassociation bar).
 * Owns nothing. Rule: exact int32 group dots times float scales in the n = 1 rows' order of
 * operations per group, so the gate holds it to the same bar. */
#include <stdio.h>

#include "cuda/matmul/kernels.cuh"
#include "cuda/matmul/split.cuh"
#include "cuda/pick.h"
#include "cuda/matmul/mma_stage.cuh"

#define MMA_WARPS 8
#define MMA_NS 3 /* pipeline stages of 8 chunks (one per warp) */

/* c = A (16x32 int8, rows g and g+8 of this thread in a0/a2 and a1/a3) . B (32x8 int8) */
template <bool U>
static __device__ __forceinline__ void mma_k32(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                               uint32_t b0, uint32_t b1) {
    if (U)
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%10,%11,%12,%13};"
                     : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(0), "r"(0), "r"(0), "r"(0));
    else
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%10,%11,%12,%13};"
                     : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(0), "r"(0), "r"(0), "r"(0));
}
static __device__ __forceinline__ void mma_k16(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t b0) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
                 : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
                 : "r"(a0), "r"(a1), "r"(b0), "r"(0), "r"(0), "r"(0), "r"(0));
}

/* a tile's B side for one group: token (lane / 4)'s q8_1 words q and 4 + q, and the d of the two
 * tokens whose results this thread holds (columns 2q, 2q + 1) */
struct MmaX {
    uint32_t b0, b1;
    float d0, d1;
};

/* an int32 |v| < 2^22 to float, exactly: one integer add and one float add (both full rate) instead
 * of an I2F (a quarter-rate conversion on sm_90, which bounded the tile at 64 tokens: one per mma
 * result). 0x4B400000 is 1.5 * 2^23, where the float's last mantissa bit is worth 1. Every mma
 * result here fits: Q8_0 32 x 128 x 127, Q4_K 63 x 32 x 15 x 127 = 3.84M after its scale, Q6_K half
 * sums 16 x 32 x 127 before theirs. */
static __device__ __forceinline__ float mma_i2f(int v) { return __int_as_float(v + 0x4B400000) - 12582912.0f; }

/* acc += (rows r, r+8) x (columns 2q, 2q+1) of one k32 mma, each times d_w of its row and d_x of its
 * column (the Q4_0 and Q8_0 groups: int8 weights with one scale per row and group) */
template <int NTT>
static __device__ __forceinline__ void mma_acc_k32(float (&acc)[NTT][4], uint32_t a0, uint32_t a1, uint32_t a2,
                                                   uint32_t a3, float dw0, float dw1, const MmaX (&x)[NTT], int ntl) {
#pragma unroll
    for (int t = 0; t < NTT; t++) {
        if (NTT > 1 && t >= ntl) break;
        int c[4];
        mma_k32<false>(c, a0, a1, a2, a3, x[t].b0, x[t].b1);
        acc[t][0] += (dw0 * x[t].d0) * mma_i2f(c[0]);
        acc[t][1] += (dw0 * x[t].d1) * mma_i2f(c[1]);
        acc[t][2] += (dw1 * x[t].d0) * mma_i2f(c[2]);
        acc[t][3] += (dw1 * x[t].d1) * mma_i2f(c[3]);
    }
}

/* ---- per format: a group's product over the staged chunk ----
 * The chunk's bytes per row (P, NP pieces from piece()): CuPieces, cuda/matmul/mma_stage.cuh.
 * group(s0, s1, gi, q, x, acc): rows r (s0 = its staged chunk) and r + 8 (s1), group gi of the chunk,
 * every tile: acc[t][0..3] += (rows r, r+8) x (columns 2q, 2q+1). */
template <int T> struct CuMma;

template <> struct CuMma<CLL_TYPE_Q4_0> : CuPieces<CLL_TYPE_Q4_0> {
    template <int NTT>
    static __device__ __forceinline__ void group(const uint8_t *s0, const uint8_t *s1, int gi, int q,
                                                 const MmaX (&x)[NTT], float (&acc)[NTT][4], int, int ntl) {
        const uint32_t w0 = lds32(s0 + 16 * gi + 4 * q), w1 = lds32(s1 + 16 * gi + 4 * q);
        const uint32_t a0 = cu_vsub4(w0 & 0x0F0F0F0Fu, 0x08080808u), a1 = cu_vsub4(w1 & 0x0F0F0F0Fu, 0x08080808u);
        const uint32_t a2 = cu_vsub4((w0 >> 4) & 0x0F0F0F0Fu, 0x08080808u),
                       a3 = cu_vsub4((w1 >> 4) & 0x0F0F0F0Fu, 0x08080808u);
        const float dw0 = cll_h2f((uint16_t)lds16(s0 + 128 + 2 * gi)), dw1 = cll_h2f((uint16_t)lds16(s1 + 128 + 2 * gi));
        mma_acc_k32<NTT>(acc, a0, a1, a2, a3, dw0, dw1, x, ntl);
    }
};

template <> struct CuMma<CLL_TYPE_Q8_0> : CuPieces<CLL_TYPE_Q8_0> {
    template <int NTT>
    static __device__ __forceinline__ void group(const uint8_t *s0, const uint8_t *s1, int gi, int q,
                                                 const MmaX (&x)[NTT], float (&acc)[NTT][4], int, int ntl) {
        const uint32_t a0 = lds32(s0 + 32 * gi + 4 * q), a1 = lds32(s1 + 32 * gi + 4 * q);
        const uint32_t a2 = lds32(s0 + 32 * gi + 16 + 4 * q), a3 = lds32(s1 + 32 * gi + 16 + 4 * q);
        const float dw0 = cll_h2f((uint16_t)lds16(s0 + 256 + 2 * gi)), dw1 = cll_h2f((uint16_t)lds16(s1 + 256 + 2 * gi));
        mma_acc_k32<NTT>(acc, a0, a1, a2, a3, dw0, dw1, x, ntl);
    }
};

template <> struct CuMma<CLL_TYPE_Q4_K> : CuPieces<CLL_TYPE_Q4_K> {
    template <int NTT>
    static __device__ __forceinline__ void group(const uint8_t *s0, const uint8_t *s1, int gi, int q,
                                                 const MmaX (&x)[NTT], float (&acc)[NTT][4], int, int ntl) {
        const uint32_t w0 = lds32(s0 + 16 * gi + 4 * q), w1 = lds32(s1 + 16 * gi + 4 * q);
        const uint32_t a0 = w0 & 0x0F0F0F0Fu, a1 = w1 & 0x0F0F0F0Fu;
        const uint32_t a2 = (w0 >> 4) & 0x0F0F0F0Fu, a3 = (w1 >> 4) & 0x0F0F0F0Fu;
        int sc0, m0, sc1, m1;
        CuSp<CLL_TYPE_Q4_K>::sm(lds32(s0 + 132), lds32(s0 + 136), lds32(s0 + 140), gi, &sc0, &m0);
        CuSp<CLL_TYPE_Q4_K>::sm(lds32(s1 + 132), lds32(s1 + 136), lds32(s1 + 140), gi, &sc1, &m1);
        const uint32_t h0 = lds32(s0 + 128), h1 = lds32(s1 + 128);
        const float d0 = cll_h2f((uint16_t)(h0 & 0xFFFF)), dm0 = cll_h2f((uint16_t)(h0 >> 16));
        const float d1 = cll_h2f((uint16_t)(h1 & 0xFFFF)), dm1 = cll_h2f((uint16_t)(h1 >> 16));
#pragma unroll
        for (int t = 0; t < NTT; t++) {
            if (NTT > 1 && t >= ntl) break;
            int c[4], s[4]; /* the nibble dots, and sum x per column (a = ones: rows r and r + 8 alike) */
            mma_k32<true>(c, a0, a1, a2, a3, x[t].b0, x[t].b1);
            mma_k32<true>(s, 0x01010101u, 0x01010101u, 0x01010101u, 0x01010101u, x[t].b0, x[t].b1);
            acc[t][0] += x[t].d0 * (d0 * mma_i2f(sc0 * c[0]) - dm0 * mma_i2f(m0 * s[0]));
            acc[t][1] += x[t].d1 * (d0 * mma_i2f(sc0 * c[1]) - dm0 * mma_i2f(m0 * s[1]));
            acc[t][2] += x[t].d0 * (d1 * mma_i2f(sc1 * c[2]) - dm1 * mma_i2f(m1 * s[0]));
            acc[t][3] += x[t].d1 * (d1 * mma_i2f(sc1 * c[3]) - dm1 * mma_i2f(m1 * s[1]));
        }
    }
};

template <> struct CuMma<CLL_TYPE_Q6_K> : CuPieces<CLL_TYPE_Q6_K> {
    template <int NTT>
    static __device__ __forceinline__ void group(const uint8_t *s0, const uint8_t *s1, int gi, int q,
                                                 const MmaX (&x)[NTT], float (&acc)[NTT][4], int dpos, int ntl) {
        const uint32_t w0 = lds32(s0 + 16 * gi + 4 * q), w1 = lds32(s1 + 16 * gi + 4 * q);
        const uint32_t hx0 = lds32(s0 + 128 + 8 * gi), hy0 = lds32(s0 + 132 + 8 * gi);
        const uint32_t hx1 = lds32(s1 + 128 + 8 * gi), hy1 = lds32(s1 + 132 + 8 * gi);
        const uint32_t lo0 = cu_vsub4((w0 & 0x0F0F0F0Fu) | (((hx0 >> (2 * q)) & 0x03030303u) << 4), 0x20202020u);
        const uint32_t lo1 = cu_vsub4((w1 & 0x0F0F0F0Fu) | (((hx1 >> (2 * q)) & 0x03030303u) << 4), 0x20202020u);
        const uint32_t hi0 = cu_vsub4(((w0 >> 4) & 0x0F0F0F0Fu) | (((hy0 >> (2 * q)) & 0x03030303u) << 4), 0x20202020u);
        const uint32_t hi1 = cu_vsub4(((w1 >> 4) & 0x0F0F0F0Fu) | (((hy1 >> (2 * q)) & 0x03030303u) << 4), 0x20202020u);
        const uint32_t scw0 = lds16(s0 + 192 + 2 * gi), scw1 = lds16(s1 + 192 + 2 * gi);
        /* the 16-value scales as floats: sa * cl + sb * ch is an integer < 2^24 either way (exact) */
        const float sa0 = (float)(int8_t)(scw0 & 0xFF), sb0 = (float)(int8_t)(scw0 >> 8);
        const float sa1 = (float)(int8_t)(scw1 & 0xFF), sb1 = (float)(int8_t)(scw1 >> 8);
        const float d0 = cll_h2f((uint16_t)lds16(s0 + 208 + dpos)), d1 = cll_h2f((uint16_t)lds16(s1 + 208 + dpos));
#pragma unroll
        for (int t = 0; t < NTT; t++) {
            if (NTT > 1 && t >= ntl) break;
            int cl[4], ch[4];
            mma_k16(cl, lo0, lo1, x[t].b0);
            mma_k16(ch, hi0, hi1, x[t].b1);
            acc[t][0] += (x[t].d0 * d0) * fmaf(sa0, mma_i2f(cl[0]), sb0 * mma_i2f(ch[0]));
            acc[t][1] += (x[t].d1 * d0) * fmaf(sa0, mma_i2f(cl[1]), sb0 * mma_i2f(ch[1]));
            acc[t][2] += (x[t].d0 * d1) * fmaf(sa1, mma_i2f(cl[2]), sb1 * mma_i2f(ch[2]));
            acc[t][3] += (x[t].d1 * d1) * fmaf(sa1, mma_i2f(cl[3]), sb1 * mma_i2f(ch[3]));
        }
    }
};

/* the weights of stage c into buffer buf: chunks 8c..8c+7 (one per warp) of the block's 16 rows,
 * NP pieces of 16 B per row and chunk */
template <class M>
static __device__ __forceinline__ void mma_stage_w(uint8_t *buf, const uint8_t *W, int64_t row0, int64_t rows, int64_t rs,
                                                   int ng, int nchunks, int c) {
    for (int i = threadIdx.x; i < MMA_ROWS * MMA_WARPS * M::NP; i += MMA_WARPS * 32) {
        const int j = i % M::NP, rc = i / M::NP, r = rc % MMA_ROWS, w = rc / MMA_ROWS;
        const int chunk = MMA_WARPS * c + w;
        if (chunk >= nchunks) continue;
        const int64_t row = row0 + r < rows ? row0 + r : rows - 1;
        mma_cp16(buf + (w * MMA_ROWS + r) * M::P + 16 * j, M::piece(W + row * rs, ng, MMA_G * chunk, j));
    }
}
/* ... and the same chunks of the nt tokens' q8_1 rows after them (8 blocks = 288 B = 18 pieces per
 * token and chunk: 16-byte aligned, since cols % 256 == 0 makes every row a multiple of 288 B) */
static __device__ __forceinline__ void mma_stage_x(uint8_t *bx, int nchunks, int c, const cll_block_q8_1 *xq,
                                                   int64_t xq_stride, int nt) {
    for (int i = threadIdx.x; i < MMA_WARPS * nt * 18; i += MMA_WARPS * 32) {
        const int j = i % 18, wt = i / 18, t = wt % nt, w = wt / nt;
        const int chunk = MMA_WARPS * c + w;
        if (chunk >= nchunks) continue;
        mma_cp16(bx + (w * 8 + t) * 288 + 16 * j, (const uint8_t *)(xq + t * xq_stride + MMA_G * chunk) + 16 * j);
    }
}

template <class M>
__global__ void __launch_bounds__(MMA_WARPS * 32)
k_gemv_mma(const uint8_t *__restrict__ W, int64_t rows, int ng, int64_t rs, const cll_block_q8_1 *__restrict__ xq,
           int64_t xq_stride, float *__restrict__ y, int64_t y_stride, int nt, int early, const void *pfn, size_t pfb) {
    /* MMA_NS stages x (8 warps x 16 rows x P of weights | 8 warps x 8 tokens x 288 B of q8_1) */
    extern __shared__ __align__(16) uint8_t sm[];
    __shared__ float red[MMA_WARPS][MMA_ROWS][8];
    if (early) cll_pdl_trigger();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r = lane >> 2, q = lane & 3;
    const int64_t row0 = (int64_t)blockIdx.x * MMA_ROWS;
    const int nchunks = ng / MMA_G, nstages = (nchunks + MMA_WARPS - 1) / MMA_WARPS;
    const size_t wbytes = (size_t)MMA_WARPS * MMA_ROWS * M::P, stage_bytes = wbytes + (size_t)MMA_WARPS * 8 * 288;
    /* the first stages' weights depend on nothing earlier: they go out before the wait; each stage's
     * commit group then closes with its activations (groups complete in order, so waiting for
     * group c covers both halves of stage c) */
#pragma unroll
    for (int c = 0; c < MMA_NS - 1; c++)
        if (c < nstages) mma_stage_w<M>(sm + c * stage_bytes, W, row0, rows, rs, ng, nchunks, c);
    cll_pdl_wait(); /* the activations' producer */
#pragma unroll
    for (int c = 0; c < MMA_NS - 1; c++) {
        if (c < nstages) mma_stage_x(sm + c * stage_bytes + wbytes, nchunks, c, xq, xq_stride, nt);
        mma_commit();
    }
    float acc[1][4] = {{0.0f, 0.0f, 0.0f, 0.0f}};
    for (int c = 0; c < nstages; c++) {
        mma_wait<MMA_NS - 2>();
        __syncthreads(); /* stage c landed for every thread; stage c-1's buffer is free */
        if (c + MMA_NS - 1 < nstages) {
            uint8_t *nb = sm + ((c + MMA_NS - 1) % MMA_NS) * stage_bytes;
            mma_stage_w<M>(nb, W, row0, rows, rs, ng, nchunks, c + MMA_NS - 1);
            mma_stage_x(nb + wbytes, nchunks, c + MMA_NS - 1, xq, xq_stride, nt);
        }
        mma_commit();
        const int chunk = MMA_WARPS * c + warp;
        if (chunk < nchunks) {
            const uint8_t *st = sm + (c % MMA_NS) * stage_bytes;
            const uint8_t *s0 = st + (warp * MMA_ROWS + r) * M::P, *s1 = s0 + 8 * M::P;
            /* token r's words q and 4 + q, the d of tokens 2q and 2q + 1 (past nt: never written) */
            const uint8_t *xr = st + wbytes + (warp * 8 + r) * 288 + 4 + 4 * q;
            const uint8_t *xd0 = st + wbytes + (warp * 8 + 2 * q) * 288, *xd1 = xd0 + 288;
            const int dp = M::dpos(ng, MMA_G * chunk);
#pragma unroll 4
            for (int gi = 0; gi < MMA_G; gi++) {
                MmaX x[1];
                x[0].b0 = lds32(xr + 36 * gi);
                x[0].b1 = lds32(xr + 36 * gi + 16);
                x[0].d0 = cll_h2f((uint16_t)lds16(xd0 + 36 * gi));
                x[0].d1 = cll_h2f((uint16_t)lds16(xd1 + 36 * gi));
                M::template group<1>(s0, s1, gi, q, x, acc, dp, 1);
            }
        }
    }
    mma_wait<0>();
    /* the 8 warps' K slices: thread holds rows r, r+8 x tokens 2q, 2q+1 */
    red[warp][r][2 * q] = acc[0][0];
    red[warp][r][2 * q + 1] = acc[0][1];
    red[warp][r + 8][2 * q] = acc[0][2];
    red[warp][r + 8][2 * q + 1] = acc[0][3];
    __syncthreads();
    for (int i = threadIdx.x; i < MMA_ROWS * nt; i += MMA_WARPS * 32) {
        const int rr = i % MMA_ROWS, t = i / MMA_ROWS;
        if (row0 + rr < rows) {
            float v = 0.0f;
#pragma unroll
            for (int w = 0; w < MMA_WARPS; w++) v += red[w][rr][t];
            y[(int64_t)t * y_stride + row0 + rr] = v;
        }
    }
    cll_l2_prefetch_next(pfn, pfb);
}

template <class M> static size_t mma_smem(void) {
    return (size_t)MMA_NS * ((size_t)MMA_WARPS * MMA_ROWS * M::P + (size_t)MMA_WARPS * 8 * 288);
}

template <class M>
static cudaError_t mma_launch_one(const cll_cu_weight *w, const cll_cu_gemv_args *a, int t0, int nt, cudaStream_t st) {
    static int opened[64]; /* per device */
    const size_t smem = mma_smem<M>();
    CLL_CU_RET(cll_cu_open_smem(opened, k_gemv_mma<M>, (int)smem));
    const bool last = t0 + nt >= a->nb;
    return cll_cu_launch(k_gemv_mma<M>, dim3((unsigned)cll_cdiv(w->rows, MMA_ROWS)), dim3(MMA_WARPS * 32), smem, st, w->d,
                         w->rows, (int)(w->cols / 32), (int64_t)w->row_stride,
                         (const cll_block_q8_1 *)a->xq + (int64_t)t0 * a->xq_stride, a->xq_stride,
                         a->y + (int64_t)t0 * a->y_stride, a->y_stride, nt, cll_cu_gemv_early_trigger(),
                         last ? a->pf_next : (const void *)NULL, last ? a->pf_bytes : (size_t)0);
}

/* ---- the tile of 9..64 tokens (k_mma_tile) ----
 * One block: 8 warps x 16 rows = 128 weight rows x up to 64 tokens (8 tiles of 8), every warp over
 * all of K for its own 16 rows, so a stage is one chunk (256 values) of the 128 rows' weights and
 * of the nt tokens' q8_1 blocks, shared by the 8 warps (the few-token kernel's K split would stage
 * the tokens 8 times). A warp decodes its A fragments once per group and issues one mma per tile
 * of 8 tokens (Q4_K: two, Q6_K: two k16): the weight decode is amortized over up to 64 tokens.
 * Token records are padded to MT_XP bytes (304 mod 128 = 48: the B reads of a warp hit 32 distinct
 * banks). When the row tiles do not fill the machine (the o and down products of a 7B: 32 tiles),
 * K is split over ks blocks (gridDim.y) of contiguous chunk ranges: each writes its partial sums
 * to the split-K scratch, and the last to finish (an atomic ticket per row tile, reset by that
 * block) adds the ks partials in a fixed order (deterministic). */
#define MT_WARPS 8
#define MT_BM (MT_WARPS * MMA_ROWS) /* 128 rows per block */
#define MT_TILES 8                  /* tokens per launch: 8 tiles of 8 */
#define MT_NS 3                     /* pipeline stages of one chunk */
#define MT_XP 304                   /* bytes per token and chunk: 288 of q8_1, padded */

template <class M>
static __device__ __forceinline__ void mt_stage(uint8_t *buf, const uint8_t *W, int64_t row0, int64_t rows, int64_t rs,
                                                int ng, int chunk, const cll_block_q8_1 *xq, int64_t xq_stride, int nt,
                                                bool want_w, bool want_x) {
    if (want_w)
        for (int i = threadIdx.x; i < MT_BM * M::NP; i += MT_WARPS * 32) {
            const int j = i % M::NP, r = i / M::NP;
            const int64_t row = row0 + r < rows ? row0 + r : rows - 1;
            mma_cp16(buf + r * M::P + 16 * j, M::piece(W + row * rs, ng, MMA_G * chunk, j));
        }
    if (want_x) {
        uint8_t *bx = buf + MT_BM * M::P;
        for (int i = threadIdx.x; i < nt * 18; i += MT_WARPS * 32) {
            const int j = i % 18, t = i / 18;
            mma_cp16(bx + t * MT_XP + 16 * j, (const uint8_t *)(xq + t * xq_stride + MMA_G * chunk) + 16 * j);
        }
    }
}

template <class M>
__global__ void __launch_bounds__(MT_WARPS * 32, 1)
k_mma_tile(const uint8_t *__restrict__ W, int64_t rows, int ng, int64_t rs, const cll_block_q8_1 *__restrict__ xq,
           int64_t xq_stride, float *__restrict__ y, int64_t y_stride, int nt, float *ws, int *tickets, int early,
           const void *pfn, size_t pfb) {
    /* MT_NS stages x (128 rows x P of weights | ntl x 8 tokens x MT_XP of q8_1) */
    extern __shared__ __align__(16) uint8_t sm[];
    __shared__ int last;
    if (early) cll_pdl_trigger();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r = lane >> 2, q = lane & 3;
    const int64_t row0 = (int64_t)blockIdx.x * MT_BM;
    const int ks = (int)gridDim.y, nchunks = ng / MMA_G;
    const int c0 = (int)((int64_t)blockIdx.y * nchunks / ks), n = (int)((int64_t)(blockIdx.y + 1) * nchunks / ks) - c0;
    const int ntl = (nt + 7) >> 3;
    const size_t wbytes = (size_t)MT_BM * M::P, stage_bytes = wbytes + (size_t)ntl * 8 * MT_XP;
#pragma unroll
    for (int c = 0; c < MT_NS - 1; c++)
        if (c < n) mt_stage<M>(sm + c * stage_bytes, W, row0, rows, rs, ng, c0 + c, xq, xq_stride, nt, true, false);
    cll_pdl_wait(); /* the activations' producer */
#pragma unroll
    for (int c = 0; c < MT_NS - 1; c++) {
        if (c < n) mt_stage<M>(sm + c * stage_bytes, W, row0, rows, rs, ng, c0 + c, xq, xq_stride, nt, false, true);
        mma_commit();
    }
    float acc[MT_TILES][4];
#pragma unroll
    for (int t = 0; t < MT_TILES; t++) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.0f;
    for (int c = 0; c < n; c++) {
        mma_wait<MT_NS - 2>();
        __syncthreads(); /* stage c landed for every thread; stage c-1's buffer is free */
        if (c + MT_NS - 1 < n)
            mt_stage<M>(sm + ((c + MT_NS - 1) % MT_NS) * stage_bytes, W, row0, rows, rs, ng, c0 + c + MT_NS - 1, xq,
                        xq_stride, nt, true, true);
        mma_commit();
        const uint8_t *st = sm + (c % MT_NS) * stage_bytes;
        const uint8_t *s0 = st + (warp * MMA_ROWS + r) * M::P, *s1 = s0 + 8 * M::P;
        const uint8_t *xb = st + wbytes;
        const int dp = M::dpos(ng, MMA_G * (c0 + c));
#pragma unroll 1
        for (int gi = 0; gi < MMA_G; gi++) {
            /* per tile t: token 8t + r's words q and 4 + q, the d of tokens 8t + 2q and 8t + 2q + 1 (tokens past
             * nt read unstaged bytes: their columns are never written) */
            MmaX x[MT_TILES];
#pragma unroll
            for (int t = 0; t < MT_TILES; t++) {
                if (t >= ntl) break;
                const uint8_t *xr = xb + (8 * t + r) * MT_XP + 36 * gi + 4 + 4 * q;
                const uint8_t *xd = xb + (8 * t + 2 * q) * MT_XP + 36 * gi;
                x[t].b0 = lds32(xr);
                x[t].b1 = lds32(xr + 16);
                x[t].d0 = cll_h2f((uint16_t)lds16(xd));
                x[t].d1 = cll_h2f((uint16_t)lds16(xd + MT_XP));
            }
            M::template group<MT_TILES>(s0, s1, gi, q, x, acc, dp, ntl);
        }
    }
    mma_wait<0>();
    mma_tile_out<MT_TILES>(acc, ntl, row0 + warp * MMA_ROWS + r, q, nt, rows, row0, MT_BM, y, y_stride, ws, tickets, &last);
    cll_l2_prefetch_next(pfn, pfb);
}

template <class M> static size_t mt_smem(int nt) {
    return (size_t)MT_NS * ((size_t)MT_BM * M::P + (size_t)((nt + 7) / 8) * 8 * MT_XP);
}

template <class M>
static cudaError_t mt_launch_one(const cll_cu_weight *w, const cll_cu_gemv_args *a, int t0, int nt, cudaStream_t st) {
    static int opened[64]; /* per device, to the most any launch stages */
    const size_t smem = mt_smem<M>(nt), smax = mt_smem<M>(64);
    CLL_CU_RET(cll_cu_open_smem(opened, k_mma_tile<M>, (int)smax));
    static int bps_of[MT_TILES + 1]; /* resident blocks per SM by tile count (smem), asked once */
    const int ntl = (nt + 7) / 8;
    if (!bps_of[ntl])
        CLL_CU_RET(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps_of[ntl], k_mma_tile<M>, MT_WARPS * 32, smem));
    const int bps = bps_of[ntl];
    if (bps < 1) return cudaErrorInvalidConfiguration;
    const int64_t tiles = cll_cdiv(w->rows, MT_BM);
    const int ks = cll_cu_mma_tile_ks(tiles, w->cols / 256, (int64_t)cll_cu_sm_count() * bps, nt, w->rows,
                                      a->sk.ws ? a->sk.ws_floats : 0, a->sk.tickets ? a->sk.n_tickets : 0);
    const bool last = t0 + nt >= a->nb;
    return cll_cu_launch(k_mma_tile<M>, dim3((unsigned)tiles, (unsigned)ks), dim3(MT_WARPS * 32), smem, st, w->d,
                         w->rows, (int)(w->cols / 32), (int64_t)w->row_stride,
                         (const cll_block_q8_1 *)a->xq + (int64_t)t0 * a->xq_stride, a->xq_stride,
                         a->y + (int64_t)t0 * a->y_stride, a->y_stride, nt, a->sk.ws, a->sk.tickets,
                         cll_cu_gemv_early_trigger(), last ? a->pf_next : (const void *)NULL,
                         last ? a->pf_bytes : (size_t)0);
}

template <int T>
static cudaError_t mma_gemv_launch(const cll_cu_weight *w, const cll_cu_gemv_args *a, cudaStream_t st) {
    typedef CuMma<T> M;
    if (!a->xq || a->nb <= 0 || a->nb > 65535 || w->layout != CLL_CU_LAYOUT_SPLIT) return cudaErrorInvalidValue;
    if (a->nb == 1 || a->mat_ids || a->epi.on || w->cols % 256 || ((uintptr_t)w->d & 15) || w->row_stride % 16 ||
        ((uintptr_t)a->xq & 15) || (a->xq_stride * (int64_t)sizeof(cll_block_q8_1)) % 16) {
        /* independent products, or a shape without whole chunks or aligned rows: the dp4a few
         * row (it passes what is not a few-token product on to the r4_pt row) */
        const cll_cu_gemv_fn f = cll_cu_sp_few_gemv((uint32_t)T);
        return f ? f(w, a, st) : cudaErrorInvalidValue;
    }
    /* up to 8 tokens: the K-split few-token kernel; more: tiles of up to 64 tokens, launches balanced
     * (65 -> 33 + 32) */
    const int cap = a->nb <= 8 ? 8 : 8 * MT_TILES;
    const int launches = (a->nb + cap - 1) / cap, each = (a->nb + launches - 1) / launches;
    for (int t0 = 0; t0 < a->nb; t0 += each) {
        const int nt = a->nb - t0 < each ? a->nb - t0 : each;
        CLL_CU_RET(a->nb <= 8 ? mma_launch_one<M>(w, a, t0, nt, st) : mt_launch_one<M>(w, a, t0, nt, st));
    }
    return cudaSuccess;
}

cll_cu_gemv_fn cll_cu_sp_mma_gemv(uint32_t type) {
    switch (type) {
    case CLL_TYPE_Q4_0: return mma_gemv_launch<CLL_TYPE_Q4_0>;
    case CLL_TYPE_Q8_0: return mma_gemv_launch<CLL_TYPE_Q8_0>;
    case CLL_TYPE_Q4_K: return mma_gemv_launch<CLL_TYPE_Q4_K>;
    case CLL_TYPE_Q6_K: return mma_gemv_launch<CLL_TYPE_Q6_K>;
    default: return NULL;
    }
}
