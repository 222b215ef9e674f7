/* gguf: open/free, the bounded cursor, the header and the metadata section.
 * Every count is checked against the bytes that remain before anything is allocated
 * from it; nested arrays are walked to validate them, with a depth limit so hostile
 * nesting cannot exhaust the stack. */
#include "gguf/gguf_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* deeper nesting than this is not used by any writer; refusing it bounds recursion */
#define GGUF_MAX_NEST 8
/* GGUF spec: keys are at most 65535 bytes */
#define GGUF_MAX_KEY_LEN 65535u

/* ---- cursor ------------------------------------------------------------------ */

static const char *ctx_sep(const cll_gguf_cur *c) { return c->ctx && c->ctx[0] ? ": " : ""; }
static const char *ctx_of(const cll_gguf_cur *c) { return c->ctx ? c->ctx : ""; }

static cll_status short_read(cll_gguf_cur *c, const char *what, uint64_t need) {
    return cll_err(CLL_ERR_FORMAT, "%s: %s%s%s needs %" PRIu64 " bytes but only %" PRIu64 " remain at byte %" PRIu64,
                   c->g->name, ctx_of(c), ctx_sep(c), what, need, cll_gguf_cur_left(c), c->pos);
}

cll_status cll_gguf_cur_u32(cll_gguf_cur *c, const char *what, uint32_t *out) {
    if (cll_gguf_cur_left(c) < 4) return short_read(c, what, 4);
    const uint8_t *p = c->g->base + c->pos;
    *out = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    c->pos += 4;
    return CLL_OK;
}

cll_status cll_gguf_cur_u64(cll_gguf_cur *c, const char *what, uint64_t *out) {
    if (cll_gguf_cur_left(c) < 8) return short_read(c, what, 8);
    const uint8_t *p = c->g->base + c->pos;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    *out = v;
    c->pos += 8;
    return CLL_OK;
}

cll_status cll_gguf_cur_len(cll_gguf_cur *c, const char *what, uint64_t *out) {
    if (c->g->version == 1) {
        uint32_t v;
        cll_status st = cll_gguf_cur_u32(c, what, &v);
        *out = v;
        return st;
    }
    return cll_gguf_cur_u64(c, what, out);
}

cll_status cll_gguf_cur_str(cll_gguf_cur *c, const char *what, cll_str *out) {
    uint64_t at = c->pos, len;
    cll_status st = cll_gguf_cur_len(c, what, &len);
    if (st) return st;
    if (len > cll_gguf_cur_left(c)) {
        c->pos = at;
        return cll_err(CLL_ERR_FORMAT, "%s: %s%s%s length %" PRIu64 " exceeds the %" PRIu64 " bytes left at byte %" PRIu64,
                       c->g->name, ctx_of(c), ctx_sep(c), what, len, c->g->size - (at + cll_gguf_len_width(c->g)), at);
    }
    out->ptr = (const char *)c->g->base + c->pos;
    out->len = len;
    c->pos += len;
    return CLL_OK;
}

const char *cll_gguf_printable(cll_str s, char *buf, size_t cap) {
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    if (cap == 0) return buf;
    for (uint64_t i = 0; i < s.len && s.ptr; i++) {
        unsigned char ch = (unsigned char)s.ptr[i];
        /* hostile names may hold newlines or control bytes: keep the error on one line */
        if (ch >= 0x20 && ch < 0x7f && ch != '\\') {
            if (o + 1 >= cap - 4) goto trunc;
            buf[o++] = (char)ch;
        } else {
            if (o + 4 >= cap - 4) goto trunc;
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[ch >> 4];
            buf[o++] = hex[ch & 15];
        }
    }
    buf[o] = 0;
    return buf;
trunc:
    if (cap >= 4) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o < cap ? o : cap - 1] = 0;
    return buf;
}

/* ---- name index (keys, tensor names) -------------------------------------------- */

static uint64_t hash_bytes(const char *p, uint64_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a 64 */
    for (uint64_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

static const cll_str *item_name(const void *items, size_t stride, uint64_t i) {
    return (const cll_str *)((const char *)items + (size_t)i * stride);
}

cll_status cll_gguf_index_build(cll_gguf_index *ix, const void *items, size_t stride, uint64_t n, uint64_t *dup) {
    ix->slots = NULL;
    ix->mask = 0;
    uint64_t cap = 16;
    while (cap < 2 * n) cap <<= 1; /* n is bounded by the file size, so this cannot overflow */
    ix->slots = calloc((size_t)cap, sizeof *ix->slots);
    if (!ix->slots) return cll_err(CLL_ERR_NOMEM, "gguf: cannot allocate a name index of %" PRIu64 " slots", cap);
    ix->mask = cap - 1;
    for (uint64_t i = 0; i < n; i++) {
        const cll_str *s = item_name(items, stride, i);
        uint64_t h = hash_bytes(s->ptr, s->len) & ix->mask;
        while (ix->slots[h]) {
            const cll_str *o = item_name(items, stride, ix->slots[h] - 1);
            if (o->len == s->len && memcmp(o->ptr, s->ptr, (size_t)s->len) == 0) {
                *dup = i;
                return CLL_ERR_FORMAT; /* the caller names the duplicate */
            }
            h = (h + 1) & ix->mask;
        }
        ix->slots[h] = i + 1;
    }
    return CLL_OK;
}

uint64_t cll_gguf_index_find(const cll_gguf_index *ix, const void *items, size_t stride, const char *name) {
    if (!ix->slots || !name) return UINT64_MAX;
    size_t n = strlen(name);
    uint64_t h = hash_bytes(name, n) & ix->mask;
    while (ix->slots[h]) {
        const cll_str *o = item_name(items, stride, ix->slots[h] - 1);
        if (o->len == n && memcmp(o->ptr, name, n) == 0) return ix->slots[h] - 1;
        h = (h + 1) & ix->mask;
    }
    return UINT64_MAX;
}

void cll_gguf_index_free(cll_gguf_index *ix) {
    free(ix->slots);
    ix->slots = NULL;
}

/* ---- metadata values ------------------------------------------------------------ */

/* bytes of one scalar of type t; 0 for STRING/ARRAY and unknown ids */
static uint32_t scalar_size(uint32_t t) {
    switch (t) {
    case CLL_GGUF_U8: case CLL_GGUF_I8: case CLL_GGUF_BOOL: return 1;
    case CLL_GGUF_U16: case CLL_GGUF_I16: return 2;
    case CLL_GGUF_U32: case CLL_GGUF_I32: case CLL_GGUF_F32: return 4;
    case CLL_GGUF_U64: case CLL_GGUF_I64: case CLL_GGUF_F64: return 8;
    default: return 0;
    }
}

/* Walk the body of an array whose header (elem type, count) has been read. For the
 * top-level array of strings, `offs` (n+1 entries) receives each element's position. */
static cll_status walk_array(cll_gguf *g, cll_gguf_cur *c, const char *key, uint32_t et, uint64_t n, int depth,
                             uint64_t *offs) {
    uint64_t at = c->pos, left = cll_gguf_cur_left(c), lw = cll_gguf_len_width(g);
    uint32_t es = scalar_size(et);
    if (es) {
        if (n > left / es)
            return cll_err(CLL_ERR_FORMAT, "%s: key '%s': array of %" PRIu64 " %s needs more than the %" PRIu64
                           " bytes left at byte %" PRIu64, g->name, key, n, cll_gguf_vtype_name(et), left, at);
        c->pos += n * es;
        return CLL_OK;
    }
    if (et == CLL_GGUF_STRING) {
        if (n > left / lw)
            return cll_err(CLL_ERR_FORMAT, "%s: key '%s': array of %" PRIu64 " strings needs more than the %" PRIu64
                           " bytes left at byte %" PRIu64, g->name, key, n, left, at);
        for (uint64_t i = 0; i < n; i++) {
            cll_str s;
            if (offs) offs[i] = c->pos;
            cll_status st = cll_gguf_cur_str(c, "array string", &s);
            if (st) return st;
        }
        if (offs) offs[n] = c->pos;
        return CLL_OK;
    }
    if (et == CLL_GGUF_ARRAY) {
        if (depth >= GGUF_MAX_NEST)
            return cll_err(CLL_ERR_FORMAT, "%s: key '%s': arrays nested deeper than %d at byte %" PRIu64, g->name,
                           key, GGUF_MAX_NEST, at);
        if (n > left / (4 + lw))
            return cll_err(CLL_ERR_FORMAT, "%s: key '%s': array of %" PRIu64 " arrays needs more than the %" PRIu64
                           " bytes left at byte %" PRIu64, g->name, key, n, left, at);
        for (uint64_t i = 0; i < n; i++) {
            uint32_t t2;
            uint64_t n2, p2 = c->pos;
            cll_status st = cll_gguf_cur_u32(c, "nested array type", &t2);
            if (!st) st = cll_gguf_cur_len(c, "nested array length", &n2);
            if (st) return st;
            if (t2 >= CLL_GGUF_NTYPES)
                return cll_err(CLL_ERR_FORMAT, "%s: key '%s': nested array has bad element type %u at byte %" PRIu64,
                               g->name, key, t2, p2);
            st = walk_array(g, c, key, t2, n2, depth + 1, NULL);
            if (st) return st;
        }
        return CLL_OK;
    }
    return cll_err(CLL_ERR_FORMAT, "%s: key '%s': bad array element type %u at byte %" PRIu64, g->name, key, et, at);
}

static cll_status parse_kv(cll_gguf *g, cll_gguf_cur *c, uint64_t i) {
    cll_gguf_kv *kv = &g->kv[i];
    char kbuf[128], ctx[160];
    uint64_t at = c->pos;
    snprintf(ctx, sizeof ctx, "metadata entry %" PRIu64, i);
    c->ctx = ctx;
    cll_status st = cll_gguf_cur_str(c, "key", &kv->key);
    if (st) return st;
    if (kv->key.len == 0 || kv->key.len > GGUF_MAX_KEY_LEN)
        return cll_err(CLL_ERR_FORMAT, "%s: metadata entry %" PRIu64 ": key length %" PRIu64
                       " is out of range 1..65535 at byte %" PRIu64, g->name, i, kv->key.len, at);
    const char *key = cll_gguf_printable(kv->key, kbuf, sizeof kbuf);
    snprintf(ctx, sizeof ctx, "key '%s'", key);
    at = c->pos;
    st = cll_gguf_cur_u32(c, "value type", &kv->type);
    if (st) return st;
    if (kv->type >= CLL_GGUF_NTYPES)
        return cll_err(CLL_ERR_FORMAT, "%s: key '%s': bad value type %u at byte %" PRIu64, g->name, key, kv->type, at);
    at = c->pos;
    kv->raw = g->base + c->pos;
    uint32_t es = scalar_size(kv->type);
    if (es) {
        if (cll_gguf_cur_left(c) < es)
            return cll_err(CLL_ERR_FORMAT, "%s: key '%s': %s value runs past end of file at byte %" PRIu64, g->name,
                           key, cll_gguf_vtype_name(kv->type), at);
        c->pos += es;
        return CLL_OK;
    }
    if (kv->type == CLL_GGUF_STRING) {
        return cll_gguf_cur_str(c, "string value", &kv->str);
    }
    /* ARRAY */
    st = cll_gguf_cur_u32(c, "array element type", &kv->arr_type);
    if (!st) st = cll_gguf_cur_len(c, "array length", &kv->arr_n);
    if (st) return st;
    if (kv->arr_type >= CLL_GGUF_NTYPES)
        return cll_err(CLL_ERR_FORMAT, "%s: key '%s': bad array element type %u at byte %" PRIu64, g->name, key,
                       kv->arr_type, at);
    kv->raw = g->base + c->pos;
    if (kv->arr_type == CLL_GGUF_STRING) {
        /* bounded before allocating: each string takes at least its length field */
        if (kv->arr_n > cll_gguf_cur_left(c) / cll_gguf_len_width(g))
            return cll_err(CLL_ERR_FORMAT, "%s: key '%s': array of %" PRIu64 " strings needs more than the %" PRIu64
                           " bytes left at byte %" PRIu64, g->name, key, kv->arr_n, cll_gguf_cur_left(c), c->pos);
        g->str_offs[i] = malloc((size_t)(kv->arr_n + 1) * sizeof(uint64_t));
        if (!g->str_offs[i])
            return cll_err(CLL_ERR_NOMEM, "%s: key '%s': cannot index %" PRIu64 " strings", g->name, key, kv->arr_n);
    }
    return walk_array(g, c, key, kv->arr_type, kv->arr_n, 1, g->str_offs[i]);
}

static cll_status check_alignment(cll_gguf *g) {
    g->alignment = 32; /* GGUF default */
    const cll_gguf_kv *kv = cll_gguf_find(g, "general.alignment");
    if (!kv) return CLL_OK;
    uint64_t v;
    if (!cll_gguf_get_u64(g, "general.alignment", &v))
        return cll_err(CLL_ERR_FORMAT, "%s: key 'general.alignment': must be a non-negative integer, not %s", g->name,
                       cll_gguf_vtype_name(kv->type));
    if (v == 0 || v > UINT32_MAX || (v & (v - 1)))
        return cll_err(CLL_ERR_FORMAT, "%s: key 'general.alignment': %" PRIu64 " is not a non-zero power of two",
                       g->name, v);
    g->alignment = (uint32_t)v;
    return CLL_OK;
}

static cll_status parse_all(cll_gguf *g) {
    cll_gguf_cur c = {g, 0, "header"};
    if (g->size < 4 || memcmp(g->base, "GGUF", 4) != 0)
        return cll_err(CLL_ERR_FORMAT, "%s: not a GGUF file (bad magic) at byte 0", g->name);
    c.pos = 4;
    cll_status st = cll_gguf_cur_u32(&c, "version", &g->version);
    if (st) return st;
    if (g->version == 0 || g->version > 3) {
        if ((g->version & 0xffff) == 0 && (g->version >> 16) != 0)
            return cll_err(CLL_ERR_UNSUPPORTED, "%s: big-endian GGUF (version 0x%08x) is not supported at byte 4",
                           g->name, g->version);
        return cll_err(CLL_ERR_UNSUPPORTED, "%s: GGUF version %u is not supported (1..3) at byte 4", g->name,
                       g->version);
    }
    uint64_t n_kv, at_nt = c.pos;
    st = cll_gguf_cur_len(&c, "tensor count", &g->n_tensors);
    if (!st) st = cll_gguf_cur_len(&c, "metadata count", &n_kv);
    if (st) return st;
    /* smallest entry: key length field + 1 key byte + type + 1 value byte */
    uint64_t min_kv = cll_gguf_len_width(g) + 1 + 4 + 1;
    if (n_kv > cll_gguf_cur_left(&c) / min_kv)
        return cll_err(CLL_ERR_FORMAT, "%s: metadata count %" PRIu64 " cannot fit in the %" PRIu64
                       " bytes left at byte %" PRIu64, g->name, n_kv, cll_gguf_cur_left(&c), at_nt + cll_gguf_len_width(g));
    g->kv = calloc(n_kv ? (size_t)n_kv : 1, sizeof *g->kv);
    g->str_offs = calloc(n_kv ? (size_t)n_kv : 1, sizeof *g->str_offs);
    if (!g->kv || !g->str_offs) return cll_err(CLL_ERR_NOMEM, "%s: cannot allocate %" PRIu64 " metadata entries", g->name, n_kv);
    g->n_kv = n_kv; /* before parsing, so free() releases every string index made */
    for (uint64_t i = 0; i < n_kv; i++) {
        st = parse_kv(g, &c, i);
        if (st) return st;
    }
    c.ctx = ""; /* parse_kv pointed it at its own buffer */
    uint64_t dup;
    st = cll_gguf_index_build(&g->kv_index, g->kv, sizeof *g->kv, g->n_kv, &dup);
    if (st == CLL_ERR_FORMAT) {
        char kbuf[128];
        return cll_err(CLL_ERR_FORMAT, "%s: key '%s' appears twice (entry %" PRIu64 ")", g->name,
                       cll_gguf_printable(g->kv[dup].key, kbuf, sizeof kbuf), dup);
    }
    if (st) return st;
    st = check_alignment(g);
    if (st) return st;
    return cll_gguf_parse_tensors(g, &c);
}

/* ---- open / free ------------------------------------------------------------------ */

static cll_status open_common(cll_gguf *g, cll_gguf **out) {
    cll_status st = parse_all(g);
    if (st) {
        cll_gguf_free(g);
        return st;
    }
    *out = g;
    return CLL_OK;
}

cll_status cll_gguf_open(const char *path, cll_gguf **out) {
    if (!out) return cll_err(CLL_ERR_ARG, "cll_gguf_open: out is NULL");
    *out = NULL;
    if (!path) return cll_err(CLL_ERR_ARG, "cll_gguf_open: path is NULL");
    cll_gguf *g = calloc(1, sizeof *g);
    if (!g) return cll_err(CLL_ERR_NOMEM, "%s: cannot allocate the GGUF handle", path);
    snprintf(g->name, sizeof g->name, "%s", path);
    cll_status st = cll_map_open(path, &g->map);
    if (st) {
        free(g);
        return st;
    }
    g->base = g->map.data;
    g->size = g->map.size;
    return open_common(g, out);
}

cll_status cll_gguf_open_mem(const void *data, size_t size, cll_gguf **out) {
    if (!out) return cll_err(CLL_ERR_ARG, "cll_gguf_open_mem: out is NULL");
    *out = NULL;
    if (!data && size) return cll_err(CLL_ERR_ARG, "cll_gguf_open_mem: data is NULL");
    cll_gguf *g = calloc(1, sizeof *g);
    if (!g) return cll_err(CLL_ERR_NOMEM, "<memory>: cannot allocate the GGUF handle");
    snprintf(g->name, sizeof g->name, "<memory>");
    static const uint8_t empty[1] = {0};
    g->base = data ? data : empty;
    g->size = size;
    return open_common(g, out);
}

void cll_gguf_free(cll_gguf *g) {
    if (!g) return;
    if (g->str_offs)
        for (uint64_t i = 0; i < g->n_kv; i++) free(g->str_offs[i]);
    free(g->str_offs);
    free(g->kv);
    free(g->tensors);
    cll_gguf_index_free(&g->kv_index);
    cll_gguf_index_free(&g->tensor_index);
    cll_map_close(&g->map);
    free(g);
}
