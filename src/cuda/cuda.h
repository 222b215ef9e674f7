/* cuda: the C-side boundary of the CUDA driver (kernels in .cu files behind extern "C").
 * Today it probes the devices for the bench rig's hardware record and the GPU tests;
 * the GPU-resident forward plugs in behind the same boundary.
 * Rule: CUDA errors become cll_status values here, with file:line in the message;
 * a build without nvcc gets the same functions answering "not built". */
#ifndef CLL_CUDA_H
#define CLL_CUDA_H

#include "core/core.h"

typedef struct {
    char name[256];
    int sm_count;
    int cc_major, cc_minor;
    uint64_t mem_bytes;
    int driver_version;  /* e.g. 13000 */
    int runtime_version;
    int clock_khz;       /* max SM clock, 0 if not readable */
    int mem_clock_khz;
    int mem_bus_bits;
} cll_cuda_device;

/* true when this binary was built with the CUDA driver */
bool cll_cuda_built(void);
/* number of visible devices; 0 with CLL_OK when none (or no driver) */
cll_status cll_cuda_device_count(int *n);
cll_status cll_cuda_device_info(int dev, cll_cuda_device *out);
/* run a small kernel on dev and check its result (proves the device really computes) */
cll_status cll_cuda_selftest(int dev);
/* make dev the calling thread's current device (the gates and benches of cuda/gate.h run there) */
cll_status cll_cuda_use_device(int dev);

/* true when p is page-locked host memory the CUDA runtime allocated or registered (what a CUDA
 * context's logits rows must be: the step's copy is then one DMA); false without the driver */
bool cll_cuda_host_pinned(const void *p);

/* the CUDA kernel table (kernels/registry.h rows, backend "cuda": gemv and gemm rows of every
 * served weight format; impl = cll_cu_gemv_impl, see cuda/matmul/matmul.cuh); NULL in a build
 * without the CUDA driver */
struct cll_kernel_table;
const struct cll_kernel_table *cll_cuda_kernel_table(void);
/* an override names the type's int8 tensor-core row for the n9-64 class (cuda/matmul/matmul.cuh
 * cll_cu_gemv_tile_pinned); false without the CUDA driver */
bool cll_cuda_gemv_tile_pinned(uint32_t type, int layout, int64_t rows, int64_t cols);

#endif
