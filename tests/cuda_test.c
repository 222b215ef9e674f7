/* cuda_test: the CUDA boundary — probe and self-test on every visible device; SKIP
 * (visibly) when this build has no CUDA driver or the machine has no GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cllama.h"
#include "cuda/cuda.h"
#include "testutil.h"

static void test_devices(void **state) {
    (void)state;
    int n = -1;
    assert_int_equal(cll_cuda_device_count(&n), CLL_OK);
    assert_true(n >= 1);
    for (int d = 0; d < n; d++) {
        cll_cuda_device info;
        assert_int_equal(cll_cuda_device_info(d, &info), CLL_OK);
        printf("device %d: %s, %d SMs, cc %d.%d, %.1f GiB, driver %d\n", d, info.name, info.sm_count, info.cc_major,
               info.cc_minor, (double)info.mem_bytes / (1 << 30), info.driver_version);
        assert_true(info.sm_count > 0);
        assert_true(info.mem_bytes > 0);
        assert_int_equal(cll_cuda_selftest(d), CLL_OK);
    }
}

/* a model that does not fit fails at load with both sizes in the message, and the process goes
 * on (the same model then loads without the cap); a bad cap value is an argument error */
static void test_does_not_fit(void **state) {
    (void)state;
    const char *path = tu_shared("models/stories260K.gguf");
    cllama_model_params mp = cllama_model_default_params();
    mp.backend = CLLAMA_BACKEND_CUDA;
    cllama_model *m = NULL;
    setenv("CLLAMA_CUDA_MEM_LIMIT_MB", "0.25", 1);
    assert_int_equal(cllama_model_load(path, &mp, &m), CLLAMA_ERR_NOMEM);
    assert_null(m);
    printf("capped load: %s\n", cllama_last_error());
    assert_non_null(strstr(cllama_last_error(), "MiB are free"));
    setenv("CLLAMA_CUDA_MEM_LIMIT_MB", "lots", 1);
    assert_int_equal(cllama_model_load(path, &mp, &m), CLLAMA_ERR_ARG);
    unsetenv("CLLAMA_CUDA_MEM_LIMIT_MB");
    assert_int_equal(cllama_model_load(path, &mp, &m), CLLAMA_OK);
    assert_int_equal(cllama_model_backend(m), CLLAMA_BACKEND_CUDA);
    mp.device = 99; /* no such device: a clear error, not a crash */
    cllama_model *m2 = NULL;
    assert_int_not_equal(cllama_model_load(path, &mp, &m2), CLLAMA_OK);
    assert_null(m2);
    printf("device 99: %s\n", cllama_last_error());
    cllama_model_free(m);
}

int main(void) {
    if (!cll_cuda_built()) tu_skip("cuda_test: built without the CUDA driver");
    int n = 0;
    if (cll_cuda_device_count(&n) != CLL_OK || n == 0) tu_skip("cuda_test: no CUDA device on this machine");
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_devices), cmocka_unit_test(test_does_not_fit)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
