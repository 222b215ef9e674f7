/* cuda/common: what every .cu file of the CUDA driver shares: the C headers it may include
 * (in extern "C"), error plumbing, fp16 helpers and warp reductions.
 * Owns nothing. Rule: a CUDA error becomes a cll_status with file:line at the driver
 * boundary (CLL_CU_TRY); kernels never printf or trap on bad data. */
#ifndef CLL_CUDA_COMMON_CUH
#define CLL_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>

extern "C" {
#include "core/core.h"
#include "cuda/knobs.h"
#include "formats/blocks.h"
#include "formats/formats.h"
}

/* return a cll_status from a failing CUDA runtime call, naming the call and the place */
#define CLL_CU_TRY(call)                                                                                     \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess)                                                                               \
            return cll_err(CLL_ERR_DEVICE, "%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
    } while (0)

/* inside a launcher returning cudaError_t: pass the first failure up */
#define CLL_CU_RET(call)                                                                                     \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) return e_;                                                                    \
    } while (0)

#define CLL_WARP 32

static __device__ __forceinline__ float cll_warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

static __device__ __forceinline__ float cll_warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

static __device__ __forceinline__ float cll_h2f(uint16_t h) { return __half2float(__ushort_as_half(h)); }
static __device__ __forceinline__ uint16_t cll_f2h(float f) { return __half_as_ushort(__float2half_rn(f)); }
/* 32 floats -> f16 (bf16 when bf) at dst, 16-byte aligned: four 16-byte stores */
static __device__ __forceinline__ void cll_store32_half(const float *v, bool bf, void *dst) {
    uint32_t w[16];
#pragma unroll
    for (int i = 0; i < 16; i++) {
        const uint32_t lo = bf ? __bfloat16_as_ushort(__float2bfloat16_rn(v[2 * i])) : cll_f2h(v[2 * i]);
        const uint32_t hi = bf ? __bfloat16_as_ushort(__float2bfloat16_rn(v[2 * i + 1])) : cll_f2h(v[2 * i + 1]);
        w[i] = lo | hi << 16;
    }
    uint4 *d = (uint4 *)dst;
#pragma unroll
    for (int i = 0; i < 4; i++) d[i] = make_uint4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]);
}
static __device__ __forceinline__ float cll_bf2f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }

static inline int64_t cll_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* where element e (0..31) of a 32-value group of X sits in the fused rows' f16 X: lane q of an mma
 * quad reads its 8 values (elements 4q..4q+3, then 16+4q..16+4q+3: the two k16 steps' B words of the
 * nibbles it decodes) as one 16-byte load (cuda/matmul/gemm_fused.cu) */
static __host__ __device__ __forceinline__ int cll_cu_fused_xpos(int e) {
    return 8 * ((e & 15) >> 2) + (e & 3) + (e & 16 ? 4 : 0);
}

/* Programmatic dependent launch (PDL), shared by every kernel of the driver: a kernel launched
 * with cll_cu_launch may be scheduled while the previous kernel drains; it calls cll_pdl_wait()
 * in every thread before it reads anything a previous kernel wrote and before it exits (work
 * that depends on nothing earlier, e.g. weight loads, may come first), so a kernel's completion
 * still implies its predecessors'. cll_pdl_trigger() lets the next kernel launch early: the
 * small kernels call it right after their wait, so the gemv after them is resident and has
 * its first weight loads in flight when they finish. (Triggering before the wait, and gemvs
 * triggering at their start, measured 5% slower on l2-7b Q4_0: 506 vs 532 tok/s.)
 * CLLAMA_CUDA_PDL=0 launches everything plainly. */
static __device__ __forceinline__ void cll_pdl_wait(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
#endif
}

static __device__ __forceinline__ void cll_pdl_trigger(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaTriggerProgrammaticLaunchCompletion();
#endif
}

/* ask L2 for [p, p + bytes) (weights the kernel is about to stream): one bulk request, no
 * registers, no completion to wait for. p and bytes multiples of 16. */
static __device__ __forceinline__ void cll_l2_prefetch(const void *p, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#endif
}

/* block i of n workers: its share of [p, p + bytes) into L2 (one bulk request of a 16-byte
 * multiple; the caller picks which thread) */
static __device__ __forceinline__ void cll_l2_prefetch_share(const void *p, size_t bytes, size_t i, size_t n) {
    if (!p || !bytes || !n) return;
    const size_t slice = ((bytes + n - 1) / n + 15) & ~(size_t)15;
    const size_t off = i * slice;
    if (off >= bytes) return;
    const size_t m = bytes - off < slice ? ((bytes - off + 15) & ~(size_t)15) : slice;
    cll_l2_prefetch((const uint8_t *)p + off, (uint32_t)m);
}

/* a finishing block of a grid of nblk: its share of [p, p + bytes), the next product's weights
 * (thread 0 of the last min(nblk, 264) blocks) */
static __device__ __forceinline__ void cll_l2_prefetch_next(const void *p, size_t bytes) {
    if (!p || !bytes || threadIdx.x != 0 || blockIdx.y != 0) return;
    const unsigned nb = gridDim.x, np = nb < 264 ? nb : 264;
    if (blockIdx.x < nb - np) return;
    cll_l2_prefetch_share(p, bytes, blockIdx.x - (nb - np), np);
}

/* ---- the TMA engine and its completion barriers (sm_90): an mbarrier in shared memory counts the
 * bytes a bulk or tensor copy lands (expect_tx, then the copy's complete_tx); waiting threads poll
 * its phase parity. A tensor map (CUtensorMap, made on the host: cll_cu_attn_tmaps) sits in global
 * memory and is named by its generic address. */
static __device__ __forceinline__ uint32_t cll_smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
static __device__ __forceinline__ void cll_mbar_init(uint64_t *b, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(cll_smem_u32(b)), "r"(count) : "memory");
}
/* after the inits, before another thread (or the TMA engine) uses the barriers; then a block barrier */
static __device__ __forceinline__ void cll_mbar_init_fence(void) {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
static __device__ __forceinline__ void cll_mbar_expect_tx(uint64_t *b, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(cll_smem_u32(b)), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void cll_mbar_wait(uint64_t *b, uint32_t parity) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "WAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        "@!p bra WAIT_%=;\n"
        "}\n" ::"r"(cll_smem_u32(b)),
        "r"(parity)
        : "memory");
}
/* bytes (multiple of 16) from global src to shared dst (both 16-byte aligned), counted on b */
static __device__ __forceinline__ void cll_bulk_g2s(void *dst, const void *src, uint32_t bytes, uint64_t *b) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     cll_smem_u32(dst)),
                 "l"(src), "r"(bytes), "r"(cll_smem_u32(b))
                 : "memory");
}
/* the box of a 2-D tensor map at element x (inner dimension), row y into shared dst (aligned as the
 * map's swizzle needs: 1024 bytes for 128-byte swizzling), counted on b; rows past the tensor read 0 */
static __device__ __forceinline__ void cll_tma_load_2d(void *dst, const void *tmap, int32_t x, int32_t y, uint64_t *b) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
                     cll_smem_u32(dst)),
                 "l"(tmap), "r"(x), "r"(y), "r"(cll_smem_u32(b))
                 : "memory");
}
/* the box of a 2-D tensor map at element x, row y asked of L2 only (no shared memory, no barrier): a
 * later cll_tma_load_2d of the same box finds it there */
static __device__ __forceinline__ void cll_tma_prefetch_2d(const void *tmap, int32_t x, int32_t y) {
    asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];" ::"l"(tmap), "r"(x), "r"(y) : "memory");
}
/* a 32-bit word of global memory read / written relaxed at GPU scope: a poll that sees another block's store
 * without a fence (the store is the only thing the reader uses) */
static __device__ __forceinline__ uint32_t cll_ld_relaxed_u32(const uint32_t *p) {
    uint32_t v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
static __device__ __forceinline__ void cll_st_relaxed_u32(uint32_t *p, uint32_t v) {
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
/* four consecutive words (16-byte aligned) read relaxed at GPU scope: each word is one poll (the vector is
 * not read as a whole; a reader checks every word) */
static __device__ __forceinline__ uint4 cll_ld_relaxed_v4(const uint32_t *p) {
    uint4 v;
    asm volatile("ld.relaxed.gpu.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}
/* a polled slot's empty mark: a NaN no arithmetic writes (the GPU's own NaN is 0x7fffffff) */
#define CLL_CU_SLOT_EMPTY 0xffffffffu
/* the polls a consumer of slots makes before it traps: a slot nobody fills (a bug) then ends the step with a
 * CUDA error instead of hanging the GPU (each poll is an L2 round trip: seconds) */
#define CLL_CU_POLL_MAX (1u << 22)
/* this thread's generic writes to shared memory ordered before later TMA (async proxy) accesses */
static __device__ __forceinline__ void cll_fence_proxy_async_smem(void) {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/* an on/off knob read once per process into *cache (-1: not read yet; not state): default on, off
 * only when NAME starts with '0'; default off (opt-in), on only when it starts with '1' */
static inline bool cll_cu_env_flag(int *cache, const char *name, bool default_on) {
    if (*cache < 0) {
        const char *e = getenv(name);
        *cache = default_on ? !(e && e[0] == '0') : (e && e[0] == '1');
    }
    return *cache != 0;
}

/* a knob that may force either way, read once per process into *cache (-2: not read yet; not
 * state): -1 when NAME is unset or empty (the caller's own pick), else 1 for a nonzero number, 0 */
static inline int cll_cu_env_tri(int *cache, const char *name) {
    if (*cache == -2) {
        const char *e = getenv(name);
        *cache = e && *e ? atoi(e) != 0 : -1;
    }
    return *cache;
}

/* a non-negative integer knob read once per process into *cache (-2: not read yet; not state): -1
 * when NAME is unset, empty or negative (the caller's own pick), else its value (0 included) */
static inline int cll_cu_env_nonneg(int *cache, const char *name) {
    if (*cache == -2) {
        const char *e = getenv(name);
        const int v = e && *e ? atoi(e) : -1;
        *cache = v >= 0 ? v : -1;
    }
    return *cache;
}

/* a positive integer knob read once per process into *cache (-1: not read yet; not state): NAME's
 * value when it is a number > 0, else dflt (>= 0) */
static inline int cll_cu_env_pos_int(int *cache, const char *name, int dflt) {
    if (*cache < 0) {
        const char *e = getenv(name);
        const int v = e ? atoi(e) : 0;
        *cache = v > 0 ? v : dflt;
    }
    return *cache;
}

/* gemvs trigger the next kernel's launch first thing (cuda.gemv_trigger, CLLAMA_CUDA_GEMV_TRIGGER)
 * or only by finishing */
static inline int cll_cu_gemv_early_trigger(void) { return cll_cuda_knobs_now()->gemv_trigger; }

/* bytes of the next product's weights a gemv's last wave prefetches into L2 (cuda.l2next_mb) */
static inline size_t cll_cu_l2next_bytes(void) { return (size_t)cll_cuda_knobs_now()->l2next_mb << 20; }

/* CLLAMA_CUDA_GEMV_F_PRE: the float gemv's PRE form (cll_cu_gemv_f_pre's mode): 0 never, 2 every row
 * that fits whatever the grid (A/B), unset or 1 the default rule */
static inline int cll_cu_gemv_f_pre_mode(void) {
    static int m = -2;
    const int v = cll_cu_env_nonneg(&m, "CLLAMA_CUDA_GEMV_F_PRE");
    return v == 0 || v == 2 ? v : 1;
}

/* the current device's ordinal, the index of the per-device caches below (64 entries); -1 when it
 * cannot be read or is past them */
static inline int cll_cu_dev_index(void) {
    int dev = 0;
    return cudaGetDevice(&dev) == cudaSuccess && dev >= 0 && dev < 64 ? dev : -1;
}

/* a device attribute of the current device, read once per device into cache[64] (constant for the
 * process); fallback when it cannot be read */
static inline int cll_cu_dev_attr(int *cache, cudaDeviceAttr attr, int fallback) {
    const int dev = cll_cu_dev_index();
    if (dev < 0) return fallback;
    if (!cache[dev]) {
        int n = 0;
        cache[dev] = cudaDeviceGetAttribute(&n, attr, dev) == cudaSuccess && n > 0 ? n : -1;
    }
    return cache[dev] > 0 ? cache[dev] : fallback;
}

/* the current device's SM count (132 if it cannot be read) */
static inline int cll_cu_sm_count(void) {
    static int cache[64];
    return cll_cu_dev_attr(cache, cudaDevAttrMultiProcessorCount, 132);
}

/* the current device's opt-in shared memory per block in bytes (0 if it cannot be read) */
static inline int cll_cu_smem_optin(void) {
    static int cache[64];
    return cll_cu_dev_attr(cache, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
}

/* a kernel's dynamic shared memory opened to smem bytes on the current device, and with carveout the
 * largest shared-memory carveout asked for. cudaFuncSetAttribute is a per-device setting: a kernel
 * opened on one GPU is not on the next one of the process (issue 13's tensor parallel), so opened[64]
 * keeps, per device, the most bytes set so far (one cudaGetDevice a call once done) */
template <typename F> static inline cudaError_t cll_cu_open_smem(int *opened, F *k, int smem, bool carveout = false) {
    const int dev = cll_cu_dev_index();
    if (dev < 0) return cudaErrorInvalidDevice;
    if (opened[dev] >= smem && opened[dev] > 0) return cudaSuccess;
    CLL_CU_RET(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    if (carveout)
        CLL_CU_RET(cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout, (int)cudaSharedmemCarveoutMaxShared));
    opened[dev] = smem > 0 ? smem : 1;
    return cudaSuccess;
}

static inline bool cll_cu_pdl_on(void) { return cll_cuda_knobs_now()->pdl != 0; }

template <typename... KArgs, typename... Args>
static inline cudaError_t cll_cu_launch(void (*k)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                                        Args... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = cll_cu_pdl_on() ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, k, ((KArgs)args)...);
}


#endif
