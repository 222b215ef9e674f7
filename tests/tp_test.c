/* tp_test: tensor parallel (issue 13) end to end through the public API, on the CPU driver's ranks
 * (host thread groups joined by an in-process all-reduce) — the split-math proof that needs no GPU:
 *  - the whole forward split over 2 (and 4) ranks, shards computed separately and summed, equals the
 *    unsplit forward within float reassociation on every architecture the split serves (llama GQA,
 *    qwen2 biases, qwen3 q/k norms + tied output, qwen3moe and mixtral experts, a trained model),
 *    teacher-forced over a prompt and greedy steps; where the unsplit top-2 margin is clear the
 *    greedy ids agree;
 *  - TP=1 through the same tp driver path is the unsplit driver bit for bit;
 *  - several sequences in one batched step, a paged cache, greedy ids and top-k candidates merged
 *    across the ranks' vocab slices;
 *  - the counters: tp, two all-reduces a layer a forward;
 *  - counts that do not split (1 KV head; O columns that cut a 256-element block) fail at load naming
 *    the counts that do;
 *  - the CPU ranks' communicator: sums in rank order, every rank the same bits; a rank that fails
 *    wakes the others with an error (none hangs), and the group works again once reset.
 * With CLLAMA_TEST_BACKEND=cuda the same checks run with GPU ranks: one a GPU over NCCL where there are
 * enough GPUs, else every rank on GPU 0 (the simulated split: the real kernels, shards and expert ids, an
 * in-process all-reduce instead of NCCL). SKIP without a GPU. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include <unistd.h>

#include "bench/bench.h"
#include "cllama.h"
#include "cpu/comm.h"

static cllama_backend g_backend = CLLAMA_BACKEND_CPU;
static bool g_one_gpu; /* cuda with one GPU: every rank on it (the simulated split, cuda/comm.cu) */
static const int32_t k_zeros[16];

static cllama_model *load(const char *path, int32_t tp) {
    cllama_model_params mp = cllama_model_default_params();
    mp.backend = g_backend;
    mp.tp = tp;
    if (g_one_gpu && tp > 1) mp.devices = k_zeros;
    cllama_model *m = NULL;
    if (cllama_model_load(path, &mp, &m) != CLLAMA_OK) fail_msg("load %s tp %d: %s", path, tp, cllama_last_error());
    return m;
}

static cllama_context *ctx(cllama_model *m, uint32_t n_seq, uint32_t kv_cells) {
    cllama_context_params cp = cllama_context_default_params();
    cp.n_ctx = 128;
    cp.n_seq_max = n_seq;
    cp.n_batch = 64;
    cp.n_threads = 2;
    cp.kv_type = CLLAMA_KV_F32;
    cp.n_kv_cells = kv_cells;
    cllama_context *c = NULL;
    if (cllama_context_create(m, &cp, &c) != CLLAMA_OK) fail_msg("context: %s", cllama_last_error());
    return c;
}

/* decode tokens [0, n) of sequence seq at positions p0.., every token asking for logits */
static void decode_all(cllama_context *c, const cllama_token *t, int32_t n, int32_t p0, int32_t seq) {
    int32_t pos[64], sid[64];
    int8_t want[64];
    for (int32_t i = 0; i < n; i++) pos[i] = p0 + i, sid[i] = seq, want[i] = 1;
    const cllama_batch b = {n, t, pos, sid, want};
    if (cllama_decode(c, &b) != CLLAMA_OK) fail_msg("decode: %s", cllama_last_error());
}

static int32_t argmax2(const float *l, int32_t V, float *margin) {
    int32_t a = 0;
    for (int32_t j = 1; j < V; j++)
        if (l[j] > l[a]) a = j;
    float second = -INFINITY;
    for (int32_t j = 0; j < V; j++)
        if (j != a && l[j] > second) second = l[j];
    *margin = l[a] - second;
    return a;
}

/* Split over tp ranks vs unsplit: prompt prefill + greedy steps, teacher-forced by the unsplit ids.
 * The split sums each row-parallel product in two parts (a rank's columns, then the all-reduce), so a
 * residual can differ from the unsplit one in its last bit. Where the next product rounds its input
 * (fp16 for F16 weights, int8 blocks for the quantized ones) that bit can move one element by a
 * rounding step, which shows in the logits: on these files up to ~4e-3 (fp16) and 3.5e-2 (one q8 step,
 * tiny-qwen2 Q8_0 row 1, the last layer). So each row must be within tol at its worst element and within
 * 1e-2 of the logits' own RMS over the row (a wrong slice moves the whole row: O(1)); and where the
 * unsplit top-2 margin clears 4 tol, the greedy ids agree.
 * GPU ranks (g_backend cuda) get twice both bars: a rank's products have half the columns, so the
 * pick runs other gemv forms on them (another split of K, another warp-sum order) and more residual bits
 * move than on the CPU's ranks; each layer's q8_1 activation then turns some into rounding steps. First
 * run on the H200 (one GPU, the simulated split): tiny-llama Q4_0 0.081 at worst, 0.0102 of the RMS,
 * tiny-qwen3moe Q8_0 0.1007 and 0.0106, stories260K 1.05e-5 (F32). The margin that makes a greedy id
 * count stays 4 tol. */
static double g_bar = 1.0; /* the bars' scale: 2 on GPU ranks (above) */
static double compare_split_path(const char *path, const char *rel, int32_t tp, double tol) {
    char p[1024];
    snprintf(p, sizeof p, "%s", path);
    cllama_model *ma = load(p, 0), *mb = load(p, tp);
    assert_int_equal(cllama_model_tp(ma), 1);
    assert_int_equal(cllama_model_tp(mb), tp);
    cllama_context *ca = ctx(ma, 1, 0), *cb = ctx(mb, 1, 0);
    const int32_t V = cllama_model_n_vocab(ma);
    assert_int_equal(V, cllama_model_n_vocab(mb));
    cllama_token toks[64];
    int32_t n = 0;
    const char *text = "One day a little bird found a shiny stone by the river.";
    if (cllama_tokenize(ma, text, strlen(text), true, false, toks, 64, &n) != CLLAMA_OK) {
        /* a synth file's made-up vocab spells the text in more tokens than the context: fixed ids */
        const cllama_token ids[16] = {1, 17, 200, 33, 400, 5, 77, 300, 12, 250, 99, 3, 480, 64, 128, 7};
        memcpy(toks, ids, sizeof ids);
        n = 16;
    }
    double worst = 0.0, worst_rms = 0.0;
    int32_t clear = 0;
    decode_all(ca, toks, n, 0, 0);
    decode_all(cb, toks, n, 0, 0);
    int32_t pos = n;
    for (int32_t step = 0; step < 12; step++) {
        const int32_t rows = step == 0 ? n : 1;
        cllama_token next = 0;
        for (int32_t i = 0; i < rows; i++) {
            const float *la = cllama_get_logits(ca, i), *lb = cllama_get_logits(cb, i);
            assert_non_null(la);
            assert_non_null(lb);
            double d = 0.0, se = 0.0, sl = 0.0;
            for (int32_t j = 0; j < V; j++) {
                assert_false(isnan(lb[j]));
                const double e = fabs((double)la[j] - (double)lb[j]);
                d = e > d ? e : d;
                se += e * e;
                sl += (double)la[j] * la[j];
            }
            const double rms = sqrt(se / sl);
            worst = d > worst ? d : worst;
            worst_rms = rms > worst_rms ? rms : worst_rms;
            if (d > g_bar * tol || rms > g_bar * 1e-2)
                fail_msg("%s tp %d: step %d row %d: logits differ by %g at worst (tolerance %g), %g of their RMS (%g)",
                         rel, tp, step, i, d, g_bar * tol, rms, g_bar * 1e-2);
            float ma_, mb_;
            const int32_t ia = argmax2(la, V, &ma_), ib = argmax2(lb, V, &mb_);
            if (ma_ > 4 * tol) {
                clear++;
                if (ia != ib) fail_msg("%s tp %d: step %d row %d: greedy %d vs %d (margin %g)", rel, tp, step, i, ia, ib, ma_);
            }
            next = ia;
        }
        decode_all(ca, &next, 1, pos, 0);
        decode_all(cb, &next, 1, pos, 0);
        pos++;
    }
    printf("  %-40s tp %d: max |logit diff| %.3g, %.2g of the RMS, over %d rows x %d (greedy checked on %d)\n", rel,
           tp, worst, worst_rms, n + 12, V, clear);
    assert_true(clear > n / 2); /* the check had something to check */
    cllama_counters k;
    assert_int_equal(cllama_context_counters(cb, &k), CLLAMA_OK);
    assert_int_equal(k.tp, tp);
    assert_int_equal(k.forwards, 13);
    assert_int_equal(k.allreduces, (uint64_t)13 * 2 * (uint64_t)cllama_model_n_layer(mb));
    assert_int_equal(cllama_context_counters(ca, &k), CLLAMA_OK);
    assert_int_equal(k.tp, 1);
    assert_int_equal(k.allreduces, 0);
    cllama_context_free(ca);
    cllama_context_free(cb);
    cllama_model_free(ma);
    cllama_model_free(mb);
    return worst;
}

static double compare_split(const char *rel, int32_t tp, double tol) { return compare_split_path(tu_shared(rel), rel, tp, tol); }

/* an FFN that 2 ranks split unevenly: `cllama synth --shape tiny-uneven` (Q4_K_M: O's 256 columns a rank,
 * down's 768 columns = 3 blocks of 256 -> 2 + 1) */
static void test_split_uneven(void **state) {
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "/tmp/tp_test_uneven_%d.gguf", (int)getpid());
    const cll_synth_opts o = {.shape = "tiny-uneven", .type = "Q4_K_M", .out = path, .seed = 7, .quiet = true};
    assert_int_equal(cll_bench_synth(&o), CLL_OK);
    compare_split_path(path, "synth tiny-uneven Q4_K_M (FFN 2 + 1 blocks)", 2, 0.02); /* its logits crowd: tighter bar, more margins clear */
    unlink(path);
}

static void test_split_dense(void **state) {
    (void)state;
    compare_split("models/stories260K.gguf", 2, 1e-3);
    compare_split("models/stories260K.gguf", 4, 1e-3);
    compare_split("oracle/models/tiny-llama-Q4_0.gguf", 2, 0.1);
    compare_split("oracle/models/tiny-llama-F16.gguf", 2, 0.1);
    compare_split("oracle/models/tiny-qwen2-Q8_0.gguf", 2, 0.1);
    compare_split("oracle/models/tiny-qwen3-Q4_K_M.gguf", 2, 0.1); /* 4 q heads a rank: whole 256-blocks of O */
}

static void test_split_moe(void **state) {
    (void)state;
    compare_split("oracle/models/tiny-qwen3moe-Q8_0.gguf", 2, 0.1);
    compare_split("oracle/models/tiny-mixtral-Q8_0.gguf", 2, 0.1);
}

/* TP=1 runs the inner driver on the whole model: bit for bit the unsplit logits */
static void test_tp1_bit_exact(void **state) {
    (void)state;
    const char *path = tu_shared("oracle/models/tiny-qwen3-Q4_K_M.gguf");
    char p[1024];
    snprintf(p, sizeof p, "%s", path);
    cllama_model *ma = load(p, 0), *mb = load(p, 1);
    assert_int_equal(cllama_model_tp(mb), 1);
    cllama_context *ca = ctx(ma, 1, 0), *cb = ctx(mb, 1, 0);
    const int32_t V = cllama_model_n_vocab(ma);
    const cllama_token t[6] = {1, 100, 200, 300, 400, 7};
    decode_all(ca, t, 6, 0, 0);
    decode_all(cb, t, 6, 0, 0);
    for (int32_t i = 0; i < 6; i++)
        assert_memory_equal(cllama_get_logits(ca, i), cllama_get_logits(cb, i), sizeof(float) * (size_t)V);
    cllama_context_free(ca);
    cllama_context_free(cb);
    cllama_model_free(ma);
    cllama_model_free(mb);
}

/* two sequences in one step on a paged cache; greedy ids and top-k candidates from the split equal the
 * unsplit ones taken from its logits */
static void test_batched_greedy_topk(void **state) {
    (void)state;
    const char *path = tu_shared("oracle/models/tiny-llama-Q4_0.gguf");
    char p[1024];
    snprintf(p, sizeof p, "%s", path);
    cllama_model *ma = load(p, 0), *mb = load(p, 2);
    cllama_context *ca = ctx(ma, 2, 256), *cb = ctx(mb, 2, 256);
    const int32_t V = cllama_model_n_vocab(ma);
    const cllama_token t0[5] = {1, 50, 60, 70, 80}, t1[3] = {1, 90, 91};
    decode_all(ca, t0, 5, 0, 0);
    decode_all(cb, t0, 5, 0, 0);
    decode_all(ca, t1, 3, 0, 1);
    decode_all(cb, t1, 3, 0, 1);
    /* one step of both sequences: greedy */
    cllama_token tok[2] = {33, 44}, ga[2], gb[2];
    int32_t pos[2] = {5, 3}, sid[2] = {0, 1};
    int8_t want[2] = {1, 1};
    cllama_batch b = {2, tok, pos, sid, want};
    assert_int_equal(cllama_decode(ca, &b), CLLAMA_OK);
    float mg;
    for (int i = 0; i < 2; i++) ga[i] = argmax2(cllama_get_logits(ca, i), V, &mg);
    assert_int_equal(cllama_decode_greedy(cb, &b, gb), CLLAMA_OK);
    assert_int_equal(ga[0], gb[0]);
    assert_int_equal(ga[1], gb[1]);
    /* the next step: top-8 candidates */
    cllama_token tok2[2] = {ga[0], ga[1]}, ia[16], ib[16];
    int32_t pos2[2] = {6, 4};
    float la[16], lb[16];
    cllama_batch b2 = {2, tok2, pos2, sid, want};
    assert_int_equal(cllama_decode_topk(ca, &b2, 8, ia, la), CLLAMA_OK);
    assert_int_equal(cllama_decode_topk(cb, &b2, 8, ib, lb), CLLAMA_OK);
    for (int i = 0; i < 16; i++) {
        assert_true(fabsf(la[i] - lb[i]) < 0.1f);
        if (i % 8 < 7 && la[i] - la[i + 1] > 0.4f) assert_int_equal(ia[i], ib[i]); /* clear of its neighbour */
    }
    cllama_context_free(ca);
    cllama_context_free(cb);
    cllama_model_free(ma);
    cllama_model_free(mb);
}

static void expect_load_error(const char *rel, int32_t tp, const char *const *needles) {
    const char *path = tu_shared(rel);
    cllama_model_params mp = cllama_model_default_params();
    mp.backend = g_backend;
    mp.tp = tp;
    cllama_model *m = NULL;
    assert_int_not_equal(cllama_model_load(path, &mp, &m), CLLAMA_OK);
    assert_null(m);
    const char *e = cllama_last_error();
    for (int i = 0; needles[i]; i++)
        if (!strstr(e, needles[i])) fail_msg("tp %d on %s: error '%s' lacks '%s'", tp, rel, e, needles[i]);
}

static void test_bad_counts(void **state) {
    (void)state;
    /* gemma3: 1 KV head */
    const char *g[] = {"tensor parallel over 2", "1 KV heads do not split into 2", "(valid: 1)", NULL};
    expect_load_error("oracle/models/tiny-gemma3-Q4_K_M.gguf", 2, g);
    /* Q4_K_M: O's 128 columns a rank cut its 256-element blocks */
    const char *k[] = {"attn_output", "256-element blocks", "(valid: 1)", NULL};
    expect_load_error("oracle/models/tiny-llama-Q4_K_M.gguf", 2, k);
    /* 2 KV heads on 3 */
    const char *three[] = {"2 KV heads do not split into 3", "(valid: 1, 2)", NULL};
    expect_load_error("oracle/models/tiny-llama-Q4_0.gguf", 3, three);
    const char *neg[] = {"-1 ranks", NULL};
    expect_load_error("oracle/models/tiny-llama-Q4_0.gguf", -1, neg);
}

/* ---- the CPU communicator ---- */
typedef struct {
    cll_cpu_comm *c;
    int32_t rank;
    float buf[1000];
    cll_status st;
    bool fail; /* this rank fails instead of summing (it aborts the group) */
} comm_arg;

static void *comm_rank(void *p) {
    comm_arg *a = p;
    if (a->fail) {
        cll_cpu_comm_abort(a->c, true);
        a->st = CLL_ERR_INTERNAL;
        return NULL;
    }
    a->st = cll_cpu_comm_allreduce(a->c, a->rank, a->buf, 1000);
    return NULL;
}

static void run_group(cll_cpu_comm *c, comm_arg *a, int n) {
    pthread_t th[4];
    for (int r = 0; r < n; r++) assert_int_equal(pthread_create(&th[r], NULL, comm_rank, &a[r]), 0);
    for (int r = 0; r < n; r++) pthread_join(th[r], NULL);
    (void)c;
}

static void test_cpu_comm(void **state) {
    (void)state;
    cll_cpu_comm *c = NULL;
    assert_int_equal(cll_cpu_comm_create(3, &c), CLL_OK);
    comm_arg a[3];
    for (int round = 0; round < 3; round++) {
        memset(a, 0, sizeof a);
        for (int r = 0; r < 3; r++) {
            a[r].c = c;
            a[r].rank = r;
            for (int j = 0; j < 1000; j++) a[r].buf[j] = (float)((j * 7 + r * 13) % 101) * 0.37f + 1e-3f * (float)r;
            a[r].fail = round == 1 && r == 2; /* the middle round: rank 2 fails */
        }
        float want[1000];
        for (int j = 0; j < 1000; j++) want[j] = (a[0].buf[j] + a[1].buf[j]) + a[2].buf[j]; /* rank order */
        run_group(c, a, 3);
        if (round == 1) { /* the others were woken with an error, not left waiting */
            assert_int_equal(a[0].st, CLL_ERR_INTERNAL);
            assert_int_equal(a[1].st, CLL_ERR_INTERNAL);
            cll_cpu_comm_abort(c, false); /* every rank returned: ready again */
            continue;
        }
        for (int r = 0; r < 3; r++) {
            assert_int_equal(a[r].st, CLL_OK);
            assert_memory_equal(a[r].buf, want, sizeof want); /* the same bits on every rank */
        }
    }
    uint64_t calls, floats;
    cll_cpu_comm_stats(c, &calls, &floats);
    assert_int_equal(calls, 2);
    assert_int_equal(floats, 2000);
    cll_cpu_comm_free(c);
}

int main(void) {
    const struct CMUnitTest all[] = {
        cmocka_unit_test(test_split_dense),       cmocka_unit_test(test_split_moe),
        cmocka_unit_test(test_tp1_bit_exact),     cmocka_unit_test(test_batched_greedy_topk),
        cmocka_unit_test(test_bad_counts),        cmocka_unit_test(test_cpu_comm),
        cmocka_unit_test(test_split_uneven),
    };
    const char *be = getenv("CLLAMA_TEST_BACKEND");
    if (be && !strcmp(be, "cuda")) {
        g_backend = CLLAMA_BACKEND_CUDA;
        g_bar = 2.0;
        cllama_model_params mp = cllama_model_default_params();
        mp.backend = CLLAMA_BACKEND_CUDA;
        cllama_model *m = NULL;
        if (cllama_model_load(tu_shared("models/stories260K.gguf"), &mp, &m) != CLLAMA_OK) {
            char why[512];
            snprintf(why, sizeof why, "tp_test on cuda: %s", cllama_last_error());
            tu_skip(why);
        }
        cllama_model_free(m);
        /* the splits over 4 GPUs, else every rank on GPU 0 */
        mp.tp = 4;
        cllama_context *c = NULL;
        cllama_context_params cp = cllama_context_default_params();
        cp.n_ctx = 64;
        if (cllama_model_load(tu_shared("models/stories260K.gguf"), &mp, &m) != CLLAMA_OK ||
            cllama_context_create(m, &cp, &c) != CLLAMA_OK) {
            printf("note: %s: the splits run with every rank on GPU 0 (simulated)\n", cllama_last_error());
            g_one_gpu = true;
        }
        cllama_context_free(c);
        cllama_model_free(m);
    }
    return cmocka_run_group_tests(all, NULL, NULL);
}
