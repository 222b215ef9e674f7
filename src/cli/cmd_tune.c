/* cli/cmd_tune: `cllama tune doctor [--backend cpu|cuda] [--tune FILE] [--allow-tolerant]`:
 * without running any kernel, explains which tune sidecar applies on this box and why: the file
 * it would read (--tune, $CLLAMA_TUNE, else the box's default path), whether the race protocol
 * version and every box fingerprint field match (naming the one that differs), each site as
 * tuned / tie / stale / broken / not in grid / not runnable / tolerant with its paired ratio and
 * confidence interval, the noise floor it was minted under, pins from $CLLAMA_PIN, and the
 * command that fixes each problem. Exit 0 when a sidecar applies (or there is none: the box runs
 * on its defaults), 1 when one exists but does not apply or has unusable sites, 2 on usage.
 * (The races that mint a sidecar are not built yet: sidecars come from the tests and by hand.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cpu/matmul.h"
#include "cuda/cuda.h"
#include "tune/tune.h"

static void usage(FILE *f) {
    fprintf(f, "usage: cllama tune doctor [--backend cpu|cuda] [--tune FILE] [--allow-tolerant]\n"
               "  explains which tune sidecar applies on this box and why (runs no kernel)\n");
}

static int doctor(const char *backend, const char *path_arg, bool tolerant) {
    cll_tune_box here;
    if (cll_tune_box_probe(backend, &here) != CLL_OK) {
        fprintf(stderr, "tune doctor: %s\n", cll_last_error());
        return 1;
    }
    char box[160], path[1024];
    cll_tune_box_name(&here, box, sizeof box);
    if (path_arg) snprintf(path, sizeof path, "%s", path_arg);
    else cll_tune_default_path(&here, path, sizeof path);
    printf("box: %s (%s; %s; %d threads%s%s)\n", box, here.cpu_model, here.cpu_isa, here.cpu_threads,
           here.gpu_name[0] ? "; " : "", here.gpu_name);
    printf("sidecar: %s%s\n", path, path_arg ? " (--tune)" : getenv("CLLAMA_TUNE") ? " ($CLLAMA_TUNE)" : " (default path)");
    const char *pins = getenv("CLLAMA_PIN");
    if (pins && *pins) printf("pins ($CLLAMA_PIN): %s\n", pins);
    struct stat sb;
    if (stat(path, &sb)) {
        printf("no sidecar: this box runs on its built-in defaults\n");
        return 0;
    }
    cll_tune_sidecar *sc = NULL;
    if (cll_tune_read(path, &sc) != CLL_OK) {
        printf("UNREADABLE: %s\n  every run warns and uses the defaults. Fix: delete it (or restore %s.bak)\n",
               cll_last_error(), path);
        return 1;
    }
    printf("minted: %s, mode %s, engine %s, race protocol v%d (this engine: v%d), noise floor %.2f%%%s\n",
           sc->date[0] ? sc->date : "?", sc->mode, sc->engine_sha[0] ? sc->engine_sha : "?", sc->version,
           CLL_TUNE_VERSION, 100.0 * sc->noise_floor, !strcmp(sc->noise, "overridden") ? " (noise: overridden)" : "");
    const cll_kernel_table *t = !strcmp(backend, "cuda") ? cll_cuda_kernel_table() : cll_cpu_kernel_table();
    if (!t) {
        printf("this build has no %s kernel table: nothing can apply\n", backend);
        cll_tune_free(sc);
        return 1;
    }
    cll_tune_report rep;
    if (cll_tune_apply(sc, &here, t, tolerant, true, &rep) != CLL_OK) {
        fprintf(stderr, "tune doctor: %s\n", cll_last_error());
        cll_tune_free(sc);
        return 1;
    }
    int rc = 0;
    if (!rep.applies) {
        printf("NOT APPLIED: %s\n", rep.why);
        rc = 1;
    }
    printf("%-34s %-30s %-22s %s\n", "site", "variant", "status", "ratio [95% CI] (bar)");
    int bad = 0, stale = 0;
    for (int i = 0; i < sc->n_sites; i++) {
        const cll_tune_entry *e = &sc->sites[i];
        const char *s = rep.applies ? cll_tune_status_name(rep.st[i]) : "not applied";
        printf("%-34s %-30s %-22s %.3f [%.3f, %.3f] (%.1f%%)\n", e->site, e->variant, s, e->ratio, e->ci_lo, e->ci_hi,
               100.0 * e->margin);
        if (!rep.applies) continue;
        if (rep.st[i] == CLL_TUNE_STALE) stale++;
        else if (rep.st[i] != CLL_TUNE_APPLIED && rep.st[i] != CLL_TUNE_TIE && rep.st[i] != CLL_TUNE_TOLERANT) bad++;
    }
    if (rep.applies) printf("%d of %d sites apply\n", rep.n_applied, sc->n_sites);
    if (stale) {
        printf("%d stale site(s): their variants changed since the race; the other sites still apply. Fix: "
               "re-race the stale sites on this box (they run on their defaults until then)\n",
               stale);
        rc = 1;
    }
    if (bad) {
        printf("%d site(s) name variants this binary or machine cannot serve (they keep their defaults). Fix: "
               "re-mint the sidecar with this binary on this box\n",
               bad);
        rc = 1;
    }
    if (!rep.applies)
        printf("Fix: mint a sidecar on this box (the old file is kept as %s.bak), or delete %s to run on the "
               "defaults without this warning\n",
               path, path);
    cll_tune_report_free(&rep);
    cll_tune_free(sc);
    return rc;
}

int cll_cmd_tune(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "doctor")) {
        usage(argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) ? stdout : stderr);
        return argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) ? 0 : 2;
    }
    const char *backend = "cpu", *path = NULL;
    bool tolerant = false;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc) backend = argv[++i];
        else if (!strcmp(argv[i], "--tune") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "--allow-tolerant")) tolerant = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "cllama tune doctor: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (strcmp(backend, "cpu") && strcmp(backend, "cuda")) {
        fprintf(stderr, "cllama tune doctor: --backend cpu or cuda, not '%s'\n", backend);
        return 2;
    }
    return doctor(backend, path, tolerant);
}
