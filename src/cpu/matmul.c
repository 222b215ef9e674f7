/* cpu/matmul: weight preparation (kernel choice through the registry, repacking) and the
 * threaded matmul: quantize the activations once per call into scratch, then split the
 * output rows over the pool; each kernel loops the tokens inside its tiles. */
#include "cpu/knobs.h"
#include "cpu/matmul.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cpu/kern_common.h"

struct cll_cpu_weight {
    uint32_t type;
    int64_t rows, cols;
    const cll_kernel_row *gemv, *gemm; /* same layout */
    const cll_kernel_row *gemm_small;  /* same layout, 2..small_n tokens; NULL: gemm */
    int small_n;                       /* the most tokens gemm_small takes (also capped by cpu.small_n_max) */
    const uint8_t *w;                  /* the map, or packed */
    void *packed;                      /* owned repacked copy (NULL for plain layouts) */
    size_t row_bytes;
};

static const kern_impl *impl_of(const cll_kernel_row *r) { return (const kern_impl *)r->impl; }

/* the row serving n tokens */
static const cll_kernel_row *row_for(const cll_cpu_weight *w, int64_t n) {
    if (n == 1) return w->gemv;
    if (w->gemm_small && n <= cll_cpu_knob.small_n_max && n <= w->small_n) return w->gemm_small;
    return w->gemm;
}

/* A GEMM row that decodes its weights into a buffer once per token chunk (params "decode=")
 * costs that decode however few tokens come: at 2..4 tokens (batched decode of a few sequences)
 * a direct tile of the same layout reads the weights once and is 2-3x faster (the numbers at
 * cpu.small_n_max in knobs.c). Such a weight also keeps the first supported direct-tile row
 * ("tile=", no decode) of its layout that serves the GEMM; else the first one-token row of its layout
 * that says "small-n<=K" (a batch of up to K tokens run a token at a time costs less than the decode:
 * kern_table.c), for up to K tokens; else none. *lim: the most tokens the row takes. */
static const cll_kernel_row *small_n_row(const cll_kernel_row *gm, const cll_kernel_shape *sm, int *lim) {
    *lim = 0;
    if (!gm->params || !strstr(gm->params, "decode=")) return NULL;
    const cll_kernel_table *t = cll_cpu_kernel_table_get();
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < t->n; i++) {
            const cll_kernel_row *r = &t->rows[i];
            if (r->wtype != gm->wtype || r->layout != gm->layout || !(r->op & CLL_KOP_GEMM) || !r->params ||
                strstr(r->params, "decode=") || r->bit_exact != gm->bit_exact)
                continue;
            const char *k = strstr(r->params, "small-n<=");
            const int upto = pass == 0 ? INT32_MAX : k ? atoi(k + 9) : 0;
            if (pass == 0 ? !strstr(r->params, "tile=") : upto < 2) continue;
            if (!cll_kernel_row_supported(r, sm) || impl_of(r)->pack != impl_of(gm)->pack) continue;
            *lim = upto;
            return r;
        }
    return NULL;
}

/* A repacked copy on 2 MiB-aligned memory advised for transparent huge pages: decode streams
 * every weight once per token, and with 4 KiB pages the hardware prefetchers stop at every
 * page boundary and each page costs a TLB walk (kbench -t 2 GEMV from DRAM: see the commit).
 * Freed with free(). */
static void *alloc_packed(size_t bytes) {
    const size_t huge = (size_t)2 << 20;
    void *p = NULL;
    if (bytes >= huge) {
        bytes = (bytes + huge - 1) & ~(huge - 1);
        if (posix_memalign(&p, huge, bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
        (void)madvise(p, bytes, MADV_HUGEPAGE); /* advice only: without THP the pages stay 4 KiB */
#endif
        return p;
    }
    return cll_aalloc(bytes);
}

/* the checks every weight passes before any row is looked at */
static cll_status check_weight(uint32_t type, int64_t rows, int64_t cols, const void *data) {
    const cll_type_traits *tr = cll_type_traits_get(type);
    if (!tr || !tr->weight_ok)
        return cll_err(CLL_ERR_UNSUPPORTED, "matmul: weight type %s is not supported on the CPU", cll_type_name(type));
    if (rows <= 0 || cols <= 0 || cols % tr->blck)
        return cll_err(CLL_ERR_ARG, "matmul: %s weight of %lld x %lld: cols must be a positive multiple of %u",
                       tr->name, (long long)rows, (long long)cols, tr->blck);
    if (!data) return cll_err(CLL_ERR_ARG, "matmul: weight data is NULL");
    return CLL_OK;
}

/* the CPU shape of a weight; n_tokens 1 for the GEMV row, 0 (every count above 1) for GEMM */
static cll_kernel_shape cpu_shape(uint32_t type, int64_t rows, int64_t cols, int64_t n_tokens) {
    return (cll_kernel_shape){.wtype = type,
                              .rows = rows,
                              .cols = cols,
                              .features = cll_kernels_cpu_features(),
                              .n_tokens = n_tokens,
                              .device = CLL_KDEVICE_CPU};
}

/* prepare the weight for its GEMV row gv (n == 1) and GEMM row gm (n > 1), one layout */
static cll_status weight_make(uint32_t type, int64_t rows, int64_t cols, const void *data, const cll_kernel_row *gv,
                              const cll_kernel_row *gm, cll_cpu_weight **out) {
    const cll_type_traits *tr = cll_type_traits_get(type);
    cll_cpu_weight *w = calloc(1, sizeof *w);
    if (!w) return cll_err(CLL_ERR_NOMEM, "matmul: out of memory");
    w->type = type;
    w->rows = rows;
    w->cols = cols;
    w->gemv = gv;
    w->gemm = gm;
    const cll_kernel_shape sm = cpu_shape(type, rows, cols, 0);
    w->gemm_small = small_n_row(gm, &sm, &w->small_n);
    w->row_bytes = cll_row_bytes(type, (uint64_t)cols);
    w->w = data;
    const kern_impl *im = impl_of(gm);
    if (im->pack) {
        size_t bytes = im->packed_size(rows, cols);
        w->packed = alloc_packed(bytes);
        if (!w->packed) {
            free(w);
            return cll_err(CLL_ERR_NOMEM, "matmul: out of memory repacking a %s weight (%zu bytes)", tr->name, bytes);
        }
        im->pack(data, w->packed, rows, cols);
        w->w = w->packed;
    }
    *out = w;
    return CLL_OK;
}

cll_status cll_cpu_weight_create(uint32_t type, int64_t rows, int64_t cols, const void *data, cll_cpu_weight **out) {
    *out = NULL;
    cll_status st = check_weight(type, rows, cols, data);
    if (st != CLL_OK) return st;
    const cll_kernel_table *t = cll_cpu_kernel_table_get();
    const cll_kernel_shape sv = cpu_shape(type, rows, cols, 1), sm = cpu_shape(type, rows, cols, 0);
    bool fv = false, fm = false;
    const cll_kernel_row *gv = cll_kernels_select(t, CLL_KOP_GEMV, &sv, -1, &fv);
    const cll_kernel_row *gm = cll_kernels_select(t, CLL_KOP_GEMM, &sm, -1, &fm);
    if (gv && gm && gv->layout != gm->layout) {
        /* one weight has one layout: a forced GEMV row wins over a default GEMM row */
        if (fv && !fm) gm = cll_kernels_select(t, CLL_KOP_GEMM, &sm, gv->layout, NULL);
        else gv = cll_kernels_select(t, CLL_KOP_GEMV, &sv, gm->layout, NULL);
    }
    if (!gv || !gm)
        return cll_err(CLL_ERR_UNSUPPORTED, "matmul: no CPU kernel row for %s %lld x %lld", cll_type_name(type),
                       (long long)rows, (long long)cols);
    return weight_make(type, rows, cols, data, gv, gm, out);
}

cll_status cll_cpu_weight_create_row(const cll_kernel_row *row, int64_t rows, int64_t cols, const void *data,
                                     cll_cpu_weight **out) {
    *out = NULL;
    const cll_kernel_table *t = cll_cpu_kernel_table_get();
    if (!row || row < t->rows || row >= t->rows + t->n)
        return cll_err(CLL_ERR_ARG, "matmul: %s is not a CPU kernel row", row ? row->name : "(null)");
    cll_status st = check_weight(row->wtype, rows, cols, data);
    if (st != CLL_OK) return st;
    const cll_kernel_shape sv = cpu_shape(row->wtype, rows, cols, 1), sm = cpu_shape(row->wtype, rows, cols, 0);
    const cll_kernel_shape *own = (row->op & CLL_KOP_GEMV) ? &sv : &sm;
    if (!cll_kernel_row_supported(row, own)) {
        char need[48], have[48];
        if ((row->isa & own->features) != row->isa)
            return cll_err(CLL_ERR_UNSUPPORTED, "matmul: row %s needs %s; this CPU offers %s", row->name,
                           cll_kernels_isa_str(row->isa, need, sizeof need),
                           cll_kernels_isa_str(own->features, have, sizeof have));
        return cll_err(CLL_ERR_UNSUPPORTED, "matmul: row %s does not serve %s %lld x %lld%s", row->name,
                       cll_type_name(row->wtype), (long long)rows, (long long)cols,
                       row->interleave > 1 && rows % row->interleave ? " (rows not a multiple of its interleave)" : "");
    }
    /* the op the row does not serve takes the default row of the same layout */
    const cll_kernel_row *gv = (row->op & CLL_KOP_GEMV) ? row : cll_kernels_default(t, CLL_KOP_GEMV, &sv, row->layout);
    const cll_kernel_row *gm = (row->op & CLL_KOP_GEMM) ? row : cll_kernels_default(t, CLL_KOP_GEMM, &sm, row->layout);
    if (!gv || !gm)
        return cll_err(CLL_ERR_UNSUPPORTED, "matmul: row %s serves only %s and no row of its layout serves the other op",
                       row->name, (row->op & CLL_KOP_GEMV) ? "gemv" : "gemm");
    return weight_make(row->wtype, rows, cols, data, gv, gm, out);
}

void cll_cpu_weight_free(cll_cpu_weight *w) {
    if (!w) return;
    free(w->packed); /* alloc_packed: posix_memalign or cll_aalloc, both free() */
    free(w);
}

int64_t cll_cpu_weight_rows(const cll_cpu_weight *w) { return w->rows; }
int64_t cll_cpu_weight_cols(const cll_cpu_weight *w) { return w->cols; }
const char *cll_cpu_weight_kernel(const cll_cpu_weight *w) { return w->gemm->name; }
const char *cll_cpu_weight_gemv_kernel(const cll_cpu_weight *w) { return w->gemv->name; }

bool cll_cpu_weight_repacked(const cll_cpu_weight *w) { return w->packed != NULL; }

size_t cll_cpu_matmul_scratch(const cll_cpu_weight *w, int64_t n) {
    size_t a = cll_kern_act_stride(impl_of(w->gemv)->act, w->cols);
    size_t b = cll_kern_act_stride(impl_of(w->gemm)->act, w->cols) * (size_t)(n > 0 ? n : 1);
    if (w->gemm_small) {
        const size_t c = cll_kern_act_stride(impl_of(w->gemm_small)->act, w->cols) * (size_t)(n > 0 ? n : 1);
        b = c > b ? c : b;
    }
    return (a > b ? a : b) + 64;
}

const char *cll_cpu_weight_small_kernel(const cll_cpu_weight *w) { return w->gemm_small ? w->gemm_small->name : NULL; }
const char *cll_cpu_weight_kernel_for(const cll_cpu_weight *w, int64_t n) { return row_for(w, n)->name; }

typedef struct {
    const kern_impl *k;
    kern_args a;
    const float *x;
    int64_t ldx;
} mm_task;

static void quant_task(void *arg, int ith, int nth) {
    mm_task *m = arg;
    int64_t b, e;
    cll_split(m->a.n, ith, nth, &b, &e);
    for (int64_t t = b; t < e; t++)
        cll_kern_act_quantize(m->k->act, m->x + t * m->ldx, (uint8_t *)m->a.act + t * m->a.act_stride, m->a.cols);
}

/* Row chunks per matmul: a few per thread, so the threads that run keep claiming work
 * while one the scheduler parked holds at most one chunk (the box is often loaded): the knob
 * cpu.chunks_per_thread (cpu/knobs.h, default 4). */
static int row_chunks(const cll_pool *pool, int64_t groups) {
    const int64_t c = (int64_t)cll_cpu_knob.chunks_per_thread * cll_pool_size(pool);
    return (int)(groups < c ? (groups > 0 ? groups : 1) : c);
}

static void run_task(void *arg, int ith, int nth) {
    mm_task *m = arg;
    const int64_t al = m->k->row_align;
    int64_t b, e;
    cll_split(m->a.rows / al, ith, nth, &b, &e);
    if (e > b) m->k->run(&m->a, b * al, e * al);
}

void cll_cpu_matmul(cll_pool *pool, const cll_cpu_weight *w, const float *x, int64_t ldx, int64_t n, float *y,
                    int64_t ldy, void *scratch) {
    if (n <= 0) return;
    const cll_kernel_row *row = row_for(w, n);
    mm_task m;
    m.k = impl_of(row);
    m.x = x;
    m.ldx = ldx;
    m.a.w = w->w;
    m.a.w_row_bytes = w->row_bytes;
    m.a.rows = w->rows;
    m.a.cols = w->cols;
    m.a.act = (const uint8_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    m.a.act_stride = cll_kern_act_stride(m.k->act, w->cols);
    m.a.n = n;
    m.a.y = y;
    m.a.ldy = ldy;
    m.a.wtype = w->type;
    /* quantizing a token costs ~1 us; below a few tokens a fork-join costs more */
    if (n >= 4 && cll_pool_size(pool) > 1) cll_pool_run(pool, quant_task, &m);
    else quant_task(&m, 0, 1);
    cll_pool_run_chunks(pool, run_task, &m, row_chunks(pool, w->rows / m.k->row_align));
}

/* ---- several weights, one input (q/k/v, gate/up): quantize once, one fork-join ---- */

#define MANY_MAX 8
typedef struct {
    int nw;
    const kern_impl *k[MANY_MAX];
    kern_args a[MANY_MAX];
    cll_cpu_mm_epilogue ep; /* NULL, or run per chunk on its rows (all weights share rows) */
    void *ep_arg;
} mm_many;

static void run_many_task(void *arg, int ith, int nth) {
    mm_many *m = arg;
    int64_t b0 = 0, e0 = 0;
    for (int i = 0; i < m->nw; i++) {
        const int64_t al = m->k[i]->row_align;
        int64_t b, e;
        cll_split(m->a[i].rows / al, ith, nth, &b, &e);
        if (e > b) m->k[i]->run(&m->a[i], b * al, e * al);
        if (i == 0) b0 = b * al, e0 = e * al;
    }
    if (m->ep && e0 > b0) m->ep(m->ep_arg, b0, e0);
}

typedef struct {
    cll_cpu_mm_epilogue ep;
    void *arg;
    int64_t rows;
} ep_task;

static void run_ep_task(void *arg, int ith, int nth) {
    ep_task *t = arg;
    int64_t b, e;
    cll_split(t->rows, ith, nth, &b, &e);
    if (e > b) t->ep(t->arg, b, e);
}

void cll_cpu_matmul_many_ep(cll_pool *pool, int nw, const cll_cpu_weight *const *ws, const float *x, int64_t ldx,
                            int64_t n, float *const *ys, const int64_t *ldys, void *scratch, cll_cpu_mm_epilogue ep,
                            void *ep_arg) {
    if (n <= 0 || nw <= 0) return;
    bool same = nw <= MANY_MAX, same_rows = true;
    for (int i = 1; i < nw && same; i++) {
        const cll_kernel_row *r0 = row_for(ws[0], n), *ri = row_for(ws[i], n);
        same = ws[i]->cols == ws[0]->cols && impl_of(ri)->act == impl_of(r0)->act;
        same_rows &= ws[i]->rows == ws[0]->rows && impl_of(ri)->row_align == impl_of(r0)->row_align;
    }
    if (!same || (ep && !same_rows)) {
        if (same) cll_cpu_matmul_many_ep(pool, nw, ws, x, ldx, n, ys, ldys, scratch, NULL, NULL);
        else
            for (int i = 0; i < nw; i++) cll_cpu_matmul(pool, ws[i], x, ldx, n, ys[i], ldys[i], scratch);
        if (ep) {
            ep_task t = {ep, ep_arg, ws[0]->rows};
            cll_pool_run_chunks(pool, run_ep_task, &t, row_chunks(pool, ws[0]->rows / 8));
        }
        return;
    }
    mm_task q; /* quantize once with the first weight's layout */
    q.k = impl_of(row_for(ws[0], n));
    q.x = x;
    q.ldx = ldx;
    q.a.cols = ws[0]->cols;
    q.a.n = n;
    q.a.act = (const uint8_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    q.a.act_stride = cll_kern_act_stride(q.k->act, q.a.cols);
    if (n >= 4 && cll_pool_size(pool) > 1) cll_pool_run(pool, quant_task, &q);
    else quant_task(&q, 0, 1);
    mm_many m;
    m.nw = nw;
    m.ep = ep;
    m.ep_arg = ep_arg;
    for (int i = 0; i < nw; i++) {
        const cll_cpu_weight *w = ws[i];
        m.k[i] = impl_of(row_for(w, n));
        m.a[i] = q.a;
        m.a[i].w = w->w;
        m.a[i].w_row_bytes = w->row_bytes;
        m.a[i].rows = w->rows;
        m.a[i].y = ys[i];
        m.a[i].ldy = ldys[i];
        m.a[i].wtype = w->type;
    }
    /* chunks count the first weight's row groups: with an epilogue every chunk must cover
     * the same rows of each weight */
    int64_t groups = 0;
    for (int i = 0; i < nw; i++) groups += ws[i]->rows / m.k[i]->row_align;
    if (ep) groups = ws[0]->rows / m.k[0]->row_align;
    cll_pool_run_chunks(pool, run_many_task, &m, row_chunks(pool, groups));
}

void cll_cpu_matmul_many(cll_pool *pool, int nw, const cll_cpu_weight *const *ws, const float *x, int64_t ldx,
                         int64_t n, float *const *ys, const int64_t *ldys, void *scratch) {
    cll_cpu_matmul_many_ep(pool, nw, ws, x, ldx, n, ys, ldys, scratch, NULL, NULL);
}

const cll_kernel_table *cll_cpu_kernel_table(void) { return cll_cpu_kernel_table_get(); }
