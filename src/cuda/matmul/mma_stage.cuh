/* cuda/matmul/mma_stage: what the tensor-core tiles over the split layout share (the int8 rows of
 * gemv_mma.cu, the f16 fused GEMM of gemm_fused.cu): cp.async helpers, shared-memory loads, and per
 * format the bytes of a chunk (MMA_G = 8 consecutive 32-value groups, 256 values) of one weight row
 * as the tiles stage them: P bytes per row (a pitch chosen so that the 8 rows a warp's lanes read at
 * once hit distinct banks), NP 16-byte pieces copied from piece(row, ng, g0, j), j < NP.
 * Staged row layout (offsets within the P bytes):
 *   Q4_0  [8 x 16 quants][8 x 2 d]
 *   Q8_0  [8 x 32 quants][8 x 2 d]
 *   Q4_K  [8 x 16 quants][16: the super-block header d, dmin, scales[12]] (g0 % 8 == 0)
 *   Q6_K  [8 x 16 ql][8 x 8 qh'][8 x 2 scales][16: the window holding d at dpos(ng, g0)]
 * A piece moves by step(j) bytes from one chunk to the next, so a tile that walks its chunks in order
 * can keep a piece's chunk-0 address (start) and add c x step(j), instead of recomputing piece() per
 * chunk; WIN: the last piece (Q6_K's d window) is that address rounded down to 16 bytes.
 * Owns nothing. Rule: the pieces are the split layout's bytes (cuda/matmul/split.cuh), copied as
 * they are; the decoders that read them keep their own arithmetic. */
#ifndef CLL_CUDA_MATMUL_MMA_STAGE_CUH
#define CLL_CUDA_MATMUL_MMA_STAGE_CUH

#include <stdint.h>

#include "formats/formats.h"

#define MMA_ROWS 16 /* weight rows of one m16 tile */
#define MMA_G 8     /* groups per chunk */

/* 16 bytes global -> shared at a shared-space address (a kernel converts its base once) */
static __device__ __forceinline__ void mma_cp16s(uint32_t saddr, const void *g) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(saddr), "l"(g) : "memory");
}
/* the same from a generic pointer (a cvta per copy) */
static __device__ __forceinline__ void mma_cp16(void *smem, const void *g) {
    mma_cp16s((uint32_t)__cvta_generic_to_shared(smem), g);
}
static __device__ __forceinline__ void mma_commit(void) { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> static __device__ __forceinline__ void mma_wait(void) {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
static __device__ __forceinline__ uint32_t lds32(const uint8_t *p) { return *(const uint32_t *)p; }
static __device__ __forceinline__ uint32_t lds16(const uint8_t *p) { return *(const uint16_t *)p; }

/* A tile's results and its split-K tail (the int8 tile of gemv_mma.cu, the fused GEMM): this thread
 * holds rows ra and ra + 8 x columns 8t + 2q and 8t + 2q + 1 of tiles t < ntl (acc[t][0..3] in mma
 * C order), columns past nt and rows past `rows` dropped. ks == 1: straight to y (ldy floats a
 * column). Else to split blockIdx.y's partials in ws (nt x rows floats each); the block's ticket,
 * and the last of the ks blocks of row tile blockIdx.x (bm rows from row0) adds the partials in split
 * order into y (deterministic) and resets the ticket. Every thread of the block calls it; last: a
 * __shared__ int of the kernel. */
template <int NT>
static __device__ __forceinline__ void mma_tile_out(const float (&acc)[NT][4], int ntl, int64_t ra, int q, int nt,
                                                    int64_t rows, int64_t row0, int bm, float *y, int64_t ldy,
                                                    float *ws, int *tickets, int *last) {
    const int ks = (int)gridDim.y;
    const int64_t rb = ra + 8;
    float *dst = ks == 1 ? y : ws + (int64_t)blockIdx.y * nt * rows;
    const int64_t dstr = ks == 1 ? ldy : rows;
#pragma unroll
    for (int t = 0; t < NT; t++) {
        if (t >= ntl) break;
        const int ca = 8 * t + 2 * q, cb = ca + 1;
        if (ca < nt) {
            if (ra < rows) dst[ca * dstr + ra] = acc[t][0];
            if (rb < rows) dst[ca * dstr + rb] = acc[t][2];
        }
        if (cb < nt) {
            if (ra < rows) dst[cb * dstr + ra] = acc[t][1];
            if (rb < rows) dst[cb * dstr + rb] = acc[t][3];
        }
    }
    if (ks == 1) return;
    __threadfence(); /* this block's partials before its ticket */
    __syncthreads();
    if (threadIdx.x == 0) *last = atomicAdd(&tickets[blockIdx.x], 1) == ks - 1;
    __syncthreads();
    if (!*last) return;
    __threadfence(); /* every split's partials are out: add them in split order */
    for (int i = threadIdx.x; i < bm * nt; i += blockDim.x) {
        const int rr = i % bm, t = i / bm;
        const int64_t row = row0 + rr;
        if (row >= rows) continue;
        float v = 0.0f;
        for (int k = 0; k < ks; k++) v += __ldcg(ws + ((int64_t)k * nt + t) * rows + row);
        y[(int64_t)t * ldy + row] = v;
    }
    if (threadIdx.x == 0) tickets[blockIdx.x] = 0;
}

template <int T> struct CuPieces;

template <> struct CuPieces<CLL_TYPE_Q4_0> {
    static constexpr int P = 144, NP = 9; /* 8 x 16 quants | 8 d */
    static constexpr bool WIN = false;
    static __device__ __forceinline__ int dpos(int, int) { return 0; }
    static __device__ __forceinline__ const uint8_t *piece(const uint8_t *row, int ng, int g0, int j) {
        return j < 8 ? row + 16 * (g0 + j) : row + 16 * ng + 2 * g0;
    }
    static __device__ __forceinline__ uint32_t step(int j) { return j < 8 ? 128u : 16u; }
};

template <> struct CuPieces<CLL_TYPE_Q8_0> {
    static constexpr int P = 272, NP = 17; /* 8 x 32 quants | 8 d */
    static constexpr bool WIN = false;
    static __device__ __forceinline__ int dpos(int, int) { return 0; }
    static __device__ __forceinline__ const uint8_t *piece(const uint8_t *row, int ng, int g0, int j) {
        return j < 16 ? row + 32 * g0 + 16 * j : row + 32 * ng + 2 * g0;
    }
    static __device__ __forceinline__ uint32_t step(int j) { return j < 16 ? 256u : 16u; }
};

template <> struct CuPieces<CLL_TYPE_Q4_K> {
    static constexpr int P = 144, NP = 9; /* 8 x 16 quants | the super-block header d, dmin, scales[12] */
    static constexpr bool WIN = false;
    static __device__ __forceinline__ int dpos(int, int) { return 0; }
    static __device__ __forceinline__ const uint8_t *piece(const uint8_t *row, int ng, int g0, int j) {
        return j < 8 ? row + 16 * (g0 + j) : row + 16 * ng + 16 * (g0 >> 3);
    }
    static __device__ __forceinline__ uint32_t step(int j) { return j < 8 ? 128u : 16u; }
};

template <> struct CuPieces<CLL_TYPE_Q6_K> {
    /* 8 x 16 ql | 8 x 8 qh' | 8 x 2 scales | the 16-byte window holding the super-block's d; pitch
     * padded 224 -> 240 (240 mod 128 = 112: conflict-free rows) */
    static constexpr int P = 240, NP = 14;
    static constexpr bool WIN = true; /* piece 13: d_off rounded down to 16 (start: d_off itself) */
    static __device__ __forceinline__ int64_t d_off(int ng, int g0) { return 26 * (int64_t)ng + 2 * (g0 >> 3); }
    static __device__ __forceinline__ uint32_t step(int j) { return j < 8 ? 128u : j < 12 ? 64u : j < 13 ? 16u : 2u; }
    static __device__ __forceinline__ int dpos(int ng, int g0) { return (int)(d_off(ng, g0) & 15); }
    static __device__ __forceinline__ const uint8_t *piece(const uint8_t *row, int ng, int g0, int j) {
        return j < 8    ? row + 16 * (g0 + j)
               : j < 12 ? row + 16 * ng + 8 * g0 + 16 * (j - 8)
               : j < 13 ? row + 24 * ng + 2 * g0
                        : row + (d_off(ng, g0) & ~(int64_t)15);
    }
};

#endif
