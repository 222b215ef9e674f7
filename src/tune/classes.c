/* tune/classes: class defaults (tune/defaults/<class>.json, DESIGN.md section 4): where the shipped
 * files are found at run time, and the export that makes one from a box's full mint.
 * Owns the sidecars it returns. Rule: a class file is only ever written by the export (it states
 * the command), holds only decisive sites and crowned knobs, and nothing of the box it was minted
 * on. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tune/tune.h"

#ifndef CLLAMA_DATADIR
#define CLLAMA_DATADIR "/usr/local/share/cllama"
#endif

static bool is_file(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

bool cll_tune_class_path(const char *cls, char *buf, size_t cap, char *searched, size_t scap) {
    if (cap) buf[0] = 0;
    if (searched && scap) searched[0] = 0;
    if (!cll_tune_class_name_ok(cls)) return false;
    char dirs[3][PATH_MAX + 64];
    int nd = 0;
    const char *env = getenv("CLLAMA_TUNE_DEFAULTS");
    if (env && *env) {
        snprintf(dirs[nd++], sizeof dirs[0], "%s", env);
    } else {
        /* next to the executable: <bin>/../share/cllama/tune/defaults (the build tree's copy, or an install) */
        char exe[PATH_MAX];
        const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n > 0) {
            exe[n] = 0;
            char *slash = strrchr(exe, '/');
            if (slash) {
                *slash = 0;
                snprintf(dirs[nd++], sizeof dirs[0], "%s/../share/cllama/tune/defaults", exe);
            }
        }
        snprintf(dirs[nd++], sizeof dirs[0], "%s/tune/defaults", CLLAMA_DATADIR); /* the configured install */
    }
    size_t so = 0;
    for (int i = 0; i < nd; i++) {
        if (searched && so + 1 < scap) {
            const int w = snprintf(searched + so, scap - so, "%s%s", i ? ", " : "", dirs[i]);
            if (w > 0) so += (size_t)w;
        }
        char p[sizeof dirs[0] + 64];
        snprintf(p, sizeof p, "%.4150s/%.47s.json", dirs[i], cls);
        if (is_file(p)) {
            char real[PATH_MAX];
            snprintf(buf, cap, "%s", realpath(p, real) ? real : p);
            return true;
        }
    }
    return false;
}

cll_status cll_tune_export_class(const cll_tune_sidecar *full, const char *cls, const char *generated_by,
                                 bool allow_noisy, cll_tune_sidecar **out) {
    *out = NULL;
    if (!full || !cls) return cll_err(CLL_ERR_ARG, "tune export: missing argument");
    if (!cll_tune_class_name_ok(cls)) return cll_err(CLL_ERR_ARG, "tune export: '%s' is not a class name", cls);
    if (full->cls[0])
        return cll_err(CLL_ERR_ARG, "tune export: the input is itself class defaults (%s); export from a box's full mint",
                       full->cls);
    if (full->version != CLL_TUNE_VERSION)
        return cll_err(CLL_ERR_ARG, "tune export: the mint is of race protocol v%d, this engine races v%d: re-mint first",
                       full->version, CLL_TUNE_VERSION);
    char mine[48];
    if (!cll_tune_class(&full->box, mine, sizeof mine))
        return cll_err(CLL_ERR_ARG, "tune export: the mint's box (%s, %s) belongs to no class", full->box.backend,
                       full->box.cpu_isa);
    if (strcmp(mine, cls))
        return cll_err(CLL_ERR_ARG,
                       "tune export: the mint was made on a box of class '%s' (backend %s, cpu_isa %s%s%s), not '%s'",
                       mine, full->box.backend, full->box.cpu_isa, full->box.gpu_name[0] ? ", gpu " : "",
                       full->box.gpu_name, cls);
    if (strcmp(full->noise, "ok") && !allow_noisy)
        return cll_err(CLL_ERR_ARG,
                       "tune export: the mint is stamped 'noise: %s' (the box was too noisy to race honestly): "
                       "re-mint on a quiet box, or pass --force to ship it stamped",
                       full->noise);
    cll_tune_sidecar *c = cll_tune_new();
    if (!c) return cll_err(CLL_ERR_NOMEM, "tune: out of memory");
    c->version = full->version;
    snprintf(c->cls, sizeof c->cls, "%s", cls);
    snprintf(c->box.backend, sizeof c->box.backend, "%s", full->box.backend);
    snprintf(c->engine_sha, sizeof c->engine_sha, "%s", full->engine_sha);
    snprintf(c->mode, sizeof c->mode, "%s", full->mode);
    snprintf(c->noise, sizeof c->noise, "%s", full->noise);
    snprintf(c->generated_by, sizeof c->generated_by, "%s", generated_by ? generated_by : "");
    cll_status st = CLL_OK;
    for (int i = 0; i < full->n_sites && st == CLL_OK; i++) {
        const cll_tune_entry *e = &full->sites[i];
        /* decisive only: a crown that its serving confirm (when run) did not overturn */
        if (strcmp(e->verdict, "crown") || !strcmp(e->confirm, "fail")) continue;
        st = cll_tune_set_site(c, e);
    }
    char prefix[16];
    snprintf(prefix, sizeof prefix, "%s.", full->box.backend);
    for (int i = 0; i < full->n_runtime && st == CLL_OK; i++) /* the backend's knobs; threads are the box's */
        if (!strncmp(full->runtime[i].name, prefix, strlen(prefix)))
            st = cll_tune_set_knob(c, full->runtime[i].name, full->runtime[i].value);
    if (st != CLL_OK) {
        cll_tune_free(c);
        return st;
    }
    *out = c;
    return CLL_OK;
}
