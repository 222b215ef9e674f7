/* cuda/ops/attn_prefill: causal attention of a prefill batch on tensor cores (FlashAttention-2
 * style): a batch whose rows are consecutive positions p0, p0+1, .. of one sequence (the host
 * tells: cll_cu_attn_args.prefill_contig), F16 cache, head dim 64 or 128 (k == v).
 * Launch geometry: grid (ceil(n/64), n_head) x 128 threads. A block holds 64 query rows of one
 * head (16 per warp, as mma A fragments: q is already fp16-rounded upstream, so the f16 copy is
 * exact) and walks the key cells [lo, last query's position] in tiles of 64: K and V tiles
 * row-major in shared memory, two stages (cp.async, 16-byte chunks, zero-filled past the keys:
 * the next tile's copies run under this tile's arithmetic), S = Q K^T by mma.sync.m16n8k16 (f16
 * in, f32 accumulate), masked (causal, sliding window), scaled, online softmax per row in
 * registers (max and sum over the quad of lanes that share a row), P rounded to f16 and
 * multiplied by V (B fragments by ldmatrix .trans) into the per-warp O accumulator (16 x HD f32
 * in registers), which each tile rescales by exp(m_old - m_new). The f32 output row (and, when outh,
 * its f16 form in the o product's order), then (when outq) its q8_1 form by cll_cu_quantize_rows_q8. Dynamic shared memory: 2 stages x 2 x 64 x
 * (HD+8) halves (68 KB at HD 128: 3 blocks an SM). Fragment layouts: PTX ISA, mma.m16n8k16 (.f16
 * A row, B col, f32 C/D) and ldmatrix .trans. (The single-stage form with V transposed by scalar
 * stores: 2.0 ms of a 16.7 ms l2-7b pp512 pass on the H200.)
 * Owns nothing. Rule: keys past the cache (n_ctx) or past the last query are zero-filled and
 * masked, so stale or unwritten cells never reach a sum. */
#include "cuda/ops/ops.cuh"
#include "cuda/pick.h"

#define PF_BQ 64
#define PF_BK 64

static __device__ __forceinline__ uint32_t pf_pack(float a, float b) {
    const __half2 h = __floats2half2_rn(a, b);
    return *(const uint32_t *)&h;
}

/* 16 bytes global -> shared, asynchronously; zeros when !ok (src is then not read) */
static __device__ __forceinline__ void pf_cp16(void *sdst, const void *gsrc, bool ok) {
    const uint32_t sa = (uint32_t)__cvta_generic_to_shared(sdst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(sa), "l"(gsrc), "r"(ok ? 16 : 0) : "memory");
}

static __device__ __forceinline__ void pf_mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* two f32 values as two f16 in one 4-byte store */
static __device__ __forceinline__ void pf_store_h2(uint16_t *d, float2 v) {
    *(uint32_t *)d = (uint32_t)cll_f2h(v.x) | (uint32_t)cll_f2h(v.y) << 16;
}

template <int HD, bool PG> /* PG: a paged cache (rows from the block table), else rows seq * n_ctx + p */
__global__ static void __launch_bounds__(128) attn_prefill_kernel(cll_cu_attn_args a, int32_t n) {
    constexpr int LD = HD + 8, TILE = PF_BK * LD, KT = HD / 16, OT = HD / 8;
    extern __shared__ __align__(16) __half pf_smem[]; /* [stage][K tile, V tile], rows of LD halves */
    cll_pdl_wait();
    cll_pdl_trigger();
    const int h = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int kvh = h / (a.n_head / a.n_kv);
    const int32_t q0 = (int32_t)blockIdx.x * PF_BQ; /* first batch row of the block */
    const int32_t p0 = a.prefill_p0;
    const int32_t rw = q0 + warp * 16 + g;         /* this lane's rows: rw and rw + 8 */
    /* Q fragments (rows past n are zeros) */
    uint32_t qa[KT][4];
    {
        const float *qr0 = a.q + (int64_t)rw * a.ld_q + (int64_t)h * HD;
        const float *qr1 = qr0 + 8 * a.ld_q;
        const bool v0 = rw < n, v1 = rw + 8 < n;
#pragma unroll
        for (int kk = 0; kk < KT; kk++) {
            const int c = kk * 16 + 2 * t;
            const float2 x00 = v0 ? *(const float2 *)(qr0 + c) : make_float2(0.f, 0.f);
            const float2 x10 = v1 ? *(const float2 *)(qr1 + c) : make_float2(0.f, 0.f);
            const float2 x01 = v0 ? *(const float2 *)(qr0 + c + 8) : make_float2(0.f, 0.f);
            const float2 x11 = v1 ? *(const float2 *)(qr1 + c + 8) : make_float2(0.f, 0.f);
            qa[kk][0] = pf_pack(x00.x, x00.y);
            qa[kk][1] = pf_pack(x10.x, x10.y);
            qa[kk][2] = pf_pack(x01.x, x01.y);
            qa[kk][3] = pf_pack(x11.x, x11.y);
        }
    }
    float o[OT][4];
#pragma unroll
    for (int j = 0; j < OT; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
    const int32_t qp0 = p0 + rw, qp1 = qp0 + 8; /* the rows' positions */
    const int32_t last = p0 + min(q0 + PF_BQ, n) - 1; /* the block's last query position */
    int32_t lo = 0;
    if (a.n_swa > 0) lo = max(0, p0 + q0 - a.n_swa + 1);
    lo -= lo % PF_BK;
    /* split-K over the keys (gridDim.z splits): this block's whole tiles of [lo, last] */
    const int ns = (int)gridDim.z, z = (int)blockIdx.z;
    int32_t kend = last;
    if (ns > 1) {
        const int32_t tiles = (last - lo) / PF_BK + 1, per = (tiles + ns - 1) / ns;
        kend = min(last, lo + (z + 1) * per * PF_BK - 1);
        lo += z * per * PF_BK;
    }
    const int64_t ks_ = (int64_t)a.n_kv * HD; /* cache row stride (hd_k == hd_v) */
    const int64_t sbase = PG ? 0 : (int64_t)a.prefill_seq * a.n_ctx; /* unpaged: the sequence's first row */
    const __half *kc = (const __half *)a.kc + sbase * ks_ + (int64_t)kvh * HD;
    const __half *vc = (const __half *)a.vc + sbase * ks_ + (int64_t)kvh * HD;
    auto krow = [&](int32_t p) -> int64_t { return PG ? cll_cu_kv_cell(a.map, a.n_ctx, a.prefill_seq, p) : p; };
    const float sc = a.scale;
    constexpr int CH = HD / 8; /* 16-byte chunks per cell */
    /* tile k0's K and V rows into stage st (one commit group) */
    auto issue = [&](int32_t k0, int st) {
        __half *kd = pf_smem + st * 2 * TILE, *vd = kd + TILE;
        for (int i = threadIdx.x; i < PF_BK * CH; i += 128) {
            const int kr = i / CH, c = (i % CH) * 8;
            const int32_t kp = k0 + kr;
            const bool ok = kp <= kend && kp < a.n_ctx;
            const int64_t ro = ok ? krow(kp) * ks_ + c : 0;
            pf_cp16(kd + kr * LD + c, kc + ro, ok);
            pf_cp16(vd + kr * LD + c, vc + ro, ok);
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    };
    if (lo <= kend) issue(lo, 0);
    int st = 0;
    for (int32_t k0 = lo; k0 <= kend; k0 += PF_BK, st ^= 1) {
        __syncthreads(); /* the previous tile's readers are done with the other stage */
        if (k0 + PF_BK <= kend) {
            issue(k0 + PF_BK, st ^ 1);
            asm volatile("cp.async.wait_group 1;\n" ::: "memory");
        } else {
            asm volatile("cp.async.wait_group 0;\n" ::: "memory");
        }
        __syncthreads(); /* every thread's copies of this tile have landed */
        const __half *ks = pf_smem + st * 2 * TILE, *vs = ks + TILE;
        /* S = Q K^T: 8 n8-tiles of keys */
        float s[PF_BK / 8][4];
#pragma unroll
        for (int j = 0; j < PF_BK / 8; j++) {
            s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
            const __half *kr = ks + (j * 8 + g) * LD + 2 * t;
#pragma unroll
            for (int kk = 0; kk < KT; kk++)
                pf_mma(s[j], qa[kk], *(const uint32_t *)(kr + kk * 16), *(const uint32_t *)(kr + kk * 16 + 8));
        }
        /* mask, scale, row max */
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int j = 0; j < PF_BK / 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int32_t kp = k0 + j * 8 + 2 * t + (e & 1);
                const int32_t qp = e < 2 ? qp0 : qp1;
                const bool ok = kp <= qp && (a.n_swa <= 0 || kp > qp - a.n_swa);
                const float v = ok ? s[j][e] * sc : -INFINITY;
                s[j][e] = v;
                if (e < 2) mx0 = fmaxf(mx0, v);
                else mx1 = fmaxf(mx1, v);
            }
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
        const float b0 = n0 == -INFINITY ? 0.0f : n0, b1 = n1 == -INFINITY ? 0.0f : n1;
        const float al0 = expf(m0 - b0), al1 = expf(m1 - b1); /* m -inf: 0 */
        m0 = n0;
        m1 = n1;
        float rs0 = 0.0f, rs1 = 0.0f;
#pragma unroll
        for (int j = 0; j < PF_BK / 8; j++) {
            s[j][0] = expf(s[j][0] - b0);
            s[j][1] = expf(s[j][1] - b0);
            s[j][2] = expf(s[j][2] - b1);
            s[j][3] = expf(s[j][3] - b1);
            rs0 += s[j][0] + s[j][1];
            rs1 += s[j][2] + s[j][3];
        }
        l0 = l0 * al0 + rs0; /* per-lane partial sums; the quad sums them at the end */
        l1 = l1 * al1 + rs1;
#pragma unroll
        for (int j = 0; j < OT; j++) {
            o[j][0] *= al0;
            o[j][1] *= al0;
            o[j][2] *= al1;
            o[j][3] *= al1;
        }
        /* O += P V: P (16 x 64 keys) from the S accumulators, V^T rows from vt */
#pragma unroll
        for (int kk = 0; kk < PF_BK / 16; kk++) {
            uint32_t pa[4];
            pa[0] = pf_pack(s[2 * kk][0], s[2 * kk][1]);
            pa[1] = pf_pack(s[2 * kk][2], s[2 * kk][3]);
            pa[2] = pf_pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
            pa[3] = pf_pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
            for (int j = 0; j < OT; j++) {
                /* lanes 0-7 address keys kk*16+0..7, lanes 8-15 keys +8..15 (dims j*8..j*8+7); the
                 * transposed load gives each lane V[k0+2t][d0+g], V[k0+2t+1][d0+g] (b0) and +8 (b1) */
                const __half *vr = vs + (kk * 16 + (lane & 15)) * LD + j * 8;
                uint32_t b0, b1;
                asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                             : "=r"(b0), "=r"(b1)
                             : "r"((uint32_t)__cvta_generic_to_shared(vr)));
                pf_mma(o[j], pa, b0, b1);
            }
        }
    }
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    if (ns > 1) { /* the split's partial: unnormalized O, its max and sum (m -inf, l 0: no key of the row) */
        float *p0r = a.part + (((int64_t)rw * a.n_head + h) * ns + z) * (HD + 2); /* row rw's entry; rw + 8's: */
        float *p1r = p0r + (int64_t)8 * a.n_head * ns * (HD + 2);
#pragma unroll
        for (int j = 0; j < OT; j++) {
            const int c = j * 8 + 2 * t;
            if (rw < n) *(float2 *)(p0r + c) = make_float2(o[j][0], o[j][1]);
            if (rw + 8 < n) *(float2 *)(p1r + c) = make_float2(o[j][2], o[j][3]);
        }
        if (t == 0) {
            if (rw < n) *(float2 *)(p0r + HD) = make_float2(m0, l0);
            if (rw + 8 < n) *(float2 *)(p1r + HD) = make_float2(m1, l1);
        }
        return;
    }
    const float i0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, i1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
    const int64_t row = (int64_t)a.n_head * HD;
#pragma unroll
    for (int j = 0; j < OT; j++) {
        const int c = h * HD + j * 8 + 2 * t;
        const float2 v0 = make_float2(o[j][0] * i0, o[j][1] * i0), v1 = make_float2(o[j][2] * i1, o[j][3] * i1);
        if (rw < n) *(float2 *)(a.out + (int64_t)rw * row + c) = v0;
        if (rw + 8 < n) *(float2 *)(a.out + (int64_t)(rw + 8) * row + c) = v1;
        if (a.outh) { /* c even: c and c + 1 are neighbours in either order */
            const int64_t p = a.outh_plain ? c : (c & ~31) + cll_cu_fused_xpos(c & 31);
            if (rw < n) pf_store_h2((uint16_t *)a.outh + (int64_t)rw * row + p, v0);
            if (rw + 8 < n) pf_store_h2((uint16_t *)a.outh + (int64_t)(rw + 8) * row + p, v1);
        }
    }
}

/* the splits' partials of one (row, head) merged: O = sum_z O_z e^(m_z - M) / sum_z l_z e^(m_z - M), M the
 * largest m_z (splits with no key of the row, m -inf, weigh nothing); a thread a dimension */
template <int HD> __global__ static void __launch_bounds__(HD) attn_prefill_merge(cll_cu_attn_args a, int ns) {
    cll_pdl_wait();
    cll_pdl_trigger();
    const int64_t r = blockIdx.x;
    const int h = blockIdx.y, d = threadIdx.x;
    const float *p = a.part + (r * a.n_head + h) * ns * (HD + 2);
    float M = -INFINITY;
    for (int z = 0; z < ns; z++) M = fmaxf(M, p[z * (HD + 2) + HD]);
    float L = 0.0f, O = 0.0f;
    if (M != -INFINITY)
        for (int z = 0; z < ns; z++) {
            const float mz = p[z * (HD + 2) + HD];
            if (mz == -INFINITY) continue;
            const float w = expf(mz - M);
            L += p[z * (HD + 2) + HD + 1] * w;
            O += p[z * (HD + 2) + d] * w;
        }
    const float v = L > 0.0f ? O / L : 0.0f;
    const int64_t c = (int64_t)h * HD + d;
    a.out[r * (int64_t)a.n_head * HD + c] = v;
    if (a.outh)
        ((uint16_t *)a.outh)[r * (int64_t)a.n_head * HD + (a.outh_plain ? c : (c & ~31) + cll_cu_fused_xpos((int)(c & 31)))] =
            cll_f2h(v);
}

bool cll_cu_attention_prefill_ok(const cll_cu_attn_args *a, int64_t n) {
    static int off = -1; /* process-wide setting read once; not state */
    if (off < 0) {
        const char *e = getenv("CLLAMA_CUDA_ATTN_PREFILL_TC");
        off = e && e[0] == '0';
    }
    return !off && n > 1 && n <= INT32_MAX / 2 && a->prefill_contig && a->kv_f16 && a->hd_k == a->hd_v &&
           (a->hd_k == 64 || a->hd_k == 128) && a->n_kv > 0 && a->n_head % a->n_kv == 0 && !a->fuse_rope &&
           a->ld_q % 2 == 0;
}

/* the kernel with its two stages of dynamic shared memory (the attribute set on first use) */
template <int HD, bool PG> static cudaError_t pf_launch(dim3 g, cudaStream_t s, const cll_cu_attn_args *a, int32_t n) {
    constexpr size_t SMEM = 2 * 2 * PF_BK * (HD + 8) * sizeof(__half);
    static int opened[64]; /* per device */
    CLL_CU_RET(cll_cu_open_smem(opened, attn_prefill_kernel<HD, PG>, (int)SMEM));
    return cll_cu_launch(attn_prefill_kernel<HD, PG>, g, dim3(128), SMEM, s, *a, n);
}

cudaError_t cll_cu_attention_prefill(const cll_cu_attn_args *a, int64_t n, cudaStream_t s) {
    if (!cll_cu_attention_prefill_ok(a, n)) return cudaErrorInvalidValue;
    if (a->outh && !a->outh_plain && ((int64_t)a->n_head * a->hd_v) % 32) return cudaErrorInvalidValue;
    /* split-K over the keys when the grid is small next to the SMs and the keys many (a chunk deep in
     * its prompt); CLLAMA_CUDA_ATTN_PREFILL_SPLITS=N forces N (1: none) for A/B runs */
    static int c_splits = -2;
    const int env = cll_cu_env_nonneg(&c_splits, "CLLAMA_CUDA_ATTN_PREFILL_SPLITS");
    int ns = a->pf_splits > 0 ? a->pf_splits : env > 0 ? env
                                             : cll_cu_attn_prefill_splits(n, a->n_head, (int64_t)a->prefill_p0 + n,
                                                                          a->part_cap, cll_cu_sm_count());
    if (!a->part || (int64_t)ns * n * a->n_head > a->part_cap) ns = 1;
    const dim3 g((unsigned)cll_cdiv(n, PF_BQ), (unsigned)a->n_head, (unsigned)ns);
    const bool pg = a->map.blk != NULL;
    cudaError_t e;
    if (a->hd_k == 64) e = pg ? pf_launch<64, true>(g, s, a, (int32_t)n) : pf_launch<64, false>(g, s, a, (int32_t)n);
    else e = pg ? pf_launch<128, true>(g, s, a, (int32_t)n) : pf_launch<128, false>(g, s, a, (int32_t)n);
    CLL_CU_RET(e);
    if (ns > 1) {
        const dim3 gm((unsigned)n, (unsigned)a->n_head);
        e = a->hd_k == 64 ? cll_cu_launch(attn_prefill_merge<64>, gm, dim3(64), 0, s, *a, ns)
                          : cll_cu_launch(attn_prefill_merge<128>, gm, dim3(128), 0, s, *a, ns);
        CLL_CU_RET(e);
    }
    if (a->outq) {
        const int64_t row = (int64_t)a->n_head * a->hd_v;
        return cll_cu_quantize_rows_q8(a->out, row, n, row, a->outq, s);
    }
    return cudaSuccess;
}
