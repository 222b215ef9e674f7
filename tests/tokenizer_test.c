/* tokenizer acceptance: llama.cpp vocab test vectors (shared/models/vocab, .inp and .out)
 * token-exact, decode round trips, the golden prompts' ids, special-token parsing,
 * and hostile input (invalid UTF-8, NULs, 10 MB). */
#include "testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

typedef struct {
    cll_gguf *g;
    cll_tokenizer *t;
} tk;

static bool tk_open(const char *path, tk *o) {
    memset(o, 0, sizeof *o);
    if (cll_gguf_open(path, &o->g) != CLL_OK) return false;
    cll_status st = cll_tok_create(o->g, &o->t);
    if (st != CLL_OK) {
        print_error("%s: %s\n", path, cll_last_error());
        cll_gguf_free(o->g);
        return false;
    }
    return true;
}

static void tk_close(tk *o) {
    cll_tok_free(o->t);
    cll_gguf_free(o->g);
}

/* encode into a malloc'd array; returns count or -1 */
static int32_t enc(const cll_tokenizer *t, const char *s, size_t n, bool add_special, bool parse_special, int32_t **ids) {
    int32_t need = 0;
    cll_status st = cll_tok_encode(t, s, n, add_special, parse_special, NULL, 0, &need);
    if (st != CLL_OK && st != CLL_ERR_RANGE) return -1;
    *ids = malloc(((size_t)need + 1) * sizeof **ids);
    int32_t got = 0;
    st = cll_tok_encode(t, s, n, add_special, parse_special, *ids, need, &got);
    if (st != CLL_OK || got != need) return -1;
    return got;
}

static char *dec(const cll_tokenizer *t, const int32_t *ids, int32_t n, int64_t *len) {
    int64_t need = cll_tok_decode(t, ids, n, NULL, 0, false);
    if (need < 0) return NULL;
    char *b = malloc((size_t)need + 1);
    int64_t got = cll_tok_decode(t, ids, n, b, need + 1, false);
    if (got != need) { free(b); return NULL; }
    *len = got;
    return b;
}

static void run_vocab(const char *name) {
    char rel[256];
    snprintf(rel, sizeof rel, "models/vocab/ggml-vocab-%s.gguf", name);
    char gpath[4096], ipath[4200], opath[4200];
    snprintf(gpath, sizeof gpath, "%s", tu_shared(rel));
    snprintf(ipath, sizeof ipath, "%s.inp", gpath);
    snprintf(opath, sizeof opath, "%s.out", gpath);
    size_t ilen = 0, olen = 0;
    char *inp = tu_read_file(ipath, &ilen), *outs = tu_read_file(opath, &olen);
    if (!inp || !outs) tu_skip("vocab test files missing");
    tk v;
    assert_true(tk_open(gpath, &v));

    static const char sep[] = "\n__ggml_vocab_test__\n";
    const size_t seplen = sizeof sep - 1;
    int total = 0, pass = 0, rt_ok = 0;
    char *ip = inp, *op = outs;
    for (;;) {
        char *e = NULL;
        for (char *q = ip; q + seplen <= inp + ilen; q++)
            if (!memcmp(q, sep, seplen)) { e = q; break; }
        if (!e) break;
        size_t slen = (size_t)(e - ip);
        char *nl = strchr(op, '\n');
        assert_non_null(nl);
        *nl = 0;
        int32_t want[4096];
        int nw = 0;
        for (char *p = op; *p;) {
            char *end;
            long x = strtol(p, &end, 10);
            if (end == p) break;
            want[nw++] = (int32_t)x;
            p = end;
        }
        int32_t *ids = NULL;
        int32_t n = enc(v.t, ip, slen, false, false, &ids);
        bool ok = n == nw && (n == 0 || !memcmp(ids, want, (size_t)n * sizeof *ids));
        total++;
        if (ok) pass++;
        else {
            print_message("  %s #%d MISMATCH len %zu\n    want:", name, total, slen);
            for (int i = 0; i < nw; i++) print_message(" %d", want[i]);
            print_message("\n    got: ");
            for (int i = 0; i < n; i++) print_message(" %d", ids[i]);
            print_message("\n");
        }
        if (n >= 0) {
            int64_t dl = 0;
            char *d = dec(v.t, ids, n, &dl);
            if (d && (size_t)dl == slen && !memcmp(d, ip, slen)) rt_ok++;
            free(d);
        }
        free(ids);
        ip = e + seplen;
        op = nl + 1;
    }
    print_message("vocab %-16s %s: %d/%d token-exact, %d/%d decode round trips\n", name, cll_tok_kind_name(v.t), pass,
                  total, rt_ok, total);
    assert_int_equal(total, 46);
    assert_int_equal(pass, total);
    tk_close(&v);
    free(inp);
    free(outs);
}

static void test_llama_spm(void **s) { (void)s; run_vocab("llama-spm"); }
static void test_phi3(void **s) { (void)s; run_vocab("phi-3"); }
static void test_gpt2(void **s) { (void)s; run_vocab("gpt-2"); }
static void test_deepseek_llm(void **s) { (void)s; run_vocab("deepseek-llm"); }
static void test_deepseek_coder(void **s) { (void)s; run_vocab("deepseek-coder"); }
static void test_falcon(void **s) { (void)s; run_vocab("falcon"); }
static void test_starcoder(void **s) { (void)s; run_vocab("starcoder"); }
static void test_refact(void **s) { (void)s; run_vocab("refact"); }
static void test_mpt(void **s) { (void)s; run_vocab("mpt"); }

/* every golden prompt: add_special=true, parse_special=false, ids incl. BOS */
static void test_golden_prompts(void **s) {
    (void)s;
    static const char *files[] = {"stories260K", "llama-2-tiny-random", "tiny-gemma3-F16", "tiny-llama-Q8_0",
                                  "tiny-qwen2-F16", "tiny-qwen3-F16", "tiny-mixtral-F16", "tiny-qwen3moe-F16"};
    int n_prompts = 0;
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        char rel[256];
        snprintf(rel, sizeof rel, "oracle/golden/%s.json", files[f]);
        json_error_t jerr;
        json_t *root = json_load_file(tu_shared(rel), 0, &jerr);
        if (!root) continue;
        const char *mfile = json_string_value(json_object_get(json_object_get(root, "model"), "file"));
        assert_non_null(mfile);
        char mrel[512], mpath[4096];
        snprintf(mrel, sizeof mrel, "models/%s", mfile);
        snprintf(mpath, sizeof mpath, "%s", tu_shared(mrel));
        FILE *fp = fopen(mpath, "rb");
        if (!fp) {
            snprintf(mrel, sizeof mrel, "oracle/models/%s", mfile);
            snprintf(mpath, sizeof mpath, "%s", tu_shared(mrel));
        } else {
            fclose(fp);
        }
        tk v;
        assert_true(tk_open(mpath, &v));
        json_t *prompts = json_object_get(root, "prompts");
        for (size_t i = 0; i < json_array_size(prompts); i++) {
            json_t *p = json_array_get(prompts, i);
            const char *text = json_string_value(json_object_get(p, "prompt"));
            size_t tlen = json_string_length(json_object_get(p, "prompt"));
            json_t *want = json_object_get(p, "prompt_tokens");
            int32_t *ids = NULL;
            int32_t n = enc(v.t, text, tlen, true, false, &ids);
            assert_int_equal(n, (int32_t)json_array_size(want));
            for (int32_t k = 0; k < n; k++) assert_int_equal(ids[k], json_integer_value(json_array_get(want, (size_t)k)));
            free(ids);
            n_prompts++;
        }
        tk_close(&v);
        json_decref(root);
    }
    print_message("golden prompts: %d token-exact\n", n_prompts);
    assert_true(n_prompts >= 20);
}

/* control tokens only with parse_special; phi-3's specials eat the whitespace after them */
static void test_special_parsing(void **s) {
    (void)s;
    tk v;
    assert_true(tk_open(tu_shared("models/vocab/ggml-vocab-phi-3.gguf"), &v));
    int32_t user = cll_tok_find(v.t, "<|user|>"), end = cll_tok_find(v.t, "<|end|>");
    assert_true(user > 0 && end > 0);
    const char *txt = "<|user|>\nHi<|end|>";
    int32_t *ids = NULL;
    int32_t n = enc(v.t, txt, strlen(txt), false, true, &ids);
    assert_true(n >= 3);
    assert_int_equal(ids[0], user);
    assert_int_equal(ids[n - 1], end);
    /* rstrip: the "\n" after <|user|> is gone, so "Hi" is the next piece */
    char piece[64];
    int32_t pl = cll_tok_piece(v.t, ids[1], piece, sizeof piece, false);
    assert_true(pl >= 2 && !memcmp(piece + pl - 2, "Hi", 2));
    free(ids);
    n = enc(v.t, txt, strlen(txt), false, false, &ids);
    for (int32_t i = 0; i < n; i++) assert_true(ids[i] != user && ids[i] != end);
    free(ids);
    /* special pieces print only when asked */
    assert_int_equal(cll_tok_piece(v.t, end, piece, sizeof piece, false), 0);
    assert_int_equal(cll_tok_piece(v.t, end, piece, sizeof piece, true), 7);
    assert_true(cll_tok_is_eog(v.t, end));
    tk_close(&v);
}

/* invalid UTF-8, NULs and 10 MB: no crash, documented ids, CLL_ERR_RANGE on a short buffer */
static void test_bad_input(void **s) {
    (void)s;
    const char *names[] = {"models/vocab/ggml-vocab-llama-spm.gguf", "models/vocab/ggml-vocab-gpt-2.gguf",
                           "models/vocab/ggml-vocab-mpt.gguf"};
    const char bad[] = "a\xff\xfe b\xc3(\xe2\x82 \xf0\x9f\x98 c\0d\xed\xa0\x80 \xc0\x80";
    for (int k = 0; k < 3; k++) {
        tk v;
        assert_true(tk_open(tu_shared(names[k]), &v));
        int32_t *ids = NULL;
        int32_t n = enc(v.t, bad, sizeof bad - 1, true, true, &ids);
        assert_true(n > 0);
        int64_t dl = 0;
        char *d = dec(v.t, ids, n, &dl);
        assert_non_null(d);
        free(d);
        if (k == 0) {
            /* SPM byte fallback keeps every byte: the round trip is exact as long as no
             * truncated sequence swallows the U+2581 of a following space (llama.cpp
             * groups bytes by the lead byte's length, and so do we) */
            static const char bad2[] = "a\xff\xfe" "b\xc3(c\0d\xed\xa0\x80\xc0\x80\xe2\x82";
            int32_t *i2 = NULL;
            int32_t n2 = enc(v.t, bad2, sizeof bad2 - 1, false, false, &i2);
            char *d2 = dec(v.t, i2, n2, &dl);
            assert_non_null(d2);
            assert_int_equal(dl, (int64_t)sizeof bad2 - 1);
            assert_memory_equal(d2, bad2, sizeof bad2 - 1);
            free(d2);
            free(i2);
            /* regression: truncated lead bytes before spaces split an escaped space into
             * 1-byte symbols (more symbols than input bytes) */
            static const char bad3[] = "\xc3 \xe2\x82 \xc3 \xf0 \xf0\x9f ";
            n2 = enc(v.t, bad3, sizeof bad3 - 1, false, false, &i2);
            assert_true(n2 > 0);
            free(i2);
        }
        int32_t small[2], got = 0;
        assert_int_equal(cll_tok_encode(v.t, bad, sizeof bad - 1, true, true, small, 2, &got), CLL_ERR_RANGE);
        assert_int_equal(got, n);
        free(ids);
        /* 10 MB: mixed text, and one long run of spaces (mpt has space-run tokens) */
        size_t big = 10u << 20;
        char *b = malloc(big);
        for (size_t i = 0; i < big; i++) b[i] = (i % 97 == 0) ? '\n' : (char)('a' + (i * 7) % 26);
        if (k == 1) memset(b, ' ', big);
        double t0 = cll_now();
        n = enc(v.t, b, big, false, false, &ids);
        assert_true(n > 0);
        print_message("  %s: 10 MB -> %d tokens in %.2f s\n", names[k], n, cll_now() - t0);
        free(ids);
        memset(b, ' ', big);
        if (k == 2) {
            n = enc(v.t, b, big, false, false, &ids);
            assert_true(n > 0);
            free(ids);
        }
        free(b);
        tk_close(&v);
    }
}

static void test_args(void **s) {
    (void)s;
    tk v;
    assert_true(tk_open(tu_shared("models/stories260K.gguf"), &v));
    int32_t got = -1;
    assert_int_equal(cll_tok_encode(v.t, NULL, 3, false, false, NULL, 0, &got), CLL_ERR_ARG);
    assert_int_equal(cll_tok_encode(v.t, "", 0, false, false, NULL, 0, &got), CLL_OK);
    assert_int_equal(got, 0);
    assert_int_equal(cll_tok_encode(v.t, "", 0, true, false, NULL, 0, &got), CLL_ERR_RANGE);
    assert_int_equal(got, 1);
    assert_int_equal(cll_tok_piece(v.t, -5, NULL, 0, true), 0);
    assert_int_equal(cll_tok_piece(v.t, 1 << 30, NULL, 0, true), 0);
    assert_int_equal(cll_tok_bos(v.t), 1);
    assert_int_equal(cll_tok_eos(v.t), 2);
    assert_true(cll_tok_add_bos(v.t));
    /* BOS + " Hello": llama_detokenize keeps the space after a BOS */
    int32_t *ids = NULL;
    int32_t n = enc(v.t, "Hello", 5, true, false, &ids);
    char buf[64];
    int64_t dl = cll_tok_decode(v.t, ids, n, buf, sizeof buf, false);
    assert_int_equal(dl, 6);
    assert_string_equal(buf, " Hello");
    dl = cll_tok_detokenize(v.t, ids, n, buf, 4, true, true);
    assert_int_equal(dl, 6);
    assert_string_equal(buf, " He");
    free(ids);
    tk_close(&v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_spm),      cmocka_unit_test(test_phi3),           cmocka_unit_test(test_gpt2),
        cmocka_unit_test(test_deepseek_llm),   cmocka_unit_test(test_deepseek_coder), cmocka_unit_test(test_falcon),
        cmocka_unit_test(test_starcoder),      cmocka_unit_test(test_refact),         cmocka_unit_test(test_mpt),
        cmocka_unit_test(test_golden_prompts), cmocka_unit_test(test_special_parsing), cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
