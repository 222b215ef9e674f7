#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

const char *tu_shared(const char *rel) {
    static _Thread_local char buf[4096];
    const char *base = getenv("CLLAMA_SHARED");
    if (!base || !*base) base = CLLAMA_SHARED_DEFAULT;
    snprintf(buf, sizeof buf, "%s/%s", base, rel);
    return buf;
}

char *tu_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        fclose(f);
        return NULL;
    }
    b[n] = 0;
    fclose(f);
    if (len) *len = (size_t)n;
    return b;
}

char *tu_stderr_of(void (*fn)(void *), void *arg, size_t *len) {
    fflush(stderr);
    const int saved = dup(2);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    assert_true(saved >= 0 && dup2(fileno(tmp), 2) == 2);
    fn(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fseek(tmp, 0, SEEK_END);
    const long n = ftell(tmp);
    rewind(tmp);
    char *b = malloc((size_t)(n > 0 ? n : 0) + 1);
    assert_non_null(b);
    const size_t got = fread(b, 1, (size_t)(n > 0 ? n : 0), tmp);
    b[got] = 0;
    fclose(tmp);
    if (len) *len = got;
    return b;
}

void tu_skip(const char *why) {
    printf("SKIP: %s\n", why);
    fflush(stdout);
    exit(77);
}
