/* sample_test: the samplers through the public API — greedy ties, temperature -> 0 equals
 * greedy, top-k / top-p / min-p never leave their sets, plain sampling follows the softmax,
 * seeds are deterministic, and each penalty changes the expected token. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cllama.h"
#include "testutil.h"

static cllama_sampler *mk(float temp, int top_k, float top_p, float min_p, uint64_t seed, int32_t n_vocab) {
    cllama_sampler_params p = cllama_sampler_default_params();
    p.temperature = temp;
    p.top_k = top_k;
    p.top_p = top_p;
    p.min_p = min_p;
    p.seed = seed;
    cllama_sampler *s = NULL;
    assert_int_equal(cllama_sampler_create(&p, n_vocab, &s), CLLAMA_OK);
    return s;
}

static void test_greedy_ties(void **st) {
    (void)st;
    const float l[6] = {0.5f, 3.0f, -1.0f, 3.0f, 2.9f, 3.0f};
    cllama_sampler *s = mk(0.0f, 40, 0.95f, 0.05f, 1, 6);
    assert_int_equal(cllama_sampler_sample(s, l), 1); /* lowest id among the tied maxima */
    cllama_sampler_free(s);
}

static void test_temperature_to_zero_is_greedy(void **st) {
    (void)st;
    enum { V = 300 };
    float l[V];
    srand(7);
    cllama_sampler *g = mk(0.0f, 0, 1.0f, 0.0f, 1, V), *t = mk(1e-4f, 0, 1.0f, 0.0f, 99, V);
    for (int trial = 0; trial < 200; trial++) {
        for (int i = 0; i < V; i++) l[i] = (float)rand() / RAND_MAX * 10.0f;
        assert_int_equal(cllama_sampler_sample(t, l), cllama_sampler_sample(g, l));
    }
    cllama_sampler_free(g);
    cllama_sampler_free(t);
}

static void test_top_k_stays_in_k_best(void **st) {
    (void)st;
    enum { V = 50 };
    float l[V];
    for (int i = 0; i < V; i++) l[i] = 0.1f * (float)((i * 37) % V); /* distinct, scrambled */
    /* the 3 best: values 4.9, 4.8, 4.7 */
    int best[3], nb = 0;
    for (int i = 0; i < V; i++)
        if (l[i] > 4.65f) best[nb++] = i;
    assert_int_equal(nb, 3);
    cllama_sampler *s = mk(2.0f, 3, 1.0f, 0.0f, 42, V);
    int seen[V] = {0};
    for (int d = 0; d < 3000; d++) {
        int t = cllama_sampler_sample(s, l);
        assert_true(t == best[0] || t == best[1] || t == best[2]);
        seen[t]++;
    }
    for (int k = 0; k < 3; k++) assert_true(seen[best[k]] > 0); /* and it does sample, not argmax */
    cllama_sampler_free(s);
}

static void test_top_p_and_min_p_sets(void **st) {
    (void)st;
    /* probabilities 0.5, 0.3, 0.15, 0.05 */
    const float l[4] = {logf(0.5f), logf(0.3f), logf(0.15f), logf(0.05f)};
    cllama_sampler *s = mk(1.0f, 0, 0.7f, 0.0f, 3, 4); /* mass 0.5 < 0.7 <= 0.8: ids {0,1} */
    int seen[4] = {0};
    for (int d = 0; d < 4000; d++) seen[cllama_sampler_sample(s, l)]++;
    assert_true(seen[0] > 0 && seen[1] > 0);
    assert_int_equal(seen[2] + seen[3], 0);
    cllama_sampler_free(s);
    s = mk(1.0f, 0, 1.0f, 0.32f, 3, 4); /* p >= 0.32 * 0.5 = 0.16: ids {0,1} */
    memset(seen, 0, sizeof seen);
    for (int d = 0; d < 4000; d++) seen[cllama_sampler_sample(s, l)]++;
    assert_true(seen[0] > 0 && seen[1] > 0);
    assert_int_equal(seen[2] + seen[3], 0);
    cllama_sampler_free(s);
}

static void test_distribution_follows_softmax(void **st) {
    (void)st;
    const float l[4] = {1.0f, 2.0f, 0.0f, 1.5f};
    const float T = 0.7f;
    double p[4], z = 0;
    for (int i = 0; i < 4; i++) z += (p[i] = exp(l[i] / T));
    cllama_sampler *s = mk(T, 0, 1.0f, 0.0f, 12345, 4);
    int seen[4] = {0};
    const int N = 40000;
    for (int d = 0; d < N; d++) seen[cllama_sampler_sample(s, l)]++;
    for (int i = 0; i < 4; i++) {
        const double f = (double)seen[i] / N, want = p[i] / z;
        print_message("id %d: freq %.4f softmax %.4f\n", i, f, want);
        assert_true(fabs(f - want) < 0.01); /* ~4 sigma at N = 40000 */
    }
    cllama_sampler_free(s);
}

static void test_seed_determinism(void **st) {
    (void)st;
    enum { V = 64 };
    float l[V];
    for (int i = 0; i < V; i++) l[i] = (float)(i % 7) * 0.3f;
    cllama_sampler *a = mk(1.0f, 0, 1.0f, 0.0f, 777, V), *b = mk(1.0f, 0, 1.0f, 0.0f, 777, V),
                   *c = mk(1.0f, 0, 1.0f, 0.0f, 778, V);
    int ta[100], diff = 0;
    for (int d = 0; d < 100; d++) {
        ta[d] = cllama_sampler_sample(a, l);
        assert_int_equal(ta[d], cllama_sampler_sample(b, l));
        diff += ta[d] != cllama_sampler_sample(c, l);
    }
    assert_true(diff > 0);
    cllama_sampler_reset(a); /* reseeds: the same sequence again */
    for (int d = 0; d < 100; d++) assert_int_equal(cllama_sampler_sample(a, l), ta[d]);
    cllama_sampler_free(a);
    cllama_sampler_free(b);
    cllama_sampler_free(c);
}

static cllama_sampler *mk_pen(float rep, float pres, float freq) {
    cllama_sampler_params p = cllama_sampler_default_params();
    p.temperature = 0.0f;
    p.repeat_penalty = rep;
    p.presence_penalty = pres;
    p.frequency_penalty = freq;
    p.repeat_last_n = 4;
    cllama_sampler *s = NULL;
    assert_int_equal(cllama_sampler_create(&p, 3, &s), CLLAMA_OK);
    return s;
}

static void test_penalties_change_the_token(void **st) {
    (void)st;
    const float l[3] = {2.0f, 1.9f, -3.0f};
    cllama_sampler *s = mk_pen(1.0f, 0.0f, 0.0f);
    cllama_sampler_accept(s, 0);
    assert_int_equal(cllama_sampler_sample(s, l), 0); /* no penalty: argmax */
    cllama_sampler_free(s);

    s = mk_pen(1.5f, 0.0f, 0.0f); /* 2.0 / 1.5 < 1.9 */
    cllama_sampler_accept(s, 0);
    assert_int_equal(cllama_sampler_sample(s, l), 1);
    cllama_sampler_reset(s); /* history cleared: back to 0 */
    assert_int_equal(cllama_sampler_sample(s, l), 0);
    cllama_sampler_free(s);

    s = mk_pen(1.0f, 0.5f, 0.0f); /* presence: 2.0 - 0.5 < 1.9 */
    cllama_sampler_accept(s, 0);
    assert_int_equal(cllama_sampler_sample(s, l), 1);
    cllama_sampler_free(s);

    s = mk_pen(1.0f, 0.0f, 0.06f); /* frequency: once 1.94 (still 0), twice 1.88 (now 1) */
    cllama_sampler_accept(s, 0);
    assert_int_equal(cllama_sampler_sample(s, l), 0);
    cllama_sampler_accept(s, 0);
    assert_int_equal(cllama_sampler_sample(s, l), 1);
    /* the window is 4: after four other tokens the penalty is gone */
    for (int i = 0; i < 4; i++) cllama_sampler_accept(s, 2);
    assert_int_equal(cllama_sampler_sample(s, l), 0);
    cllama_sampler_free(s);
}

static const float *g_sort_logits;
static int by_logit_then_id(const void *a, const void *b) {
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    const float lx = g_sort_logits[x], ly = g_sort_logits[y];
    if (lx != ly) return lx > ly ? -1 : 1;
    return (x > y) - (x < y);
}

/* the draw from a row's best candidates (what a GPU sampling step returns) is the draw from all the
 * logits: same tokens, same RNG stream, for every mix of top-k / top-p / min-p / temperature, with
 * tied logits (the lower id first); penalties, top-k off or over the cap need the logits (need 0) */
static void test_topk_draw_equals_full(void **st) {
    (void)st;
    const int32_t V = 3000;
    float *l = malloc(sizeof(float) * V);
    int32_t *order = malloc(sizeof(int32_t) * V);
    int32_t ids[CLLAMA_TOPK_MAX];
    float vals[CLLAMA_TOPK_MAX];
    uint64_t x = 12345;
    const struct { float t; int k; float p, mp; } cfg[] = {
        {0.8f, 40, 0.95f, 0.05f}, {1.3f, 5, 1.0f, 0.0f}, {0.2f, 256, 0.5f, 0.0f}, {1.0f, 1, 1.0f, 0.0f},
        {0.0f, 40, 0.95f, 0.05f}, {2.0f, 100, 0.99f, 0.2f},
    };
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        cllama_sampler *a = mk(cfg[c].t, cfg[c].k, cfg[c].p, cfg[c].mp, 77 + c, V);
        cllama_sampler *b = mk(cfg[c].t, cfg[c].k, cfg[c].p, cfg[c].mp, 77 + c, V);
        const int32_t need = cllama_sampler_topk_need(b);
        assert_int_equal(need, cfg[c].t <= 0.0f ? 1 : cfg[c].k);
        for (int draw = 0; draw < 200; draw++) {
            for (int32_t i = 0; i < V; i++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                l[i] = (float)((int)(x >> 40) % 512) / 64.0f; /* coarse: many ties */
            }
            /* the k best, descending, ties to the lower id (what cllama_decode_topk returns) */
            const int32_t k = need;
            g_sort_logits = l;
            for (int32_t i = 0; i < V; i++) order[i] = i;
            qsort(order, (size_t)V, sizeof *order, by_logit_then_id);
            for (int32_t j = 0; j < k; j++) {
                ids[j] = order[j];
                vals[j] = l[order[j]];
            }
            const cllama_token ta = cllama_sampler_sample(a, l), tb = cllama_sampler_sample_topk(b, ids, vals, k);
            assert_int_equal(ta, tb);
            cllama_sampler_accept(a, ta);
            cllama_sampler_accept(b, tb);
        }
        assert_int_equal(cllama_sampler_sample_topk(b, ids, vals, need - 1 > 0 ? need - 1 : 0), -1); /* short */
        cllama_sampler_free(a);
        cllama_sampler_free(b);
    }
    cllama_sampler_params p = cllama_sampler_default_params();
    cllama_sampler *s = NULL;
    p.repeat_penalty = 1.1f;
    assert_int_equal(cllama_sampler_create(&p, V, &s), CLLAMA_OK);
    assert_int_equal(cllama_sampler_topk_need(s), 0);
    cllama_sampler_free(s);
    p = cllama_sampler_default_params();
    p.top_k = 0;
    assert_int_equal(cllama_sampler_create(&p, V, &s), CLLAMA_OK);
    assert_int_equal(cllama_sampler_topk_need(s), 0);
    cllama_sampler_free(s);
    p.top_k = CLLAMA_TOPK_MAX + 1;
    assert_int_equal(cllama_sampler_create(&p, V, &s), CLLAMA_OK);
    assert_int_equal(cllama_sampler_topk_need(s), 0);
    cllama_sampler_free(s);
    free(l);
    free(order);
}

static void test_bad_params(void **st) {
    (void)st;
    cllama_sampler_params p = cllama_sampler_default_params();
    cllama_sampler *s = (cllama_sampler *)1;
    assert_int_equal(cllama_sampler_create(&p, 0, &s), CLLAMA_ERR_ARG);
    assert_null(s);
    assert_non_null(strstr(cllama_last_error(), "n_vocab"));
    cllama_sampler_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_ties),
        cmocka_unit_test(test_temperature_to_zero_is_greedy),
        cmocka_unit_test(test_top_k_stays_in_k_best),
        cmocka_unit_test(test_top_p_and_min_p_sets),
        cmocka_unit_test(test_distribution_follows_softmax),
        cmocka_unit_test(test_seed_determinism),
        cmocka_unit_test(test_penalties_change_the_token),
        cmocka_unit_test(test_topk_draw_equals_full),
        cmocka_unit_test(test_bad_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
