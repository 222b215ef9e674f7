/* cuda/matmul/iq_grids: the i-quant codebooks as device arrays (global memory, read through L1:
 * lanes index them divergently, which __constant__ would serialize), initialized from the same
 * initializer lists as the C tables (formats/iq_grid_data.h), so the two cannot drift.
 * Rule: cll_cu_iq_tables_check() (gemv_iq.cu) still compares them on the device and the gate runs
 * it. Included only by gemv_iq.cu (one copy per TU). */
#ifndef CLL_CUDA_MATMUL_IQ_GRIDS_CUH
#define CLL_CUDA_MATMUL_IQ_GRIDS_CUH
#include <stdint.h>

#include "formats/iq_grid_data.h"

static __device__ const uint64_t cll_cu_iq2xxs_grid[256] = CLL_IQ2XXS_GRID_DATA;
static __device__ const uint64_t cll_cu_iq2xs_grid[512] = CLL_IQ2XS_GRID_DATA;
static __device__ const uint64_t cll_cu_iq2s_grid[1024] = CLL_IQ2S_GRID_DATA;
static __device__ const uint32_t cll_cu_iq3xxs_grid[256] = CLL_IQ3XXS_GRID_DATA;
static __device__ const uint32_t cll_cu_iq3s_grid[512] = CLL_IQ3S_GRID_DATA;

#endif
