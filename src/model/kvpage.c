/* model/kvpage: the paged KV bookkeeping (kvpage.h).
 * Owns: the block arrays, the per-sequence tables, the chain-hash index (open addressing,
 * 2 x n_blocks slots, tombstones on removal) and the LRU list of cached blocks (doubly linked
 * through the block arrays). Rule: every mutation keeps free + cached + live == n_blocks. */
#include "model/kvpage.h"

#include <stdlib.h>
#include <string.h>

enum { BLK_FREE = 0, BLK_LIVE = 1, BLK_CACHED = 2 };

typedef struct {
    int32_t *table; /* max_blocks */
    int32_t n_blocks, n_cells, committed;
} kv_seq;

struct cll_kvpage {
    int32_t n_blocks, B, max_seqs, max_blocks;
    int32_t *ref, *state, *next_free;
    uint64_t *hash;         /* chain hash of a full block (0: not full yet) */
    uint8_t *findable;      /* in the index (a full block with no findable twin) */
    int32_t *tokens;        /* n_blocks x B: the tokens a block holds */
    int32_t *lru_prev, *lru_next;
    int32_t lru_head, lru_tail; /* head = least recently released */
    int32_t free_head, n_free, n_cached, n_live;
    int32_t *index;         /* hash slots: block id, -1 empty, -2 tombstone */
    int32_t n_index;
    kv_seq *seqs;
    int64_t evictions, reused;
};

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

/* chain hash of the block holding tokens t[0, B) after the chain prev */
static uint64_t chain(uint64_t prev, const int32_t *t, int32_t B) {
    uint64_t h = mix(prev ^ 0xcbf29ce484222325ull, (uint64_t)B);
    for (int32_t i = 0; i < B; i++) h = mix(h, (uint64_t)(uint32_t)t[i]);
    return h ? h : 1; /* 0 means "no hash" */
}

static int32_t slot_of(const cll_kvpage *p, uint64_t h) { return (int32_t)(h % (uint64_t)p->n_index); }

static void index_put(cll_kvpage *p, int32_t b) {
    int32_t s = slot_of(p, p->hash[b]);
    while (p->index[s] >= 0) s = (s + 1) % p->n_index;
    p->index[s] = b;
}

static void index_del(cll_kvpage *p, int32_t b) {
    int32_t s = slot_of(p, p->hash[b]);
    for (int32_t k = 0; k < p->n_index && p->index[s] != -1; k++, s = (s + 1) % p->n_index)
        if (p->index[s] == b) {
            p->index[s] = -2;
            return;
        }
}

/* a findable block with chain hash h after prev holding tokens t (compared), or -1 */
static int32_t index_find(const cll_kvpage *p, uint64_t h, const int32_t *t) {
    int32_t s = slot_of(p, h);
    for (int32_t k = 0; k < p->n_index && p->index[s] != -1; k++, s = (s + 1) % p->n_index) {
        const int32_t b = p->index[s];
        if (b >= 0 && p->findable[b] && p->hash[b] == h && !memcmp(p->tokens + (size_t)b * p->B, t, sizeof(int32_t) * (size_t)p->B)) return b;
    }
    return -1;
}

static void lru_unlink(cll_kvpage *p, int32_t b) {
    const int32_t pr = p->lru_prev[b], nx = p->lru_next[b];
    if (pr >= 0) p->lru_next[pr] = nx;
    else p->lru_head = nx;
    if (nx >= 0) p->lru_prev[nx] = pr;
    else p->lru_tail = pr;
    p->lru_prev[b] = p->lru_next[b] = -1;
}

static void lru_push(cll_kvpage *p, int32_t b) { /* most recently released at the tail */
    p->lru_prev[b] = p->lru_tail;
    p->lru_next[b] = -1;
    if (p->lru_tail >= 0) p->lru_next[p->lru_tail] = b;
    else p->lru_head = b;
    p->lru_tail = b;
}

cll_status cll_kvpage_create(int32_t n_blocks, int32_t block_cells, int32_t max_seqs, int32_t max_cells,
                             cll_kvpage **out) {
    *out = NULL;
    if (n_blocks < 1 || block_cells < 1 || max_seqs < 1 || max_cells < 1)
        return cll_err(CLL_ERR_ARG, "kv pages: %d blocks of %d cells for %d sequences of %d cells: all must be positive",
                       n_blocks, block_cells, max_seqs, max_cells);
    cll_kvpage *p = (cll_kvpage *)calloc(1, sizeof *p);
    if (!p) return cll_err(CLL_ERR_NOMEM, "kv pages: out of memory");
    p->n_blocks = n_blocks;
    p->B = block_cells;
    p->max_seqs = max_seqs;
    p->max_blocks = (max_cells + block_cells - 1) / block_cells;
    p->n_index = 2 * n_blocks + 1;
    const size_t nb = (size_t)n_blocks;
    p->ref = (int32_t *)calloc(nb, sizeof(int32_t));
    p->state = (int32_t *)calloc(nb, sizeof(int32_t));
    p->next_free = (int32_t *)calloc(nb, sizeof(int32_t));
    p->hash = (uint64_t *)calloc(nb, sizeof(uint64_t));
    p->findable = (uint8_t *)calloc(nb, 1);
    p->tokens = (int32_t *)calloc(nb * (size_t)block_cells, sizeof(int32_t));
    p->lru_prev = (int32_t *)calloc(nb, sizeof(int32_t));
    p->lru_next = (int32_t *)calloc(nb, sizeof(int32_t));
    p->index = (int32_t *)malloc(sizeof(int32_t) * (size_t)p->n_index);
    p->seqs = (kv_seq *)calloc((size_t)max_seqs, sizeof(kv_seq));
    bool ok = p->ref && p->state && p->next_free && p->hash && p->findable && p->tokens && p->lru_prev && p->lru_next && p->index && p->seqs;
    for (int32_t s = 0; ok && s < max_seqs; s++) ok = (p->seqs[s].table = (int32_t *)calloc((size_t)p->max_blocks, sizeof(int32_t))) != NULL;
    if (!ok) {
        cll_kvpage_free(p);
        return cll_err(CLL_ERR_NOMEM, "kv pages: out of memory");
    }
    for (int32_t i = 0; i < p->n_index; i++) p->index[i] = -1;
    for (int32_t b = 0; b < n_blocks; b++) {
        p->next_free[b] = b + 1 < n_blocks ? b + 1 : -1;
        p->lru_prev[b] = p->lru_next[b] = -1;
    }
    p->free_head = 0;
    p->n_free = n_blocks;
    p->lru_head = p->lru_tail = -1;
    *out = p;
    return CLL_OK;
}

void cll_kvpage_free(cll_kvpage *p) {
    if (!p) return;
    for (int32_t s = 0; p->seqs && s < p->max_seqs; s++) free(p->seqs[s].table);
    free(p->seqs);
    free(p->ref);
    free(p->state);
    free(p->next_free);
    free(p->hash);
    free(p->findable);
    free(p->tokens);
    free(p->lru_prev);
    free(p->lru_next);
    free(p->index);
    free(p);
}

/* a block for writing: from the free list, else the least recently released cached one */
static int32_t take_block(cll_kvpage *p) {
    int32_t b = -1;
    if (p->free_head >= 0) {
        b = p->free_head;
        p->free_head = p->next_free[b];
        p->n_free--;
    } else if (p->lru_head >= 0) {
        b = p->lru_head;
        lru_unlink(p, b);
        index_del(p, b);
        p->findable[b] = 0;
        p->n_cached--;
        p->evictions++;
    } else {
        return -1;
    }
    p->state[b] = BLK_LIVE;
    p->ref[b] = 1;
    p->hash[b] = 0;
    p->n_live++;
    return b;
}

static void drop_ref(cll_kvpage *p, int32_t b) {
    if (--p->ref[b] > 0) return;
    p->n_live--;
    if (p->findable[b]) { /* full and findable: stays cached */
        p->state[b] = BLK_CACHED;
        lru_push(p, b);
        p->n_cached++;
    } else {
        p->state[b] = BLK_FREE;
        p->next_free[b] = p->free_head;
        p->free_head = b;
        p->n_free++;
    }
}

static bool seq_ok(const cll_kvpage *p, int32_t seq) { return p && seq >= 0 && seq < p->max_seqs; }

cll_status cll_kvpage_reserve(cll_kvpage *p, int32_t seq, int32_t n_cells) {
    if (!seq_ok(p, seq) || n_cells < 0) return cll_err(CLL_ERR_ARG, "kv pages: bad sequence %d or cell count %d", seq, n_cells);
    kv_seq *s = &p->seqs[seq];
    const int32_t need = (n_cells + p->B - 1) / p->B;
    if (need > p->max_blocks)
        return cll_err(CLL_ERR_RANGE, "kv pages: sequence %d: %d cells are over the context (%d)", seq, n_cells,
                       p->max_blocks * p->B);
    const int32_t more = need - s->n_blocks;
    if (more <= 0) {
        if (n_cells > s->n_cells) s->n_cells = n_cells;
        return CLL_OK;
    }
    if (more > p->n_free + p->n_cached)
        return cll_err(CLL_ERR_KV_FULL,
                       "kv pages full: sequence %d needs %d more block(s) of %d cells; %d of %d blocks are in use by live "
                       "sequences",
                       seq, more, p->B, p->n_live, p->n_blocks);
    for (int32_t i = 0; i < more; i++) s->table[s->n_blocks++] = take_block(p);
    s->n_cells = n_cells;
    return CLL_OK;
}

cll_status cll_kvpage_commit(cll_kvpage *p, int32_t seq, const int32_t *tokens, int32_t n) {
    if (!seq_ok(p, seq) || n < 0 || (n && !tokens)) return cll_err(CLL_ERR_ARG, "kv pages: bad commit");
    kv_seq *s = &p->seqs[seq];
    if (s->committed + n > s->n_cells)
        return cll_err(CLL_ERR_RANGE, "kv pages: sequence %d: committing cells %d..%d past its %d reserved", seq,
                       s->committed, s->committed + n, s->n_cells);
    for (int32_t i = 0; i < n; i++) {
        const int32_t pos = s->committed + i, bi = pos / p->B, b = s->table[bi];
        p->tokens[(size_t)b * p->B + pos % p->B] = tokens[i];
        if (pos % p->B == p->B - 1) { /* the block is full: hash it and make it findable */
            const uint64_t prev = bi > 0 ? p->hash[s->table[bi - 1]] : 0;
            const uint64_t h = chain(prev, p->tokens + (size_t)b * p->B, p->B);
            p->hash[b] = h; /* the chain goes on through this block either way */
            if (index_find(p, h, p->tokens + (size_t)b * p->B) < 0) {
                p->findable[b] = 1;
                index_put(p, b);
            } /* else a twin is findable already: this copy stays private, freed on release */
        }
    }
    s->committed += n;
    return CLL_OK;
}

int32_t cll_kvpage_adopt(cll_kvpage *p, int32_t seq, const int32_t *tokens, int32_t n) {
    if (!seq_ok(p, seq) || !tokens || n < 2) return 0;
    kv_seq *s = &p->seqs[seq];
    if (s->n_blocks || s->n_cells) return 0; /* only an empty sequence adopts */
    uint64_t prev = 0;
    int32_t got = 0;
    while ((got + 1) * p->B <= n - 1 && s->n_blocks < p->max_blocks) {
        const int32_t *t = tokens + (size_t)got * p->B;
        const uint64_t h = chain(prev, t, p->B);
        const int32_t b = index_find(p, h, t);
        if (b < 0) break;
        if (p->state[b] == BLK_CACHED) {
            lru_unlink(p, b);
            p->n_cached--;
            p->state[b] = BLK_LIVE;
            p->n_live++;
            p->ref[b] = 0;
        }
        p->ref[b]++;
        s->table[s->n_blocks++] = b;
        prev = h;
        got++;
        p->reused++;
    }
    s->n_cells = s->committed = got * p->B;
    return got * p->B;
}

int32_t cll_kvpage_probe(const cll_kvpage *p, const int32_t *tokens, int32_t n) {
    if (!p || !tokens || n < 2) return 0;
    uint64_t prev = 0;
    int32_t got = 0;
    while ((got + 1) * p->B <= n - 1 && got < p->max_blocks) {
        const int32_t *t = tokens + (size_t)got * p->B;
        const uint64_t h = chain(prev, t, p->B);
        if (index_find(p, h, t) < 0) break;
        prev = h;
        got++;
    }
    return got * p->B;
}

void cll_kvpage_release(cll_kvpage *p, int32_t seq) {
    if (!seq_ok(p, seq)) return;
    kv_seq *s = &p->seqs[seq];
    for (int32_t i = s->n_blocks - 1; i >= 0; i--) drop_ref(p, s->table[i]); /* the prefix ends up most recent */
    s->n_blocks = s->n_cells = s->committed = 0;
}

int32_t cll_kvpage_truncate(cll_kvpage *p, int32_t seq, int32_t n_cells) {
    if (!seq_ok(p, seq)) return 0;
    kv_seq *s = &p->seqs[seq];
    if (n_cells < 0) n_cells = 0;
    if (n_cells >= s->n_cells) return s->n_cells;
    int32_t keep = (n_cells + p->B - 1) / p->B;
    if (n_cells % p->B && keep > 0) {
        /* the block the sequence goes on writing in: private and unhashed, or it is given up too */
        const int32_t b = s->table[keep - 1];
        if (p->ref[b] > 1) {
            keep--;
            n_cells = keep * p->B;
        } else if (p->findable[b]) {
            index_del(p, b);
            p->findable[b] = 0;
            p->hash[b] = 0;
        } else {
            p->hash[b] = 0;
        }
    }
    while (s->n_blocks > keep) drop_ref(p, s->table[--s->n_blocks]);
    s->n_cells = n_cells;
    if (s->committed > n_cells) s->committed = n_cells;
    return n_cells;
}

int32_t cll_kvpage_n_cells(const cll_kvpage *p, int32_t seq) { return seq_ok(p, seq) ? p->seqs[seq].n_cells : 0; }
int32_t cll_kvpage_committed(const cll_kvpage *p, int32_t seq) { return seq_ok(p, seq) ? p->seqs[seq].committed : 0; }

const int32_t *cll_kvpage_table(const cll_kvpage *p, int32_t seq, int32_t *n_blocks) {
    if (!seq_ok(p, seq)) {
        if (n_blocks) *n_blocks = 0;
        return NULL;
    }
    if (n_blocks) *n_blocks = p->seqs[seq].n_blocks;
    return p->seqs[seq].table;
}

int64_t cll_kvpage_cell(const cll_kvpage *p, int32_t seq, int32_t pos) {
    if (!seq_ok(p, seq) || pos < 0 || pos >= p->seqs[seq].n_cells) return -1;
    return (int64_t)p->seqs[seq].table[pos / p->B] * p->B + pos % p->B;
}

void cll_kvpage_get_stats(const cll_kvpage *p, cll_kvpage_stats *st) {
    memset(st, 0, sizeof *st);
    if (!p) return;
    st->n_blocks = p->n_blocks;
    st->block_cells = p->B;
    st->free_blocks = p->n_free;
    st->cached_blocks = p->n_cached;
    st->live_blocks = p->n_live;
    st->evictions = p->evictions;
    st->reused_blocks = p->reused;
}
