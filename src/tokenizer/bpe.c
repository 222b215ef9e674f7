/* tokenizer/bpe: byte-level BPE on one raw fragment, as llama.cpp's
 * llm_tokenizer_bpe does it: pre-tokenizer split into words, each word's bytes
 * mapped through the GPT-2 byte->unicode table, then within a word the adjacent
 * pair with the lowest merge rank merges first (ties: leftmost) until none is
 * left. A final symbol that is not a token is spelled by its single bytes where
 * the vocab has them (llama.cpp drops the rest). */
#include "tokenizer/tok_internal.h"

typedef struct {
    const char *text;
    uint32_t n;
    int32_t prev, next;
} bpe_sym;

typedef struct {
    int32_t rank, left, right;
    uint32_t size;
} bpe_bigram;

typedef struct {
    bpe_sym *sym;
    size_t nsym, csym;
    bpe_bigram *heap;
    size_t nheap, cheap;
    char *enc;
    size_t cenc;
    bool oom;
} bpe_work;

static bool before(const bpe_bigram *a, const bpe_bigram *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static void heap_push(bpe_work *w, bpe_bigram b) {
    if (w->nheap == w->cheap) {
        size_t nc = w->cheap ? w->cheap * 2 : 64;
        bpe_bigram *nv = realloc(w->heap, nc * sizeof *nv);
        if (!nv) { w->oom = true; return; }
        w->heap = nv;
        w->cheap = nc;
    }
    size_t i = w->nheap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&b, &w->heap[p])) break;
        w->heap[i] = w->heap[p];
        i = p;
    }
    w->heap[i] = b;
}

static bpe_bigram heap_pop(bpe_work *w) {
    bpe_bigram top = w->heap[0], last = w->heap[--w->nheap];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = l;
        if (l >= w->nheap) break;
        if (l + 1 < w->nheap && before(&w->heap[l + 1], &w->heap[l])) m = l + 1;
        if (!before(&w->heap[m], &last)) break;
        w->heap[i] = w->heap[m];
        i = m;
    }
    if (w->nheap) w->heap[i] = last;
    return top;
}

static void add_bigram(const cll_tokenizer *t, bpe_work *w, int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const bpe_sym *a = &w->sym[l], *b = &w->sym[r];
    int32_t rank = cll_tok_merge_rank(t, a->text, a->n, b->text, b->n);
    if (rank < 0) return;
    bpe_bigram bg = {rank, l, r, a->n + b->n};
    heap_push(w, bg);
}

static void emit_symbol(const cll_tokenizer *t, const char *s, uint32_t n, tok_vec *out) {
    int32_t id = cll_tok_lookup(t, s, n);
    if (id >= 0) { tok_vec_push(out, id); return; }
    for (uint32_t j = 0; j < n; j++) {
        int32_t b = cll_tok_lookup(t, s + j, 1);
        if (b >= 0) tok_vec_push(out, b);
    }
}

/* one pre-tokenized word (raw bytes) */
static void encode_word(const cll_tokenizer *t, bpe_work *w, const char *word, size_t len, tok_vec *out) {
    /* every byte becomes one code point < 0x144: at most 2 UTF-8 bytes */
    if (w->cenc < len * 2 + 1) {
        char *ne = realloc(w->enc, len * 2 + 1);
        if (!ne) { w->oom = true; return; }
        w->enc = ne;
        w->cenc = len * 2 + 1;
    }
    if (w->csym < len + 1) {
        bpe_sym *ns = realloc(w->sym, (len + 1) * sizeof *ns);
        if (!ns) { w->oom = true; return; }
        w->sym = ns;
        w->csym = len + 1;
    }
    size_t el = 0;
    for (size_t i = 0; i < len; i++) el += (size_t)tok_utf8_put(t->byte2cpt[(uint8_t)word[i]], w->enc + el);
    const char *e = w->enc;
    if (t->ignore_merges) {
        int32_t id = cll_tok_lookup(t, e, el);
        if (id >= 0) { tok_vec_push(out, id); return; }
    }
    int32_t ns = 0;
    for (size_t off = 0; off < el;) {
        size_t cl = tok_utf8_len((uint8_t)e[off]);
        if (cl > el - off) cl = el - off;
        w->sym[ns] = (bpe_sym){e + off, (uint32_t)cl, ns - 1, 0};
        off += cl;
        w->sym[ns].next = off == el ? -1 : ns + 1;
        ns++;
    }
    w->nheap = 0;
    for (int32_t i = 1; i < ns; i++) add_bigram(t, w, i - 1, i);
    while (w->nheap > 0) {
        bpe_bigram b = heap_pop(w);
        bpe_sym *l = &w->sym[b.left], *r = &w->sym[b.right];
        /* stale: a side merged since this pair was queued */
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size) continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) w->sym[r->next].prev = b.left;
        add_bigram(t, w, l->prev, b.left);
        add_bigram(t, w, b.left, l->next);
    }
    for (int32_t i = 0; i < ns; i++)
        if (w->sym[i].n) emit_symbol(t, w->sym[i].text, w->sym[i].n, out);
}

cll_status cll_tok_bpe_encode(const cll_tokenizer *t, const char *text, size_t len, tok_cache *cache, tok_vec *out) {
    tok_words words;
    cll_status st = cll_tok_pretok_split(t, text, len, &words);
    if (st) { cll_tok_words_free(&words); return st; }
    bpe_work w = {0};
    size_t off = 0;
    for (size_t i = 0; i < words.n && !w.oom; i++) {
        const char *wd = words.norm + off;
        size_t wl = words.len[i];
        if (wl && !cll_tok_cache_get(cache, wd, wl, out)) {
            size_t before = out->n;
            encode_word(t, &w, wd, wl, out);
            if (!out->oom) cll_tok_cache_put(cache, wd, wl, out->v + before, out->n - before);
        }
        off += words.len[i];
    }
    if (w.oom) st = cll_err(CLL_ERR_NOMEM, "tokenize: BPE work buffers");
    free(w.sym);
    free(w.heap);
    free(w.enc);
    cll_tok_words_free(&words);
    return st;
}
