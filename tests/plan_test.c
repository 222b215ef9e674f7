/* plan_test: the model plan (model/plan.h) on the small synthetic models of
 * shared/oracle/models: the site list (count, order, kinds, shapes, types, experts) of a
 * dense, a tied-embedding and an MoE model, the decode byte count checked against numbers
 * worked out by hand from the hparams (Q8_0: 34 bytes per 32 weights) and against an
 * independent walk of the file's tensors, and the KV-cell addressing rule. Also the recipe
 * fields that replaced branches on the architecture name (sliding window, chat turn marker). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "cllama.h"
#include "formats/formats.h"
#include "model/plan.h"

typedef struct {
    cll_gguf *g;
    cll_model *m;
    cll_plan *p;
} loaded;

static loaded load(const char *name) {
    char rel[256];
    snprintf(rel, sizeof rel, "oracle/models/%s.gguf", name);
    loaded l = {0};
    FILE *f = fopen(tu_shared(rel), "rb");
    if (!f) tu_skip("shared/oracle/models not present");
    fclose(f);
    assert_int_equal(cll_gguf_open(tu_shared(rel), &l.g), CLL_OK);
    assert_int_equal(cll_model_load(l.g, &l.m), CLL_OK);
    assert_int_equal(cll_plan_create(l.m, &l.p), CLL_OK);
    return l;
}

static void unload(loaded *l) {
    cll_plan_free(l->p);
    cll_model_free(l->m);
    cll_gguf_free(l->g);
}

/* Q8_0 bytes of a rows x cols matrix */
static uint64_t q8(uint64_t rows, uint64_t cols) { return rows * cols / 32 * 34; }

/* the same count from the file alone: every >= 2-D tensor but the embedding table (the head
 * when tied), expert tensors (3-D) at n_used / n_expert of their bytes */
static uint64_t decode_bytes_from_file(const loaded *l) {
    uint64_t sum = 0;
    bool has_output = false;
    for (uint64_t i = 0; i < cll_gguf_n_tensors(l->g); i++) {
        const cll_gguf_tensor *t = cll_gguf_tensor_at(l->g, i);
        if (t->name.len == 13 && !memcmp(t->name.ptr, "output.weight", 13)) has_output = true;
    }
    for (uint64_t i = 0; i < cll_gguf_n_tensors(l->g); i++) {
        const cll_gguf_tensor *t = cll_gguf_tensor_at(l->g, i);
        if (t->n_dims < 2) continue;
        if (t->name.len == 17 && !memcmp(t->name.ptr, "token_embd.weight", 17) && has_output) continue;
        if (t->n_dims == 3) sum += t->nbytes / t->ne[2] * (uint64_t)l->m->hp.n_expert_used;
        else sum += t->nbytes;
    }
    return sum;
}

static void check_site(const cll_plan_site *s, cll_site_kind kind, int32_t layer, uint32_t type, int64_t rows,
                       int64_t cols, int64_t n_mat, int32_t calls) {
    assert_non_null(s);
    assert_int_equal(s->kind, kind);
    assert_int_equal(s->layer, layer);
    assert_int_equal(s->wtype, type);
    assert_int_equal(s->rows, rows);
    assert_int_equal(s->cols, cols);
    assert_int_equal(s->n_mat, n_mat);
    assert_int_equal(s->decode_calls, calls);
    assert_int_equal(s->bytes, cll_row_bytes(type, (uint64_t)cols) * (uint64_t)rows * (uint64_t)n_mat);
    assert_int_equal(s->t->type, type);
}

/* tiny-llama Q8_0: 2 layers, n_embd 256, 4 heads / 2 kv heads of 64, ffn 512, vocab 512,
 * untied output head */
static void test_dense(void **state) {
    (void)state;
    loaded l = load("tiny-llama-Q8_0");
    assert_int_equal(l.p->n_sites, 2 * 7 + 1);
    const cll_site_kind order[7] = {CLL_SITE_ATTN_Q,   CLL_SITE_ATTN_K, CLL_SITE_ATTN_V,  CLL_SITE_ATTN_O,
                                    CLL_SITE_FFN_GATE, CLL_SITE_FFN_UP, CLL_SITE_FFN_DOWN};
    const int64_t rows[7] = {256, 128, 128, 256, 512, 512, 256}, cols[7] = {256, 256, 256, 256, 256, 256, 512};
    for (int il = 0; il < 2; il++)
        for (int k = 0; k < 7; k++) {
            check_site(&l.p->sites[il * 7 + k], order[k], il, CLL_TYPE_Q8_0, rows[k], cols[k], 1, 1);
            assert_ptr_equal(cll_plan_find(l.p, il, order[k]), &l.p->sites[il * 7 + k]);
        }
    check_site(&l.p->sites[14], CLL_SITE_OUTPUT, -1, CLL_TYPE_Q8_0, 512, 256, 1, 1);
    assert_ptr_equal(l.p->sites[14].t, l.m->output);
    assert_ptr_not_equal(l.m->output, l.m->tok_embd);
    assert_null(cll_plan_find(l.p, 0, CLL_SITE_ROUTER));
    assert_null(cll_plan_find(l.p, 2, CLL_SITE_ATTN_Q));
    /* per layer 589824 weights (q 65536, k 32768, v 32768, o 65536, gate/up/down 131072 each),
     * 2 layers + the head's 131072 = 1310720 weights of Q8_0; the embedding table not counted */
    const uint64_t want = 2 * q8(1, 589824) + q8(512, 256);
    assert_int_equal(want, 1392640);
    assert_int_equal(cll_plan_decode_bytes(l.p), want);
    assert_int_equal(decode_bytes_from_file(&l), want);
    assert_string_equal(cll_plan_kind_name(CLL_SITE_FFN_DOWN), "ffn_down");
    assert_string_equal(cll_plan_kind_name(CLL_SITE_OUTPUT), "output");
    unload(&l);
}

/* tiny-gemma3 Q8_0: 6 layers, 4 heads / 1 kv head of 64, ffn 256, tied embeddings (the head
 * is token_embd, which then counts once, as the head) */
static void test_tied(void **state) {
    (void)state;
    loaded l = load("tiny-gemma3-Q8_0");
    assert_int_equal(l.p->n_sites, 6 * 7 + 1);
    const cll_plan_site *out = cll_plan_find(l.p, -1, CLL_SITE_OUTPUT);
    check_site(out, CLL_SITE_OUTPUT, -1, CLL_TYPE_Q8_0, 512, 256, 1, 1);
    assert_ptr_equal(out->t, l.m->tok_embd);
    check_site(cll_plan_find(l.p, 5, CLL_SITE_ATTN_K), CLL_SITE_ATTN_K, 5, CLL_TYPE_Q8_0, 64, 256, 1, 1);
    /* per layer q 65536 + k 16384 + v 16384 + o 65536 + gate/up/down 3 * 65536 = 360448 */
    const uint64_t want = 6 * q8(1, 360448) + q8(512, 256);
    assert_int_equal(cll_plan_decode_bytes(l.p), want);
    assert_int_equal(decode_bytes_from_file(&l), want);
    unload(&l);
}

/* tiny-mixtral Q8_0: 2 layers, 4 experts (2 used) of ffn 256, an F32 router */
static void test_moe(void **state) {
    (void)state;
    loaded l = load("tiny-mixtral-Q8_0");
    assert_int_equal(l.p->n_sites, 2 * 8 + 1);
    assert_null(cll_plan_find(l.p, 0, CLL_SITE_FFN_GATE));
    for (int il = 0; il < 2; il++) {
        check_site(cll_plan_find(l.p, il, CLL_SITE_ROUTER), CLL_SITE_ROUTER, il, CLL_TYPE_F32, 4, 256, 1, 1);
        check_site(cll_plan_find(l.p, il, CLL_SITE_EXP_GATE), CLL_SITE_EXP_GATE, il, CLL_TYPE_Q8_0, 256, 256, 4, 2);
        check_site(cll_plan_find(l.p, il, CLL_SITE_EXP_UP), CLL_SITE_EXP_UP, il, CLL_TYPE_Q8_0, 256, 256, 4, 2);
        check_site(cll_plan_find(l.p, il, CLL_SITE_EXP_DOWN), CLL_SITE_EXP_DOWN, il, CLL_TYPE_Q8_0, 256, 256, 4, 2);
        /* one decode token reads 2 of the 4 expert matrices */
        assert_int_equal(cll_plan_site_decode_bytes(cll_plan_find(l.p, il, CLL_SITE_EXP_UP)), 2 * q8(256, 256));
    }
    /* per layer: attention 196608 Q8_0 weights, the router 4 x 256 f32, 3 expert tensors at
     * 2 of 4 experts of 256 x 256; then the head */
    const uint64_t layer = q8(1, 196608) + 4 * 256 * 4 + 3 * 2 * q8(256, 256);
    const uint64_t want = 2 * layer + q8(512, 256);
    assert_int_equal(want, 1400832);
    assert_int_equal(cll_plan_decode_bytes(l.p), want);
    assert_int_equal(decode_bytes_from_file(&l), want);
    /* the whole file's expert bytes are twice what a token reads */
    uint64_t all = 0;
    for (int64_t i = 0; i < l.p->n_sites; i++) all += l.p->sites[i].bytes;
    assert_int_equal(all - want, 2 * 3 * 2 * q8(256, 256));
    unload(&l);
}

/* mixed K-quant types: the plan reports each tensor's own type */
static void test_mixed_types(void **state) {
    (void)state;
    loaded l = load("tiny-qwen3moe-Q4_K_M");
    int q6 = 0;
    for (int64_t i = 0; i < l.p->n_sites; i++) {
        const cll_plan_site *s = &l.p->sites[i];
        assert_int_equal(s->wtype, s->t->type);
        q6 += s->wtype == CLL_TYPE_Q6_K;
        if (s->kind == CLL_SITE_EXP_DOWN) assert_int_equal(s->cols, l.m->hp.n_ff_exp);
    }
    assert_true(q6 > 0);
    assert_int_equal(cll_plan_decode_bytes(l.p), decode_bytes_from_file(&l));
    unload(&l);
}

static void test_kv_cell(void **state) {
    (void)state;
    assert_int_equal(cll_kv_cell(0, 0, 512), 0);
    assert_int_equal(cll_kv_cell(0, 511, 512), 511);
    assert_int_equal(cll_kv_cell(1, 0, 512), 512);
    assert_int_equal(cll_kv_cell(3, 7, 512), 3 * 512 + 7);
    /* no int32 overflow for large caches */
    assert_true(cll_kv_cell(65535, 131071, 131072) == (int64_t)65535 * 131072 + 131071);
}

/* what used to be strcmp/strncmp on "gemma..." is now recipe data */
static void test_recipe_fields(void **state) {
    (void)state;
    const cll_recipe *g = cll_model_recipe("gemma3"), *l = cll_model_recipe("llama");
    assert_non_null(g);
    assert_non_null(l);
    assert_null(cll_model_recipe("frobnicator"));
    assert_true(g->sliding_window);
    assert_string_equal(g->chat_turn_marker, "<start_of_turn>");
    assert_false(l->sliding_window);
    assert_null(l->chat_turn_marker);
    loaded lg = load("tiny-gemma3-Q8_0");
    assert_int_equal(lg.m->hp.n_swa, 32);
    assert_true(lg.m->layers[0].swa);
    assert_false(lg.m->layers[5].swa); /* pattern 6: every sixth layer is global */
    unload(&lg);
    /* the synthetic files carry no chat template: gemma3 chats in its own turn format (also
     * in a vocab-only load, which binds no model), llama falls back to chatml */
    char path[4096];
    for (int vo = 0; vo < 2; vo++) {
        cllama_model_params mp = cllama_model_default_params();
        mp.vocab_only = vo;
        cllama_model *m = NULL;
        snprintf(path, sizeof path, "%s", tu_shared("oracle/models/tiny-gemma3-Q8_0.gguf"));
        assert_int_equal(cllama_model_load(path, &mp, &m), CLLAMA_OK);
        assert_string_equal(cllama_chat_template_name(m), "gemma");
        cllama_model_free(m);
        snprintf(path, sizeof path, "%s", tu_shared("oracle/models/tiny-llama-Q8_0.gguf"));
        assert_int_equal(cllama_model_load(path, &mp, &m), CLLAMA_OK);
        assert_string_equal(cllama_chat_template_name(m), "chatml");
        cllama_model_free(m);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kv_cell),     cmocka_unit_test(test_dense), cmocka_unit_test(test_tied),
        cmocka_unit_test(test_moe),         cmocka_unit_test(test_mixed_types), cmocka_unit_test(test_recipe_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
