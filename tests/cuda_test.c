/* cuda_test: the CUDA boundary — probe and self-test on every visible device; SKIP
 * (visibly) when this build has no CUDA driver or the machine has no GPU. */
#include <stdio.h>
#include <string.h>

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

int main(void) {
    if (!cll_cuda_built()) tu_skip("cuda_test: built without the CUDA driver");
    int n = 0;
    if (cll_cuda_device_count(&n) != CLL_OK || n == 0) tu_skip("cuda_test: no CUDA device on this machine");
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_devices)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
