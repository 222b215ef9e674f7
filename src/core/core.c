/* core: status strings, thread-local last error, logging, mmap, clock. */
#include "core/core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static _Thread_local char g_err[1024];

const char *cll_status_str(cll_status st) {
    switch (st) {
    case CLL_OK: return "ok";
    case CLL_ERR_IO: return "i/o error";
    case CLL_ERR_FORMAT: return "malformed input";
    case CLL_ERR_UNSUPPORTED: return "unsupported";
    case CLL_ERR_NOMEM: return "out of memory";
    case CLL_ERR_ARG: return "invalid argument";
    case CLL_ERR_RANGE: return "out of range";
    case CLL_ERR_DEVICE: return "device error";
    case CLL_ERR_INTERNAL: return "internal error";
    case CLL_ERR_KV_FULL: return "kv cache full";
    }
    return "unknown status";
}

cll_status cll_err(cll_status st, const char *fmt, ...) {
    /* formatted apart, then copied: an argument may be the current message itself
     * (cll_err(st, "%s: %s", what, cll_last_error())), and vsnprintf into its own source is undefined */
    char buf[sizeof g_err];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    memcpy(g_err, buf, sizeof g_err);
    return st;
}

cll_status cll_err_prefix(cll_status st, const char *fmt, ...) {
    char old[sizeof g_err];
    memcpy(old, g_err, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    char buf[sizeof g_err]; /* as in cll_err: an argument may point into g_err */
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    memcpy(g_err, buf, sizeof g_err);
    /* append ": <old message>" after the prefix, truncating the old message if needed */
    size_t at = n < 0 ? 0 : (size_t)n < sizeof g_err ? (size_t)n : sizeof g_err - 1;
    const char *tail = old[0] ? old : cll_status_str(st);
    size_t room = sizeof g_err - at;
    if (room > 2) {
        g_err[at++] = ':';
        g_err[at++] = ' ';
        room -= 2;
        size_t tl = strlen(tail);
        if (tl >= room) tl = room - 1;
        memcpy(g_err + at, tail, tl);
        g_err[at + tl] = 0;
    }
    return st;
}

const char *cll_last_error(void) { return g_err; }
void cll_clear_error(void) { g_err[0] = 0; }

static int g_level = -1;

static cll_log_level level_from_env(void) {
    const char *e = getenv("CLLAMA_LOG");
    if (!e) return CLL_LOG_WARN;
    if (!strcmp(e, "error")) return CLL_LOG_ERROR;
    if (!strcmp(e, "info")) return CLL_LOG_INFO;
    if (!strcmp(e, "debug")) return CLL_LOG_DEBUG;
    return CLL_LOG_WARN;
}

cll_log_level cll_log_get_level(void) {
    if (g_level < 0) g_level = (int)level_from_env();
    return (cll_log_level)g_level;
}
void cll_log_set_level(cll_log_level lvl) { g_level = (int)lvl; }

void cll_log(cll_log_level lvl, const char *fmt, ...) {
    if ((int)lvl > (int)cll_log_get_level()) return;
    static const char *tag[] = {"error", "warning", "info", "debug"};
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "cllama: %s: %s\n", tag[lvl], line);
}

void cll_log_loud(const char *fmt, ...) {
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "cllama: warning: %s\n", line);
}

cll_status cll_map_open(const char *path, cll_map *out) {
    out->data = NULL;
    out->size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return cll_err(CLL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return cll_err(CLL_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return cll_err(CLL_ERR_IO, "%s: not a regular file", path);
    }
    if (st.st_size == 0) {
        close(fd);
        return cll_err(CLL_ERR_FORMAT, "%s: file is empty", path);
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) return cll_err(CLL_ERR_IO, "%s: cannot map: %s", path, strerror(e));
    out->data = p;
    out->size = (size_t)st.st_size;
    return CLL_OK;
}

void cll_map_close(cll_map *m) {
    if (m && m->data) munmap((void *)m->data, m->size);
    if (m) {
        m->data = NULL;
        m->size = 0;
    }
}

double cll_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void *cll_aalloc(size_t bytes) {
    void *p = NULL;
    if (bytes == 0) bytes = 64;
    bytes = (bytes + 63) & ~(size_t)63;
    if (posix_memalign(&p, 64, bytes) != 0) return NULL;
    return p;
}
void cll_afree(void *p) { free(p); }
