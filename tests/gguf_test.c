/* gguf_test: the GGUF reader on every shared model file (facts checked against values
 * read with gguf-py and the shared READMEs/MANIFEST), on synthetic files written here
 * byte by byte (v1/v2/v3, every value type, nested arrays), and on hostile input:
 * truncations at every section boundary and many other offsets, and lies in every
 * count, length, type, dimension, offset and the alignment. Each bad input must give
 * an error status with a one-line message, never a crash. */
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "formats/formats.h"
#include "gguf/gguf.h"

/* ---- helpers -------------------------------------------------------------------- */

static uint8_t *load(const char *rel, size_t *n) {
    uint8_t *b = (uint8_t *)tu_read_file(tu_shared(rel), n);
    if (!b) tu_skip("shared model files are missing");
    return b;
}

/* open a private copy of exactly n bytes (so a sanitizer build sees any over-read) */
static cll_status open_copy(const uint8_t *src, size_t n, cll_gguf **g) {
    uint8_t *c = malloc(n ? n : 1);
    assert_non_null(c);
    memcpy(c, src, n);
    cll_clear_error();
    cll_status st = cll_gguf_open_mem(c, n, g);
    if (st == CLL_OK) {
        /* a handle points into the buffer; callers here only want the status */
        cll_gguf_free(*g);
        *g = NULL;
    }
    free(c);
    return st;
}

/* the bad input must fail with a non-empty one-line message */
static void expect_bad_at(const uint8_t *b, size_t n, const char *what, int line) {
    cll_gguf *g = NULL;
    cll_status st = open_copy(b, n, &g);
    if (st == CLL_OK) fail_msg("line %d: %s (size %zu): accepted, expected an error", line, what, n);
    const char *m = cll_last_error();
    if (!m[0]) fail_msg("line %d: %s: empty error message", line, what);
    if (strchr(m, '\n')) fail_msg("line %d: %s: error message has a newline: %s", line, what, m);
    assert_null(g);
}
#define expect_bad(b, n, what) expect_bad_at(b, n, what, __LINE__)

static void expect_ok_at(const uint8_t *b, size_t n, const char *what, int line) {
    cll_gguf *g = NULL;
    cll_status st = open_copy(b, n, &g);
    if (st != CLL_OK) fail_msg("line %d: %s: rejected: %s", line, what, cll_last_error());
}
#define expect_ok(b, n, what) expect_ok_at(b, n, what, __LINE__)

static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t get64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* position of a length-prefixed (u64) string in the buffer: of its length field */
static size_t find_lstr(const uint8_t *b, size_t n, const char *s) {
    size_t l = strlen(s);
    for (size_t i = 0; i + 8 + l <= n; i++)
        if (get64(b + i) == l && memcmp(b + i + 8, s, l) == 0) return i;
    fail_msg("string '%s' not found", s);
    return 0;
}

/* walk every accessor of an opened file: kvs, array elements, tensors */
static void walk_all(const cll_gguf *g) {
    for (uint64_t i = 0; i < cll_gguf_n_kv(g); i++) {
        const cll_gguf_kv *kv = cll_gguf_kv_at(g, i);
        assert_non_null(kv);
        assert_true(kv->key.len > 0);
        char key[512];
        snprintf(key, sizeof key, "%.*s", (int)kv->key.len, kv->key.ptr);
        assert_ptr_equal(cll_gguf_find(g, key), kv);
        if (kv->type == CLL_GGUF_ARRAY && kv->arr_type == CLL_GGUF_STRING)
            for (uint64_t j = 0; j < kv->arr_n; j++) {
                cll_str s = cll_gguf_arr_str(g, kv, j);
                assert_non_null(s.ptr);
                assert_true(s.ptr >= (const char *)cll_gguf_base(g) &&
                            s.ptr + s.len <= (const char *)cll_gguf_base(g) + cll_gguf_file_size(g));
            }
    }
    assert_null(cll_gguf_kv_at(g, cll_gguf_n_kv(g)));
    for (uint64_t i = 0; i < cll_gguf_n_tensors(g); i++) {
        const cll_gguf_tensor *t = cll_gguf_tensor_at(g, i);
        char name[512];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        assert_ptr_equal(cll_gguf_find_tensor(g, name), t);
        assert_int_equal(t->nbytes, cll_row_bytes(t->type, t->ne[0]) * t->ne[1] * t->ne[2] * t->ne[3]);
        assert_int_equal((const uint8_t *)t->data - cll_gguf_base(g), cll_gguf_data_offset(g) + t->offset);
        assert_true(cll_gguf_data_offset(g) + t->offset + t->nbytes <= cll_gguf_file_size(g));
        assert_int_equal(t->offset % cll_gguf_alignment(g), 0);
    }
    assert_null(cll_gguf_tensor_at(g, cll_gguf_n_tensors(g)));
}

/* ---- every shared file ------------------------------------------------------------ */

static int g_files_opened;

static void open_dir(const char *rel) {
    DIR *d = opendir(tu_shared(rel));
    if (!d) tu_skip("shared model dirs are missing");
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 5, ".gguf")) continue;
        char rp[1024];
        snprintf(rp, sizeof rp, "%s/%s", rel, e->d_name);
        cll_gguf *g;
        if (cll_gguf_open(tu_shared(rp), &g) != CLL_OK) fail_msg("%s: %s", rp, cll_last_error());
        char arch[64];
        assert_true(cll_gguf_get_cstr(g, "general.architecture", arch, sizeof arch));
        assert_true(cll_gguf_version(g) >= 1 && cll_gguf_version(g) <= 3);
        walk_all(g);
        cll_gguf_free(g);
        g_files_opened++;
    }
    closedir(d);
}

static void test_all_shared_files_open(void **st) {
    (void)st;
    g_files_opened = 0;
    open_dir("models");
    open_dir("models/vocab");
    open_dir("oracle/models");
    /* 3 models + 10 vocab files + 34 oracle models as of writing */
    assert_true(g_files_opened >= 47);
}

static void test_stories260k_facts(void **st) {
    (void)st;
    cll_gguf *g;
    assert_int_equal(cll_gguf_open(tu_shared("models/stories260K.gguf"), &g), CLL_OK);
    /* values read with gguf-py and the models README */
    assert_int_equal(cll_gguf_version(g), 3);
    assert_int_equal(cll_gguf_n_kv(g), 19);
    assert_int_equal(cll_gguf_n_tensors(g), 48);
    assert_int_equal(cll_gguf_alignment(g), 32);
    assert_int_equal(cll_gguf_data_offset(g), 14176);
    assert_int_equal(cll_gguf_file_size(g), 1185376);
    uint32_t u;
    assert_true(cll_gguf_get_u32(g, "llama.block_count", &u)); assert_int_equal(u, 5);
    assert_true(cll_gguf_get_u32(g, "llama.embedding_length", &u)); assert_int_equal(u, 64);
    assert_true(cll_gguf_get_u32(g, "llama.feed_forward_length", &u)); assert_int_equal(u, 172);
    assert_true(cll_gguf_get_u32(g, "llama.attention.head_count", &u)); assert_int_equal(u, 8);
    assert_true(cll_gguf_get_u32(g, "llama.attention.head_count_kv", &u)); assert_int_equal(u, 4);
    assert_true(cll_gguf_get_u32(g, "llama.context_length", &u)); assert_int_equal(u, 2048);
    float f;
    assert_true(cll_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &f));
    assert_true(f == 9.999999747378752e-06f);
    assert_false(cll_gguf_get_f32(g, "llama.rope.freq_base", &f)); /* absent in this file */
    assert_false(cll_gguf_get_u32(g, "general.architecture", &u)); /* a string, not an int */
    char s[64];
    assert_true(cll_gguf_get_cstr(g, "tokenizer.ggml.model", s, sizeof s)); assert_string_equal(s, "llama");
    const cll_gguf_kv *tok, *sc, *tt;
    assert_true(cll_gguf_get_arr(g, "tokenizer.ggml.tokens", &tok));
    assert_int_equal(tok->arr_n, 512);
    assert_true(cll_str_eq(cll_gguf_arr_str(g, tok, 0), "<unk>"));
    assert_true(cll_str_eq(cll_gguf_arr_str(g, tok, 2), "</s>"));
    assert_true(cll_str_eq(cll_gguf_arr_str(g, tok, 100), "<0x61>"));
    assert_null(cll_gguf_arr_str(g, tok, 512).ptr);
    assert_true(cll_gguf_get_arr(g, "tokenizer.ggml.scores", &sc));
    assert_true(cll_gguf_arr_f32(sc, 300) == -41.0f);
    assert_null(cll_gguf_arr_str(g, sc, 0).ptr); /* not strings */
    assert_true(cll_gguf_get_arr(g, "tokenizer.ggml.token_type", &tt));
    assert_int_equal(cll_gguf_arr_int(tt, 0), 2);
    assert_int_equal(cll_gguf_arr_int(tt, 1), 3);
    assert_int_equal(cll_gguf_arr_int(tt, 3), 6);
    uint64_t params = 0;
    for (uint64_t i = 0; i < cll_gguf_n_tensors(g); i++) {
        const cll_gguf_tensor *t = cll_gguf_tensor_at(g, i);
        params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        assert_int_equal(t->type, CLL_TYPE_F32);
    }
    assert_int_equal(params, 292800);
    const cll_gguf_tensor *e = cll_gguf_find_tensor(g, "token_embd.weight");
    const cll_gguf_tensor *o = cll_gguf_find_tensor(g, "output.weight");
    assert_non_null(e); assert_non_null(o);
    assert_int_equal(e->n_dims, 2); assert_int_equal(e->ne[0], 64); assert_int_equal(e->ne[1], 512);
    assert_int_equal(e->offset, 0);
    assert_memory_equal(e->data, o->data, e->nbytes); /* README: output is a copy of token_embd */
    const cll_gguf_tensor *q = cll_gguf_find_tensor(g, "blk.0.attn_q.weight");
    assert_int_equal(cll_gguf_data_offset(g) + q->offset, 276576);
    float q0;
    memcpy(&q0, q->data, 4);
    assert_true(q0 == 0.04439278692007065f);
    assert_null(cll_gguf_find_tensor(g, "blk.5.attn_q.weight"));
    assert_null(cll_gguf_find(g, "no.such.key"));
    cll_gguf_free(g);
}

static void test_v1_matches_v3(void **st) {
    (void)st;
    cll_gguf *g1, *g3;
    assert_int_equal(cll_gguf_open(tu_shared("models/stories260K-ggufv1.gguf"), &g1), CLL_OK);
    assert_int_equal(cll_gguf_open(tu_shared("models/stories260K.gguf"), &g3), CLL_OK);
    assert_int_equal(cll_gguf_version(g1), 1);
    assert_int_equal(cll_gguf_n_tensors(g1), 48);
    uint32_t u;
    assert_true(cll_gguf_get_u32(g1, "llama.block_count", &u)); assert_int_equal(u, 5);
    assert_true(cll_gguf_get_u32(g1, "llama.embedding_length", &u)); assert_int_equal(u, 64);
    /* same weights: every tensor of v3 exists in v1 with the same shape and bytes */
    for (uint64_t i = 0; i < cll_gguf_n_tensors(g3); i++) {
        const cll_gguf_tensor *t3 = cll_gguf_tensor_at(g3, i);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t3->name.len, t3->name.ptr);
        const cll_gguf_tensor *t1 = cll_gguf_find_tensor(g1, name);
        if (!t1) fail_msg("v1 file lacks %s", name);
        assert_memory_equal(t1->ne, t3->ne, sizeof t1->ne);
        assert_int_equal(t1->nbytes, t3->nbytes);
        assert_memory_equal(t1->data, t3->data, t1->nbytes);
    }
    /* and the same vocabulary strings */
    const cll_gguf_kv *a1, *a3;
    assert_true(cll_gguf_get_arr(g1, "tokenizer.ggml.tokens", &a1));
    assert_true(cll_gguf_get_arr(g3, "tokenizer.ggml.tokens", &a3));
    assert_int_equal(a1->arr_n, a3->arr_n);
    for (uint64_t i = 0; i < a1->arr_n; i++) {
        cll_str x = cll_gguf_arr_str(g1, a1, i), y = cll_gguf_arr_str(g3, a3, i);
        assert_int_equal(x.len, y.len);
        assert_memory_equal(x.ptr, y.ptr, x.len);
    }
    walk_all(g1);
    cll_gguf_free(g1);
    cll_gguf_free(g3);
}

static void test_vocab_files(void **st) {
    (void)st;
    /* token counts and architectures read with gguf-py */
    static const struct { const char *name, *arch, *model; uint64_t n_tok; } k[] = {
        {"bert-bge", "bert", "bert", 30522}, {"deepseek-coder", "llama", "gpt2", 32256},
        {"deepseek-llm", "llama", "gpt2", 102400}, {"falcon", "falcon", "gpt2", 65024},
        {"gpt-2", "gpt2", "gpt2", 50257}, {"llama-spm", "llama", "llama", 32000},
        {"mpt", "mpt", "gpt2", 50432}, {"phi-3", "phi3", "llama", 32064},
        {"refact", "refact", "gpt2", 49216}, {"starcoder", "starcoder2", "gpt2", 49152},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        char rel[256], s[64];
        snprintf(rel, sizeof rel, "models/vocab/ggml-vocab-%s.gguf", k[i].name);
        cll_gguf *g;
        if (cll_gguf_open(tu_shared(rel), &g) != CLL_OK) fail_msg("%s: %s", rel, cll_last_error());
        assert_int_equal(cll_gguf_n_tensors(g), 0);
        assert_true(cll_gguf_get_cstr(g, "general.architecture", s, sizeof s)); assert_string_equal(s, k[i].arch);
        assert_true(cll_gguf_get_cstr(g, "tokenizer.ggml.model", s, sizeof s)); assert_string_equal(s, k[i].model);
        const cll_gguf_kv *t;
        assert_true(cll_gguf_get_arr(g, "tokenizer.ggml.tokens", &t));
        assert_int_equal(t->arr_n, k[i].n_tok);
        cll_gguf_free(g);
    }
    cll_gguf *g;
    assert_int_equal(cll_gguf_open(tu_shared("models/vocab/ggml-vocab-gpt-2.gguf"), &g), CLL_OK);
    const cll_gguf_kv *t, *m;
    assert_true(cll_gguf_get_arr(g, "tokenizer.ggml.tokens", &t));
    assert_true(cll_gguf_get_arr(g, "tokenizer.ggml.merges", &m));
    assert_int_equal(m->arr_n, 50000);
    assert_true(cll_str_eq(cll_gguf_arr_str(g, t, 50256), "<|endoftext|>"));
    assert_true(cll_str_eq(cll_gguf_arr_str(g, t, 262), "\xc4\xa0the"));
    assert_true(cll_str_eq(cll_gguf_arr_str(g, m, 0), "\xc4\xa0 t"));
    assert_true(cll_str_eq(cll_gguf_arr_str(g, m, 49999), "\xc4\xa0g azed"));
    cll_gguf_free(g);
}

static void test_tiny_random_vocab_equals_spm(void **st) {
    (void)st;
    cll_gguf *a, *b;
    assert_int_equal(cll_gguf_open(tu_shared("models/llama-2-tiny-random.gguf"), &a), CLL_OK);
    assert_int_equal(cll_gguf_open(tu_shared("models/vocab/ggml-vocab-llama-spm.gguf"), &b), CLL_OK);
    assert_int_equal(cll_gguf_n_tensors(a), 12);
    uint32_t u;
    assert_true(cll_gguf_get_u32(a, "llama.embedding_length", &u)); assert_int_equal(u, 8);
    assert_true(cll_gguf_get_u32(a, "llama.block_count", &u)); assert_int_equal(u, 1);
    assert_int_equal(cll_gguf_find_tensor(a, "token_embd.weight")->type, CLL_TYPE_F16);
    const cll_gguf_kv *ta, *tb;
    assert_true(cll_gguf_get_arr(a, "tokenizer.ggml.tokens", &ta));
    assert_true(cll_gguf_get_arr(b, "tokenizer.ggml.tokens", &tb));
    assert_int_equal(ta->arr_n, 32000);
    assert_int_equal(tb->arr_n, 32000);
    for (uint64_t i = 0; i < 32000; i++) {
        cll_str x = cll_gguf_arr_str(a, ta, i), y = cll_gguf_arr_str(b, tb, i);
        if (x.len != y.len || memcmp(x.ptr, y.ptr, x.len)) fail_msg("token %llu differs", (unsigned long long)i);
    }
    assert_null(cll_gguf_arr_str(a, tb, 0).ptr); /* a kv of another handle is refused */
    cll_gguf_free(a);
    cll_gguf_free(b);
}

/* the oracle MANIFEST: arch, file type, tensor count per type, file size for each file */
static void test_oracle_manifest(void **st) {
    (void)st;
    size_t n;
    char *man = tu_read_file(tu_shared("oracle/models/MANIFEST"), &n);
    if (!man) tu_skip_test("oracle MANIFEST missing");
    int rows = 0;
    char *save = NULL;
    strtok_r(man, "\n", &save); /* header */
    for (char *line; (line = strtok_r(NULL, "\n", &save));) {
        char *f[8] = {0}, *s2 = NULL;
        int nf = 0;
        for (char *c = strtok_r(line, "\t", &s2); c && nf < 8; c = strtok_r(NULL, "\t", &s2)) f[nf++] = c;
        if (nf < 5) continue;
        char rel[512];
        snprintf(rel, sizeof rel, "oracle/models/%s", f[0]);
        cll_gguf *g;
        if (cll_gguf_open(tu_shared(rel), &g) != CLL_OK) fail_msg("%s: %s", rel, cll_last_error());
        char arch[64];
        assert_true(cll_gguf_get_cstr(g, "general.architecture", arch, sizeof arch));
        assert_string_equal(arch, f[1]);
        uint32_t ft;
        assert_true(cll_gguf_get_u32(g, "general.file_type", &ft));
        assert_int_equal(ft, strtoul(f[2], NULL, 10));
        assert_int_equal(cll_gguf_file_size(g), strtoull(f[4], NULL, 10));
        /* "q4_k:38,f32:37,q6_k:5" */
        uint64_t total = 0;
        char *s3 = NULL;
        for (char *tc = strtok_r(f[3], ",", &s3); tc; tc = strtok_r(NULL, ",", &s3)) {
            char *colon = strchr(tc, ':');
            assert_non_null(colon);
            *colon = 0;
            uint64_t want = strtoull(colon + 1, NULL, 10), got = 0;
            for (uint64_t i = 0; i < cll_gguf_n_tensors(g); i++)
                if (!strcasecmp(cll_type_name(cll_gguf_tensor_at(g, i)->type), tc)) got++;
            if (got != want) fail_msg("%s: %s tensors: %llu, MANIFEST says %llu", f[0], tc,
                                      (unsigned long long)got, (unsigned long long)want);
            total += want;
        }
        assert_int_equal(total, cll_gguf_n_tensors(g));
        cll_gguf_free(g);
        rows++;
    }
    free(man);
    assert_true(rows >= 30);
}

/* ---- hostile input on real files --------------------------------------------------- */

static void test_truncations_stories(void **st) {
    (void)st;
    size_t n;
    uint8_t *b = load("models/stories260K.gguf", &n);
    expect_ok(b, n, "whole file");
    /* every prefix through the end of the header region (magic, counts, each kv, tensor infos) */
    for (size_t k = 0; k <= 14176; k++) expect_bad(b, k, "truncated header");
    /* the data: around every tensor's start and end, and at a stride */
    cll_gguf *g;
    assert_int_equal(cll_gguf_open_mem(b, n, &g), CLL_OK);
    for (uint64_t i = 0; i < cll_gguf_n_tensors(g); i++) {
        const cll_gguf_tensor *t = cll_gguf_tensor_at(g, i);
        uint64_t s = cll_gguf_data_offset(g) + t->offset, e = s + t->nbytes;
        expect_bad(b, s, "truncated at tensor start");
        expect_bad(b, s + 1, "truncated after tensor start");
        expect_bad(b, e - 1, "truncated before tensor end");
    }
    cll_gguf_free(g);
    for (size_t k = 14176; k < n; k += 4099) expect_bad(b, k, "truncated data");
    expect_bad(b, n - 1, "one byte short");
    free(b);
}

static void test_truncations_vocab_and_v1(void **st) {
    (void)st;
    size_t n;
    uint8_t *b = load("models/vocab/ggml-vocab-llama-spm.gguf", &n);
    expect_ok(b, n, "vocab file");
    /* no tensors and no padding: every prefix is short of the last kv */
    for (size_t k = 0; k < 4096; k++) expect_bad(b, k, "truncated vocab");
    for (size_t k = 4096; k < n; k += 997) expect_bad(b, k, "truncated vocab");
    expect_bad(b, n - 1, "vocab one byte short");
    free(b);
    b = load("models/stories260K-ggufv1.gguf", &n);
    expect_ok(b, n, "v1 file");
    for (size_t k = 0; k < 11456; k += 3) expect_bad(b, k, "truncated v1");
    expect_bad(b, n - 1, "v1 one byte short");
    free(b);
}

static void test_lies_in_header(void **st) {
    (void)st;
    size_t n;
    uint8_t *b = load("models/stories260K.gguf", &n);
    uint8_t *m = malloc(n);
    static const uint64_t huge[] = {UINT64_MAX, 1ull << 63, 1ull << 40, 1ull << 32, 1ull << 31};
#define RESET() memcpy(m, b, n)
    RESET(); m[0] = 'X'; expect_bad(m, n, "magic");
    RESET(); memcpy(m, "FUGG", 4); expect_bad(m, n, "reversed magic");
    RESET(); put32(m + 4, 0); expect_bad(m, n, "version 0");
    RESET(); put32(m + 4, 4); expect_bad(m, n, "version 4");
    RESET(); put32(m + 4, 0x03000000); expect_bad(m, n, "big-endian version");
    assert_int_equal(get64(b + 8), 48);
    assert_int_equal(get64(b + 16), 19);
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        RESET(); put64(m + 8, huge[i]); expect_bad(m, n, "n_tensors huge");
        RESET(); put64(m + 16, huge[i]); expect_bad(m, n, "n_kv huge");
    }
    RESET(); put64(m + 8, 49); expect_bad(m, n, "n_tensors + 1");
    RESET(); put64(m + 16, 20); expect_bad(m, n, "n_kv + 1");
    /* the first kv is tokenizer.ggml.tokens: [u64 len][21 bytes][u32 type][u32 elem][u64 n] */
    size_t k0 = find_lstr(b, n, "tokenizer.ggml.tokens");
    assert_int_equal(k0, 24);
    size_t ty = k0 + 8 + 21, et = ty + 4, an = et + 4, s0 = an + 8;
    assert_int_equal(get64(b + an), 512);
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        RESET(); put64(m + k0, huge[i]); expect_bad(m, n, "key length huge");
        RESET(); put64(m + an, huge[i]); expect_bad(m, n, "array length huge");
        RESET(); put64(m + s0, huge[i]); expect_bad(m, n, "string length huge");
    }
    RESET(); put64(m + an, 513); expect_bad(m, n, "array length + 1");
    RESET(); put64(m + k0, 0); expect_bad(m, n, "empty key");
    RESET(); put64(m + s0, n - s0 - 8 + 1); expect_bad(m, n, "string length = remaining + 1");
    RESET(); put64(m + s0, n); expect_bad(m, n, "string length = file size");
    RESET(); put32(m + ty, 13); expect_bad(m, n, "value type 13");
    RESET(); put32(m + ty, UINT32_MAX); expect_bad(m, n, "value type max");
    RESET(); put32(m + et, 13); expect_bad(m, n, "array elem type 13");
    RESET(); put32(m + et, CLL_GGUF_ARRAY); expect_bad(m, n, "array elem type = array (strings as nested headers)");
    RESET(); put32(m + et, CLL_GGUF_U64); expect_bad(m, n, "array of 512 u64 reinterprets the strings");
    /* a scalar kv: tokenizer.ggml.bos_token_id u32 -> say it is an array */
    size_t bos = find_lstr(b, n, "tokenizer.ggml.bos_token_id");
    RESET(); put32(m + bos + 8 + 27, CLL_GGUF_ARRAY); expect_bad(m, n, "u32 retyped as array");
    RESET(); put32(m + bos + 8 + 27, CLL_GGUF_STRING); expect_bad(m, n, "u32 retyped as string");
    /* duplicate keys: bos_token_id -> eos_token_id (same length) */
    RESET(); m[bos + 8 + 15] = 'e'; expect_bad(m, n, "duplicate key");
    free(m);
    free(b);
}

static void test_lies_in_tensors(void **st) {
    (void)st;
    size_t n;
    uint8_t *b = load("models/stories260K.gguf", &n);
    uint8_t *m = malloc(n);
    /* tensor info: [u64 len][name][u32 n_dims][u64 ne x n_dims][u32 type][u64 offset] */
    size_t t0 = find_lstr(b, n, "token_embd.weight"), nd = t0 + 8 + 17, d0 = nd + 4, d1 = d0 + 8;
    size_t ty = d1 + 8, of = ty + 4;
    assert_int_equal(get64(b + d0), 64);
    assert_int_equal(get64(b + d1), 512);
    assert_int_equal(get64(b + of), 0);
    size_t tq = find_lstr(b, n, "blk.0.attn_q.weight"), tk = find_lstr(b, n, "blk.0.attn_k.weight");
    size_t qof = tq + 8 + 19 + 4 + 16 + 4;
    assert_int_equal(get64(b + qof), 276576 - 14176);
    RESET(); put32(m + nd, 0); expect_bad(m, n, "n_dims 0");
    RESET(); put32(m + nd, 5); expect_bad(m, n, "n_dims 5");
    RESET(); put32(m + nd, UINT32_MAX); expect_bad(m, n, "n_dims max");
    RESET(); put32(m + nd, 1); expect_bad(m, n, "n_dims 1 (shifts the rest)");
    RESET(); put64(m + d0, 0); expect_bad(m, n, "dim 0");
    RESET(); put64(m + d1, 0); expect_bad(m, n, "dim1 0");
    RESET(); put64(m + d0, 1ull << 32); put64(m + d1, 1ull << 32); expect_bad(m, n, "dims product overflow");
    RESET(); put64(m + d0, UINT64_MAX); expect_bad(m, n, "dim max");
    RESET(); put64(m + d1, 1ull << 62); expect_bad(m, n, "byte size overflow");
    RESET(); put64(m + d1, 513); expect_bad(m, n, "one row too many");
    static const uint32_t bad_types[] = {4, 5, 31, 32, 33, 36, 37, 38, 40, 41, 1000, UINT32_MAX};
    for (size_t i = 0; i < sizeof bad_types / sizeof bad_types[0]; i++) {
        RESET(); put32(m + ty, bad_types[i]); expect_bad(m, n, "bad tensor type");
        char want[64];
        snprintf(want, sizeof want, "%u", bad_types[i]);
        assert_non_null(strstr(cll_last_error(), "token_embd.weight"));
        assert_non_null(strstr(cll_last_error(), want));
    }
    RESET(); put32(m + ty, CLL_TYPE_Q4_K); expect_bad(m, n, "row 64 not a multiple of 256");
    RESET(); put64(m + of, 1); expect_bad(m, n, "misaligned offset");
    RESET(); put64(m + of, 16); expect_bad(m, n, "offset aligned to 16 only");
    RESET(); put64(m + of, n); expect_bad(m, n, "offset past end");
    RESET(); put64(m + of, UINT64_MAX - 31); expect_bad(m, n, "offset wraps");
    RESET(); put64(m + of, 1ull << 63); expect_bad(m, n, "offset 2^63");
    RESET(); put64(m + qof, 0); expect_bad(m, n, "q overlaps token_embd");
    RESET(); put64(m + qof, 276576 - 14176 - 32); expect_bad(m, n, "q overlaps its neighbour by 32 bytes");
    RESET(); put64(m + tq, 0); expect_bad(m, n, "empty tensor name");
    RESET(); put64(m + tq, 1ull << 63); expect_bad(m, n, "tensor name length huge");
    RESET(); m[tk + 8 + 11] = 'q'; expect_bad(m, n, "duplicate tensor name");
    assert_non_null(strstr(cll_last_error(), "blk.0.attn_q.weight"));
    free(m);
    free(b);
#undef RESET
}

/* ---- synthetic files ----------------------------------------------------------------- */

/* A little writer so each hostile case is one change away from a file we know is valid. */
typedef struct {
    uint8_t p[4096];
    size_t n;
    uint32_t ver;
} wb;
static void w_raw(wb *w, const void *d, size_t n) {
    assert_true(w->n + n <= sizeof w->p);
    memcpy(w->p + w->n, d, n);
    w->n += n;
}
static void w_u32(wb *w, uint32_t v) { uint8_t b[4]; put32(b, v); w_raw(w, b, 4); }
static void w_u64(wb *w, uint64_t v) { uint8_t b[8]; put64(b, v); w_raw(w, b, 8); }
static void w_len(wb *w, uint64_t v) { if (w->ver == 1) w_u32(w, (uint32_t)v); else w_u64(w, v); }
static void w_str(wb *w, const char *s) { w_len(w, strlen(s)); w_raw(w, s, strlen(s)); }
static void w_key(wb *w, const char *k, uint32_t type) { w_str(w, k); w_u32(w, type); }
static void w_pad(wb *w, uint32_t a) { while (w->n % a) w->p[w->n++] = 0; }

typedef struct {
    uint32_t ver, align_type, nest_depth, n_tensors;
    uint64_t align;
    bool dup_tensor;
} synth_opts;
typedef struct { /* where fields landed */
    size_t align_val, strs_n, nest_inner_type, nest_inner_n, t_b_ndims, t_b_type, t_b_off, t_b_dim3;
} synth_pos;

static void build(wb *w, synth_opts o, synth_pos *pos) {
    memset(w, 0, sizeof *w);
    w->ver = o.ver;
    uint32_t lay = o.align && !(o.align & (o.align - 1)) && o.align <= 4096 ? (uint32_t)o.align : 32;
    w_raw(w, "GGUF", 4);
    w_u32(w, o.ver);
    w_len(w, o.n_tensors);
    w_len(w, 19);
    w_key(w, "general.architecture", CLL_GGUF_STRING); w_str(w, "llama");
    w_key(w, "general.alignment", o.align_type);
    pos->align_val = w->n;
    if (o.align_type == CLL_GGUF_U32) w_u32(w, (uint32_t)o.align);
    else if (o.align_type == CLL_GGUF_U64) w_u64(w, o.align);
    else if (o.align_type == CLL_GGUF_STRING) w_str(w, "32");
    else { float f = (float)o.align; w_raw(w, &f, 4); }
    w_key(w, "t.u8", CLL_GGUF_U8); w_raw(w, "\xc8", 1);
    w_key(w, "t.i8", CLL_GGUF_I8); w_raw(w, "\xfb", 1);
    w_key(w, "t.u16", CLL_GGUF_U16); w_raw(w, "\x60\xea", 2);          /* 60000 */
    w_key(w, "t.i16", CLL_GGUF_I16); w_raw(w, "\xd0\x8a", 2);          /* -30000 */
    w_key(w, "t.u32", CLL_GGUF_U32); w_u32(w, 4000000000u);
    w_key(w, "t.i32", CLL_GGUF_I32); w_u32(w, (uint32_t)-7);
    w_key(w, "t.f32", CLL_GGUF_F32); w_raw(w, "\x00\x00\xc0\x3f", 4);  /* 1.5f */
    w_key(w, "t.bool", CLL_GGUF_BOOL); w_raw(w, "\x01", 1);
    w_key(w, "t.u64", CLL_GGUF_U64); w_u64(w, 1ull << 40);
    w_key(w, "t.i64", CLL_GGUF_I64); w_u64(w, (uint64_t)-(1ll << 40));
    w_key(w, "t.f64", CLL_GGUF_F64); w_raw(w, "\x00\x00\x00\x00\x00\x00\xd0\x3f", 8); /* 0.25 */
    w_key(w, "t.strs", CLL_GGUF_ARRAY); w_u32(w, CLL_GGUF_STRING);
    pos->strs_n = w->n;
    w_len(w, 3); w_str(w, "a"); w_str(w, ""); w_str(w, "h\xc3\xa9llo");
    w_key(w, "t.ints", CLL_GGUF_ARRAY); w_u32(w, CLL_GGUF_I32); w_len(w, 3);
    w_u32(w, 1); w_u32(w, (uint32_t)-2); w_u32(w, 3);
    w_key(w, "t.f64s", CLL_GGUF_ARRAY); w_u32(w, CLL_GGUF_F64); w_len(w, 2);
    w_raw(w, "\x00\x00\x00\x00\x00\x00\xe0\x3f\x00\x00\x00\x00\x00\x00\x00\xc0", 16); /* 0.5, -2 */
    /* [[1,2,3], []] of i32, then [["x","yz"]] */
    w_key(w, "t.nested", CLL_GGUF_ARRAY); w_u32(w, CLL_GGUF_ARRAY); w_len(w, 2);
    pos->nest_inner_type = w->n;
    w_u32(w, CLL_GGUF_I32);
    pos->nest_inner_n = w->n;
    w_len(w, 3); w_u32(w, 1); w_u32(w, 2); w_u32(w, 3);
    w_u32(w, CLL_GGUF_I32); w_len(w, 0);
    w_key(w, "t.nested_strs", CLL_GGUF_ARRAY); w_u32(w, CLL_GGUF_ARRAY); w_len(w, 1);
    w_u32(w, CLL_GGUF_STRING); w_len(w, 2); w_str(w, "x"); w_str(w, "yz");
    /* a chain of nest_depth arrays, the innermost holding one u8 */
    w_key(w, "t.deep", CLL_GGUF_ARRAY);
    for (uint32_t d = 1; d < o.nest_depth; d++) { w_u32(w, CLL_GGUF_ARRAY); w_len(w, 1); }
    w_u32(w, CLL_GGUF_U8); w_len(w, 1); w_raw(w, "\x2a", 1);
    if (o.n_tensors) {
        /* a: f32 [4, 2] at 0; b: q8_0 [32, 1, 1, 1] at the next aligned offset */
        w_str(w, "a"); w_u32(w, 2); w_len(w, 4); w_len(w, 2); w_u32(w, CLL_TYPE_F32); w_u64(w, 0);
        w_str(w, o.dup_tensor ? "a" : "b");
        pos->t_b_ndims = w->n;
        w_u32(w, 4); w_len(w, 32); w_len(w, 1); w_len(w, 1);
        pos->t_b_dim3 = w->n;
        w_len(w, 1);
        pos->t_b_type = w->n;
        w_u32(w, CLL_TYPE_Q8_0);
        pos->t_b_off = w->n;
        w_u64(w, (32 + lay - 1) / lay * lay);
        w_pad(w, lay);
        for (int i = 0; i < 8; i++) { float f = (float)i; w_raw(w, &f, 4); }
        w_pad(w, lay);
        for (int i = 0; i < 34; i++) w->p[w->n++] = (uint8_t)i;
    }
}

static synth_opts std_opts(uint32_t ver) {
    return (synth_opts){.ver = ver, .align_type = CLL_GGUF_U32, .nest_depth = 3, .n_tensors = 2, .align = 32};
}

static void test_synth_valid_all_versions(void **st) {
    (void)st;
    for (uint32_t ver = 1; ver <= 3; ver++) {
        wb w;
        synth_pos pos;
        build(&w, std_opts(ver), &pos);
        cll_gguf *g;
        if (cll_gguf_open_mem(w.p, w.n, &g) != CLL_OK) fail_msg("v%u: %s", ver, cll_last_error());
        assert_int_equal(cll_gguf_version(g), ver);
        assert_int_equal(cll_gguf_n_kv(g), 19);
        assert_int_equal(cll_gguf_alignment(g), 32);
        uint32_t u; int32_t i; uint64_t u64; float f; bool b; char s[8]; cll_str cs;
        assert_true(cll_gguf_get_u32(g, "t.u8", &u)); assert_int_equal(u, 200);
        assert_true(cll_gguf_get_i32(g, "t.i8", &i)); assert_int_equal(i, -5);
        assert_false(cll_gguf_get_u32(g, "t.i8", &u));
        assert_false(cll_gguf_get_u64(g, "t.i8", &u64));
        assert_true(cll_gguf_get_u32(g, "t.u16", &u)); assert_int_equal(u, 60000);
        assert_true(cll_gguf_get_i32(g, "t.i16", &i)); assert_int_equal(i, -30000);
        assert_true(cll_gguf_get_u32(g, "t.u32", &u)); assert_int_equal(u, 4000000000u);
        assert_false(cll_gguf_get_i32(g, "t.u32", &i));
        assert_true(cll_gguf_get_i32(g, "t.i32", &i)); assert_int_equal(i, -7);
        assert_true(cll_gguf_get_u64(g, "t.u64", &u64)); assert_int_equal(u64, 1ull << 40);
        assert_false(cll_gguf_get_u32(g, "t.u64", &u));
        assert_false(cll_gguf_get_i32(g, "t.i64", &i));
        assert_false(cll_gguf_get_u64(g, "t.i64", &u64));
        assert_true(cll_gguf_get_f32(g, "t.f32", &f)); assert_true(f == 1.5f);
        assert_true(cll_gguf_get_f32(g, "t.f64", &f)); assert_true(f == 0.25f);
        assert_false(cll_gguf_get_f32(g, "t.u8", &f));
        assert_true(cll_gguf_get_bool(g, "t.bool", &b)); assert_true(b);
        assert_false(cll_gguf_get_bool(g, "t.u8", &b));
        assert_false(cll_gguf_get_str(g, "t.strs", &cs));
        assert_true(cll_gguf_get_cstr(g, "general.architecture", s, 3)); assert_string_equal(s, "ll");
        const cll_gguf_kv *a;
        assert_false(cll_gguf_get_arr(g, "t.u8", &a));
        assert_true(cll_gguf_get_arr(g, "t.strs", &a));
        assert_int_equal(a->arr_n, 3);
        assert_true(cll_str_eq(cll_gguf_arr_str(g, a, 0), "a"));
        cs = cll_gguf_arr_str(g, a, 1);
        assert_non_null(cs.ptr); assert_int_equal(cs.len, 0);
        assert_true(cll_str_eq(cll_gguf_arr_str(g, a, 2), "h\xc3\xa9llo"));
        assert_null(cll_gguf_arr_str(g, a, 3).ptr);
        assert_int_equal(cll_gguf_arr_int(a, 0), 0); /* strings are not integers */
        assert_true(cll_gguf_get_arr(g, "t.ints", &a));
        assert_int_equal(cll_gguf_arr_int(a, 1), -2);
        assert_int_equal(cll_gguf_arr_int(a, 2), 3);
        assert_int_equal(cll_gguf_arr_int(a, 3), 0);
        assert_true(cll_gguf_arr_f32(a, 0) == 0.0f);
        assert_true(cll_gguf_get_arr(g, "t.f64s", &a));
        assert_true(cll_gguf_arr_f32(a, 1) == -2.0f);
        assert_true(cll_gguf_get_arr(g, "t.nested", &a));
        assert_int_equal(a->arr_type, CLL_GGUF_ARRAY);
        assert_int_equal(a->arr_n, 2);
        assert_null(cll_gguf_arr_str(g, a, 0).ptr);
        const cll_gguf_tensor *ta = cll_gguf_find_tensor(g, "a"), *tb = cll_gguf_find_tensor(g, "b");
        assert_non_null(ta); assert_non_null(tb);
        assert_int_equal(cll_gguf_data_offset(g) % 32, 0);
        assert_int_equal(ta->nbytes, 32);
        assert_int_equal(tb->n_dims, 4);
        assert_int_equal(tb->nbytes, 34);
        assert_int_equal(tb->offset, 32);
        float f7;
        memcpy(&f7, (const uint8_t *)ta->data + 28, 4);
        assert_true(f7 == 7.0f);
        assert_int_equal(((const uint8_t *)tb->data)[33], 33);
        assert_int_equal((size_t)((const uint8_t *)tb->data - w.p) + 34, w.n);
        walk_all(g);
        cll_gguf_free(g);
        for (size_t k = 0; k < w.n; k++) expect_bad(w.p, k, "truncated synthetic");
    }
}

static void test_synth_alignment(void **st) {
    (void)st;
    wb w;
    synth_pos pos;
    synth_opts o = std_opts(3);
    static const uint64_t good[] = {1, 2, 8, 64, 256};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        o.align = good[i];
        build(&w, o, &pos);
        cll_gguf *g;
        if (cll_gguf_open_mem(w.p, w.n, &g) != CLL_OK) fail_msg("align %llu: %s", (unsigned long long)good[i], cll_last_error());
        assert_int_equal(cll_gguf_alignment(g), good[i]);
        assert_int_equal(cll_gguf_data_offset(g) % good[i], 0);
        cll_gguf_free(g);
    }
    static const uint64_t bad[] = {0, 3, 6, 33, 0x80000001u, UINT32_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.align = bad[i];
        build(&w, o, &pos);
        expect_bad(w.p, w.n, "alignment not a power of two");
        assert_non_null(strstr(cll_last_error(), "general.alignment"));
    }
    o = std_opts(3);
    o.align_type = CLL_GGUF_U64; o.align = 1ull << 40;
    build(&w, o, &pos); expect_bad(w.p, w.n, "alignment 2^40");
    o.align_type = CLL_GGUF_STRING; build(&w, o, &pos); expect_bad(w.p, w.n, "alignment as string");
    o.align_type = CLL_GGUF_F32; o.align = 32; build(&w, o, &pos); expect_bad(w.p, w.n, "alignment as f32");
    o.align = 64; o.align_type = CLL_GGUF_U32;
    build(&w, o, &pos);
    put64(w.p + pos.t_b_off, 32); expect_bad(w.p, w.n, "offset 32 under alignment 64");
}

static void test_synth_lies(void **st) {
    (void)st;
    for (uint32_t ver = 1; ver <= 3; ver++) {
        wb w, m;
        synth_pos pos;
        synth_opts o = std_opts(ver);
        build(&w, o, &pos);
        size_t lw = ver == 1 ? 4 : 8;
#define PATCH(at, v) do { m = w; if (lw == 4) put32(m.p + (at), (uint32_t)(v)); else put64(m.p + (at), (v)); } while (0)
        PATCH(pos.strs_n, 4); expect_bad(m.p, m.n, "string array + 1");
        PATCH(pos.strs_n, UINT64_MAX); expect_bad(m.p, m.n, "string array huge");
        PATCH(pos.nest_inner_n, 4); expect_bad(m.p, m.n, "nested length + 1");
        PATCH(pos.nest_inner_n, UINT64_MAX); expect_bad(m.p, m.n, "nested length huge");
        m = w; put32(m.p + pos.nest_inner_type, 13); expect_bad(m.p, m.n, "nested type 13");
        m = w; put32(m.p + pos.nest_inner_type, CLL_GGUF_U64); expect_bad(m.p, m.n, "nested type u64");
        m = w; put32(m.p + pos.t_b_ndims, 0); expect_bad(m.p, m.n, "n_dims 0");
        m = w; put32(m.p + pos.t_b_ndims, 5); expect_bad(m.p, m.n, "n_dims 5");
        PATCH(pos.t_b_dim3, 0); expect_bad(m.p, m.n, "dim 0");
        PATCH(pos.t_b_dim3, 2); expect_bad(m.p, m.n, "data past end");
        if (ver > 1) { PATCH(pos.t_b_dim3, 1ull << 63); expect_bad(m.p, m.n, "dim 2^63"); }
        m = w; put32(m.p + pos.t_b_type, CLL_TYPE_F32); expect_bad(m.p, m.n, "b as f32 runs past end");
        m = w; put32(m.p + pos.t_b_type, CLL_TYPE_Q4_K); expect_bad(m.p, m.n, "32 not a multiple of 256");
        m = w; put32(m.p + pos.t_b_type, 39 + 1); expect_bad(m.p, m.n, "type 40");
        m = w; put64(m.p + pos.t_b_off, 0); expect_bad(m.p, m.n, "b overlaps a");
        m = w; put64(m.p + pos.t_b_off, 33); expect_bad(m.p, m.n, "b misaligned");
        m = w; put64(m.p + pos.t_b_off, 64); expect_bad(m.p, m.n, "b past end");
#undef PATCH
        o.dup_tensor = true;
        build(&m, o, &pos);
        expect_bad(m.p, m.n, "duplicate tensor name");
        assert_non_null(strstr(cll_last_error(), "'a'"));
    }
}

static void test_synth_nesting_and_vocab_only(void **st) {
    (void)st;
    wb w;
    synth_pos pos;
    synth_opts o = std_opts(3);
    o.nest_depth = 8;
    build(&w, o, &pos);
    expect_ok(w.p, w.n, "nesting depth 8");
    o.nest_depth = 9;
    build(&w, o, &pos);
    expect_bad(w.p, w.n, "nesting depth 9");
    o.nest_depth = 1;
    o.n_tensors = 0;
    build(&w, o, &pos);
    /* no tensors and no padding after the metadata: the data offset lies past the end */
    cll_gguf *g;
    if (cll_gguf_open_mem(w.p, w.n, &g) != CLL_OK) fail_msg("vocab-only: %s", cll_last_error());
    assert_int_equal(cll_gguf_n_tensors(g), 0);
    assert_null(cll_gguf_tensor_at(g, 0));
    assert_null(cll_gguf_find_tensor(g, "a"));
    cll_gguf_free(g);
    expect_bad(w.p, w.n - 1, "vocab-only one short");
    /* a lie about the tensor count on a tensor-less file */
    put64(w.p + 8, 1);
    expect_bad(w.p, w.n, "n_tensors 1 with no infos");
    /* edge arguments */
    assert_int_not_equal(cll_gguf_open_mem(NULL, 0, &g), CLL_OK);
    assert_int_not_equal(cll_gguf_open_mem(w.p, w.n, NULL), CLL_OK);
    assert_int_not_equal(cll_gguf_open("/nonexistent/x.gguf", &g), CLL_OK);
    assert_null(g);
    assert_non_null(strstr(cll_last_error(), "/nonexistent/x.gguf"));
    cll_gguf_free(NULL);
}

#define SYNTH_TESTS                                          \
    cmocka_unit_test(test_synth_valid_all_versions),         \
    cmocka_unit_test(test_synth_alignment),                  \
    cmocka_unit_test(test_synth_lies),                       \
    cmocka_unit_test(test_synth_nesting_and_vocab_only),

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_shared_files_open),
        cmocka_unit_test(test_stories260k_facts),
        cmocka_unit_test(test_v1_matches_v3),
        cmocka_unit_test(test_vocab_files),
        cmocka_unit_test(test_tiny_random_vocab_equals_spm),
        cmocka_unit_test(test_oracle_manifest),
        cmocka_unit_test(test_truncations_stories),
        cmocka_unit_test(test_truncations_vocab_and_v1),
        cmocka_unit_test(test_lies_in_header),
        cmocka_unit_test(test_lies_in_tensors),
        SYNTH_TESTS
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
