/* tune/race: the kernel races that mint a tune sidecar (CPU backend today).
 * A site is (op, weight type, shape): gemv at n = 1 (decode) or gemm at n = 512 (prefill). Its
 * arms are the registry rows that serve it on this machine; the incumbent is the default row.
 * Protocol (CLL_TUNE_VERSION 1):
 *   1. gate every arm on fresh random weights (rows x cols of the site, ragged row count too):
 *      outputs NaN-poisoned first, every output within 1e-4 of sum|w x| of the scalar reference
 *      row, a poison control (the same check against a perturbed expectation must fail), and an
 *      arm that declares itself bit-exact must equal the incumbent bit for bit. A failing arm is
 *      "broken" and never timed. Each arm's gate runs in a forked child process with a timeout;
 *      an arm new to the site (not in its previous race record with the same source hash) also
 *      makes one dispatch at every timed shape there (its "trial"); a child that dies by a signal,
 *      exits non-zero or times out leaves that arm "broken" with the reason (race record "why"),
 *      and the run goes on. Timing stays in the parent, for the arms that passed.
 *   2. weights: gemv arms stream a ring of copies larger than twice the last-level cache (as in
 *      decode); gemm arms reuse one copy (compute-bound, as in prefill).
 *   3. noise probes (cv of 12 timings of the incumbent) before, between and after the sites;
 *      the floor is the largest; above 2% the run writes nothing (--force writes it stamped
 *      "noise: overridden").
 *   4. rounds: every arm timed once per round, in ABBA order (rounds alternate the order), each
 *      timing >= ~15 ms of back-to-back dispatches; the paired ratio arm / incumbent per round.
 *   5. crown: the geometric mean of the paired ratios and its 95% t-interval; a challenger is
 *      crowned only when the interval's upper end is below 1 - max(3%, noise floor) and it is
 *      bit-exact (or tolerant crowns are allowed); otherwise the site is a tie (incumbent keeps).
 * Owns nothing past a call. Rule: nothing is timed before its gate passed; a run that cannot
 * meet the noise bar writes nothing. */
#ifndef CLL_TUNE_RACE_H
#define CLL_TUNE_RACE_H

#include <sys/types.h>

#include "bench/bench.h"
#include "tune/tune.h"

#define CLL_RACE_MAX_SHAPES 4
typedef struct {
    uint32_t op;          /* CLL_KOP_GEMV (n = 1) or CLL_KOP_GEMM (n = 512) */
    uint32_t wtype;
    int n_shapes;         /* the site's weight shapes (most served first), each timed */
    struct {
        int64_t rows, cols;
        int count;        /* weights of that shape in the model */
    } shape[CLL_RACE_MAX_SHAPES];
    double share;         /* served-time weight (bytes read per token); orders the work */
} cll_race_site;

typedef struct {
    int threads;
    int rounds;           /* 6 quick, 12 default, 24 paranoid */
    double budget_s;      /* stop starting sites after this (0: none) */
    bool allow_tolerant;
    bool force;           /* write even when the noise bar is not met */
    const char *mode;
    double noise_bar;     /* 0.02 */
    double min_margin;    /* 0.03 */
    double test_noise;    /* test hook: add this cv to every probe (CLLAMA_TUNE_TEST_NOISE) */
    double child_timeout_s; /* an arm's gate (and trial) child is killed after this; <= 0: 60 */
} cll_race_opts;

/* the decode and prefill sites of a GGUF model (its 2-D weights grouped by type, each type's
 * shapes with their counts, sites ordered by share), or the Llama-3.2-1B shapes of the usual
 * formats when path is NULL; pattern (may be NULL) keeps the sites whose name contains it;
 * shape_override (rows, cols > 0) replaces every site's shapes by that one (quick checks).
 * *out malloc'd. */
cll_status cll_race_sites(const char *path, const char *pattern, int64_t ov_rows, int64_t ov_cols, cll_race_site **out,
                          int *n);
/* "cpu/gemv/q4_K" for a site */
const char *cll_race_site_name(const cll_race_site *s, char *buf, size_t cap);

/* Race the sites into sc (entries set, race section appended), journalling every finished site
 * to path (atomic writes). Sites already in sc with a fresh source hash are skipped (resume).
 * *wrote tells whether anything was written (false: noise or nothing to do). */
cll_status cll_race_run(const cll_race_site *sites, int n, const cll_race_opts *o, cll_tune_sidecar *sc,
                        const char *path, bool *wrote);

/* whether a step (a site, a knob) may start: no budget (budget_s <= 0), or the elapsed seconds plus
 * the longest step so far (0 before the first) stay within it, so a run ends inside its budget */
bool cll_race_budget_allows(double budget_s, double elapsed_s, double longest_step_s);
/* seconds a knob race over n_values loaded copies takes, from its first copy: n_values loads of load_s,
 * rounds x n_values served rounds of round_s, and the noise probe's 5 rounds when it must run (probe) */
double cll_race_knob_estimate(int n_values, double load_s, double round_s, int rounds, bool probe);

/* the paired statistics of arm times ta against the incumbent's t0 over R rounds: the geometric
 * mean of the per-round ratios and its 95% t-interval */
void cll_race_paired(const double *ta, const double *t0, int R, double *ratio, double *lo, double *hi);

/* the end of a run: above the noise bar (unless forced) nothing is written and the journal goes;
 * else the sidecar is written when a site was raced (stamped ok / overridden), the journal
 * removed, and a summary line printed (what: "site(s)", "serving site(s)") */
cll_status cll_race_finish(const char *path, cll_tune_sidecar *sc, const cll_race_opts *o, int done, int skipped,
                           const char *what, bool *wrote);

/* the CPU gate of one row at 64 (and 40) x min(cols, 1024) (race.h step 1), in a child process */
bool cll_race_gate_cpu_row(const cll_kernel_row *r, int64_t cols, char *why, size_t cap);
/* a serving race's gate of one gemv row (the CUDA device gate at 256 and 37 rows of min(cols, 4096),
 * or the CPU gate), in this process: what `cllama tune --gate-row` runs in the child the race spawns */
bool cll_race_gate_serving_row(const cll_kernel_row *r, int64_t cols, bool cuda, char *why, size_t cap);
/* `cllama tune --gate-row NAME --gate-cols N --backend B [-m MODEL --sites SITE -t T]`: the child
 * side of a serving race's isolated gate, then (with a model and site) its trial, 4 decode steps of
 * the model with the row pinned at the site; prints "gate-row ok" or "gate-row broken: WHY" and
 * returns the exit status */
int cll_race_gate_row_main(const char *name, int64_t cols, const char *backend, const char *model, const char *site,
                           int threads);
/* test hook (CLLAMA_TUNE_TEST_FAULT=VARIANT=segv|hang[,...]): that arm faults or hangs here */
void cll_race_test_fault(const char *variant);
/* whether CLLAMA_TUNE_TEST_FAULT names VARIANT=what (e.g. "trial-segv": the serving race's trial) */
bool cll_race_test_fault_is(const char *variant, const char *what);
/* a child with a pipe back: fork()'s result (-1 with errno on failure, both ends closed); the
 * child keeps fd[1] (the write end), the parent fd[0]; stdio flushed first */
pid_t cll_race_fork_piped(int fd[2]);
/* a child's report: up to cap bytes from fd once readable, waiting at most left_s; > 0 bytes read,
 * 0 at its end (or an error), -1 when the time ran out first */
ssize_t cll_race_read_child(int fd, char *dst, size_t cap, double left_s);
/* "SIGSEGV" for SIGSEGV, .. ("signal N" in buf otherwise) */
const char *cll_race_sig_name(int sig, char *buf, size_t cap);
/* s JSON-escaped into buf (quotes, backslashes, control characters as \u00XX; cut to fit cap): the
 * race records' reasons */
const char *cll_race_json_esc(const char *s, char *buf, size_t cap);

/* Serving races (the CUDA backend, and the CPU with --serving): per gemv site of the model's
 * weight types, every row serving it here, gated first (CUDA: cuda/gate.c at two shapes; CPU:
 * the CPU gate), is loaded as the site's pin into its own copy of the model (every other crown
 * of sc in force); the arms then decode tg (tg128, quick tg32) in ABBA rounds, paired per round,
 * with noise probes of the incumbent; the crown rule as above. What is timed is the served
 * step itself (on CUDA: the replayed graph), so no separate confirm is needed. */
cll_status cll_race_serving(const char *model, const char *backend, const char *pattern, const cll_race_opts *o,
                            cll_tune_sidecar *sc, const char *path, bool *wrote);

/* one served tg run of ng steps of bm (a round): *sec its wall seconds; on CUDA a run the SM clock
 * fell below 90% of its maximum in is redone (twice at most; what names the race in the note) */
cll_status cll_race_served_tg(cll_bench_model *bm, int ng, bool cuda, const char *what, double *sec);

/* a noise probe: the cv of 5 tg runs of ng steps of one loaded copy (plus test_noise, the hook) */
double cll_race_probe_tg(cll_bench_model *bm, int ng, double test_noise);

/* the registry overrides of every crown of sc except site's, and pin at site (site NULL: every
 * crown; pin NULL: site keeps its default); clears any other override first */
cll_status cll_race_crowns_with(const cll_tune_sidecar *sc, const char *site, const char *pin);

/* Races of the CPU runtime knobs (cpu/knobs.h) on model (knob_race.c): per knob its candidate
 * values in ABBA rounds of tg + pp runs on one loaded copy, paired against the default; a crowned
 * value goes to sc's runtime section (a tie drops an older crown); knobs are reset on return. */
cll_status cll_race_knobs(const char *model, const cll_race_opts *o, cll_tune_sidecar *sc);

/* Races of the CUDA runtime knobs (cuda/knobs.h; knob_race.c) on model: per knob each candidate
 * value in its own loaded copy whose decode graph was captured with it (the knobs crowned before
 * it in force), then tg rounds across the copies in ABBA order, paired against the default; the
 * crown rule and the runtime section as above. When no site race probed the noise (sc's floor
 * 0), the first knob's default copy is probed: above o->noise_bar (unless forced) no knob races
 * and nothing is crowned. Stops starting knobs when the budget (from t_start) would not hold the
 * next. Knobs are reset on return. */
cll_status cll_race_knobs_cuda(const char *model, const cll_race_opts *o, cll_tune_sidecar *sc, double t_start);
/* the name of the i-th CUDA knob those races cover (NULL past the last) */
const char *cll_race_cuda_knob(int i);

/* Serving confirm (DESIGN.md section 4): for every crown of sc not yet confirmed, two end-to-end
 * runs of model that differ only in that crown (every other crown of sc applied to both): tg for
 * a gemv site, pp for a gemm site (quick: tg32 / pp128, else tg128 / pp512), A B A B, each run a
 * fresh load (rows are chosen at weight preparation). The crown stands when the mean tokens/s
 * with it is at least 1.005x the mean without; otherwise the site becomes a tie ("confirm":
 * "fail"). Registry overrides are cleared on return. */
cll_status cll_race_confirm(const char *model, const cll_race_opts *o, cll_tune_sidecar *sc);

#endif
