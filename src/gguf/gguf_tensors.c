/* gguf/tensors: tensor infos (name, dims, type, offset) and the data layout checks:
 * known type, whole blocks per row, no overflow in element or byte counts, offsets
 * aligned, data inside the file, no two tensors overlapping, no repeated names. */
#include "gguf/gguf_internal.h"
#include "formats/formats.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cll_status parse_info(cll_gguf *g, cll_gguf_cur *c, uint64_t i) {
    cll_gguf_tensor *t = &g->tensors[i];
    char nbuf[128], ctx[160];
    snprintf(ctx, sizeof ctx, "tensor info %" PRIu64, i);
    c->ctx = ctx;
    uint64_t at = c->pos;
    cll_status st = cll_gguf_cur_str(c, "name", &t->name);
    if (st) return st;
    if (t->name.len == 0)
        return cll_err(CLL_ERR_FORMAT, "%s: tensor info %" PRIu64 " has an empty name at byte %" PRIu64, g->name, i, at);
    const char *name = cll_gguf_printable(t->name, nbuf, sizeof nbuf);
    snprintf(ctx, sizeof ctx, "tensor '%s'", name);
    at = c->pos;
    st = cll_gguf_cur_u32(c, "n_dims", &t->n_dims);
    if (st) return st;
    if (t->n_dims < 1 || t->n_dims > CLL_GGUF_MAX_DIMS)
        return cll_err(CLL_ERR_FORMAT, "%s: tensor '%s': n_dims %u is out of range 1..%d at byte %" PRIu64, g->name,
                       name, t->n_dims, CLL_GGUF_MAX_DIMS, at);
    uint64_t nel = 1;
    for (uint32_t d = 0; d < CLL_GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        at = c->pos;
        st = cll_gguf_cur_len(c, "dimension", &t->ne[d]);
        if (st) return st;
        if (t->ne[d] == 0 || t->ne[d] > (uint64_t)INT64_MAX)
            return cll_err(CLL_ERR_FORMAT, "%s: tensor '%s': dimension %u is %" PRIu64 " at byte %" PRIu64, g->name,
                           name, d, t->ne[d], at);
        if (!cll_mul_ok(nel, t->ne[d], &nel) || nel > (uint64_t)INT64_MAX)
            return cll_err(CLL_ERR_FORMAT, "%s: tensor '%s': element count overflows at dimension %u (byte %" PRIu64 ")",
                           g->name, name, d, at);
    }
    at = c->pos;
    st = cll_gguf_cur_u32(c, "type", &t->type);
    if (st) return st;
    const cll_type_traits *tr = cll_type_traits_get(t->type);
    if (!tr)
        return cll_err(CLL_ERR_UNSUPPORTED, "%s: tensor '%s': unknown tensor type id %u at byte %" PRIu64, g->name,
                       name, t->type, at);
    if (t->ne[0] % tr->blck)
        return cll_err(CLL_ERR_FORMAT, "%s: tensor '%s': row length %" PRIu64 " is not a multiple of the %s block size %u",
                       g->name, name, t->ne[0], tr->name, tr->blck);
    /* nel fits and is a multiple of blck; the byte count may still overflow */
    if (!cll_mul_ok(nel / tr->blck, tr->type_size, &t->nbytes))
        return cll_err(CLL_ERR_FORMAT, "%s: tensor '%s': byte size overflows", g->name, name);
    st = cll_gguf_cur_u64(c, "offset", &t->offset);
    return st;
}

typedef struct {
    uint64_t off, end, idx;
} span;

static int span_cmp(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off ? 1 : 0;
}

/* offsets aligned, data inside the file, and no overlaps (sorted sweep) */
static cll_status check_layout(cll_gguf *g) {
    char nbuf[128];
    span *sp = malloc((g->n_tensors ? (size_t)g->n_tensors : 1) * sizeof *sp);
    if (!sp) return cll_err(CLL_ERR_NOMEM, "%s: cannot allocate the layout check", g->name);
    cll_status st = CLL_OK;
    for (uint64_t i = 0; i < g->n_tensors && !st; i++) {
        cll_gguf_tensor *t = &g->tensors[i];
        const char *name = cll_gguf_printable(t->name, nbuf, sizeof nbuf);
        uint64_t start, end;
        if (t->offset % g->alignment)
            st = cll_err(CLL_ERR_FORMAT, "%s: tensor '%s': offset %" PRIu64 " is not a multiple of the alignment %u",
                         g->name, name, t->offset, g->alignment);
        else if (!cll_add_ok(g->data_offset, t->offset, &start) || !cll_add_ok(start, t->nbytes, &end) ||
                 end > g->size)
            st = cll_err(CLL_ERR_FORMAT, "%s: tensor '%s': data [%" PRIu64 ", +%" PRIu64 ") at data offset %" PRIu64
                         " runs past end of file (%" PRIu64 " bytes)", g->name, name, t->offset, t->nbytes,
                         g->data_offset, g->size);
        else {
            t->data = g->base + start;
            sp[i] = (span){t->offset, t->offset + t->nbytes, i};
        }
    }
    if (!st && g->n_tensors > 1) {
        qsort(sp, (size_t)g->n_tensors, sizeof *sp, span_cmp);
        for (uint64_t i = 1; i < g->n_tensors && !st; i++) {
            if (sp[i].off < sp[i - 1].end) {
                char nbuf2[128];
                st = cll_err(CLL_ERR_FORMAT, "%s: tensor '%s' (offset %" PRIu64 ") overlaps tensor '%s' (offset %" PRIu64
                             ", %" PRIu64 " bytes)", g->name,
                             cll_gguf_printable(g->tensors[sp[i].idx].name, nbuf, sizeof nbuf), sp[i].off,
                             cll_gguf_printable(g->tensors[sp[i - 1].idx].name, nbuf2, sizeof nbuf2), sp[i - 1].off,
                             sp[i - 1].end - sp[i - 1].off);
            }
        }
    }
    free(sp);
    return st;
}

cll_status cll_gguf_parse_tensors(cll_gguf *g, cll_gguf_cur *c) {
    uint64_t n = g->n_tensors, lw = cll_gguf_len_width(g);
    g->n_tensors = 0; /* becomes n only once the array exists */
    /* smallest info: name length + 1 name byte + n_dims + one dim + type + offset */
    uint64_t min_info = lw + 1 + 4 + lw + 4 + 8;
    if (n > cll_gguf_cur_left(c) / min_info)
        return cll_err(CLL_ERR_FORMAT, "%s: tensor count %" PRIu64 " cannot fit in the %" PRIu64
                       " bytes left at byte %" PRIu64, g->name, n, cll_gguf_cur_left(c), c->pos);
    g->tensors = calloc(n ? (size_t)n : 1, sizeof *g->tensors);
    if (!g->tensors) return cll_err(CLL_ERR_NOMEM, "%s: cannot allocate %" PRIu64 " tensor infos", g->name, n);
    for (uint64_t i = 0; i < n; i++) {
        cll_status st = parse_info(g, c, i);
        if (st) return st;
    }
    c->ctx = "";
    g->n_tensors = n;
    /* the data section starts at the next multiple of the alignment; with no tensors
     * writers may omit that padding, so it can lie past the end of the file */
    uint64_t a = g->alignment, p = c->pos;
    g->data_offset = (p + a - 1) / a * a;
    uint64_t dup;
    cll_status st = cll_gguf_index_build(&g->tensor_index, g->tensors, sizeof *g->tensors, n, &dup);
    if (st == CLL_ERR_FORMAT) {
        char nbuf[128];
        return cll_err(CLL_ERR_FORMAT, "%s: tensor '%s' appears twice (info %" PRIu64 ")", g->name,
                       cll_gguf_printable(g->tensors[dup].name, nbuf, sizeof nbuf), dup);
    }
    if (st) return st;
    return check_layout(g);
}
