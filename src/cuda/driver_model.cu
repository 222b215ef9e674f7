/* cuda/driver_model: makes a bound model resident on the device, once: every weight in its
 * file block format (never widened to floats), in the layout of the gemv row that serves it
 * (cll_cu_weight_upload_l: the split repack, IQ3_S's 17 B a group), q|k|v and gate|up concatenated into
 * one weight each when their types match, small vectors (norms, biases, rope factors) as f32,
 * a tied output head sharing the embedding's bytes. One allocation, sized and checked against
 * the device's free memory before anything is copied.
 * Owns the device arena of the weights. Rule: glue only, no kernels here. */
#include <memory>
#include <vector>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/driver_internal.cuh"
#include "cuda/pick.h"

#define ARENA_ALIGN 256

/* the upload helpers may answer a cudaError_t or a cll_status: both become a cll_status */
[[maybe_unused]] static cll_status up_status(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return CLL_OK;
    return cll_err(CLL_ERR_DEVICE, "%s:%d: uploading %s: %s", __FILE__, __LINE__, what, cudaGetErrorString(e));
}
[[maybe_unused]] static cll_status up_status(cll_status st, const char *what) {
    return st == CLL_OK ? st : cll_err_prefix(st, "uploading %s", what);
}

/* one resident weight: up to 3 tensors concatenated row-wise per matrix */
typedef struct {
    cll_cu_part *dst;
    const cll_gguf_tensor *t[3];
    int nt;
    uint32_t type;
    int64_t rows, cols, n_mat;
    size_t off, bytes;
} wjob;

/* one f32 vector */
typedef struct {
    float **dst;
    const cll_gguf_tensor *t;
    size_t off, bytes;
} vjob;

typedef struct {
    wjob *w;
    int nw, capw;
    vjob *v;
    int nv, capv;
    size_t total, host_max; /* arena bytes; largest concatenation staged on the host */
    cll_driver_model *dm;
} plan;

/* a non-negative integer knob, or dflt when unset or empty */
static int fused_env(const char *name, int dflt) {
    const char *e = getenv(name);
    const int v = e && *e ? atoi(e) : dflt;
    return v < 0 ? 0 : v;
}

static size_t align_up(size_t x) { return (x + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1); }

static void tname(const cll_gguf_tensor *t, char *buf, size_t n) {
    snprintf(buf, n, "%.*s", (int)t->name.len, t->name.ptr);
}

/* a zeroed job appended to the plan (NULL: out of memory, with the error set) */
static wjob *new_job(plan *pl) {
    if (pl->nw == pl->capw) {
        pl->capw = pl->capw ? 2 * pl->capw : 64;
        wjob *nwj = (wjob *)realloc(pl->w, sizeof(wjob) * (size_t)pl->capw);
        if (!nwj) {
            cll_err(CLL_ERR_NOMEM, "cuda model: out of memory");
            return NULL;
        }
        pl->w = nwj;
    }
    wjob *j = &pl->w[pl->nw++];
    memset(j, 0, sizeof *j);
    return j;
}

static cll_status add_w(plan *pl, cll_cu_part *dst, const cll_gguf_tensor *const *ts, int nt) {
    wjob *j = new_job(pl);
    if (!j) return CLL_ERR_NOMEM;
    j->dst = dst;
    j->nt = nt;
    j->type = ts[0]->type;
    j->cols = (int64_t)ts[0]->ne[0];
    j->n_mat = (int64_t)ts[0]->ne[2];
    for (int i = 0; i < nt; i++) {
        j->t[i] = ts[i];
        j->rows += (int64_t)ts[i]->ne[1];
    }
    char nm[128];
    tname(ts[0], nm, sizeof nm);
    dst->gemv = cll_cu_gemv_default(j->type, j->rows, j->cols);
    if (!dst->gemv)
        return cll_err(CLL_ERR_UNSUPPORTED, "cuda: tensor %s: type %s (%lld x %lld) has no CUDA gemv", nm,
                       cll_type_name(j->type), (long long)j->rows, (long long)j->cols);
    dst->moe = j->n_mat > 1 ? cll_cu_moe_default(j->type, dst->gemv->layout, j->rows, j->cols) : NULL;
    bool few_forced = false;
    dst->few = j->n_mat == 1 ? cll_cu_gemv_few_default(j->type, dst->gemv->layout, j->rows, j->cols, CLL_CU_FEW_MAX,
                                                       &few_forced)
                             : NULL;
    /* the int8 tensor-core row for the larger few-token batches, unless a pin chose the class's row
     * or CLLAMA_CUDA_FEW_MMA=0 (read at each load) */
    const char *fm = getenv("CLLAMA_CUDA_FEW_MMA");
    dst->mma = dst->few && !few_forced && !(fm && fm[0] == '0')
                   ? cll_cu_gemv_mma_row(j->type, dst->gemv->layout, j->rows, j->cols)
                   : NULL;
    /* a pin of the n9-64 class naming that row: the tile serves 9..64 tokens of this weight */
    if (j->n_mat == 1 && cll_cu_gemv_tile_pinned(j->type, dst->gemv->layout, j->rows, j->cols)) {
        dst->mma_tile_only = !dst->mma; /* the 2..8 class keeps what it had (a pin, or the knob) */
        dst->mma = cll_cu_gemv_mma_row(j->type, dst->gemv->layout, j->rows, j->cols);
        dst->mma_tile = dst->mma != NULL;
    }
    dst->fused = j->n_mat == 1 ? cll_cu_gemm_fused_row(j->type, dst->gemv->layout, j->rows, j->cols) : NULL;
    /* its token range: CLLAMA_CUDA_FUSED_MIN / _MAX (read at each load, as CLLAMA_CUDA_FEW_MMA; _MAX=0: the
     * f16 panels instead), else the type's default */
    dst->fused_min = fused_env("CLLAMA_CUDA_FUSED_MIN", cll_cu_fused_min_tokens(j->type));
    dst->fused_max = fused_env("CLLAMA_CUDA_FUSED_MAX", CLL_CU_FUSED_MAX);
    j->bytes = align_up(cll_cu_weight_bytes(j->type, dst->gemv->layout, j->rows, j->cols, j->n_mat));
    j->off = pl->total;
    pl->total += j->bytes;
    if (nt > 1) {
        const size_t host = (size_t)cll_row_bytes(j->type, (uint64_t)j->cols) * (size_t)j->rows * (size_t)j->n_mat;
        if (host > pl->host_max) pl->host_max = host;
    }
    const size_t elems = (size_t)j->rows * (size_t)j->cols;
    if (elems > pl->dm->max_mat_elems) pl->dm->max_mat_elems = elems;
    if (j->cols > pl->dm->max_cols) pl->dm->max_cols = j->cols;
    return CLL_OK;
}

/* a product of mixed types fuses its runs of one type (cll_cu_product_parts): a Q4_K_M layer's q|k
 * beside its Q6_K v is two launches, not three. On by default: H200, l2-7b Q4_K_M, same call (call1 of
 * the fourteenth session), speed_tg 8 / 16 / 32 sequences 2123 / 3433 / 4983 -> 2171 / 3501 / 5059
 * (+1.5 to +2.3%), tg128 517.0 -> 525.0. CLLAMA_CUDA_PART_RUNS=0 (read at each load) keeps one weight
 * per tensor for A/B. A fused weight's launch may pick another split-K than its parts did, so its
 * sums run in another order (not bit-exact with the split parts; the gates hold either way). */
static bool part_runs(void) {
    const char *e = getenv("CLLAMA_CUDA_PART_RUNS");
    return !(e && e[0] == '0');
}

/* a product of 1..3 tensors: one weight per cll_cu_product_parts run, each placed at its outputs'
 * offset in the product's row */
static cll_status add_product(plan *pl, cll_cu_part *parts, int *n_parts, const cll_gguf_tensor *const *ts, int nt) {
    uint32_t types[3];
    int64_t cols[3];
    int starts[4];
    for (int i = 0; i < nt; i++) types[i] = (uint32_t)ts[i]->type, cols[i] = (int64_t)ts[i]->ne[0];
    const int np = cll_cu_product_parts(types, cols, nt, part_runs(), starts);
    starts[np] = nt;
    int64_t off = 0;
    for (int i = 0; i < np; i++) {
        parts[i].y_off = off;
        for (int k = starts[i]; k < starts[i + 1]; k++) off += (int64_t)ts[k]->ne[1];
        cll_status st = add_w(pl, &parts[i], &ts[starts[i]], starts[i + 1] - starts[i]);
        if (st != CLL_OK) return st;
    }
    *n_parts = np;
    return CLL_OK;
}

static cll_status add_v(plan *pl, float **dst, const cll_gguf_tensor *t) {
    *dst = NULL;
    if (!t) return CLL_OK;
    if (pl->nv == pl->capv) {
        pl->capv = pl->capv ? 2 * pl->capv : 64;
        vjob *nv = (vjob *)realloc(pl->v, sizeof(vjob) * (size_t)pl->capv);
        if (!nv) return cll_err(CLL_ERR_NOMEM, "cuda model: out of memory");
        pl->v = nv;
    }
    vjob *j = &pl->v[pl->nv++];
    j->dst = dst;
    j->t = t;
    j->bytes = align_up(sizeof(float) * (size_t)t->ne[0]);
    j->off = pl->total;
    pl->total += j->bytes;
    return CLL_OK;
}

static cll_status plan_model(plan *pl) {
    cll_driver_model *dm = pl->dm;
    const cll_model *m = dm->m;
    const cll_hparams *hp = &m->hp;
    cll_status st;
#define P(x)                              \
    do {                                  \
        if ((st = (x)) != CLL_OK) return st; \
    } while (0)
    { /* the embedding table: get_rows reads it; a tied output head runs its gemv */
        const cll_gguf_tensor *t = m->tok_embd;
        if (m->output == m->tok_embd) {
            P(add_w(pl, &dm->output, &t, 1));
        } else {
            /* an untied embedding needs no gemv row, only get_rows for its type */
            if (!cll_cu_type_served(t->type)) {
                char nm[128];
                tname(t, nm, sizeof nm);
                return cll_err(CLL_ERR_UNSUPPORTED, "cuda: tensor %s: type %s is not served on the GPU", nm,
                               cll_type_name(t->type));
            }
            wjob *j = new_job(pl);
            if (!j) return CLL_ERR_NOMEM;
            j->dst = NULL; /* the embedding: dm->tok_embd */
            j->t[0] = t;
            j->nt = 1;
            j->type = t->type;
            j->rows = (int64_t)t->ne[1];
            j->cols = (int64_t)t->ne[0];
            j->n_mat = 1;
            j->bytes = align_up(cll_cu_weight_bytes(j->type, 0, j->rows, j->cols, 1)); /* layout 0 (upload) */
            j->off = pl->total;
            pl->total += j->bytes;
            P(add_w(pl, &dm->output, &m->output, 1));
        }
    }
    P(add_v(pl, &dm->output_norm, m->output_norm));
    P(add_v(pl, &dm->rope_ff, m->rope_freqs));
    for (int32_t il = 0; il < hp->n_layer; il++) {
        const cll_layer *L = &m->layers[il];
        cll_cu_layer *C = &dm->layers[il];
        const cll_gguf_tensor *qkv[3] = {L->wq, L->wk, L->wv};
        P(add_product(pl, C->qkv, &C->n_qkv, qkv, 3));
        P(add_w(pl, &C->wo, &L->wo, 1));
        if (hp->n_expert > 0) {
            P(add_w(pl, &C->router, &L->ffn_gate_inp, 1));
            const cll_gguf_tensor *gu[2] = {L->gate_exps, L->up_exps};
            P(add_product(pl, C->gu, &C->n_gu, gu, 2));
            P(add_w(pl, &C->down, &L->down_exps, 1));
        } else {
            const cll_gguf_tensor *gu[2] = {L->ffn_gate, L->ffn_up};
            P(add_product(pl, C->gu, &C->n_gu, gu, 2));
            P(add_w(pl, &C->down, &L->ffn_down, 1));
        }
        P(add_v(pl, &C->attn_norm, L->attn_norm));
        P(add_v(pl, &C->ffn_norm, L->ffn_norm));
        P(add_v(pl, &C->post_attn_norm, L->post_attn_norm));
        P(add_v(pl, &C->post_ffn_norm, L->post_ffn_norm));
        P(add_v(pl, &C->q_norm, L->q_norm));
        P(add_v(pl, &C->k_norm, L->k_norm));
        P(add_v(pl, &C->bq, L->bq));
        P(add_v(pl, &C->bk, L->bk));
        P(add_v(pl, &C->bv, L->bv));
    }
#undef P
    return CLL_OK;
}

static void progress(bool on, size_t done, size_t total, int *last) {
    if (!on || total == 0) return;
    const int pct = (int)((double)done * 100.0 / (double)total);
    if (pct == *last) return;
    *last = pct;
    fprintf(stderr, "\rcuda: uploading weights %3d%% (%zu / %zu MiB)", pct, done >> 20, total >> 20);
    if (done >= total) fputc('\n', stderr);
    fflush(stderr);
}

static cll_status upload(plan *pl, bool show) {
    cll_driver_model *dm = pl->dm;
    uint8_t *base = (uint8_t *)dm->arena;
    uint8_t *host = NULL;
    if (pl->host_max && !(host = (uint8_t *)malloc(pl->host_max)))
        return cll_err(CLL_ERR_NOMEM, "cuda model: %zu bytes of host staging: out of memory", pl->host_max);
    size_t done = 0;
    int last = -1;
    cll_status st = CLL_OK;
    float *vbuf = NULL;
    for (int i = 0; i < pl->nw && st == CLL_OK; i++) {
        wjob *j = &pl->w[i];
        char nm[128];
        tname(j->t[0], nm, sizeof nm);
        const void *src = j->t[0]->data;
        if (j->nt > 1) { /* per matrix: the parts' rows one after another */
            const size_t rb = (size_t)cll_row_bytes(j->type, (uint64_t)j->cols);
            uint8_t *o = host;
            for (int64_t e = 0; e < j->n_mat; e++)
                for (int k = 0; k < j->nt; k++) {
                    const size_t sl = rb * (size_t)j->t[k]->ne[1];
                    memcpy(o, (const uint8_t *)j->t[k]->data + (size_t)e * sl, sl);
                    o += sl;
                }
            src = host;
        }
        cll_cu_weight *w = j->dst ? &j->dst->w : &dm->tok_embd;
        /* in the layout of the gemv row that serves it (an untied embedding: layout 0) */
        const int layout = j->dst && j->dst->gemv ? j->dst->gemv->layout : 0;
        st = up_status(cll_cu_weight_upload_l(w, src, j->type, layout, j->rows, j->cols, j->n_mat, base + j->off), nm);
        if (st == CLL_OK && j->dst == &dm->output && dm->m->output == dm->m->tok_embd) dm->tok_embd = *w;
        done += j->bytes;
        progress(show, done, pl->total, &last);
    }
    for (int i = 0; i < pl->nv && st == CLL_OK; i++) {
        vjob *j = &pl->v[i];
        const cll_type_traits *tr = cll_type_traits_get(j->t->type);
        const int64_t n = (int64_t)j->t->ne[0];
        char nm[128];
        tname(j->t, nm, sizeof nm);
        if (!tr || !tr->to_f32) {
            st = cll_err(CLL_ERR_UNSUPPORTED, "cuda: tensor %s: type %s cannot be read as f32", nm,
                         cll_type_name(j->t->type));
            break;
        }
        float *nb = (float *)realloc(vbuf, sizeof(float) * (size_t)n);
        if (!nb) {
            st = cll_err(CLL_ERR_NOMEM, "cuda model: out of memory");
            break;
        }
        vbuf = nb;
        tr->to_f32(j->t->data, vbuf, n);
        *j->dst = (float *)(base + j->off);
        st = up_status(cudaMemcpy(*j->dst, vbuf, sizeof(float) * (size_t)n, cudaMemcpyHostToDevice), nm);
        done += j->bytes;
        progress(show, done, pl->total, &last);
    }
    free(vbuf);
    free(host);
    if (st == CLL_OK) st = up_status(cudaDeviceSynchronize(), "weights");
    return st;
}

/* CLLAMA_CUDA_PANELS=auto (default) | on | off: batch products (prefill) read the quantized
 * weights as resident f16 panels, decoded once here, so a prefill product costs what an F16
 * model's does (no decode per product, no panel written and read back per product; decode
 * steps keep reading the quantized bytes). auto keeps them within half of the device memory
 * free after the weights (the rest stays for KV caches and other processes); on within what is
 * free less 1 GiB; a size (512M, 20G) within that size; off streams a panel per product
 * (cll_cu_gemm). When not all fit, the weights that do (layer order, cll_cu_panels_keep) keep
 * theirs and the others stream. */
static cll_status make_panels(cll_driver_model *dm, size_t free_after, char *note, size_t ncap) {
    note[0] = 0;
    const char *e = getenv("CLLAMA_CUDA_PANELS");
    int mode = 1;
    size_t cap = 0;
    if (e && *e) {
        char *end = NULL;
        const double v = strtod(e, &end);
        if (!strcmp(e, "off") || !strcmp(e, "0")) mode = 0;
        else if (!strcmp(e, "on") || !strcmp(e, "1")) mode = 2;
        else if (end != e && v > 0 && (!*end || (strchr("KkMmGg", *end) && !end[1]))) { /* a size: the cap */
            const double unit = !*end ? 1.0 : (*end == 'K' || *end == 'k') ? 1024.0
                                            : (*end == 'M' || *end == 'm') ? 1048576.0 : 1073741824.0;
            mode = 3;
            cap = (size_t)(v * unit);
        } else if (strcmp(e, "auto"))
            return cll_err(CLL_ERR_ARG, "CLLAMA_CUDA_PANELS=%s: expected auto, on, off or a size (512M, 20G)", e);
    }
    if (!mode) {
        snprintf(note, ncap, ", prefill panels streamed (CLLAMA_CUDA_PANELS=off)");
        return CLL_OK;
    }
    /* the weights that can have a panel, in layer order, with their panel bytes */
    const int32_t L = dm->m->hp.n_layer;
    std::vector<cll_cu_part *> parts;
    std::vector<size_t> bytes;
    for (int32_t il = 0; il < L; il++) {
        cll_cu_layer *C = &dm->layers[il];
        cll_cu_part *lp[8];
        int np = 0;
        for (int i = 0; i < C->n_qkv; i++) lp[np++] = &C->qkv[i];
        lp[np++] = &C->wo;
        for (int i = 0; i < C->n_gu; i++) lp[np++] = &C->gu[i];
        lp[np++] = &C->down;
        for (int i = 0; i < np; i++) {
            cll_cu_part *p = lp[i];
            if (!p->w.d || !cll_cu_weight_has_panel(&p->w) || p->w.cols % 32) continue;
            parts.push_back(p);
            bytes.push_back(((size_t)p->w.n_mat * (size_t)p->w.rows * (size_t)p->w.cols * 2 + 255) & ~(size_t)255);
        }
    }
    size_t all = 0;
    for (size_t b : bytes) all += b;
    if (all == 0) return CLL_OK;
    const double gib = (double)((size_t)1 << 30);
    std::unique_ptr<bool[]> keep(new bool[parts.size()]);
    const char *bname = mode == 1 ? "auto" : mode == 2 ? "free-memory" : "CLLAMA_CUDA_PANELS";
    const size_t total =
        cll_cu_panels_keep(bytes.data(), (int)parts.size(), cll_cu_panels_budget(free_after, mode, cap), keep.get());
    if (total == 0) {
        snprintf(note, ncap, ", prefill panels streamed (%.1f GiB of f16 panels over the %s budget)", all / gib, bname);
        return CLL_OK;
    }
    if (cudaMalloc(&dm->panels, total) != cudaSuccess) {
        cudaGetLastError();
        dm->panels = NULL;
        snprintf(note, ncap, ", prefill panels streamed (cudaMalloc of %.1f GiB failed)", total / gib);
        return CLL_OK;
    }
    dm->panel_bytes = total;
    uint8_t *at = (uint8_t *)dm->panels;
    size_t n_kept = 0;
    for (size_t i = 0; i < parts.size(); i++) {
        if (!keep[i]) continue;
        cll_cu_part *p = parts[i];
        CLL_CU_TRY(cll_cu_panel_full(&p->w, at, 0));
        cll_cu_weight_desc(&p->w16, CLL_TYPE_F16, 0, p->w.rows, p->w.cols, p->w.n_mat, at);
        p->moe16 = p->w.n_mat > 1 ? cll_cu_moe_default(CLL_TYPE_F16, 0, p->w.rows, p->w.cols) : NULL;
        at += bytes[i];
        n_kept++;
    }
    CLL_CU_TRY(cudaDeviceSynchronize());
    if (total == all) snprintf(note, ncap, ", prefill panels f16 resident (%.1f MiB)", dm->panel_bytes / 1048576.0);
    else
        snprintf(note, ncap, ", prefill panels f16 resident for %zu of %zu weights (%.1f of %.1f MiB, the %s budget; the rest streamed)",
                 n_kept, parts.size(), total / 1048576.0, all / 1048576.0, bname);
    return CLL_OK;
}

static cll_status check_shapes(const cll_model *m) {
    const cll_hparams *hp = &m->hp;
    if (hp->head_dim_k <= 0 || hp->head_dim_v <= 0 || hp->head_dim_k > 256 || hp->head_dim_v > 256)
        return cll_err(CLL_ERR_UNSUPPORTED, "cuda: head dims %d/%d (the attention kernel serves up to 256)",
                       hp->head_dim_k, hp->head_dim_v);
    if (hp->n_head_kv <= 0 || hp->n_head % hp->n_head_kv)
        return cll_err(CLL_ERR_UNSUPPORTED, "cuda: %d heads over %d kv heads", hp->n_head, hp->n_head_kv);
    if (hp->n_rot > hp->head_dim_k || hp->n_rot % 2)
        return cll_err(CLL_ERR_UNSUPPORTED, "cuda: n_rot %d with head dim %d", hp->n_rot, hp->head_dim_k);
    return CLL_OK;
}

cll_status cll_cu_model_create(const cll_model *m, const cll_driver_model_params *p, cll_driver_model **out) {
    *out = NULL;
    cll_status st = check_shapes(m);
    if (st != CLL_OK) return st;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        cudaGetLastError();
        return cll_err(CLL_ERR_DEVICE, "cuda: no CUDA device is visible");
    }
    if (p->device < 0 || p->device >= ndev)
        return cll_err(CLL_ERR_ARG, "cuda: device %d requested, %d visible", p->device, ndev);
    CLL_CU_TRY(cudaSetDevice(p->device));
    cll_driver_model *dm = (cll_driver_model *)calloc(1, sizeof *dm);
    if (!dm) return cll_err(CLL_ERR_NOMEM, "cuda model: out of memory");
    dm->m = m;
    dm->device = p->device;
    dm->layers = (cll_cu_layer *)calloc((size_t)m->hp.n_layer, sizeof *dm->layers);
    plan pl;
    memset(&pl, 0, sizeof pl);
    pl.dm = dm;
    if (!dm->layers) {
        free(dm);
        return cll_err(CLL_ERR_NOMEM, "cuda model: out of memory");
    }
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, p->device) == cudaSuccess) snprintf(dm->dev_name, sizeof dm->dev_name, "%s", prop.name);
    st = plan_model(&pl);
    size_t fr = 0, tot = 0;
    if (st == CLL_OK && cudaMemGetInfo(&fr, &tot) != cudaSuccess)
        st = cll_err(CLL_ERR_DEVICE, "%s:%d: cudaMemGetInfo failed", __FILE__, __LINE__);
    /* CLLAMA_CUDA_MEM_LIMIT_MB caps what this process may take (a GPU shared with others) */
    const char *lim = getenv("CLLAMA_CUDA_MEM_LIMIT_MB");
    if (st == CLL_OK && lim && *lim) {
        char *end = NULL;
        const double mb = strtod(lim, &end);
        if (end == lim || *end || !(mb >= 0))
            st = cll_err(CLL_ERR_ARG, "CLLAMA_CUDA_MEM_LIMIT_MB=%s: expected a number of MiB", lim);
        else if ((double)fr > mb * 1048576.0)
            fr = (size_t)(mb * 1048576.0);
    }
    if (st == CLL_OK && p->mem_limit && fr > p->mem_limit) fr = (size_t)p->mem_limit; /* --gpu-mem-limit */
    dm->mem_limit = p->mem_limit;
    if (st == CLL_OK && pl.total > fr)
        st = cll_err(CLL_ERR_NOMEM, "cuda: the model needs %.1f MiB of device memory, %.1f MiB are %s on %s (of %.1f MiB)%s",
                     pl.total / 1048576.0, fr / 1048576.0, p->mem_limit ? "allowed" : "free", dm->dev_name, tot / 1048576.0,
                     p->mem_limit ? ": the GPU memory limit; a split over more GPUs (--tp) holds a share on each" : "");
    if (st == CLL_OK) {
        cudaError_t e = cudaMalloc(&dm->arena, pl.total);
        if (e != cudaSuccess) {
            dm->arena = NULL;
            st = cll_err(CLL_ERR_NOMEM, "%s:%d: cudaMalloc of %.1f MiB of weights: %s", __FILE__, __LINE__,
                         pl.total / 1048576.0, cudaGetErrorString(e));
        }
    }
    if (st == CLL_OK) {
        dm->arena_bytes = pl.total;
        st = upload(&pl, p->progress);
    }
    char pnote[160] = "";
    if (st == CLL_OK) st = make_panels(dm, fr - pl.total, pnote, sizeof pnote);
    if (st == CLL_OK) {
        const cll_cu_layer *C = &dm->layers[0];
        snprintf(dm->desc, sizeof dm->desc, "cuda %s: %.1f MiB resident, q/k/v %s, gate/up %s, %s weights%s", dm->dev_name,
                 dm->arena_bytes / 1048576.0, C->n_qkv == 1 ? "fused" : C->n_qkv == 2 ? "in 2 weights" : "split", C->n_gu == 1 ? "fused" : "split",
                 cll_type_name(C->qkv[0].w.type), pnote);
    }
    free(pl.w);
    free(pl.v);
    if (st != CLL_OK) {
        cll_cu_model_free(dm);
        return st;
    }
    *out = dm;
    return CLL_OK;
}

void cll_cu_model_free(cll_driver_model *dm) {
    if (!dm) return;
    if (dm->arena || dm->panels) cudaSetDevice(dm->device);
    if (dm->arena) cudaFree(dm->arena);
    if (dm->panels) cudaFree(dm->panels);
    free(dm->layers);
    free(dm);
}
