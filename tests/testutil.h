/* testutil: helpers for the cmocka tests — where the shared oracle data is, file reading. */
#ifndef CLL_TESTUTIL_H
#define CLL_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

/* $CLLAMA_SHARED or the configure-time default; path joined into a static buffer */
const char *tu_shared(const char *rel);
/* read a whole file (malloc'd, NUL-terminated); NULL on failure; *len if non-NULL */
char *tu_read_file(const char *path, size_t *len);
/* what fn(arg) writes to stderr (fd 2 redirected to a temporary file while it runs): malloc'd,
 * NUL-terminated; *len if non-NULL */
char *tu_stderr_of(void (*fn)(void *), void *arg, size_t *len);
/* print a visible SKIP line and exit 77 (ctest SKIP_RETURN_CODE) */
void tu_skip(const char *why);
/* inside one cmocka test: say why on stdout and skip that test only (cmocka's skip(); tu_skip would end
 * the whole binary with 77 and drop the tests after it); main() takes tu_skip */
#define tu_skip_test(why)                        \
    do {                                          \
        printf("SKIP: %s\n", (why));             \
        fflush(stdout);                           \
        skip();                                   \
    } while (0)

#endif
