/* cuda/common: what every .cu file of the CUDA driver shares: the C headers it may include
 * (in extern "C"), error plumbing, fp16 helpers and warp reductions.
 * Owns nothing. Rule: a CUDA error becomes a cll_status with file:line at the driver
 * boundary (CLL_CU_TRY); kernels never printf or trap on bad data. */
#ifndef CLL_CUDA_COMMON_CUH
#define CLL_CUDA_COMMON_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "core/core.h"
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
static __device__ __forceinline__ float cll_bf2f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }

static inline int64_t cll_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

#endif
