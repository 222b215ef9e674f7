/* core: status codes, the per-thread last error, logging, file mapping, clocks.
 * Owns nothing long-lived except the thread-local error buffer.
 * Rule: library code reports failure by returning a cll_status and setting the
 * last error with cll_err(); it never exits or aborts on bad input. */
#ifndef CLL_CORE_H
#define CLL_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Numeric values are shared with the public cllama_status (include/cllama.h). */
typedef enum {
    CLL_OK = 0,
    CLL_ERR_IO = 1,          /* cannot open/read/map/write a file */
    CLL_ERR_FORMAT = 2,      /* malformed or hostile input (GGUF, JSON, ...) */
    CLL_ERR_UNSUPPORTED = 3, /* valid input we do not handle (arch, type, ...) */
    CLL_ERR_NOMEM = 4,
    CLL_ERR_ARG = 5,         /* caller passed a bad argument */
    CLL_ERR_RANGE = 6,       /* buffer too small / index out of range / context full */
    CLL_ERR_DEVICE = 7,      /* GPU / driver failure */
    CLL_ERR_INTERNAL = 8,
    CLL_ERR_KV_FULL = 9,     /* a paged KV pool has no free block for a sequence (retry later) */
} cll_status;

const char *cll_status_str(cll_status st);

/* Set the calling thread's last error (printf-style) and return st, so
 * `return cll_err(CLL_ERR_FORMAT, "tensor %s: ...", name);` reads naturally. */
cll_status cll_err(cll_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix the current last error with more context: "loading X: <old>". */
cll_status cll_err_prefix(cll_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *cll_last_error(void);
void cll_clear_error(void);

/* Logging to stderr. Level from env CLLAMA_LOG (error|warn|info|debug), default warn. */
typedef enum { CLL_LOG_ERROR = 0, CLL_LOG_WARN = 1, CLL_LOG_INFO = 2, CLL_LOG_DEBUG = 3 } cll_log_level;
void cll_log(cll_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cll_log_set_level(cll_log_level lvl);
/* a fallback the user must see whatever CLLAMA_LOG says (a forced kernel ignored, a numerics mode
 * without its row): "cllama: warning: ..." on stderr at every log level */
void cll_log_loud(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
cll_log_level cll_log_get_level(void);

/* Read-only file mapping. */
typedef struct {
    const uint8_t *data;
    size_t size;
} cll_map;
cll_status cll_map_open(const char *path, cll_map *out);
void cll_map_close(cll_map *m);

/* Monotonic clock in seconds. */
double cll_now(void);

/* Overflow-checked size arithmetic: return false on overflow. */
static inline bool cll_mul_ok(uint64_t a, uint64_t b, uint64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool cll_add_ok(uint64_t a, uint64_t b, uint64_t *out) {
    return !__builtin_add_overflow(a, b, out);
}

/* aligned allocation (64-byte, for SIMD); free with cll_afree. */
void *cll_aalloc(size_t bytes);
void cll_afree(void *p);

#endif
