/* cuda/nocuda: the CUDA boundary in a build without nvcc — every call says so, and the
 * cll_cuda_driver table exists so callers need no #ifdef: its model_create answers
 * CLL_ERR_UNSUPPORTED and the rest are safe no-ops. */
#include "cuda/cuda.h"
#include "model/driver.h"

#ifndef CLLAMA_HAVE_CUDA
#define NOT_BUILT "this cllama was built without the CUDA driver (no nvcc at build time)"

bool cll_cuda_built(void) { return false; }
cll_status cll_cuda_device_count(int *n) {
    *n = 0;
    return CLL_OK;
}
cll_status cll_cuda_device_info(int dev, cll_cuda_device *out) {
    (void)dev;
    (void)out;
    return cll_err(CLL_ERR_UNSUPPORTED, NOT_BUILT);
}
cll_status cll_cuda_selftest(int dev) {
    (void)dev;
    return cll_err(CLL_ERR_UNSUPPORTED, NOT_BUILT);
}
cll_status cll_cuda_use_device(int dev) {
    (void)dev;
    return cll_err(CLL_ERR_UNSUPPORTED, NOT_BUILT);
}
bool cll_cuda_host_pinned(const void *p) {
    (void)p;
    return false;
}
const struct cll_kernel_table *cll_cuda_kernel_table(void) { return NULL; }
bool cll_cuda_gemv_tile_pinned(uint32_t type, int layout, int64_t rows, int64_t cols) {
    (void)type, (void)layout, (void)rows, (void)cols;
    return false;
}

static cll_status nc_model_create(const cll_model *m, const cll_driver_model_params *p, cll_driver_model **out) {
    (void)m;
    (void)p;
    if (out) *out = NULL;
    return cll_err(CLL_ERR_UNSUPPORTED, NOT_BUILT);
}
static void nc_model_free(cll_driver_model *dm) { (void)dm; }
static const char *nc_model_desc(const cll_driver_model *dm) {
    (void)dm;
    return "cuda: not built";
}
static cll_status nc_state_create(cll_driver_model *dm, const cll_driver_state_params *p, cll_driver_state **out) {
    (void)dm;
    (void)p;
    if (out) *out = NULL;
    return cll_err(CLL_ERR_UNSUPPORTED, NOT_BUILT);
}
static void nc_state_free(cll_driver_state *s) { (void)s; }
static size_t nc_state_bytes(const cll_driver_state *s) {
    (void)s;
    return 0;
}
static cll_status nc_forward(cll_driver_state *s, const cll_driver_batch *b, cll_driver_out kind, void *out) {
    (void)s;
    (void)b;
    (void)kind;
    (void)out;
    return cll_err(CLL_ERR_UNSUPPORTED, NOT_BUILT);
}
static void nc_counters(const cll_driver_state *s, cll_driver_counters *out) {
    (void)s;
    if (out) *out = (cll_driver_counters){0};
}

const cll_driver cll_cuda_driver = {
    .name = "cuda",
    .model_create = nc_model_create,
    .model_free = nc_model_free,
    .model_desc = nc_model_desc,
    .state_create = nc_state_create,
    .state_free = nc_state_free,
    .state_bytes = nc_state_bytes,
    .forward = nc_forward,
    .counters = nc_counters,
};
#else
typedef int cll_nocuda_unused; /* ISO C forbids an empty translation unit */
#endif
