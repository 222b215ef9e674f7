/* cpu/driver: the CPU backend behind the driver interface (model/driver.h): prepares
 * (repacks) the weights at model creation, owns the thread pool and the cll_cpu_state of a
 * context, and answers argmax requests from its own logits scratch.
 * Rule: glue only; the math lives in forward.c / matmul.c / ops.c. */
#include <stdlib.h>
#include <string.h>

#include "cpu/comm.h"
#include "cpu/forward.h"
#include "kernels/registry.h"
#include "model/driver.h"
#include "sample/sample.h"

struct cll_driver_model {
    cll_cpu_model *cm;
    int32_t n_vocab;
};

struct cll_driver_state {
    cll_pool *pool;
    cll_cpu_state *st;
    int32_t n_vocab;
    float *scratch;            /* (n_out_max, n_vocab) logits behind an argmax request */
    cll_driver_counters cnt;
};

static cll_status cpu_model_create(const cll_model *m, const cll_driver_model_params *p, cll_driver_model **out) {
    *out = NULL;
    cll_driver_model *dm = calloc(1, sizeof *dm);
    if (!dm) return cll_err(CLL_ERR_NOMEM, "cpu driver: out of memory");
    dm->n_vocab = m->hp.n_logits; /* a tensor-parallel rank's logits are its vocab slice */
    /* in ggml numerics every site takes the row that follows ggml-cpu's operation order
     * (kern_ggml.h), on the file layout; the scope covers this thread's preparation only */
    if (p && p->ggml_numerics) cll_kernels_numerics_scope("ggml");
    cll_status st = cll_cpu_model_create(m, &dm->cm);
    cll_kernels_numerics_scope(NULL);
    if (st != CLL_OK) {
        free(dm);
        return st;
    }
    *out = dm;
    return CLL_OK;
}

static void cpu_model_free(cll_driver_model *dm) {
    if (!dm) return;
    cll_cpu_model_free(dm->cm);
    free(dm);
}

static const char *cpu_model_desc(const cll_driver_model *dm) { return dm ? cll_cpu_model_kernel_desc(dm->cm) : ""; }

static void cpu_state_free(cll_driver_state *s) {
    if (!s) return;
    cll_cpu_state_free(s->st);
    cll_pool_free(s->pool);
    cll_afree(s->scratch);
    free(s);
}

static cll_status cpu_state_create(cll_driver_model *dm, const cll_driver_state_params *p, cll_driver_state **out) {
    *out = NULL;
    cll_driver_state *s = calloc(1, sizeof *s);
    if (!s) return cll_err(CLL_ERR_NOMEM, "cpu driver: out of memory");
    s->n_vocab = dm->n_vocab;
    cll_status st = cll_pool_create(p->n_threads, &s->pool);
    if (st == CLL_OK) {
        cll_cpu_state_params sp = {.n_ctx = p->n_ctx,
                                   .n_seq = p->n_seq,
                                   .n_batch = p->n_batch,
                                   .n_out_max = p->n_out_max,
                                   .kv_f32 = p->kv_f32,
                                   .ggml_numerics = p->ggml_numerics,
                                   .n_cells = p->n_cells,
                                   .block_cells = p->block_cells,
                                   .comm = (cll_cpu_comm *)p->comm,
                                   .rank = p->rank};
        st = cll_cpu_state_create(dm->cm, &sp, s->pool, &s->st);
    }
    if (st == CLL_OK) {
        s->scratch = cll_aalloc((size_t)p->n_out_max * (size_t)dm->n_vocab * sizeof(float));
        if (!s->scratch) st = cll_err(CLL_ERR_NOMEM, "cpu driver: out of memory for the logits scratch");
    }
    if (st != CLL_OK) {
        cpu_state_free(s);
        return st;
    }
    *out = s;
    return CLL_OK;
}

static size_t cpu_state_bytes(const cll_driver_state *s) { return s ? cll_cpu_state_bytes(s->st) : 0; }

static cll_status cpu_forward(cll_driver_state *s, const cll_driver_batch *b, cll_driver_out kind, void *out) {
    const cll_cpu_batch cb = {.n = b->n,
                              .tokens = b->tokens,
                              .pos = b->pos,
                              .seq = b->seq,
                              .want = b->want,
                              .blocks = b->blocks,
                              .blocks_stride = b->blocks_stride};
    float *logits = kind == CLL_OUT_ARGMAX ? s->scratch : (float *)out;
    cll_status st = cll_cpu_forward(s->st, &cb, logits);
    if (st != CLL_OK) return st;
    if (kind == CLL_OUT_ARGMAX) {
        int32_t n_want = 0;
        for (int32_t i = 0; i < b->n; i++) n_want += b->want ? b->want[i] != 0 : i == b->n - 1;
        for (int32_t r = 0; r < n_want; r++)
            ((int32_t *)out)[r] = cll_sample_argmax(logits + (size_t)r * (size_t)s->n_vocab, s->n_vocab);
    }
    s->cnt.forwards++;
    s->cnt.tokens += (uint64_t)b->n;
    s->cnt.device_steps++;
    return CLL_OK;
}

static void cpu_counters(const cll_driver_state *s, cll_driver_counters *out) {
    memset(out, 0, sizeof *out);
    if (!s) return;
    *out = s->cnt;
    cll_cpu_state_allreduce_stats(s->st, &out->allreduces, &out->allreduce_seconds);
    out->tp = 1;
}

/* the ranks of a tensor-parallel context are host threads; the communicator sums in place (cpu/comm.h) */
static cll_status cpu_comm_create(int32_t n, const int32_t *devices, cll_driver_comm **out) {
    (void)devices;
    return cll_cpu_comm_create(n, (cll_cpu_comm **)out);
}
static void cpu_comm_free(cll_driver_comm *c) { cll_cpu_comm_free((cll_cpu_comm *)c); }
static void cpu_comm_abort(cll_driver_comm *c, bool on) { cll_cpu_comm_abort((cll_cpu_comm *)c, on); }

const cll_driver cll_cpu_driver = {
    .name = "cpu",
    .model_create = cpu_model_create,
    .model_free = cpu_model_free,
    .model_desc = cpu_model_desc,
    .state_create = cpu_state_create,
    .state_free = cpu_state_free,
    .state_bytes = cpu_state_bytes,
    .forward = cpu_forward,
    .counters = cpu_counters,
    .comm_create = cpu_comm_create,
    .comm_free = cpu_comm_free,
    .comm_abort = cpu_comm_abort,
};
