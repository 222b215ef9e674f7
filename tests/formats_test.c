/* formats_test: every weight format against ggml's bytes (shared/oracle/quant).
 * - to_f32 of every golden type is bit-identical with ggml's dequant (24 types);
 * - the activation quantizers Q8_0/Q8_1/Q8_K reproduce ggml-cpu's bytes (3 files);
 * - weight quantizers we have reproduce ggml's *_ref bytes;
 * - fp16/bf16 conversions: exhaustive over all 65536 halfs against bit-math definitions;
 * - cll_vec_dot_ref against float dots, and the integer unpack against to_f32;
 * - poison controls: each comparison is shown to fail on a perturbed input. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/dot_unpack.h"
#include "formats/formats.h"
#include "testutil.h"

/* ---- golden files ------------------------------------------------------------- */

typedef struct {
    uint8_t *buf;
    size_t len;
    uint32_t type, blck, tsize, nrows, nper, flags;
    char name[17];
    uint64_t row_size, qbytes, off_src, off_q, off_dq, off_im;
} golden;

static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* loads and validates one file; a missing or malformed file fails the calling test */
static void golden_load(const char *file, golden *g) {
    char rel[256];
    snprintf(rel, sizeof rel, "oracle/quant/%s", file);
    memset(g, 0, sizeof *g);
    g->buf = (uint8_t *)tu_read_file(tu_shared(rel), &g->len);
    if (!g->buf) fail_msg("golden %s missing (%s)", file, tu_shared(rel));
    assert_true(g->len >= 128);
    assert_memory_equal(g->buf, "GGMLQORC", 8);
    assert_int_equal(rd32(g->buf + 8), 1);
    g->type = rd32(g->buf + 12);
    memcpy(g->name, g->buf + 16, 16);
    g->blck = rd32(g->buf + 32);
    g->tsize = rd32(g->buf + 36);
    g->nrows = rd32(g->buf + 40);
    g->nper = rd32(g->buf + 44);
    g->row_size = rd64(g->buf + 48);
    g->qbytes = rd64(g->buf + 56);
    g->flags = rd32(g->buf + 64);
    g->off_src = rd64(g->buf + 80);
    g->off_q = rd64(g->buf + 88);
    g->off_dq = rd64(g->buf + 96);
    g->off_im = rd64(g->buf + 104);
    const uint64_t nel = (uint64_t)g->nrows * g->nper;
    assert_true(g->blck > 0 && g->nper % g->blck == 0);
    assert_int_equal(g->row_size, (uint64_t)g->nper / g->blck * g->tsize);
    assert_int_equal(g->qbytes, g->row_size * g->nrows);
    assert_true(g->off_src + nel * 4 <= g->len);
    assert_true(g->off_q + g->qbytes <= g->len);
    assert_true(g->off_dq + nel * 4 <= g->len);
}

static const float *g_src(const golden *g) { return (const float *)(g->buf + g->off_src); }
static const uint8_t *g_q(const golden *g) { return g->buf + g->off_q; }
static const float *g_dq(const golden *g) { return (const float *)(g->buf + g->off_dq); }
static int64_t g_nel(const golden *g) { return (int64_t)g->nrows * g->nper; }

static const char *const k_type_files[] = {
    "F16.bin",    "BF16.bin",   "Q4_0.bin",    "Q4_1.bin",    "Q5_0.bin",   "Q5_1.bin",
    "Q8_0.bin",   "Q2_K.bin",   "Q3_K.bin",    "Q4_K.bin",    "Q5_K.bin",   "Q6_K.bin",
    "IQ4_NL.bin", "IQ4_XS.bin", "IQ3_S.bin",   "IQ3_XXS.bin", "IQ2_XXS.bin", "IQ2_XS.bin",
    "IQ2_S.bin",  "IQ1_S.bin",  "IQ1_M.bin",   "TQ1_0.bin",   "TQ2_0.bin",  "MXFP4.bin",
};
#define N_TYPE_FILES ((int)(sizeof k_type_files / sizeof k_type_files[0]))

/* golden header agrees with our traits table; returns the traits */
static const cll_type_traits *traits_for(const golden *g) {
    const cll_type_traits *t = cll_type_traits_get(g->type);
    assert_non_null(t);
    assert_string_equal(t->name, g->name);
    assert_int_equal(t->blck, g->blck);
    assert_int_equal(t->type_size, g->tsize);
    assert_int_equal(cll_row_bytes(g->type, g->nper), g->row_size);
    return t;
}

/* ---- dequantizers: bit-exact -------------------------------------------------- */

static bool dequant_matches(const cll_type_traits *t, const uint8_t *q, const float *want, int64_t n) {
    float *y = malloc((size_t)n * sizeof(float));
    assert_non_null(y);
    memset(y, 0xff, (size_t)n * sizeof(float)); /* NaN poison: unwritten elements cannot match */
    t->to_f32(q, y, n);
    const bool ok = memcmp(y, want, (size_t)n * sizeof(float)) == 0;
    free(y);
    return ok;
}

static void test_dequant_all_types(void **state) {
    (void)state;
    int checked = 0;
    for (int f = 0; f < N_TYPE_FILES; f++) {
        golden g;
        golden_load(k_type_files[f], &g);
        const cll_type_traits *t = traits_for(&g);
        assert_non_null(t->to_f32);
        if (!dequant_matches(t, g_q(&g), g_dq(&g), g_nel(&g))) fail_msg("%s: dequant differs from ggml", t->name);
        checked++;
        free(g.buf);
    }
    printf("dequant bit-exact with ggml: %d/%d types\n", checked, N_TYPE_FILES);
    assert_int_equal(checked, 24);
}

/* flip one byte inside a block: the same comparison must now fail, for every type */
static void test_dequant_poison_control(void **state) {
    (void)state;
    for (int f = 0; f < N_TYPE_FILES; f++) {
        golden g;
        golden_load(k_type_files[f], &g);
        const cll_type_traits *t = traits_for(&g);
        uint8_t *q = malloc(g.qbytes);
        memcpy(q, g_q(&g), g.qbytes);
        /* row 0, block 1, a byte in the middle of the block (scale or quants) */
        q[g.tsize + g.tsize / 2] ^= 0x5a;
        if (dequant_matches(t, q, g_dq(&g), g_nel(&g))) fail_msg("%s: perturbed bytes still compare equal", t->name);
        free(q);
        free(g.buf);
    }
}

/* ---- quantizers: byte-exact ----------------------------------------------------- */

static bool quant_matches(cll_from_f32_fn fn, const golden *g) {
    uint8_t *q = malloc(g->qbytes);
    assert_non_null(q);
    memset(q, 0xa5, g->qbytes);
    fn(g_src(g), q, g_nel(g));
    const bool ok = memcmp(q, g_q(g), g->qbytes) == 0;
    free(q);
    return ok;
}

/* d * q of an activation block row (no ggml to_f32 for Q8_1/Q8_K: the golden holds d*q) */
static void act_dequant(uint32_t type, const void *q, float *y, int64_t n) {
    if (type == CLL_TYPE_Q8_0) {
        const cll_block_q8_0 *b = q;
        for (int64_t i = 0; i < n; i++) y[i] = b[i / 32].qs[i % 32] * cll_fp16_to_f32(b[i / 32].d);
    } else if (type == CLL_TYPE_Q8_1) {
        const cll_block_q8_1 *b = q;
        for (int64_t i = 0; i < n; i++) y[i] = b[i / 32].qs[i % 32] * cll_fp16_to_f32(b[i / 32].d);
    } else {
        const cll_block_q8_K *b = q;
        for (int64_t i = 0; i < n; i++) y[i] = b[i / 256].d * b[i / 256].qs[i % 256];
    }
}

static void test_activation_quantizers(void **state) {
    (void)state;
    static const struct { const char *file; uint32_t type; cll_from_f32_fn fn; } k[] = {
        {"act_Q8_0.bin", CLL_TYPE_Q8_0, cll_quantize_q8_0},
        {"act_Q8_1.bin", CLL_TYPE_Q8_1, cll_quantize_q8_1},
        {"act_Q8_K.bin", CLL_TYPE_Q8_K, cll_quantize_q8_K},
    };
    int checked = 0;
    for (int i = 0; i < 3; i++) {
        golden g;
        golden_load(k[i].file, &g);
        traits_for(&g);
        assert_int_equal(g.type, k[i].type);
        assert_true(g.flags & 2);
        if (!quant_matches(k[i].fn, &g)) fail_msg("%s: bytes differ from ggml-cpu from_float", k[i].file);
        /* the stored dequant (ggml's or the tool's d*q) agrees with our reading of the bytes */
        float *y = malloc((size_t)g_nel(&g) * 4);
        act_dequant(g.type, g_q(&g), y, g_nel(&g));
        if (memcmp(y, g_dq(&g), (size_t)g_nel(&g) * 4) != 0) fail_msg("%s: d*q differs", k[i].file);
        if (g.type == CLL_TYPE_Q8_K) { /* bsums are sums of 16 quants */
            const cll_block_q8_K *b = (const cll_block_q8_K *)g_q(&g);
            for (int64_t blk = 0; blk < g_nel(&g) / 256; blk++)
                for (int s = 0; s < 16; s++) {
                    int sum = 0;
                    for (int j = 0; j < 16; j++) sum += b[blk].qs[16 * s + j];
                    assert_int_equal(sum, b[blk].bsums[s]);
                }
        }
        /* poison: a perturbed input must change the bytes */
        float *x = malloc((size_t)g_nel(&g) * 4);
        memcpy(x, g_src(&g), (size_t)g_nel(&g) * 4);
        x[5] += 0.5f;
        uint8_t *q = malloc(g.qbytes);
        k[i].fn(x, q, g_nel(&g));
        assert_true(memcmp(q, g_q(&g), g.qbytes) != 0);
        free(q);
        free(x);
        free(y);
        free(g.buf);
        checked++;
    }
    printf("activation quantizers byte-exact with ggml-cpu: %d/3\n", checked);
}

static void test_weight_quantizers(void **state) {
    (void)state;
    static const char *const files[] = {"F16.bin", "BF16.bin", "Q4_0.bin", "Q4_1.bin", "Q5_0.bin", "Q5_1.bin", "Q8_0.bin",
                                        "Q4_K.bin", "Q5_K.bin", "Q6_K.bin"};
    int checked = 0;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        golden g;
        golden_load(files[i], &g);
        const cll_type_traits *t = traits_for(&g);
        assert_non_null(t->from_f32);
        if (!quant_matches(t->from_f32, &g)) fail_msg("%s: quantized bytes differ from ggml", t->name);
        checked++;
        free(g.buf);
    }
    printf("weight quantizers byte-exact with ggml: %d types\n", checked);
    assert_int_equal(checked, 10);
}

/* ---- fp16 / bf16 ------------------------------------------------------------------ */

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* the value of a half by definition: (-1)^s * 2^(e-15) * (1 + m/1024), or 2^-14 * m/1024 */
static double half_value(uint16_t h) {
    const int s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    const double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

static void test_fp16_exhaustive(void **state) {
    (void)state;
    int checked = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        const float f = cll_fp16_to_f32((uint16_t)h);
        const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
        if (e == 0x1f) {
            if (m == 0) assert_true(isinf(f) && (signbit(f) != 0) == ((h >> 15) != 0));
            else { /* NaN keeps sign and payload */
                assert_true(isnan(f));
                assert_int_equal(f2u(f), ((h & 0x8000u) << 16) | 0x7f800000u | ((uint32_t)m << 13));
            }
        } else {
            if ((double)f != half_value((uint16_t)h) || (signbit(f) != 0) != ((h >> 15) != 0))
                fail_msg("fp16 0x%04x -> %a, want %a", h, (double)f, half_value((uint16_t)h));
            /* round trip is the identity on every non-NaN half */
            assert_int_equal(cll_f32_to_fp16(f), h);
        }
        if (e == 0x1f && m) assert_int_equal(cll_f32_to_fp16(f), (h & 0x8000) | 0x7e00);
        checked++;
    }
    assert_int_equal(checked, 65536);
    /* poison: a one-ulp change of the definition is caught */
    assert_true((double)cll_fp16_to_f32(0x0001) != half_value(0x0002));
}

/* nearest half by search over the positive halfs, ties to the even one (independent of
 * the bit tricks in fp16.c); |x| beyond 65520 is inf */
static uint16_t fp16_by_search(float x) {
    const double a = fabs((double)x);
    const uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (a >= 65520.0) return sign | 0x7c00;
    int lo = 0, hi = 0x7bff; /* largest half <= a */
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (half_value((uint16_t)mid) <= a) lo = mid;
        else hi = mid - 1;
    }
    if (lo == 0x7bff) return sign | 0x7bff;
    const double dl = a - half_value((uint16_t)lo), dh = half_value((uint16_t)(lo + 1)) - a;
    const int pick = dl < dh ? lo : dh < dl ? lo + 1 : ((lo & 1) ? lo + 1 : lo);
    return (uint16_t)(sign | pick);
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rng_next(void) { /* splitmix64 */
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float rng_normal(void) {
    const double u1 = ((rng_next() >> 11) + 1.0) / 9007199254740993.0, u2 = (rng_next() >> 11) / 9007199254740992.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
__attribute__((target("f16c"))) static uint16_t fp16_hw(float f) {
    return (uint16_t)_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0);
}
/* CPUID leaf 1, ECX bit 29 (clang's __builtin_cpu_supports has no "f16c") */
#include <cpuid.h>
static bool have_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}
#else
static uint16_t fp16_hw(float f) { return fp16_by_search(f); }
static bool have_f16c(void) { return false; }
#endif

static void check_f32_to_fp16(float x, bool hw) {
    const uint16_t got = cll_f32_to_fp16(x);
    if (got != fp16_by_search(x)) fail_msg("f32 %a -> fp16 0x%04x, want 0x%04x", (double)x, got, fp16_by_search(x));
    if (hw && got != fp16_hw(x)) fail_msg("f32 %a -> fp16 0x%04x, F16C says 0x%04x", (double)x, got, fp16_hw(x));
}

static void test_f32_to_fp16_rounding(void **state) {
    (void)state;
    const bool hw = have_f16c();
    /* every midpoint between neighbouring halfs (the ties) and the floats either side */
    for (uint32_t h = 0; h < 0x7c00; h++) {
        const float mid = (float)((half_value((uint16_t)h) + half_value((uint16_t)(h + 1))) / 2);
        const uint32_t u = f2u(mid);
        for (int k = -1; k <= 1; k++) {
            check_f32_to_fp16(u2f(u + (uint32_t)k), hw);
            check_f32_to_fp16(-u2f(u + (uint32_t)k), hw);
        }
    }
    /* random bit patterns (all exponents) and random normals of many scales */
    for (int i = 0; i < 300000; i++) {
        const float x = u2f((uint32_t)rng_next());
        if (isnan(x)) assert_int_equal(cll_f32_to_fp16(x) & 0x7fff, 0x7e00);
        else check_f32_to_fp16(x, hw);
        check_f32_to_fp16(rng_normal() * ldexpf(1.0f, (int)(rng_next() % 48) - 30), hw);
    }
    printf("f32->fp16 checked against search%s\n", hw ? " and F16C" : "");
}

/* nearest bf16 by definition: candidates are the truncation and the next one up */
static uint16_t bf16_by_definition(float x) {
    const uint32_t u = f2u(x);
    const uint16_t lo = (uint16_t)(u >> 16);
    const double a = fabs((double)x), vl = fabs((double)u2f((uint32_t)lo << 16));
    const double vh = ((lo + 1) & 0x7f80) == 0x7f80 ? ldexp(1.0, 128) : fabs((double)u2f((uint32_t)(lo + 1) << 16));
    const double dl = a - vl, dh = vh - a;
    if (dl < dh || (dl == dh && !(lo & 1))) return lo;
    return (uint16_t)(lo + 1);
}

static void test_bf16(void **state) {
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        const float f = cll_bf16_to_f32((uint16_t)h);
        assert_int_equal(f2u(f), h << 16);
        if (isnan(f)) assert_int_equal(cll_f32_to_bf16(f), h | 64);
        else assert_int_equal(cll_f32_to_bf16(f), h);
    }
    for (int i = 0; i < 300000; i++) {
        float x = u2f((uint32_t)rng_next());
        if (i & 1) x = u2f((f2u(x) & 0xffff0000u) | 0x8000u); /* exact ties */
        if (isnan(x)) continue;
        if (cll_f32_to_bf16(x) != bf16_by_definition(x))
            fail_msg("f32 %a -> bf16 0x%04x, want 0x%04x", (double)x, cll_f32_to_bf16(x), bf16_by_definition(x));
    }
}

/* ---- the integer dot reference --------------------------------------------------- */

/* the unpacked integers times the scales give back to_f32 (up to its float rounding) */
static void test_dot_unpack_matches_dequant(void **state) {
    (void)state;
    int checked = 0;
    for (int f = 0; f < N_TYPE_FILES; f++) {
        golden g;
        golden_load(k_type_files[f], &g);
        const cll_type_traits *t = traits_for(&g);
        if (!cll_dot_unpack_supported(g.type)) {
            free(g.buf);
            continue;
        }
        const float *dq = g_dq(&g);
        const int64_t nb = g_nel(&g) / g.blck;
        for (int64_t i = 0; i < nb; i++) {
            for (int j = 0; j < (int)g.blck; j++) {
                double want, mag;
                if (g.blck == 32) {
                    cll_unpacked32 u;
                    cll_dot_unpack32(g.type, g_q(&g), i, &u);
                    want = (double)u.d * u.v[j] + u.m;
                    mag = fabs((double)u.d * u.v[j]) + fabs(u.m);
                } else {
                    cll_unpacked256 u;
                    cll_dot_unpack256(g.type, g_q(&g), i, &u);
                    want = (double)u.d * u.sc[j / 16] * u.v[j] - (double)u.dmin * u.m[j / 16];
                    mag = fabs((double)u.d * u.sc[j / 16] * u.v[j]) + fabs((double)u.dmin * u.m[j / 16]);
                }
                const double got = dq[i * g.blck + j];
                if (fabs(got - want) > 4e-7 * mag + 1e-44)
                    fail_msg("%s block %lld elem %d: unpack %.9g, to_f32 %.9g", t->name, (long long)i, j, want, got);
            }
        }
        checked++;
        free(g.buf);
    }
    printf("dot unpack == to_f32 for %d block types\n", checked);
    assert_int_equal(checked, 22);
}

/* |ref - want| within tol: want, tol computed by the caller */
static bool within(double got, double want, double tol) { return fabs(got - want) <= tol; }

static void test_vec_dot_ref(void **state) {
    (void)state;
    enum { N = 1024 };
    float x[N], xdq[N], w[N];
    uint8_t xq[N / 32 * 36 + N / 256 * 292];
    int checked = 0;
    for (int f = 0; f < N_TYPE_FILES; f++) {
        golden g;
        golden_load(k_type_files[f], &g);
        const cll_type_traits *t = traits_for(&g);
        assert_int_equal(g.nper, N);
        for (uint32_t r = 0; r < g.nrows; r++) {
            const uint8_t *wrow = g_q(&g) + r * g.row_size;
            t->to_f32(wrow, w, N);
            /* activations: N(0,1) with a few outliers, fresh per row */
            for (int i = 0; i < N; i++) x[i] = rng_normal() * (i % 61 == 7 ? 8.0f : 1.0f);
            const void *act = x;
            if (t->vec_dot_type == CLL_TYPE_F32 || t->vec_dot_type == CLL_TYPE_F16) {
                memcpy(xdq, x, sizeof x); /* F16 weights: f32 activations */
            } else if (t->vec_dot_type == CLL_TYPE_BF16) {
                for (int i = 0; i < N; i++) xdq[i] = cll_bf16_to_f32(cll_f32_to_bf16(x[i]));
            } else {
                /* the activation quantizers (ggml-cpu's from_float), not the weight ones */
                const cll_from_f32_fn aq = t->vec_dot_type == CLL_TYPE_Q8_0   ? cll_quantize_q8_0
                                           : t->vec_dot_type == CLL_TYPE_Q8_1 ? cll_quantize_q8_1
                                                                              : cll_quantize_q8_K;
                assert_true(t->vec_dot_type == CLL_TYPE_Q8_0 || t->vec_dot_type == CLL_TYPE_Q8_1 ||
                            t->vec_dot_type == CLL_TYPE_Q8_K);
                aq(x, xq, N);
                act_dequant(t->vec_dot_type, xq, xdq, N);
                act = xq;
            }
            const double got = cll_vec_dot_ref(g.type, wrow, act, N);
            double exact = 0, mag = 0, qerr = 0, plain = 0;
            for (int i = 0; i < N; i++) {
                exact += (double)w[i] * xdq[i];
                mag += fabs((double)w[i] * xdq[i]);
                qerr += fabs((double)w[i]) * fabs((double)x[i] - xdq[i]);
                plain += (double)w[i] * x[i];
            }
            /* Q8_1 carries s = fp16(d * sum(q)); ggml uses that rounded s for the min term */
            if (t->vec_dot_type == CLL_TYPE_Q8_1) {
                const cll_block_q8_1 *yb = (const cll_block_q8_1 *)xq;
                for (int b = 0; b < N / 32; b++) {
                    cll_unpacked32 u;
                    cll_dot_unpack32(g.type, wrow, b, &u);
                    double sum = 0;
                    for (int j = 0; j < 32; j++) sum += xdq[32 * b + j];
                    const double corr = (double)u.m * ((double)cll_fp16_to_f32(yb[b].s) - sum);
                    exact += corr;
                    qerr += fabs(corr);
                }
            }
            /* 1) same numbers as dequant(w) . dequant(act): only float summation order differs */
            const double tol = 2e-5 * mag + 1e-30;
            if (!within(got, exact, tol))
                fail_msg("%s row %u: vec_dot_ref %.9g, dequant dot %.9g (tol %.3g)", t->name, r, got, exact, tol);
            /* 2) against the unquantized activations: bounded by the activation error */
            if (!within(got, plain, qerr * 1.001 + tol))
                fail_msg("%s row %u: vec_dot_ref %.9g, f32 dot %.9g (act err bound %.3g)", t->name, r, got, plain, qerr);
            /* poison: the same bar rejects a perturbed expectation */
            if (mag > 0) assert_false(within(got, exact + 3 * tol + 1e-3 * mag, tol));
        }
        /* poison: flipping the scale of block 0 of row 0 moves the dot beyond the bar */
        if (g.type == CLL_TYPE_Q4_0) {
            uint8_t blk[18 * (N / 32)];
            memcpy(blk, g_q(&g), sizeof blk);
            t->to_f32(blk, w, N);
            for (int i = 0; i < N; i++) x[i] = 1.0f;
            cll_quantize_q8_0(x, xq, N);
            const double before = cll_vec_dot_ref(g.type, blk, xq, N);
            blk[1] ^= 0x08; /* fp16 exponent bit of d */
            const double after = cll_vec_dot_ref(g.type, blk, xq, N);
            assert_true(fabs(after - before) > 1e-3 * fabs(before));
        }
        checked++;
        free(g.buf);
    }
    /* F32 weights too (not a golden file) */
    for (int i = 0; i < N; i++) { w[i] = rng_normal(); x[i] = rng_normal(); }
    double want = 0, mag = 0;
    for (int i = 0; i < N; i++) { want += (double)w[i] * x[i]; mag += fabs((double)w[i] * x[i]); }
    assert_true(within(cll_vec_dot_ref(CLL_TYPE_F32, w, x, N), want, 2e-5 * mag));
    /* unknown ids and partial blocks give NaN, never a crash */
    assert_true(isnan(cll_vec_dot_ref(CLL_TYPE_I32, w, x, N)));
    assert_true(isnan(cll_vec_dot_ref(CLL_TYPE_Q4_0, w, x, 33)));
    assert_true(isnan(cll_vec_dot_ref(999, w, x, N)));
    printf("vec_dot_ref checked for %d golden types + f32\n", checked);
    assert_int_equal(checked, 24);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dequant_all_types),
        cmocka_unit_test(test_dequant_poison_control),
        cmocka_unit_test(test_activation_quantizers),
        cmocka_unit_test(test_weight_quantizers),
        cmocka_unit_test(test_fp16_exhaustive),
        cmocka_unit_test(test_f32_to_fp16_rounding),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_dot_unpack_matches_dequant),
        cmocka_unit_test(test_vec_dot_ref),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
