/* tokenizer_fuzz: libFuzzer target for the tokenizer and chat renderer. Loads fixed
 * vocabularies once (SPM llama, SPM phi-3 with rstrip specials, BPE gpt-2, BPE mpt
 * with whitespace-run user tokens) from $CLLAMA_SHARED (default: ../shared beside the
 * source tree, then /work/shared). The first input byte picks add_special /
 * parse_special; the rest is the text. Each vocab encodes it, every id must be in
 * range, a short output buffer must give CLL_ERR_RANGE with the same count, every
 * piece and the whole decode run, and for SPM on ASCII input without specials
 * decode(encode(x)) == x. The text also goes through the chat renderer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

static const char *const VOCABS[] = {"llama-spm", "phi-3", "gpt-2", "mpt"};
#define NV (sizeof VOCABS / sizeof *VOCABS)
static cll_gguf *g_g[NV];
static cll_tokenizer *g_t[NV];

static FILE *open_shared(const char *rel, char *path, size_t cap) {
    const char *env = getenv("CLLAMA_SHARED");
    char here[4096];
    snprintf(here, sizeof here, "%s", __FILE__);
    char *cut = strstr(here, "/tests/fuzz/");
    if (cut) snprintf(cut, sizeof here - (size_t)(cut - here), "/../shared");
    const char *bases[] = {env, cut ? here : NULL, "/work/shared"};
    for (size_t i = 0; i < 3; i++) {
        if (!bases[i]) continue;
        snprintf(path, cap, "%s/%s", bases[i], rel);
        FILE *f = fopen(path, "rb");
        if (f) return f;
    }
    return NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    for (size_t i = 0; i < NV; i++) {
        char rel[256], path[8192];
        snprintf(rel, sizeof rel, "models/vocab/ggml-vocab-%s.gguf", VOCABS[i]);
        FILE *f = open_shared(rel, path, sizeof path);
        if (!f) { fprintf(stderr, "tokenizer_fuzz: %s not found (set CLLAMA_SHARED)\n", rel); abort(); }
        fclose(f);
        if (cll_gguf_open(path, &g_g[i]) != CLL_OK || cll_tok_create(g_g[i], &g_t[i]) != CLL_OK) {
            fprintf(stderr, "tokenizer_fuzz: %s: %s\n", path, cll_last_error());
            abort();
        }
    }
    return 0;
}

static bool ascii_plain(const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 0x80 || s[i] == '<') return false; /* '<' could spell a user-defined token */
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0 || size > 1 << 16) return 0;
    bool add_special = data[0] & 1, parse_special = data[0] & 2;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    for (size_t v = 0; v < NV; v++) {
        const cll_tokenizer *t = g_t[v];
        int32_t need = -1;
        cll_status st = cll_tok_encode(t, text, len, add_special, parse_special, NULL, 0, &need);
        CHECK(st == CLL_OK || st == CLL_ERR_RANGE);
        CHECK(need >= 0 && (need == 0) == (st == CLL_OK));
        int32_t *ids = malloc(((size_t)need + 1) * sizeof *ids);
        int32_t got = -1;
        CHECK(cll_tok_encode(t, text, len, add_special, parse_special, ids, need, &got) == CLL_OK && got == need);
        if (need > 1) {
            int32_t two[1];
            CHECK(cll_tok_encode(t, text, len, add_special, parse_special, two, 1, &got) == CLL_ERR_RANGE && got == need);
            CHECK(two[0] == ids[0]);
        }
        for (int32_t i = 0; i < need; i++) {
            CHECK(ids[i] >= 0 && ids[i] < cll_tok_n_vocab(t));
            char p[64];
            int32_t k = cll_tok_piece(t, ids[i], p, sizeof p, i & 1);
            CHECK(k >= 0);
        }
        int64_t dl = cll_tok_decode(t, ids, need, NULL, 0, false);
        CHECK(dl >= 0);
        char *back = malloc((size_t)dl + 1);
        CHECK(cll_tok_decode(t, ids, need, back, dl + 1, false) == dl);
        if (cll_tok_kind_of(t) == CLL_TOK_SPM && v == 0 && !add_special && ascii_plain((const uint8_t *)text, len))
            CHECK((size_t)dl == len && memcmp(back, text, len) == 0);
        free(back);
        free(ids);
    }
    /* chat: the text as a user message under a few families */
    char *msg = malloc(len + 1);
    memcpy(msg, text, len);
    msg[len] = 0;
    static const char *const tmpls[] = {"<start_of_turn>", "<|start_header_id|>", "[INST] <<SYS>>", "<|im_start|>", "x"};
    cll_chat_msg m[3] = {{"system", msg}, {"user", msg}, {"assistant", msg}};
    cll_chat_tmpl ct;
    cll_chat_init(&ct, tmpls[data[0] % 5], "<s>", "</s>");
    int64_t need = cll_chat_render(&ct, m, 3, true, NULL, 0);
    CHECK(need >= 0);
    char *out = malloc((size_t)need + 1);
    CHECK(cll_chat_render(&ct, m, 3, true, out, need + 1) == need && strlen(out) <= (size_t)need);
    free(out);
    free(msg);
    return 0;
}
