/* kernels/registry: CPU feature probe, row filtering, lookup by name, token-count classes
 * and the override table. */
#include "kernels/registry.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/formats.h"

#if defined(__x86_64__)
#include <cpuid.h>
static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

uint32_t cll_kernels_cpu_features(void) {
    static _Atomic uint32_t cached = 0xffffffffu;
    uint32_t f = cached;
    if (f != 0xffffffffu) return f;
    f = 0;
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        bool osxsave = c & (1u << 27), fma = c & (1u << 12), f16c = c & (1u << 29), avx = c & (1u << 28);
        uint64_t xcr0 = osxsave ? xgetbv0() : 0;
        bool ymm_os = (xcr0 & 6) == 6, zmm_os = (xcr0 & 0xe6) == 0xe6;
        if (__get_cpuid_max(0, NULL) >= 7) {
            __cpuid_count(7, 0, a, b, c, d);
            bool avx2 = b & (1u << 5), bmi2 = b & (1u << 8);
            bool f512 = b & (1u << 16), dq = b & (1u << 17), bw = b & (1u << 30), vl = b & (1u << 31);
            bool vnni = c & (1u << 11);
            if (avx && avx2 && fma && f16c && bmi2 && ymm_os) f |= CLL_ISA_AVX2;
            if ((f & CLL_ISA_AVX2) && f512 && dq && bw && vl && zmm_os) f |= CLL_ISA_AVX512;
            if ((f & CLL_ISA_AVX512) && vnni) f |= CLL_ISA_VNNI;
        }
    }
#endif
    /* CLLAMA_CPU_ISA caps what dispatch may use (never adds what the CPU lacks): "avx2" runs the
     * AVX2 rows on an AVX-512 box (the AVX2 board measured on one machine), "scalar" none */
    const char *cap = getenv("CLLAMA_CPU_ISA");
    if (cap && *cap) {
        if (!strcmp(cap, "scalar")) f = 0;
        else if (!strcmp(cap, "avx2")) f &= CLL_ISA_AVX2;
        else if (!strcmp(cap, "avx512")) f &= CLL_ISA_AVX2 | CLL_ISA_AVX512;
        else if (strcmp(cap, "native"))
            fprintf(stderr, "cllama: warning: CLLAMA_CPU_ISA=%s is not scalar, avx2, avx512 or native; ignored\n", cap);
    }
    cached = f;
    return f;
}

const char *cll_kernels_isa_str(uint32_t isa, char *buf, size_t cap) {
    if (!isa) {
        snprintf(buf, cap, "scalar");
        return buf;
    }
    snprintf(buf, cap, "%s%s%s", (isa & CLL_ISA_AVX2) && !(isa & CLL_ISA_AVX512) ? "avx2" : "",
             (isa & CLL_ISA_AVX512) ? "avx512" : "", (isa & CLL_ISA_VNNI) ? "vnni" : "");
    return buf;
}

bool cll_kernel_row_supported(const cll_kernel_row *r, const cll_kernel_shape *s) {
    if (r->wtype != s->wtype) return false;
    if ((r->isa & s->features) != r->isa) return false;
    if (r->interleave > 1 && s->rows % r->interleave) return false;
    return r->supports ? r->supports(r, s) : true;
}

bool cll_kernel_shape_tokens_in(const cll_kernel_shape *s, int64_t lo, int64_t hi) {
    return s->n_tokens == 0 || (s->n_tokens >= lo && (hi == 0 || s->n_tokens <= hi));
}

const char *cll_kernels_token_class(int64_t n) {
    return n <= 0 ? "" : n == 1 ? "n1" : n <= 8 ? "n2-8" : n <= 64 ? "n9-64" : "n65+";
}

static const char *op_name(uint32_t op) {
    return op == CLL_KOP_GEMV ? "gemv" : op == CLL_KOP_GEMM ? "gemm" : op == CLL_KOP_MOE ? "moe" : "matmul";
}

const char *cll_kernels_site(const cll_kernel_table *t, uint32_t op, uint32_t wtype, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/%s/%s", t->backend, op_name(op), cll_type_name(wtype));
    return buf;
}

const char *cll_kernels_site_class(const cll_kernel_table *t, uint32_t op, uint32_t wtype, int64_t n_tokens,
                                   char *buf, size_t cap) {
    if (n_tokens <= 0) return cll_kernels_site(t, op, wtype, buf, cap);
    snprintf(buf, cap, "%s/%s/%s/%s", t->backend, op_name(op), cll_type_name(wtype), cll_kernels_token_class(n_tokens));
    return buf;
}

const cll_kernel_row *cll_kernels_find(const cll_kernel_table *t, const char *name) {
    if (!t || !name) return NULL;
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->rows[i].name, name)) return &t->rows[i];
    return NULL;
}

/* ---- overrides ------------------------------------------------------------------ */

#define MAX_OVERRIDES 64
#define MAX_WARNED 64
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char site[64];
    char name[64];
} g_ovr[MAX_OVERRIDES];
static int g_n_ovr;
static char g_warned[MAX_WARNED][160];
static int g_n_warned;

cll_status cll_kernels_set_override(const char *site, const char *name) {
    if (!site || strlen(site) >= 64 || (name && strlen(name) >= 64))
        return cll_err(CLL_ERR_ARG, "kernel override: site/name too long or missing");
    pthread_mutex_lock(&g_mu);
    int i;
    for (i = 0; i < g_n_ovr; i++)
        if (!strcmp(g_ovr[i].site, site)) break;
    if (!name) {
        if (i < g_n_ovr) g_ovr[i] = g_ovr[--g_n_ovr];
    } else if (i < g_n_ovr) {
        snprintf(g_ovr[i].name, sizeof g_ovr[i].name, "%s", name);
    } else if (g_n_ovr < MAX_OVERRIDES) {
        snprintf(g_ovr[i].site, sizeof g_ovr[i].site, "%s", site);
        snprintf(g_ovr[i].name, sizeof g_ovr[i].name, "%s", name);
        g_n_ovr++;
    } else {
        pthread_mutex_unlock(&g_mu);
        return cll_err(CLL_ERR_RANGE, "kernel override: table full (%d sites)", MAX_OVERRIDES);
    }
    pthread_mutex_unlock(&g_mu);
    return CLL_OK;
}

void cll_kernels_clear_overrides(void) {
    pthread_mutex_lock(&g_mu);
    g_n_ovr = 0;
    pthread_mutex_unlock(&g_mu);
}

/* one loud line per distinct message */
static void warn_once(const char *msg) {
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_n_warned; i++)
        if (!strcmp(g_warned[i], msg)) {
            pthread_mutex_unlock(&g_mu);
            return;
        }
    if (g_n_warned < MAX_WARNED) snprintf(g_warned[g_n_warned++], sizeof g_warned[0], "%s", msg);
    pthread_mutex_unlock(&g_mu);
    cll_log_loud("%s", msg);
}

static const cll_kernel_row *find_named(const cll_kernel_table *t, const char *name, size_t len) {
    for (size_t i = 0; i < t->n; i++)
        if (strlen(t->rows[i].name) == len && !strncmp(t->rows[i].name, name, len)) return &t->rows[i];
    return NULL;
}

/* a CLLAMA_KERNEL entry's shape scope: "name@ROWSxCOLS" forces the row only on weights of that shape (one
 * product of a model, e.g. the 7B down product, 4096x11008), a plain "name" on every shape; false with a
 * warning for a scope that is not two positive integers */
static bool env_scope(const char *p, size_t len, size_t *name_len, int64_t *rows, int64_t *cols) {
    const char *at = memchr(p, '@', len);
    *name_len = at ? (size_t)(at - p) : len;
    *rows = *cols = 0;
    if (!at) return true;
    char *e = NULL, *e2 = NULL; /* the entry ends at p + len (a ',' or the string's end), so strtoll stops there */
    const long long r = strtoll(at + 1, &e, 10);
    const long long c = e != at + 1 && *e == 'x' ? strtoll(e + 1, &e2, 10) : 0;
    if (e2 == p + len && e2 != e + 1 && r > 0 && c > 0) {
        *rows = r, *cols = c;
        return true;
    }
    char msg[160];
    snprintf(msg, sizeof msg, "CLLAMA_KERNEL entry '%.*s': a shape scope is @ROWSxCOLS (e.g. @4096x11008); ignored",
             (int)(len < 100 ? len : 100), p);
    warn_once(msg);
    return false;
}

/* the row forced at this site, if any: an explicit override of the site's token-count
 * class (csite, may be NULL), then of the plain site, then CLLAMA_KERNEL */
/* *whole_site: the override named the site without a token class (a pin or crown at e.g.
 * cuda/gemv/q4_K), not the class itself nor CLLAMA_KERNEL */
static const cll_kernel_row *forced_row(const cll_kernel_table *t, uint32_t op, const cll_kernel_shape *s,
                                        const char *site, const char *csite, bool *whole_site) {
    const uint32_t wtype = s->wtype;
    const cll_kernel_row *r = NULL;
    *whole_site = false;
    pthread_mutex_lock(&g_mu);
    for (int pass = csite ? 0 : 1; pass < 2 && !r; pass++) {
        const char *want = pass == 0 ? csite : site;
        for (int i = 0; i < g_n_ovr && !r; i++) {
            if (strcmp(g_ovr[i].site, want)) continue;
            r = find_named(t, g_ovr[i].name, strlen(g_ovr[i].name));
            *whole_site = r && pass == 1;
            if (!r) {
                char msg[160];
                snprintf(msg, sizeof msg, "kernel override %s=%s: no such row; using the default", want,
                         g_ovr[i].name);
                pthread_mutex_unlock(&g_mu);
                warn_once(msg);
                pthread_mutex_lock(&g_mu);
            }
        }
    }
    pthread_mutex_unlock(&g_mu);
    if (r) return r;
    const char *env = getenv("CLLAMA_KERNEL");
    if (!env || !*env) return NULL;
    for (const char *p = env; *p;) {
        size_t len = strcspn(p, ","), nl = 0;
        int64_t rows = 0, cols = 0;
        const bool scoped_ok = len && env_scope(p, len, &nl, &rows, &cols);
        const cll_kernel_row *c = scoped_ok && nl ? find_named(t, p, nl) : NULL;
        if (!c && scoped_ok) {
            char msg[160];
            snprintf(msg, sizeof msg, "CLLAMA_KERNEL names '%.*s', which is no %s kernel row; ignored", (int)nl,
                     p, t->backend);
            warn_once(msg);
        }
        if (c && c->wtype == wtype && (c->op & op) && (!rows || (s->rows == rows && s->cols == cols))) return c;
        p += len;
        if (*p == ',') p++;
    }
    return NULL;
}

/* ---- numerics scope -------------------------------------------------------------- */

static _Thread_local char g_numerics[24];

void cll_kernels_numerics_scope(const char *tag) {
    snprintf(g_numerics, sizeof g_numerics, "%s", tag ? tag : "");
}

/* the first supported row of this op carrying "numerics=<scope tag>" in its params */
static const cll_kernel_row *numerics_row(const cll_kernel_table *t, uint32_t op, const cll_kernel_shape *s,
                                          int layout) {
    char want[40];
    snprintf(want, sizeof want, "numerics=%s", g_numerics);
    for (size_t i = 0; i < t->n; i++) {
        const cll_kernel_row *r = &t->rows[i];
        if (!(r->op & op) || (layout >= 0 && r->layout != layout) || !cll_kernel_row_supported(r, s)) continue;
        if (r->params && strstr(r->params, want)) return r;
    }
    return NULL;
}

const cll_kernel_row *cll_kernels_default(const cll_kernel_table *t, uint32_t op, const cll_kernel_shape *s,
                                          int layout) {
    const cll_kernel_row *any = NULL;
    for (size_t i = 0; i < t->n; i++) {
        const cll_kernel_row *r = &t->rows[i];
        if (!(r->op & op) || (layout >= 0 && r->layout != layout) || !cll_kernel_row_supported(r, s)) continue;
        if (r->is_default) return r;
        if (!any) any = r;
    }
    return any;
}

const cll_kernel_row *cll_kernels_select(const cll_kernel_table *t, uint32_t op, const cll_kernel_shape *s,
                                         int layout, bool *forced) {
    char site[64], csite[80];
    cll_kernels_site(t, op, s->wtype, site, sizeof site);
    if (s->n_tokens > 0) cll_kernels_site_class(t, op, s->wtype, s->n_tokens, csite, sizeof csite);
    if (forced) *forced = false;
    if (g_numerics[0]) {
        const cll_kernel_row *r = numerics_row(t, op, s, layout);
        if (r) {
            if (forced) *forced = true;
            return r;
        }
        char msg[160];
        snprintf(msg, sizeof msg, "numerics=%s: no %s row reproduces it; using the usual row", g_numerics,
                 site);
        warn_once(msg);
    }
    bool whole_site = false;
    const cll_kernel_row *f = forced_row(t, op, s, site, s->n_tokens > 0 ? csite : NULL, &whole_site);
    if (f) {
        if ((f->op & op) && cll_kernel_row_supported(f, s) && (layout < 0 || f->layout == layout)) {
            if (forced) *forced = true;
            return f;
        }
        /* a decode row pinned at the whole site (a tune crown, the serving races' pins) and asked
         * about a batch's token class: that class keeps its default, quietly (not a stale pin) */
        cll_kernel_shape one = *s;
        one.n_tokens = 1;
        if (whole_site && s->n_tokens > 1 && (f->op & op) && cll_kernel_row_supported(f, &one) &&
            (layout < 0 || f->layout == layout)) {
            cll_log(CLL_LOG_DEBUG, "kernel %s pinned at %s serves decode; %s keeps its default", f->name, site,
                    cll_kernels_token_class(s->n_tokens));
            return cll_kernels_default(t, op, s, layout);
        }
        char msg[160], ntok[32] = "";
        if (s->n_tokens > 0) snprintf(ntok, sizeof ntok, ", n_tokens %lld", (long long)s->n_tokens);
        snprintf(msg, sizeof msg, "forced kernel %s does not support %s (%lld x %lld%s%s); using the default",
                 f->name, site, (long long)s->rows, (long long)s->cols, ntok,
                 layout >= 0 && f->layout != layout ? ", other weight layout" : "");
        warn_once(msg);
    }
    return cll_kernels_default(t, op, s, layout);
}
