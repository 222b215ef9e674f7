/* gguf/internal: the parsed-file struct and the bounded cursor shared by the parser
 * files (gguf.c: header + metadata, gguf_tensors.c: tensor infos + layout) and the
 * accessors (gguf_get.c). Owns nothing beyond what cll_gguf owns.
 * Rule: every read goes through the cursor, which never reads past the end. */
#ifndef CLL_GGUF_INTERNAL_H
#define CLL_GGUF_INTERNAL_H

#include "gguf/gguf.h"

/* open-addressing hash index over names (keys or tensor names): slots hold index+1, 0 = empty */
typedef struct {
    uint64_t *slots;
    uint64_t mask; /* capacity - 1 (capacity is a power of two) */
} cll_gguf_index;

struct cll_gguf {
    cll_map map;          /* set when opened from a path (we own and unmap it) */
    const uint8_t *base;  /* start of the bytes */
    uint64_t size;
    char name[256];       /* the file name for error messages */
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset; /* may exceed size for files without tensors (vocab-only) */

    uint64_t n_kv;
    cll_gguf_kv *kv;      /* (n_kv) */
    /* per kv: for arrays of strings, n+1 offsets (relative to base) of each element's
     * length field, the last one being the end of the array, so element i is O(1);
     * NULL for every other kv. */
    uint64_t **str_offs;  /* (n_kv) */
    cll_gguf_index kv_index;

    uint64_t n_tensors;
    cll_gguf_tensor *tensors; /* (n_tensors) */
    cll_gguf_index tensor_index;
};

/* A bounded reader over [base, base+size). Widths for counts/lengths depend on the
 * version: v1 stores them as u32, v2+ as u64. */
typedef struct {
    const cll_gguf *g;
    uint64_t pos;
    const char *ctx; /* what is being read ("key 'x'", "tensor 'y'"), for error messages; may be "" */
} cll_gguf_cur;

static inline uint64_t cll_gguf_cur_left(const cll_gguf_cur *c) { return c->g->size - c->pos; }

/* width in bytes of counts and string lengths for this version */
static inline uint32_t cll_gguf_len_width(const cll_gguf *g) { return g->version == 1 ? 4 : 8; }

/* cursor reads: on short input they set the last error
 * ("<file>: <ctx>: <what> needs N bytes but only M remain at byte P") and fail */
cll_status cll_gguf_cur_u32(cll_gguf_cur *c, const char *what, uint32_t *out);
cll_status cll_gguf_cur_u64(cll_gguf_cur *c, const char *what, uint64_t *out);
cll_status cll_gguf_cur_len(cll_gguf_cur *c, const char *what, uint64_t *out); /* u32 in v1, u64 after */
cll_status cll_gguf_cur_str(cll_gguf_cur *c, const char *what, cll_str *out);

/* write a printable, bounded, single-line rendering of s into buf (for error messages) */
const char *cll_gguf_printable(cll_str s, char *buf, size_t cap);

/* name index over an array of n items of `stride` bytes whose FIRST member is the
 * cll_str name (cll_gguf_kv.key, cll_gguf_tensor.name). Build returns false and the
 * index of the first repeated name in *dup on a duplicate; NOMEM is reported as CLL_ERR_NOMEM. */
cll_status cll_gguf_index_build(cll_gguf_index *ix, const void *items, size_t stride, uint64_t n,
                                uint64_t *dup);
/* UINT64_MAX if absent */
uint64_t cll_gguf_index_find(const cll_gguf_index *ix, const void *items, size_t stride, const char *name);
void cll_gguf_index_free(cll_gguf_index *ix);

/* tensor infos and data layout (gguf_tensors.c); the cursor sits at the first tensor info */
cll_status cll_gguf_parse_tensors(cll_gguf *g, cll_gguf_cur *c);

#endif
