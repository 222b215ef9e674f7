/* tune/apply: validating a sidecar against this box and the kernel table, setting the registry
 * overrides of the sites that pass, and user pins (tune.h has the rules).
 * Owns the report arrays it allocates. Rule: every site not applied says why (one warning line,
 * except ties, which are the normal outcome of an honest race); a pin outside the grid is an
 * error, never a warning. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "cpu/knobs.h"
#include "cuda/knobs.h"
#include "cpu/matmul.h"
#include "cuda/cuda.h"
#include "formats/formats.h"
#include "tune/tune.h"

const char *cll_tune_status_name(cll_tune_status s) {
    switch (s) {
    case CLL_TUNE_APPLIED: return "tuned";
    case CLL_TUNE_TIE: return "tie";
    case CLL_TUNE_BROKEN: return "broken";
    case CLL_TUNE_STALE: return "stale";
    case CLL_TUNE_NOT_IN_GRID: return "not in grid";
    case CLL_TUNE_NOT_RUNNABLE: return "not runnable here";
    case CLL_TUNE_TOLERANT: return "tolerant (not applied)";
    case CLL_TUNE_BAD_SITE: return "bad site";
    }
    return "?";
}

void cll_tune_report_free(cll_tune_report *r) {
    if (!r) return;
    free(r->st);
    r->st = NULL;
}

static bool type_by_name(const char *name, size_t len, uint32_t *out) {
    for (uint32_t t = 0; t < CLL_TYPE_COUNT; t++) {
        const char *n = cll_type_name(t);
        if (n && strlen(n) == len && !strncmp(n, name, len)) {
            *out = t;
            return true;
        }
    }
    return false;
}

bool cll_tune_parse_site(const char *site, char *backend, size_t bcap, uint32_t *op, uint32_t *wtype, int64_t *n_tokens) {
    if (!site) return false;
    const char *p[4];
    size_t l[4];
    int n = 0;
    for (const char *s = site; n < 4;) {
        p[n] = s;
        l[n] = strcspn(s, "/");
        n++;
        if (!s[l[n - 1]]) break;
        s += l[n - 1] + 1;
    }
    if (n < 3 || strchr(p[n - 1], '/')) return false;
    if (l[0] == 0 || l[0] >= bcap) return false;
    memcpy(backend, p[0], l[0]);
    backend[l[0]] = 0;
    if (l[1] == 4 && !strncmp(p[1], "gemv", 4)) *op = CLL_KOP_GEMV;
    else if (l[1] == 4 && !strncmp(p[1], "gemm", 4)) *op = CLL_KOP_GEMM;
    else if (l[1] == 6 && !strncmp(p[1], "matmul", 6)) *op = CLL_KOP_MATMUL;
    else if (l[1] == 3 && !strncmp(p[1], "moe", 3)) *op = CLL_KOP_MOE;
    else return false;
    if (!type_by_name(p[2], l[2], wtype)) return false;
    *n_tokens = 0;
    if (n == 4) { /* the class's smallest count stands for it */
        if (l[3] == 2 && !strncmp(p[3], "n1", 2)) *n_tokens = 1;
        else if (l[3] == 4 && !strncmp(p[3], "n2-8", 4)) *n_tokens = 2;
        else if (l[3] == 5 && !strncmp(p[3], "n9-64", 5)) *n_tokens = 9;
        else if (l[3] == 4 && !strncmp(p[3], "n65+", 4)) *n_tokens = 65;
        else return false;
    }
    return true;
}

bool cll_tune_row_runs(const cll_kernel_table *t, const cll_kernel_row *r, int64_t n_tokens, int64_t cols) {
    if (cols <= 0) { /* a few blocks of the row's format */
        const int64_t qk = cll_type_traits_get(r->wtype) ? (int64_t)cll_type_traits_get(r->wtype)->blck : 32;
        cols = qk > 1 ? 16 * qk : 4096;
    }
    cll_kernel_shape s;
    memset(&s, 0, sizeof s);
    s.wtype = r->wtype;
    s.rows = 4096;
    s.cols = cols;
    s.n_tokens = n_tokens;
    if (!strcmp(t->backend, "cpu")) {
        s.features = cll_kernels_cpu_features();
        s.device = CLL_KDEVICE_CPU;
    } else {
        cll_cuda_device d;
        int n = 0;
        if (cll_cuda_device_count(&n) != CLL_OK || n < 1 || cll_cuda_device_info(0, &d) != CLL_OK) return false;
        s.device = CLL_KDEVICE_CUDA_SM(d.cc_major, d.cc_minor);
    }
    return cll_kernel_row_supported(r, &s);
}

cll_status cll_tune_apply(const cll_tune_sidecar *sc, const cll_tune_box *here, const cll_kernel_table *t,
                          bool allow_tolerant, bool dry_run, cll_tune_report *rep) {
    memset(rep, 0, sizeof *rep);
    if (!sc || !here || !t) return cll_err(CLL_ERR_ARG, "tune: apply: missing argument");
    rep->n = sc->n_sites;
    rep->st = (cll_tune_status *)calloc(sc->n_sites > 0 ? (size_t)sc->n_sites : 1, sizeof *rep->st);
    if (!rep->st) return cll_err(CLL_ERR_NOMEM, "tune: out of memory");
    if (sc->version != CLL_TUNE_VERSION) {
        snprintf(rep->why, sizeof rep->why,
                 "minted by race protocol version %d, this engine races with version %d: the box needs a re-tune",
                 sc->version, CLL_TUNE_VERSION);
        return CLL_OK;
    }
    char diff[256];
    if (sc->cls[0]) { /* class defaults: the box's class (and backend) must be the file's */
        char mine[48];
        if (strcmp(sc->box.backend, here->backend)) {
            snprintf(rep->why, sizeof rep->why, "class defaults for the %s backend; this run is on %s", sc->box.backend,
                     here->backend);
            return CLL_OK;
        }
        if (!cll_tune_class(here, mine, sizeof mine) || strcmp(mine, sc->cls)) {
            snprintf(rep->why, sizeof rep->why, "class defaults of class '%s'; this box is of %s%s%s", sc->cls,
                     mine[0] ? "class '" : "no class", mine, mine[0] ? "'" : "");
            return CLL_OK;
        }
    } else if (cll_tune_box_diff(&sc->box, here, diff, sizeof diff)) {
        snprintf(rep->why, sizeof rep->why, "minted on another box (%s): the box needs its own tune", diff);
        return CLL_OK;
    }
    rep->applies = true;
    for (int i = 0; i < sc->n_sites; i++) {
        const cll_tune_entry *e = &sc->sites[i];
        char backend[16];
        uint32_t op = 0, wtype = 0;
        int64_t nt = 0;
        cll_tune_status s = CLL_TUNE_APPLIED;
        const cll_kernel_row *r = NULL;
        char h[65];
        if (!cll_tune_parse_site(e->site, backend, sizeof backend, &op, &wtype, &nt) || strcmp(backend, t->backend)) {
            s = CLL_TUNE_BAD_SITE;
        } else if (!strcmp(e->verdict, "tie")) {
            s = CLL_TUNE_TIE;
        } else if (!strcmp(e->verdict, "broken")) {
            s = CLL_TUNE_BROKEN;
        } else if (strcmp(e->verdict, "crown")) {
            s = CLL_TUNE_BAD_SITE;
        } else if (!(r = cll_kernels_find(t, e->variant)) || r->wtype != wtype || !(r->op & op)) {
            s = CLL_TUNE_NOT_IN_GRID;
        } else if (!cll_tune_row_runs(t, r, nt, 0)) {
            s = CLL_TUNE_NOT_RUNNABLE;
        } else if (cll_tune_row_hash(t, r, h), strcmp(h, e->source_hash)) {
            s = CLL_TUNE_STALE;
        } else if (!r->bit_exact && !allow_tolerant) {
            s = CLL_TUNE_TOLERANT;
        }
        if (s == CLL_TUNE_APPLIED && !dry_run) {
            cll_status st = cll_kernels_set_override(e->site, e->variant);
            if (st != CLL_OK) return st;
        }
        rep->st[i] = s;
        if (s == CLL_TUNE_APPLIED) rep->n_applied++;
        else if (s != CLL_TUNE_TIE && !dry_run)
            cll_log(CLL_LOG_WARN, "tune: %s = %s: %s; the site keeps its default (see `cllama tune doctor`)", e->site,
                    e->variant, cll_tune_status_name(s));
    }
    return CLL_OK;
}

/* the site's variants, for the pin error: "a, b, c" */
static void site_variants(const cll_kernel_table *t, uint32_t op, uint32_t wtype, char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = 0;
    for (size_t i = 0; i < t->n && o + 1 < cap; i++) {
        const cll_kernel_row *r = &t->rows[i];
        if (r->wtype != wtype || !(r->op & op)) continue;
        const int w = snprintf(buf + o, cap - o, "%s%s", o ? ", " : "", r->name);
        if (w < 0) break;
        o += (size_t)w;
    }
    if (!buf[0]) snprintf(buf, cap, "(none)");
}

cll_status cll_tune_pins(const char *spec, const cll_kernel_table *t) {
    if (!spec || !*spec || !t) return CLL_OK;
    for (const char *p = spec; *p;) {
        const size_t len = strcspn(p, ",");
        char item[256];
        if (len >= sizeof item) return cll_err(CLL_ERR_ARG, "pin: '%.40s...': too long", p);
        memcpy(item, p, len);
        item[len] = 0;
        p += len + (p[len] == ',');
        if (!len) continue;
        char *eq = strchr(item, '=');
        if (!eq || eq == item || !eq[1])
            return cll_err(CLL_ERR_ARG, "pin '%s': expected SITE=VARIANT (e.g. cpu/gemv/q4_K=<row name>)", item);
        *eq = 0;
        const char *site = item, *var = eq + 1;
        char backend[16];
        uint32_t op = 0, wtype = 0;
        int64_t nt = 0;
        if (!cll_tune_parse_site(site, backend, sizeof backend, &op, &wtype, &nt))
            return cll_err(CLL_ERR_ARG, "pin '%s=%s': '%s' is no site (backend/gemv|gemm/type[/n1|n2-8|n9-64|n65+])",
                           site, var, site);
        if (strcmp(backend, t->backend)) continue; /* another backend's pin */
        const cll_kernel_row *r = cll_kernels_find(t, var);
        if (!r || r->wtype != wtype || !(r->op & op)) {
            char vars[1024];
            site_variants(t, op, wtype, vars, sizeof vars);
            return cll_err(CLL_ERR_ARG, "pin %s=%s: no such variant at %s; its variants: %s", site, var, site, vars);
        }
        if (!cll_tune_row_runs(t, r, nt, 0))
            return cll_err(CLL_ERR_UNSUPPORTED, "pin %s=%s: this variant cannot run on this machine (ISA / device)", site,
                           var);
        cll_status st = cll_kernels_set_override(site, var);
        if (st != CLL_OK) return st;
    }
    return CLL_OK;
}

/* does the file at path apply here as a whole (readable, this protocol, this box / class)? why when not */
static bool file_applies(const char *path, const cll_tune_box *here, char *why, size_t cap) {
    cll_tune_sidecar *sc = NULL;
    if (cll_tune_read(path, &sc) != CLL_OK) {
        snprintf(why, cap, "%s", cll_last_error());
        return false;
    }
    char diff[256];
    bool ok = true;
    if (sc->version != CLL_TUNE_VERSION) {
        snprintf(why, cap, "minted by race protocol v%d, this engine races v%d", sc->version, CLL_TUNE_VERSION);
        ok = false;
    } else if (sc->cls[0]) {
        snprintf(why, cap, "it is class defaults (%s), not a box's own sidecar", sc->cls);
        ok = false;
    } else if (cll_tune_box_diff(&sc->box, here, diff, sizeof diff)) {
        snprintf(why, cap, "minted on another box (%s)", diff);
        ok = false;
    }
    cll_tune_free(sc);
    return ok;
}

static bool exists(const char *p) {
    FILE *f = fopen(p, "rb");
    if (f) fclose(f);
    return f != NULL;
}

cll_status cll_tune_choose(const char *backend, const cll_tune_box *here, const char *path, cll_tune_choice *out) {
    memset(out, 0, sizeof *out);
    if (!backend || !here) return cll_err(CLL_ERR_ARG, "tune: choose: missing argument");
    const char *env = getenv("CLLAMA_TUNE");
    const bool flag = path && *path;
    if (!flag && env && *env) path = env;
    cll_tune_box_path(here, out->box_path, sizeof out->box_path);
    cll_tune_class(here, out->cls, sizeof out->cls);
    if (path && *path) {
        if (!strcmp(path, "none")) {
            snprintf(out->why, sizeof out->why, "built-in defaults: %s none asks for no tuning", flag ? "--tune" : "$CLLAMA_TUNE");
            return CLL_OK;
        }
        out->from = CLL_TUNE_FROM_FILE;
        snprintf(out->path, sizeof out->path, "%s", path);
        snprintf(out->why, sizeof out->why, "the sidecar %s given by %s", path, flag ? "--tune" : "$CLLAMA_TUNE");
        return CLL_OK;
    }
    char note[2048] = "";
    if (exists(out->box_path)) {
        char why[400];
        if (file_applies(out->box_path, here, why, sizeof why)) {
            out->from = CLL_TUNE_FROM_BOX;
            snprintf(out->path, sizeof out->path, "%s", out->box_path);
            snprintf(out->why, sizeof out->why, "this box's own sidecar %s", out->box_path);
            return CLL_OK;
        }
        snprintf(out->box_problem, sizeof out->box_problem, "%s", why);
        snprintf(note, sizeof note, "this box's sidecar %s does not apply (%s; re-mint: cllama tune)", out->box_path, why);
    } else {
        snprintf(note, sizeof note, "no sidecar of this box at %s", out->box_path);
    }
    if (!out->cls[0]) {
        snprintf(out->why, sizeof out->why, "built-in defaults: %s, and the box is of no class (%s, cpu_isa %s)", note,
                 here->backend, here->cpu_isa);
        return CLL_OK;
    }
    char searched[800];
    if (cll_tune_class_path(out->cls, out->path, sizeof out->path, searched, sizeof searched)) {
        out->from = CLL_TUNE_FROM_CLASS;
        snprintf(out->why, sizeof out->why, "the class defaults %s (class %s): %s", out->path, out->cls, note);
        return CLL_OK;
    }
    snprintf(out->why, sizeof out->why, "built-in defaults: %s, and no class defaults for class %s are shipped (looked in %s)",
             note, out->cls, searched);
    return CLL_OK;
}

cll_status cll_tune_load_for(const char *backend, const char *path, const char *pin_spec, cll_tune_loaded *out) {
    if (out) {
        memset(out, 0, sizeof *out);
        snprintf(out->stamp, sizeof out->stamp, "none");
    }
    const cll_kernel_table *t = NULL;
    if (!strcmp(backend, "cuda")) t = cll_cuda_kernel_table();
    else t = cll_cpu_kernel_table();
    if (!t) return CLL_OK; /* a build without that backend: nothing to apply */
    cll_status st = cll_tune_pins(pin_spec, t);
    if (st != CLL_OK) return st;
    if ((st = cll_tune_pins(getenv("CLLAMA_PIN"), t)) != CLL_OK) return st;
    const char *env = getenv("CLLAMA_TUNE");
    const bool explicit_file = (path && *path) || (env && *env);
    cll_tune_box here;
    if ((st = cll_tune_box_probe(backend, &here)) != CLL_OK) {
        /* no fingerprint (e.g. no device): only a file the user named is worth a warning */
        if (explicit_file) cll_log(CLL_LOG_WARN, "tune: %s; running on the defaults", cll_last_error());
        return CLL_OK;
    }
    cll_tune_choice ch;
    if ((st = cll_tune_choose(backend, &here, path, &ch)) != CLL_OK) return st;
    if (ch.box_problem[0])
        cll_log(CLL_LOG_WARN, "tune: this box's sidecar %s does not apply (%s); running on %s (see `cllama tune doctor`)",
                ch.box_path, ch.box_problem, ch.from == CLL_TUNE_FROM_CLASS ? ch.path : "the built-in defaults");
    if (ch.from == CLL_TUNE_FROM_NONE) return CLL_OK; /* the built-ins (silently, unless the box's sidecar was refused) */
    path = ch.path;
    cll_tune_sidecar *sc = NULL;
    st = cll_tune_read(path, &sc);
    if (st != CLL_OK) {
        cll_log(CLL_LOG_WARN, "tune: %s; running on the defaults (see `cllama tune doctor`)", cll_last_error());
        return CLL_OK;
    }
    if (ch.from == CLL_TUNE_FROM_FILE && sc->cls[0]) ch.from = CLL_TUNE_FROM_CLASS; /* class defaults named by --tune */
    cll_tune_report rep;
    st = cll_tune_apply(sc, &here, t, false, false, &rep);
    if (st == CLL_OK && !rep.applies)
        cll_log(CLL_LOG_WARN, "tune: %s: not applied: %s (see `cllama tune doctor`)", path, rep.why);
    /* the runtime knobs of this backend ("cpu.*", "cuda.*"); a bad one warns and keeps its default; a
     * CUDA knob whose CLLAMA_CUDA_* variable is set keeps the variable's value (an explicit A/B) */
    for (int i = 0; st == CLL_OK && rep.applies && i < sc->n_runtime; i++) {
        const cll_tune_knob *k = &sc->runtime[i];
        if (!strncmp(k->name, "cpu.", 4) && !strcmp(backend, "cpu")) {
            if (cll_cpu_knob_set(k->name, k->value) != CLL_OK)
                cll_log(CLL_LOG_WARN, "tune: %s: %s; it keeps its default", path, cll_last_error());
        } else if (!strncmp(k->name, "cuda.", 5) && !strcmp(backend, "cuda")) {
            bool kept = false;
            if (cll_cuda_knob_set(k->name, k->value, false, &kept) != CLL_OK)
                cll_log(CLL_LOG_WARN, "tune: %s: %s; it keeps its default", path, cll_last_error());
            else if (kept)
                cll_log(CLL_LOG_INFO, "tune: %s: %s = %g not applied: its environment variable is set", path, k->name,
                        k->value);
        } else if (strncmp(k->name, "cuda.", 5) && strcmp(k->name, "threads")) {
            cll_log(CLL_LOG_WARN, "tune: %s: runtime knob '%s' is not one this engine has; ignored", path, k->name);
        }
    }
    char sha[65];
    if (st == CLL_OK && rep.applies && out && cll_bench_sha256_file(path, sha)) {
        out->from = ch.from;
        snprintf(out->path, sizeof out->path, "%s", path);
        if (ch.from == CLL_TUNE_FROM_CLASS) snprintf(out->stamp, sizeof out->stamp, "class:%s:%s", sc->cls, sha);
        else snprintf(out->stamp, sizeof out->stamp, "%s", sha);
    }
    cll_tune_report_free(&rep);
    cll_tune_free(sc);
    return st;
}
