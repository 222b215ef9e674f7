/* ggml_numerics_test: the pieces of the reference-numerics mode (CLLAMA_NUMERICS_GGML) against
 * llama.cpp's own outputs, bit for bit (tests/golden/ggml_numerics.json, written by
 * scripts/gen_ggml_numerics.py from the ggml-cpu build that scripts/gen_golden.py drives):
 *  - every "numerics=ggml" matmul row (kern_ggml.h): ggml's vec_dot of shared/oracle/quant's
 *    rows against 8 activation rows, as one 8-token GEMM and as 8 single-token GEMVs, on the
 *    whole 1024-value rows and on their first n_short values (one block less); the types of
 *    the golden without a row are listed, and must fall back loudly;
 *  - the ops on the llama path under ggml numerics: swiglu (SiLU(g) * u), rms_norm, rope, and YaRN's rope
 *    (tests/golden/rope_yarn.json, scripts/gen_rope_yarn.py).
 * A mismatch prints the first differing element with both bit patterns. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "testutil.h"
#include "core/threads.h"
#include "cpu/kern_common.h"
#include "cpu/matmul.h"
#include "cpu/ops.h"
#include "formats/formats.h"
#include "kernels/registry.h"

static json_t *g_doc;

static json_t *golden(void) {
    if (g_doc) return g_doc;
    const char *src = getenv("CLLAMA_SRC");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/golden/ggml_numerics.json", src && *src ? src : CLLAMA_SOURCE_DIR);
    json_error_t e;
    g_doc = json_load_file(path, 0, &e);
    if (!g_doc) fail_msg("%s: %s", path, e.text);
    return g_doc;
}

/* n floats from a string of 8-hex-digit bit patterns */
static float *hex_floats(const char *s, size_t n) {
    assert_non_null(s);
    assert_int_equal(strlen(s), 8 * n);
    float *f = malloc(n * sizeof *f);
    for (size_t i = 0; i < n; i++) {
        char h[9];
        memcpy(h, s + 8 * i, 8);
        h[8] = 0;
        const uint32_t u = (uint32_t)strtoul(h, NULL, 16);
        memcpy(&f[i], &u, 4);
    }
    return f;
}

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* elements of got that differ from want in any bit; the first described */
static int count_diff(const char *what, const float *got, const float *want, size_t n) {
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        if (bits(got[i]) != bits(want[i])) {
            if (!bad)
                print_message("%s: element %zu: ours %.9g (%08x), llama.cpp %.9g (%08x)\n", what, i, got[i],
                              bits(got[i]), want[i], bits(want[i]));
            bad++;
        }
    return bad;
}

/* an oracle quant file's field */
static const uint8_t *oracle(const char *file, uint8_t **buf, uint64_t *off_q, uint64_t *off_src) {
    char rel[128];
    snprintf(rel, sizeof rel, "oracle/quant/%s", file);
    *buf = (uint8_t *)tu_read_file(tu_shared(rel), NULL);
    if (!*buf) fail_msg("%s missing (%s)", file, tu_shared(rel));
    memcpy(off_src, *buf + 80, 8);
    memcpy(off_q, *buf + 88, 8);
    return *buf;
}

static uint32_t type_by_name(const char *name) {
    for (uint32_t t = 0; t < CLL_TYPE_COUNT; t++)
        if (cll_type_traits_get(t) && !strcmp(cll_type_name(t), name)) return t;
    fail_msg("unknown type %s", name);
    return 0;
}

/* the row reproducing ggml's vec_dot for this type, or NULL */
static const cll_kernel_row *ggml_row(uint32_t type) {
    const cll_kernel_table *t = cll_cpu_kernel_table();
    for (size_t i = 0; i < t->n; i++)
        if (t->rows[i].wtype == type && t->rows[i].params && strstr(t->rows[i].params, "numerics=ggml"))
            return &t->rows[i];
    return NULL;
}

static void test_vec_dot_rows(void **state) {
    (void)state;
    if (!(cll_kernels_cpu_features() & CLL_ISA_AVX2)) tu_skip_test("the ggml rows reproduce ggml-cpu's AVX2 kernels");
    json_t *vd = json_object_get(golden(), "vec_dot");
    const int64_t n = json_integer_value(json_object_get(vd, "n")), ntok = json_integer_value(json_object_get(vd, "tokens")),
                  rows = json_integer_value(json_object_get(vd, "rows"));
    assert_true(n == 1024 && ntok == 8 && rows == 8);
    uint8_t *abuf;
    uint64_t aq, asrc;
    oracle("act_Q8_0.bin", &abuf, &aq, &asrc);
    const float *x = (const float *)(abuf + asrc); /* (ntok, n) */
    cll_pool *pool;
    assert_int_equal(cll_pool_create(2, &pool), CLL_OK);
    const char *name;
    json_t *T;
    int covered = 0, total_bad = 0;
    char missing[512] = "";
    json_object_foreach(json_object_get(vd, "types"), name, T) {
        const uint32_t type = type_by_name(name);
        const cll_kernel_row *row = ggml_row(type);
        if (!row) {
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), " %s", name);
            continue;
        }
        uint8_t *wbuf;
        uint64_t wq, wsrc;
        oracle(json_string_value(json_object_get(T, "file")), &wbuf, &wq, &wsrc);
        /* f32 weights: the F16 file's source rows */
        const uint8_t *w = type == CLL_TYPE_F32 ? wbuf + wsrc : wbuf + wq;
        const uint64_t rb = cll_row_bytes(type, (uint64_t)n);
        /* rows of n, then of n_short (one block less: an odd block count, a SIMD tail) */
        for (int pass = 0; pass < 2; pass++) {
            const int64_t k = pass ? json_integer_value(json_object_get(T, "n_short")) : n;
            const uint64_t rbk = cll_row_bytes(type, (uint64_t)k);
            assert_true(k > 0 && rbk > 0);
            uint8_t *wk = malloc(rbk * (uint64_t)rows); /* the first k values of every row */
            for (int64_t r = 0; r < rows; r++) memcpy(wk + rbk * (uint64_t)r, w + rb * (uint64_t)r, rbk);
            float want[64], got[64], got1[64];
            for (int64_t t = 0; t < ntok; t++) {
                json_t *y = json_object_get(T, pass ? "y_short" : "y");
                float *r = hex_floats(json_string_value(json_array_get(y, (size_t)t)), (size_t)rows);
                memcpy(want + t * rows, r, sizeof(float) * (size_t)rows);
                free(r);
            }
            cll_cpu_weight *cw;
            assert_int_equal(cll_cpu_weight_create_row(row, rows, k, wk, &cw), CLL_OK);
            void *scr = malloc(cll_cpu_matmul_scratch(cw, ntok));
            cll_cpu_matmul(pool, cw, x, n, ntok, got, rows, scr); /* one 8-token GEMM */
            for (int64_t t = 0; t < ntok; t++) cll_cpu_matmul(pool, cw, x + t * n, n, 1, got1 + t * rows, rows, scr);
            char what[96];
            snprintf(what, sizeof what, "%s (%s) n=%lld gemm", name, row->name, (long long)k);
            const int bad = count_diff(what, got, want, (size_t)(ntok * rows));
            snprintf(what, sizeof what, "%s (%s) n=%lld gemv", name, row->name, (long long)k);
            const int bad1 = count_diff(what, got1, want, (size_t)(ntok * rows));
            printf("%-8s %s n=%-4lld: %lld/%lld elements bit-exact with ggml's vec_dot (GEMM), %lld/%lld (GEMV)\n", name,
                   row->name, (long long)k, (long long)(ntok * rows - bad), (long long)(ntok * rows),
                   (long long)(ntok * rows - bad1), (long long)(ntok * rows));
            total_bad += bad + bad1;
            free(scr);
            cll_cpu_weight_free(cw);
            free(wk);
        }
        covered++;
        free(wbuf);
    }
    printf("ggml rows: %d types bit-exact; no ggml row (loud fallback):%s\n", covered, missing);
    /* the rows reference numerics has promised so far */
    static const uint32_t must[] = {CLL_TYPE_Q4_0, CLL_TYPE_Q4_1, CLL_TYPE_Q5_0, CLL_TYPE_Q5_1, CLL_TYPE_Q8_0,
                                    CLL_TYPE_Q2_K, CLL_TYPE_Q3_K, CLL_TYPE_Q4_K, CLL_TYPE_Q5_K, CLL_TYPE_Q6_K,
                                    CLL_TYPE_IQ4_NL, CLL_TYPE_IQ4_XS};
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
        if (!ggml_row(must[i])) fail_msg("no ggml row for %s", cll_type_name(must[i]));
    assert_int_equal(total_bad, 0);
    cll_pool_free(pool);
    free(abuf);
}

/* a type without a ggml row: selection under the "ggml" scope says so (one warning line) and
 * serves the usual row */
typedef struct {
    uint32_t type;
    const char *got;
} fb_args;

static void select_in_scope(void *arg) {
    fb_args *a = arg;
    const cll_kernel_shape s = {.wtype = a->type, .rows = 64, .cols = 256, .features = cll_kernels_cpu_features(),
                                .n_tokens = 1, .device = CLL_KDEVICE_CPU};
    cll_kernels_numerics_scope("ggml");
    const cll_kernel_row *r = cll_kernels_select(cll_cpu_kernel_table(), CLL_KOP_GEMV, &s, -1, NULL);
    cll_kernels_numerics_scope(NULL);
    a->got = r ? r->name : NULL;
}

static void test_fallback_is_loud(void **state) {
    (void)state;
    json_t *types = json_object_get(json_object_get(golden(), "vec_dot"), "types");
    const char *name;
    json_t *T;
    int n = 0;
    json_object_foreach(types, name, T) {
        (void)T;
        const uint32_t type = type_by_name(name);
        fb_args a = {type, NULL};
        char *err = tu_stderr_of(select_in_scope, &a, NULL);
        assert_non_null(a.got);
        if (ggml_row(type) && (cll_kernels_cpu_features() & CLL_ISA_AVX2)) {
            assert_non_null(strstr(a.got, "_ggml"));
        } else {
            assert_null(strstr(a.got, "_ggml"));
            /* the warning is printed once per site per process: this is the first ask */
            if (!strstr(err, "cllama: warning: numerics=ggml") || !strstr(err, name) || strstr(err, "error"))
                fail_msg("%s: no warning line (stderr: %s)", name, err);
            n++;
        }
        free(err);
    }
    printf("fallback warned for %d types without a ggml row\n", n);
}

/* ---- ops ------------------------------------------------------------------------------------- */

static void test_swiglu(void **state) {
    (void)state;
    if (!(cll_kernels_cpu_features() & CLL_ISA_AVX2)) tu_skip_test("ggml's swiglu is its AVX2 + FMA path");
    json_t *o = json_object_get(json_object_get(golden(), "ops"), "swiglu");
    const int64_t nc = json_integer_value(json_array_get(json_object_get(o, "ne"), 0)),
                  nr = json_integer_value(json_array_get(json_object_get(o, "ne"), 1));
    const size_t n = (size_t)(nc * nr);
    float *x = hex_floats(json_string_value(json_object_get(o, "x")), n);
    float *g = hex_floats(json_string_value(json_object_get(o, "g")), n);
    float *want = hex_floats(json_string_value(json_object_get(o, "y")), n);
    float *y = malloc(n * sizeof *y);
    /* whole rows, then the same rows cut at odd column ranges (the matmul epilogue's chunks) */
    memcpy(y, x, n * sizeof *y);
    for (int64_t r = 0; r < nr; r++) cll_ops_silu_mul_ggml_avx2(y + r * nc, g + r * nc, 0, nc, nc);
    const int bad = count_diff("swiglu rows", y, want, n);
    memcpy(y, x, n * sizeof *y);
    for (int64_t r = 0; r < nr; r++)
        for (int64_t c0 = 0; c0 < nc; c0 += 13) {
            const int64_t c1 = c0 + 13 < nc ? c0 + 13 : nc;
            cll_ops_silu_mul_ggml_avx2(y + r * nc + c0, g + r * nc + c0, c0, c1, nc);
        }
    const int bad2 = count_diff("swiglu chunks", y, want, n);
    printf("swiglu (%lldx%lld): %zu/%zu bit-exact whole rows, %zu/%zu in 13-column chunks\n", (long long)nc,
           (long long)nr, n - (size_t)bad, n, n - (size_t)bad2, n);
    assert_int_equal(bad + bad2, 0);
    free(x);
    free(g);
    free(want);
    free(y);
}

static void test_rms_norm(void **state) {
    (void)state;
    size_t i;
    json_t *R;
    int tot = 0, bad = 0;
    json_array_foreach(json_object_get(json_object_get(golden(), "ops"), "rms_norm"), i, R) {
        const int64_t n = json_integer_value(json_object_get(R, "n"));
        float *eps = hex_floats(json_string_value(json_object_get(R, "eps")), 1);
        float *x = hex_floats(json_string_value(json_object_get(R, "x")), (size_t)n);
        float *want = hex_floats(json_string_value(json_object_get(R, "y")), (size_t)n);
        float *y = malloc((size_t)n * sizeof *y);
        cll_ops_rmsnorm(y, x, NULL, n, eps[0]);
        char what[64];
        snprintf(what, sizeof what, "rms_norm row %zu", i);
        bad += count_diff(what, y, want, (size_t)n);
        tot += (int)n;
        free(eps);
        free(x);
        free(want);
        free(y);
    }
    printf("rms_norm: %d/%d bit-exact\n", tot - bad, tot);
    assert_true(tot > 0);
    assert_int_equal(bad, 0);
}

static void test_rope(void **state) {
    (void)state;
    size_t i;
    json_t *R;
    int tot = 0, bad = 0;
    json_array_foreach(json_object_get(json_object_get(golden(), "ops"), "rope"), i, R) {
        const int32_t hd = (int32_t)json_integer_value(json_object_get(R, "head_dim")),
                      nh = (int32_t)json_integer_value(json_object_get(R, "n_head")),
                      pos = (int32_t)json_integer_value(json_object_get(R, "pos"));
        float *base = hex_floats(json_string_value(json_object_get(R, "base")), 1);
        const size_t n = (size_t)hd * (size_t)nh;
        float *x = hex_floats(json_string_value(json_object_get(R, "x")), n);
        float *want = hex_floats(json_string_value(json_object_get(R, "y")), n);
        float cs[512];
        assert_true(hd <= 512);
        const cll_rope rp = cll_rope_make(base[0], 1.0f, 0.0f, 1.0f, hd, 0, 32.0f, 1.0f);
        cll_ops_rope_cs(cs, pos, hd, &rp, NULL);
        cll_ops_rope_apply_fma(x, nh, hd, hd, cs, CLL_ROPE_NORM);
        char what[64];
        snprintf(what, sizeof what, "rope pos %d", pos);
        bad += count_diff(what, x, want, n);
        tot += (int)n;
        free(base);
        free(x);
        free(want);
    }
    printf("rope (mode 0): %d/%d bit-exact\n", tot - bad, tot);
    assert_true(tot > 0);
    assert_int_equal(bad, 0);
}

/* YaRN rope (tests/golden/rope_yarn.json, scripts/gen_rope_yarn.py: ggml_rope_ext of a llama.cpp CPU build):
 * cll_rope_make's ramp and magnitude, cll_rope_angle and the reference apply, modes 0 and 2, factors 4 and 8,
 * positions past the original context, frequency factors; and the attn_factor llama.cpp passes for such a
 * file (cll_rope_yarn_attn_factor) equal to the one the golden was made with */
static void test_rope_yarn(void **state) {
    (void)state;
    const char *src = getenv("CLLAMA_SRC");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/golden/rope_yarn.json", src && *src ? src : CLLAMA_SOURCE_DIR);
    json_error_t e;
    json_t *G = json_load_file(path, 0, &e);
    if (!G) fail_msg("%s: %s", path, e.text);
    size_t i;
    json_t *R;
    int tot = 0, bad = 0, cases = 0;
    json_array_foreach(json_object_get(G, "rope"), i, R) {
        const int32_t hd = (int32_t)json_integer_value(json_object_get(R, "head_dim")),
                      nh = (int32_t)json_integer_value(json_object_get(R, "n_head")),
                      pos = (int32_t)json_integer_value(json_object_get(R, "pos")),
                      mode = (int32_t)json_integer_value(json_object_get(R, "mode")),
                      orig = (int32_t)json_integer_value(json_object_get(R, "n_ctx_orig"));
        float p[6];
        const char *keys[6] = {"base", "freq_scale", "ext_factor", "attn_factor", "beta_fast", "beta_slow"};
        for (int k = 0; k < 6; k++) {
            float *v = hex_floats(json_string_value(json_object_get(R, keys[k])), 1);
            p[k] = v[0];
            free(v);
        }
        const float af = cll_rope_yarn_attn_factor(1.0f / p[1], 1.0f);
        if (memcmp(&af, &p[3], 4) != 0)
            fail_msg("yarn attn_factor for factor %g: %a, the golden's %a", (double)(1.0f / p[1]), (double)af, (double)p[3]);
        const size_t n = (size_t)hd * (size_t)nh;
        float *x = hex_floats(json_string_value(json_object_get(R, "x")), n);
        float *want = hex_floats(json_string_value(json_object_get(R, "y")), n);
        const json_t *jff = json_object_get(R, "freq_factors");
        float *ff = json_is_string(jff) ? hex_floats(json_string_value(jff), (size_t)hd / 2) : NULL;
        float cs[512];
        assert_true(hd <= 512);
        const cll_rope rp = cll_rope_make(p[0], p[1], p[2], p[3], hd, orig, p[4], p[5]);
        cll_ops_rope_cs(cs, pos, hd, &rp, ff);
        cll_ops_rope_apply_fma(x, nh, hd, hd, cs, mode == 2 ? CLL_ROPE_NEOX : CLL_ROPE_NORM);
        char what[96];
        snprintf(what, sizeof what, "yarn rope mode %d factor %g pos %d%s", mode, (double)(1.0f / p[1]), pos,
                 ff ? " (freq factors)" : "");
        bad += count_diff(what, x, want, n);
        tot += (int)n;
        cases++;
        free(x);
        free(want);
        free(ff);
    }
    json_decref(G);
    printf("rope (YaRN): %d cases, %d/%d bit-exact\n", cases, tot - bad, tot);
    assert_true(cases >= 10);
    assert_int_equal(bad, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vec_dot_rows), cmocka_unit_test(test_fallback_is_loud), cmocka_unit_test(test_swiglu),
        cmocka_unit_test(test_rms_norm),     cmocka_unit_test(test_rope),     cmocka_unit_test(test_rope_yarn),
    };
    const int r = cmocka_run_group_tests(tests, NULL, NULL);
    json_decref(g_doc);
    return r;
}
