/* tune_test: the tune sidecar's validity rules (src/tune/tune.h), each with a crafted sidecar on
 * this box's CPU kernel table: round trip and .bak, another race-protocol version, another box,
 * a stale site among valid ones, a variant outside the grid, a tie, a tolerant crown with and
 * without the policy flag, another binary with the same hashes, unreadable JSON, pins inside and
 * outside the grid, site parsing, and `cllama tune doctor` naming a stale site and its fix. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "bench/board.h"
#include "cpu/knobs.h"
#include "cuda/knobs.h"
#include "cpu/matmul.h"
#include "formats/formats.h"
#include "kernels/registry.h"
#include "tune/race.h"
#include "tune/tune.h"

static char g_dir[128];

/* two CPU gemv rows of q4_0 that run here: the default (bit-exact) and another (tolerant) */
static void q4_0_rows(const cll_kernel_table *t, const cll_kernel_row **def, const cll_kernel_row **alt) {
    *def = *alt = NULL;
    const uint32_t feat = cll_kernels_cpu_features();
    for (size_t i = 0; i < t->n; i++) {
        const cll_kernel_row *r = &t->rows[i];
        if (r->wtype != CLL_TYPE_Q4_0 || !(r->op & CLL_KOP_GEMV) || (r->isa & feat) != r->isa) continue;
        if (r->is_default && !*def) *def = r;
        else if (!r->is_default && !*alt) *alt = r;
    }
}

static cll_tune_entry entry(const cll_kernel_table *t, const char *site, const cll_kernel_row *r, const char *verdict) {
    cll_tune_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.site, sizeof e.site, "%s", site);
    snprintf(e.variant, sizeof e.variant, "%s", r->name);
    snprintf(e.params, sizeof e.params, "%s", r->params ? r->params : "");
    cll_tune_row_hash(t, r, e.source_hash);
    e.bit_exact = r->bit_exact;
    snprintf(e.verdict, sizeof e.verdict, "%s", verdict);
    e.ratio = 0.9;
    e.ci_lo = 0.88;
    e.ci_hi = 0.92;
    e.margin = 0.03;
    return e;
}

/* a sidecar minted "here" */
static cll_tune_sidecar *here_sidecar(void) {
    cll_tune_sidecar *sc = cll_tune_new();
    assert_non_null(sc);
    assert_int_equal(cll_tune_box_probe("cpu", &sc->box), CLL_OK);
    snprintf(sc->engine_sha, sizeof sc->engine_sha, "test");
    snprintf(sc->date, sizeof sc->date, "2026-12-01T00:00:00Z");
    sc->noise_floor = 0.01;
    return sc;
}

static const char *path_of(const char *name, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/%s", g_dir, name);
    return buf;
}

/* the row dispatch picks for a q4_0 gemv here, and whether an override chose it */
static const cll_kernel_row *picked(const cll_kernel_table *t, bool *forced) {
    cll_kernel_shape s;
    memset(&s, 0, sizeof s);
    s.wtype = CLL_TYPE_Q4_0;
    s.rows = 4096;
    s.cols = 4096;
    s.features = cll_kernels_cpu_features();
    s.n_tokens = 1;
    return cll_kernels_select(t, CLL_KOP_GEMV, &s, -1, forced);
}

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/cllama-tune-test-%d", (int)getpid());
    char cmd[320];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", g_dir, g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[320];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    cll_kernels_clear_overrides();
    return system(cmd) == 0 ? 0 : -1;
}

static void test_roundtrip_and_bak(void **state) {
    (void)state;
    const cll_kernel_table *t = cll_cpu_kernel_table();
    const cll_kernel_row *def, *alt;
    q4_0_rows(t, &def, &alt);
    assert_non_null(def);
    cll_tune_sidecar *sc = here_sidecar();
    cll_tune_entry e = entry(t, "cpu/gemv/q4_0", def, "crown");
    assert_int_equal(cll_tune_set_site(sc, &e), CLL_OK);
    assert_int_equal(cll_tune_set_knob(sc, "threads", 2), CLL_OK);
    sc->race_json = strdup("{\"cpu/gemv/q4_0\":{\"rounds\":12}}");
    char p[320], bak[340];
    path_of("rt/deep/box.json", p, sizeof p); /* directories are created */
    assert_int_equal(cll_tune_write(p, sc), CLL_OK);
    cll_tune_sidecar *rd = NULL;
    assert_int_equal(cll_tune_read(p, &rd), CLL_OK);
    assert_int_equal(rd->version, CLL_TUNE_VERSION);
    assert_int_equal(rd->n_sites, 1);
    assert_string_equal(rd->sites[0].variant, def->name);
    assert_string_equal(rd->sites[0].source_hash, e.source_hash);
    assert_true(rd->sites[0].ci_lo > 0.879 && rd->sites[0].ci_hi < 0.921);
    assert_int_equal(rd->n_runtime, 1);
    assert_string_equal(rd->runtime[0].name, "threads");
    assert_non_null(rd->race_json);
    assert_non_null(strstr(rd->race_json, "rounds"));
    char diff[256];
    assert_null(cll_tune_box_diff(&rd->box, &sc->box, diff, sizeof diff));
    /* a re-mint keeps the previous file as .bak */
    assert_int_equal(cll_tune_write(p, sc), CLL_OK);
    snprintf(bak, sizeof bak, "%s.bak", p);
    assert_int_equal(access(bak, R_OK), 0);
    cll_tune_free(rd);
    cll_tune_free(sc);
}

/* apply sc and return the report (overrides cleared first) */
static void apply(const cll_tune_sidecar *sc, bool tolerant, bool dry, cll_tune_report *rep) {
    cll_kernels_clear_overrides();
    cll_tune_box here;
    assert_int_equal(cll_tune_box_probe("cpu", &here), CLL_OK);
    assert_int_equal(cll_tune_apply(sc, &here, cll_cpu_kernel_table(), tolerant, dry, rep), CLL_OK);
}

static void test_version_and_box(void **state) {
    (void)state;
    const cll_kernel_table *t = cll_cpu_kernel_table();
    const cll_kernel_row *def, *alt;
    q4_0_rows(t, &def, &alt);
    cll_tune_sidecar *sc = here_sidecar();
    cll_tune_entry e = entry(t, "cpu/gemv/q4_0", def, "crown");
    cll_tune_set_site(sc, &e);
    cll_tune_report rep;
    bool forced = true;
    /* another race-protocol version: nothing applies, the reason says re-tune */
    sc->version = CLL_TUNE_VERSION + 1;
    apply(sc, false, false, &rep);
    assert_false(rep.applies);
    assert_non_null(strstr(rep.why, "version"));
    picked(t, &forced);
    assert_false(forced);
    cll_tune_report_free(&rep);
    sc->version = CLL_TUNE_VERSION;
    /* another box: nothing applies, the differing field is named */
    sc->box.cpu_threads += 7;
    apply(sc, false, false, &rep);
    assert_false(rep.applies);
    assert_non_null(strstr(rep.why, "cpu_threads"));
    picked(t, &forced);
    assert_false(forced);
    cll_tune_report_free(&rep);
    sc->box.cpu_threads -= 7;
    snprintf(sc->box.cpu_model, sizeof sc->box.cpu_model, "Some Other CPU");
    apply(sc, false, false, &rep);
    assert_false(rep.applies);
    assert_non_null(strstr(rep.why, "cpu_model"));
    cll_tune_report_free(&rep);
    cll_tune_free(sc);
}

static void test_sites(void **state) {
    (void)state;
    const cll_kernel_table *t = cll_cpu_kernel_table();
    const cll_kernel_row *def, *alt;
    q4_0_rows(t, &def, &alt);
    assert_non_null(alt);
    cll_tune_sidecar *sc = here_sidecar();
    /* q4_0 gemv: a bit-exact crown (applies); q4_0 gemm: stale (its hash changed); q8_0: a
     * variant outside the grid; q4_K: a tie; q4_0 gemv n2-8: a tolerant crown */
    cll_tune_entry a = entry(t, "cpu/gemv/q4_0", def, "crown");
    cll_tune_entry b = entry(t, "cpu/gemm/q4_0", def, "crown");
    b.source_hash[0] = b.source_hash[0] == 'a' ? 'b' : 'a';
    cll_tune_entry c = entry(t, "cpu/gemv/q8_0", def, "crown");
    snprintf(c.variant, sizeof c.variant, "matmul_q8_0_no_such_row");
    cll_tune_entry d = entry(t, "cpu/gemv/q4_K", def, "tie");
    cll_tune_entry f = entry(t, "cpu/gemv/q4_0/n2-8", alt, "crown");
    cll_tune_entry g = entry(t, "cpu/gemv/q6_K", def, "crown"); /* q4_0's row named at a q6_K site */
    cll_tune_entry h = entry(t, "cuda/gemv/q4_0", def, "crown"); /* another backend's site */
    const cll_tune_entry *all[] = {&a, &b, &c, &d, &f, &g, &h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) assert_int_equal(cll_tune_set_site(sc, all[i]), CLL_OK);
    cll_tune_report rep;
    apply(sc, false, false, &rep);
    assert_true(rep.applies);
    assert_int_equal(rep.st[0], CLL_TUNE_APPLIED);
    assert_int_equal(rep.st[1], CLL_TUNE_STALE);
    assert_int_equal(rep.st[2], CLL_TUNE_NOT_IN_GRID);
    assert_int_equal(rep.st[3], CLL_TUNE_TIE);
    assert_int_equal(rep.st[4], CLL_TUNE_TOLERANT);
    assert_int_equal(rep.st[5], CLL_TUNE_NOT_IN_GRID);
    assert_int_equal(rep.st[6], CLL_TUNE_BAD_SITE);
    assert_int_equal(rep.n_applied, 1);
    bool forced = false;
    const cll_kernel_row *r = picked(t, &forced);
    assert_true(forced); /* the valid crown is in force; the stale and bad sites changed nothing */
    assert_ptr_equal(r, def);
    cll_tune_report_free(&rep);
    /* the policy flag lets the tolerant crown in (and only it changes) */
    apply(sc, true, false, &rep);
    assert_int_equal(rep.st[4], CLL_TUNE_APPLIED);
    assert_int_equal(rep.n_applied, 2);
    cll_tune_report_free(&rep);
    /* a dry run (doctor) sets nothing */
    apply(sc, false, true, &rep);
    assert_int_equal(rep.n_applied, 1);
    picked(t, &forced);
    assert_false(forced);
    cll_tune_report_free(&rep);
    /* another binary, same site hashes: still applies */
    snprintf(sc->binary_sha256, sizeof sc->binary_sha256, "%064d", 7);
    snprintf(sc->engine_sha, sizeof sc->engine_sha, "another-build");
    apply(sc, false, false, &rep);
    assert_true(rep.applies);
    assert_int_equal(rep.st[0], CLL_TUNE_APPLIED);
    cll_tune_report_free(&rep);
    cll_kernels_clear_overrides();
    cll_tune_free(sc);
}

static void test_unreadable(void **state) {
    (void)state;
    char p[320];
    path_of("bad.json", p, sizeof p);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("{\"tune_version\": 1, \"kernels\": {", f);
    fclose(f);
    cll_tune_sidecar *sc = NULL;
    assert_int_equal(cll_tune_read(p, &sc), CLL_ERR_FORMAT);
    assert_null(sc);
    f = fopen(p, "w");
    fputs("{\"tune_version\": 1, \"kernels\": {}}", f); /* valid JSON, no provenance */
    fclose(f);
    assert_int_equal(cll_tune_read(p, &sc), CLL_ERR_FORMAT);
    assert_non_null(strstr(cll_last_error(), "provenance"));
    path_of("missing.json", p, sizeof p);
    assert_int_equal(cll_tune_read(p, &sc), CLL_ERR_IO);
    /* the front ends' load: a warning and the defaults, never a failure */
    cll_tune_loaded tl;
    path_of("bad.json", p, sizeof p);
    assert_int_equal(cll_tune_load_for("cpu", p, NULL, &tl), CLL_OK);
    assert_string_equal(tl.stamp, "none");
    assert_int_equal(tl.from, CLL_TUNE_FROM_NONE);
}

/* numbers the box fingerprint stores as ints: out of range, negative or fractional values are refused, never cast
 * (CI's fuzzer found "cuda_runtime": 1e12 converted to int, which is undefined behaviour) */
static void test_box_numbers(void **state) {
    (void)state;
    static const char *bad[] = {"\"cuda_runtime\": 1e12", "\"cpu_threads\": -2", "\"gpu_sms\": 2.5",
                                "\"gpu_cc\": 3e9",        "\"gpu_mem_mb\": 1e300", "\"gpu_driver\": \"x\""};
    char text[512];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text,
                 "{\"tune_version\": 1, \"kernels\": {}, \"provenance\": {\"box\": {\"backend\": \"cpu\", "
                 "\"cpu_model\": \"m\", \"cpu_isa\": \"avx2\", %s}}}",
                 bad[i]);
        cll_tune_sidecar *sc = NULL;
        assert_int_equal(cll_tune_parse(text, strlen(text), "t.json", &sc), CLL_ERR_FORMAT);
        assert_null(sc);
        assert_non_null(strstr(cll_last_error(), "whole number"));
    }
    snprintf(text, sizeof text,
             "{\"tune_version\": 1, \"kernels\": {}, \"provenance\": {\"box\": {\"backend\": \"cuda\", "
             "\"cpu_model\": \"m\", \"cpu_isa\": \"avx2\", \"gpu_sms\": 132, \"gpu_mem_mb\": 143771, "
             "\"cuda_runtime\": 13000}}}");
    cll_tune_sidecar *sc = NULL;
    assert_int_equal(cll_tune_parse(text, strlen(text), "t.json", &sc), CLL_OK);
    assert_int_equal(sc->box.gpu_sms, 132);
    assert_int_equal(sc->box.gpu_mem_mb, 143771);
    assert_int_equal(sc->box.cuda_runtime, 13000);
    cll_tune_free(sc);
    const char *neg = "{\"tune_version\": -1, \"kernels\": {}, \"provenance\": {\"box\": {}}}";
    assert_int_equal(cll_tune_parse(neg, strlen(neg), "t.json", &sc), CLL_ERR_FORMAT);
}

static void test_pins(void **state) {
    (void)state;
    const cll_kernel_table *t = cll_cpu_kernel_table();
    const cll_kernel_row *def, *alt;
    q4_0_rows(t, &def, &alt);
    cll_kernels_clear_overrides();
    char spec[256];
    snprintf(spec, sizeof spec, "cpu/gemv/q4_0=%s", alt->name);
    assert_int_equal(cll_tune_pins(spec, t), CLL_OK);
    bool forced = false;
    assert_ptr_equal(picked(t, &forced), alt);
    assert_true(forced);
    cll_kernels_clear_overrides();
    /* outside the grid: a hard error naming the site and its variants */
    assert_int_equal(cll_tune_pins("cpu/gemv/q4_0=gemv_q4_0_imaginary", t), CLL_ERR_ARG);
    assert_non_null(strstr(cll_last_error(), "cpu/gemv/q4_0"));
    assert_non_null(strstr(cll_last_error(), def->name));
    /* a row of another type */
    snprintf(spec, sizeof spec, "cpu/gemv/q8_0=%s", def->name);
    assert_int_equal(cll_tune_pins(spec, t), CLL_ERR_ARG);
    assert_int_equal(cll_tune_pins("cpu/gemv=x", t), CLL_ERR_ARG);
    assert_int_equal(cll_tune_pins("nonsense", t), CLL_ERR_ARG);
    /* another backend's pin is not this table's business */
    assert_int_equal(cll_tune_pins("cuda/gemv/q4_0=gemv_q4_0_whatever", t), CLL_OK);
    /* CLLAMA_PIN goes through the front ends' load */
    setenv("CLLAMA_PIN", "cpu/gemv/q4_0=gemv_q4_0_imaginary", 1);
    assert_int_equal(cll_tune_load_for("cpu", NULL, NULL, NULL), CLL_ERR_ARG);
    unsetenv("CLLAMA_PIN");
    cll_kernels_clear_overrides();
}

/* the CUDA knob table (no device needed): defaults, ranges, the environment's precedence over a
 * sidecar's value but not over a race's, and every knob the CUDA knob races cover exists */
static void test_cuda_knobs(void **state) {
    (void)state;
    unsetenv("CLLAMA_CUDA_ACT_PF_MB");
    unsetenv("CLLAMA_CUDA_L2NEXT_MB");
    cll_cuda_knob_reset();
    const cll_cuda_knobs *k = cll_cuda_knobs_now();
    int n = 0, dflt = 0, lo = 0, hi = 0;
    const char *name = NULL, *env = NULL;
    for (; cll_cuda_knob_info(n, &name, &lo, &hi, &dflt, &env); n++) {
        assert_true(!strncmp(name, "cuda.", 5));
        assert_true(!strncmp(env, "CLLAMA_CUDA_", 12));
        assert_true(lo <= dflt && dflt <= hi);
    }
    assert_true(n >= 9);
    assert_int_equal(k->l2next_mb, 4);
    assert_int_equal(k->gemv_trigger, 1);
    assert_int_equal(k->pdl, 1);
    assert_int_equal(cll_cuda_knob_set("cuda.l2next_mb", 8, false, NULL), CLL_OK);
    assert_int_equal(k->l2next_mb, 8);
    assert_int_equal(cll_cuda_knob_set("cuda.l2next_mb", 41, false, NULL), CLL_ERR_ARG);
    assert_int_equal(cll_cuda_knob_set("cuda.l2next_mb", 2.5, false, NULL), CLL_ERR_ARG);
    assert_int_equal(k->l2next_mb, 8);
    assert_int_equal(cll_cuda_knob_set("cuda.no_such_knob", 1, false, NULL), CLL_ERR_ARG);
    assert_non_null(strstr(cll_last_error(), "cuda.attn_pf_mb"));
    /* the variable wins over a sidecar's value, a race's value wins over the variable */
    setenv("CLLAMA_CUDA_ACT_PF_MB", "8", 1);
    cll_cuda_knob_reset();
    assert_int_equal(k->act_pf_mb, 8);
    assert_int_equal(k->l2next_mb, 4);
    bool kept = false;
    assert_int_equal(cll_cuda_knob_set("cuda.act_pf_mb", 16, false, &kept), CLL_OK);
    assert_true(kept);
    assert_int_equal(k->act_pf_mb, 8);
    assert_int_equal(cll_cuda_knob_set("cuda.act_pf_mb", 16, true, &kept), CLL_OK);
    assert_false(kept);
    assert_int_equal(k->act_pf_mb, 16);
    /* a bad variable keeps the default (and says so on stderr) */
    setenv("CLLAMA_CUDA_ACT_PF_MB", "lots", 1);
    cll_cuda_knob_reset();
    assert_int_equal(k->act_pf_mb, 0);
    unsetenv("CLLAMA_CUDA_ACT_PF_MB");
    cll_cuda_knob_reset();
    int raced = 0;
    for (const char *r; (r = cll_race_cuda_knob(raced)) != NULL; raced++) {
        bool found = false;
        for (int i = 0; cll_cuda_knob_info(i, &name, &lo, &hi, &dflt, NULL); i++)
            if (!strcmp(name, r)) found = true;
        assert_true(found);
    }
    assert_true(raced >= 5);
}

/* a decode row pinned at a whole site (a tune crown) and asked about a batch's token class: the
 * class keeps its default quietly; the same row pinned at that class is a loud fallback */
static bool decode_only(const cll_kernel_row *r, const cll_kernel_shape *s) {
    (void)r;
    return cll_kernel_shape_tokens_in(s, 1, 1);
}

typedef struct {
    void (*f)(const cll_kernel_table *, int64_t, const char **);
    const cll_kernel_table *t;
    int64_t n;
    const char **got;
} sel_call;
static void run_sel(void *u) {
    const sel_call *c = (const sel_call *)u;
    c->f(c->t, c->n, c->got);
}
/* bytes f() writes to stderr */
static size_t stderr_of(void (*f)(const cll_kernel_table *, int64_t, const char **), const cll_kernel_table *t,
                        int64_t n, const char **got) {
    sel_call c = {f, t, n, got};
    size_t len = 0;
    free(tu_stderr_of(run_sel, &c, &len));
    return len;
}

static void select_q4_0(const cll_kernel_table *t, int64_t n, const char **got) {
    cll_kernel_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.wtype = CLL_TYPE_Q4_0;
    sh.rows = 64;
    sh.cols = 256;
    sh.n_tokens = n;
    bool forced = false;
    *got = cll_kernels_select(t, CLL_KOP_GEMV, &sh, -1, &forced)->name;
}

static void test_site_pin_batch_class(void **state) {
    (void)state;
    static const cll_kernel_row rows[] = {
        {"gemv_any", CLL_KOP_GEMV, CLL_TYPE_Q4_0, 0, "", 0, 1, NULL, true, true, NULL},
        {"gemv_decode", CLL_KOP_GEMV, CLL_TYPE_Q4_0, 0, "", 0, 1, decode_only, true, false, NULL},
    };
    const cll_kernel_table t = {"pintest", rows, 2};
    const char *got = NULL;
    cll_kernels_clear_overrides();
    assert_int_equal(cll_kernels_set_override("pintest/gemv/q4_0", "gemv_decode"), CLL_OK);
    assert_int_equal(stderr_of(select_q4_0, &t, 1, &got), 0);
    assert_string_equal(got, "gemv_decode");
    assert_int_equal(stderr_of(select_q4_0, &t, 8, &got), 0); /* quiet: the batch class keeps its default */
    assert_string_equal(got, "gemv_any");
    cll_kernels_clear_overrides();
    assert_int_equal(cll_kernels_set_override("pintest/gemv/q4_0/n2-8", "gemv_decode"), CLL_OK);
    assert_true(stderr_of(select_q4_0, &t, 8, &got) > 0); /* a pin at the class that cannot serve it: loud */
    assert_string_equal(got, "gemv_any");
    cll_kernels_clear_overrides();
}

/* a step starts only when the longest step so far still fits the budget (the run ends inside it) */
static void test_budget_allows(void **state) {
    (void)state;
    assert_true(cll_race_budget_allows(0, 1e6, 1e6));       /* no budget */
    assert_true(cll_race_budget_allows(180, 10, 0));        /* the first step */
    assert_true(cll_race_budget_allows(180, 150, 30));      /* ends at 180 */
    assert_false(cll_race_budget_allows(180, 151, 30));     /* would end at 181 */
    assert_false(cll_race_budget_allows(180, 181, 0));      /* past it */
    /* the first CUDA knob race's estimate (no finished race to go by): 3 copies of 4 s, 8 rounds x 3 of
     * 0.5 s, 5 probe rounds when the noise is not known yet; a 100 s budget with 75 s used refuses it (the
     * H200 tune of the sixth session started one at ~85 s of 100 and ended at 115 s) */
    assert_true(fabs(cll_race_knob_estimate(3, 4.0, 0.5, 8, false) - 24.0) < 1e-9);
    assert_true(fabs(cll_race_knob_estimate(3, 4.0, 0.5, 8, true) - 26.5) < 1e-9);
    assert_true(fabs(cll_race_knob_estimate(0, -1.0, 0.5, 0, false) - 0.5) < 1e-9); /* at least one copy, one round */
    assert_false(cll_race_budget_allows(100, 75, cll_race_knob_estimate(3, 4.0, 0.5, 8, true)));
    assert_true(cll_race_budget_allows(100, 70, cll_race_knob_estimate(3, 4.0, 0.5, 8, true)));
}

/* a sidecar's runtime knobs reach the CPU driver; a bad one warns and keeps its default */
static void test_runtime_knobs(void **state) {
    (void)state;
    cll_tune_sidecar *sc = here_sidecar();
    assert_int_equal(cll_tune_set_knob(sc, "cpu.chunks_per_thread", 8), CLL_OK);
    assert_int_equal(cll_tune_set_knob(sc, "cpu.pf_gemv", 999999), CLL_OK); /* out of range */
    assert_int_equal(cll_tune_set_knob(sc, "cpu.no_such_knob", 1), CLL_OK);
    char p[320];
    path_of("knobs.json", p, sizeof p);
    assert_int_equal(cll_tune_write(p, sc), CLL_OK);
    cll_cpu_knob_reset();
    const int pf0 = cll_cpu_knob.pf_gemv;
    cll_tune_loaded tl;
    assert_int_equal(cll_tune_load_for("cpu", p, NULL, &tl), CLL_OK);
    assert_int_equal(cll_cpu_knob.chunks_per_thread, 8);
    assert_int_equal(cll_cpu_knob.pf_gemv, pf0);
    assert_int_equal((int)strlen(tl.stamp), 64);
    assert_int_equal(tl.from, CLL_TUNE_FROM_FILE);
    assert_int_equal(cll_cpu_knob_set("cpu.chunks_per_thread", 0), CLL_ERR_ARG);
    assert_int_equal(cll_cpu_knob_set("cpu.par_min_work", 1.5), CLL_ERR_ARG);
    assert_int_equal(cll_cpu_knob_set("gpu.x", 1), CLL_ERR_ARG);
    assert_non_null(strstr(cll_last_error(), "cpu.chunks_per_thread"));
    cll_cpu_knob_reset();
    assert_int_equal(cll_cpu_knob.chunks_per_thread, 4);
    cll_kernels_clear_overrides();
    cll_tune_free(sc);
}

static void test_parse_site(void **state) {
    (void)state;
    char be[16];
    uint32_t op, wt;
    int64_t nt;
    assert_true(cll_tune_parse_site("cpu/gemv/q4_K", be, sizeof be, &op, &wt, &nt));
    assert_string_equal(be, "cpu");
    assert_int_equal(op, CLL_KOP_GEMV);
    assert_int_equal(wt, CLL_TYPE_Q4_K);
    assert_int_equal(nt, 0);
    assert_true(cll_tune_parse_site("cuda/gemm/iq4_xs/n65+", be, sizeof be, &op, &wt, &nt));
    assert_int_equal(op, CLL_KOP_GEMM);
    assert_int_equal(wt, CLL_TYPE_IQ4_XS);
    assert_int_equal(nt, 65);
    assert_true(cll_tune_parse_site("cuda/gemv/q8_0/n2-8", be, sizeof be, &op, &wt, &nt));
    assert_int_equal(nt, 2);
    assert_false(cll_tune_parse_site("cpu/gemv", be, sizeof be, &op, &wt, &nt));
    assert_false(cll_tune_parse_site("cpu/conv/q4_0", be, sizeof be, &op, &wt, &nt));
    assert_false(cll_tune_parse_site("cpu/gemv/q9_9", be, sizeof be, &op, &wt, &nt));
    assert_false(cll_tune_parse_site("cpu/gemv/q4_0/n3", be, sizeof be, &op, &wt, &nt));
    assert_false(cll_tune_parse_site("cpu/gemv/q4_0/n1/x", be, sizeof be, &op, &wt, &nt));
}

/* `cllama tune doctor` on a crafted stale sidecar names the stale site and the fix */
static void test_doctor(void **state) {
    (void)state;
    const char *bin = getenv("CLLAMA_BIN");
    if (!bin || access(bin, X_OK)) {
        tu_skip_test("tune doctor: no cllama binary (CLLAMA_BIN)");
    }
    const cll_kernel_table *t = cll_cpu_kernel_table();
    const cll_kernel_row *def, *alt;
    q4_0_rows(t, &def, &alt);
    cll_tune_sidecar *sc = here_sidecar();
    cll_tune_entry a = entry(t, "cpu/gemv/q4_0", def, "crown");
    cll_tune_entry b = entry(t, "cpu/gemm/q4_0", def, "crown");
    memset(b.source_hash, 'f', 64);
    cll_tune_set_site(sc, &a);
    cll_tune_set_site(sc, &b);
    char p[320], out[340], cmd[1024];
    path_of("stale.json", p, sizeof p);
    assert_int_equal(cll_tune_write(p, sc), CLL_OK);
    snprintf(out, sizeof out, "%s/doctor.txt", g_dir);
    snprintf(cmd, sizeof cmd, "'%s' tune doctor --tune '%s' > '%s' 2>&1", bin, p, out);
    const int rc = system(cmd);
    assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 1); /* a stale site is a problem to fix */
    char *txt = tu_read_file(out, NULL);
    assert_non_null(txt);
    assert_non_null(strstr(txt, "cpu/gemm/q4_0"));
    assert_non_null(strstr(txt, "stale"));
    assert_non_null(strstr(txt, "1 of 2 sites apply"));
    assert_non_null(strstr(txt, "Fix"));
    free(txt);
    /* another box: NOT APPLIED, the field named */
    sc->box.cpu_threads = 999;
    assert_int_equal(cll_tune_write(p, sc), CLL_OK);
    assert_true(system(cmd) != -1);
    txt = tu_read_file(out, NULL);
    assert_non_null(strstr(txt, "NOT APPLIED"));
    assert_non_null(strstr(txt, "cpu_threads"));
    free(txt);
    cll_tune_free(sc);
}

/* the index of site in sc (a file reads back in key order) */
static int site_idx(const cll_tune_sidecar *sc, const char *site) {
    for (int i = 0; i < sc->n_sites; i++)
        if (!strcmp(sc->sites[i].site, site)) return i;
    fail_msg("no site %s", site);
    return -1;
}

/* the class is a pure function of the box fingerprint (no probe, no device) */
static void test_class_of_box(void **state) {
    (void)state;
    cll_tune_box b;
    char c[48];
    memset(&b, 0, sizeof b);
    snprintf(b.backend, sizeof b.backend, "cpu");
    snprintf(b.cpu_model, sizeof b.cpu_model, "AMD EPYC");
    b.cpu_threads = 2;
    static const char *const isa[][2] = {{"avx512vnni", "x86-avx512-vnni"}, {"avx512", "x86-avx512"}, {"avx2", "x86-avx2"}};
    for (size_t i = 0; i < sizeof isa / sizeof isa[0]; i++) {
        snprintf(b.cpu_isa, sizeof b.cpu_isa, "%s", isa[i][0]);
        assert_non_null(cll_tune_class(&b, c, sizeof c));
        assert_string_equal(c, isa[i][1]);
    }
    /* neither the CPU model nor the thread count moves a box to another class */
    snprintf(b.cpu_model, sizeof b.cpu_model, "Intel(R) Xeon(R) Platinum 8480+");
    b.cpu_threads = 224;
    assert_string_equal(cll_tune_class(&b, c, sizeof c), "x86-avx2");
    snprintf(b.cpu_isa, sizeof b.cpu_isa, "scalar"); /* no class: the built-ins */
    assert_null(cll_tune_class(&b, c, sizeof c));
    assert_string_equal(c, "");
    /* cuda: the GPU model without its vendor; the CPU of the host does not matter */
    snprintf(b.backend, sizeof b.backend, "cuda");
    snprintf(b.cpu_isa, sizeof b.cpu_isa, "avx512vnni");
    snprintf(b.gpu_name, sizeof b.gpu_name, "NVIDIA H200");
    b.gpu_sms = 132;
    assert_string_equal(cll_tune_class(&b, c, sizeof c), "h200");
    snprintf(b.gpu_name, sizeof b.gpu_name, "NVIDIA H100 80GB HBM3");
    assert_string_equal(cll_tune_class(&b, c, sizeof c), "h100-80gb-hbm3");
    b.gpu_name[0] = 0;
    assert_null(cll_tune_class(&b, c, sizeof c));
    snprintf(b.backend, sizeof b.backend, "rocm");
    assert_null(cll_tune_class(&b, c, sizeof c));
    assert_true(cll_tune_class_name_ok("x86-avx2"));
    assert_false(cll_tune_class_name_ok("../x86"));
    assert_false(cll_tune_class_name_ok("X86"));
    assert_false(cll_tune_class_name_ok(""));
}

/* a full mint of this box: a crown, a tie, a broken site, a crown its serving confirm overturned,
 * a confirmed crown; knobs of the backend and the box's thread count */
static cll_tune_sidecar *full_mint(const cll_kernel_table *t, const cll_kernel_row *def) {
    cll_tune_sidecar *sc = here_sidecar();
    snprintf(sc->binary_sha256, sizeof sc->binary_sha256, "%064d", 5);
    sc->noise_probes[0] = 0.004;
    sc->mint_seconds = 12.5;
    sc->race_json = strdup("{\"cpu/gemv/q4_0\":{\"rounds\":12}}");
    cll_tune_entry a = entry(t, "cpu/gemv/q4_0", def, "crown");
    cll_tune_entry b = entry(t, "cpu/gemv/q4_K", def, "tie");
    cll_tune_entry c = entry(t, "cpu/gemv/q6_K", def, "broken");
    cll_tune_entry d = entry(t, "cpu/gemm/q8_0", def, "crown");
    snprintf(d.confirm, sizeof d.confirm, "fail");
    cll_tune_entry e = entry(t, "cpu/gemm/q4_0", def, "crown");
    snprintf(e.confirm, sizeof e.confirm, "pass");
    e.confirm_gain = 1.02;
    const cll_tune_entry *all[] = {&a, &b, &c, &d, &e};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) assert_int_equal(cll_tune_set_site(sc, all[i]), CLL_OK);
    assert_int_equal(cll_tune_set_knob(sc, "cpu.chunks_per_thread", 8), CLL_OK);
    assert_int_equal(cll_tune_set_knob(sc, "threads", 2), CLL_OK);
    assert_int_equal(cll_tune_set_knob(sc, "cuda.graph", 1), CLL_OK);
    return sc;
}

/* the export keeps decisive sites and crowned knobs, strips the box, and refuses what it must */
static void test_export_class(void **state) {
    (void)state;
    const cll_kernel_table *t = cll_cpu_kernel_table();
    const cll_kernel_row *def, *alt;
    q4_0_rows(t, &def, &alt);
    cll_tune_sidecar *full = full_mint(t, def);
    char cls[48];
    if (!cll_tune_class(&full->box, cls, sizeof cls)) {
        cll_tune_free(full);
        tu_skip_test("this box has no class (scalar CPU)");
    }
    cll_tune_sidecar *c = NULL;
    assert_int_equal(cll_tune_export_class(full, cls, "cllama tune --export-class X -o Y", false, &c), CLL_OK);
    assert_int_equal(c->n_sites, 2); /* the crown and the confirmed crown */
    assert_string_equal(c->sites[0].site, "cpu/gemv/q4_0");
    assert_string_equal(c->sites[1].site, "cpu/gemm/q4_0");
    assert_int_equal(c->n_runtime, 1);
    assert_string_equal(c->runtime[0].name, "cpu.chunks_per_thread");
    char p[320];
    path_of("defs/class.json", p, sizeof p);
    assert_int_equal(cll_tune_rewrite(p, c), CLL_OK);
    char *txt = tu_read_file(p, NULL);
    assert_non_null(txt);
    static const char *const gone[] = {"cpu_model", "cpu_threads", "cpu_isa", "binary_sha256", "noise_probes", "\"date\"",
                                       "mint_seconds", "noise_floor", "\"race\"", "\"box\"", "AMD", "\"threads\""};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        if (strstr(txt, gone[i])) fail_msg("the class file keeps '%s':\n%s", gone[i], txt);
    assert_non_null(strstr(txt, "\"generated_by\": \"cllama tune --export-class X -o Y\""));
    assert_non_null(strstr(txt, "\"engine_git_sha\": \"test\""));
    assert_non_null(strstr(txt, full->sites[0].source_hash));
    free(txt);
    cll_tune_sidecar *rd = NULL;
    assert_int_equal(cll_tune_read(p, &rd), CLL_OK); /* it reads back as class defaults */
    assert_string_equal(rd->cls, cls);
    assert_string_equal(rd->box.backend, "cpu");
    assert_int_equal(rd->n_sites, 2);
    assert_string_equal(rd->sites[site_idx(rd, "cpu/gemm/q4_0")].confirm, "pass");
    assert_string_equal(rd->sites[site_idx(rd, "cpu/gemv/q4_0")].confirm, "");
    /* refused: class defaults as input, another class, another protocol, a noisy mint (unless forced) */
    cll_tune_sidecar *x = NULL;
    assert_int_equal(cll_tune_export_class(rd, cls, "", false, &x), CLL_ERR_ARG);
    assert_int_equal(cll_tune_export_class(full, strcmp(cls, "x86-avx2") ? "x86-avx2" : "x86-avx512-vnni", "", false, &x),
                     CLL_ERR_ARG);
    assert_non_null(strstr(cll_last_error(), cls));
    full->version++;
    assert_int_equal(cll_tune_export_class(full, cls, "", false, &x), CLL_ERR_ARG);
    full->version--;
    snprintf(full->noise, sizeof full->noise, "overridden");
    assert_int_equal(cll_tune_export_class(full, cls, "", false, &x), CLL_ERR_ARG);
    assert_int_equal(cll_tune_export_class(full, cls, "", true, &x), CLL_OK);
    assert_string_equal(x->noise, "overridden");
    cll_tune_free(x);
    cll_tune_free(rd);
    cll_tune_free(c);
    cll_tune_free(full);
}

/* write sc as this box's class file in dir, return the class */
static void write_class(const cll_tune_sidecar *full, const char *dir, char *cls, size_t cap) {
    assert_non_null(cll_tune_class(&full->box, cls, cap));
    cll_tune_sidecar *c = NULL;
    assert_int_equal(cll_tune_export_class(full, cls, "test", false, &c), CLL_OK);
    char p[400];
    snprintf(p, sizeof p, "%s/%s.json", dir, cls);
    assert_int_equal(cll_tune_rewrite(p, c), CLL_OK);
    cll_tune_free(c);
}

/* load order: explicit (--tune, $CLLAMA_TUNE, "none") > this box's own sidecar > class defaults > built-ins;
 * told apart by the chunks_per_thread knob each file sets (explicit 2, box 16, class 8) */
static void test_load_order(void **state) {
    (void)state;
    const cll_kernel_table *t = cll_cpu_kernel_table();
    const cll_kernel_row *def, *alt;
    q4_0_rows(t, &def, &alt);
    cll_tune_box here;
    assert_int_equal(cll_tune_box_probe("cpu", &here), CLL_OK);
    char cls[48];
    if (!cll_tune_class(&here, cls, sizeof cls)) {
        tu_skip_test("this box has no class (scalar CPU)");
    }
    char cache[320], defs[320], box_path[1024], explicit_path[320], cmd[800];
    path_of("order/cache", cache, sizeof cache);
    path_of("order/defs", defs, sizeof defs);
    snprintf(cmd, sizeof cmd, "mkdir -p %s %s", cache, defs);
    assert_int_equal(system(cmd), 0);
    setenv("XDG_CACHE_HOME", cache, 1);
    setenv("CLLAMA_TUNE_DEFAULTS", defs, 1);
    unsetenv("CLLAMA_TUNE");
    cll_tune_box_path(&here, box_path, sizeof box_path);
    assert_non_null(strstr(box_path, cache));
    cll_tune_loaded tl;
    cll_tune_choice ch;
    const int k0 = (cll_cpu_knob_reset(), cll_cpu_knob.chunks_per_thread);
    /* 1. nothing: the built-ins, silently, stamped none */
    assert_int_equal(cll_tune_load_for("cpu", NULL, NULL, &tl), CLL_OK);
    assert_int_equal(tl.from, CLL_TUNE_FROM_NONE);
    assert_string_equal(tl.stamp, "none");
    assert_int_equal(cll_cpu_knob.chunks_per_thread, k0);
    assert_int_equal(cll_tune_choose("cpu", &here, NULL, &ch), CLL_OK);
    assert_non_null(strstr(ch.why, "no class defaults"));
    /* 2. the class defaults */
    cll_tune_sidecar *full = full_mint(t, def);
    cll_tune_set_knob(full, "cpu.chunks_per_thread", 8);
    write_class(full, defs, cls, sizeof cls);
    assert_int_equal(cll_tune_load_for("cpu", NULL, NULL, &tl), CLL_OK);
    assert_int_equal(tl.from, CLL_TUNE_FROM_CLASS);
    char want[128];
    snprintf(want, sizeof want, "class:%s:", cls);
    assert_memory_equal(tl.stamp, want, strlen(want));
    assert_int_equal((int)strlen(tl.stamp), (int)strlen(want) + 64);
    assert_non_null(strstr(tl.path, defs));
    assert_int_equal(cll_cpu_knob.chunks_per_thread, 8);
    bool forced = false;
    assert_ptr_equal(picked(t, &forced), def);
    assert_true(forced); /* its crown is in force */
    cll_kernels_clear_overrides();
    /* 3. this box's own sidecar beats the class */
    cll_cpu_knob_reset();
    cll_tune_sidecar *own = here_sidecar();
    cll_tune_set_knob(own, "cpu.chunks_per_thread", 16);
    assert_int_equal(cll_tune_write(box_path, own), CLL_OK);
    assert_int_equal(cll_tune_load_for("cpu", NULL, NULL, &tl), CLL_OK);
    assert_int_equal(tl.from, CLL_TUNE_FROM_BOX);
    assert_int_equal((int)strlen(tl.stamp), 64);
    assert_string_equal(tl.path, box_path);
    assert_int_equal(cll_cpu_knob.chunks_per_thread, 16);
    picked(t, &forced);
    assert_false(forced); /* the class's crown is not mixed in */
    /* 4. an explicit file beats both; $CLLAMA_TUNE the same; "none" asks for the built-ins */
    cll_cpu_knob_reset();
    cll_tune_sidecar *ex = here_sidecar();
    cll_tune_set_knob(ex, "cpu.chunks_per_thread", 2);
    path_of("order/explicit.json", explicit_path, sizeof explicit_path);
    assert_int_equal(cll_tune_write(explicit_path, ex), CLL_OK);
    assert_int_equal(cll_tune_load_for("cpu", explicit_path, NULL, &tl), CLL_OK);
    assert_int_equal(tl.from, CLL_TUNE_FROM_FILE);
    assert_int_equal(cll_cpu_knob.chunks_per_thread, 2);
    cll_cpu_knob_reset();
    setenv("CLLAMA_TUNE", explicit_path, 1);
    assert_int_equal(cll_tune_load_for("cpu", NULL, NULL, &tl), CLL_OK);
    assert_int_equal(tl.from, CLL_TUNE_FROM_FILE);
    assert_int_equal(cll_cpu_knob.chunks_per_thread, 2);
    cll_cpu_knob_reset();
    setenv("CLLAMA_TUNE", "none", 1);
    assert_int_equal(cll_tune_load_for("cpu", NULL, NULL, &tl), CLL_OK);
    assert_int_equal(tl.from, CLL_TUNE_FROM_NONE);
    assert_string_equal(tl.stamp, "none");
    assert_int_equal(cll_cpu_knob.chunks_per_thread, k0);
    assert_int_equal(cll_tune_load_for("cpu", "none", NULL, &tl), CLL_OK);
    assert_int_equal(tl.from, CLL_TUNE_FROM_NONE);
    unsetenv("CLLAMA_TUNE");
    /* 5. a box sidecar that no longer applies as a whole (another protocol) gives way to the class */
    own->version = CLL_TUNE_VERSION + 1;
    assert_int_equal(cll_tune_rewrite(box_path, own), CLL_OK);
    assert_int_equal(cll_tune_choose("cpu", &here, NULL, &ch), CLL_OK);
    assert_int_equal(ch.from, CLL_TUNE_FROM_CLASS);
    assert_non_null(strstr(ch.box_problem, "protocol"));
    assert_int_equal(cll_tune_load_for("cpu", NULL, NULL, &tl), CLL_OK);
    assert_int_equal(tl.from, CLL_TUNE_FROM_CLASS);
    assert_int_equal(cll_cpu_knob.chunks_per_thread, 8);
    /* 6. a class file is not applied on a box of another class */
    cll_tune_sidecar *rd = NULL;
    assert_int_equal(cll_tune_read(tl.path, &rd), CLL_OK);
    cll_tune_box other = here;
    snprintf(other.cpu_isa, sizeof other.cpu_isa, "%s", strcmp(cls, "x86-avx2") ? "avx2" : "avx512vnni");
    cll_tune_report rep;
    assert_int_equal(cll_tune_apply(rd, &other, t, false, true, &rep), CLL_OK);
    assert_false(rep.applies);
    assert_non_null(strstr(rep.why, cls));
    cll_tune_report_free(&rep);
    /* ... but on any box of its class, whatever the CPU model or thread count */
    snprintf(other.cpu_isa, sizeof other.cpu_isa, "%s", here.cpu_isa);
    snprintf(other.cpu_model, sizeof other.cpu_model, "Another CPU");
    other.cpu_threads = 64;
    assert_int_equal(cll_tune_apply(rd, &other, t, false, true, &rep), CLL_OK);
    assert_true(rep.applies);
    assert_int_equal(rep.n_applied, 2);
    cll_tune_report_free(&rep);
    cll_tune_free(rd);
    cll_cpu_knob_reset();
    cll_kernels_clear_overrides();
    unsetenv("XDG_CACHE_HOME");
    unsetenv("CLLAMA_TUNE_DEFAULTS");
    cll_tune_free(ex);
    cll_tune_free(own);
    cll_tune_free(full);
}

/* the validity rules hold per site in a class file: a changed source hash makes that site stale (the
 * others apply), a variant this machine cannot run keeps its default */
static void test_class_stale_site(void **state) {
    (void)state;
    const cll_kernel_table *t = cll_cpu_kernel_table();
    const cll_kernel_row *def, *alt;
    q4_0_rows(t, &def, &alt);
    cll_tune_sidecar *full = full_mint(t, def);
    char cls[48];
    if (!cll_tune_class(&full->box, cls, sizeof cls)) {
        cll_tune_free(full);
        tu_skip_test("this box has no class (scalar CPU)");
    }
    cll_tune_sidecar *c = NULL;
    assert_int_equal(cll_tune_export_class(full, cls, "test", false, &c), CLL_OK);
    memset(c->sites[site_idx(c, "cpu/gemm/q4_0")].source_hash, 'e', 64); /* its variant changed since */
    cll_tune_entry x = entry(t, "cpu/gemv/q8_0", def, "crown");
    snprintf(x.variant, sizeof x.variant, "matmul_q8_0_gone");
    cll_tune_set_site(c, &x);
    char dir[320], p[400];
    path_of("stale-defs", dir, sizeof dir);
    snprintf(p, sizeof p, "%s/%s.json", dir, cls);
    assert_int_equal(cll_tune_rewrite(p, c), CLL_OK);
    cll_tune_sidecar *rd = NULL;
    assert_int_equal(cll_tune_read(p, &rd), CLL_OK);
    cll_tune_report rep;
    apply(rd, false, false, &rep);
    assert_true(rep.applies);
    assert_int_equal(rep.st[site_idx(rd, "cpu/gemv/q4_0")], CLL_TUNE_APPLIED);
    assert_int_equal(rep.st[site_idx(rd, "cpu/gemm/q4_0")], CLL_TUNE_STALE);
    assert_int_equal(rep.st[site_idx(rd, "cpu/gemv/q8_0")], CLL_TUNE_NOT_IN_GRID);
    assert_int_equal(rep.n_applied, 1);
    cll_tune_report_free(&rep);
    cll_kernels_clear_overrides();
    /* the doctor names the class file, the stale site and the fix */
    const char *bin = getenv("CLLAMA_BIN");
    if (bin && !access(bin, X_OK)) {
        char cache[320], out[340], cmd[1400];
        path_of("stale-cache", cache, sizeof cache);
        snprintf(out, sizeof out, "%s/doctor-class.txt", g_dir);
        snprintf(cmd, sizeof cmd, "env -u CLLAMA_TUNE XDG_CACHE_HOME='%s' CLLAMA_TUNE_DEFAULTS='%s' '%s' tune doctor > '%s' 2>&1",
                 cache, dir, bin, out);
        const int rc = system(cmd);
        assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 1);
        char *txt = tu_read_file(out, NULL);
        assert_non_null(txt);
        if (!strstr(txt, "applies: the class defaults") || !strstr(txt, p) || !strstr(txt, "stale") ||
            !strstr(txt, "class default") || !strstr(txt, "1 of 3 sites apply") || !strstr(txt, "Fix"))
            fail_msg("doctor on a stale class file:\n%s", txt);
        free(txt);
    }
    cll_tune_free(rd);
    cll_tune_free(c);
    cll_tune_free(full);
}

/* the board marks a cllama cell run on class defaults ·c, one run untuned ·u, a tuned one neither */
static void test_board_marks(void **state) {
    (void)state;
    char dir[320], rec[400], md[400];
    path_of("board", dir, sizeof dir);
    snprintf(rec, sizeof rec, "%s/tbox.json", dir);
    snprintf(md, sizeof md, "%s/BOARD.md", dir);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    assert_int_equal(system(cmd), 0);
    static const char *const stamp[3] = {"none", "class:x86-avx2:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                                         "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"};
    static const double ts[3] = {11.25, 22.25, 33.25};
    FILE *f = fopen(rec, "w");
    assert_non_null(f);
    fprintf(f, "{\"box\": \"tbox\", \"rows\": [");
    for (int i = 0; i < 3; i++)
        fprintf(f,
                "%s{\"engine\": \"cllama\", \"backend\": \"cpu\", \"test\": \"tg128\", \"n_prompt\": 0, \"n_gen\": 128, "
                "\"model_filename\": \"m%d.gguf\", \"model_sha256\": \"%064d\", \"avg_ts\": %.2f, \"stddev_ts\": 0.5, "
                "\"box\": \"tbox\", \"noise\": \"ok\", \"parity\": \"ok\", \"tune_sha256\": \"%s\"}",
                i ? ", " : "", i, i, ts[i], stamp[i]);
    fprintf(f, "]}\n");
    fclose(f);
    assert_int_equal(cll_bench_board_render(dir, md, NULL), CLL_OK);
    char *txt = tu_read_file(md, NULL);
    assert_non_null(txt);
    if (!strstr(txt, "11.25 ± 0.50 ·u") || !strstr(txt, "22.25 ± 0.50 ·c") || !strstr(txt, "33.25 ± 0.50 |") ||
        strstr(txt, "33.25 ± 0.50 ·"))
        fail_msg("board marks:\n%s", txt);
    free(txt);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_and_bak), cmocka_unit_test(test_version_and_box), cmocka_unit_test(test_sites),
        cmocka_unit_test(test_unreadable),        cmocka_unit_test(test_pins),            cmocka_unit_test(test_parse_site),
        cmocka_unit_test(test_runtime_knobs),     cmocka_unit_test(test_cuda_knobs),
        cmocka_unit_test(test_budget_allows),     cmocka_unit_test(test_site_pin_batch_class),
        cmocka_unit_test(test_doctor),          cmocka_unit_test(test_box_numbers),
        cmocka_unit_test(test_class_of_box),      cmocka_unit_test(test_export_class),    cmocka_unit_test(test_load_order),
        cmocka_unit_test(test_class_stale_site),  cmocka_unit_test(test_board_marks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
