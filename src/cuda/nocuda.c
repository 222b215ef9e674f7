/* cuda/nocuda: the CUDA boundary in a build without nvcc — every call says so. */
#include "cuda/cuda.h"

#ifndef CLLAMA_HAVE_CUDA
bool cll_cuda_built(void) { return false; }
cll_status cll_cuda_device_count(int *n) {
    *n = 0;
    return CLL_OK;
}
cll_status cll_cuda_device_info(int dev, cll_cuda_device *out) {
    (void)dev;
    (void)out;
    return cll_err(CLL_ERR_UNSUPPORTED, "this cllama was built without the CUDA driver (no nvcc at build time)");
}
cll_status cll_cuda_selftest(int dev) {
    (void)dev;
    return cll_err(CLL_ERR_UNSUPPORTED, "this cllama was built without the CUDA driver (no nvcc at build time)");
}
#else
typedef int cll_nocuda_unused; /* ISO C forbids an empty translation unit */
#endif
