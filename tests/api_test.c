/* api_test: the public API's session semantics on stories260K — a sequence's logits do not
 * depend on what else is in the batch, seq_truncate + re-decode equals a fresh decode, a
 * batched prefill equals token-by-token — and its error paths (bad path, unknown
 * architecture, unsupported tensor type, context full, bad positions/sequences, CUDA). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "cllama.h"
#include "testutil.h"

#define TOL 1e-4 /* same math, possibly another matmul row grouping */

static cllama_model *g_model;
static int32_t g_nv;

static int setup(void **st) {
    (void)st;
    char path[4096];
    snprintf(path, sizeof path, "%s", tu_shared("models/stories260K.gguf"));
    if (cllama_model_load(path, NULL, &g_model) != CLLAMA_OK) {
        print_message("load: %s\n", cllama_last_error());
        return -1;
    }
    g_nv = cllama_model_n_vocab(g_model);
    return 0;
}
static int teardown(void **st) {
    (void)st;
    cllama_model_free(g_model);
    return 0;
}

static cllama_context *ctx(uint32_t n_seq, uint32_t n_ctx) {
    cllama_context_params p = cllama_context_default_params();
    p.n_seq_max = n_seq;
    p.n_ctx = n_ctx;
    p.n_batch = 64;
    p.n_threads = 2;
    p.kv_type = CLLAMA_KV_F32;
    cllama_context *c = NULL;
    assert_int_equal(cllama_context_create(g_model, &p, &c), CLLAMA_OK);
    return c;
}

static int tok(const char *text, int32_t *ids) {
    int32_t n = 0;
    assert_int_equal(cllama_tokenize(g_model, text, strlen(text), true, false, ids, 64, &n), CLLAMA_OK);
    return n;
}

static double maxdiff(const float *a, const float *b) {
    double d = 0;
    for (int32_t i = 0; i < g_nv; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

static int32_t argmax(const float *x) {
    int32_t b = 0;
    for (int32_t i = 1; i < g_nv; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

static const char *k_prompts[3] = {"Once upon a time", "The little dog ran to the", "Lily and Ben"};
enum { N_STEPS = 4 };

/* reference: each prompt alone, then N_STEPS greedy tokens; logits (3, N_STEPS+1, n_vocab) */
static float *alone(int32_t gen[3][N_STEPS]) {
    float *ref = malloc(sizeof(float) * 3 * (N_STEPS + 1) * (size_t)g_nv);
    for (int p = 0; p < 3; p++) {
        cllama_context *c = ctx(1, 128);
        int32_t ids[64], pos[64], seq[64];
        int8_t want[64];
        const int n = tok(k_prompts[p], ids);
        for (int i = 0; i < n; i++) pos[i] = i, seq[i] = 0, want[i] = i == n - 1;
        cllama_batch b = {n, ids, pos, seq, want};
        assert_int_equal(cllama_decode(c, &b), CLLAMA_OK);
        for (int s = 0; s <= N_STEPS; s++) {
            const float *L = cllama_get_logits(c, -1);
            assert_non_null(L);
            memcpy(ref + ((size_t)p * (N_STEPS + 1) + s) * g_nv, L, sizeof(float) * g_nv);
            if (s == N_STEPS) break;
            int32_t t = gen[p][s] = argmax(L), ps = n + s, sq = 0;
            int8_t w = 1;
            cllama_batch b1 = {1, &t, &ps, &sq, &w};
            assert_int_equal(cllama_decode(c, &b1), CLLAMA_OK);
        }
        cllama_context_free(c);
    }
    return ref;
}

static void test_multi_sequence_equals_single(void **st) {
    (void)st;
    int32_t gen[3][N_STEPS];
    float *ref = alone(gen);
    cllama_context *c = ctx(4, 128);
    /* one mixed batch: the three prompts interleaved token by token, in sequences 3, 1, 0 */
    const int32_t sid[3] = {3, 1, 0};
    int32_t ids[3][64], n[3], bt[192], bp[192], bs[192], idx_last[3];
    int8_t bw[192];
    int nb = 0;
    for (int p = 0; p < 3; p++) n[p] = tok(k_prompts[p], ids[p]);
    for (int i = 0; i < 64; i++)
        for (int p = 0; p < 3; p++)
            if (i < n[p]) {
                bt[nb] = ids[p][i], bp[nb] = i, bs[nb] = sid[p], bw[nb] = i == n[p] - 1;
                if (bw[nb]) idx_last[p] = nb;
                nb++;
            }
    cllama_batch b = {nb, bt, bp, bs, bw};
    assert_int_equal(cllama_decode(c, &b), CLLAMA_OK);
    double worst = 0;
    for (int p = 0; p < 3; p++) worst = fmax(worst, maxdiff(cllama_get_logits(c, idx_last[p]), ref + (size_t)p * (N_STEPS + 1) * g_nv));
    /* then N_STEPS steps with one token per sequence in one batch (continuous batching) */
    for (int s = 0; s < N_STEPS; s++) {
        int32_t t[3], ps[3], sq[3];
        int8_t w[3] = {1, 1, 1};
        for (int p = 0; p < 3; p++) t[p] = gen[p][s], ps[p] = n[p] + s, sq[p] = sid[p];
        cllama_batch b3 = {3, t, ps, sq, w};
        assert_int_equal(cllama_decode(c, &b3), CLLAMA_OK);
        for (int p = 0; p < 3; p++)
            worst = fmax(worst, maxdiff(cllama_get_logits(c, p), ref + ((size_t)p * (N_STEPS + 1) + s + 1) * g_nv));
    }
    for (int p = 0; p < 3; p++) assert_int_equal(cllama_seq_len(c, sid[p]), n[p] + N_STEPS);
    assert_int_equal(cllama_seq_len(c, 2), 0);
    print_message("multi-sequence vs alone: max |dlogit| %.2e\n", worst);
    assert_true(worst < TOL);
    cllama_context_free(c);
    free(ref);
}

static void test_decode_step_plus_prompt_chunk(void **st) {
    (void)st;
    int32_t gen[3][N_STEPS];
    float *ref = alone(gen);
    cllama_context *c = ctx(2, 128);
    int32_t a[64], bq[64];
    const int na = tok(k_prompts[0], a), nbq = tok(k_prompts[1], bq);
    /* seq 0: prompt A alone first */
    int32_t pos[64], seq[64];
    int8_t want[64];
    for (int i = 0; i < na; i++) pos[i] = i, seq[i] = 0, want[i] = 0;
    cllama_batch b = {na, a, pos, seq, want};
    assert_int_equal(cllama_decode(c, &b), CLLAMA_OK);
    /* then one batch: seq 0 decodes its first generated token, seq 1 prefills all of prompt B */
    int32_t t[65], p2[65], s2[65];
    int8_t w2[65];
    t[0] = gen[0][0], p2[0] = na, s2[0] = 0, w2[0] = 1;
    for (int i = 0; i < nbq; i++) t[1 + i] = bq[i], p2[1 + i] = i, s2[1 + i] = 1, w2[1 + i] = i == nbq - 1;
    cllama_batch bb = {1 + nbq, t, p2, s2, w2};
    assert_int_equal(cllama_decode(c, &bb), CLLAMA_OK);
    const double d0 = maxdiff(cllama_get_logits(c, 0), ref + 1 * (size_t)g_nv);
    const double d1 = maxdiff(cllama_get_logits(c, nbq), ref + (size_t)1 * (N_STEPS + 1) * g_nv);
    assert_null(cllama_get_logits(c, 1)); /* not requested */
    print_message("step + chunk: %.2e %.2e\n", d0, d1);
    assert_true(d0 < TOL && d1 < TOL);
    cllama_context_free(c);
    free(ref);
}

static void test_truncate_then_redecode_equals_fresh(void **st) {
    (void)st;
    int32_t ids[64], pos[64], seq[64];
    int8_t want[64];
    const int n = tok(k_prompts[0], ids);
    const int32_t other[3] = {300, 301, 302}, cont[3] = {400, 401, 402};
    cllama_context *c = ctx(1, 64);
    for (int i = 0; i < n; i++) pos[i] = i, seq[i] = 0, want[i] = 0;
    cllama_batch b = {n, ids, pos, seq, want};
    assert_int_equal(cllama_decode(c, &b), CLLAMA_OK);
    for (int i = 0; i < 3; i++) pos[i] = n + i, want[i] = i == 2;
    cllama_batch bo = {3, other, pos, seq, want};
    assert_int_equal(cllama_decode(c, &bo), CLLAMA_OK);
    assert_int_equal(cllama_seq_truncate(c, 0, n), CLLAMA_OK);
    assert_int_equal(cllama_seq_len(c, 0), n);
    cllama_batch bc = {3, cont, pos, seq, want};
    assert_int_equal(cllama_decode(c, &bc), CLLAMA_OK);
    float *got = malloc(sizeof(float) * g_nv);
    memcpy(got, cllama_get_logits(c, 2), sizeof(float) * g_nv);
    cllama_context_free(c);
    /* fresh, one token at a time (also checks batched prefill == token by token) */
    c = ctx(1, 64);
    int32_t all[64];
    memcpy(all, ids, sizeof(int32_t) * n);
    memcpy(all + n, cont, sizeof cont);
    for (int i = 0; i < n + 3; i++) {
        int32_t p = i, s = 0;
        int8_t w = 1;
        cllama_batch b1 = {1, &all[i], &p, &s, &w};
        assert_int_equal(cllama_decode(c, &b1), CLLAMA_OK);
    }
    const double d = maxdiff(got, cllama_get_logits(c, 0));
    print_message("truncate + re-decode vs fresh: %.2e\n", d);
    assert_true(d < TOL);
    cllama_context_free(c);
    free(got);
}

static void test_context_errors(void **st) {
    (void)st;
    cllama_context *c = ctx(2, 8);
    int32_t t[9] = {1, 300, 301, 302, 303, 304, 305, 306, 307}, pos[9], seq[9];
    for (int i = 0; i < 9; i++) pos[i] = i, seq[i] = 0;
    cllama_batch b8 = {8, t, pos, seq, NULL};
    assert_int_equal(cllama_decode(c, &b8), CLLAMA_OK);
    assert_non_null(cllama_get_logits(c, 7)); /* NULL logits flags: the last token */
    cllama_batch b1 = {1, t + 8, pos + 8, seq, NULL};
    assert_int_equal(cllama_decode(c, &b1), CLLAMA_ERR_RANGE);
    assert_non_null(strstr(cllama_last_error(), "context full"));
    assert_int_equal(cllama_seq_len(c, 0), 8); /* unchanged by the failed call */
    int32_t bad_pos = 3, s1 = 1;
    cllama_batch bp = {1, t, &bad_pos, &s1, NULL}; /* seq 1 is empty: pos must be 0 */
    assert_int_equal(cllama_decode(c, &bp), CLLAMA_ERR_ARG);
    int32_t p0 = 0, s9 = 9;
    cllama_batch bs = {1, t, &p0, &s9, NULL};
    assert_int_equal(cllama_decode(c, &bs), CLLAMA_ERR_ARG);
    int32_t huge = 1 << 30;
    cllama_batch bt = {1, &huge, &p0, &s1, NULL};
    assert_int_equal(cllama_decode(c, &bt), CLLAMA_ERR_ARG);
    assert_int_equal(cllama_seq_len(c, 1), 0);
    /* a batch refused half way (its third token of seq 1 is out of order) leaves no count behind:
     * the same sequence's good batch then decodes */
    int32_t s3[3] = {1, 1, 1}, p3[3] = {0, 1, 5};
    cllama_batch b3 = {3, t, p3, s3, NULL};
    assert_int_equal(cllama_decode(c, &b3), CLLAMA_ERR_ARG);
    assert_non_null(strstr(cllama_last_error(), "continues at 2"));
    p3[2] = 2;
    assert_int_equal(cllama_decode(c, &b3), CLLAMA_OK);
    assert_int_equal(cllama_seq_len(c, 1), 3);
    cllama_context_free(c);

    /* a context cannot switch the backend its model was prepared for */
    cllama_context_params p = cllama_context_default_params();
    p.backend = CLLAMA_BACKEND_CUDA;
    cllama_context *cc = NULL;
    assert_int_equal(cllama_context_create(g_model, &p, &cc), CLLAMA_ERR_ARG);
    assert_null(cc);
    assert_non_null(strstr(cllama_last_error(), "loaded for cpu"));
    p.backend = (cllama_backend)7;
    assert_int_equal(cllama_context_create(g_model, &p, &cc), CLLAMA_ERR_ARG);
    p.backend = CLLAMA_BACKEND_CPU; /* naming the model's own backend is fine */
    assert_int_equal(cllama_context_create(g_model, &p, &cc), CLLAMA_OK);
    assert_int_equal(cllama_context_backend(cc), CLLAMA_BACKEND_CPU);
    cllama_context_free(cc);
}

/* backend resolution at load: params, else CLLAMA_BACKEND, else cpu; a CUDA load without a
 * usable GPU (or without the driver built) fails with a message naming CUDA */
static void test_backend_select(void **st) {
    (void)st;
    char path[4096];
    snprintf(path, sizeof path, "%s", tu_shared("models/stories260K.gguf"));
    assert_int_equal(cllama_model_backend(g_model), CLLAMA_BACKEND_CPU);
    assert_string_equal(cllama_backend_name(CLLAMA_BACKEND_CUDA), "cuda");
    assert_int_equal(cllama_model_tp(g_model), 1); /* no split unless asked (tensor parallel: tp_test) */
    assert_int_equal(cllama_model_default_params().tp, 0);
    assert_null(cllama_model_default_params().devices);
    cllama_model *m = (cllama_model *)1;
    setenv("CLLAMA_BACKEND", "tpu", 1);
    assert_int_equal(cllama_model_load(path, NULL, &m), CLLAMA_ERR_ARG);
    assert_null(m);
    assert_non_null(strstr(cllama_last_error(), "CLLAMA_BACKEND=tpu"));
    setenv("CLLAMA_BACKEND", "cpu", 1);
    assert_int_equal(cllama_model_load(path, NULL, &m), CLLAMA_OK);
    assert_int_equal(cllama_model_backend(m), CLLAMA_BACKEND_CPU);
    cllama_model_free(m);
    unsetenv("CLLAMA_BACKEND");
    cllama_model_params mp = cllama_model_default_params();
    mp.backend = CLLAMA_BACKEND_CUDA;
    mp.numerics = CLLAMA_NUMERICS_GGML; /* the CPU reference numerics need the CPU */
    assert_int_equal(cllama_model_load(path, &mp, &m), CLLAMA_ERR_UNSUPPORTED);
    assert_non_null(strstr(cllama_last_error(), "backend cpu"));
    mp.numerics = CLLAMA_NUMERICS_DEFAULT;
    const cllama_status cst = cllama_model_load(path, &mp, &m);
    if (cst == CLLAMA_OK) { /* a GPU is here: the model is on it */
        assert_int_equal(cllama_model_backend(m), CLLAMA_BACKEND_CUDA);
        cllama_model_free(m);
    } else {
        assert_true(cst == CLLAMA_ERR_UNSUPPORTED || cst == CLLAMA_ERR_DEVICE);
        assert_null(m);
        assert_true(strstr(cllama_last_error(), "CUDA") || strstr(cllama_last_error(), "cuda"));
    }
}

/* cllama_decode_greedy returns the argmax of what cllama_decode's logits would be, and the
 * counters count the driver's work */
static void test_decode_greedy_and_counters(void **st) {
    (void)st;
    cllama_context *a = ctx(1, 64), *g = ctx(1, 64);
    int32_t ids[64], pos[64], seq[64];
    int8_t want[64];
    const int n = tok(k_prompts[0], ids);
    for (int i = 0; i < n; i++) pos[i] = i, seq[i] = 0, want[i] = (int8_t)(i >= n - 3);
    cllama_batch b = {n, ids, pos, seq, want};
    cllama_token out[3] = {-1, -1, -1};
    assert_int_equal(cllama_decode(a, &b), CLLAMA_OK);
    assert_int_equal(cllama_decode_greedy(g, &b, out), CLLAMA_OK);
    for (int r = 0; r < 3; r++) {
        const float *lg = cllama_get_logits(a, n - 3 + r);
        int32_t best = 0;
        for (int32_t j = 1; j < g_nv; j++)
            if (lg[j] > lg[best]) best = j;
        assert_int_equal(out[r], best);
    }
    assert_null(cllama_get_logits(g, n - 1)); /* ids only */
    assert_int_equal(cllama_decode_greedy(g, &b, NULL), CLLAMA_ERR_ARG);
    cllama_counters k;
    assert_int_equal(cllama_context_counters(g, &k), CLLAMA_OK);
    assert_int_equal(k.forwards, 1);
    assert_int_equal(k.tokens, (uint64_t)n);
    assert_int_equal(k.device_steps, 1);
    assert_int_equal(cllama_context_counters(NULL, &k), CLLAMA_ERR_ARG);
    cllama_context_free(a);
    cllama_context_free(g);
}

/* the K/V bytes a decode token reads (the bench's roofline at depth): stories260K 5 layers x 4 kv
 * heads x (8 + 8) dims x 2 B = 640 B a cell; tiny-gemma3's five sliding layers read at most their
 * 32-cell window, its one global layer every cell (256 B a cell a layer) */
static void test_kv_read_bytes(void **st) {
    (void)st;
    assert_int_equal(cllama_model_kv_read_bytes(g_model, 1, 2), 640);
    assert_int_equal(cllama_model_kv_read_bytes(g_model, 8192, 2), 8192ull * 640);
    assert_int_equal(cllama_model_kv_read_bytes(g_model, 100, 4), 100ull * 1280); /* F32 cache */
    assert_int_equal(cllama_model_kv_read_bytes(g_model, 0, 2), 0);
    assert_int_equal(cllama_model_kv_read_bytes(NULL, 10, 2), 0);
    char path[4096];
    snprintf(path, sizeof path, "%s", tu_shared("oracle/models/tiny-gemma3-Q8_0.gguf"));
    cllama_model *m = NULL;
    assert_int_equal(cllama_model_load(path, NULL, &m), CLLAMA_OK);
    assert_int_equal(cllama_model_kv_read_bytes(m, 20, 2), 6ull * 20 * 256);            /* inside the window */
    assert_int_equal(cllama_model_kv_read_bytes(m, 100, 2), (5ull * 32 + 100) * 256);   /* local layers capped */
    cllama_model_free(m);
}

static void test_bad_path(void **st) {
    (void)st;
    cllama_model *m = (cllama_model *)1;
    assert_int_equal(cllama_model_load("/nonexistent/dir/model.gguf", NULL, &m), CLLAMA_ERR_IO);
    assert_null(m);
    assert_non_null(strstr(cllama_last_error(), "/nonexistent/dir/model.gguf"));
}

/* write a GGUF with the given architecture and one token_embd tensor of the given type; rope_type (NULL:
 * none) and rope_factor (0: none) become its rope.scaling keys */
static void craft_rope(const char *path, const char *arch, uint32_t type, const char *rope_type, float rope_factor) {
    cll_gw *w = cll_bench_gw_new();
    cll_bench_gw_str(w, "general.architecture", arch);
    char key[64];
    if (rope_type) {
        snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
        cll_bench_gw_str(w, key, rope_type);
    }
    if (rope_factor != 0.0f) {
        snprintf(key, sizeof key, "%s.rope.scaling.factor", arch);
        cll_bench_gw_f32(w, key, rope_factor);
    }
    snprintf(key, sizeof key, "%s.block_count", arch);
    cll_bench_gw_u32(w, key, 1);
    snprintf(key, sizeof key, "%s.embedding_length", arch);
    cll_bench_gw_u32(w, key, 256);
    snprintf(key, sizeof key, "%s.attention.head_count", arch);
    cll_bench_gw_u32(w, key, 4);
    snprintf(key, sizeof key, "%s.feed_forward_length", arch);
    cll_bench_gw_u32(w, key, 256);
    const uint64_t ne[2] = {256, 4};
    const uint64_t nbytes = cll_bench_gw_tensor(w, "token_embd.weight", type, 2, ne);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(cll_bench_gw_write_header(w, f), CLL_OK);
    void *zero = calloc(1, nbytes);
    fwrite(zero, 1, nbytes, f);
    free(zero);
    assert_int_equal(cll_bench_gw_pad(w, f, nbytes), CLL_OK);
    fclose(f);
    cll_bench_gw_free(w);
}

static void craft(const char *path, const char *arch, uint32_t type) { craft_rope(path, arch, type, NULL, 0.0f); }

/* rope.scaling: a type cllama does not compute is refused by name (it once warned and ran plain rope, which
 * gives other logits than llama.cpp from the first token: tests/golden_test.c test_yarn), as is a factor
 * that is not a positive number */
static void test_rope_scaling_refused(void **st) {
    (void)st;
    char path[64];
    snprintf(path, sizeof path, "/tmp/cllama_api_rope_%d.gguf", (int)getpid());
    cllama_model *m = NULL;
    craft_rope(path, "qwen2", 1, "longrope", 4.0f);
    assert_int_equal(cllama_model_load(path, NULL, &m), CLLAMA_ERR_UNSUPPORTED);
    print_message("longrope: %s\n", cllama_last_error());
    assert_non_null(strstr(cllama_last_error(), "'longrope'"));
    assert_non_null(strstr(cllama_last_error(), "yarn")); /* lists what is supported */
    craft_rope(path, "qwen2", 1, "yarn", -2.0f);
    assert_int_equal(cllama_model_load(path, NULL, &m), CLLAMA_ERR_FORMAT);
    assert_non_null(strstr(cllama_last_error(), "rope.scaling.factor"));
    assert_null(m);
    unlink(path);
}

static void test_unknown_arch_and_bad_type(void **st) {
    (void)st;
    char path[64];
    snprintf(path, sizeof path, "/tmp/cllama_api_test_%d.gguf", (int)getpid());
    cllama_model *m = NULL;
    craft(path, "frobnicator", 1 /* F16 */);
    assert_int_equal(cllama_model_load(path, NULL, &m), CLLAMA_ERR_UNSUPPORTED);
    assert_null(m);
    print_message("unknown arch: %s\n", cllama_last_error());
    assert_non_null(strstr(cllama_last_error(), "frobnicator"));
    assert_non_null(strstr(cllama_last_error(), "qwen3moe")); /* lists what is supported */
    craft(path, "llama", 15 /* Q8_K: an activation type, not a weight type */);
    assert_int_equal(cllama_model_load(path, NULL, &m), CLLAMA_ERR_UNSUPPORTED);
    print_message("bad type: %s\n", cllama_last_error());
    assert_non_null(strstr(cllama_last_error(), "token_embd.weight"));
    assert_non_null(strstr(cllama_last_error(), "q8_K"));
    unlink(path);
}

/* reference numerics: resolved from params or env; a batch decodes as its tokens one by one
 * (every wanted row equal to a one-token decode's, bit for bit); a bad env value is an error */
static void test_numerics_ggml(void **st) {
    (void)st;
    char path[4096];
    snprintf(path, sizeof path, "%s", tu_shared("models/stories260K.gguf"));
    assert_int_equal(cllama_model_numerics(g_model), CLLAMA_NUMERICS_DEFAULT);
    cllama_model_params mp = cllama_model_default_params();
    mp.numerics = CLLAMA_NUMERICS_GGML;
    cllama_model *m = NULL;
    assert_int_equal(cllama_model_load(path, &mp, &m), CLLAMA_OK);
    assert_int_equal(cllama_model_numerics(m), CLLAMA_NUMERICS_GGML);
    cllama_context_params p = cllama_context_default_params();
    p.n_ctx = 64;
    p.n_batch = 16;
    p.n_threads = 2;
    cllama_context *c1 = NULL, *c2 = NULL;
    assert_int_equal(cllama_context_create(m, &p, &c1), CLLAMA_OK);
    assert_int_equal(cllama_context_create(m, &p, &c2), CLLAMA_OK);
    int32_t ids[64], pos[64], seq[64];
    int8_t want[64];
    const int n = tok(k_prompts[1], ids);
    for (int i = 0; i < n; i++) pos[i] = i, seq[i] = 0, want[i] = (int8_t)(i % 2 == 0 || i == n - 1);
    cllama_batch b = {n, ids, pos, seq, want};
    assert_int_equal(cllama_decode(c1, &b), CLLAMA_OK);
    for (int i = 0; i < n; i++) {
        int8_t w = 1;
        cllama_batch b1 = {1, ids + i, pos + i, seq + i, &w};
        assert_int_equal(cllama_decode(c2, &b1), CLLAMA_OK);
        if (want[i]) assert_memory_equal(cllama_get_logits(c1, i), cllama_get_logits(c2, 0), sizeof(float) * g_nv);
        else assert_null(cllama_get_logits(c1, i));
    }
    cllama_context_free(c1);
    cllama_context_free(c2);
    cllama_model_free(m);
    setenv("CLLAMA_NUMERICS", "ggml", 1);
    assert_int_equal(cllama_model_load(path, NULL, &m), CLLAMA_OK);
    assert_int_equal(cllama_model_numerics(m), CLLAMA_NUMERICS_GGML);
    cllama_model_free(m);
    setenv("CLLAMA_NUMERICS", "fast", 1);
    m = (cllama_model *)1;
    assert_int_equal(cllama_model_load(path, NULL, &m), CLLAMA_ERR_ARG);
    assert_null(m);
    assert_non_null(strstr(cllama_last_error(), "CLLAMA_NUMERICS=fast"));
    unsetenv("CLLAMA_NUMERICS");
}

/* A batched decode step of 5 sequences (one token each: the prefill attention path, n >= 4) gives
 * each sequence bit for bit the logits of its lone step (n == 1), on a model whose head size the
 * attention tiles serve (tiny-llama: head dim 64): a sequence's tokens must not depend on its
 * batch-mates. F32 weights keep the attention output unquantized, so any rounding difference of
 * the attention shows (a q8 activation can absorb it: with the one-lane tiles this step took
 * before 3fbccbb, F32 differed in 5 of 5 sequences, F16 in 2, Q4_0 and Q8_0 in none). */
static void test_batched_step_equals_alone(void **st) {
    (void)st;
    char path[96];
    snprintf(path, sizeof path, "/tmp/api_test_tiny_llama_%d.gguf", (int)getpid());
    cll_synth_opts so = {.shape = "tiny-llama", .type = "F32", .out = path, .seed = 7, .quiet = true};
    assert_int_equal(cll_bench_synth(&so), CLL_OK);
    cllama_model *m = NULL;
    assert_int_equal(cllama_model_load(path, NULL, &m), CLLAMA_OK);
    unlink(path);
    const int32_t nv = cllama_model_n_vocab(m);
    enum { NS = 5, NP = 7 };
    float *lone = malloc(sizeof(float) * NS * (size_t)nv);
    cllama_context_params p = cllama_context_default_params();
    p.n_ctx = 64;
    p.n_threads = 2;
    int32_t prompt[NS][NP];
    for (int s = 0; s < NS; s++)
        for (int i = 0; i < NP; i++) prompt[s][i] = (int32_t)((s * 131 + i * 37 + 5) % nv);
    /* alone: prompt, then one step */
    for (int s = 0; s < NS; s++) {
        cllama_context *c = NULL;
        p.n_seq_max = 1;
        assert_int_equal(cllama_context_create(m, &p, &c), CLLAMA_OK);
        int32_t pos[NP], seq[NP];
        int8_t want[NP];
        for (int i = 0; i < NP; i++) pos[i] = i, seq[i] = 0, want[i] = 0;
        cllama_batch b = {NP, prompt[s], pos, seq, want};
        assert_int_equal(cllama_decode(c, &b), CLLAMA_OK);
        int32_t t = (s * 17 + 3) % nv, ps = NP, sq = 0;
        int8_t w = 1;
        cllama_batch b1 = {1, &t, &ps, &sq, &w};
        assert_int_equal(cllama_decode(c, &b1), CLLAMA_OK);
        memcpy(lone + (size_t)s * nv, cllama_get_logits(c, 0), sizeof(float) * nv);
        cllama_context_free(c);
    }
    /* together: the same prompts one sequence at a time, then one batched step of all five */
    cllama_context *c = NULL;
    p.n_seq_max = NS;
    assert_int_equal(cllama_context_create(m, &p, &c), CLLAMA_OK);
    for (int s = 0; s < NS; s++) {
        int32_t pos[NP], seq[NP];
        int8_t want[NP];
        for (int i = 0; i < NP; i++) pos[i] = i, seq[i] = s, want[i] = 0;
        cllama_batch b = {NP, prompt[s], pos, seq, want};
        assert_int_equal(cllama_decode(c, &b), CLLAMA_OK);
    }
    int32_t t[NS], ps[NS], sq[NS];
    int8_t w[NS];
    for (int s = 0; s < NS; s++) t[s] = (s * 17 + 3) % nv, ps[s] = NP, sq[s] = s, w[s] = 1;
    cllama_batch bb = {NS, t, ps, sq, w};
    assert_int_equal(cllama_decode(c, &bb), CLLAMA_OK);
    int differ = 0;
    for (int s = 0; s < NS; s++) differ += memcmp(cllama_get_logits(c, s), lone + (size_t)s * nv, sizeof(float) * nv) != 0;
    print_message("batched step vs alone: %d of %d sequences differ\n", differ, NS);
    assert_int_equal(differ, 0);
    /* poison control: the comparison sees a one-ulp change */
    lone[3] = nextafterf(lone[3], INFINITY);
    assert_true(memcmp(cllama_get_logits(c, 0), lone, sizeof(float) * nv) != 0);
    cllama_context_free(c);
    cllama_model_free(m);
    free(lone);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batched_step_equals_alone),
        cmocka_unit_test(test_numerics_ggml),
        cmocka_unit_test(test_multi_sequence_equals_single),
        cmocka_unit_test(test_decode_step_plus_prompt_chunk),
        cmocka_unit_test(test_truncate_then_redecode_equals_fresh),
        cmocka_unit_test(test_context_errors),
        cmocka_unit_test(test_backend_select),
        cmocka_unit_test(test_decode_greedy_and_counters),
        cmocka_unit_test(test_kv_read_bytes),
        cmocka_unit_test(test_bad_path),
        cmocka_unit_test(test_unknown_arch_and_bad_type),
        cmocka_unit_test(test_rope_scaling_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
