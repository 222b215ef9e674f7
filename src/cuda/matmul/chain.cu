/* cuda/matmul/chain: a measurement, not a driver path (cll_cuda_bench_chain_us, cuda_kbench -P).
 * The question it answers: how fast would a decode step's products run as ONE persistent kernel
 * instead of a graph of per-product kernels? A step's products are each a few microseconds long;
 * between them the graph runs latency-bound small kernels (norms, the activation, attention) and
 * every product pays its own ramp and tail, while the weight stream (the only thing the roofline
 * counts) waits. Here one block an SM runs every layer's q|k|v, o, gate|up and down products of a
 * llama-2-7B-shaped stack (Q4_0, the split layout, random weights): a producer warp streams the
 * block's weight tiles into a ring of shared-memory stages with bulk copies (the TMA engine) and
 * never waits for activations, so the stream runs on across the phase boundaries; eight consumer
 * warps dot each tile against the q8_1 activation row staged in shared memory (the driver's own
 * CuSp<Q4_0>::dot), and the phases meet at grid barriers (a counter in global memory). The RMS
 * norms are redone by every block from per-block sums of squares (no norm kernel, no extra
 * barrier); the activation (SiLU(gate) x up, quantized to q8_1) is spread over the blocks, one
 * barrier. Attention is not modelled: its place is a barrier and a fixed q8_1 row as o's input.
 * The result is checked against a plain kernel-per-op reference on the same buffers (two layers;
 * the sums are taken in other orders, so within a tolerance), then timed over `layers` layers;
 * ChainArgs.flags times its parts apart. What it found (H100: the design loses to the graph by ~40%)
 * is in docs/cuda.md, "A persistent decode chain, probed". Owns nothing past a call. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include "cuda/matmul/split.cuh"

extern "C" {
#include "cuda/gate.h"
}

namespace {

typedef CuSp<CLL_TYPE_Q4_0> ChS;
constexpr int CH_CW = 8;                   /* consumer warps */
constexpr int CH_NT = 32 * (CH_CW + 1);    /* + the producer warp (the last) */
constexpr int CH_MAXSTG = 12;
constexpr int CH_HIDDEN = 4096, CH_FFN = 11008; /* llama-2-7B */
constexpr long long CH_SPIN = 1ll << 33;   /* cycles (~4 s) before a wait traps instead of hanging */

struct ChainArgs {
    const uint8_t *w[4]; /* q|k|v, o, gate|up, down: layer 0's matrix; layer l at + l * mat */
    int64_t mat[4], rs[4];
    int rows[4], ng[4], tr[4];
    int layers, nstg; /* the widths are CH_HIDDEN / CH_FFN */
    /* the probe's parts alone: 1 the consumers take and release every tile without its dots (the stream and the
     * barriers), 2 no grid barriers (the stream and the dots, the results wrong), 4 no products at all (the
     * barriers, norms and activation alone) */
    int flags;
    int row_copies; /* 1: a tile's rows as one bulk copy each, 0: the tile as one */
    int lsu; /* 1: the producer warp's 32 lanes copy the tiles with cp.async (16 B each), not the TMA engine */
    int l2ahead; /* > 0: the producer asks L2 for the tile that many tiles past the one it copies */
    uint32_t stg;
    float *resid, *y_qkv, *y_gu, *partial;
    int *xq_attn, *xq_act; /* SP_XW-word q8_1 records */
    const float *nw;
    unsigned *ctr;
};

__device__ __forceinline__ void ch_bar() { asm volatile("bar.sync 1, %0;" ::"n"(32 * CH_CW) : "memory"); }

__device__ __forceinline__ void ch_mbar_wait(uint64_t *b, uint32_t parity) {
    const long long t0 = clock64();
    uint32_t ok = 0;
    while (!ok) {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(ok)
                     : "r"(cll_smem_u32(b)), "r"(parity)
                     : "memory");
        if (!ok && clock64() - t0 > CH_SPIN) __trap();
    }
}

__device__ __forceinline__ void ch_mbar_arrive(uint64_t *b) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(cll_smem_u32(b)) : "memory");
}

/* every consumer thread of every block: the writes before it are seen by every block after it */
__device__ __forceinline__ void ch_grid_sync(unsigned *ctr, unsigned &gen, int flags) {
    ch_bar();
    if (flags & 2) return;
    if (threadIdx.x == 0) {
        gen += gridDim.x;
        /* release the block's writes with the arrival; poll relaxed (cheap reads of one L2 line), then one
         * acquire fence orders the reads after it */
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(ctr) : "memory");
        const long long t0 = clock64();
        while (cll_ld_relaxed_u32(ctr) < gen)
            if (clock64() - t0 > CH_SPIN) __trap();
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
    }
    ch_bar();
}

__device__ __forceinline__ int ch_warp_isum(int v) {
#pragma unroll
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* one warp: lane's value of a 32-value group -> the group's q8_1 record (SP_XW words at dst:
 * d|s, qs[8], the sums of the first and last 16 quants), as quantize_q8_1 rounds */
__device__ __forceinline__ void ch_quant_group(float v, int lane, int *dst) {
    const float amax = cll_warp_max(fabsf(v));
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    const int q = (int)roundf(v * id);
    const int all = ch_warp_isum(q), lo = ch_warp_isum(lane < 16 ? q : 0);
    ((int8_t *)(dst + 1))[lane] = (int8_t)q;
    if (lane == 0) {
        const __half2 ds = __floats2half2_rn(d, d * (float)all);
        dst[0] = *(const int *)&ds;
        dst[9] = lo;
        dst[10] = all - lo;
    }
}

/* one thread, a whole 32-value group -> its q8_1 record at dst (ch_quant_group's bits: the same max,
 * scale, rounding and integer sums), no shuffles: a block's 128 or 344 groups in one pass */
__device__ __forceinline__ void ch_quant_thread(const float (&v)[32], int *dst) {
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(v[i]));
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    int lo = 0, hi = 0;
#pragma unroll
    for (int w = 0; w < 8; w++) {
        uint32_t word = 0;
#pragma unroll
        for (int b = 0; b < 4; b++) {
            const int q = (int)roundf(v[4 * w + b] * id);
            if (w < 4) lo += q;
            else hi += q;
            word |= (uint32_t)(q & 0xff) << (8 * b);
        }
        dst[1 + w] = (int)word;
    }
    const __half2 ds = __floats2half2_rn(d, d * (float)(lo + hi));
    dst[0] = *(const int *)&ds;
    dst[9] = lo;
    dst[10] = hi;
}

/* row r (rs bytes at row, in shared or global memory) against x: groups g0, g0 + step, .. */
__device__ __forceinline__ float ch_row_dot(const uint8_t *row, int ng, const int *x, int g0, int step) {
    float acc = 0.0f;
    for (int g = g0; g < ng; g += step) {
        const ChS::Wv w = ChS::load<1>(row, ng, g);
        const CuX xv = sp_ldx_sm(x + g * SP_XW);
        acc += ChS::dot(w, g, xv);
    }
    return acc;
}

/* RMS-normed resid (rms from the G per-block sums of squares, every warp in the same order) into
 * sx as q8_1 records, a consumer thread a group */
__device__ void ch_stage_norm(const ChainArgs &A, int *sx, int lane) {
    if (A.flags & 128) { /* the barriers alone */
        ch_bar();
        return;
    }
    /* thread j < 128: group j whole (its 32 values and norm weights by 16-byte L2 loads, issued before the
     * sums of squares are read); every warp sums the blocks' squares in the same order */
    float v[32];
    const int j = threadIdx.x;
    if (j < CH_HIDDEN / 32) {
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const float4 r = __ldcg((const float4 *)(A.resid + 32 * j) + i), w = ((const float4 *)(A.nw + 32 * j))[i];
            v[4 * i] = r.x * w.x, v[4 * i + 1] = r.y * w.y, v[4 * i + 2] = r.z * w.z, v[4 * i + 3] = r.w * w.w;
        }
    }
    float tot = 0.0f;
    for (int i = lane; i < (int)gridDim.x; i += 32) tot += __ldcg(A.partial + i);
    tot = cll_warp_sum(tot);
    const float rinv = rsqrtf(tot / (float)CH_HIDDEN + 1e-5f);
    if (j < CH_HIDDEN / 32) {
#pragma unroll
        for (int i = 0; i < 32; i++) v[i] *= rinv;
        ch_quant_thread(v, sx + j * SP_XW);
    }
    ch_bar();
}

/* N q8_1 records from global src (written by other blocks in this launch: L2 loads) into sx, every
 * load of a thread issued before its stores */
template <int N>
__device__ void ch_stage_copy(int *sx, const int *src, int flags) {
    if (flags & 128) {
        ch_bar();
        return;
    }
    constexpr int W = N * SP_XW, PT = (W + 32 * CH_CW - 1) / (32 * CH_CW);
    int v[PT];
#pragma unroll
    for (int u = 0; u < PT; u++) {
        const int i = threadIdx.x + 32 * CH_CW * u;
        if (i < W) v[u] = __ldcg(src + i);
    }
#pragma unroll
    for (int u = 0; u < PT; u++) {
        const int i = threadIdx.x + 32 * CH_CW * u;
        if (i < W) sx[i] = v[u];
    }
    ch_bar();
}

/* one product's tiles of this block: tile t's tr rows land in stage it % nstg (the producer's
 * order); warp w takes row w % tr, K slice w / tr, and its lane the groups 32 k + lane + 32 ks u
 * (u < NGL): their q8_1 records are read from shared memory once per product into registers, so a
 * row costs only its weight loads and dots; EPI 0 y[row] = v, 1 resid[row] += v (the residual read
 * before the tile's wait) and the block's sum of squares into partial[block] */
template <int EPI, int NGL>
__device__ void ch_gemv(const ChainArgs &A, int op, uint8_t *ring, const int *sx, uint64_t *full, uint64_t *empty,
                        uint32_t &it, float *y, float (*red)[CH_CW], float *sqred, int warp, int lane) {
    const int tr = A.tr[op], ng = A.ng[op], ks = CH_CW / tr, r = warp % tr, k = warp / tr;
    const int ntile = A.flags & 4 ? 0 : A.rows[op] / tr;
    const int64_t rs = A.rs[op];
    CuX xr[NGL];
#pragma unroll
    for (int u = 0; u < NGL; u++) {
        const int g = 32 * k + lane + 32 * ks * u;
        if (g < ng) xr[u] = sp_ldx_sm(sx + g * SP_XW);
    }
    float sq = 0.0f;
    for (int t = blockIdx.x; t < ntile; t += gridDim.x, it++) {
        const int slot = (int)(it % (uint32_t)A.nstg);
        const int64_t o = (int64_t)t * tr + r;
        const float res = EPI == 1 && lane == 0 && k == 0 ? __ldcg(A.resid + o) : 0.0f;
        ch_mbar_wait(&full[slot], (it / (uint32_t)A.nstg) & 1u);
        const uint8_t *row = ring + (size_t)slot * A.stg + (size_t)r * rs;
        float acc = 0.0f;
#pragma unroll
        for (int u = 0; u < NGL; u++) {
            const int g = 32 * k + lane + 32 * ks * u;
            if (g < ng && !(A.flags & 1)) acc += ChS::dot(ChS::load<1>(row, ng, g), g, xr[u]);
        }
        float v = cll_warp_sum(acc);
        __syncwarp();
        if (lane == 0) ch_mbar_arrive(&empty[slot]); /* this warp is done with the stage */
        if (ks > 1) {
            if (lane == 0) red[it & 1][warp] = v;
            ch_bar();
            if (warp >= tr) continue;
            v = 0.0f;
            for (int i = 0; i < ks; i++) v += red[it & 1][warp + tr * i];
        }
        if (lane == 0) {
            if (EPI == 0) __stcg(y + o, v);
            else {
                const float n = res + v;
                __stcg(A.resid + o, n);
                sq += n * n;
            }
        }
    }
    if (EPI == 1) {
        if (lane == 0) sqred[warp] = sq; /* not red: warps < tr may still read the last tile's sums there */
        ch_bar();
        if (threadIdx.x == 0) {
            float s = 0.0f;
            for (int i = 0; i < CH_CW; i++) s += sqred[i];
            __stcg(A.partial + blockIdx.x, s);
        }
    }
}

/* the producer's walk over this block's tiles (layer, product, tile), in the consumers' order */
struct ChCursor {
    int l, op, t;
    __device__ void start(const ChainArgs &A) {
        l = 0, op = 0, t = blockIdx.x;
        settle(A);
    }
    __device__ void settle(const ChainArgs &A) { /* past a product's last tile: the next product's first */
        while (l < A.layers && t >= A.rows[op] / A.tr[op]) {
            t = blockIdx.x;
            if (++op == 4) op = 0, l++;
        }
    }
    __device__ void next(const ChainArgs &A) {
        t += gridDim.x;
        settle(A);
    }
    __device__ bool live(const ChainArgs &A) const { return l < A.layers; }
    __device__ const uint8_t *src(const ChainArgs &A) const {
        return A.w[op] + (size_t)l * A.mat[op] + (size_t)t * A.tr[op] * A.rs[op];
    }
    __device__ uint32_t bytes(const ChainArgs &A) const { return (uint32_t)(A.tr[op] * A.rs[op]); }
};

__global__ void __launch_bounds__(CH_NT, 1) k_chain(const ChainArgs A) {
    extern __shared__ __align__(128) uint8_t ch_smem[];
    __shared__ __align__(8) uint64_t full[CH_MAXSTG], empty[CH_MAXSTG];
    __shared__ float red[2][CH_CW], sqred[CH_CW];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    uint8_t *ring = ch_smem;
    int *sx = (int *)(ch_smem + (size_t)A.nstg * A.stg);
    if (threadIdx.x == 0) {
        for (int i = 0; i < A.nstg; i++) {
            cll_mbar_init(&full[i], A.lsu ? 32 : 1); /* lsu: every producer lane's copies arrive */
            cll_mbar_init(&empty[i], CH_CW);
        }
        cll_mbar_init_fence();
    }
    __syncthreads();
    if (warp == CH_CW) { /* the producer: every tile of every layer, in the consumers' order (ChCursor); the TMA
                          * engine's copies from lane 0, or (lsu) 16-byte cp.async chunks l, l + 32, .. from lane l */
        if (!A.lsu && lane != 0) return;
        ChCursor cur, pf;
        cur.start(A);
        pf.start(A);
        for (int i = 0; !A.lsu && i < A.l2ahead && pf.live(A); i++) {
            if (!(A.flags & 4)) cll_l2_prefetch(pf.src(A), pf.bytes(A));
            pf.next(A);
        }
        for (uint32_t it = 0; !(A.flags & 4) && cur.live(A); cur.next(A), it++) {
            const int slot = (int)(it % (uint32_t)A.nstg);
            if (it >= (uint32_t)A.nstg) ch_mbar_wait(&empty[slot], ((it / (uint32_t)A.nstg) - 1u) & 1u);
            const uint8_t *src = cur.src(A);
            const uint32_t bytes = cur.bytes(A), rs = (uint32_t)A.rs[cur.op];
            uint8_t *dst = ring + (size_t)slot * A.stg;
            if (A.lsu) {
                for (uint32_t c = 16u * lane; c < bytes; c += 512u)
                    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(cll_smem_u32(dst) + c), "l"(src + c)
                                 : "memory");
                asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(cll_smem_u32(&full[slot])) : "memory");
                continue;
            }
            if (A.l2ahead && pf.live(A)) {
                cll_l2_prefetch(pf.src(A), pf.bytes(A));
                pf.next(A);
            }
            cll_mbar_expect_tx(&full[slot], bytes);
            if (A.row_copies)
                for (uint32_t o = 0; o < bytes; o += rs) cll_bulk_g2s(dst + o, src + o, rs, &full[slot]);
            else cll_bulk_g2s(dst, src, bytes, &full[slot]);
        }
        if (A.lsu) asm volatile("cp.async.wait_all;" ::: "memory");
        return;
    }
    uint32_t it = 0;
    unsigned gen = 0;
    for (int l = 0; l < A.layers; l++) {
        ch_stage_norm(A, sx, lane);
        ch_gemv<0, 4>(A, 0, ring, sx, full, empty, it, A.y_qkv, red, sqred, warp, lane);
        ch_grid_sync(A.ctr, gen, A.flags); /* attention's place */
        ch_stage_copy<CH_HIDDEN / 32>(sx, A.xq_attn, A.flags);
        ch_gemv<1, 4>(A, 1, ring, sx, full, empty, it, NULL, red, sqred, warp, lane);
        ch_grid_sync(A.ctr, gen, A.flags);
        ch_stage_norm(A, sx, lane);
        ch_gemv<0, 4>(A, 2, ring, sx, full, empty, it, A.y_gu, red, sqred, warp, lane);
        ch_grid_sync(A.ctr, gen, A.flags);
        /* the activation: thread t of block b takes group b + G t whole */
        for (int j = blockIdx.x + gridDim.x * threadIdx.x; !(A.flags & 128) && j < CH_FFN / 32; j += gridDim.x * 32 * CH_CW) {
            float v[32];
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const float4 g = __ldcg((const float4 *)(A.y_gu + 32 * j) + i), u = __ldcg((const float4 *)(A.y_gu + CH_FFN + 32 * j) + i);
                v[4 * i] = g.x / (1.0f + expf(-g.x)) * u.x, v[4 * i + 1] = g.y / (1.0f + expf(-g.y)) * u.y;
                v[4 * i + 2] = g.z / (1.0f + expf(-g.z)) * u.z, v[4 * i + 3] = g.w / (1.0f + expf(-g.w)) * u.w;
            }
            ch_quant_thread(v, A.xq_act + j * SP_XW);
        }
        ch_grid_sync(A.ctr, gen, A.flags);
        ch_stage_copy<CH_FFN / 32>(sx, A.xq_act, A.flags);
        ch_gemv<1, 6>(A, 3, ring, sx, full, empty, it, NULL, red, sqred, warp, lane);
        ch_grid_sync(A.ctr, gen, A.flags);
    }
}

/* ---- the reference: one plain kernel per op, the same dots and quantizer ---- */
__global__ void k_ref_norm(const float *resid, const float *nw, int n, int *xq) {
    __shared__ float part[32];
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += resid[i] * resid[i];
    s = cll_warp_sum(s);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
    __syncthreads();
    float tot = 0.0f;
    for (int i = 0; i < (int)blockDim.x / 32; i++) tot += part[i];
    const float rinv = rsqrtf(tot / (float)n + 1e-5f);
    const int lane = threadIdx.x & 31;
    for (int j = threadIdx.x >> 5; j < n / 32; j += blockDim.x / 32)
        ch_quant_group(resid[32 * j + lane] * rinv * nw[32 * j + lane], lane, xq + j * SP_XW);
}
__global__ void k_ref_act(const float *ygu, int ffn, int *xq) {
    const int j = blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (j >= ffn / 32) return;
    const float g = ygu[32 * j + lane], u = ygu[ffn + 32 * j + lane];
    ch_quant_group(g / (1.0f + expf(-g)) * u, lane, xq + j * SP_XW);
}
/* a warp a row; EPI 0 y = v, 1 y += v */
template <int EPI>
__global__ void k_ref_gemv(const uint8_t *W, int rows, int ng, int64_t rs, const int *xq, float *y) {
    const int r = blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (r >= rows) return;
    const float v = cll_warp_sum(ch_row_dot(W + (size_t)r * rs, ng, xq, lane, 32));
    if (lane == 0) y[r] = EPI ? y[r] + v : v;
}

__global__ void k_ch_fill(uint32_t *p, size_t n, uint32_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t x = (uint32_t)i * 2654435761u ^ seed;
        x ^= x >> 16, x *= 0x7feb352du, x ^= x >> 15, x *= 0x846ca68bu, x ^= x >> 16;
        p[i] = x;
    }
}
/* every row's fp16 scales (after the 16 ng quant bytes) to s */
__global__ void k_ch_scales(uint8_t *W, int64_t nrows, int ng, int64_t rs, uint16_t s) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nrows * ng; i += (int64_t)gridDim.x * blockDim.x)
        *(uint16_t *)(W + (i / ng) * rs + 16 * (int64_t)ng + 2 * (i % ng)) = s;
}
__global__ void k_ch_quant_rows(const float *x, int n, int *xq) {
    const int j = blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (j < n / 32) ch_quant_group(x[32 * j + lane], lane, xq + j * SP_XW);
}

} // namespace

#define CH_CU(call)                                                                                         \
    do {                                                                                                    \
        cudaError_t e_ = (call);                                                                            \
        if (e_ != cudaSuccess) {                                                                            \
            cudaGetLastError();                                                                             \
            st = cll_err(CLL_ERR_DEVICE, "chain probe: %s:%d: %s: %s", __FILE__, __LINE__, #call,             \
                         cudaGetErrorString(e_));                                                           \
            goto done;                                                                                      \
        }                                                                                                   \
    } while (0)

extern "C" cll_status cll_cuda_bench_chain_us(int layers, int nstg, int flags, int bpsm, int l2ahead, int reps, double *us, double *gbps,
                                              double *err) {
    if (layers < 2 || reps < 1 || nstg < 2 || nstg > CH_MAXSTG || bpsm < 1 || bpsm > 4 || !us || !gbps || !err)
        return cll_err(CLL_ERR_ARG, "chain probe: layers >= 2, 2 <= stages <= %d, 1 <= blocks an SM <= 4, reps >= 1",
                       CH_MAXSTG);
    const int H = CH_HIDDEN, F = CH_FFN;
    ChainArgs A;
    memset(&A, 0, sizeof A);
    const int half = flags >> 6 & 1; /* 64: tiles of half the rows (4, and 2 for down: 9 and 12 KB) */
    const int rows[4] = {3 * H, H, 2 * F, H}, cols[4] = {H, H, H, F}, tr[4] = {8 >> half, 8 >> half, 8 >> half, 4 >> half};
    uint32_t stg = 0;
    double layer_bytes = 0;
    for (int op = 0; op < 4; op++) {
        A.rows[op] = rows[op];
        A.ng[op] = cols[op] / 32;
        A.rs[op] = (int64_t)A.ng[op] * ChS::BB; /* 18 B a group: multiples of 16 at these widths */
        A.tr[op] = tr[op];
        A.mat[op] = A.rs[op] * rows[op]; /* layers back to back: every tile a 16-byte-aligned run */
        const uint32_t tb = (uint32_t)(A.rs[op] * tr[op]);
        stg = tb > stg ? tb : stg;
        layer_bytes += (double)A.rs[op] * rows[op];
    }
    A.stg = (stg + 127) & ~127u;
    A.nstg = nstg;
    /* the consumers keep NGL = 4 (6 for down) q8_1 records a lane in registers (ch_gemv<EPI, NGL>) */
    for (int op = 0; op < 4; op++)
        if ((A.ng[op] + 32 * (CH_CW / A.tr[op]) - 1) / (32 * (CH_CW / A.tr[op])) > (op == 3 ? 6 : 4))
            return cll_err(CLL_ERR_ARG, "chain probe: product %d's row is longer than its lanes' registers", op);
    const size_t smem = (size_t)nstg * A.stg + (size_t)(F / 32) * SP_XW * 4;
    std::vector<void *> bufs;
    cll_status st = CLL_OK;
    cudaStream_t s = NULL;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    float *resid0 = NULL, *part0 = NULL, *nw = NULL, *xattn = NULL, *ref = NULL, *gu_ref = NULL, *qkv_ref = NULL;
    int *xref = NULL;
    int sm = 0, per_sm = 0, grid = 0;
    std::vector<float> h(H), a(H), b(H);
    auto alloc = [&](void **p, size_t n) -> cudaError_t {
        cudaError_t e = cudaMalloc(p, n);
        if (e == cudaSuccess) bufs.push_back(*p);
        return e;
    };
    CH_CU(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0));
    {
        int optin = 0;
        CH_CU(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
        if (smem > (size_t)optin - 1024) { /* the static barriers and sums beside it */
            st = cll_err(CLL_ERR_ARG, "chain probe: %d stages of %u bytes and the activation row need %zu bytes of shared "
                         "memory, the device gives a block %d", nstg, A.stg, smem, optin);
            goto done;
        }
    }
    CH_CU(cudaFuncSetAttribute(k_chain, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CH_CU(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k_chain, CH_NT, smem));
    if (per_sm < bpsm) { /* every block must be resident at once: the grid barriers wait for all of them */
        st = cll_err(CLL_ERR_DEVICE, "chain probe: %d blocks an SM of %zu bytes of shared memory do not fit (%d do)", bpsm,
                     smem, per_sm);
        goto done;
    }
    grid = sm * bpsm;
    for (int op = 0; op < 4; op++) {
        CH_CU(alloc((void **)&A.w[op], (size_t)A.mat[op] * layers));
        k_ch_fill<<<2048, 256>>>((uint32_t *)A.w[op], (size_t)A.mat[op] * layers / 4, 0x1234u + op);
        k_ch_scales<<<2048, 256>>>((uint8_t *)A.w[op], (int64_t)rows[op] * layers, A.ng[op], A.rs[op],
                                   (uint16_t)0x2000); /* 2^-7 per group: sums stay well inside f16 and f32 */
        CH_CU(cudaGetLastError());
    }
    CH_CU(alloc((void **)&A.resid, H * 4));
    CH_CU(alloc((void **)&resid0, H * 4));
    CH_CU(alloc((void **)&A.y_qkv, 3 * H * 4));
    CH_CU(alloc((void **)&A.y_gu, 2 * F * 4));
    CH_CU(alloc((void **)&A.partial, (size_t)sm * 4 * bpsm));
    CH_CU(alloc((void **)&part0, (size_t)sm * 4 * bpsm));
    CH_CU(alloc((void **)&A.xq_attn, (size_t)(H / 32) * SP_XW * 4));
    CH_CU(alloc((void **)&A.xq_act, (size_t)(F / 32) * SP_XW * 4));
    CH_CU(alloc((void **)&nw, H * 4));
    CH_CU(alloc((void **)&xattn, H * 4));
    CH_CU(alloc((void **)&A.ctr, 4));
    CH_CU(alloc((void **)&ref, H * 4));
    CH_CU(alloc((void **)&gu_ref, 2 * F * 4));
    CH_CU(alloc((void **)&qkv_ref, 3 * H * 4));
    CH_CU(alloc((void **)&xref, (size_t)(F / 32) * SP_XW * 4));
    A.nw = nw;
    {
        std::vector<float> p0((size_t)sm * bpsm, 0.0f), ones(H, 1.0f), xa(H);
        double ss = 0;
        uint32_t r = 12345u;
        for (int i = 0; i < H; i++) {
            r = r * 1664525u + 1013904223u;
            h[i] = (float)((r >> 8) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
            ss += (double)h[i] * h[i];
            r = r * 1664525u + 1013904223u;
            xa[i] = (float)((r >> 8) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
        }
        p0[0] = (float)ss;
        CH_CU(cudaMemcpy(resid0, h.data(), H * 4, cudaMemcpyHostToDevice));
        CH_CU(cudaMemcpy(part0, p0.data(), (size_t)sm * 4 * bpsm, cudaMemcpyHostToDevice));
        CH_CU(cudaMemcpy(nw, ones.data(), H * 4, cudaMemcpyHostToDevice));
        CH_CU(cudaMemcpy(xattn, xa.data(), H * 4, cudaMemcpyHostToDevice));
        k_ch_quant_rows<<<H / 32 / 8, 256>>>(xattn, H, A.xq_attn);
        CH_CU(cudaGetLastError());
    }
    CH_CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    /* the check: two layers persistent vs two layers of plain kernels from the same start */
    {
        ChainArgs C = A;
        C.layers = 2;
        CH_CU(cudaMemsetAsync(C.ctr, 0, 4, s));
        CH_CU(cudaMemcpyAsync(C.resid, resid0, H * 4, cudaMemcpyDeviceToDevice, s));
        CH_CU(cudaMemcpyAsync(C.partial, part0, (size_t)sm * 4 * bpsm, cudaMemcpyDeviceToDevice, s));
        k_chain<<<grid, CH_NT, smem, s>>>(C);
        CH_CU(cudaGetLastError());
        CH_CU(cudaMemcpyAsync(ref, resid0, H * 4, cudaMemcpyDeviceToDevice, s));
        for (int l = 0; l < 2; l++) {
            k_ref_norm<<<1, 1024, 0, s>>>(ref, nw, H, xref);
            k_ref_gemv<0><<<3 * H / 8, 256, 0, s>>>(A.w[0] + (size_t)l * A.mat[0], 3 * H, A.ng[0], A.rs[0], xref, qkv_ref);
            k_ref_gemv<1><<<H / 8, 256, 0, s>>>(A.w[1] + (size_t)l * A.mat[1], H, A.ng[1], A.rs[1], A.xq_attn, ref);
            k_ref_norm<<<1, 1024, 0, s>>>(ref, nw, H, xref);
            k_ref_gemv<0><<<2 * F / 8, 256, 0, s>>>(A.w[2] + (size_t)l * A.mat[2], 2 * F, A.ng[2], A.rs[2], xref, gu_ref);
            k_ref_act<<<(F / 32 + 7) / 8, 256, 0, s>>>(gu_ref, F, xref);
            k_ref_gemv<1><<<H / 8, 256, 0, s>>>(A.w[3] + (size_t)l * A.mat[3], H, A.ng[3], A.rs[3], xref, ref);
        }
        CH_CU(cudaGetLastError());
        CH_CU(cudaStreamSynchronize(s));
        CH_CU(cudaMemcpy(a.data(), C.resid, H * 4, cudaMemcpyDeviceToHost));
        CH_CU(cudaMemcpy(b.data(), ref, H * 4, cudaMemcpyDeviceToHost));
        double md = 0, mx = 0;
        bool finite = true;
        for (int i = 0; i < H; i++) {
            finite = finite && isfinite(a[i]) && isfinite(b[i]);
            md = fmax(md, fabs((double)a[i] - b[i]));
            mx = fmax(mx, fabs((double)b[i]));
        }
        *err = finite && mx > 0 ? md / mx : INFINITY;
    }
    /* the timing: one graph (reset the counter and the residual, the kernel), replayed */
    A.layers = layers;
    A.flags = flags & (7 | 128);
    A.row_copies = flags >> 3 & 1; /* 8: a bulk copy a row */
    A.lsu = flags >> 4 & 1;        /* 16: cp.async from the producer warp */
    A.l2ahead = l2ahead;
    CH_CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    cudaMemsetAsync(A.ctr, 0, 4, s);
    cudaMemcpyAsync(A.resid, resid0, H * 4, cudaMemcpyDeviceToDevice, s);
    cudaMemcpyAsync(A.partial, part0, (size_t)sm * 4 * bpsm, cudaMemcpyDeviceToDevice, s);
    k_chain<<<grid, CH_NT, smem, s>>>(A);
    CH_CU(cudaStreamEndCapture(s, &graph));
    CH_CU(cudaGraphInstantiate(&exec, graph, 0));
    CH_CU(cudaEventCreate(&e0));
    CH_CU(cudaEventCreate(&e1));
    for (int w = 0; w < 3; w++) CH_CU(cudaGraphLaunch(exec, s));
    CH_CU(cudaEventRecord(e0, s));
    for (int r = 0; r < reps; r++) CH_CU(cudaGraphLaunch(exec, s));
    CH_CU(cudaEventRecord(e1, s));
    CH_CU(cudaEventSynchronize(e1));
    {
        float ms = 0.0f;
        CH_CU(cudaEventElapsedTime(&ms, e0, e1));
        *us = (double)ms * 1e3 / ((double)reps * layers);
        *gbps = layer_bytes / (*us * 1e3);
    }
done:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    if (s) cudaStreamDestroy(s);
    for (void *p : bufs) cudaFree(p);
    return st;
}
