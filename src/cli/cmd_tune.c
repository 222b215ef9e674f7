/* cli/cmd_tune: the tuner's front end.
 *   cllama tune [-m MODEL] [--sites PATTERN] [--budget SECONDS] [--quick|--paranoid] [-t THREADS]
 *               [--tune FILE] [--force] [--allow-tolerant] [--shape RxC] [--gate-timeout SECONDS]
 *     races the CPU kernel rows of every site the model uses (decode gemv and prefill gemm per
 *     weight type; without -m the Llama-3.2-1B shapes of the usual formats), most served first,
 *     under the protocol of src/tune/race.h, and writes the box's sidecar (default path, or --tune;
 *     the previous one kept as .bak), printing the crowns that changed. An interrupted run resumes
 *     from FILE.journal; sites already raced with unchanged variants are kept.
 *   cllama tune --export-class CLASS [--tune FILE] -o OUT [--force]
 *     writes class defaults (tune/defaults/CLASS.json) from a full mint: its decisive sites and
 *     crowned knobs, nothing of the box (cll_tune_export_class); the file states the command.
 *   cllama tune doctor [--backend cpu|cuda] [--tune FILE] [--allow-tolerant]
 *     without running any kernel, explains which tune file applies on this box and why (its own
 *     sidecar, its class defaults, or the built-ins: cll_tune_choose), whether the race protocol
 *     version and every box fingerprint field (class defaults: the class) match, naming the one
 *     that differs, each site as tuned / class default / tie / stale / broken / not in grid / not
 *     runnable / tolerant with its paired ratio and confidence interval, the noise floor it was
 *     minted under, pins from $CLLAMA_PIN, and what fixes each problem. Exit 0 when a file
 *     applies cleanly (or there is none), 1 when one exists but does not apply or has unusable
 *     sites.
 * --backend cuda races the CUDA gemv rows as served (serve_race.c): each arm pinned into its own
 * loaded copy of the model, tg rounds in ABBA order; --serving does the same on the CPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "cli/cli.h"
#include "cpu/matmul.h"
#include "cuda/cuda.h"
#include "tune/race.h"
#include "tune/tune.h"

static void usage(FILE *f) {
    fprintf(f, "usage: cllama tune [-m MODEL] [--sites PATTERN] [--budget SECONDS] [--quick|--paranoid] [-t THREADS]\n"
               "                   [--tune FILE] [--force] [--allow-tolerant] [--shape RxC] [--backend cpu|cuda] [--serving]\n"
               "                   [--no-knobs] [--gate-timeout SECONDS]\n"
               "       cllama tune --export-class CLASS [--tune FILE] -o FILE [--force]\n"
               "       cllama tune doctor [--backend cpu|cuda] [--tune FILE] [--allow-tolerant]\n"
               "  tune: race this box's CPU kernel variants per site (gated, interleaved, paired; crowned only on a\n"
               "        clear win) and write its tune sidecar; --budget stops starting sites after SECONDS;\n"
               "        --backend cuda (and --serving on the CPU) race each gemv row pinned into its own copy of\n"
               "        the model, timing the served decode step (needs -m); with -m the runtime knobs race too,\n"
               "        end to end (CPU: cpu.chunks_per_thread, cpu.pf_gemv, cpu.par_min_work; CUDA: the decode\n"
               "        step's L2 prefetch sizes and the gemvs' early trigger, each value its own captured copy;\n"
               "        --no-knobs: not);\n"
               "        every arm is gated in a child process, killed after --gate-timeout SECONDS (60): a faulting\n"
               "        or hanging kernel is marked broken and the run goes on\n"
               "  --export-class: class defaults (tune/defaults/CLASS.json) from a full mint (--tune FILE, else this\n"
               "        box's sidecar): its decisive sites and crowned knobs, nothing of the box; the box must be\n"
               "        of CLASS; --force accepts a mint stamped noise: overridden\n"
               "  doctor: which tune file applies on this box (its own sidecar, its class defaults or the\n"
               "        built-ins) and why, each site's status and the fix of each problem (runs no kernel)\n");
}

/* the per-site report of one tune file: every site's status with its CI, and the fix of each problem;
 * 1 when something needs fixing */
static int doctor_file(const char *path, const cll_tune_box *here, const char *backend, bool tolerant) {
    cll_tune_sidecar *sc = NULL;
    if (cll_tune_read(path, &sc) != CLL_OK) {
        printf("UNREADABLE: %s\n  every run warns and uses the defaults. Fix: cllama tune -m MODEL (re-mints it), or "
               "restore %s.bak\n",
               cll_last_error(), path);
        return 1;
    }
    const bool cls = sc->cls[0] != 0;
    if (cls)
        printf("class defaults: class %s, exported from a %s-mode mint by engine %s, race protocol v%d (this engine: "
               "v%d)%s\n  written by: %s\n",
               sc->cls, sc->mode, sc->engine_sha[0] ? sc->engine_sha : "?", sc->version, CLL_TUNE_VERSION,
               !strcmp(sc->noise, "overridden") ? " (noise: overridden)" : "",
               sc->generated_by[0] ? sc->generated_by : "(unknown: not written by cllama tune --export-class)");
    else
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
    if (cll_tune_apply(sc, here, t, tolerant, true, &rep) != CLL_OK) {
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
        char st[40];
        snprintf(st, sizeof st, "%s", !rep.applies ? "not applied"
                                      : rep.st[i] == CLL_TUNE_APPLIED && cls ? "class default"
                                                                             : cll_tune_status_name(rep.st[i]));
        printf("%-34s %-30s %-22s %.3f [%.3f, %.3f] (%.1f%%)\n", e->site, e->variant, st, e->ratio, e->ci_lo, e->ci_hi,
               100.0 * e->margin);
        if (!rep.applies) continue;
        if (rep.st[i] == CLL_TUNE_STALE) stale++;
        else if (rep.st[i] != CLL_TUNE_APPLIED && rep.st[i] != CLL_TUNE_TIE && rep.st[i] != CLL_TUNE_TOLERANT) bad++;
    }
    for (int i = 0; i < sc->n_runtime; i++) printf("%-34s %-30g %s\n", sc->runtime[i].name, sc->runtime[i].value, "knob");
    if (rep.applies) printf("%d of %d sites apply\n", rep.n_applied, sc->n_sites);
    if (rep.applies && cls && !sc->n_sites && !sc->n_runtime)
        printf("the class defaults crown no site and no knob (the mint they were exported from found every default best "
               "or tied): every site runs its built-in default\n");
    const char *own = cls ? "cllama tune -m MODEL (mints this box's own sidecar, which takes precedence over the class "
                            "defaults; the shipped file is re-exported from a fresh mint: docs/tune.md)"
                          : NULL;
    if (stale) {
        printf("%d stale site(s): their variants changed since the race; the other sites still apply. Fix: %s\n", stale,
               own ? own : "cllama tune -m MODEL (re-races only the stale sites; they run on their defaults until then)");
        rc = 1;
    }
    if (bad) {
        printf("%d site(s) name variants this binary or machine cannot serve (they keep their defaults). Fix: %s\n", bad,
               own ? own : "cllama tune -m MODEL (re-mints them with this binary)");
        rc = 1;
    }
    if (!rep.applies)
        printf("Fix: cllama tune -m MODEL (mints this box's sidecar; the old file is kept as %s.bak), or delete %s "
               "to run on the defaults without this warning\n",
               path, path);
    cll_tune_report_free(&rep);
    cll_tune_free(sc);
    return rc;
}

/* which tune file applies on this box and why (cll_tune_choose), then that file's report */
static int doctor(const char *backend, const char *path_arg, bool tolerant) {
    cll_tune_box here;
    if (cll_tune_box_probe(backend, &here) != CLL_OK) {
        fprintf(stderr, "tune doctor: %s\n", cll_last_error());
        return 1;
    }
    char box[160], cls[48];
    cll_tune_box_name(&here, box, sizeof box);
    cll_tune_class(&here, cls, sizeof cls);
    printf("box: %s (%s; %s; %d threads%s%s), class %s\n", box, here.cpu_model, here.cpu_isa, here.cpu_threads,
           here.gpu_name[0] ? "; " : "", here.gpu_name, cls[0] ? cls : "(none)");
    const char *pins = getenv("CLLAMA_PIN");
    if (pins && *pins) printf("pins ($CLLAMA_PIN): %s\n", pins);
    cll_tune_choice ch;
    if (cll_tune_choose(backend, &here, path_arg, &ch) != CLL_OK) {
        fprintf(stderr, "tune doctor: %s\n", cll_last_error());
        return 1;
    }
    printf("applies: %s\n", ch.why);
    if (ch.from == CLL_TUNE_FROM_NONE) {
        printf("every site runs its built-in default (mint this box's own: cllama tune -m MODEL)\n");
        return ch.box_problem[0] ? 1 : 0;
    }
    printf("%s: %s%s\n", ch.from == CLL_TUNE_FROM_CLASS ? "class file" : "sidecar", ch.path,
           ch.from == CLL_TUNE_FROM_FILE ? (path_arg ? " (--tune)" : " ($CLLAMA_TUNE)")
           : ch.from == CLL_TUNE_FROM_BOX ? " (default path)"
                                          : "");
    struct stat sb;
    if (ch.from == CLL_TUNE_FROM_FILE && stat(ch.path, &sb)) {
        printf("no sidecar: %s does not exist; runs warn and use the built-in defaults (mint it: cllama tune -m MODEL "
               "--tune %s)\n",
               ch.path, ch.path);
        return 1;
    }
    int rc = doctor_file(ch.path, &here, backend, tolerant);
    if (ch.box_problem[0]) {
        printf("this box's own sidecar %s does not apply (%s). Fix: cllama tune -m MODEL (re-mints it; the old one is "
               "kept as .bak)\n",
               ch.box_path, ch.box_problem);
        rc = 1;
    }
    return rc;
}

static void iso_now(char *buf, size_t cap) {
    const time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* `cllama tune --export-class CLASS [--tune FILE] -o OUT [--force]`: class defaults from a full mint */
static int export_class(int argc, char **argv, const char *cls, const char *path_arg, const char *out, bool force) {
    if (!out) {
        fprintf(stderr, "cllama tune: --export-class needs -o FILE (e.g. -o tune/defaults/%s.json)\n", cls);
        return 2;
    }
    char path[1024];
    if (path_arg) snprintf(path, sizeof path, "%s", path_arg);
    else {
        cll_tune_box here;
        if (cll_tune_box_probe("cpu", &here) != CLL_OK) {
            fprintf(stderr, "cllama tune: %s\n", cll_last_error());
            return 1;
        }
        cll_tune_default_path(&here, path, sizeof path);
    }
    /* the command, as typed, goes into the file: a class file is never edited by hand */
    char cmd[512];
    size_t o = (size_t)snprintf(cmd, sizeof cmd, "cllama");
    for (int i = 0; i < argc && o < sizeof cmd; i++)
        o += (size_t)snprintf(cmd + o, sizeof cmd - o, strpbrk(argv[i], " \t'\"$") ? " '%s'" : " %s", argv[i]);
    cll_tune_sidecar *full = NULL, *c = NULL;
    if (cll_tune_read(path, &full) != CLL_OK || cll_tune_export_class(full, cls, cmd, force, &c) != CLL_OK) {
        fprintf(stderr, "cllama tune: %s\n", cll_last_error());
        cll_tune_free(full);
        return 1;
    }
    int ties = 0, broken = 0, failed = 0;
    for (int i = 0; i < full->n_sites; i++) {
        const cll_tune_entry *e = &full->sites[i];
        if (!strcmp(e->confirm, "fail")) failed++;
        else if (!strcmp(e->verdict, "tie")) ties++;
        else if (!strcmp(e->verdict, "broken")) broken++;
    }
    const cll_status st = cll_tune_rewrite(out, c); /* a shipped file: no .bak beside it */
    if (st != CLL_OK) fprintf(stderr, "cllama tune: %s\n", cll_last_error());
    else
        printf("wrote %s: class %s, %d decisive site(s) of %d (dropped: %d tie, %d broken, %d confirm-fail), %d runtime "
               "knob(s) of %d\n",
               out, cls, c->n_sites, full->n_sites, ties, broken, failed, c->n_runtime, full->n_runtime);
    cll_tune_free(full);
    cll_tune_free(c);
    return st == CLL_OK ? 0 : 1;
}

static int mint(int argc, char **argv) {
    const char *model = NULL, *pattern = NULL, *path_arg = NULL, *mode = "default", *backend = "cpu";
    const char *export_cls = NULL, *out = NULL;
    bool serving = false, no_knobs = false;
    double budget = 0, gate_timeout = 60;
    const char *gate_row = NULL; /* --gate-row NAME: the child side of a serving race's isolated gate */
    long long gate_cols = 0;
    int threads = (int)sysconf(_SC_NPROCESSORS_ONLN), rounds = 12;
    bool force = false, tolerant = false;
    long long ov_r = 0, ov_c = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const bool has = i + 1 < argc;
        if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && has) model = argv[++i];
        else if (!strcmp(a, "--sites") && has) pattern = argv[++i];
        else if (!strcmp(a, "--budget") && has) budget = atof(argv[++i]);
        else if (!strcmp(a, "--quick")) mode = "quick", rounds = 6;
        else if (!strcmp(a, "--paranoid")) mode = "paranoid", rounds = 24;
        else if ((!strcmp(a, "-t") || !strcmp(a, "--threads")) && has) threads = atoi(argv[++i]);
        else if (!strcmp(a, "--tune") && has) path_arg = argv[++i];
        else if (!strcmp(a, "--force")) force = true;
        else if (!strcmp(a, "--export-class") && has) export_cls = argv[++i];
        else if (!strcmp(a, "-o") && has) out = argv[++i];
        else if (!strcmp(a, "--gate-timeout") && has) {
            gate_timeout = atof(argv[++i]);
            if (!(gate_timeout > 0)) {
                fprintf(stderr, "cllama tune: --gate-timeout takes a positive number of seconds\n");
                return 2;
            }
        }
        else if (!strcmp(a, "--allow-tolerant")) tolerant = true;
        else if (!strcmp(a, "--gate-row") && has) gate_row = argv[++i];
        else if (!strcmp(a, "--gate-cols") && has) gate_cols = atoll(argv[++i]);
        else if (!strcmp(a, "--shape") && has) {
            if (sscanf(argv[++i], "%lldx%lld", &ov_r, &ov_c) != 2 || ov_r <= 0 || ov_c <= 0) {
                fprintf(stderr, "cllama tune: --shape takes ROWSxCOLS (e.g. 512x2048)\n");
                return 2;
            }
        } else if (!strcmp(a, "--backend") && has) {
            backend = argv[++i];
            if (strcmp(backend, "cpu") && strcmp(backend, "cuda")) {
                fprintf(stderr, "cllama tune: --backend cpu or cuda, not '%s'\n", backend);
                return 2;
            }
        } else if (!strcmp(a, "--serving")) {
            serving = true;
        } else if (!strcmp(a, "--no-knobs")) {
            no_knobs = true;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "cllama tune: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (threads < 1) {
        fprintf(stderr, "cllama tune: -t must be positive\n");
        return 2;
    }
    if (gate_row) return cll_race_gate_row_main(gate_row, (int64_t)gate_cols, backend, model, pattern, threads);
    if (export_cls) return export_class(argc, argv, export_cls, path_arg, out, force);
    if (!strcmp(backend, "cuda")) serving = true; /* the CUDA decode is a replayed graph: race the served step */
    if (serving && !model) {
        fprintf(stderr, "cllama tune: serving races (--backend cuda, --serving) need a model: -m MODEL\n");
        return 2;
    }
    cll_tune_box here;
    if (cll_tune_box_probe(backend, &here) != CLL_OK) {
        fprintf(stderr, "cllama tune: %s\n", cll_last_error());
        return 1;
    }
    char path[1024], jp[1100];
    if (path_arg) snprintf(path, sizeof path, "%s", path_arg);
    else cll_tune_default_path(&here, path, sizeof path);
    cll_tune_journal_path(path, jp, sizeof jp);
    /* the base: a journal to resume, else the box's current sidecar when it still applies here */
    cll_tune_sidecar *sc = NULL, *prev = NULL;
    char diff[256];
    struct stat sb;
    if (stat(jp, &sb) == 0 && cll_tune_read(jp, &sc) == CLL_OK &&
        (sc->version != CLL_TUNE_VERSION || cll_tune_box_diff(&sc->box, &here, diff, sizeof diff))) {
        cll_tune_free(sc);
        sc = NULL;
    }
    const bool from_journal = sc != NULL;
    if (sc) fprintf(stderr, "tune: resuming from %s (%d site(s) journalled)\n", jp, sc->n_sites);
    if (stat(path, &sb) == 0 && cll_tune_read(path, &prev) == CLL_OK &&
        (prev->version != CLL_TUNE_VERSION || cll_tune_box_diff(&prev->box, &here, diff, sizeof diff))) {
        fprintf(stderr, "tune: %s was minted for another box or protocol: starting afresh (it is kept as .bak)\n", path);
        cll_tune_free(prev);
        prev = NULL;
    }
    if (!sc && prev) {
        if (cll_tune_read(path, &sc) != CLL_OK) sc = NULL;
    }
    if (!sc) sc = cll_tune_new();
    if (!sc) {
        cll_tune_free(prev);
        fprintf(stderr, "cllama tune: out of memory\n");
        return 1;
    }
    sc->version = CLL_TUNE_VERSION;
    sc->box = here;
    char *git = cll_bench_git_sha();
    snprintf(sc->engine_sha, sizeof sc->engine_sha, "%s", git ? git : "unknown");
    free(git);
    if (!cll_bench_sha256_file("/proc/self/exe", sc->binary_sha256)) snprintf(sc->binary_sha256, 65, "unknown");
    snprintf(sc->mode, sizeof sc->mode, "%s", mode);
    iso_now(sc->date, sizeof sc->date);
    cll_race_site *sites = NULL;
    int n = 0;
    if (cll_race_sites(model, pattern, ov_r, ov_c, &sites, &n) != CLL_OK) {
        fprintf(stderr, "cllama tune: %s\n", cll_last_error());
        cll_tune_free(sc);
        cll_tune_free(prev);
        return 1;
    }
    cll_race_opts o;
    memset(&o, 0, sizeof o);
    o.threads = threads;
    o.rounds = rounds;
    o.budget_s = budget;
    o.allow_tolerant = tolerant;
    o.force = force;
    o.mode = mode;
    o.noise_bar = 0.02;
    o.min_margin = 0.03;
    o.child_timeout_s = gate_timeout;
    const char *tn = getenv("CLLAMA_TUNE_TEST_NOISE"); /* test hook: simulated noise */
    o.test_noise = tn ? atof(tn) : 0.0;
    if (serving)
        fprintf(stderr, "tune: serving races (%s) of %s, %d rounds (%s) -> %s\n", backend, model, rounds, mode, path);
    else
        fprintf(stderr, "tune: %d site(s)%s%s, %d rounds (%s), %d threads -> %s\n", n, model ? " of " : "",
                model ? model : " (Llama-3.2-1B shapes)", rounds, mode, threads, path);
    bool wrote = false;
    const double t_begin = cll_now(); /* the budget counts from here (the knob races stop starting past it) */
    cll_status st = serving ? cll_race_serving(model, backend, pattern, &o, sc, path, &wrote)
                            : cll_race_run(sites, n, &o, sc, path, &wrote);
    free(sites);
    /* crowns an isolated race cannot judge: end-to-end runs with and without each (needs -m) */
    int to_confirm = 0;
    for (int i = 0; i < sc->n_sites; i++) to_confirm += !strcmp(sc->sites[i].verdict, "crown") && !sc->sites[i].confirm[0];
    if (st == CLL_OK && wrote && to_confirm && !serving) {
        if (!model) {
            fprintf(stderr, "tune: %d crown(s) not confirmed end to end (pass -m MODEL to confirm them)\n", to_confirm);
        } else if ((st = cll_race_confirm(model, &o, sc)) == CLL_OK) {
            st = cll_tune_rewrite(path, sc);
        }
    }
    /* the backend's runtime knobs, end to end on the model (with every crown above in force); on
     * CUDA also when the model's sites had nothing to race (no site decided: every type has one
     * row here), the knob race then probing the noise itself */
    const bool cu = !strcmp(backend, "cuda");
    const bool knobs_alone = st == CLL_OK && !wrote && cu && sc->n_sites == 0 && !from_journal;
    if (st == CLL_OK && (wrote || knobs_alone) && model && !no_knobs) {
        st = cll_race_crowns_with(sc, NULL, NULL);
        if (st == CLL_OK && (st = cu ? cll_race_knobs_cuda(model, &o, sc, t_begin) : cll_race_knobs(model, &o, sc)) == CLL_OK) {
            if (wrote) {
                st = cll_tune_rewrite(path, sc);
            } else if (sc->noise_floor <= o.noise_bar || force) { /* knobs alone: the sidecar is theirs */
                snprintf(sc->noise, sizeof sc->noise, "%s", sc->noise_floor <= o.noise_bar ? "ok" : "overridden");
                sc->mint_seconds = cll_now() - t_begin;
                if ((st = cll_tune_write(path, sc)) == CLL_OK) wrote = true;
            }
        }
        cll_kernels_clear_overrides();
    }
    int rc = 0;
    const bool noisy = sc->noise_floor > o.noise_bar && !force;
    if (st == CLL_OK && !wrote && from_journal && !noisy) { /* nothing left to race: the journal becomes the sidecar */
        if ((st = cll_tune_write(path, sc)) == CLL_OK) wrote = true;
        remove(jp);
    }
    if (st != CLL_OK) {
        fprintf(stderr, "cllama tune: %s\n", cll_last_error());
        rc = 1;
    } else if (!wrote) {
        rc = noisy ? 1 : 0;
        if (!noisy) printf("nothing to race: %s is up to date\n", path);
    } else {
        int changed = 0;
        for (int i = 0; i < sc->n_sites; i++) {
            const cll_tune_entry *e = &sc->sites[i];
            const char *was = NULL;
            for (int k = 0; prev && k < prev->n_sites; k++)
                if (!strcmp(prev->sites[k].site, e->site)) was = prev->sites[k].verdict[0] == 'c' ? prev->sites[k].variant : "(default)";
            const char *now = !strcmp(e->verdict, "crown") ? e->variant : "(default)";
            if (!was || strcmp(was, now)) {
                printf("%-26s %s -> %s\n", e->site, was ? was : "(untuned)", now);
                changed++;
            }
        }
        printf("wrote %s: %d site(s), %d change(s)%s\n", path, sc->n_sites, changed, prev ? " (previous kept as .bak)" : "");
    }
    cll_tune_free(sc);
    cll_tune_free(prev);
    return rc;
}

int cll_cmd_tune(int argc, char **argv) {
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        usage(stdout);
        return 0;
    }
    if (argc < 2 || strcmp(argv[1], "doctor")) return mint(argc, argv);
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
