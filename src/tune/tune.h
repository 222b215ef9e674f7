/* tune/tune: the tune sidecar: what a box's kernel races decided, pinned to the box, to the
 * race protocol (CLL_TUNE_VERSION) and to each crowned variant's source, and how it is applied
 * to the kernel registry at load (DESIGN.md section 4).
 *   JSON: {"tune_version": N, "kernels": {SITE: entry}, "runtime": {KNOB: value},
 *          "provenance": {"box": {...}, "engine_git_sha", "binary_sha256", "noise_floor",
 *          "noise_probes", "noise", "mode", "date", "mint_seconds"}, "race": {...}}
 *   entry: {"variant", "params", "source_hash", "bit_exact", "verdict" (crown|tie|broken),
 *           "ratio", "ci": [lo, hi], "margin"}
 * Validity (cll_tune_apply): another tune_version -> nothing applied (re-tune); another box (any
 * fingerprint field) -> nothing applied; per site: a variant outside the grid or not runnable
 * here -> that site keeps its default with one warning line; a changed source hash -> that site
 * alone is stale; a tie or a broken arm -> nothing to apply; a tolerant (not bit-exact) crown ->
 * applied only when the caller allows tolerant numerics. A user pin outside the grid is a hard
 * error (cll_tune_pins). Unreadable JSON -> a warning, defaults.
 * Class defaults (tune/defaults/<class>.json, classes.c): the decisive part of a full mint, exported
 * without the box; they apply on any box of their class (cll_tune_class) that has no sidecar of its
 * own (load order: cll_tune_choose), the per-site rules unchanged.
 * Owns: the cll_tune_sidecar objects it returns (cll_tune_free). Rule: applying a sidecar only
 * ever sets registry overrides of sites it validated; it never changes a site silently (every
 * site not applied is reported, and `cllama tune doctor` explains it). */
#ifndef CLL_TUNE_TUNE_H
#define CLL_TUNE_TUNE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/core.h"
#include "kernels/registry.h"

/* bumped whenever the race protocol changes: a sidecar of another version is not applied */
#define CLL_TUNE_VERSION 1

/* the box a sidecar was minted on: every field must match for it to apply */
typedef struct {
    char backend[8];      /* "cpu" | "cuda" */
    char cpu_model[128];  /* /proc/cpuinfo "model name" */
    char cpu_isa[48];     /* cll_kernels_isa_str of the probed features (after CLLAMA_CPU_ISA caps) */
    int cpu_threads;      /* online cores */
    char gpu_name[128];   /* "" on the cpu backend */
    int gpu_sms;
    int gpu_cc;           /* major * 10 + minor */
    long long gpu_mem_mb;
    int gpu_driver;
    int cuda_runtime;
} cll_tune_box;

typedef struct {
    char site[96];        /* cll_kernels_site(_class): "cpu/gemv/q4_K", "cuda/gemv/q4_K/n2-8" */
    char variant[64];     /* the row's name */
    char params[256];     /* the row's full parameter string when raced */
    char source_hash[65]; /* cll_tune_row_hash when raced */
    bool bit_exact;
    char verdict[12];     /* "crown" | "tie" | "broken" */
    double ratio;         /* crowned / incumbent time (paired, geometric mean over rounds) */
    double ci_lo, ci_hi;  /* its 95% confidence interval */
    double margin;        /* the bar the interval had to clear */
    char confirm[8];      /* serving confirm of a crown: "pass", "fail" (then a tie), "" = not run */
    double confirm_gain;  /* end-to-end tokens/s with the crown / without, when run */
} cll_tune_entry;

typedef struct {
    char name[48];
    double value;
} cll_tune_knob;

typedef struct {
    int version;
    cll_tune_box box;
    char engine_sha[48];
    char binary_sha256[65];
    char mode[16];        /* "quick" | "default" | "paranoid" */
    char date[32];
    char noise[16];       /* "ok" | "overridden" */
    double noise_floor;
    double noise_probes[3];
    double mint_seconds;
    cll_tune_entry *sites;
    int n_sites;
    cll_tune_knob *runtime;
    int n_runtime;
    char *race_json;      /* the "race" object, verbatim JSON text (NULL: none) */
    /* class defaults (tune/defaults/<class>.json, cll_tune_export_class): the box's class; "" for a
     * box's own sidecar. A class file has no box fingerprint (box.backend alone), no race section,
     * no binary hash, date or noise probes: only decisive sites and crowned knobs. */
    char cls[48];
    char generated_by[512]; /* class defaults: the command that wrote the file (never hand-edited) */
} cll_tune_sidecar;

/* this box's fingerprint for a backend ("cpu" or "cuda"; cuda: device 0) */
cll_status cll_tune_box_probe(const char *backend, cll_tune_box *out);
/* the first fingerprint field in which a and b differ, with both values ("cpu_threads: 2 vs 16"),
 * or NULL when they match */
const char *cll_tune_box_diff(const cll_tune_box *a, const cll_tune_box *b, char *buf, size_t cap);
/* "<backend>-<cpu or gpu name, slugged>-<threads>c": the sidecar's file stem */
const char *cll_tune_box_name(const cll_tune_box *b, char *buf, size_t cap);
/* $CLLAMA_TUNE, else the box's own sidecar path (cll_tune_box_path) */
const char *cll_tune_default_path(const cll_tune_box *b, char *buf, size_t cap);
/* $XDG_CACHE_HOME (or ~/.cache)/cllama/tune/<box name>.json: where a box keeps its own sidecar */
const char *cll_tune_box_path(const cll_tune_box *b, char *buf, size_t cap);

/* ---- class defaults (tune/defaults/<class>.json) ---- */
/* The box's class, a pure function of its fingerprint: cpu by ISA ("x86-avx512-vnni",
 * "x86-avx512", "x86-avx2"); cuda by the GPU name without its vendor, slugged ("NVIDIA H200" ->
 * "h200"). NULL (buf "") when the box has no class (scalar CPUs, no GPU name). */
const char *cll_tune_class(const cll_tune_box *b, char *buf, size_t cap);
/* a class name is 1-47 of [a-z0-9-] */
bool cll_tune_class_name_ok(const char *cls);
/* The shipped class file of cls: the first <dir>/<cls>.json that exists, dir being
 * $CLLAMA_TUNE_DEFAULTS when set (then only it), else <the executable's dir>/../share/cllama/tune/defaults
 * (the build tree holds a copy there, an install puts them there), else CLLAMA_DATADIR/tune/defaults.
 * false when none exists; searched (may be NULL) gets the directories looked in. */
bool cll_tune_class_path(const char *cls, char *buf, size_t cap, char *searched, size_t scap);
/* The class defaults exported from a box's full mint: only the decisive sites (verdict crown,
 * serving confirm not "fail") and the crowned runtime knobs of the backend; the box fingerprint,
 * race records, binary hash, date, noise probes and threads stripped; tune_version, the class, the
 * mint's engine git sha, mode and every site's source hash kept; generated_by states the command.
 * Errors: full is itself a class file, of another protocol version, minted on a box of another
 * class, or stamped noise: overridden (unless allow_noisy). *out: a new sidecar with cls set. */
cll_status cll_tune_export_class(const cll_tune_sidecar *full, const char *cls, const char *generated_by,
                                 bool allow_noisy, cll_tune_sidecar **out);

/* a kernel row's source hash: sha256 over what defines the variant (backend, name, op, type,
 * ISA, layout, interleave, bit-exactness, params) */
void cll_tune_row_hash(const cll_kernel_table *t, const cll_kernel_row *r, char out[65]);

cll_tune_sidecar *cll_tune_new(void);
/* parse path; CLL_ERR_IO (unreadable) or CLL_ERR_FORMAT (bad JSON / missing fields) with the reason */
cll_status cll_tune_read(const char *path, cll_tune_sidecar **out);
/* the same from text (len bytes; name for the messages); what the reader and the fuzzer call */
cll_status cll_tune_parse(const char *text, size_t len, const char *name, cll_tune_sidecar **out);
/* write atomically (temp file + rename); an existing file is kept as path.bak first */
cll_status cll_tune_write(const char *path, const cll_tune_sidecar *sc);
/* the same without rotating .bak (a second write of one run: the serving confirm's verdicts) */
cll_status cll_tune_rewrite(const char *path, const cll_tune_sidecar *sc);
/* the journal of a run in progress (path.journal): written atomically after every raced site,
 * read back by the next run to resume, removed when the run ends (written or not) */
const char *cll_tune_journal_path(const char *path, char *buf, size_t cap);
cll_status cll_tune_journal(const char *path, const cll_tune_sidecar *sc);
void cll_tune_free(cll_tune_sidecar *sc);
/* append (or replace by site) an entry / knob */
cll_status cll_tune_set_site(cll_tune_sidecar *sc, const cll_tune_entry *e);
cll_status cll_tune_set_knob(cll_tune_sidecar *sc, const char *name, double value);

/* ---- applying ---- */
typedef enum {
    CLL_TUNE_APPLIED = 0,
    CLL_TUNE_TIE,          /* no clear winner: the incumbent keeps the site */
    CLL_TUNE_BROKEN,       /* the crowned arm failed its gate or faulted: nothing applied */
    CLL_TUNE_STALE,        /* the variant's source changed since the race: re-race this site */
    CLL_TUNE_NOT_IN_GRID,  /* no row of that name (or not of the site's op / type) */
    CLL_TUNE_NOT_RUNNABLE, /* the row exists but cannot run here (ISA, device, shape class) */
    CLL_TUNE_TOLERANT,     /* a crown that changes numerics, and tolerant crowns are not allowed */
    CLL_TUNE_BAD_SITE,     /* the site string does not parse, or names another backend */
} cll_tune_status;
const char *cll_tune_status_name(cll_tune_status s);

typedef struct {
    bool applies;          /* the file as a whole applies (version and box match) */
    char why[512];         /* when not: the reason and the fix */
    int n;                 /* = sidecar n_sites */
    cll_tune_status *st;   /* per site (malloc'd; cll_tune_report_free) */
    int n_applied;
} cll_tune_report;
void cll_tune_report_free(cll_tune_report *r);

/* Validate sc against this box and the table, and set a registry override for every site that
 * passes (table backend only). Warnings: one line per site not applied for a reason other than
 * tie, plus one line when the whole file does not apply. dry_run: validate and report, set
 * nothing (`cllama tune doctor`). */
cll_status cll_tune_apply(const cll_tune_sidecar *sc, const cll_tune_box *here, const cll_kernel_table *t,
                          bool allow_tolerant, bool dry_run, cll_tune_report *rep);

/* User pins "SITE=VARIANT[,SITE=VARIANT...]" (flag --pin, env CLLAMA_PIN) for the table's
 * backend (pins of another backend are skipped): a variant outside the site's grid is a hard
 * error naming the site and the variants it has; otherwise the override is set. */
cll_status cll_tune_pins(const char *spec, const cll_kernel_table *t);

/* can row r of table t run here (CPU features, or device 0's sm) at n_tokens (0: any) and cols
 * (<= 0: a few blocks of its format) */
bool cll_tune_row_runs(const cll_kernel_table *t, const cll_kernel_row *r, int64_t n_tokens, int64_t cols);

/* parse "backend/op/type[/class]" (op gemv|gemm|matmul, type a GGML type name) */
bool cll_tune_parse_site(const char *site, char *backend, size_t bcap, uint32_t *op, uint32_t *wtype,
                         int64_t *n_tokens);

/* Which tune file a run on this box applies, in order: an explicit file (path, else $CLLAMA_TUNE;
 * "none" means the built-ins) > the box's own sidecar at cll_tune_box_path (when it exists and
 * applies as a whole: readable, this protocol version, this box) > the class defaults of the box's
 * class (cll_tune_class_path) > the built-in defaults. Reads at most the per-box file; sets nothing. */
typedef enum {
    CLL_TUNE_FROM_NONE = 0, /* built-in defaults */
    CLL_TUNE_FROM_FILE,     /* --tune FILE / $CLLAMA_TUNE */
    CLL_TUNE_FROM_BOX,      /* the box's own sidecar */
    CLL_TUNE_FROM_CLASS,    /* tune/defaults/<class>.json */
} cll_tune_from;
typedef struct {
    cll_tune_from from;
    char path[1024];        /* the file chosen ("" for the built-ins) */
    char box_path[1024];    /* where the box's own sidecar is looked for */
    char cls[48];           /* the box's class ("" none) */
    char box_problem[512];  /* the box's own sidecar exists but does not apply: why ("" otherwise) */
    char why[4096];         /* the choice and its reason, one line (doctor, info, warnings) */
} cll_tune_choice;
cll_status cll_tune_choose(const char *backend, const cll_tune_box *here, const char *path, cll_tune_choice *out);

/* what a front end applied (cll_tune_load_for) */
typedef struct cll_tune_loaded {
    cll_tune_from from;
    char path[1024];        /* the file that applied, "" none */
    char stamp[128];        /* bench records' tune_sha256: the file's sha256, "class:<class>:<sha256>" for
                             * class defaults, or "none" */
} cll_tune_loaded;

/* The front ends' one call before a model load: pins from pin_spec and CLLAMA_PIN (hard
 * errors), then the file cll_tune_choose picks (path: --tune, may be NULL) applied with warnings.
 * *out (may be NULL) says what applied. */
cll_status cll_tune_load_for(const char *backend, const char *path, const char *pin_spec, cll_tune_loaded *out);

#endif
