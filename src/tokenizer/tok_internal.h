/* tokenizer internals: the vocabulary struct shared by vocab.c (load), encode.c
 * (special-token partition), spm.c, bpe.c, pretok.c (regex splits) and decode.c.
 * Owns the hash tables, the special-token trie and the compiled split regexes.
 * Rule: nothing outside src/tokenizer includes this header. */
#ifndef CLL_TOK_INTERNAL_H
#define CLL_TOK_INTERNAL_H

#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

/* token attributes, same meaning as llama.cpp's llama_token_attr bits */
enum {
    TOK_ATTR_UNDEFINED = 0,
    TOK_ATTR_UNKNOWN = 1 << 0,
    TOK_ATTR_UNUSED = 1 << 1,
    TOK_ATTR_NORMAL = 1 << 2,
    TOK_ATTR_CONTROL = 1 << 3,
    TOK_ATTR_USER_DEFINED = 1 << 4,
    TOK_ATTR_BYTE = 1 << 5,
    TOK_ATTR_LSTRIP = 1 << 7,
    TOK_ATTR_RSTRIP = 1 << 8,
};

typedef struct {
    const char *text; /* into the GGUF map, not NUL-terminated */
    uint32_t len;
    float score;
    uint16_t attr;
} tok_entry;

/* one BPE merge "left right": both halves point into the GGUF map */
typedef struct {
    const char *l, *r;
    uint32_t ll, rl;
    int32_t rank;
} tok_merge;

/* open-addressing slot: hash (upper bits) + value+1 (0 = empty) */
typedef struct {
    uint32_t hash;
    uint32_t val1;
} tok_slot;

typedef struct tok_pretok tok_pretok; /* pretok.c: compiled split regexes */

struct cll_tokenizer {
    cll_tok_kind kind;
    char name[64];              /* "spm", "bpe (llama-bpe)" */
    int32_t n_vocab;
    tok_entry *tok;             /* (n_vocab) */

    tok_slot *tt;               /* token text -> id, (tt_mask + 1) slots */
    uint32_t tt_mask;
    tok_merge *merges;          /* (n_merges) */
    int32_t n_merges;
    tok_slot *mt;               /* merge pair -> rank */
    uint32_t mt_mask;

    int32_t bos, eos, eot, eom, unk, sep, pad, mask;
    bool add_bos, add_eos, add_space_prefix, clean_spaces, ignore_merges;
    bool pre_no_bos;            /* chatglm pre-tokenizers have no BOS */
    int32_t *eog;               /* end-of-generation ids */
    int32_t n_eog;

    int32_t byte_tok[256];
    /* SPM: set of (symbol x, class of y) such that some token holds x then y, y being
     * U+2581 (class 1) or '\n' (class 2); key = (packed bytes of x + 1) | class << 40 */
    uint64_t *sp_before;
    uint32_t sp_mask;      /* SPM: byte -> <0xXX> (or the raw 1-byte) token, -1 if none */

    /* tokens matched in raw text before the normal split (control, user-defined, unknown),
     * in llama.cpp's priority order: longer text first */
    int32_t *specials;          /* (n_specials) */
    int32_t n_specials;
    int32_t *spec_rank;         /* (n_vocab) rank in specials, -1 if not special */
    /* byte trie over the special texts: node 0 is the root; edges in a hash */
    int32_t *trie_tok;          /* (n_nodes) token id ending at node, -1 */
    int32_t n_nodes;
    uint64_t *te_key;           /* edge hash: key = node * 256 + byte + 1 (0 = empty) */
    int32_t *te_child;
    uint32_t te_mask;

    tok_pretok *pre;            /* BPE only */
    uint16_t byte2cpt[256];     /* GPT-2 byte -> unicode mapping */
    int16_t cpt2byte[512];      /* inverse for code points < 512, -1 if none */
};

/* ---- hashing (vocab.c) ---- */
uint32_t cll_tok_hash(const void *p, size_t n, uint32_t seed);
int32_t cll_tok_lookup(const cll_tokenizer *t, const char *s, size_t n); /* -1 if none */
int32_t cll_tok_merge_rank(const cll_tokenizer *t, const char *l, size_t ll, const char *r, size_t rl);

int cll_tok_boundary_class(const char *s, size_t n); /* 1: U+2581, 2: '\n', 0: other */
int32_t cll_tok_trie_child(const cll_tokenizer *t, int32_t node, uint8_t c); /* -1 if none */

/* ---- growable id vector ---- */
typedef struct {
    int32_t *v;
    size_t n, cap;
    bool oom;
} tok_vec;
static inline void tok_vec_push(tok_vec *o, int32_t id) {
    if (o->n == o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 256;
        int32_t *nv = realloc(o->v, nc * sizeof *nv);
        if (!nv) { o->oom = true; return; }
        o->v = nv;
        o->cap = nc;
    }
    o->v[o->n++] = id;
}

/* ---- per-call memo: segment text -> ids (cache.c) ---- */
#define TOK_CACHE_MAX_KEY 256
typedef struct {
    uint32_t koff, len, off, cnt; /* key in kpool, ids in pool */
} tok_cache_ent;
typedef struct {
    tok_slot *slots;
    uint32_t mask, n;
    tok_cache_ent *ent;
    size_t cent;
    int32_t *pool;
    size_t npool, cpool;
    char *kpool;
    size_t nk, ck;
    bool failed;
} tok_cache;
bool cll_tok_cache_get(const tok_cache *c, const char *s, size_t n, tok_vec *out); /* appends; false if absent */
void cll_tok_cache_put(tok_cache *c, const char *s, size_t n, const int32_t *ids, size_t cnt);
void cll_tok_cache_free(tok_cache *c);

/* ---- UTF-8 as llama.cpp reads it ---- */
/* sequence length from the lead byte alone (continuation bytes count 1) */
static inline size_t tok_utf8_len(uint8_t c) {
    static const uint8_t lut[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lut[c >> 4];
}
/* encode a code point (<= 0x10FFFF), returns bytes written (1-4) */
static inline int tok_utf8_put(uint32_t c, char *o) {
    if (c < 0x80) { o[0] = (char)c; return 1; }
    if (c < 0x800) { o[0] = (char)(0xC0 | (c >> 6)); o[1] = (char)(0x80 | (c & 0x3F)); return 2; }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12)); o[1] = (char)(0x80 | ((c >> 6) & 0x3F)); o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (c >> 18)); o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F)); o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}
/* decode one code point at s[*i] with llama.cpp's lenient rules (no overlong or
 * surrogate checks); returns false for an invalid lead/continuation (consume 1 byte) */
bool cll_tok_utf8_next(const char *s, size_t n, size_t *i, uint32_t *cpt);

/* ---- encoders on one raw-text fragment, appending to out ---- */
void cll_tok_spm_encode(const cll_tokenizer *t, const char *text, size_t len, bool prefix_space, tok_cache *cache,
                        tok_vec *out);
cll_status cll_tok_bpe_encode(const cll_tokenizer *t, const char *text, size_t len, tok_cache *cache, tok_vec *out);

/* ---- BPE pre-tokenizer (pretok.c) ---- */
/* choose the split regexes and flags for tokenizer.ggml.pre; error if unknown */
cll_status cll_tok_pretok_init(cll_tokenizer *t, const char *pre);
void cll_tok_pretok_free(tok_pretok *p);
/* Split one raw fragment into words. The text is first normalised as llama.cpp
 * reads it (lenient UTF-8 decode, invalid bytes -> U+FFFD, re-encoded) into norm;
 * len[] are the words' byte lengths in norm, in order. */
typedef struct {
    char *norm;
    size_t norm_len;
    size_t *len;
    size_t n, cap;
} tok_words;
void cll_tok_words_free(tok_words *w);
cll_status cll_tok_pretok_split(const cll_tokenizer *t, const char *text, size_t len, tok_words *w);

#endif
