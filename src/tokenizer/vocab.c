/* tokenizer/vocab: load the vocabulary from GGUF metadata (tokens, scores, types,
 * merges, special ids, flags) and build the lookup tables. The defaults and the
 * special-token detection follow llama.cpp's llama_vocab::load so ids agree. */
#include "tokenizer/tok_internal.h"

#include <ctype.h>
#include <stdio.h>

uint32_t cll_tok_hash(const void *p, size_t n, uint32_t seed) {
    const uint8_t *s = p;
    uint64_t h = (uint64_t)seed * 0x9E3779B97F4A7C15ull ^ ((uint64_t)n * 0xC2B2AE3D27D4EB4Full);
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, s, 8);
        h = (h ^ v) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
        s += 8;
        n -= 8;
    }
    uint64_t v = 0;
    memcpy(&v, s, n);
    h = (h ^ v) * 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 29;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 32;
    return (uint32_t)h;
}

static uint32_t pow2_at_least(uint64_t n) {
    uint32_t c = 16;
    while (c < n * 2 && c < (1u << 30)) c <<= 1;
    return c;
}

int32_t cll_tok_lookup(const cll_tokenizer *t, const char *s, size_t n) {
    uint32_t h = cll_tok_hash(s, n, 0);
    for (uint32_t i = h & t->tt_mask;; i = (i + 1) & t->tt_mask) {
        const tok_slot *sl = &t->tt[i];
        if (!sl->val1) return -1;
        if (sl->hash == h) {
            const tok_entry *e = &t->tok[sl->val1 - 1];
            if (e->len == n && memcmp(e->text, s, n) == 0) return (int32_t)sl->val1 - 1;
        }
    }
}

static uint32_t merge_hash(const char *l, size_t ll, const char *r, size_t rl) {
    return cll_tok_hash(r, rl, cll_tok_hash(l, ll, 0x5bd1e995u));
}

int32_t cll_tok_merge_rank(const cll_tokenizer *t, const char *l, size_t ll, const char *r, size_t rl) {
    if (!t->mt) return -1;
    uint32_t h = merge_hash(l, ll, r, rl);
    for (uint32_t i = h & t->mt_mask;; i = (i + 1) & t->mt_mask) {
        const tok_slot *sl = &t->mt[i];
        if (!sl->val1) return -1;
        if (sl->hash == h) {
            const tok_merge *m = &t->merges[sl->val1 - 1];
            if (m->ll == ll && m->rl == rl && memcmp(m->l, l, ll) == 0 && memcmp(m->r, r, rl) == 0)
                return m->rank;
        }
    }
}

/* token texts: a later duplicate text wins, as in llama.cpp's token_to_id[word] = i */
static cll_status build_text_table(cll_tokenizer *t) {
    t->tt_mask = pow2_at_least((uint64_t)t->n_vocab) - 1;
    t->tt = calloc((size_t)t->tt_mask + 1, sizeof *t->tt);
    if (!t->tt) return cll_err(CLL_ERR_NOMEM, "tokenizer: token table");
    for (int32_t id = 0; id < t->n_vocab; id++) {
        const tok_entry *e = &t->tok[id];
        uint32_t h = cll_tok_hash(e->text, e->len, 0);
        for (uint32_t i = h & t->tt_mask;; i = (i + 1) & t->tt_mask) {
            tok_slot *sl = &t->tt[i];
            if (!sl->val1) { sl->hash = h; sl->val1 = (uint32_t)id + 1; break; }
            const tok_entry *o = &t->tok[sl->val1 - 1];
            if (sl->hash == h && o->len == e->len && memcmp(o->text, e->text, e->len) == 0) {
                sl->val1 = (uint32_t)id + 1;
                break;
            }
        }
    }
    return CLL_OK;
}

/* merges "left right", split at the first space after byte 0; the first rank of a
 * duplicated pair wins (llama.cpp emplaces) */
static cll_status load_merges(cll_tokenizer *t, const cll_gguf *g) {
    const cll_gguf_kv *kv;
    if (!cll_gguf_get_arr(g, "tokenizer.ggml.merges", &kv) || kv->arr_type != CLL_GGUF_STRING)
        return cll_err(CLL_ERR_FORMAT, "tokenizer: BPE vocab without tokenizer.ggml.merges");
    if (kv->arr_n > INT32_MAX) return cll_err(CLL_ERR_FORMAT, "tokenizer: too many merges");
    t->merges = calloc(kv->arr_n ? kv->arr_n : 1, sizeof *t->merges);
    t->mt_mask = pow2_at_least(kv->arr_n) - 1;
    t->mt = calloc((size_t)t->mt_mask + 1, sizeof *t->mt);
    if (!t->merges || !t->mt) return cll_err(CLL_ERR_NOMEM, "tokenizer: merges");
    int32_t n = 0;
    for (uint64_t i = 0; i < kv->arr_n; i++) {
        cll_str s = cll_gguf_arr_str(g, kv, i);
        const char *sp = s.len > 1 ? memchr(s.ptr + 1, ' ', s.len - 1) : NULL;
        if (!sp) return cll_err(CLL_ERR_FORMAT, "tokenizer: merge %llu has no space", (unsigned long long)i);
        /* the rank is the merge's index in the file, duplicates counted */
        tok_merge m = {s.ptr, sp + 1, (uint32_t)(sp - s.ptr), (uint32_t)(s.len - (uint64_t)(sp - s.ptr) - 1), (int32_t)i};
        uint32_t h = merge_hash(m.l, m.ll, m.r, m.rl);
        for (uint32_t j = h & t->mt_mask;; j = (j + 1) & t->mt_mask) {
            tok_slot *sl = &t->mt[j];
            if (!sl->val1) {
                t->merges[n] = m;
                sl->hash = h;
                sl->val1 = (uint32_t)n + 1;
                n++;
                break;
            }
            const tok_merge *o = &t->merges[sl->val1 - 1];
            if (sl->hash == h && o->ll == m.ll && o->rl == m.rl && !memcmp(o->l, m.l, m.ll) && !memcmp(o->r, m.r, m.rl))
                break;
        }
    }
    t->n_merges = n;
    return CLL_OK;
}

static bool text_is(const tok_entry *e, const char *s) {
    size_t n = strlen(s);
    return e->len == n && memcmp(e->text, s, n) == 0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int32_t trie_child(const cll_tokenizer *t, int32_t node, uint8_t c) {
    uint64_t key = (uint64_t)node * 256 + c + 1;
    uint32_t h = cll_tok_hash(&key, sizeof key, 7);
    for (uint32_t i = h & t->te_mask;; i = (i + 1) & t->te_mask) {
        if (!t->te_key[i]) return -1;
        if (t->te_key[i] == key) return t->te_child[i];
    }
}

int32_t cll_tok_trie_child(const cll_tokenizer *t, int32_t node, uint8_t c) { return trie_child(t, node, c); }

/* the special-token cache (control, user-defined, unknown; longest first) and its trie */
static cll_status build_specials(cll_tokenizer *t) {
    int32_t n = 0;
    uint64_t total = 1;
    uint64_t *keys = malloc(((size_t)t->n_vocab + 1) * sizeof *keys);
    t->spec_rank = malloc((size_t)t->n_vocab * sizeof *t->spec_rank);
    t->specials = malloc(((size_t)t->n_vocab + 1) * sizeof *t->specials);
    if (!keys || !t->spec_rank || !t->specials) {
        free(keys);
        return cll_err(CLL_ERR_NOMEM, "tokenizer: specials");
    }
    for (int32_t id = 0; id < t->n_vocab; id++) {
        t->spec_rank[id] = -1;
        const tok_entry *e = &t->tok[id];
        if ((e->attr & (TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED | TOK_ATTR_UNKNOWN)) && e->len > 0) {
            /* priority: longer text first, then lower id (llama.cpp's sort leaves ties unspecified) */
            keys[n++] = ((uint64_t)(UINT32_MAX - e->len) << 32) | (uint32_t)id;
            total += e->len;
        }
    }
    qsort(keys, (size_t)n, sizeof *keys, cmp_u64);
    for (int32_t r = 0; r < n; r++) t->specials[r] = (int32_t)(uint32_t)keys[r];
    free(keys);
    t->n_specials = n;
    for (int32_t r = 0; r < n; r++) t->spec_rank[t->specials[r]] = r;

    t->trie_tok = malloc(total * sizeof *t->trie_tok);
    t->te_mask = pow2_at_least(total) - 1;
    t->te_key = calloc((size_t)t->te_mask + 1, sizeof *t->te_key);
    t->te_child = malloc(((size_t)t->te_mask + 1) * sizeof *t->te_child);
    if (!t->trie_tok || !t->te_key || !t->te_child) return cll_err(CLL_ERR_NOMEM, "tokenizer: special trie");
    t->n_nodes = 1;
    t->trie_tok[0] = -1;
    for (int32_t r = 0; r < n; r++) {
        const tok_entry *e = &t->tok[t->specials[r]];
        int32_t node = 0;
        for (uint32_t k = 0; k < e->len; k++) {
            uint8_t c = (uint8_t)e->text[k];
            int32_t ch = trie_child(t, node, c);
            if (ch < 0) {
                ch = t->n_nodes++;
                t->trie_tok[ch] = -1;
                uint64_t key = (uint64_t)node * 256 + c + 1;
                uint32_t h = cll_tok_hash(&key, sizeof key, 7);
                uint32_t i = h & t->te_mask;
                while (t->te_key[i]) i = (i + 1) & t->te_mask;
                t->te_key[i] = key;
                t->te_child[i] = ch;
            }
            node = ch;
        }
        /* equal texts: the one earlier in priority order takes every match */
        if (t->trie_tok[node] < 0) t->trie_tok[node] = t->specials[r];
    }
    return CLL_OK;
}

static void get_id(const cll_gguf *g, const char *key, int32_t n_vocab, int32_t *id) {
    uint64_t v;
    if (!cll_gguf_get_u64(g, key, &v)) {
        int32_t s;
        if (!cll_gguf_get_i32(g, key, &s)) return;
        if (s < 0) return;
        v = (uint64_t)s;
    }
    if (v >= (uint64_t)n_vocab) {
        cll_log(CLL_LOG_DEBUG, "tokenizer: bad special token %s = %llu, keeping %d", key, (unsigned long long)v, *id);
        return;
    }
    *id = (int32_t)v;
}

static bool eog_push(cll_tokenizer *t, int32_t *cap, int32_t id) {
    if (id < 0 || cll_tok_is_eog(t, id)) return true;
    if (t->n_eog == *cap) {
        int32_t *nv = realloc(t->eog, (size_t)*cap * 2 * sizeof *nv);
        if (!nv) return false;
        t->eog = nv;
        *cap *= 2;
    }
    t->eog[t->n_eog++] = id;
    return true;
}

static bool text_in(const tok_entry *e, const char *const *names) {
    for (int k = 0; names[k]; k++)
        if (text_is(e, names[k])) return true;
    return false;
}

/* llama.cpp's special-token auto-detection by text: EOT, EOM, the FIM tokens and the
 * end-of-generation set. Every token found is made CONTROL (OR'ed into its attributes),
 * which also keeps it out of the text unless parse_special. Lists as of llama.cpp b10472. */
static void detect_eog(cll_tokenizer *t) {
#define FW "\xef\xbd\x9c" /* U+FF5C fullwidth vertical bar */
#define SP "\xe2\x96\x81" /* U+2581 */
    static const char *const eot_names[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                            "<|end_of_text|>", "<EOT>", "_<EOT>", "<" FW "end" SP "of" SP "sentence" FW ">",
                                            "<end_of_utterance>", NULL};
    static const char *const eog_names[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
                                            "<|calls|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>",
                                            "<|end_of_text|>", "<end_of_utterance>", "</s>",
                                            "<" FW "end" SP "of" SP "sentence" FW ">", "<eos>", NULL};
    static const char *const fim[6][8] = {
        {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<" FW "fim" SP "begin" FW ">", "<PRE>", SP "<PRE>", "<|code_prefix|>", NULL},
        {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<" FW "fim" SP "hole" FW ">", "<SUF>", SP "<SUF>", "<|code_suffix|>", NULL},
        {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<" FW "fim" SP "end" FW ">", "<MID>", SP "<MID>", "<|code_middle|>", NULL},
        {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", NULL},
        {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", NULL},
        {"<|file_sep|>", "<file_sep>", "<fim-sep>", NULL},
    };
#undef FW
#undef SP
    int32_t fim_id[6] = {-1, -1, -1, -1, -1, -1};
    int32_t cap = 16, end_id = -1;
    bool has_return = false;
    t->eog = malloc((size_t)cap * sizeof *t->eog);
    if (!t->eog) return;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        tok_entry *e = &t->tok[id];
        if (e->len < 4 || e->len > 40) continue;
        if (t->eot < 0 && text_in(e, eot_names)) { t->eot = id; e->attr |= TOK_ATTR_CONTROL; }
        if (t->eom < 0 && text_is(e, "<|eom_id|>")) { t->eom = id; e->attr |= TOK_ATTR_CONTROL; }
        for (int f = 0; f < 6; f++)
            if (fim_id[f] < 0 && text_in(e, fim[f])) { fim_id[f] = id; e->attr |= TOK_ATTR_CONTROL; }
        if (text_in(e, eog_names)) {
            e->attr |= TOK_ATTR_CONTROL;
            if (!eog_push(t, &cap, id)) return;
        }
        if (text_is(e, "<|end|>")) end_id = id;
        if (text_is(e, "<|return|>") || text_is(e, "<|call|>")) has_return = true;
    }
    for (int f = 3; f < 6; f++) eog_push(t, &cap, fim_id[f]); /* pad, repo, file separator end generation */
    eog_push(t, &cap, t->eos);
    eog_push(t, &cap, t->eot);
    eog_push(t, &cap, t->eom);
    /* gpt-oss: <|end|> closes a message mid-conversation when <|return|>/<|call|> exist */
    if (has_return && end_id >= 0) {
        for (int32_t i = 0; i < t->n_eog; i++)
            if (t->eog[i] == end_id) t->eog[i--] = t->eog[--t->n_eog];
        t->tok[end_id].attr = TOK_ATTR_USER_DEFINED;
        if (t->eot == end_id) t->eot = -1;
    }
}

static void set_attr_by_text(cll_tokenizer *t, const char *s, uint16_t bit, bool on) {
    int32_t id = cll_tok_lookup(t, s, strlen(s));
    if (id < 0) return;
    if (on) t->tok[id].attr |= bit;
    else t->tok[id].attr &= (uint16_t)~bit;
}

static uint16_t attr_of_type(int64_t ty) {
    switch (ty) {
    case 1: return TOK_ATTR_NORMAL;
    case 2: return TOK_ATTR_UNKNOWN;
    case 3: return TOK_ATTR_CONTROL;
    case 4: return TOK_ATTR_USER_DEFINED;
    case 5: return TOK_ATTR_UNUSED;
    case 6: return TOK_ATTR_BYTE;
    default: return TOK_ATTR_UNDEFINED;
    }
}

static void init_byte_maps(cll_tokenizer *t) {
    int n = 0;
    for (int i = 0; i < 512; i++) t->cpt2byte[i] = -1;
    for (int b = 0; b < 256; b++) {
        bool keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
        t->byte2cpt[b] = (uint16_t)(keep ? b : 256 + n++);
        t->cpt2byte[t->byte2cpt[b]] = (int16_t)b;
    }
    for (int b = 0; b < 256; b++) {
        static const char hex[] = "0123456789ABCDEF";
        char buf[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
        int32_t id = cll_tok_lookup(t, buf, 6);
        if (id < 0) {
            char c = (char)b;
            id = cll_tok_lookup(t, &c, 1);
        }
        t->byte_tok[b] = id;
    }
}

int cll_tok_boundary_class(const char *s, size_t n) {
    if (n >= 3 && !memcmp(s, "\xe2\x96\x81", 3)) return 1;
    if (n >= 1 && s[0] == '\n') return 2;
    return 0;
}

/* SPM segment boundaries: which symbols ever precede U+2581 or a newline inside one token */
static cll_status build_space_pairs(cll_tokenizer *t) {
    size_t n = 0;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        const tok_entry *e = &t->tok[id];
        for (uint32_t i = 0; i < e->len;) {
            uint32_t cl = (uint32_t)tok_utf8_len((uint8_t)e->text[i]);
            if (cl > e->len - i) cl = e->len - i;
            if (cll_tok_boundary_class(e->text + i + cl, e->len - i - cl)) n++;
            i += cl;
        }
    }
    t->sp_mask = pow2_at_least(n + 1) - 1;
    t->sp_before = calloc((size_t)t->sp_mask + 1, sizeof *t->sp_before);
    if (!t->sp_before) return cll_err(CLL_ERR_NOMEM, "tokenizer: space pairs");
    for (int32_t id = 0; id < t->n_vocab; id++) {
        const tok_entry *e = &t->tok[id];
        for (uint32_t i = 0; i < e->len;) {
            uint32_t cl = (uint32_t)tok_utf8_len((uint8_t)e->text[i]);
            if (cl > e->len - i) cl = e->len - i;
            int cls = cll_tok_boundary_class(e->text + i + cl, e->len - i - cl);
            if (cls) {
                uint32_t v = 0;
                memcpy(&v, e->text + i, cl > 4 ? 4 : cl);
                uint64_t key = ((uint64_t)v + 1) | ((uint64_t)cls << 40);
                uint32_t h = cll_tok_hash(&key, sizeof key, 3);
                uint32_t j = h & t->sp_mask;
                while (t->sp_before[j] && t->sp_before[j] != key) j = (j + 1) & t->sp_mask;
                t->sp_before[j] = key;
            }
            i += cl;
        }
    }
    return CLL_OK;
}

static cll_status load(cll_tokenizer *t, const cll_gguf *g) {
    char model[64] = "", pre[64] = "";
    if (!cll_gguf_get_cstr(g, "tokenizer.ggml.model", model, sizeof model))
        return cll_err(CLL_ERR_FORMAT, "tokenizer: no tokenizer.ggml.model in the file");
    cll_gguf_get_cstr(g, "tokenizer.ggml.pre", pre, sizeof pre);

    const cll_gguf_kv *toks, *scores = NULL, *types = NULL;
    if (!cll_gguf_get_arr(g, "tokenizer.ggml.tokens", &toks) || toks->arr_type != CLL_GGUF_STRING)
        return cll_err(CLL_ERR_FORMAT, "tokenizer: tokenizer.ggml.tokens missing or not a string array");
    if (toks->arr_n == 0 || toks->arr_n > (1u << 24))
        return cll_err(CLL_ERR_FORMAT, "tokenizer: %llu tokens", (unsigned long long)toks->arr_n);
    t->n_vocab = (int32_t)toks->arr_n;
    if (cll_gguf_get_arr(g, "tokenizer.ggml.scores", &scores) &&
        (scores->arr_n != toks->arr_n || (scores->arr_type != CLL_GGUF_F32 && scores->arr_type != CLL_GGUF_F64)))
        return cll_err(CLL_ERR_FORMAT, "tokenizer: tokenizer.ggml.scores does not match the tokens");
    if (cll_gguf_get_arr(g, "tokenizer.ggml.token_type", &types) && types->arr_n != toks->arr_n)
        return cll_err(CLL_ERR_FORMAT, "tokenizer: tokenizer.ggml.token_type does not match the tokens");

    t->tok = calloc((size_t)t->n_vocab, sizeof *t->tok);
    if (!t->tok) return cll_err(CLL_ERR_NOMEM, "tokenizer: %d tokens", t->n_vocab);
    for (int32_t i = 0; i < t->n_vocab; i++) {
        cll_str s = cll_gguf_arr_str(g, toks, (uint64_t)i);
        if (!s.ptr && s.len) return cll_err(CLL_ERR_FORMAT, "tokenizer: token %d unreadable", i);
        if (s.len > (1u << 20)) return cll_err(CLL_ERR_FORMAT, "tokenizer: token %d is %llu bytes", i, (unsigned long long)s.len);
        t->tok[i].text = s.ptr ? s.ptr : "";
        t->tok[i].len = (uint32_t)s.len;
        t->tok[i].score = scores ? cll_gguf_arr_f32(scores, (uint64_t)i) : 0.0f;
        t->tok[i].attr = types ? attr_of_type(cll_gguf_arr_int(types, (uint64_t)i)) : TOK_ATTR_NORMAL;
    }
    cll_status st = build_text_table(t);
    if (st) return st;

    t->bos = t->eos = t->eot = t->eom = t->unk = t->sep = t->pad = t->mask = -1;
    if (!strcmp(model, "llama")) {
        t->kind = CLL_TOK_SPM;
        t->bos = 1; t->eos = 2; t->unk = 0;
        t->add_bos = true; t->add_space_prefix = true;
        snprintf(t->name, sizeof t->name, "spm");
    } else if (!strcmp(model, "gpt2")) {
        t->kind = CLL_TOK_BPE;
        t->bos = 11; t->eos = 11;
        t->clean_spaces = true;
        if ((st = load_merges(t, g))) return st;
        if ((st = cll_tok_pretok_init(t, pre))) return st;
        snprintf(t->name, sizeof t->name, "bpe (%s)", pre[0] ? pre : "default");
    } else {
        return cll_err(CLL_ERR_UNSUPPORTED, "tokenizer: tokenizer.ggml.model '%s' is not supported (spm 'llama' and bpe 'gpt2' are)",
                       model);
    }

    get_id(g, "tokenizer.ggml.bos_token_id", t->n_vocab, &t->bos);
    get_id(g, "tokenizer.ggml.eos_token_id", t->n_vocab, &t->eos);
    get_id(g, "tokenizer.ggml.eot_token_id", t->n_vocab, &t->eot);
    get_id(g, "tokenizer.ggml.eom_token_id", t->n_vocab, &t->eom);
    get_id(g, "tokenizer.ggml.unknown_token_id", t->n_vocab, &t->unk);
    get_id(g, "tokenizer.ggml.seperator_token_id", t->n_vocab, &t->sep);
    get_id(g, "tokenizer.ggml.padding_token_id", t->n_vocab, &t->pad);
    get_id(g, "tokenizer.ggml.mask_token_id", t->n_vocab, &t->mask);
    if (t->pre_no_bos) t->bos = -1;
    bool b;
    if (cll_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &b)) t->add_space_prefix = b;
    if (cll_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b)) t->add_bos = b;
    if (cll_gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &b)) t->add_eos = b;
    if (t->add_bos && t->bos < 0) t->add_bos = false;
    if (t->add_eos && t->eos < 0) t->add_eos = false;

    detect_eog(t);

    if ((st = build_specials(t))) return st;

    /* phi-3: every special token eats the whitespace after it (llama.cpp sets RSTRIP by model name) */
    char gname[128] = "";
    cll_gguf_get_cstr(g, "general.name", gname, sizeof gname);
    for (char *p = gname; *p; p++) *p = (char)tolower((unsigned char)*p);
    if (strstr(gname, "phi-3") || strstr(gname, "phi3")) {
        for (int32_t r = 0; r < t->n_specials; r++) t->tok[t->specials[r]].attr |= TOK_ATTR_RSTRIP;
        set_attr_by_text(t, "</s>", TOK_ATTR_RSTRIP, true);
        set_attr_by_text(t, "<unk>", TOK_ATTR_RSTRIP, false);
        set_attr_by_text(t, "<s>", TOK_ATTR_RSTRIP, false);
        set_attr_by_text(t, "<|endoftext|>", TOK_ATTR_RSTRIP, false);
    }
    init_byte_maps(t);
    if (t->kind == CLL_TOK_SPM && (st = build_space_pairs(t))) return st;
    return CLL_OK;
}

cll_status cll_tok_create(const cll_gguf *g, cll_tokenizer **out) {
    if (!out) return cll_err(CLL_ERR_ARG, "tokenizer: out is NULL");
    *out = NULL;
    if (!g) return cll_err(CLL_ERR_ARG, "tokenizer: gguf is NULL");
    cll_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return cll_err(CLL_ERR_NOMEM, "tokenizer");
    cll_status st = load(t, g);
    if (st) {
        cll_tok_free(t);
        return st;
    }
    *out = t;
    return CLL_OK;
}

void cll_tok_free(cll_tokenizer *t) {
    if (!t) return;
    cll_tok_pretok_free(t->pre);
    free(t->tok);
    free(t->tt);
    free(t->merges);
    free(t->mt);
    free(t->eog);
    free(t->specials);
    free(t->spec_rank);
    free(t->trie_tok);
    free(t->te_key);
    free(t->te_child);
    free(t->sp_before);
    free(t);
}

cll_tok_kind cll_tok_kind_of(const cll_tokenizer *t) { return t->kind; }
const char *cll_tok_kind_name(const cll_tokenizer *t) { return t->name; }
int32_t cll_tok_n_vocab(const cll_tokenizer *t) { return t->n_vocab; }
int32_t cll_tok_bos(const cll_tokenizer *t) { return t->bos; }
int32_t cll_tok_eos(const cll_tokenizer *t) { return t->eos; }
int32_t cll_tok_eot(const cll_tokenizer *t) { return t->eot; }
bool cll_tok_add_bos(const cll_tokenizer *t) { return t->add_bos; }
bool cll_tok_add_eos(const cll_tokenizer *t) { return t->add_eos; }

bool cll_tok_is_eog(const cll_tokenizer *t, int32_t id) {
    if (id < 0) return false;
    for (int32_t i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id) return true;
    return false;
}

bool cll_tok_is_control(const cll_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab && (t->tok[id].attr & TOK_ATTR_CONTROL);
}

cll_str cll_tok_text(const cll_tokenizer *t, int32_t id) {
    cll_str s = {NULL, 0};
    if (id < 0 || id >= t->n_vocab) return s;
    s.ptr = t->tok[id].text;
    s.len = t->tok[id].len;
    return s;
}

int32_t cll_tok_find(const cll_tokenizer *t, const char *text) {
    if (!text) return -1;
    return cll_tok_lookup(t, text, strlen(text));
}
