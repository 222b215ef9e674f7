/* shard_test: the tensor-parallel split (src/model/shard.h), with no GPU:
 *  - which GPU counts split the anchor shapes (llama2-7b Q4_0 / Q4_K, llama3-8b Q4_K, a MoE) and
 *    the error naming the site and the valid counts (8 KV heads on 3 GPUs);
 *  - the simulated split: a real quantized layer (tiny-llama-Q4_0) cut into 2 ranks as the plan
 *    says, every rank's products run by the CPU kernels on its slices: the column-parallel
 *    products (Q, K, V, gate, up) give exactly the full product's rows, and the row-parallel ones
 *    (O, down) summed over the ranks (the all-reduce) give the full product within float
 *    reassociation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "core/threads.h"
#include "cpu/matmul.h"
#include "formats/formats.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "model/plan.h"
#include "model/shard.h"

/* a plan of the two column-split sites of a dense model, every layer alike */
static cll_plan *fake_plan(int32_t layers, uint32_t o_type, int64_t o_cols, uint32_t down_type, int64_t ff) {
    cll_plan *p = (cll_plan *)calloc(1, sizeof *p);
    p->sites = (cll_plan_site *)calloc((size_t)(2 * layers), sizeof(cll_plan_site));
    for (int32_t l = 0; l < layers; l++) {
        cll_plan_site *o = &p->sites[p->n_sites++], *d = &p->sites[p->n_sites++];
        o->kind = CLL_SITE_ATTN_O, o->layer = l, o->wtype = o_type, o->rows = o_cols, o->cols = o_cols, o->n_mat = 1;
        d->kind = CLL_SITE_FFN_DOWN, d->layer = l, d->wtype = down_type, d->rows = o_cols, d->cols = ff, d->n_mat = 1;
    }
    return p;
}

static void free_plan(cll_plan *p) {
    free(p->sites);
    free(p);
}

static void test_valid_counts(void **state) {
    (void)state;
    cll_hparams hp;
    memset(&hp, 0, sizeof hp);
    int32_t v[64];
    /* llama2-7b: 32 heads (MHA), ff 11008 = 43 x 256 */
    hp.n_head = hp.n_head_kv = 32, hp.n_ff = 11008, hp.n_vocab = 32000;
    cll_plan *p = fake_plan(2, CLL_TYPE_Q4_0, 4096, CLL_TYPE_Q4_0, 11008);
    int n = cll_shard_valid(p, &hp, 16, v, 64);
    assert_int_equal(n, 5); /* 1 2 4 8 16: the KV heads' divisors; O 4096 / 16 = 256 columns, whole blocks */
    assert_int_equal(v[4], 16);
    free_plan(p);
    /* K-quants: down's 11008 columns are 43 blocks of 256: the ranks take them as evenly as they go */
    p = fake_plan(2, CLL_TYPE_Q4_K, 4096, CLL_TYPE_Q6_K, 11008);
    n = cll_shard_valid(p, &hp, 16, v, 64);
    assert_int_equal(n, 5);
    cll_shard s;
    assert_int_equal(cll_shard_plan(p, &hp, 2, 0, &s), CLL_OK);
    assert_int_equal(s.f0, 0);
    assert_int_equal(s.f1, 22 * 256);
    assert_int_equal(cll_shard_plan(p, &hp, 2, 1, &s), CLL_OK);
    assert_int_equal(s.f0, 22 * 256);
    assert_int_equal(s.f1, 11008);
    assert_int_equal(cll_shard_plan(p, &hp, 8, 7, &s), CLL_OK); /* 43 = 6 x 8 + 3: the last five take 5 */
    assert_int_equal(s.f1 - s.f0, 5 * 256);
    assert_int_equal(s.f1, 11008);
    free_plan(p);
    /* too few blocks of down for the ranks: 2 blocks of 256 over 4 (O's 1024 columns give 256 a rank) */
    hp.n_head = hp.n_head_kv = 8, hp.n_ff = 512;
    p = fake_plan(2, CLL_TYPE_Q4_K, 1024, CLL_TYPE_Q4_K, 512);
    assert_int_equal(cll_shard_plan(p, &hp, 4, 0, &s), CLL_ERR_UNSUPPORTED);
    assert_non_null(strstr(cll_last_error(), "ffn_down (q4_K, 512 columns) holds 2 whole 256-element blocks, fewer than 4 ranks"));
    assert_non_null(strstr(cll_last_error(), "(valid: 1, 2)"));
    /* and O's columns a rank must be whole blocks: 1024 / 8 = 128 of q4_K's 256 */
    assert_int_equal(cll_shard_plan(p, &hp, 8, 0, &s), CLL_ERR_UNSUPPORTED);
    assert_non_null(strstr(cll_last_error(), "attn_output (q4_K, 1024 columns) splits into 128-column shards"));
    free_plan(p);
    /* float weights: the unit is 32 columns where every rank gets one (64 over 2: 32 + 32), else a column
     * (32 over 2: 16 + 16, llama-2-tiny-random's FFN; a regression of the 32-unit once refused it) */
    hp.n_head = hp.n_head_kv = 4, hp.n_ff = 64;
    p = fake_plan(2, CLL_TYPE_F16, 256, CLL_TYPE_F16, 64);
    assert_int_equal(cll_shard_plan(p, &hp, 2, 1, &s), CLL_OK);
    assert_int_equal(s.f0, 32);
    assert_int_equal(s.f1, 64);
    free_plan(p);
    hp.n_ff = 32;
    p = fake_plan(2, CLL_TYPE_F16, 256, CLL_TYPE_F16, 32);
    assert_int_equal(cll_shard_plan(p, &hp, 2, 1, &s), CLL_OK);
    assert_int_equal(s.f0, 16);
    assert_int_equal(s.f1, 32);
    assert_int_equal(cll_shard_plan(p, &hp, 4, 3, &s), CLL_OK); /* 8 columns a rank */
    assert_int_equal(s.f1 - s.f0, 8);
    free_plan(p);
    hp.n_head = hp.n_head_kv = 32;
    /* llama3-8b: 32 q heads on 8 KV heads, ff 14336 = 56 x 256 */
    hp.n_head = 32, hp.n_head_kv = 8, hp.n_ff = 14336, hp.n_vocab = 128256;
    p = fake_plan(2, CLL_TYPE_Q4_K, 4096, CLL_TYPE_Q6_K, 14336);
    n = cll_shard_valid(p, &hp, 16, v, 64);
    assert_int_equal(n, 4);
    assert_int_equal(cll_shard_plan(p, &hp, 3, 0, &s), CLL_ERR_UNSUPPORTED);
    assert_non_null(strstr(cll_last_error(), "the 8 KV heads do not split into 3 equal groups (valid: 1, 2, 4, 8)"));
    assert_int_equal(cll_shard_plan(p, &hp, 4, 3, &s), CLL_OK);
    assert_int_equal(s.kv0, 6);
    assert_int_equal(s.kv1, 8);
    assert_int_equal(s.q0, 24);
    assert_int_equal(s.q1, 32);
    assert_int_equal(s.f0, 3 * 3584);
    assert_int_equal(s.f1, 14336);
    assert_int_equal(s.v0, 3 * 32064);
    assert_int_equal(s.v1, 128256);
    assert_int_equal(cll_shard_plan(p, &hp, 4, 4, &s), CLL_ERR_ARG);
    free_plan(p);
    /* a MoE: experts split too (128 experts, 4 KV heads) */
    hp.n_head = 32, hp.n_head_kv = 4, hp.n_expert = 128, hp.n_ff = 0;
    p = fake_plan(1, CLL_TYPE_Q4_K, 4096, CLL_TYPE_Q4_K, 4096);
    assert_int_equal(cll_shard_plan(p, &hp, 2, 1, &s), CLL_OK);
    assert_int_equal(s.e0, 64);
    assert_int_equal(s.e1, 128);
    assert_int_equal(s.f0, 0);
    hp.n_expert = 60; /* 60 experts on 8 GPUs */
    assert_int_equal(cll_shard_plan(p, &hp, 8, 0, &s), CLL_ERR_UNSUPPORTED);
    free_plan(p);
}

/* rows [r0, r1) and columns [c0, c1) of a rows x cols quantized weight (c0, c1 on blocks) */
static uint8_t *slice(const cll_gguf_tensor *t, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const cll_type_traits *tr = cll_type_traits_get(t->type);
    const int64_t cols = (int64_t)t->ne[0];
    const size_t rb = (size_t)cll_row_bytes(t->type, (uint64_t)cols), bb = tr->type_size;
    const size_t o0 = (size_t)(c0 / tr->blck) * bb, w = (size_t)((c1 - c0) / tr->blck) * bb;
    uint8_t *out = (uint8_t *)malloc(w * (size_t)(r1 - r0));
    for (int64_t r = r0; r < r1; r++) memcpy(out + w * (size_t)(r - r0), (const uint8_t *)t->data + rb * (size_t)r + o0, w);
    return out;
}

/* y (rows) = W x for a weight given as bytes */
static void product(cll_pool *pool, uint32_t type, int64_t rows, int64_t cols, const void *w, const float *x, float *y) {
    cll_cpu_weight *cw = NULL;
    assert_int_equal(cll_cpu_weight_create(type, rows, cols, w, &cw), CLL_OK);
    void *scratch = malloc(cll_cpu_matmul_scratch(cw, 1) + 64);
    cll_cpu_matmul(pool, cw, x, cols, 1, y, rows, scratch);
    free(scratch);
    cll_cpu_weight_free(cw);
}

static void test_simulated_split(void **state) {
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s", tu_shared("oracle/models/tiny-llama-Q4_0.gguf"));
    cll_gguf *g = NULL;
    if (cll_gguf_open(path, &g) != CLL_OK) {
        tu_skip_test("simulated split: tiny-llama-Q4_0.gguf missing");
    }
    cll_model *m = NULL;
    assert_int_equal(cll_model_load(g, &m), CLL_OK);
    cll_plan *plan = NULL;
    assert_int_equal(cll_plan_create(m, &plan), CLL_OK);
    const cll_hparams *hp = &m->hp;
    const int32_t N = 2, hd = hp->head_dim_k;
    cll_pool *pool = NULL;
    assert_int_equal(cll_pool_create(2, &pool), CLL_OK);
    const cll_layer *L = &m->layers[0];
    struct {
        const cll_gguf_tensor *t;
        int kind; /* 0: rows by q heads, 1: rows by kv heads, 2: rows by ff, 3: cols by q heads, 4: cols by ff */
    } sites[] = {{L->wq, 0}, {L->wk, 1}, {L->wv, 1}, {L->ffn_gate, 2}, {L->ffn_up, 2}, {L->wo, 3}, {L->ffn_down, 4}};
    uint32_t seed = 7;
    for (size_t si = 0; si < sizeof sites / sizeof sites[0]; si++) {
        const cll_gguf_tensor *t = sites[si].t;
        const int64_t cols = (int64_t)t->ne[0], rows = (int64_t)t->ne[1];
        float *x = (float *)malloc(sizeof(float) * (size_t)cols), *y = (float *)malloc(sizeof(float) * (size_t)rows);
        float *acc = (float *)calloc((size_t)rows, sizeof(float)), *yr = (float *)malloc(sizeof(float) * (size_t)rows);
        for (int64_t i = 0; i < cols; i++) {
            seed = seed * 1664525u + 1013904223u;
            x[i] = (float)((int32_t)(seed >> 8) % 2001 - 1000) / 500.0f;
        }
        product(pool, t->type, rows, cols, t->data, x, y); /* the unsplit product */
        double mag = 0;
        for (int64_t r = 0; r < rows; r++) mag += fabs(y[r]);
        for (int32_t rank = 0; rank < N; rank++) {
            cll_shard s;
            assert_int_equal(cll_shard_plan(plan, hp, N, rank, &s), CLL_OK);
            const int kind = sites[si].kind;
            if (kind <= 2) { /* column-parallel: this rank's output rows, exactly */
                const int64_t r0 = kind == 0 ? (int64_t)s.q0 * hd : kind == 1 ? (int64_t)s.kv0 * hd : s.f0;
                const int64_t r1 = kind == 0 ? (int64_t)s.q1 * hd : kind == 1 ? (int64_t)s.kv1 * hd : s.f1;
                uint8_t *w = slice(t, r0, r1, 0, cols);
                product(pool, t->type, r1 - r0, cols, w, x, yr);
                for (int64_t r = r0; r < r1; r++) assert_memory_equal(&yr[r - r0], &y[r], sizeof(float));
                free(w);
            } else { /* row-parallel: partial outputs over this rank's input columns, summed */
                const int64_t c0 = kind == 3 ? (int64_t)s.q0 * hd : s.f0, c1 = kind == 3 ? (int64_t)s.q1 * hd : s.f1;
                uint8_t *w = slice(t, 0, rows, c0, c1);
                product(pool, t->type, rows, c1 - c0, w, x + c0, yr);
                for (int64_t r = 0; r < rows; r++) acc[r] += yr[r];
                free(w);
            }
        }
        if (sites[si].kind >= 3) /* the all-reduce of the partials = the full product */
            for (int64_t r = 0; r < rows; r++) assert_true(fabs(acc[r] - y[r]) <= 1e-4 * (mag / rows) + 1e-6);
        free(x);
        free(y);
        free(acc);
        free(yr);
    }
    /* and the Q4_K_M twin: its 256-element blocks do not split O's 256 columns in two */
    cll_pool_free(pool);
    cll_plan_free(plan);
    cll_model_free(m);
    cll_gguf_free(g);
    snprintf(path, sizeof path, "%s", tu_shared("oracle/models/tiny-llama-Q4_K_M.gguf"));
    if (cll_gguf_open(path, &g) == CLL_OK) {
        assert_int_equal(cll_model_load(g, &m), CLL_OK);
        assert_int_equal(cll_plan_create(m, &plan), CLL_OK);
        cll_shard s;
        assert_int_equal(cll_shard_plan(plan, &m->hp, 2, 0, &s), CLL_ERR_UNSUPPORTED);
        assert_non_null(strstr(cll_last_error(), "attn_output"));
        cll_plan_free(plan);
        cll_model_free(m);
        cll_gguf_free(g);
    }
}

/* the view of a rank: its hparams and tensors as the plan says; row slices inside the file's map,
 * column slices copied, and dropped on request (their shapes kept) */
static void test_view(void **state) {
    (void)state;
    const char *path = tu_shared("oracle/models/tiny-qwen3moe-Q8_0.gguf");
    cll_gguf *g = NULL;
    if (cll_gguf_open(path, &g) != CLL_OK) {
        tu_skip_test("no tiny-qwen3moe-Q8_0");
        return;
    }
    cll_model *m = NULL;
    assert_int_equal(cll_model_load(g, &m), CLL_OK);
    cll_plan *p = NULL;
    assert_int_equal(cll_plan_create(m, &p), CLL_OK);
    cll_shard sh;
    assert_int_equal(cll_shard_plan(p, &m->hp, 2, 1, &sh), CLL_OK);
    cll_model *v = NULL;
    assert_int_equal(cll_model_shard(m, &sh, &v), CLL_OK);
    const uint8_t *map = cll_gguf_base(g), *end = map + cll_gguf_file_size(g);
    /* 4 heads / 2 kv heads of 64 over 2 ranks; 4 experts; vocab 512 */
    assert_int_equal(v->hp.n_head, 2);
    assert_int_equal(v->hp.n_head_kv, 1);
    assert_int_equal(v->hp.n_expert, 4); /* the router scores all of them */
    assert_int_equal(v->hp.expert0, 2);
    assert_int_equal(v->hp.n_expert_here, 2);
    assert_int_equal(v->hp.n_logits, 256);
    const cll_layer *L = &v->layers[1], *F = &m->layers[1];
    assert_int_equal(L->wq->ne[1], 128);
    assert_ptr_equal(L->wq->data, (const uint8_t *)F->wq->data + 128 * cll_row_bytes(F->wq->type, F->wq->ne[0]));
    assert_int_equal(L->gate_exps->ne[2], 2);
    assert_ptr_equal(L->ffn_gate_inp, F->ffn_gate_inp);
    assert_ptr_equal(v->tok_embd, m->tok_embd);
    assert_int_equal(v->output->ne[1], 256);
    /* O: columns 128..255 of every row, copied */
    assert_int_equal(L->wo->ne[0], 128);
    const uint8_t *o = L->wo->data;
    assert_true(o < map || o >= end);
    const uint64_t rb = cll_row_bytes(F->wo->type, F->wo->ne[0]), nb = cll_row_bytes(L->wo->type, 128);
    for (uint64_t r = 0; r < F->wo->ne[1]; r++)
        assert_memory_equal(o + r * nb, (const uint8_t *)F->wo->data + r * rb + cll_row_bytes(F->wo->type, 128), nb);
    cll_model_shard_drop_copies(v);
    assert_null(L->wo->data);
    assert_int_equal(L->wo->ne[0], 128);
    assert_non_null(L->wq->data);
    cll_model_free(v);
    cll_plan_free(p);
    cll_model_free(m);
    cll_gguf_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_counts),
        cmocka_unit_test(test_simulated_split),
        cmocka_unit_test(test_view),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
