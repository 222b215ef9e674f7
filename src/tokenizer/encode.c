/* tokenizer/encode: cut special tokens out of the raw text, then hand each raw
 * fragment to the SPM or BPE encoder, adding BOS/EOS as the vocab says.
 *
 * The cut follows llama.cpp's tokenizer_st_partition: special tokens are taken in
 * priority order (longer text first); each takes its leftmost non-overlapping
 * occurrences inside text no earlier token took. We get the same answer without
 * scanning the text once per special token: every position's longest eligible
 * match goes into a min-heap keyed (priority, position); a popped candidate that
 * overlaps taken bytes is replaced by that position's next shorter match that
 * still fits. Cost O(n log n) in the text, memory O(n). */
#include "tokenizer/tok_internal.h"

#include <ctype.h>

enum { BYTE_RAW = 0, BYTE_TOKEN = 1, BYTE_DROPPED = 2 };

static bool eligible(const cll_tokenizer *t, int32_t id, bool parse_special) {
    /* control and unknown tokens only when asked; user-defined ones always */
    return parse_special || !(t->tok[id].attr & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN));
}

/* longest eligible special token starting at p with length <= maxlen, -1 if none */
static int32_t longest_at(const cll_tokenizer *t, const uint8_t *s, size_t n, size_t p, size_t maxlen, bool ps) {
    int32_t best = -1, node = 0;
    for (size_t k = 0; p + k < n && k < maxlen; k++) {
        node = cll_tok_trie_child(t, node, s[p + k]);
        if (node < 0) break;
        int32_t id = t->trie_tok[node];
        if (id >= 0 && eligible(t, id, ps)) best = id;
    }
    return best;
}

static void heap_down(uint64_t *h, size_t n, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && h[l] < h[m]) m = l;
        if (l + 1 < n && h[l + 1] < h[m]) m = l + 1;
        if (m == i) return;
        uint64_t x = h[i]; h[i] = h[m]; h[m] = x;
        i = m;
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

#define POS_BITS 40
#define POS_MASK ((1ull << POS_BITS) - 1)

/* Mark the bytes each accepted special token covers (state[]) and list the
 * accepted tokens sorted by position as (pos << 24 | rank). */
static cll_status partition(const cll_tokenizer *t, const uint8_t *s, size_t n, bool ps, uint8_t *state,
                            uint64_t **acc_out, size_t *n_acc_out) {
    *acc_out = NULL;
    *n_acc_out = 0;
    size_t cap = 64, nh = 0;
    uint64_t *heap = malloc(cap * sizeof *heap);
    if (!heap) return cll_err(CLL_ERR_NOMEM, "tokenize: special-token heap");
    for (size_t p = 0; p < n; p++) {
        if (cll_tok_trie_child(t, 0, s[p]) < 0) continue;
        int32_t id = longest_at(t, s, n, p, SIZE_MAX, ps);
        if (id < 0) continue;
        if (nh == cap) {
            uint64_t *nhp = realloc(heap, cap * 2 * sizeof *nhp);
            if (!nhp) { free(heap); return cll_err(CLL_ERR_NOMEM, "tokenize: special-token heap"); }
            heap = nhp;
            cap *= 2;
        }
        heap[nh++] = ((uint64_t)t->spec_rank[id] << POS_BITS) | p;
    }
    if (nh == 0) { free(heap); return CLL_OK; }
    for (size_t i = nh / 2; i-- > 0;) heap_down(heap, nh, i);

    size_t nacc = 0, acap = 64;
    uint64_t *acc = malloc(acap * sizeof *acc);
    if (!acc) { free(heap); return cll_err(CLL_ERR_NOMEM, "tokenize: special tokens"); }
    while (nh > 0) {
        uint64_t top = heap[0];
        size_t p = (size_t)(top & POS_MASK);
        int32_t rank = (int32_t)(top >> POS_BITS);
        const tok_entry *e = &t->tok[t->specials[rank]];
        size_t free_len = 0;
        while (free_len < e->len && p + free_len < n && state[p + free_len] == BYTE_RAW) free_len++;
        if (free_len == e->len) {
            memset(state + p, BYTE_TOKEN, e->len);
            if (nacc == acap) {
                uint64_t *na = realloc(acc, acap * 2 * sizeof *na);
                if (!na) { free(heap); free(acc); return cll_err(CLL_ERR_NOMEM, "tokenize: special tokens"); }
                acc = na;
                acap *= 2;
            }
            acc[nacc++] = ((uint64_t)p << 24) | (uint64_t)rank;
            /* lstrip/rstrip: the whitespace beside the token within its raw fragment vanishes */
            if (e->attr & TOK_ATTR_LSTRIP)
                for (size_t q = p; q > 0 && state[q - 1] == BYTE_RAW && isspace(s[q - 1]); q--) state[q - 1] = BYTE_DROPPED;
            if (e->attr & TOK_ATTR_RSTRIP)
                for (size_t q = p + e->len; q < n && state[q] == BYTE_RAW && isspace(s[q]); q++) state[q] = BYTE_DROPPED;
        }
        /* this position's next candidate: a shorter match that still fits, if any */
        int32_t next = -1;
        if (free_len > 0 && free_len < e->len) next = longest_at(t, s, n, p, free_len, ps);
        if (next >= 0) {
            heap[0] = ((uint64_t)t->spec_rank[next] << POS_BITS) | p;
            heap_down(heap, nh, 0);
        } else {
            heap[0] = heap[--nh];
            heap_down(heap, nh, 0);
        }
    }
    free(heap);
    qsort(acc, nacc, sizeof *acc, cmp_u64);
    *acc_out = acc;
    *n_acc_out = nacc;
    return CLL_OK;
}

static cll_status encode_fragment(const cll_tokenizer *t, const char *text, size_t len, bool prev_special,
                                  tok_cache *cache, tok_vec *v) {
    if (t->kind == CLL_TOK_SPM) {
        cll_tok_spm_encode(t, text, len, t->add_space_prefix && prev_special, cache, v);
        return CLL_OK;
    }
    return cll_tok_bpe_encode(t, text, len, cache, v);
}

cll_status cll_tok_encode(const cll_tokenizer *t, const char *text, size_t len, bool add_special, bool parse_special,
                          int32_t *out, int32_t cap, int32_t *n_out) {
    if (n_out) *n_out = 0;
    if (!t || (!text && len) || cap < 0 || (!out && cap > 0)) return cll_err(CLL_ERR_ARG, "tokenize: bad arguments");
    if (len > POS_MASK) return cll_err(CLL_ERR_RANGE, "tokenize: text of %zu bytes is too long", len);
    tok_vec v = {0};
    tok_cache cache = {0};
    cll_status st = CLL_OK;
    if (add_special && t->add_bos) tok_vec_push(&v, t->bos);

    uint8_t *state = NULL;
    uint64_t *acc = NULL;
    size_t nacc = 0;
    if (len && t->n_specials) {
        state = calloc(len, 1);
        if (!state) { free(v.v); return cll_err(CLL_ERR_NOMEM, "tokenize: %zu bytes", len); }
        st = partition(t, (const uint8_t *)text, len, parse_special, state, &acc, &nacc);
    }
    /* SPM puts its space prefix only before a fragment that follows BOS or a special */
    bool prev_special = true;
    size_t pos = 0, ai = 0;
    while (st == CLL_OK && pos < len) {
        if (ai < nacc && (size_t)(acc[ai] >> 24) == pos) {
            int32_t id = t->specials[acc[ai] & 0xFFFFFF];
            tok_vec_push(&v, id);
            pos += t->tok[id].len;
            ai++;
            prev_special = true;
            continue;
        }
        if (state && state[pos] == BYTE_DROPPED) { pos++; continue; }
        size_t end = pos;
        while (end < len && (!state || state[end] == BYTE_RAW)) end++;
        st = encode_fragment(t, text + pos, end - pos, prev_special, &cache, &v);
        prev_special = false;
        pos = end;
    }
    free(state);
    free(acc);
    cll_tok_cache_free(&cache);
    if (st == CLL_OK && add_special && t->add_eos) tok_vec_push(&v, t->eos);
    if (st == CLL_OK && v.oom) st = cll_err(CLL_ERR_NOMEM, "tokenize: token buffer");
    if (st == CLL_OK && v.n > INT32_MAX) st = cll_err(CLL_ERR_RANGE, "tokenize: %zu tokens exceed int32", v.n);
    if (st == CLL_OK) {
        if (n_out) *n_out = (int32_t)v.n;
        size_t ncopy = v.n < (size_t)cap ? v.n : (size_t)cap;
        if (ncopy) memcpy(out, v.v, ncopy * sizeof *out);
        if (v.n > (size_t)cap) st = cll_err(CLL_ERR_RANGE, "tokenize: %zu tokens do not fit in %d", v.n, cap);
    }
    free(v.v);
    return st;
}
