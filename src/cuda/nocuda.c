/* cuda/nocuda: the CUDA boundary in a build without nvcc — every call says so. */
#include "cuda/cuda.h"
#include "model/driver.h"

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

/* the CUDA driver of a build without nvcc: loading a model for it says why it cannot */
static cll_status nocuda_model_create(const cll_model *m, const cll_driver_model_params *p, cll_driver_model **out) {
    (void)m;
    (void)p;
    *out = NULL;
    return cll_err(CLL_ERR_UNSUPPORTED,
                   "backend cuda: this cllama was built without the CUDA driver (no nvcc at build time); "
                   "rebuild with the CUDA toolkit installed, or use --backend cpu");
}
static void nocuda_model_free(cll_driver_model *dm) { (void)dm; }
static const char *nocuda_model_desc(const cll_driver_model *dm) {
    (void)dm;
    return "";
}
static cll_status nocuda_state_create(cll_driver_model *dm, const cll_driver_state_params *p, cll_driver_state **out) {
    (void)dm;
    (void)p;
    *out = NULL;
    return cll_err(CLL_ERR_UNSUPPORTED, "backend cuda: not built");
}
static void nocuda_state_free(cll_driver_state *s) { (void)s; }
static size_t nocuda_state_bytes(const cll_driver_state *s) {
    (void)s;
    return 0;
}
static cll_status nocuda_forward(cll_driver_state *s, const cll_driver_batch *b, cll_driver_out kind, void *out) {
    (void)s;
    (void)b;
    (void)kind;
    (void)out;
    return cll_err(CLL_ERR_UNSUPPORTED, "backend cuda: not built");
}
static void nocuda_counters(const cll_driver_state *s, cll_driver_counters *out) {
    (void)s;
    *out = (cll_driver_counters){0};
}
const cll_driver cll_cuda_driver = {
    .name = "cuda",
    .model_create = nocuda_model_create,
    .model_free = nocuda_model_free,
    .model_desc = nocuda_model_desc,
    .state_create = nocuda_state_create,
    .state_free = nocuda_state_free,
    .state_bytes = nocuda_state_bytes,
    .forward = nocuda_forward,
    .counters = nocuda_counters,
};
#else
typedef int cll_nocuda_unused; /* ISO C forbids an empty translation unit */
#endif
