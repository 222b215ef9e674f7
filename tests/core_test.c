/* core_test: last-error formatting (incl. prefix chaining and truncation), mmap errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "testutil.h"

static void test_err_and_prefix(void **state) {
    (void)state;
    assert_int_equal(cll_err(CLL_ERR_FORMAT, "tensor %s: bad", "x"), CLL_ERR_FORMAT);
    assert_string_equal(cll_last_error(), "tensor x: bad");
    assert_int_equal(cll_err_prefix(CLL_ERR_FORMAT, "loading %s", "m.gguf"), CLL_ERR_FORMAT);
    assert_string_equal(cll_last_error(), "loading m.gguf: tensor x: bad");
    cll_clear_error();
    cll_err_prefix(CLL_ERR_IO, "reading");
    assert_string_equal(cll_last_error(), "reading: i/o error");
}

static void test_prefix_truncates(void **state) {
    (void)state;
    char big[3000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    cll_err(CLL_ERR_FORMAT, "%s", big);
    assert_true(strlen(cll_last_error()) < 1024);
    cll_err_prefix(CLL_ERR_FORMAT, "%s", big); /* prefix alone overflows: stays bounded */
    assert_true(strlen(cll_last_error()) < 1024);
    cll_err(CLL_ERR_FORMAT, "%s", big);
    cll_err_prefix(CLL_ERR_FORMAT, "pre");
    assert_memory_equal(cll_last_error(), "pre: aaa", 8);
    assert_true(strlen(cll_last_error()) == 1023);
}

/* a message built from the current one (runner.c's from_api: "%s: %s", what, cll_last_error())
 * must read the old text, not the half-written new one (it printed "x: x: uda/driver.cu:334") */
static void test_err_from_itself(void **state) {
    (void)state;
    cll_err(CLL_ERR_DEVICE, "src/cuda/driver.cu:334: product(): invalid configuration argument");
    cll_err(CLL_ERR_DEVICE, "%s: %s", "batched decode", cll_last_error());
    assert_string_equal(cll_last_error(), "batched decode: src/cuda/driver.cu:334: product(): invalid configuration argument");
    cll_err_prefix(CLL_ERR_DEVICE, "%s", cll_last_error());
    assert_string_equal(cll_last_error(), "batched decode: src/cuda/driver.cu:334: product(): invalid configuration argument: "
                                          "batched decode: src/cuda/driver.cu:334: product(): invalid configuration argument");
}

static void test_map_errors(void **state) {
    (void)state;
    cll_map m;
    assert_int_equal(cll_map_open("/nonexistent/file.gguf", &m), CLL_ERR_IO);
    assert_non_null(strstr(cll_last_error(), "/nonexistent/file.gguf"));
    assert_int_equal(cll_map_open("/", &m), CLL_ERR_IO);
    char path[] = "/tmp/cll_core_test_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(cll_map_open(path, &m), CLL_ERR_FORMAT); /* empty file */
    assert_int_equal(write(fd, "GGUF", 4), 4);
    close(fd);
    assert_int_equal(cll_map_open(path, &m), CLL_OK);
    assert_int_equal(m.size, 4);
    assert_memory_equal(m.data, "GGUF", 4);
    cll_map_close(&m);
    assert_null(m.data);
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_err_and_prefix),
        cmocka_unit_test(test_err_from_itself),
        cmocka_unit_test(test_prefix_truncates),
        cmocka_unit_test(test_map_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
