#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>

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

void tu_skip(const char *why) {
    printf("SKIP: %s\n", why);
    fflush(stdout);
    exit(77);
}
