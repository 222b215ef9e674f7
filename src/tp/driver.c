/* tp/driver: the tensor-parallel driver (driver.h). */
#include "tp/driver.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/threads.h"
#include "model/plan.h"
#include "model/shard.h"
#include "sample/sample.h"

struct cll_driver_model {
    const cll_driver *inner;
    int32_t n;
    int32_t devices[CLL_TP_MAX];
    cll_model *views[CLL_TP_MAX]; /* NULL for TP=1: the rank runs the whole model */
    cll_driver_model *dm[CLL_TP_MAX];
    int64_t v0[CLL_TP_MAX], v1[CLL_TP_MAX]; /* each rank's vocab columns */
    int32_t n_vocab;
    char desc[256];
};

/* one forward's (or one preparation's) work for every rank */
typedef struct {
    const cll_driver_state_params *create; /* non-NULL: create each rank's state (its rank and comm set) */
    int32_t prepare; /* > 0: prepare_batches(prepare) instead of a forward */
    const cll_driver_batch *b[CLL_TP_MAX];
    cll_driver_out kind;
    void *out[CLL_TP_MAX];
    cll_status st[CLL_TP_MAX];
    char err[CLL_TP_MAX][256];
    int32_t failed; /* the first rank that failed (-1: none): the others were woken by its abort */
} job;

struct cll_driver_state {
    cll_driver_model *tm;
    cll_driver_comm *comm;
    cll_driver_state *st[CLL_TP_MAX];
    int32_t n_out_max, topk_max;
    /* per rank: its logits rows (n_out_max x its vocab slice), or its candidates (n_out_max x
     * topk_max ids then as many logits) */
    void *buf[CLL_TP_MAX];
    bool buf_drv[CLL_TP_MAX]; /* from the inner driver's host_alloc */
    float *row;               /* (n_vocab) one gathered row behind a greedy request over logits */
    int32_t n_batch, n_seq, n_ctx;
    /* the rank threads: rank r > 0 runs on thread r - 1; rank 0 on the caller */
    pthread_t th[CLL_TP_MAX];
    struct rank_arg {
        cll_driver_state *s;
        int32_t r;
    } arg[CLL_TP_MAX];
    int32_t n_th;
    pthread_mutex_t mu;
    pthread_cond_t cv_go, cv_done;
    uint64_t gen;
    int32_t pending;
    bool quit;
    job *cur;
    uint64_t forwards, tokens;
};

/* ---- model ---------------------------------------------------------------------------------- */

static void tp_model_free(cll_driver_model *tm) {
    if (!tm) return;
    for (int32_t r = 0; r < tm->n; r++) {
        if (tm->dm[r]) tm->inner->model_free(tm->dm[r]);
        cll_model_free(tm->views[r]);
    }
    free(tm);
}

static cll_status tp_model_create(const cll_model *m, const cll_driver_model_params *p, cll_driver_model **out) {
    *out = NULL;
    const cll_driver *in = p->inner;
    const int32_t n = p->tp;
    if (!in || in == &cll_tp_driver) return cll_err(CLL_ERR_ARG, "tensor parallel: no inner driver");
    if (n < 1 || n > CLL_TP_MAX)
        return cll_err(CLL_ERR_ARG, "tensor parallel over %d %s: 1 to %d", n, in == &cll_cpu_driver ? "ranks" : "GPUs",
                       CLL_TP_MAX);
    if (n > 1 && !in->comm_create)
        return cll_err(CLL_ERR_UNSUPPORTED, "tensor parallel: the %s driver cannot run ranks of a split model", in->name);
    /* which device lists work (one rank a GPU; every rank on one GPU: the simulated split) is the inner
     * driver's communicator's to say, at the context */
    for (int32_t r = 0; p->devices && r < n; r++)
        if (p->devices[r] < 0) return cll_err(CLL_ERR_ARG, "tensor parallel: device %d", p->devices[r]);
    cll_plan *plan = NULL;
    cll_status st = cll_plan_create(m, &plan);
    if (st != CLL_OK) return st;
    cll_shard sh[CLL_TP_MAX];
    for (int32_t r = 0; r < n && st == CLL_OK; r++) st = cll_shard_plan(plan, &m->hp, n, r, &sh[r]);
    cll_plan_free(plan);
    if (st != CLL_OK)
        return cll_err_prefix(st, "tensor parallel over %d %s", n, in == &cll_cpu_driver ? "ranks" : "GPUs");
    cll_driver_model *tm = calloc(1, sizeof *tm);
    if (!tm) return cll_err(CLL_ERR_NOMEM, "tensor parallel: out of memory");
    tm->inner = in;
    tm->n = n;
    tm->n_vocab = m->hp.n_vocab;
    for (int32_t r = 0; r < n; r++) {
        /* default devices: the CPU's ranks share the host; GPU ranks take 0..n-1 (one rank: the asked device) */
        tm->devices[r] = p->devices ? p->devices[r] : in == &cll_cpu_driver ? 0 : n == 1 ? p->device : r;
        tm->v0[r] = sh[r].v0;
        tm->v1[r] = sh[r].v1;
        const cll_model *rm = m;
        if (n > 1) {
            st = cll_model_shard(m, &sh[r], &tm->views[r]);
            if (st != CLL_OK) break;
            rm = tm->views[r];
        }
        cll_driver_model_params rp = *p;
        rp.device = tm->devices[r];
        rp.tp = 0;
        rp.devices = NULL;
        rp.inner = NULL;
        if (in == &cll_cpu_driver && p->n_threads > 0) rp.n_threads = p->n_threads / n > 0 ? p->n_threads / n : 1;
        st = in->model_create(rm, &rp, &tm->dm[r]);
        if (st != CLL_OK) {
            cll_err_prefix(st, "tensor parallel rank %d of %d (device %d)", r, n, tm->devices[r]);
            break;
        }
        /* a driver with its own copy of every weight (a GPU's) needs the host slices no more: the peak
         * is then one rank's copies, not all of them (~9 GB a rank for Llama-3-70B Q4_K_M over 2) */
        if (in->owns_weights) cll_model_shard_drop_copies(tm->views[r]);
    }
    if (st != CLL_OK) {
        tp_model_free(tm);
        return st;
    }
    *out = tm;
    return CLL_OK;
}

static const char *tp_model_desc(const cll_driver_model *tm) {
    if (!tm) return "";
    cll_driver_model *w = (cll_driver_model *)tm;
    const char *d = tm->inner->model_desc ? tm->inner->model_desc(tm->dm[0]) : "";
    snprintf(w->desc, sizeof w->desc, "tp %d x %s [rank 0: %s]", tm->n, tm->inner->name, d);
    return w->desc;
}

/* ---- the rank threads ----------------------------------------------------------------------- */

/* a rank's state: on its own thread, as all ranks' at once, so a device driver may run collectives while it
 * makes one (NCCL's first use of a communicator, a step graph captured with its all-reduce in it) without
 * waiting for a rank that this thread has not reached yet */
static cll_status create_rank(cll_driver_state *s, const cll_driver_state_params *p, int32_t r) {
    const cll_driver *in = s->tm->inner;
    cll_driver_state_params rp = *p;
    rp.comm = s->comm;
    rp.rank = r;
    if (in == &cll_cpu_driver) { /* the ranks share the cores */
        const int32_t nth = p->n_threads > 0 ? p->n_threads : cll_physical_cores();
        rp.n_threads = nth / s->tm->n > 0 ? nth / s->tm->n : 1;
    }
    return in->state_create(s->tm->dm[r], &rp, &s->st[r]); /* run_all names the rank */
}

static void run_rank(cll_driver_state *s, job *j, int32_t r) {
    const cll_driver *in = s->tm->inner;
    j->st[r] = j->create    ? create_rank(s, j->create, r)
               : j->prepare ? in->prepare_batches(s->st[r], j->prepare)
                            : in->forward(s->st[r], j->b[r], j->kind, j->out[r]);
    if (j->st[r] != CLL_OK) {
        snprintf(j->err[r], sizeof j->err[r], "%s", cll_last_error());
        pthread_mutex_lock(&s->mu);
        if (j->failed < 0) j->failed = r;
        pthread_mutex_unlock(&s->mu);
        /* the other ranks may wait for this one inside an all-reduce: wake them */
        if (s->comm && in->comm_abort) in->comm_abort(s->comm, true);
    }
}

static void *rank_main(void *p) {
    const struct rank_arg *a = p;
    cll_driver_state *s = a->s;
    uint64_t seen = 0;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (s->gen == seen && !s->quit) pthread_cond_wait(&s->cv_go, &s->mu);
        if (s->quit) break;
        seen = s->gen;
        job *j = s->cur;
        pthread_mutex_unlock(&s->mu);
        run_rank(s, j, a->r);
        pthread_mutex_lock(&s->mu);
        if (--s->pending == 0) pthread_cond_signal(&s->cv_done);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* every rank's forward (or preparation) of j, rank 0 on this thread; when all have returned: CLL_OK, or the
 * failure of the rank that failed on its own (the others' say they were abandoned), the communicator
 * readied again (a device one may stay failed, and says so on the next call) */
static cll_status run_all(cll_driver_state *s, job *j) {
    j->failed = -1;
    if (s->n_th) {
        pthread_mutex_lock(&s->mu);
        s->cur = j;
        s->pending = s->n_th;
        s->gen++;
        pthread_cond_broadcast(&s->cv_go);
        pthread_mutex_unlock(&s->mu);
    }
    run_rank(s, j, 0);
    if (s->n_th) {
        pthread_mutex_lock(&s->mu);
        while (s->pending) pthread_cond_wait(&s->cv_done, &s->mu);
        pthread_mutex_unlock(&s->mu);
    }
    if (j->failed < 0) return CLL_OK;
    const cll_driver *in = s->tm->inner;
    if (s->comm && in->comm_abort) in->comm_abort(s->comm, false);
    if (s->tm->n == 1) return cll_err(j->st[0], "%s", j->err[0]);
    return cll_err(j->st[j->failed], "tensor parallel rank %d: %s", j->failed, j->err[j->failed]);
}

/* ---- state ------------------------------------------------------------------------------------ */

static void tp_state_free(cll_driver_state *s) {
    if (!s) return;
    cll_driver_model *tm = s->tm;
    if (s->n_th) {
        pthread_mutex_lock(&s->mu);
        s->quit = true;
        pthread_cond_broadcast(&s->cv_go);
        pthread_mutex_unlock(&s->mu);
        for (int32_t t = 0; t < s->n_th; t++) pthread_join(s->th[t], NULL);
    }
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv_go);
    pthread_cond_destroy(&s->cv_done);
    for (int32_t r = 0; r < tm->n; r++) {
        if (s->st[r]) tm->inner->state_free(s->st[r]);
        if (s->buf_drv[r]) tm->inner->host_free(s->buf[r]);
        else free(s->buf[r]);
    }
    if (s->comm) tm->inner->comm_free(s->comm);
    free(s->row);
    free(s);
}

static cll_status tp_state_create(cll_driver_model *tm, const cll_driver_state_params *p, cll_driver_state **out) {
    *out = NULL;
    const cll_driver *in = tm->inner;
    cll_driver_state *s = calloc(1, sizeof *s);
    if (!s) return cll_err(CLL_ERR_NOMEM, "tensor parallel: out of memory");
    s->tm = tm;
    s->n_out_max = p->n_out_max;
    s->n_batch = p->n_batch;
    s->n_seq = p->n_seq;
    s->n_ctx = p->n_ctx;
    s->topk_max = in->topk_max;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv_go, NULL);
    pthread_cond_init(&s->cv_done, NULL);
    cll_status st = CLL_OK;
    if (tm->n > 1) {
        st = in->comm_create(tm->n, tm->devices, &s->comm);
        if (st != CLL_OK) cll_err_prefix(st, "tensor parallel over %d %s", tm->n, in == &cll_cpu_driver ? "ranks" : "GPUs");
    }
    for (int32_t r = 0; r < tm->n && st == CLL_OK; r++) {
        /* what a rank hands back: its logits columns, or its candidates (ids and logits) */
        const int64_t vr = tm->v1[r] - tm->v0[r];
        const int64_t per = vr > 2 * (int64_t)s->topk_max ? vr : 2 * (int64_t)s->topk_max;
        const size_t bytes = (size_t)p->n_out_max * (size_t)per * sizeof(float);
        s->buf[r] = in->host_alloc ? in->host_alloc(bytes) : NULL;
        s->buf_drv[r] = s->buf[r] != NULL;
        if (!s->buf[r]) s->buf[r] = malloc(bytes);
        if (!s->buf[r]) st = cll_err(CLL_ERR_NOMEM, "tensor parallel: out of memory for rank %d's logits", r);
    }
    if (st == CLL_OK && !(s->row = malloc(sizeof(float) * (size_t)tm->n_vocab)))
        st = cll_err(CLL_ERR_NOMEM, "tensor parallel: out of memory");
    for (int32_t r = 1; r < tm->n && st == CLL_OK; r++) {
        s->arg[r - 1] = (struct rank_arg){s, r};
        if (pthread_create(&s->th[r - 1], NULL, rank_main, &s->arg[r - 1]))
            st = cll_err(CLL_ERR_INTERNAL, "tensor parallel: cannot start the thread of rank %d", r);
        else
            s->n_th++;
    }
    if (st == CLL_OK) { /* every rank's state at once, each on its thread */
        job j;
        memset(&j, 0, sizeof j);
        j.create = p;
        st = run_all(s, &j);
        if (st != CLL_OK && tm->n > 1)
            cll_err_prefix(st, "tensor parallel over %d %s", tm->n, in == &cll_cpu_driver ? "ranks" : "GPUs");
    }
    if (st != CLL_OK) {
        tp_state_free(s);
        return st;
    }
    *out = s;
    return CLL_OK;
}

static size_t tp_state_bytes(const cll_driver_state *s) {
    size_t b = 0;
    for (int32_t r = 0; s && r < s->tm->n; r++) b += s->tm->inner->state_bytes(s->st[r]);
    return b;
}

/* ---- forward ------------------------------------------------------------------------------------ */

/* a candidate beats another: the higher logit, then the lower id (the drivers' own order) */
static bool better(float a, int32_t ia, float b, int32_t ib) {
    if (isnan(b)) return !isnan(a) || ia < ib;
    if (isnan(a)) return false;
    return a > b || (a == b && ia < ib);
}

static cll_status tp_forward(cll_driver_state *s, const cll_driver_batch *b, cll_driver_out kind, void *out) {
    cll_driver_model *tm = s->tm;
    /* the checks every rank would make, made once here: a batch no rank can run fails before any
     * rank starts (so none waits in an all-reduce for one that refused it) */
    if (b->n <= 0 || b->n > s->n_batch)
        return cll_err(CLL_ERR_RANGE, "forward: batch of %d tokens (n_batch %d)", b->n, s->n_batch);
    int32_t n_want = 0;
    for (int32_t i = 0; i < b->n; i++) {
        if (b->tokens[i] < 0 || b->tokens[i] >= tm->n_vocab)
            return cll_err(CLL_ERR_ARG, "forward: token %d at batch index %d is outside the vocab (%d)", b->tokens[i], i,
                           tm->n_vocab);
        if (b->seq[i] < 0 || b->seq[i] >= s->n_seq || b->pos[i] < 0 || b->pos[i] >= s->n_ctx)
            return cll_err(CLL_ERR_RANGE, "forward: batch index %d has seq %d pos %d outside (%d seqs, n_ctx %d)", i,
                           b->seq[i], b->pos[i], s->n_seq, s->n_ctx);
        n_want += b->want ? b->want[i] != 0 : i == b->n - 1;
    }
    if (n_want > s->n_out_max)
        return cll_err(CLL_ERR_RANGE, "forward: %d tokens want output, the context holds %d rows", n_want, s->n_out_max);
    if (kind == CLL_OUT_TOPK && (b->top_k < 1 || b->top_k > s->topk_max))
        return cll_err(CLL_ERR_ARG, "forward: top-%d candidates (this driver serves 1 to %d)", b->top_k, s->topk_max);
    /* greedy over candidates when the inner driver has them (one per rank), else over the logits */
    const cll_driver_out rk = kind == CLL_OUT_LOGITS ? CLL_OUT_LOGITS
                              : s->topk_max > 0  ? CLL_OUT_TOPK
                                                 : CLL_OUT_LOGITS;
    job j;
    memset(&j, 0, sizeof j);
    cll_driver_batch rb[CLL_TP_MAX];
    j.kind = rk;
    for (int32_t r = 0; r < tm->n; r++) {
        rb[r] = *b;
        const int32_t vr = (int32_t)(tm->v1[r] - tm->v0[r]);
        const int32_t k = kind == CLL_OUT_TOPK ? b->top_k : 1;
        rb[r].top_k = k < vr ? k : vr;
        j.b[r] = &rb[r];
        /* one rank: its rows are the whole answer, written where the caller wants them */
        j.out[r] = tm->n == 1 && rk == kind ? out : s->buf[r];
    }
    const cll_status st = run_all(s, &j);
    if (st != CLL_OK) return st;
    s->forwards++;
    s->tokens += (uint64_t)b->n;
    if (tm->n == 1 && rk == kind) return CLL_OK;
    const int64_t V = tm->n_vocab;
    if (rk == CLL_OUT_LOGITS) {
        for (int32_t i = 0; i < n_want; i++) {
            float *row = kind == CLL_OUT_LOGITS ? (float *)out + (size_t)i * (size_t)V : s->row;
            for (int32_t r = 0; r < tm->n; r++) {
                const int64_t vr = tm->v1[r] - tm->v0[r];
                memcpy(row + tm->v0[r], (const float *)s->buf[r] + (size_t)i * (size_t)vr, sizeof(float) * (size_t)vr);
            }
            if (kind == CLL_OUT_ARGMAX) ((int32_t *)out)[i] = cll_sample_argmax(row, (int32_t)V);
        }
        return CLL_OK;
    }
    /* candidates: each rank's k best of its slice (ids local to it), merged */
    const int32_t k = kind == CLL_OUT_TOPK ? b->top_k : 1;
    int32_t *oid = (int32_t *)out;
    float *oval = kind == CLL_OUT_TOPK ? (float *)((int32_t *)out + (size_t)n_want * (size_t)k) : NULL;
    for (int32_t i = 0; i < n_want; i++) {
        int32_t at[CLL_TP_MAX] = {0};
        for (int32_t c = 0; c < k; c++) {
            int32_t best = -1, bid = 0;
            float bv = 0.0f;
            for (int32_t r = 0; r < tm->n; r++) {
                const int32_t kr = rb[r].top_k;
                if (at[r] >= kr) continue;
                const int32_t *ids = (const int32_t *)s->buf[r];
                const float *vals = (const float *)(ids + (size_t)n_want * (size_t)kr);
                const int32_t id = (int32_t)tm->v0[r] + ids[(size_t)i * kr + at[r]];
                const float v = vals[(size_t)i * kr + at[r]];
                if (best < 0 || better(v, id, bv, bid)) best = r, bid = id, bv = v;
            }
            if (best < 0) break; /* k > n_vocab cannot pass the checks above */
            at[best]++;
            oid[(size_t)i * k + c] = bid;
            if (oval) oval[(size_t)i * k + c] = bv;
        }
    }
    return CLL_OK;
}

static void tp_counters(const cll_driver_state *s, cll_driver_counters *out) {
    memset(out, 0, sizeof *out);
    if (!s) return;
    const cll_driver *in = s->tm->inner;
    in->counters(s->st[0], out);
    for (int32_t r = 1; r < s->tm->n; r++) {
        cll_driver_counters c;
        in->counters(s->st[r], &c);
        if (c.device_steps < out->device_steps) out->device_steps = c.device_steps;
        if (c.device_seconds > out->device_seconds) out->device_seconds = c.device_seconds;
    }
    out->forwards = s->forwards;
    out->tokens = s->tokens;
    out->tp = s->tm->n;
}

static int32_t tp_model_topk_max(const cll_driver_model *tm) { return tm ? tm->inner->topk_max : 0; }

/* every rank at once: what a rank prepares may run passes that wait for the others */
static cll_status tp_prepare_batches(cll_driver_state *s, int32_t n_max) {
    if (!s->tm->inner->prepare_batches || n_max < 1) return CLL_OK;
    job j;
    memset(&j, 0, sizeof j);
    j.prepare = n_max;
    return run_all(s, &j);
}

const cll_driver cll_tp_driver = {
    .name = "tp",
    .model_create = tp_model_create,
    .model_free = tp_model_free,
    .model_desc = tp_model_desc,
    .state_create = tp_state_create,
    .state_free = tp_state_free,
    .state_bytes = tp_state_bytes,
    .forward = tp_forward,
    .counters = tp_counters,
    .topk_max = 0, /* the inner driver's (model_topk_max) */
    .model_topk_max = tp_model_topk_max,
    .prepare_batches = tp_prepare_batches,
};
