/* bench/gguf_write: a minimal GGUF v3 writer. Metadata and tensor infos are serialised
 * into memory buffers as they are declared (a 128k-token vocab is a few MB); tensor data
 * is never held here: the caller streams it after the header, in declaration order. */
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "formats/formats.h"

#define GW_ALIGN 32 /* GGUF default general.alignment */

typedef struct {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} gbuf;

struct cll_gw {
    gbuf kv, ti;
    uint64_t n_kv, n_tensors;
    uint64_t offset; /* next tensor's offset in the data section */
};

static void put(gbuf *b, const void *src, size_t n) {
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->n + n) cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void put_u32(gbuf *b, uint32_t v) { put(b, &v, 4); } /* x86-64: little-endian like GGUF */
static void put_u64(gbuf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(gbuf *b, const char *s) {
    uint64_t n = strlen(s);
    put_u64(b, n);
    put(b, s, n);
}

cll_gw *cll_bench_gw_new(void) { return calloc(1, sizeof(cll_gw)); }

void cll_bench_gw_free(cll_gw *w) {
    if (!w) return;
    free(w->kv.p);
    free(w->ti.p);
    free(w);
}

static void key(cll_gw *w, const char *k, uint32_t type) {
    put_str(&w->kv, k);
    put_u32(&w->kv, type);
    w->n_kv++;
}

void cll_bench_gw_str(cll_gw *w, const char *k, const char *v) {
    key(w, k, 8);
    put_str(&w->kv, v);
}
void cll_bench_gw_u32(cll_gw *w, const char *k, uint32_t v) {
    key(w, k, 4);
    put_u32(&w->kv, v);
}
void cll_bench_gw_f32(cll_gw *w, const char *k, float v) {
    key(w, k, 6);
    put(&w->kv, &v, 4);
}
void cll_bench_gw_bool(cll_gw *w, const char *k, bool v) {
    key(w, k, 7);
    uint8_t b = v;
    put(&w->kv, &b, 1);
}
void cll_bench_gw_arr_str(cll_gw *w, const char *k, const char *const *v, uint64_t n) {
    key(w, k, 9);
    put_u32(&w->kv, 8);
    put_u64(&w->kv, n);
    for (uint64_t i = 0; i < n; i++) put_str(&w->kv, v[i]);
}
void cll_bench_gw_arr_f32(cll_gw *w, const char *k, const float *v, uint64_t n) {
    key(w, k, 9);
    put_u32(&w->kv, 6);
    put_u64(&w->kv, n);
    put(&w->kv, v, n * 4);
}
void cll_bench_gw_arr_i32(cll_gw *w, const char *k, const int32_t *v, uint64_t n) {
    key(w, k, 9);
    put_u32(&w->kv, 5);
    put_u64(&w->kv, n);
    put(&w->kv, v, n * 4);
}

uint64_t cll_bench_gw_tensor(cll_gw *w, const char *name, uint32_t type, int n_dims, const uint64_t *ne) {
    uint64_t rows = 1;
    for (int i = 1; i < n_dims; i++) rows *= ne[i];
    uint64_t nbytes = cll_row_bytes(type, ne[0]) * rows;
    if (!nbytes) return 0;
    put_str(&w->ti, name);
    put_u32(&w->ti, (uint32_t)n_dims);
    for (int i = 0; i < n_dims; i++) put_u64(&w->ti, ne[i]);
    put_u32(&w->ti, type);
    put_u64(&w->ti, w->offset);
    w->offset += (nbytes + GW_ALIGN - 1) / GW_ALIGN * GW_ALIGN;
    w->n_tensors++;
    return nbytes;
}

static cll_status write_all(FILE *f, const void *p, size_t n) {
    if (n && fwrite(p, 1, n, f) != n) return cll_err(CLL_ERR_IO, "write failed (disk full?)");
    return CLL_OK;
}

cll_status cll_bench_gw_write_header(cll_gw *w, FILE *f) {
    if (w->kv.oom || w->ti.oom) return cll_err(CLL_ERR_NOMEM, "gguf writer: out of memory for metadata");
    gbuf h = {0};
    put(&h, "GGUF", 4);
    put_u32(&h, 3);
    put_u64(&h, w->n_tensors);
    put_u64(&h, w->n_kv);
    if (h.oom) return cll_err(CLL_ERR_NOMEM, "gguf writer: out of memory");
    cll_status st = write_all(f, h.p, h.n);
    free(h.p);
    if (st == CLL_OK) st = write_all(f, w->kv.p, w->kv.n);
    if (st == CLL_OK) st = write_all(f, w->ti.p, w->ti.n);
    if (st != CLL_OK) return st;
    uint64_t pos = 24 + w->kv.n + w->ti.n;
    return cll_bench_gw_pad(w, f, pos);
}

cll_status cll_bench_gw_pad(cll_gw *w, FILE *f, uint64_t nbytes) {
    (void)w;
    static const uint8_t zeros[GW_ALIGN];
    size_t pad = (size_t)((GW_ALIGN - nbytes % GW_ALIGN) % GW_ALIGN);
    return write_all(f, zeros, pad);
}
