/* tokenizer/cache: a per-call memo of segment text -> token ids. Words repeat a
 * lot in real text and an SPM word segment or a BPE pre-tokenized word always
 * encodes to the same ids, so the merge loop runs once per distinct word. The
 * cache copies its keys and lives for one encode call (all its fragments). */
#include "tokenizer/tok_internal.h"

#define CACHE_MAX_ENTRIES (1u << 16)

void cll_tok_cache_free(tok_cache *c) {
    free(c->slots);
    free(c->ent);
    free(c->pool);
    free(c->kpool);
    memset(c, 0, sizeof *c);
}

static bool grow(tok_cache *c) {
    uint32_t nm = c->mask ? c->mask * 2 + 1 : 1023;
    tok_slot *ns = calloc((size_t)nm + 1, sizeof *ns);
    if (!ns) return false;
    for (uint32_t i = 0; c->slots && i <= c->mask; i++) {
        if (!c->slots[i].val1) continue;
        uint32_t j = c->slots[i].hash & nm;
        while (ns[j].val1) j = (j + 1) & nm;
        ns[j] = c->slots[i];
    }
    free(c->slots);
    c->slots = ns;
    c->mask = nm;
    return true;
}

bool cll_tok_cache_get(const tok_cache *c, const char *s, size_t n, tok_vec *out) {
    if (!c->slots || n > TOK_CACHE_MAX_KEY) return false;
    uint32_t h = cll_tok_hash(s, n, 99);
    for (uint32_t i = h & c->mask;; i = (i + 1) & c->mask) {
        const tok_slot *sl = &c->slots[i];
        if (!sl->val1) return false;
        if (sl->hash != h) continue;
        const tok_cache_ent *e = &c->ent[sl->val1 - 1];
        if (e->len != n || memcmp(c->kpool + e->koff, s, n)) continue;
        for (uint32_t k = 0; k < e->cnt; k++) tok_vec_push(out, c->pool[e->off + k]);
        return true;
    }
}

void cll_tok_cache_put(tok_cache *c, const char *s, size_t n, const int32_t *ids, size_t cnt) {
    if (n > TOK_CACHE_MAX_KEY || c->n >= CACHE_MAX_ENTRIES || c->failed) return;
    if ((c->n + 1) * 2 > (size_t)c->mask + 1 && !grow(c)) { c->failed = true; return; }
    if (c->n == c->cent) {
        size_t nc = c->cent ? c->cent * 2 : 256;
        tok_cache_ent *ne = realloc(c->ent, nc * sizeof *ne);
        if (!ne) { c->failed = true; return; }
        c->ent = ne;
        c->cent = nc;
    }
    if (c->npool + cnt > c->cpool) {
        size_t nc = c->cpool ? c->cpool : 1024;
        while (nc < c->npool + cnt) nc *= 2;
        int32_t *np = realloc(c->pool, nc * sizeof *np);
        if (!np) { c->failed = true; return; }
        c->pool = np;
        c->cpool = nc;
    }
    if (c->nk + n > c->ck) {
        size_t nc = c->ck ? c->ck : 4096;
        while (nc < c->nk + n) nc *= 2;
        char *nk = realloc(c->kpool, nc);
        if (!nk) { c->failed = true; return; }
        c->kpool = nk;
        c->ck = nc;
    }
    memcpy(c->kpool + c->nk, s, n);
    uint32_t h = cll_tok_hash(s, n, 99);
    uint32_t i = h & c->mask;
    while (c->slots[i].val1) i = (i + 1) & c->mask;
    c->ent[c->n] = (tok_cache_ent){(uint32_t)c->nk, (uint32_t)n, (uint32_t)c->npool, (uint32_t)cnt};
    c->nk += n;
    memcpy(c->pool + c->npool, ids, cnt * sizeof *ids);
    c->npool += cnt;
    c->slots[i].hash = h;
    c->slots[i].val1 = ++c->n;
}
