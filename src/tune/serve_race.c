/* tune/serve_race: serving races (race.h): each arm of a gemv site pinned into its own loaded copy
 * of the model, then tg rounds across the copies in ABBA order. The CUDA backend's races (its
 * decode runs as a replayed graph, so the served step is the only honest timing) and the CPU's
 * with --serving.
 * Owns the model copies of one site while it races (closed before the next).
 * Rule: gate before timing; every copy differs from the others only in the raced site's pin. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "cpu/matmul.h"
#include "cuda/cuda.h"
#include "cuda/gate.h"
#include "formats/formats.h"
#include "gguf/gguf.h"
#include "tune/gpu_watch.h"
#include "tune/race.h"

#define SR_MAX_ARMS 8

/* the model's 2-D weight types (token_embd aside) with their widest cols, largest share first */
typedef struct {
    uint32_t wtype;
    int64_t cols;
    double bytes;
} sr_type;

static int cmp_bytes(const void *a, const void *b) {
    const double x = ((const sr_type *)a)->bytes, y = ((const sr_type *)b)->bytes;
    return x < y ? 1 : x > y ? -1 : 0;
}

static cll_status model_types(const char *model, sr_type *out, int cap, int *n) {
    *n = 0;
    cll_gguf *g = NULL;
    cll_status st = cll_gguf_open(model, &g);
    if (st != CLL_OK) return st;
    for (uint64_t i = 0; i < cll_gguf_n_tensors(g); i++) {
        const cll_gguf_tensor *t = cll_gguf_tensor_at(g, i);
        if (t->n_dims != 2 || (t->name.len >= 10 && !memcmp(t->name.ptr, "token_embd", 10))) continue;
        int k;
        for (k = 0; k < *n; k++)
            if (out[k].wtype == t->type) break;
        if (k == *n) {
            if (*n == cap) continue;
            out[k].wtype = t->type;
            out[k].cols = 0;
            out[k].bytes = 0;
            (*n)++;
        }
        out[k].bytes += (double)t->nbytes;
        if ((int64_t)t->ne[0] > out[k].cols) out[k].cols = (int64_t)t->ne[0];
    }
    cll_gguf_free(g);
    qsort(out, (size_t)*n, sizeof *out, cmp_bytes);
    return CLL_OK;
}

bool cll_race_gate_serving_row(const cll_kernel_row *r, int64_t cols, bool cuda, char *why, size_t cap) {
    if (!cuda) return cll_race_gate_cpu_row(r, cols, why, cap);
#ifndef CLLAMA_HAVE_CUDA
    snprintf(why, cap, "this cllama was built without the CUDA driver");
    return false;
#else
    const int64_t qk = (int64_t)cll_type_traits_get(r->wtype)->blck;
    int64_t gc = cols < 4096 ? cols : 4096;
    gc -= gc % (qk > 0 ? qk : 1);
    const int64_t shapes[2][2] = {{256, gc}, {37, gc}};
    for (int i = 0; i < 2; i++) {
        cll_cuda_gate_report rep;
        if (cll_cuda_gate_row(r, shapes[i][0], shapes[i][1], 1, 0x5EED + (uint64_t)i, &rep) != CLL_OK) {
            snprintf(why, cap, "%s", cll_last_error());
            return false;
        }
    }
    return true;
#endif
}

/* ---- child isolation of the serving races' gates ----
 * Each arm's gate runs in a child: this cllama binary exec'd as `cllama tune --gate-row NAME
 * --gate-cols N --backend B` (a fresh process: a forked child of a process that already holds a
 * CUDA context cannot use the GPU, so the CPU races' fork does not serve here). After the gate the
 * child also loads the model with the arm pinned at its site and decodes 4 tokens (the trial: a
 * kernel that faults only at the model's shapes, or in the graph, faults there, not in the race).
 * It prints one line, "gate-row ok" or "gate-row broken: WHY". A child killed by a signal, exiting without
 * that line, or outliving timeout_s leaves the arm broken with the reason, and the race goes on.
 * When this process is not the cllama binary (the library inside another program) the gate runs
 * here and the arm is marked as not isolated. */
static bool self_exe(char *buf, size_t cap) {
    const char *env = getenv("CLLAMA_BIN"); /* set by the test scripts and the device scripts */
    if (env && *env && access(env, X_OK) == 0) {
        snprintf(buf, cap, "%s", env);
        return true;
    }
    const ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
    if (n <= 0) return false;
    buf[n] = 0;
    const char *base = strrchr(buf, '/');
    return !strcmp(base ? base + 1 : buf, "cllama");
}

static bool gate_isolated(const cll_kernel_row *r, int64_t cols, bool cuda, const char *model, const char *site,
                          int threads, double timeout_s, char *why, size_t cap, bool *isolated) {
    char exe[4096];
    *isolated = false;
    if (!self_exe(exe, sizeof exe)) return cll_race_gate_serving_row(r, cols, cuda, why, cap);
    if (timeout_s <= 0) timeout_s = 60;
    char cs[32], ts[16];
    snprintf(cs, sizeof cs, "%lld", (long long)cols);
    snprintf(ts, sizeof ts, "%d", threads > 0 ? threads : 1);
    char *const argv[] = {exe, "tune", "--gate-row", (char *)r->name, "--gate-cols", cs, "--backend",
                          cuda ? "cuda" : "cpu", "-m", (char *)model, "--sites", (char *)site, "-t", ts, NULL};
    int fd[2];
    const pid_t pid = cll_race_fork_piped(fd);
    if (pid < 0) return cll_race_gate_serving_row(r, cols, cuda, why, cap);
    if (pid == 0) {
        if (dup2(fd[1], STDOUT_FILENO) < 0) _exit(126);
        close(fd[1]);
        execv(exe, argv);
        _exit(127);
    }
    *isolated = true;
    char buf[1024];
    size_t bl = 0;
    bool timed_out = false;
    const double t0 = cll_now();
    for (;;) { /* to the child's end; its verdict is its last line (keep the tail of a long output) */
        if (bl > sizeof buf - 128) {
            memmove(buf, buf + bl - 512, 512);
            bl = 512;
        }
        const ssize_t got = cll_race_read_child(fd[0], buf + bl, sizeof buf - 1 - bl, timeout_s - (cll_now() - t0));
        if (got < 0) timed_out = true;
        if (got <= 0) break;
        bl += (size_t)got;
    }
    buf[bl] = 0;
    if (timed_out) kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    close(fd[0]);
    const char *line = NULL;
    for (const char *p = strstr(buf, "gate-row "); p; p = strstr(p + 1, "gate-row ")) line = p;
    char sb[32];
    if (timed_out) {
        snprintf(why, cap, "timed out after %.0f s in its child (gate and trial); killed", timeout_s);
        return false;
    }
    if (WIFSIGNALED(status)) {
        snprintf(why, cap, "killed by %s in its child (gate and trial)", cll_race_sig_name(WTERMSIG(status), sb, sizeof sb));
        return false;
    }
    if (line && !strncmp(line, "gate-row ok", 11) && WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
    if (line && !strncmp(line, "gate-row broken: ", 17)) {
        const char *w = line + 17;
        snprintf(why, cap, "%.*s", (int)strcspn(w, "\n"), w);
        return false;
    }
    snprintf(why, cap, "its child (gate and trial) exited with status %d and no verdict",
             WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return false;
}

int cll_race_gate_row_main(const char *name, int64_t cols, const char *backend, const char *model, const char *site,
                           int threads) {
    const bool cuda = !strcmp(backend, "cuda");
    const cll_kernel_table *t = cuda ? cll_cuda_kernel_table() : cll_cpu_kernel_table();
    const cll_kernel_row *r = t ? cll_kernels_find(t, name) : NULL;
    if (!r || cols <= 0) {
        printf("gate-row broken: no %s row '%s' (or cols %lld)\n", backend, name, (long long)cols);
        return 1;
    }
    cll_race_test_fault(r->name);
    char why[512] = "";
    bool ok = cll_race_gate_serving_row(r, cols, cuda, why, sizeof why);
    if (ok && model && site) { /* the trial: the served step with the arm pinned, a few tokens */
        cll_bench_model *bm = NULL;
        cll_bench_result res;
        cll_status st = cll_kernels_set_override(site, r->name);
        if (st == CLL_OK) st = cll_bench_open(model, cuda ? 1 : 0, threads, 16, 1, &bm);
        if (st == CLL_OK && cll_race_test_fault_is(r->name, "trial-segv")) raise(SIGSEGV); /* test hook */
        if (st == CLL_OK) st = cll_bench_measure(bm, 0, 4, 1, false, &res);
        if (bm) cll_bench_close(bm);
        cll_kernels_clear_overrides();
        if (st != CLL_OK) {
            ok = false;
            snprintf(why, sizeof why, "trial (4 decode steps of the model, %s pinned): %s", site, cll_last_error());
        }
    }
    for (char *p = why; *p; p++)
        if (*p == '\n') *p = ' ';
    if (ok) printf("gate-row ok\n");
    else printf("gate-row broken: %s\n", why);
    fflush(stdout);
    return ok ? 0 : 1;
}

cll_status cll_race_served_tg(cll_bench_model *bm, int ng, bool cuda, const char *what, double *sec) {
    cll_bench_result res;
    cll_status st = CLL_OK;
    /* a round the SM clock ran below 90% of its maximum in is redone (twice at most) */
    for (int tries = 0; tries < 3 && st == CLL_OK; tries++) {
        st = cll_bench_measure(bm, 0, ng, 1, false, &res);
        int mx = 0;
        const int mhz = cuda ? cll_gpu_watch_sm_clock(&mx) : 0;
        if (!(mhz > 0 && mx > 0 && mhz < mx * 9 / 10)) break;
        fprintf(stderr, "tune: %s: SM clock %d of %d MHz: round redone\n", what, mhz, mx);
    }
    if (st == CLL_OK) *sec = res.avg_ts > 0 ? ng / res.avg_ts : 1e9;
    return st;
}

double cll_race_probe_tg(cll_bench_model *bm, int ng, double test_noise) {
    double v[5], m = 0, q = 0;
    for (int i = 0; i < 5; i++) {
        cll_bench_result r;
        if (cll_bench_measure(bm, 0, ng, 1, false, &r) != CLL_OK || r.avg_ts <= 0) return 1.0;
        v[i] = 1.0 / r.avg_ts;
        m += v[i];
    }
    m /= 5;
    for (int i = 0; i < 5; i++) q += (v[i] - m) * (v[i] - m);
    return sqrt(q / 4) / m + test_noise;
}

cll_status cll_race_serving(const char *model, const char *backend, const char *pattern, const cll_race_opts *o,
                            cll_tune_sidecar *sc, const char *path, bool *wrote) {
    *wrote = false;
    if (!model) return cll_err(CLL_ERR_ARG, "tune: serving races need a model (-m MODEL)");
    const bool cuda = !strcmp(backend, "cuda");
    const cll_kernel_table *t = cuda ? cll_cuda_kernel_table() : cll_cpu_kernel_table();
    if (!t) return cll_err(CLL_ERR_UNSUPPORTED, "tune: this build has no %s kernel table", backend);
    sr_type types[32];
    int nt = 0;
    cll_status st = model_types(model, types, 32, &nt);
    if (st != CLL_OK) return st;
    const bool quick = o->mode && !strcmp(o->mode, "quick");
    const int ng = quick ? 32 : 128, R = o->rounds < 2 ? 2 : o->rounds > 64 ? 64 : o->rounds;
    if (cuda) { /* no race while another process computes on the GPU */
        char who[256];
        const int f = cll_gpu_watch_foreign(who, sizeof who);
        if (f > 0)
            return cll_err(CLL_ERR_DEVICE, "tune: %d other process(es) compute on the GPU (%s): no race, nothing written", f,
                           who);
        if (f < 0) fprintf(stderr, "tune: NVML is not available: other GPU processes and the SM clock go unobserved\n");
    }
    /* the races time decode steps only: the copies need no resident prefill panels (a 7B file's are
     * ~13 GB each, and decoding them at every load is most of a copy's load time) */
    const bool panels_set = getenv("CLLAMA_CUDA_PANELS") != NULL;
    if (cuda && !panels_set) setenv("CLLAMA_CUDA_PANELS", "off", 1);
    const double t0 = cll_now();
    double floor_now = 0.0, probes[3] = {0, 0, 0}, longest = 0.0; /* longest: the longest site so far */
    int done = 0, skipped = 0, np = 0;
    char *race = (char *)calloc(1, 1 << 20);
    if (!race) {
        if (cuda && !panels_set) unsetenv("CLLAMA_CUDA_PANELS");
        return cll_err(CLL_ERR_NOMEM, "tune: out of memory");
    }
    size_t rl = (size_t)snprintf(race, 1 << 20, "{");
    if (sc->race_json && strlen(sc->race_json) > 2)
        rl += (size_t)snprintf(race + rl, (1 << 20) - rl, "%.*s", (int)(strlen(sc->race_json) - 2), sc->race_json + 1);
    for (int ti = 0; ti < nt && st == CLL_OK; ti++) {
        char site[96];
        snprintf(site, sizeof site, "%s/gemv/%s", backend, cll_type_name(types[ti].wtype));
        if (pattern && *pattern && !strstr(site, pattern)) continue;
        bool fresh = false; /* resume: an entry whose variant is unchanged stays */
        for (int k = 0; k < sc->n_sites; k++) {
            if (strcmp(sc->sites[k].site, site)) continue;
            const cll_kernel_row *r = cll_kernels_find(t, sc->sites[k].variant);
            char h[65];
            if (r) cll_tune_row_hash(t, r, h), fresh = !strcmp(h, sc->sites[k].source_hash);
        }
        if (fresh) {
            skipped++;
            continue;
        }
        if (!cll_race_budget_allows(o->budget_s, cll_now() - t0, longest)) {
            fprintf(stderr, "tune: budget of %.0f s reached: %s and the sites after it not raced (rerun to go on)\n",
                    o->budget_s, site);
            break;
        }
        const double t_site = cll_now();
        /* arms: the default first */
        const cll_kernel_row *arm[SR_MAX_ARMS];
        int na = 0;
        cll_race_crowns_with(sc, site, NULL);
        cll_kernel_shape s0;
        memset(&s0, 0, sizeof s0);
        s0.wtype = types[ti].wtype;
        s0.rows = 4096;
        s0.cols = types[ti].cols;
        s0.n_tokens = 1;
        s0.features = cuda ? 0 : cll_kernels_cpu_features();
        const cll_kernel_row *inc = cll_kernels_default(t, CLL_KOP_GEMV, &s0, -1);
        if (!inc || !cll_tune_row_runs(t, inc, 1, types[ti].cols)) continue;
        arm[na++] = inc;
        int n_tol = 0; /* tolerant rows left out: a race they cannot win is not run */
        int n_broken = 0, n_inproc = 0; /* arms whose gate failed (recorded); gated in this process */
        const cll_kernel_row *broken[SR_MAX_ARMS];
        char broken_why[SR_MAX_ARMS][256];
        for (size_t i = 0; i < t->n && na < SR_MAX_ARMS; i++) {
            const cll_kernel_row *r = &t->rows[i];
            if (r == inc || r->wtype != types[ti].wtype || !(r->op & CLL_KOP_GEMV) || !cll_tune_row_runs(t, r, 1, types[ti].cols))
                continue;
            if (!r->bit_exact && !o->allow_tolerant) {
                n_tol++;
                continue;
            }
            char why[256];
            bool iso = false;
            if (!gate_isolated(r, types[ti].cols, cuda, model, site, o->threads, o->child_timeout_s, why, sizeof why, &iso)) {
                fprintf(stderr, "tune: %s: %s is broken (not raced): %s\n", site, r->name, why);
                if (n_broken < SR_MAX_ARMS) {
                    broken[n_broken] = r;
                    snprintf(broken_why[n_broken], sizeof broken_why[0], "%s", why);
                    n_broken++;
                }
                continue;
            }
            if (!iso) n_inproc++;
            arm[na++] = r;
        }
        if (n_tol)
            fprintf(stderr, "tune: %s: %d tolerant row(s) not raced (only bit-exact rows can be crowned without "
                            "--allow-tolerant)\n", site, n_tol);
        if (n_inproc)
            fprintf(stderr, "tune: %s: %d arm(s) gated in this process (not the cllama binary: no child to isolate "
                            "them in)\n", site, n_inproc);
        if (na < 2 && !n_broken) continue; /* nothing to race */
        /* every challenger broken: the incumbent keeps the site untimed, the record says why */
        const bool timed = na >= 2;
        double tt[SR_MAX_ARMS][64] = {{0}};
        cll_bench_model *bm[SR_MAX_ARMS] = {0};
        for (int a = 0; timed && a < na && st == CLL_OK; a++) {
            if ((st = cll_race_crowns_with(sc, site, a ? arm[a]->name : NULL)) != CLL_OK) break;
            st = cll_bench_open(model, cuda ? 1 : 0, o->threads, ng + 8, 1, &bm[a]);
        }
        cll_kernels_clear_overrides();
        if (timed && st == CLL_OK && np == 0) {
            probes[np++] = cll_race_probe_tg(bm[0], ng, o->test_noise);
            floor_now = probes[0];
        }
        if (timed && st == CLL_OK && floor_now > o->noise_bar && !o->force) {
            for (int a = 0; a < na; a++) cll_bench_close(bm[a]);
            break;
        }
        for (int r = 0; timed && r < R && st == CLL_OK; r++)
            for (int i = 0; i < na && st == CLL_OK; i++) {
                const int a = (r & 1) ? na - 1 - i : i; /* ABBA */
                double sec = 0.0;
                st = cll_race_served_tg(bm[a], ng, cuda, site, &sec);
                if (st == CLL_OK) tt[a][r] = sec / ng;
            }
        if (timed && st == CLL_OK && np < 3) {
            probes[np++] = cll_race_probe_tg(bm[0], ng, o->test_noise);
            if (probes[np - 1] > floor_now) floor_now = probes[np - 1];
        }
        for (int a = 0; a < na; a++) cll_bench_close(bm[a]);
        if (st != CLL_OK) break;
        /* the crown rule */
        const double margin = floor_now > o->min_margin ? floor_now : o->min_margin;
        int crown = -1;
        double c_ratio = 1e9, c_lo = 1, c_hi = 1, b_ratio = timed ? 1e9 : 1.0, b_lo = 1, b_hi = 1;
        rl += (size_t)snprintf(race + rl, (1 << 20) - rl, "%s\"%s\": {\"serving\": true, \"tg\": %d, \"rounds\": %d, \"margin\": %.4f, \"arms\": [",
                               rl > 1 ? ", " : "", site, ng, R, margin);
        for (int a = 0; a < na; a++) {
            double ratio = 1, lo = 1, hi = 1;
            if (a) cll_race_paired(tt[a], tt[0], R, &ratio, &lo, &hi);
            if (a && ratio < b_ratio) b_ratio = ratio, b_lo = lo, b_hi = hi;
            if (a && hi < 1.0 - margin && (arm[a]->bit_exact || o->allow_tolerant) && ratio < c_ratio)
                crown = a, c_ratio = ratio, c_lo = lo, c_hi = hi;
            double best = 1e30;
            for (int r = 0; r < R; r++)
                if (tt[a][r] < best) best = tt[a][r];
            rl += (size_t)snprintf(race + rl, (1 << 20) - rl,
                                   "%s{\"variant\": \"%s\", \"bit_exact\": %s, \"best_tok_s\": %.2f, \"ratio\": %.4f, "
                                   "\"ci\": [%.4f, %.4f]}",
                                   a ? ", " : "", arm[a]->name, arm[a]->bit_exact ? "true" : "false",
                                   timed && best > 0 ? 1.0 / best : 0.0, ratio, lo, hi);
        }
        for (int b = 0; b < n_broken; b++) {
            char esc[512];
            rl += (size_t)snprintf(race + rl, (1 << 20) - rl,
                                   ", {\"variant\": \"%s\", \"bit_exact\": %s, \"broken\": true, \"why\": \"%s\"}",
                                   broken[b]->name, broken[b]->bit_exact ? "true" : "false",
                                   cll_race_json_esc(broken_why[b], esc, sizeof esc));
        }
        rl += (size_t)snprintf(race + rl, (1 << 20) - rl, "]}");
        cll_tune_entry e;
        memset(&e, 0, sizeof e);
        const cll_kernel_row *w = crown >= 0 ? arm[crown] : inc;
        snprintf(e.site, sizeof e.site, "%s", site);
        snprintf(e.variant, sizeof e.variant, "%s", w->name);
        snprintf(e.params, sizeof e.params, "%s", w->params ? w->params : "");
        cll_tune_row_hash(t, w, e.source_hash);
        e.bit_exact = w->bit_exact;
        snprintf(e.verdict, sizeof e.verdict, "%s", crown >= 0 ? "crown" : "tie");
        e.ratio = crown >= 0 ? c_ratio : b_ratio;
        e.ci_lo = crown >= 0 ? c_lo : b_lo;
        e.ci_hi = crown >= 0 ? c_hi : b_hi;
        e.margin = margin;
        snprintf(e.confirm, sizeof e.confirm, "%s", crown >= 0 ? "pass" : ""); /* the race was the served step */
        e.confirm_gain = crown >= 0 ? 1.0 / c_ratio : 0.0;
        fprintf(stderr, "tune: %-22s %-34s %s  (best challenger %.3f [%.3f, %.3f] of the served tg, bar %.1f%%)\n", site,
                e.variant, e.verdict, e.ratio, e.ci_lo, e.ci_hi, 100.0 * margin);
        if ((st = cll_tune_set_site(sc, &e)) != CLL_OK) break;
        done++;
        if (cll_now() - t_site > longest) longest = cll_now() - t_site;
        snprintf(race + rl, (1 << 20) - rl, "}");
        free(sc->race_json);
        sc->race_json = strdup(race);
        sc->noise_floor = floor_now;
        if ((st = cll_tune_journal(path, sc)) != CLL_OK) break;
    }
    free(race);
    cll_kernels_clear_overrides();
    if (cuda && !panels_set) unsetenv("CLLAMA_CUDA_PANELS");
    if (st != CLL_OK) return st;
    for (int i = np; i < 3; i++) probes[i] = probes[np > 0 ? np - 1 : 0];
    memcpy(sc->noise_probes, probes, sizeof probes);
    sc->noise_floor = floor_now;
    sc->mint_seconds = cll_now() - t0;
    return cll_race_finish(path, sc, o, done, skipped, "serving site(s)", wrote);
}
