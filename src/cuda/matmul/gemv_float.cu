/* cuda/matmul/gemv_float: gemv and get_rows of the float weights (F32, F16, BF16), reading the
 * f32 activation directly (BF16 rounds it to bf16 first, as ggml's vec_dot_bf16 does).
 * Launch geometry: block = 4 warps, one output row per warp, grid = (ceil(rows/4), nb). Each lane
 * streams 16-byte weight vectors (ld.global.nc.L1::no_allocate; 8 halves or 4 floats) four at a
 * time, double-buffered in registers (DB: the next four go out before these are summed, so 4-8 x
 * 16 B in flight per lane, up to 4 KB per warp; the same sums in the same order, so the same bits:
 * H200 l2-7b F16 tg128 270.2 / 270.3 -> 272.3 / 272.4 tok/s in one call, greedy ids identical;
 * CLLAMA_CUDA_GEMV_F_DB=0 the single buffer), the matching x from L1 as float4. No shared
 * memory. Programmatic dependent launch: the first 4 x 16 B per lane are loaded before the wait.
 * Needs x rows 16-byte aligned (x and x_stride % 4 == 0); a ragged tail (cols % 8) is summed per
 * element. Owns nothing. Rule: f32 accumulation, one writer per output. */
#include <cuda_bf16.h>

#define CLL_CU_MOE_F16 1 /* this file exports the f16 grouped MoE form (moe_gemm.cuh) */
#include "cuda/matmul/kernels.cuh"
#include "cuda/matmul/epilogue.cuh"
#include "cuda/ops/ops.cuh"
#include "cuda/pick.h"

/* element decoders for get_rows (QK = 1: a "block" is one value) */
struct CuF32 {
    static constexpr int BB = 4, QK = 1, GPB = 1;
    static __device__ __forceinline__ float deq(const uint8_t *b, int) { return *(const float *)b; }
};
struct CuF16 {
    static constexpr int BB = 2, QK = 1, GPB = 1;
    static __device__ __forceinline__ float deq(const uint8_t *b, int) { return cu_h2f(b); }
};
struct CuBF16 {
    static constexpr int BB = 2, QK = 1, GPB = 1;
    static __device__ __forceinline__ float deq(const uint8_t *b, int) { return cll_bf2f((uint16_t)cu_ld16(b)); }
};

static __device__ __forceinline__ uint4 ld_stream(const uint4 *p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

static __device__ __forceinline__ float bfr(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }

/* dot of one 16-byte weight vector with its x elements */
template <int T> static __device__ __forceinline__ float vdot(uint4 w, const float *x);
template <> __device__ __forceinline__ float vdot<CLL_TYPE_F32>(uint4 w, const float *x) {
    const float4 a = __ldg((const float4 *)x);
    return __uint_as_float(w.x) * a.x + __uint_as_float(w.y) * a.y + __uint_as_float(w.z) * a.z + __uint_as_float(w.w) * a.w;
}
template <> __device__ __forceinline__ float vdot<CLL_TYPE_F16>(uint4 w, const float *x) {
    const float4 a = __ldg((const float4 *)x), b = __ldg((const float4 *)x + 1);
    const float2 w0 = __half22float2(*(__half2 *)&w.x), w1 = __half22float2(*(__half2 *)&w.y);
    const float2 w2 = __half22float2(*(__half2 *)&w.z), w3 = __half22float2(*(__half2 *)&w.w);
    return w0.x * a.x + w0.y * a.y + w1.x * a.z + w1.y * a.w + w2.x * b.x + w2.y * b.y + w3.x * b.z + w3.y * b.w;
}
template <> __device__ __forceinline__ float vdot<CLL_TYPE_BF16>(uint4 w, const float *x) {
    const float4 a = __ldg((const float4 *)x), b = __ldg((const float4 *)x + 1);
    const uint32_t u[4] = {w.x, w.y, w.z, w.w};
    const float xs[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        s += __uint_as_float(u[i] << 16) * bfr(xs[2 * i]);
        s += __uint_as_float(u[i] & 0xFFFF0000u) * bfr(xs[2 * i + 1]);
    }
    return s;
}
template <int T> static __device__ __forceinline__ float sdot(const uint8_t *w, int64_t e, float x);
template <> __device__ __forceinline__ float sdot<CLL_TYPE_F32>(const uint8_t *w, int64_t e, float x) { return ((const float *)w)[e] * x; }
template <> __device__ __forceinline__ float sdot<CLL_TYPE_F16>(const uint8_t *w, int64_t e, float x) { return cll_h2f(((const uint16_t *)w)[e]) * x; }
template <> __device__ __forceinline__ float sdot<CLL_TYPE_BF16>(const uint8_t *w, int64_t e, float x) { return cll_bf2f(((const uint16_t *)w)[e]) * bfr(x); }

/* PRE: a short row on a small grid (cll_cu_gemv_f_pre: the MoE router, 128 x 2048 f32) puts every
 * vector of the lane's row in flight at once, before the PDL wait (weights depend on no kernel), so
 * after the wait only x is read; the default path keeps 4 in flight a round. Same sums in the same
 * order: the two give the same bits. */
#define GEMV_F_PRE_V 16 /* vectors per lane held by PRE (the row's <= 512 16-byte vectors) */
template <int T> __host__ __device__ static constexpr int gemv_f_epv() { return T == CLL_TYPE_F32 ? 4 : 8; } /* elements a 16-byte vector */
/* POLL: the polled residual tail (epi.slot; epilogue.cuh): the rows' writers store into the slots, the grid's
 * last block is the consumer (k_gemv_f_poll) */
template <int T, int WARPS, bool PRE, bool DB, bool POLL>
static __device__ __forceinline__ void
gemv_f_dev(const uint8_t *__restrict__ W, int64_t rows, int64_t cols, int64_t row_stride, int64_t mat_stride, int64_t n_mat,
           const int32_t *__restrict__ mat_ids, const float *__restrict__ x, int64_t x_stride, float *__restrict__ y,
           int64_t y_stride, int early, const void *pfn, size_t pfb, const cll_cu_resid_epi &epi) {
    constexpr int EPV = gemv_f_epv<T>();
    if (early) cll_pdl_trigger(); /* the next kernel may launch now */
    if (POLL && blockIdx.x == gridDim.x - 1) { /* the polled tail's consumer, after every producer */
        cll_epi_poll_consume(epi, rows);
        return;
    }
    const bool tail = epi.on && !POLL; /* the ticket tail: every block reaches cll_epi_finish */
    double epi_acc = 0.0; /* the fused residual tail: this thread's squares */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t row = (int64_t)blockIdx.x * WARPS + warp;
    const int b = blockIdx.y;
    int64_t mat = 0;
    if (mat_ids) { /* the router wrote the ids */
        cll_pdl_wait();
        mat = mat_ids[b];
        if (mat < 0 || mat >= n_mat) {
            if (row < rows && lane == 0) y[b * y_stride + row] = 0.0f;
            return;
        }
    }
    const bool live = row < rows;
    const uint8_t *wr = W + mat * mat_stride + (live ? row : 0) * row_stride;
    const uint4 *wv = (const uint4 *)wr;
    const float *xr = x + b * x_stride;
    const int64_t nvec = cols / EPV;
    float acc = 0.0f;
    if constexpr (PRE) {
        uint4 wb[GEMV_F_PRE_V];
#pragma unroll
        for (int i = 0; i < GEMV_F_PRE_V; i++)
            if (live && lane + 32 * i < nvec) wb[i] = ld_stream(wv + lane + 32 * i);
        if (!mat_ids) cll_pdl_wait(); /* x's producer */
        if (!live) {
            if (tail) cll_epi_finish(epi, rows, epi_acc);
            return;
        }
#pragma unroll
        for (int i = 0; i < GEMV_F_PRE_V; i++)
            if (lane + 32 * i < nvec) acc += vdot<T>(wb[i], xr + (lane + 32 * i) * EPV);
    } else {
        int64_t v = lane;
        /* the first four vectors go out before the wait (weights depend on no kernel) */
        uint4 w0 = {}, w1 = {}, w2 = {}, w3 = {};
        const bool first = live && v + 96 < nvec;
        if (first) {
            w0 = ld_stream(wv + v);
            w1 = ld_stream(wv + v + 32);
            w2 = ld_stream(wv + v + 64);
            w3 = ld_stream(wv + v + 96);
        }
        if (!mat_ids) cll_pdl_wait(); /* x's producer */
        if (!live) { /* past the rows: nothing but the tail */
            if (tail) cll_epi_finish(epi, rows, epi_acc);
            return;
        }
        if (DB && first) { /* register double buffer: the next four vectors go out before these are summed */
            v += 128;
            for (;;) {
                const bool nx = v + 96 < nvec;
                uint4 n0 = {}, n1 = {}, n2 = {}, n3 = {};
                if (nx) {
                    n0 = ld_stream(wv + v);
                    n1 = ld_stream(wv + v + 32);
                    n2 = ld_stream(wv + v + 64);
                    n3 = ld_stream(wv + v + 96);
                }
                acc += vdot<T>(w0, xr + (v - 128) * EPV);
                acc += vdot<T>(w1, xr + (v - 96) * EPV);
                acc += vdot<T>(w2, xr + (v - 64) * EPV);
                acc += vdot<T>(w3, xr + (v - 32) * EPV);
                if (!nx) break;
                w0 = n0, w1 = n1, w2 = n2, w3 = n3;
                v += 128;
            }
        } else if (first) {
            acc += vdot<T>(w0, xr + v * EPV);
            acc += vdot<T>(w1, xr + (v + 32) * EPV);
            acc += vdot<T>(w2, xr + (v + 64) * EPV);
            acc += vdot<T>(w3, xr + (v + 96) * EPV);
            v += 128;
        }
        for (; v + 96 < nvec; v += 128) { /* (DB: none left) */
            w0 = ld_stream(wv + v);
            w1 = ld_stream(wv + v + 32);
            w2 = ld_stream(wv + v + 64);
            w3 = ld_stream(wv + v + 96);
            acc += vdot<T>(w0, xr + v * EPV);
            acc += vdot<T>(w1, xr + (v + 32) * EPV);
            acc += vdot<T>(w2, xr + (v + 64) * EPV);
            acc += vdot<T>(w3, xr + (v + 96) * EPV);
        }
        for (; v < nvec; v += 32) acc += vdot<T>(ld_stream(wv + v), xr + v * EPV);
    }
    for (int64_t e = nvec * EPV + lane; e < cols; e += 32) acc += sdot<T>(wr, e, xr[e]);
    acc = cll_warp_sum(acc);
    if (lane == 0) {
        y[b * y_stride + row] = acc;
        if (POLL) cll_epi_poll_row(epi, row, acc); /* then leave */
        else if (epi.on) epi_acc += cll_epi_row(epi, row, acc);
    }
    cll_l2_prefetch_next(pfn, pfb);
    if (tail) cll_epi_finish(epi, rows, epi_acc);
}

template <int T, int WARPS, bool PRE, bool DB = false>
__global__ void __launch_bounds__(WARPS * 32)
k_gemv_f(const uint8_t *__restrict__ W, int64_t rows, int64_t cols, int64_t row_stride, int64_t mat_stride, int64_t n_mat,
         const int32_t *__restrict__ mat_ids, const float *__restrict__ x, int64_t x_stride, float *__restrict__ y,
         int64_t y_stride, int early, const void *pfn, size_t pfb, const cll_cu_resid_epi epi) {
    gemv_f_dev<T, WARPS, PRE, DB, false>(W, rows, cols, row_stride, mat_stride, n_mat, mat_ids, x, x_stride, y, y_stride,
                                         early, pfn, pfb, epi);
}

/* the polled tail's launch (no PRE form: the same sums as the others), capped at 64 registers (8 blocks an SM,
 * as the default instances' 60-64): the consumer's ~100 would cost a 4096-row product (1024 blocks) its one
 * wave, so it spills a little instead */
template <int T, int WARPS, bool DB>
__global__ void __launch_bounds__(WARPS * 32, 8)
k_gemv_f_poll(const uint8_t *__restrict__ W, int64_t rows, int64_t cols, int64_t row_stride, int64_t mat_stride,
              int64_t n_mat, const int32_t *__restrict__ mat_ids, const float *__restrict__ x, int64_t x_stride,
              float *__restrict__ y, int64_t y_stride, int early, const void *pfn, size_t pfb, const cll_cu_resid_epi epi) {
    gemv_f_dev<T, WARPS, false, DB, true>(W, rows, cols, row_stride, mat_stride, n_mat, mat_ids, x, x_stride, y, y_stride,
                                          early, pfn, pfb, epi);
}

/* A gate|up pair of one token with its activation (cll_cu_gemv_args.act_out): warp p of the grid sums
 * gate row p and up row f + p, each as k_gemv_f sums a row (lane v's vectors v, v + 32, .. in order,
 * then the ragged tail, then cll_warp_sum: the plain launch's bits, whatever form it takes), four
 * vectors of each row in flight before the PDL wait and the next four of each before these are summed
 * (k_gemv_f's DB buffer: 8-16 x 16 B a lane), and lane 0 writes cll_act_gated(gate, up), the act
 * kernel's arithmetic on the same two floats, to act[p]: the step's activation keeps its bits and the
 * act kernel's launch is gone (F16 l2-7b: 32 launches a token; H100 tg128 +1.1%). The same two-rows
 * body over the other products' row pairs (rows 2p, 2p + 1) lost: H100 l2-7b F16 tg128 206.25 / 206.31
 * vs 213.12 / 213.33 tok/s one row a warp (ABBA, one call, 2026-12-07). */
template <int T, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
k_gemv_f_gu(const uint8_t *__restrict__ W, int64_t f, int64_t cols, int64_t row_stride, const float *__restrict__ x,
            float *__restrict__ act, bool gelu, int early, const void *pfn, size_t pfb) {
    constexpr int EPV = gemv_f_epv<T>();
    if (early) cll_pdl_trigger(); /* the next kernel may launch now */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t p = (int64_t)blockIdx.x * WARPS + warp;
    const bool live = p < f;
    const uint8_t *wg = W + (live ? p : 0) * row_stride, *wu = W + (live ? f + p : 0) * row_stride;
    const uint4 *vg = (const uint4 *)wg, *vu = (const uint4 *)wu;
    const int64_t nvec = cols / EPV;
    float ag = 0.0f, au = 0.0f;
    int64_t v = lane;
    uint4 g0 = {}, g1 = {}, g2 = {}, g3 = {}, u0 = {}, u1 = {}, u2 = {}, u3 = {};
    const bool first = live && v + 96 < nvec;
    if (first) { /* weights depend on no kernel */
        g0 = ld_stream(vg + v), u0 = ld_stream(vu + v);
        g1 = ld_stream(vg + v + 32), u1 = ld_stream(vu + v + 32);
        g2 = ld_stream(vg + v + 64), u2 = ld_stream(vu + v + 64);
        g3 = ld_stream(vg + v + 96), u3 = ld_stream(vu + v + 96);
    }
    cll_pdl_wait(); /* x's producer */
    if (!live) return;
    if (first) {
        v += 128;
        for (;;) {
            const bool nx = v + 96 < nvec;
            uint4 h0 = {}, h1 = {}, h2 = {}, h3 = {}, t0 = {}, t1 = {}, t2 = {}, t3 = {};
            if (nx) {
                h0 = ld_stream(vg + v), t0 = ld_stream(vu + v);
                h1 = ld_stream(vg + v + 32), t1 = ld_stream(vu + v + 32);
                h2 = ld_stream(vg + v + 64), t2 = ld_stream(vu + v + 64);
                h3 = ld_stream(vg + v + 96), t3 = ld_stream(vu + v + 96);
            }
            const float *xv = x + (v - 128) * EPV;
            ag += vdot<T>(g0, xv), au += vdot<T>(u0, xv);
            ag += vdot<T>(g1, xv + 32 * EPV), au += vdot<T>(u1, xv + 32 * EPV);
            ag += vdot<T>(g2, xv + 64 * EPV), au += vdot<T>(u2, xv + 64 * EPV);
            ag += vdot<T>(g3, xv + 96 * EPV), au += vdot<T>(u3, xv + 96 * EPV);
            if (!nx) break;
            g0 = h0, g1 = h1, g2 = h2, g3 = h3, u0 = t0, u1 = t1, u2 = t2, u3 = t3;
            v += 128;
        }
    }
    for (; v < nvec; v += 32) {
        ag += vdot<T>(ld_stream(vg + v), x + v * EPV);
        au += vdot<T>(ld_stream(vu + v), x + v * EPV);
    }
    for (int64_t e = nvec * EPV + lane; e < cols; e += 32) {
        ag += sdot<T>(wg, e, x[e]);
        au += sdot<T>(wu, e, x[e]);
    }
    ag = cll_warp_sum(ag);
    au = cll_warp_sum(au);
    if (lane == 0) act[p] = cll_act_gated(ag, au, gelu);
    cll_l2_prefetch_next(pfn, pfb);
}

template <int T>
static cudaError_t gemv_f_gu_launch(const cll_cu_weight *w, const cll_cu_gemv_args *a, cudaStream_t st) {
    const int64_t f = a->act_out.f;
    if (!a->x || a->nb != 1 || a->mat_ids || a->epi.on || a->route.logits || a->act_in.gu || f <= 0 ||
        w->rows < 2 * f || ((uintptr_t)a->x & 15) || cll_cdiv(f, CLL_GEMV_WARPS) > INT32_MAX)
        return cudaErrorInvalidValue;
    CLL_CU_RET(cll_cu_launch(k_gemv_f_gu<T, CLL_GEMV_WARPS>, dim3((unsigned)cll_cdiv(f, CLL_GEMV_WARPS)),
                             dim3(CLL_GEMV_WARPS * 32), 0, st, w->d, f, w->cols, (int64_t)w->row_stride, a->x,
                             a->act_out.y, a->act_out.gelu, cll_cu_gemv_early_trigger(), a->pf_next, a->pf_bytes));
    return cudaGetLastError();
}

template <int T>
static cudaError_t gemv_f_launch(const cll_cu_weight *w, const cll_cu_gemv_args *a, cudaStream_t st) {
    if (a->act_out.y) return gemv_f_gu_launch<T>(w, a, st);
    if (!a->x || a->nb <= 0 || a->nb > 65535 || ((uintptr_t)a->x & 15) || (a->x_stride & 3)) return cudaErrorInvalidValue;
    dim3 grid((unsigned)cll_cdiv(w->rows, CLL_GEMV_WARPS), (unsigned)a->nb);
    if (a->epi.on && (a->nb != 1 || grid.x > CLL_CU_EPI_MAX_BLOCKS)) return cudaErrorInvalidValue;
    const bool poll = a->epi.on && a->epi.slot;
    if (poll && (a->mat_ids || w->n_mat != 1 || !cll_cu_resid_poll_rows(w->rows))) return cudaErrorNotSupported;
    const bool pre = !poll && cll_cu_gemv_f_pre(w->cols / gemv_f_epv<T>(), (int64_t)grid.x * grid.y, cll_cu_sm_count(),
                                                GEMV_F_PRE_V, cll_cu_gemv_f_pre_mode());
    static int db_on = -1; /* CLLAMA_CUDA_GEMV_F_DB=0: the single buffer (A/B; the same sums, the same bits) */
    const bool db = !pre && cll_cu_env_flag(&db_on, "CLLAMA_CUDA_GEMV_F_DB", true);
    if (poll) grid.x += 1; /* the polled tail's consumer block, after the producers */
    auto k = poll  ? (db ? k_gemv_f_poll<T, CLL_GEMV_WARPS, true> : k_gemv_f_poll<T, CLL_GEMV_WARPS, false>)
             : pre ? k_gemv_f<T, CLL_GEMV_WARPS, true>
             : db  ? k_gemv_f<T, CLL_GEMV_WARPS, false, true>
                   : k_gemv_f<T, CLL_GEMV_WARPS, false>;
    CLL_CU_RET(cll_cu_launch(k, grid,
                             dim3(CLL_GEMV_WARPS * 32), 0, st, w->d, w->rows, w->cols,
                             (int64_t)w->row_stride, (int64_t)w->mat_stride, w->n_mat, a->mat_ids, a->x, a->x_stride,
                             a->y, a->y_stride, cll_cu_gemv_early_trigger(), a->pf_next, a->pf_bytes,
                             a->epi));
    return cudaGetLastError();
}

static const cll_cu_fmt_ops k_ops[] = {
    {CLL_TYPE_F32, gemv_f_launch<CLL_TYPE_F32>, cu_get_rows_launch<CuF32>, NULL, 4, 1, 0, "gemv_f32_warp_ld16", NULL},
    {CLL_TYPE_F16, gemv_f_launch<CLL_TYPE_F16>, cu_get_rows_launch<CuF16>, NULL, 2, 1, 0, "gemv_f16_warp_ld16", cu_moe_f16_launch},
    {CLL_TYPE_BF16, gemv_f_launch<CLL_TYPE_BF16>, cu_get_rows_launch<CuBF16>, NULL, 2, 1, 0, "gemv_bf16_warp_ld16", NULL},
};

const cll_cu_fmt_ops *cll_cu_fmt_float(uint32_t type) {
    for (size_t i = 0; i < sizeof k_ops / sizeof k_ops[0]; i++)
        if (k_ops[i].type == type) return &k_ops[i];
    return NULL;
}
