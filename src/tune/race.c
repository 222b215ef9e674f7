/* tune/race: the CPU kernel races (protocol in race.h).
 * Owns the weights, rings and buffers of one site while it races (freed before the next).
 * Rule: gate before timing; paired, interleaved rounds; the noise bar decides whether anything
 * is written. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cpu/matmul.h"
#include "formats/formats.h"
#include "gguf/gguf.h"
#include "tune/race.h"

static uint64_t g_rng = 0x243F6A8885A308D3ull;
static uint64_t rnd(void) {
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float rndn(void) { /* roughly normal: sum of 4 uniforms */
    float s = 0.0f;
    for (int i = 0; i < 4; i++) s += (float)((double)(rnd() >> 11) / 9007199254740992.0) - 0.5f;
    return s * 1.7f;
}

/* ---- sites ---- */

const char *cll_race_site_name(const cll_race_site *s, char *buf, size_t cap) {
    snprintf(buf, cap, "cpu/%s/%s", s->op == CLL_KOP_GEMV ? "gemv" : "gemm", cll_type_name(s->wtype));
    return buf;
}

static int cmp_share(const void *a, const void *b) {
    const double x = ((const cll_race_site *)a)->share, y = ((const cll_race_site *)b)->share;
    return x < y ? 1 : x > y ? -1 : 0;
}

static bool served_type(uint32_t t) { /* a type the CPU table has rows for */
    const cll_kernel_table *tab = cll_cpu_kernel_table();
    for (size_t i = 0; i < tab->n; i++)
        if (tab->rows[i].wtype == t) return true;
    return false;
}

cll_status cll_race_sites(const char *path, const char *pattern, int64_t ov_rows, int64_t ov_cols, cll_race_site **out,
                          int *n) {
    *out = NULL;
    *n = 0;
    cll_race_site tmp[64];
    int nt = 0;
    if (path) {
        cll_gguf *g = NULL;
        cll_status st = cll_gguf_open(path, &g);
        if (st != CLL_OK) return st;
        for (uint64_t i = 0; i < cll_gguf_n_tensors(g); i++) {
            const cll_gguf_tensor *t = cll_gguf_tensor_at(g, i);
            if (t->n_dims != 2 || !served_type(t->type)) continue;
            if (t->name.len >= 10 && !memcmp(t->name.ptr, "token_embd", 10)) continue; /* a row lookup, not a product */
            int k;
            for (k = 0; k < nt; k++)
                if (tmp[k].wtype == t->type) break;
            if (k == nt) {
                if (nt == 64) continue;
                memset(&tmp[nt], 0, sizeof tmp[nt]);
                tmp[nt].wtype = t->type;
                nt++;
            }
            cll_race_site *s = &tmp[k];
            s->share += (double)t->nbytes;
            int j;
            for (j = 0; j < s->n_shapes; j++)
                if (s->shape[j].rows == (int64_t)t->ne[1] && s->shape[j].cols == (int64_t)t->ne[0]) break;
            if (j < s->n_shapes) s->shape[j].count++;
            else if (s->n_shapes < CLL_RACE_MAX_SHAPES) {
                s->shape[j].rows = (int64_t)t->ne[1];
                s->shape[j].cols = (int64_t)t->ne[0];
                s->shape[j].count = 1;
                s->n_shapes++;
            }
        }
        cll_gguf_free(g);
    } else { /* Llama-3.2-1B: q/o 2048x2048, k/v 512x2048, gate/up 8192x2048, down 2048x8192 */
        const uint32_t types[] = {CLL_TYPE_Q4_K, CLL_TYPE_Q4_0, CLL_TYPE_Q6_K, CLL_TYPE_Q5_K, CLL_TYPE_Q8_0, CLL_TYPE_IQ4_XS};
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
            cll_race_site *s = &tmp[nt++];
            memset(s, 0, sizeof *s);
            s->wtype = types[i];
            s->n_shapes = 3;
            s->shape[0].rows = 8192, s->shape[0].cols = 2048, s->shape[0].count = 32;
            s->shape[1].rows = 2048, s->shape[1].cols = 8192, s->shape[1].count = 16;
            s->shape[2].rows = 2048, s->shape[2].cols = 2048, s->shape[2].count = 32;
            s->share = (double)(sizeof types / sizeof types[0] - i);
        }
    }
    /* each type: a decode (gemv) and a prefill (gemm) site */
    cll_race_site *o = (cll_race_site *)calloc((size_t)(2 * nt + 1), sizeof *o);
    if (!o) return cll_err(CLL_ERR_NOMEM, "tune: out of memory");
    int m = 0;
    for (int k = 0; k < nt; k++)
        for (int op = 0; op < 2; op++) {
            cll_race_site s = tmp[k];
            s.op = op == 0 ? CLL_KOP_GEMV : CLL_KOP_GEMM;
            /* shapes most served first */
            for (int a = 0; a < s.n_shapes; a++)
                for (int b = a + 1; b < s.n_shapes; b++)
                    if ((double)s.shape[b].count * (double)s.shape[b].rows * (double)s.shape[b].cols >
                        (double)s.shape[a].count * (double)s.shape[a].rows * (double)s.shape[a].cols) {
                        const __typeof__(s.shape[0]) t = s.shape[a];
                        s.shape[a] = s.shape[b];
                        s.shape[b] = t;
                    }
            if (ov_rows > 0 && ov_cols > 0) {
                s.n_shapes = 1;
                s.shape[0].rows = ov_rows;
                s.shape[0].cols = ov_cols;
                s.shape[0].count = 1;
            }
            char name[96];
            cll_race_site_name(&s, name, sizeof name);
            if (pattern && *pattern && !strstr(name, pattern)) continue;
            o[m++] = s;
        }
    qsort(o, (size_t)m, sizeof *o, cmp_share);
    *out = o;
    *n = m;
    return CLL_OK;
}

/* ---- one site ---- */

#define MAX_ARMS 12
#define GEMM_N 512

typedef struct {
    const cll_kernel_row *row;
    bool broken;
    bool isolated;         /* its gate ran in a child process */
    bool trial;            /* ... with a dispatch at every timed shape (an arm new to the site) */
    char hash[65];         /* cll_tune_row_hash */
    char why[160];
    double t[64];          /* per round: time-weighted sum over the shapes (s per served step) */
} arm_t;

static int64_t llc_bytes(void) {
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    long v = 0;
    char unit = 'K';
    if (f) {
        if (fscanf(f, "%ld%c", &v, &unit) < 1) v = 0;
        fclose(f);
    }
    if (v <= 0) return 32ll << 20;
    return unit == 'M' ? (int64_t)v << 20 : (int64_t)v << 10;
}

/* random weights of type t, rows x cols, finite scales */
static uint8_t *make_weights(uint32_t t, int64_t rows, int64_t cols) {
    const cll_type_traits *tr = cll_type_traits_get(t);
    const size_t rb = (size_t)cll_row_bytes(t, (uint64_t)cols);
    uint8_t *w = (uint8_t *)malloc(rb * (size_t)rows);
    float *f = (float *)malloc(sizeof(float) * (size_t)cols);
    if (!w || !f || !tr || !tr->from_f32) {
        free(w);
        free(f);
        return NULL;
    }
    for (int64_t r = 0; r < rows; r++) {
        const float amp = 0.5f + (float)(r % 5) * 0.25f;
        for (int64_t k = 0; k < cols; k++) f[k] = amp * rndn();
        tr->from_f32(f, w + rb * (size_t)r, cols);
    }
    free(f);
    return w;
}

static cll_kernel_shape shape_of(uint32_t wtype, int64_t rows, int64_t cols, int64_t n) {
    cll_kernel_shape s;
    memset(&s, 0, sizeof s);
    s.wtype = wtype;
    s.rows = rows;
    s.cols = cols;
    s.features = cll_kernels_cpu_features();
    s.n_tokens = n;
    s.device = CLL_KDEVICE_CPU;
    return s;
}

/* y = row(w) x for n tokens; false (why) when the row cannot be prepared */
static bool run_row(const cll_kernel_row *r, cll_pool *pool, const uint8_t *w, int64_t rows, int64_t cols,
                    const float *x, int64_t n, float *y, char *why, size_t cap) {
    cll_cpu_weight *cw = NULL;
    if (cll_cpu_weight_create_row(r, rows, cols, w, &cw) != CLL_OK) {
        snprintf(why, cap, "%s", cll_last_error());
        return false;
    }
    void *scratch = malloc(cll_cpu_matmul_scratch(cw, n) + 64);
    for (int64_t i = 0; i < n * rows; i++) y[i] = NAN;
    cll_cpu_matmul(pool, cw, x, cols, n, y, rows, scratch);
    free(scratch);
    cll_cpu_weight_free(cw);
    return true;
}

/* the gate of one arm at rows x cols over n tokens (race.h, step 1) */
static bool gate_arm(const cll_kernel_row *r, const cll_kernel_row *inc, const cll_kernel_row *ref, cll_pool *pool,
                     uint32_t wtype, int64_t rows, int64_t cols, int64_t n, char *why, size_t cap) {
    const cll_type_traits *tr = cll_type_traits_get(wtype);
    uint8_t *w = make_weights(wtype, rows, cols);
    float *x = (float *)malloc(sizeof(float) * (size_t)(n * cols));
    float *y = (float *)malloc(sizeof(float) * (size_t)(n * rows)), *yr = (float *)malloc(sizeof(float) * (size_t)(n * rows));
    float *yi = (float *)malloc(sizeof(float) * (size_t)(n * rows)), *wf = (float *)malloc(sizeof(float) * (size_t)cols);
    bool ok = false;
    if (!w || !x || !y || !yr || !yi || !wf) {
        snprintf(why, cap, "out of memory");
        goto out;
    }
    for (int64_t i = 0; i < n * cols; i++) x[i] = rndn();
    if (!run_row(r, pool, w, rows, cols, x, n, y, why, cap)) goto out;
    if (!run_row(ref, pool, w, rows, cols, x, n, yr, why, cap)) goto out;
    {
        const size_t rb = (size_t)cll_row_bytes(wtype, (uint64_t)cols);
        int64_t bad = 0, worst = -1;
        double worst_e = 0.0;
        bool control_failed = false;
        for (int64_t row = 0; row < rows; row++) {
            tr->to_f32(w + rb * (size_t)row, wf, cols);
            for (int64_t b = 0; b < n; b++) {
                double mag = 0.0;
                for (int64_t k = 0; k < cols; k++) mag += fabs((double)wf[k] * (double)x[b * cols + k]);
                const float got = y[b * rows + row], want = yr[b * rows + row];
                const double bar = 1e-4 * mag + 1e-30;
                const double e = isnan(got) ? INFINITY : fabs((double)got - (double)want);
                if (!(e <= bar)) bad++;
                if (e / bar > worst_e || worst < 0) worst_e = e / bar, worst = b * rows + row;
                if (row == rows / 2 && b == 0 && !(fabs((double)got - ((double)want + 4.0 * bar)) <= bar))
                    control_failed = true;
            }
        }
        if (bad) {
            snprintf(why, cap, "%lld of %lld outputs off the reference at %lldx%lld n=%lld (worst %.3g of the bar)",
                     (long long)bad, (long long)(rows * n), (long long)rows, (long long)cols, (long long)n, worst_e);
            goto out;
        }
        if (!control_failed) {
            snprintf(why, cap, "poison control passed at %lldx%lld (the bar cannot fail)", (long long)rows, (long long)cols);
            goto out;
        }
    }
    if (r->bit_exact && r != inc) { /* a bit-exact claim is checked, not believed */
        if (!run_row(inc, pool, w, rows, cols, x, n, yi, why, cap)) goto out;
        if (memcmp(y, yi, sizeof(float) * (size_t)(n * rows))) {
            snprintf(why, cap, "declares bit-exact but differs from %s at %lldx%lld n=%lld", inc->name, (long long)rows,
                     (long long)cols, (long long)n);
            goto out;
        }
    }
    ok = true;
out:
    free(w);
    free(x);
    free(y);
    free(yr);
    free(yi);
    free(wf);
    return ok;
}

/* ---- child isolation (issue 12 item 2) ----
 * Every arm's gate runs in a forked child process; an arm new to its site (not in the previous
 * race record of the site with the same source hash) also makes one dispatch at every timed shape
 * there ("trial"), so a kernel that faults only at production sizes is caught too. The child
 * reports through a pipe, one line when it starts an arm ("B a") and one when the arm is done
 * ("R a ok why"). A child that dies by a signal, exits non-zero, or spends longer than the
 * timeout on one arm leaves that arm broken with the reason; a fresh child goes on with the next
 * arm. The timed rounds stay in the parent (one process, ABBA) and time only arms that passed. */

const char *cll_race_sig_name(int sig, char *buf, size_t cap) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGTRAP: return "SIGTRAP";
    case SIGPIPE: return "SIGPIPE";
    }
    snprintf(buf, cap, "signal %d", sig);
    return buf;
}

/* test hook (tests/tune_race_test.sh): CLLAMA_TUNE_TEST_FAULT=VARIANT=WHAT[,...]: does it name
 * (variant, what)? */
bool cll_race_test_fault_is(const char *variant, const char *what) {
    const char *spec = getenv("CLLAMA_TUNE_TEST_FAULT");
    for (const char *p = spec; p && *p;) {
        const size_t len = strcspn(p, ",");
        const char *eq = (const char *)memchr(p, '=', len);
        if (eq && (size_t)(eq - p) == strlen(variant) && !strncmp(p, variant, (size_t)(eq - p)) &&
            len - (size_t)(eq + 1 - p) == strlen(what) && !strncmp(eq + 1, what, strlen(what)))
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

/* VARIANT=segv|hang: that arm raises SIGSEGV, or hangs, in its child (where the gate runs), before
 * its gate */
void cll_race_test_fault(const char *variant) {
    if (cll_race_test_fault_is(variant, "segv")) raise(SIGSEGV);
    if (cll_race_test_fault_is(variant, "hang"))
        for (;;) pause();
}

/* what a child checks: the site's gate shapes and, for trials, its timed shapes */
typedef struct {
    const cll_race_site *s;
    const cll_kernel_row *inc, *ref;
    int64_t gc, n;                          /* gate cols; tokens of the site (1 or GEMM_N) */
    uint8_t *w[CLL_RACE_MAX_SHAPES];        /* trial weights, made on first need (in the child) */
} check_ctx;

/* race.h step 1 for one arm (in the child), then its trial dispatches when asked */
static bool check_arm(check_ctx *c, cll_pool *pool, const cll_kernel_row *r, bool trial, char *why, size_t cap) {
    cll_race_test_fault(r->name);
    const int64_t gr[2] = {64, 40}, gn[2] = {c->n == 1 ? 1 : 33, c->n == 1 ? 1 : 7};
    for (int g = 0; g < 2; g++) {
        cll_kernel_shape sh = shape_of(c->s->wtype, gr[g], c->gc, gn[g]);
        if (!cll_kernel_row_supported(r, &sh)) continue;
        if (!gate_arm(r, c->inc, c->ref, pool, c->s->wtype, gr[g], c->gc, gn[g], why, cap)) return false;
    }
    for (int j = 0; trial && j < c->s->n_shapes; j++) {
        const int64_t rows = c->s->shape[j].rows, cols = c->s->shape[j].cols, n = c->n;
        if (!c->w[j] && !(c->w[j] = make_weights(c->s->wtype, rows, cols))) {
            snprintf(why, cap, "trial at %lldx%lld: out of memory", (long long)rows, (long long)cols);
            return false;
        }
        float *x = (float *)malloc(sizeof(float) * (size_t)(n * cols)), *y = (float *)malloc(sizeof(float) * (size_t)(n * rows));
        bool ok = x && y;
        if (!ok) snprintf(why, cap, "trial at %lldx%lld: out of memory", (long long)rows, (long long)cols);
        for (int64_t i = 0; ok && i < n * cols; i++) x[i] = rndn();
        if (ok) ok = run_row(r, pool, c->w[j], rows, cols, x, n, y, why, cap); /* outputs NaN-poisoned first */
        int64_t bad = 0;
        for (int64_t i = 0; ok && i < n * rows; i++) bad += !isfinite(y[i]);
        if (ok && bad) {
            snprintf(why, cap, "trial at %lldx%lld n=%lld: %lld of %lld outputs not written or not finite", (long long)rows,
                     (long long)cols, (long long)n, (long long)bad, (long long)(n * rows));
            ok = false;
        }
        free(x);
        free(y);
        if (!ok) return false;
    }
    return true;
}

static void child_run(check_ctx *c, arm_t *arms, int from, int na, const bool *trial, int threads, int fd) {
    const struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core); /* a faulting kernel leaves no core file behind */
    cll_pool *pool = NULL;
    if (cll_pool_create(threads, &pool) != CLL_OK) _exit(3);
    for (int a = from; a < na; a++) {
        dprintf(fd, "B %d\n", a);
        char why[160] = "";
        const bool ok = check_arm(c, pool, arms[a].row, trial[a], why, sizeof why);
        for (char *p = why; *p; p++)
            if (*p == '\n' || *p == '\r') *p = ' ';
        dprintf(fd, "R %d %d %s\n", a, ok ? 1 : 0, why);
    }
    _exit(0);
}

pid_t cll_race_fork_piped(int fd[2]) {
    if (pipe(fd)) return -1;
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) {
        const int e = errno;
        close(fd[0]);
        close(fd[1]);
        errno = e;
        return -1;
    }
    close(pid == 0 ? fd[0] : fd[1]);
    return pid;
}

ssize_t cll_race_read_child(int fd, char *dst, size_t cap, double left_s) {
    for (;;) {
        if (left_s <= 0) return -1;
        const double t0 = cll_now();
        struct pollfd pf = {fd, POLLIN, 0};
        const int pr = poll(&pf, 1, (int)(left_s * 1000.0) + 1);
        if (pr < 0 && errno != EINTR) return 0;
        if (pr > 0) {
            const ssize_t got = read(fd, dst, cap);
            if (got > 0) return got;
            if (!(got < 0 && errno == EINTR)) return 0;
        }
        left_s -= cll_now() - t0;
    }
}

/* the gates (and trials) of arms[0..na), each in a child; fills broken / why / isolated */
static cll_status isolate_arms(check_ctx *c, arm_t *arms, int na, const bool *trial, int threads, double timeout_s) {
    if (timeout_s <= 0) timeout_s = 60;
    int next = 0;
    while (next < na) {
        int fd[2];
        const pid_t pid = cll_race_fork_piped(fd);
        if (pid < 0) return cll_err(CLL_ERR_IO, "tune: pipe / fork: %s", strerror(errno));
        if (pid == 0) child_run(c, arms, next, na, trial, threads, fd[1]);
        int cur = -1;
        double started = cll_now();
        char buf[2048];
        size_t bl = 0;
        bool timed_out = false;
        for (;;) {
            const ssize_t got = cll_race_read_child(fd[0], buf + bl, sizeof buf - 1 - bl, timeout_s - (cll_now() - started));
            if (got < 0) {
                timed_out = true;
                break;
            }
            if (got == 0) break; /* the child is gone (or closed its end) */
            bl += (size_t)got;
            buf[bl] = 0;
            char *line = buf, *nl;
            while ((nl = strchr(line, '\n'))) {
                *nl = 0;
                int a = -1, ok = 0, off = 0;
                if (sscanf(line, "B %d", &a) == 1 && line[0] == 'B' && a >= 0 && a < na) {
                    cur = a;
                    started = cll_now();
                } else if (line[0] == 'R' && sscanf(line, "R %d %d %n", &a, &ok, &off) >= 2 && a >= 0 && a < na) {
                    arms[a].isolated = true;
                    if (!ok) {
                        arms[a].broken = true;
                        snprintf(arms[a].why, sizeof arms[a].why, "%s", off > 0 ? line + off : "gate failed");
                    }
                    next = a + 1;
                    cur = -1;
                    started = cll_now();
                }
                line = nl + 1;
            }
            bl = strlen(line);
            memmove(buf, line, bl + 1);
            if (bl == sizeof buf - 1) bl = 0; /* a runaway line: drop it */
        }
        if (timed_out) kill(pid, SIGKILL);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        close(fd[0]);
        if (next >= na) break;
        /* the child failed: the arm it was on (else the next one) is broken, with the reason */
        const int a = cur >= 0 ? cur : next;
        char sb[32];
        arms[a].broken = true;
        arms[a].isolated = true;
        if (timed_out)
            snprintf(arms[a].why, sizeof arms[a].why, "timed out after %.0f s in its child (gate%s); killed", timeout_s,
                     trial[a] ? " and trial" : "");
        else if (WIFSIGNALED(status))
            snprintf(arms[a].why, sizeof arms[a].why, "killed by %s in its child (gate%s)",
                     cll_race_sig_name(WTERMSIG(status), sb, sizeof sb), trial[a] ? " and trial" : "");
        else
            snprintf(arms[a].why, sizeof arms[a].why, "its child (gate%s) exited with status %d",
                     trial[a] ? " and trial" : "", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        next = a + 1;
    }
    return CLL_OK;
}

/* was the arm (name, source hash) raced healthy at this site before (the previous race record)? */
static bool arm_known(json_t *prev_site, const char *name, const char *hash) {
    json_t *arms = json_object_get(prev_site, "arms"), *a;
    size_t i;
    json_array_foreach(arms, i, a) {
        const char *v = json_string_value(json_object_get(a, "variant"));
        const char *h = json_string_value(json_object_get(a, "source_hash"));
        if (v && h && !strcmp(v, name) && !strcmp(h, hash) && !json_is_true(json_object_get(a, "broken"))) return true;
    }
    return false;
}

const char *cll_race_json_esc(const char *s, char *buf, size_t cap) {
    size_t o = 0;
    for (; *s && o + 7 < cap; s++) {
        const unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') buf[o++] = '\\', buf[o++] = (char)ch;
        else if (ch < 0x20) o += (size_t)snprintf(buf + o, cap - o, "\\u%04x", ch);
        else buf[o++] = (char)ch;
    }
    buf[o] = 0;
    return buf;
}

/* prepared weights of one arm at one shape: a ring of copies (gemv) or one (gemm) */
typedef struct {
    cll_cpu_weight *w[64];
    int n;
    void *scratch;
} ring_t;

static void ring_free(ring_t *g) {
    for (int i = 0; i < g->n; i++) cll_cpu_weight_free(g->w[i]);
    free(g->scratch);
    memset(g, 0, sizeof *g);
}

/* k back-to-back dispatches cycling the ring: seconds */
static double time_ring(cll_pool *pool, ring_t *g, const float *x, int64_t cols, int64_t n, float *y, int64_t rows, int k,
                        int *cursor) {
    const double t0 = cll_now();
    for (int i = 0; i < k; i++) {
        cll_cpu_matmul(pool, g->w[*cursor], x, cols, n, y, rows, g->scratch);
        *cursor = (*cursor + 1) % g->n;
    }
    return cll_now() - t0;
}

bool cll_race_budget_allows(double budget_s, double elapsed_s, double longest_step_s) {
    return budget_s <= 0 || elapsed_s + (longest_step_s > 0 ? longest_step_s : 0) <= budget_s;
}

double cll_race_knob_estimate(int n_values, double load_s, double round_s, int rounds, bool probe) {
    if (n_values < 1) n_values = 1;
    if (rounds < 1) rounds = 1;
    return n_values * (load_s > 0 ? load_s : 0) + (rounds * n_values + (probe ? 5 : 0)) * (round_s > 0 ? round_s : 0);
}

static double tq975(int df) { /* Student t, 97.5% quantile */
    static const double t[] = {0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201,
                               2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                               2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
    return df < 1 ? 12.706 : df <= 30 ? t[df] : 1.96 + 2.4 / (double)df;
}

void cll_race_paired(const double *ta, const double *t0, int R, double *ratio, double *lo, double *hi) {
    double mean = 0, sd = 0;
    for (int r = 0; r < R; r++) mean += log(ta[r] / t0[r]);
    mean /= R;
    for (int r = 0; r < R; r++) {
        const double d = log(ta[r] / t0[r]) - mean;
        sd += d * d;
    }
    sd = R > 1 ? sqrt(sd / (R - 1)) : 0.0;
    const double h = tq975(R - 1) * sd / sqrt((double)R);
    *ratio = exp(mean);
    *lo = exp(mean - h);
    *hi = exp(mean + h);
}

/* noise probe: cv of 12 timings of one fixed dispatch window (the first site's incumbent, hot) */
static double noise_probe(cll_pool *pool, const cll_race_site *s, const cll_kernel_row *inc, double test_noise) {
    const int64_t rows = s->shape[0].rows < 2048 ? s->shape[0].rows : 2048, cols = s->shape[0].cols;
    uint8_t *w = make_weights(s->wtype, rows, cols);
    float *x = (float *)malloc(sizeof(float) * (size_t)cols), *y = (float *)malloc(sizeof(float) * (size_t)rows);
    cll_cpu_weight *cw = NULL;
    double cv = 1.0;
    if (w && x && y && cll_cpu_weight_create_row(inc, rows, cols, w, &cw) == CLL_OK) {
        for (int64_t i = 0; i < cols; i++) x[i] = rndn();
        void *scratch = malloc(cll_cpu_matmul_scratch(cw, 1) + 64);
        double t1 = cll_now();
        cll_cpu_matmul(pool, cw, x, cols, 1, y, rows, scratch);
        t1 = cll_now() - t1;
        const int k = t1 > 0 ? (int)(0.004 / t1) + 1 : 50;
        double v[12], m = 0.0, q = 0.0;
        for (int r = 0; r < 12; r++) {
            const double t0 = cll_now();
            for (int i = 0; i < k; i++) cll_cpu_matmul(pool, cw, x, cols, 1, y, rows, scratch);
            v[r] = cll_now() - t0;
            m += v[r];
        }
        m /= 12.0;
        for (int r = 0; r < 12; r++) q += (v[r] - m) * (v[r] - m);
        cv = m > 0 ? sqrt(q / 11.0) / m : 1.0;
        free(scratch);
        cll_cpu_weight_free(cw);
    }
    free(w);
    free(x);
    free(y);
    return cv + test_noise;
}

/* race one site; fills e (and appends the arms' numbers to race_json) */
static cll_status race_site(const cll_race_site *s, const cll_race_opts *o, cll_pool *pool, double noise_floor,
                            const char *prev_race, cll_tune_entry *e, char *race_json, size_t race_cap) {
    const cll_kernel_table *t = cll_cpu_kernel_table();
    const int64_t n = s->op == CLL_KOP_GEMV ? 1 : GEMM_N;
    char site[96];
    cll_race_site_name(s, site, sizeof site);
    memset(e, 0, sizeof *e);
    snprintf(e->site, sizeof e->site, "%s", site);
    /* arms: rows serving the op and type that run every shape here; the incumbent first */
    arm_t arms[MAX_ARMS];
    int na = 0;
    cll_kernel_shape s0 = shape_of(s->wtype, s->shape[0].rows, s->shape[0].cols, n);
    const cll_kernel_row *inc = cll_kernels_default(t, s->op, &s0, -1);
    char ref_name[96];
    snprintf(ref_name, sizeof ref_name, "matmul_%s_scalar", cll_type_name(s->wtype));
    const cll_kernel_row *ref = cll_kernels_find(t, ref_name);
    if (!inc || !ref) return cll_err(CLL_ERR_UNSUPPORTED, "tune: %s: no default or no scalar reference row", site);
    memset(arms, 0, sizeof arms);
    arms[na++].row = inc;
    for (size_t i = 0; i < t->n && na < MAX_ARMS; i++) {
        const cll_kernel_row *r = &t->rows[i];
        if (r == inc || r->wtype != s->wtype || !(r->op & s->op)) continue;
        bool all = true;
        for (int j = 0; j < s->n_shapes && all; j++) {
            cll_kernel_shape sh = shape_of(s->wtype, s->shape[j].rows, s->shape[j].cols, n);
            all = cll_kernel_row_supported(r, &sh);
        }
        if (all) arms[na++].row = r;
    }
    /* 1. gates: two shapes per arm (a row count that is not a multiple of 64; a short token
     * count for gemm), cols from the site */
    const int64_t qk = (int64_t)cll_type_traits_get(s->wtype)->blck;
    int64_t gc = s->shape[0].cols < 1024 ? s->shape[0].cols : 1024;
    gc -= gc % (qk > 0 ? qk : 1);
    if (gc <= 0) gc = s->shape[0].cols;
    /* ... each arm in a child process (an arm new to the site: with trial dispatches at the timed
     * shapes), so a faulting or hanging kernel marks itself broken instead of ending the run */
    {
        json_t *prev = prev_race ? json_loads(prev_race, 0, NULL) : NULL;
        json_t *prev_site = prev ? json_object_get(prev, site) : NULL;
        bool trial[MAX_ARMS];
        for (int a = 0; a < na; a++) {
            cll_tune_row_hash(t, arms[a].row, arms[a].hash);
            trial[a] = arms[a].trial = !arm_known(prev_site, arms[a].row->name, arms[a].hash);
        }
        json_decref(prev);
        check_ctx c;
        memset(&c, 0, sizeof c);
        c.s = s;
        c.inc = inc;
        c.ref = ref;
        c.gc = gc;
        c.n = n;
        cll_status st = isolate_arms(&c, arms, na, trial, o->threads, o->child_timeout_s);
        if (st != CLL_OK) return st;
    }
    for (int a = 0; a < na; a++)
        if (arms[a].broken) fprintf(stderr, "tune: %s: %s is broken: %s\n", site, arms[a].row->name, arms[a].why);
    if (arms[0].broken) { /* the incumbent itself fails: nothing to race against */
        snprintf(e->variant, sizeof e->variant, "%s", inc->name);
        snprintf(e->verdict, sizeof e->verdict, "broken");
        cll_tune_row_hash(t, inc, e->source_hash);
        return CLL_OK;
    }
    /* 2-4. per shape: rings, calibration, ABBA rounds */
    const int R = o->rounds < 2 ? 2 : o->rounds > 64 ? 64 : o->rounds;
    const int64_t llc = llc_bytes();
    for (int j = 0; j < s->n_shapes; j++) {
        const int64_t rows = s->shape[j].rows, cols = s->shape[j].cols;
        const size_t wb = (size_t)cll_row_bytes(s->wtype, (uint64_t)cols) * (size_t)rows;
        int copies = 1;
        if (n == 1) {
            copies = (int)((2 * llc + (int64_t)wb - 1) / (int64_t)wb);
            if (copies < 1) copies = 1;
            if (copies > 64) copies = 64;
        }
        uint8_t *src[64] = {0};
        ring_t ring[MAX_ARMS];
        memset(ring, 0, sizeof ring);
        float *x = (float *)malloc(sizeof(float) * (size_t)(n * cols)), *y = (float *)malloc(sizeof(float) * (size_t)(n * rows));
        cll_status st = CLL_OK;
        if (!x || !y) st = cll_err(CLL_ERR_NOMEM, "tune: out of memory");
        for (int c = 0; c < copies && st == CLL_OK; c++)
            if (!(src[c] = make_weights(s->wtype, rows, cols))) st = cll_err(CLL_ERR_NOMEM, "tune: out of memory");
        for (int64_t i = 0; st == CLL_OK && i < n * cols; i++) x[i] = rndn();
        int k[MAX_ARMS], cur[MAX_ARMS];
        for (int a = 0; a < na && st == CLL_OK; a++) {
            cur[a] = 0;
            k[a] = 1;
            if (arms[a].broken) continue;
            for (int c = 0; c < copies; c++) {
                if (cll_cpu_weight_create_row(arms[a].row, rows, cols, src[c], &ring[a].w[c]) != CLL_OK) {
                    arms[a].broken = true;
                    snprintf(arms[a].why, sizeof arms[a].why, "%s", cll_last_error());
                    break;
                }
                ring[a].n = c + 1;
            }
            if (arms[a].broken) continue;
            ring[a].scratch = malloc(cll_cpu_matmul_scratch(ring[a].w[0], n) + 64);
            /* warm-up and calibration: each timing >= ~15 ms of dispatches */
            double t1 = time_ring(pool, &ring[a], x, cols, n, y, rows, ring[a].n, &cur[a]) / (double)ring[a].n;
            k[a] = t1 > 0 ? (int)(0.015 / t1) + 1 : 1;
            if (k[a] < ring[a].n && n == 1) k[a] = ring[a].n; /* a full pass over the ring */
        }
        for (int r = 0; r < R && st == CLL_OK; r++)
            for (int i = 0; i < na; i++) {
                const int a = (r & 1) ? na - 1 - i : i; /* ABBA */
                if (arms[a].broken) continue;
                const double tt = time_ring(pool, &ring[a], x, cols, n, y, rows, k[a], &cur[a]) / (double)k[a];
                arms[a].t[r] += (double)s->shape[j].count * tt;
            }
        for (int a = 0; a < na; a++) ring_free(&ring[a]);
        for (int c = 0; c < copies; c++) free(src[c]);
        free(x);
        free(y);
        if (st != CLL_OK) return st;
    }
    /* 5. paired ratios (once per arm) and the crown */
    const double margin = noise_floor > o->min_margin ? noise_floor : o->min_margin;
    double ratio[MAX_ARMS], lo[MAX_ARMS], hi[MAX_ARMS];
    int best = -1, crown = -1; /* the fastest challenger; the fastest that may be crowned */
    size_t rj = strlen(race_json);
    rj += (size_t)snprintf(race_json + rj, race_cap - rj, "\"%s\": {\"rounds\": %d, \"n\": %lld, \"margin\": %.4f, \"arms\": [",
                           site, R, (long long)n, margin);
    for (int a = 0; a < na; a++) {
        double med = 0, bst = 1e30;
        ratio[a] = lo[a] = hi[a] = 1.0;
        if (!arms[a].broken) {
            cll_race_paired(arms[a].t, arms[0].t, R, &ratio[a], &lo[a], &hi[a]);
            double tt[64];
            memcpy(tt, arms[a].t, sizeof(double) * (size_t)R);
            for (int p = 0; p < R; p++) /* sorted: median and best */
                for (int q = p + 1; q < R; q++)
                    if (tt[q] < tt[p]) {
                        const double z = tt[p];
                        tt[p] = tt[q];
                        tt[q] = z;
                    }
            bst = tt[0];
            med = R % 2 ? tt[R / 2] : 0.5 * (tt[R / 2 - 1] + tt[R / 2]);
            if (a > 0 && (best < 0 || ratio[a] < ratio[best])) best = a;
            /* crowned only when the whole interval clears the margin, and the arm may be crowned */
            if (a > 0 && hi[a] < 1.0 - margin && (arms[a].row->bit_exact || o->allow_tolerant) &&
                (crown < 0 || ratio[a] < ratio[crown]))
                crown = a;
        }
        char why[400];
        cll_race_json_esc(arms[a].why[0] ? arms[a].why : "gate failed", why, sizeof why);
        rj += (size_t)snprintf(race_json + rj, race_cap - rj,
                               "%s{\"variant\": \"%s\", \"source_hash\": \"%s\", \"bit_exact\": %s, \"broken\": %s, "
                               "\"isolated\": \"%s\", \"median_ms\": %.4f, \"best_ms\": %.4f, \"ratio\": %.4f, "
                               "\"ci\": [%.4f, %.4f]%s%s%s}",
                               a ? ", " : "", arms[a].row->name, arms[a].hash, arms[a].row->bit_exact ? "true" : "false",
                               arms[a].broken ? "true" : "false",
                               !arms[a].isolated ? "none" : arms[a].trial ? "gate+trial" : "gate", 1e3 * med,
                               arms[a].broken ? 0.0 : 1e3 * bst, arms[a].broken ? 0.0 : ratio[a], lo[a], hi[a],
                               arms[a].broken ? ", \"why\": \"" : "", arms[a].broken ? why : "",
                               arms[a].broken ? "\"" : "");
        if (rj >= race_cap) rj = race_cap - 1;
    }
    rj += (size_t)snprintf(race_json + rj, race_cap - rj, "]}");
    /* test hook (tests/tune_race_test.sh): CLLAMA_TUNE_TEST_CROWN=<site> crowns that site's first
     * healthy challenger whatever the numbers, so the serving confirm can be exercised on a box
     * where nothing wins; the race record says so */
    const char *tc = getenv("CLLAMA_TUNE_TEST_CROWN");
    if (tc && !strcmp(tc, site)) {
        int a = 1;
        while (a < na && arms[a].broken) a++;
        if (a < na) {
            crown = a;
            if (rj + 32 < race_cap) {
                race_json[rj - 1] = 0; /* reopen the site's record */
                snprintf(race_json + rj - 1, race_cap - rj + 1, ", \"test_crown\": true}");
            }
        }
    }
    const int shown = crown >= 0 ? crown : best; /* the numbers the entry carries */
    const int w = crown >= 0 ? crown : 0;
    snprintf(e->variant, sizeof e->variant, "%s", arms[w].row->name);
    snprintf(e->params, sizeof e->params, "%s", arms[w].row->params ? arms[w].row->params : "");
    cll_tune_row_hash(t, arms[w].row, e->source_hash);
    e->bit_exact = arms[w].row->bit_exact;
    snprintf(e->verdict, sizeof e->verdict, "%s", crown >= 0 ? "crown" : "tie");
    e->ratio = shown >= 0 ? ratio[shown] : 1.0;
    e->ci_lo = shown >= 0 ? lo[shown] : 1.0;
    e->ci_hi = shown >= 0 ? hi[shown] : 1.0;
    e->margin = margin;
    fprintf(stderr, "tune: %-22s %-34s %s  (best challenger %.3f [%.3f, %.3f], bar %.1f%%)\n", site, e->variant,
            e->verdict, e->ratio, e->ci_lo, e->ci_hi, 100.0 * margin);
    return CLL_OK;
}

cll_status cll_race_run(const cll_race_site *sites, int n, const cll_race_opts *o, cll_tune_sidecar *sc,
                        const char *path, bool *wrote) {
    *wrote = false;
    if (n <= 0) return cll_err(CLL_ERR_ARG, "tune: no site to race (check --sites)");
    const cll_kernel_table *t = cll_cpu_kernel_table();
    cll_pool *pool = NULL;
    cll_status st = cll_pool_create(o->threads, &pool);
    if (st != CLL_OK) return st;
    const double t0 = cll_now();
    double longest = 0.0; /* the longest site so far (the budget's estimate of the next) */
    /* the first site's incumbent is the probe kernel */
    cll_kernel_shape s0 = shape_of(sites[0].wtype, sites[0].shape[0].rows, sites[0].shape[0].cols, 1);
    const cll_kernel_row *probe = cll_kernels_default(t, CLL_KOP_GEMV, &s0, -1);
    if (!probe) {
        cll_pool_free(pool);
        return cll_err(CLL_ERR_UNSUPPORTED, "tune: no probe kernel");
    }
    double probes[3];
    probes[0] = noise_probe(pool, &sites[0], probe, o->test_noise);
    size_t cap = 1 << 20;
    char *race = (char *)calloc(1, cap);
    if (!race) {
        cll_pool_free(pool);
        return cll_err(CLL_ERR_NOMEM, "tune: out of memory");
    }
    /* keep the previous race records of sites not re-raced */
    size_t rl = (size_t)snprintf(race, cap, "{");
    if (sc->race_json && strlen(sc->race_json) > 2) rl += (size_t)snprintf(race + rl, cap - rl, "%.*s", (int)(strlen(sc->race_json) - 2), sc->race_json + 1);
    int done = 0, skipped = 0;
    double floor_now = probes[0];
    for (int i = 0; i < n; i++) {
        char name[96];
        cll_race_site_name(&sites[i], name, sizeof name);
        /* resume: a site already raced whose variant is unchanged stays */
        bool fresh = false;
        for (int k = 0; k < sc->n_sites; k++) {
            if (strcmp(sc->sites[k].site, name)) continue;
            const cll_kernel_row *r = cll_kernels_find(t, sc->sites[k].variant);
            char h[65];
            if (r) {
                cll_tune_row_hash(t, r, h);
                fresh = !strcmp(h, sc->sites[k].source_hash);
            }
        }
        if (fresh) {
            skipped++;
            continue;
        }
        if (!cll_race_budget_allows(o->budget_s, cll_now() - t0, longest)) {
            fprintf(stderr, "tune: budget of %.0f s reached: %s and the sites after it not raced (rerun to go on)\n",
                    o->budget_s, name);
            break;
        }
        const double t_site = cll_now();
        if (floor_now > o->noise_bar && !o->force) break;
        cll_tune_entry e;
        char *one = (char *)calloc(1, 1 << 16);
        if (!one) {
            st = cll_err(CLL_ERR_NOMEM, "tune: out of memory");
            break;
        }
        st = race_site(&sites[i], o, pool, floor_now, sc->race_json, &e, one, 1 << 16);
        if (st != CLL_OK) {
            free(one);
            break;
        }
        if ((st = cll_tune_set_site(sc, &e)) != CLL_OK) {
            free(one);
            break;
        }
        /* the site's race record (a newer record of a re-raced site replaces the older on parse) */
        if (rl + strlen(one) + 4 < cap) rl += (size_t)snprintf(race + rl, cap - rl, "%s%s", rl > 1 ? ", " : "", one);
        free(one);
        done++;
        if (cll_now() - t_site > longest) longest = cll_now() - t_site;
        if (i == n / 2) {
            probes[1] = noise_probe(pool, &sites[0], probe, o->test_noise);
            if (probes[1] > floor_now) floor_now = probes[1];
        }
        /* journal: every finished site lands on disk (atomically) next to the sidecar, so an
         * interrupted run resumes; the sidecar itself is written only at the end */
        snprintf(race + rl, cap - rl, "}");
        free(sc->race_json);
        sc->race_json = strdup(race);
        sc->noise_floor = floor_now;
        if ((st = cll_tune_journal(path, sc)) != CLL_OK) break;
    }
    probes[2] = noise_probe(pool, &sites[0], probe, o->test_noise);
    if (probes[2] > floor_now) floor_now = probes[2];
    if (probes[1] == 0.0) probes[1] = probes[0];
    cll_pool_free(pool);
    free(race);
    if (st != CLL_OK) return st;
    memcpy(sc->noise_probes, probes, sizeof probes);
    sc->noise_floor = floor_now;
    sc->mint_seconds = cll_now() - t0;
    return cll_race_finish(path, sc, o, done, skipped, "site(s)", wrote);
}

cll_status cll_race_finish(const char *path, cll_tune_sidecar *sc, const cll_race_opts *o, int done, int skipped,
                           const char *what, bool *wrote) {
    char jp[1100];
    cll_tune_journal_path(path, jp, sizeof jp);
    const double *pr = sc->noise_probes;
    if (sc->noise_floor > o->noise_bar && !o->force) {
        remove(jp);
        fprintf(stderr,
                "tune: the machine is too noisy to race (noise probes cv %.1f%% / %.1f%% / %.1f%%, bar %.0f%%): nothing "
                "written. Quiet the machine (other jobs, frequency scaling) and rerun, or pass --force to write it "
                "stamped 'noise: overridden'\n",
                100 * pr[0], 100 * pr[1], 100 * pr[2], 100 * o->noise_bar);
        return CLL_OK;
    }
    snprintf(sc->noise, sizeof sc->noise, "%s", sc->noise_floor <= o->noise_bar ? "ok" : "overridden");
    if (done > 0) {
        cll_status st = cll_tune_write(path, sc);
        if (st != CLL_OK) return st;
        *wrote = true;
    }
    remove(jp);
    fprintf(stderr, "tune: %d %s raced, %d already tuned (kept), noise floor %.2f%%, %.1f s\n", done, what, skipped,
            100 * sc->noise_floor, sc->mint_seconds);
    return CLL_OK;
}

/* ---- the serving confirm ---- */

#include "bench/bench.h"

cll_status cll_race_crowns_with(const cll_tune_sidecar *sc, const char *site, const char *pin) {
    cll_kernels_clear_overrides();
    for (int i = 0; i < sc->n_sites; i++) {
        const cll_tune_entry *e = &sc->sites[i];
        if ((site && !strcmp(e->site, site)) || strcmp(e->verdict, "crown")) continue;
        cll_status st = cll_kernels_set_override(e->site, e->variant);
        if (st != CLL_OK) return st;
    }
    return site && pin ? cll_kernels_set_override(site, pin) : CLL_OK;
}

cll_status cll_race_confirm(const char *model, const cll_race_opts *o, cll_tune_sidecar *sc) {
    if (!model) return CLL_OK;
    const bool quick = o->mode && !strcmp(o->mode, "quick");
    cll_status st = CLL_OK;
    for (int i = 0; i < sc->n_sites && st == CLL_OK; i++) {
        cll_tune_entry *e = &sc->sites[i];
        if (strcmp(e->verdict, "crown") || e->confirm[0]) continue;
        const bool gemv = strstr(e->site, "/gemv/") != NULL;
        const int np = gemv ? 0 : quick ? 128 : 512, ng = gemv ? (quick ? 32 : 128) : 0;
        double sum[2] = {0, 0};
        int cnt[2] = {0, 0};
        for (int run = 0; run < 4 && st == CLL_OK; run++) {
            const int arm = run & 1; /* 0: with the crown, 1: without (A B A B) */
            if ((st = cll_race_crowns_with(sc, e->site, arm == 0 ? e->variant : NULL)) != CLL_OK) break;
            cll_bench_model *bm = NULL;
            if ((st = cll_bench_open(model, 0, o->threads, np + ng + 8, np > 0 ? np : 1, &bm)) != CLL_OK) break;
            cll_bench_result r;
            st = cll_bench_measure(bm, np, ng, 2, false, &r);
            cll_bench_close(bm);
            if (st != CLL_OK) break;
            sum[arm] += r.avg_ts;
            cnt[arm]++;
        }
        if (st != CLL_OK) break;
        const double with = sum[0] / cnt[0], without = sum[1] / cnt[1];
        e->confirm_gain = without > 0 ? with / without : 0.0;
        const bool pass = e->confirm_gain >= 1.005;
        snprintf(e->confirm, sizeof e->confirm, "%s", pass ? "pass" : "fail");
        if (!pass) snprintf(e->verdict, sizeof e->verdict, "tie");
        fprintf(stderr, "tune: confirm %-22s %s: %s %.1f vs %.1f tok/s (%+.1f%%): %s\n", e->site, e->variant,
                gemv ? "tg" : "pp", with, without, 100.0 * (e->confirm_gain - 1.0), pass ? "crown stands" : "now a tie");
    }
    cll_kernels_clear_overrides();
    return st;
}

bool cll_race_gate_cpu_row(const cll_kernel_row *r, int64_t cols, char *why, size_t cap) {
    const cll_kernel_table *t = cll_cpu_kernel_table();
    cll_kernel_shape sh = shape_of(r->wtype, 64, cols, 1);
    const cll_kernel_row *inc = cll_kernels_default(t, CLL_KOP_GEMV, &sh, -1);
    char ref_name[96];
    snprintf(ref_name, sizeof ref_name, "matmul_%s_scalar", cll_type_name(r->wtype));
    const cll_kernel_row *ref = cll_kernels_find(t, ref_name);
    if (!inc || !ref) {
        snprintf(why, cap, "no default or scalar reference row for %s", cll_type_name(r->wtype));
        return false;
    }
    const int64_t qk = (int64_t)cll_type_traits_get(r->wtype)->blck;
    int64_t gc = cols < 1024 ? cols : 1024;
    gc -= gc % (qk > 0 ? qk : 1);
    if (gc <= 0) gc = cols;
    /* the gate in a child process, as in the kernel races: a faulting row is broken, not fatal */
    cll_race_site s;
    memset(&s, 0, sizeof s);
    s.op = CLL_KOP_GEMV;
    s.wtype = r->wtype;
    s.n_shapes = 1;
    s.shape[0].rows = 64;
    s.shape[0].cols = gc;
    s.shape[0].count = 1;
    check_ctx c;
    memset(&c, 0, sizeof c);
    c.s = &s;
    c.inc = inc;
    c.ref = ref;
    c.gc = gc;
    c.n = 1;
    arm_t arm;
    memset(&arm, 0, sizeof arm);
    arm.row = r;
    const bool trial = false;
    if (isolate_arms(&c, &arm, 1, &trial, 2, 60) != CLL_OK) {
        snprintf(why, cap, "%s", cll_last_error());
        return false;
    }
    if (arm.broken) snprintf(why, cap, "%s", arm.why);
    return !arm.broken;
}
