/* tokenizer/spm: SentencePiece-style encoding of one raw fragment, as llama.cpp's
 * llm_tokenizer_spm does it: spaces become U+2581 (plus one in front when asked),
 * the text starts as one symbol per UTF-8 character, and the adjacent pair whose
 * concatenation is the highest-scoring vocab token merges first (ties: leftmost).
 * What remains unmatched is spelled with byte tokens <0xXX>. */
#include "tokenizer/tok_internal.h"

typedef struct {
    const char *text;
    uint32_t n;
    int32_t prev, next;
} spm_sym;

typedef struct {
    float score;
    int32_t left, right;
    uint32_t size;
} spm_bigram;

/* heap order: higher score first, then smaller left */
static bool before(const spm_bigram *a, const spm_bigram *b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

typedef struct {
    spm_bigram *v;
    size_t n, cap;
    bool oom;
} spm_heap;

static void heap_push(spm_heap *h, spm_bigram b) {
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 64;
        spm_bigram *nv = realloc(h->v, nc * sizeof *nv);
        if (!nv) { h->oom = true; return; }
        h->v = nv;
        h->cap = nc;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&b, &h->v[p])) break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = b;
}

static spm_bigram heap_pop(spm_heap *h) {
    spm_bigram top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = l;
        if (l >= h->n) break;
        if (l + 1 < h->n && before(&h->v[l + 1], &h->v[l])) m = l + 1;
        if (!before(&h->v[m], &last)) break;
        h->v[i] = h->v[m];
        i = m;
    }
    if (h->n) h->v[i] = last;
    return top;
}

static void try_bigram(const cll_tokenizer *t, const spm_sym *sy, spm_heap *h, int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    uint32_t size = sy[l].n + sy[r].n;
    int32_t id = cll_tok_lookup(t, sy[l].text, size);
    if (id < 0) return;
    spm_bigram b = {t->tok[id].score, l, r, size};
    heap_push(h, b);
}

static void emit(const cll_tokenizer *t, const char *s, uint32_t n, tok_vec *out) {
    int32_t id = cll_tok_lookup(t, s, n);
    if (id >= 0) { tok_vec_push(out, id); return; }
    /* no token for this character: its bytes (llama.cpp fails here when a vocab has
     * no byte tokens; we emit <unk> instead) */
    for (uint32_t j = 0; j < n; j++) {
        int32_t b = t->byte_tok[(uint8_t)s[j]];
        if (b < 0) b = t->unk;
        if (b >= 0) tok_vec_push(out, b);
    }
}

static uint32_t pack_sym(const char *s, uint32_t n) {
    uint32_t v = 0;
    memcpy(&v, s, n > 4 ? 4 : n);
    return v;
}

/* Can no token contain symbol x followed by y (U+2581 or a newline)? Then no merge
 * ever crosses the boundary between them, and the two sides encode independently
 * (each side's merges keep their relative order, so the ids are the same). */
static bool boundary_safe(const cll_tokenizer *t, const spm_sym *x, const spm_sym *y) {
    int cls = cll_tok_boundary_class(y->text, y->n);
    if (!t->sp_before || !cls) return false;
    uint64_t key = ((uint64_t)pack_sym(x->text, x->n) + 1) | ((uint64_t)cls << 40);
    uint32_t h = cll_tok_hash(&key, sizeof key, 3);
    for (uint32_t i = h & t->sp_mask;; i = (i + 1) & t->sp_mask) {
        if (!t->sp_before[i]) return true;
        if (t->sp_before[i] == key) return false;
    }
}

/* merge one independent run of symbols sy[a..b) and append its ids */
static void merge_segment(const cll_tokenizer *t, spm_sym *sy, int32_t a, int32_t b, spm_heap *h, tok_vec *out) {
    h->n = 0;
    for (int32_t i = a + 1; i < b; i++) try_bigram(t, sy, h, i - 1, i);
    while (h->n > 0) {
        spm_bigram bg = heap_pop(h);
        spm_sym *l = &sy[bg.left], *r = &sy[bg.right];
        /* stale: one side already merged elsewhere */
        if (l->n == 0 || r->n == 0 || l->n + r->n != bg.size) continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) sy[r->next].prev = bg.left;
        try_bigram(t, sy, h, l->prev, bg.left);
        try_bigram(t, sy, h, bg.left, l->next);
    }
    for (int32_t i = a; i != -1; i = sy[i].next) emit(t, sy[i].text, sy[i].n, out);
}

void cll_tok_spm_encode(const cll_tokenizer *t, const char *text, size_t len, bool prefix_space, tok_cache *cache,
                        tok_vec *out) {
    /* escape: ' ' -> U+2581 (3 bytes) */
    size_t cap = len * 3 + 3;
    char *buf = malloc(cap);
    spm_sym *sy = NULL;
    spm_heap h = {0};
    tok_vec seg = {0};
    if (!buf) { out->oom = true; goto done; }
    size_t n = 0;
    if (prefix_space) { memcpy(buf, "\xe2\x96\x81", 3); n = 3; }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') { memcpy(buf + n, "\xe2\x96\x81", 3); n += 3; }
        else buf[n++] = text[i];
    }
    /* one symbol per escaped byte at most: a truncated lead byte can swallow part of an
     * escaped space and leave its other bytes as one-byte symbols */
    sy = malloc((n + 1) * sizeof *sy);
    if (!sy) { out->oom = true; goto done; }
    int32_t ns = 0;
    for (size_t off = 0; off < n;) {
        size_t cl = tok_utf8_len((uint8_t)buf[off]);
        if (cl > n - off) cl = n - off;
        sy[ns].text = buf + off;
        sy[ns].n = (uint32_t)cl;
        off += cl;
        ns++;
    }
    /* segments: cut in front of a space or newline wherever no token spans the pair */
    for (int32_t a = 0; a < ns;) {
        int32_t b = a + 1;
        while (b < ns && !boundary_safe(t, &sy[b - 1], &sy[b])) b++;
        for (int32_t i = a; i < b; i++) {
            sy[i].prev = i == a ? -1 : i - 1;
            sy[i].next = i + 1 == b ? -1 : i + 1;
        }
        const char *key = sy[a].text;
        size_t klen = (size_t)(sy[b - 1].text + sy[b - 1].n - key);
        if (!cll_tok_cache_get(cache, key, klen, out)) {
            seg.n = 0;
            merge_segment(t, sy, a, b, &h, &seg);
            if (seg.oom) out->oom = true;
            for (size_t k = 0; k < seg.n; k++) tok_vec_push(out, seg.v[k]);
            cll_tok_cache_put(cache, key, klen, seg.v, seg.n);
        }
        a = b;
    }
    if (h.oom) out->oom = true;
done:
    free(seg.v);
    free(h.v);
    free(sy);
    free(buf);
}
