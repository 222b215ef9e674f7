/* session/context: contexts, batched multi-sequence decode, logits, sequence bookkeeping. */
#include <stdlib.h>
#include <string.h>

#include "sample/sample.h"
#include "session/session.h"

/* logits rows are n_vocab floats each; cap what one decode may ask for so a 256k vocab
 * does not cost n_batch MB (a bigger request gets a clear CLLAMA_ERR_RANGE) */
#define LOGITS_BUDGET_BYTES (64u << 20)

cllama_context_params cllama_context_default_params(void) {
    cllama_context_params p = {.n_ctx = 0, .n_seq_max = 1, .n_batch = 512, .n_threads = 0,
                               .backend = CLLAMA_BACKEND_DEFAULT, .kv_type = CLLAMA_KV_F16};
    return p;
}

cllama_status cllama_context_create(cllama_model *m, const cllama_context_params *pp, cllama_context **out) {
    if (!out) return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_context_create: out is NULL");
    *out = NULL;
    if (!m) return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_context_create: model is NULL");
    if (!m->m) return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_context_create: model was loaded vocab_only");
    cllama_context_params p = pp ? *pp : cllama_context_default_params();
    if (p.backend != CLLAMA_BACKEND_DEFAULT && p.backend != CLLAMA_BACKEND_CPU && p.backend != CLLAMA_BACKEND_CUDA)
        return (cllama_status)cll_err(CLL_ERR_ARG, "unknown backend %d", (int)p.backend);
    if (p.backend != CLLAMA_BACKEND_DEFAULT && p.backend != m->backend)
        return (cllama_status)cll_err(CLL_ERR_ARG,
                                      "context asks for backend %s but the model was loaded for %s "
                                      "(set cllama_model_params.backend, or CLLAMA_BACKEND, at load)",
                                      cllama_backend_name(p.backend), cllama_backend_name(m->backend));
    p.backend = m->backend;
    if (p.kv_type != CLLAMA_KV_F16 && p.kv_type != CLLAMA_KV_F32)
        return (cllama_status)cll_err(CLL_ERR_ARG, "unknown kv_type %d", (int)p.kv_type);
    const cll_hparams *hp = &m->m->hp;
    if (p.n_ctx == 0) p.n_ctx = (uint32_t)(hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096);
    if (p.n_seq_max == 0) p.n_seq_max = 1;
    if (p.n_batch == 0) p.n_batch = 512;
    if (p.n_ctx > (1u << 24) || p.n_seq_max > 4096 || p.n_batch > (1u << 20))
        return (cllama_status)cll_err(CLL_ERR_ARG, "context: n_ctx %u, n_seq_max %u or n_batch %u is too large",
                                      p.n_ctx, p.n_seq_max, p.n_batch);
    cllama_context *c = calloc(1, sizeof *c);
    if (!c) return (cllama_status)cll_err(CLL_ERR_NOMEM, "context: out of memory");
    c->model = m;
    c->p = p;
    c->n_vocab = hp->n_vocab;
    int64_t rows = LOGITS_BUDGET_BYTES / ((int64_t)hp->n_vocab * (int64_t)sizeof(float));
    if (rows < (int64_t)p.n_seq_max) rows = p.n_seq_max;
    if (rows > (int64_t)p.n_batch) rows = p.n_batch;
    if (rows < 1) rows = 1;
    c->n_out_max = (int32_t)rows;
    cll_status st = CLL_OK;
    int32_t kv_cells = 0;
    if (p.n_kv_cells > 0) {
        /* the pool: whole blocks, each sequence up to n_ctx cells (whole blocks too) */
        const int64_t B = CLLAMA_KV_BLOCK, nb = ((int64_t)p.n_kv_cells + B - 1) / B;
        if (p.n_kv_cells > (1u << 30)) {
            st = cll_err(CLL_ERR_ARG, "context: n_kv_cells %u is too large (at most 2^30)", p.n_kv_cells);
            goto fail;
        }
        kv_cells = (int32_t)(nb * B);
        c->kv_stride = (int32_t)(((int64_t)p.n_ctx + B - 1) / B);
        st = cll_kvpage_create((int32_t)nb, (int32_t)B, (int32_t)p.n_seq_max, c->kv_stride * (int32_t)B, &c->kv);
        if (st != CLL_OK) goto fail;
        c->kv_tab = calloc((size_t)p.n_seq_max * (size_t)c->kv_stride, sizeof *c->kv_tab);
        if (!c->kv_tab) {
            st = cll_err(CLL_ERR_NOMEM, "context: out of memory");
            goto fail;
        }
        c->kv_dirty = true;
    }
    const cll_driver_state_params sp = {.n_ctx = (int32_t)p.n_ctx,
                                        .n_seq = (int32_t)p.n_seq_max,
                                        .n_batch = (int32_t)p.n_batch,
                                        .n_out_max = c->n_out_max,
                                        .n_threads = p.n_threads,
                                        .kv_f32 = p.kv_type == CLLAMA_KV_F32,
                                        .ggml_numerics = m->numerics == CLLAMA_NUMERICS_GGML,
                                        .n_cells = kv_cells,
                                        .block_cells = CLLAMA_KV_BLOCK};
    st = m->drv->state_create(m->dm, &sp, &c->ds);
    if (st != CLL_OK) goto fail;
    c->seq_len = calloc(p.n_seq_max, sizeof *c->seq_len);
    c->seq_cnt = calloc(p.n_seq_max, sizeof *c->seq_cnt);
    const size_t lbytes = (size_t)rows * (size_t)hp->n_vocab * sizeof(float);
    if (m->drv->host_alloc && (c->logits = m->drv->host_alloc(lbytes))) c->logits_drv = true;
    else c->logits = cll_aalloc(lbytes);
    c->logit_row = malloc(p.n_batch * sizeof *c->logit_row);
    c->g_tok = malloc(p.n_batch * sizeof *c->g_tok);
    c->g_pos = malloc(p.n_batch * sizeof *c->g_pos);
    c->g_seq = malloc(p.n_batch * sizeof *c->g_seq);
    c->g_want = malloc(p.n_batch * sizeof *c->g_want);
    if (!c->seq_len || !c->seq_cnt || !c->logits || !c->logit_row || !c->g_tok || !c->g_pos || !c->g_seq || !c->g_want) {
        st = cll_err(CLL_ERR_NOMEM, "context: out of memory");
        goto fail;
    }
    *out = c;
    return CLLAMA_OK;
fail:
    cllama_context_free(c);
    return (cllama_status)st;
}

void cllama_context_free(cllama_context *c) {
    if (!c) return;
    if (c->ds) c->model->drv->state_free(c->ds);
    free(c->seq_len);
    free(c->seq_cnt);
    cll_kvpage_free(c->kv);
    free(c->kv_tab);
    free(c->tk_buf);
    if (c->logits_drv) c->model->drv->host_free(c->logits);
    else cll_afree(c->logits);
    free(c->logit_row);
    free(c->g_tok);
    free(c->g_pos);
    free(c->g_seq);
    free(c->g_want);
    free(c);
}

uint32_t cllama_n_ctx(const cllama_context *c) { return c ? c->p.n_ctx : 0; }
uint32_t cllama_n_seq_max(const cllama_context *c) { return c ? c->p.n_seq_max : 0; }
uint32_t cllama_n_batch(const cllama_context *c) { return c ? c->p.n_batch : 0; }
const cllama_model *cllama_context_model(const cllama_context *c) { return c ? c->model : NULL; }

/* paged: sequence s's block table into the one the driver gets, marked for the next forward's copy */
static void kv_sync_row(cllama_context *c, int32_t s) {
    int32_t nb = 0;
    const int32_t *t = cll_kvpage_table(c->kv, s, &nb);
    memcpy(c->kv_tab + (size_t)s * (size_t)c->kv_stride, t, (size_t)nb * sizeof *t);
    c->kv_dirty = true;
}

static cllama_status decode(cllama_context *c, const cllama_batch *b, cll_driver_out kind, void *out) {
    if (!c || !b || !b->tokens || !b->pos || !b->seq_id)
        return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_decode: NULL context, batch or batch array");
    const int32_t n = b->n_tokens;
    if (n <= 0 || (uint32_t)n > c->p.n_batch)
        return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_decode: n_tokens %d outside [1, n_batch %u]", n,
                                      c->p.n_batch);
    /* validate everything before touching the cache: each sequence's tokens must continue it */
    int32_t n_out = 0;
    for (int32_t i = 0; i < n; i++) {
        const int32_t s = b->seq_id[i];
        if (s < 0 || (uint32_t)s >= c->p.n_seq_max)
            return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_decode: token %d has seq_id %d (n_seq_max %u)", i, s,
                                          c->p.n_seq_max);
        if (b->tokens[i] < 0 || b->tokens[i] >= c->n_vocab)
            return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_decode: token %d has id %d outside the vocab (%d)", i,
                                          b->tokens[i], c->n_vocab);
        n_out += b->logits ? (b->logits[i] != 0) : (i == n - 1);
    }
    if (n_out > c->n_out_max)
        return (cllama_status)cll_err(CLL_ERR_RANGE, "cllama_decode: %d tokens ask for logits; this context holds %d rows",
                                      n_out, c->n_out_max);
    /* a running count per sequence (c->seq_cnt, zero between calls): one pass, not one per token */
    cllama_status bad = CLLAMA_OK;
    for (int32_t i = 0; i < n && bad == CLLAMA_OK; i++) {
        const int32_t s = b->seq_id[i];
        const int32_t expect = c->seq_len[s] + c->seq_cnt[s]++;
        if (b->pos[i] != expect)
            bad = (cllama_status)cll_err(CLL_ERR_ARG,
                                         "cllama_decode: token %d of sequence %d has pos %d; the sequence continues at %d",
                                         i, s, b->pos[i], expect);
        else if ((uint32_t)expect >= c->p.n_ctx)
            bad = (cllama_status)cll_err(CLL_ERR_RANGE, "cllama_decode: context full: sequence %d has %u of n_ctx %u tokens",
                                         s, (uint32_t)expect, c->p.n_ctx);
    }
    for (int32_t i = 0; i < n; i++) c->seq_cnt[b->seq_id[i]] = 0;
    if (bad != CLLAMA_OK) return bad;
    c->last_n = 0;
    cll_status st = CLL_OK;
    if (c->kv) {
        /* every sequence of the batch holds its cells before the driver writes them (a token at pos
         * needs pos + 1; reserving an already held count costs nothing). A sequence that finds no
         * block fails the decode (CLL_ERR_KV_FULL, nothing run); blocks other sequences took stay
         * theirs (they are next to be written anyway) */
        for (int32_t i = 0; i < n; i++) {
            const int32_t s = b->seq_id[i];
            int32_t had = 0;
            cll_kvpage_table(c->kv, s, &had);
            st = cll_kvpage_reserve(c->kv, s, b->pos[i] + 1);
            if (st != CLL_OK) return (cllama_status)st;
            int32_t now = 0;
            cll_kvpage_table(c->kv, s, &now);
            if (now != had) kv_sync_row(c, s);
        }
    }
    const cll_driver *drv = c->model->drv;
    if (c->model->numerics == CLLAMA_NUMERICS_GGML) {
        /* the reference feeds one token per llama_decode: every matmul is then a single-row
         * vec_dot and attention sees one query; batch order keeps each sequence causal */
        char *o = out;
        const size_t row = kind == CLL_OUT_ARGMAX ? sizeof(int32_t) : (size_t)c->n_vocab * sizeof(float);
        for (int32_t i = 0; i < n && st == CLL_OK; i++) {
            const int8_t want = b->logits ? b->logits[i] : (int8_t)(i == n - 1);
            const cll_driver_batch one = {.n = 1,
                                          .tokens = b->tokens + i,
                                          .pos = b->pos + i,
                                          .seq = b->seq_id + i,
                                          .want = &want,
                                          .blocks = c->kv_tab,
                                          .blocks_stride = c->kv_stride,
                                          .blocks_dirty = c->kv_dirty,
                                          .top_k = c->topk};
            c->kv_dirty = false;
            st = drv->forward(c->ds, &one, kind, o);
            if (want) o += row;
        }
    } else {
        const cll_driver_batch db = {.n = n,
                                     .tokens = b->tokens,
                                     .pos = b->pos,
                                     .seq = b->seq_id,
                                     .want = b->logits,
                                     .blocks = c->kv_tab,
                                     .blocks_stride = c->kv_stride,
                                     .blocks_dirty = c->kv_dirty,
                                     .top_k = c->topk};
        c->kv_dirty = false;
        st = drv->forward(c->ds, &db, kind, out);
    }
    if (st != CLL_OK) return (cllama_status)st;
    if (c->kv) /* the tokens whose K/V are now stored: full blocks become findable for other sequences */
        for (int32_t i = 0; i < n; i++) cll_kvpage_commit(c->kv, b->seq_id[i], b->tokens + i, 1);
    int32_t r = 0;
    for (int32_t i = 0; i < n; i++) {
        const bool want = b->logits ? b->logits[i] != 0 : i == n - 1;
        c->logit_row[i] = want ? r++ : -1;
        c->seq_len[b->seq_id[i]]++;
    }
    c->last_n = n;
    c->last_greedy = kind == CLL_OUT_ARGMAX;
    return CLLAMA_OK;
}

cllama_status cllama_decode(cllama_context *c, const cllama_batch *b) {
    return decode(c, b, CLL_OUT_LOGITS, c ? c->logits : NULL);
}

cllama_status cllama_decode_greedy(cllama_context *c, const cllama_batch *b, cllama_token *ids) {
    if (!ids) return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_decode_greedy: ids is NULL");
    return decode(c, b, CLL_OUT_ARGMAX, ids);
}

cllama_status cllama_decode_topk(cllama_context *c, const cllama_batch *b, int32_t k, cllama_token *ids, float *logits) {
    if (!c || !ids || !logits) return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_decode_topk: NULL context or output");
    if (k < 1 || k > CLLAMA_TOPK_MAX || k > c->n_vocab)
        return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_decode_topk: k %d outside [1, %d]", k,
                                      c->n_vocab < CLLAMA_TOPK_MAX ? c->n_vocab : CLLAMA_TOPK_MAX);
    const cll_driver *drv = c->model->drv;
    const int32_t tk_max = drv->model_topk_max ? drv->model_topk_max(c->model->dm) : drv->topk_max;
    if (tk_max >= k && c->model->numerics != CLLAMA_NUMERICS_GGML) {
        if (!c->tk_buf) {
            c->tk_buf = malloc((size_t)c->n_out_max * CLLAMA_TOPK_MAX * (sizeof(int32_t) + sizeof(float)));
            if (!c->tk_buf) return (cllama_status)cll_err(CLL_ERR_NOMEM, "cllama_decode_topk: out of memory");
        }
        c->topk = k;
        cllama_status st = decode(c, b, CLL_OUT_TOPK, c->tk_buf);
        c->topk = 0;
        if (st != CLLAMA_OK) return st;
        int32_t na = 0;
        for (int32_t i = 0; i < c->last_n; i++) na += c->logit_row[i] >= 0;
        memcpy(ids, c->tk_buf, sizeof(int32_t) * (size_t)na * (size_t)k);
        memcpy(logits, (const int32_t *)c->tk_buf + (size_t)na * (size_t)k, sizeof(float) * (size_t)na * (size_t)k);
        c->last_greedy = true; /* no logits rows to hand out */
        return CLLAMA_OK;
    }
    /* a driver without candidates: the logits, then the same selection on the host */
    cllama_status st = decode(c, b, CLL_OUT_LOGITS, c->logits);
    if (st != CLLAMA_OK) return st;
    for (int32_t i = 0; i < c->last_n; i++) {
        const int32_t r = c->logit_row[i];
        if (r < 0) continue;
        cll_status e = cll_sample_topk(c->logits + (size_t)r * (size_t)c->n_vocab, c->n_vocab, k, ids + (size_t)r * k,
                                       logits + (size_t)r * k);
        if (e != CLL_OK) return (cllama_status)e;
    }
    c->last_greedy = true; /* as on the device: this decode hands out candidates, not logits rows */
    return CLLAMA_OK;
}

const float *cllama_get_logits(cllama_context *c, int32_t i) {
    if (!c) return NULL;
    if (i < 0) i += c->last_n;
    if (c->last_greedy) {
        cll_err(CLL_ERR_ARG, "cllama_get_logits: the last decode was cllama_decode_greedy (ids only, no logits)");
        return NULL;
    }
    if (i < 0 || i >= c->last_n || c->logit_row[i] < 0) {
        cll_err(CLL_ERR_ARG, "cllama_get_logits: no logits for batch index %d of the last decode", i);
        return NULL;
    }
    return c->logits + (size_t)c->logit_row[i] * (size_t)c->n_vocab;
}

cllama_status cllama_seq_truncate(cllama_context *c, int32_t seq_id, int32_t p0) {
    if (!c) return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_seq_truncate: context is NULL");
    if (seq_id < 0 || (uint32_t)seq_id >= c->p.n_seq_max)
        return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_seq_truncate: seq_id %d (n_seq_max %u)", seq_id,
                                      c->p.n_seq_max);
    if (p0 < 0) return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_seq_truncate: p0 %d < 0", p0);
    /* the cache rows past the length are simply overwritten by later decodes */
    if (p0 < c->seq_len[seq_id]) c->seq_len[seq_id] = p0;
    if (c->kv) { /* paged: the blocks past the kept cells go back to the pool */
        const int32_t kept = cll_kvpage_truncate(c->kv, seq_id, p0);
        if (kept < c->seq_len[seq_id]) c->seq_len[seq_id] = kept; /* a shared block is given up, not written */
        kv_sync_row(c, seq_id);
    }
    return CLLAMA_OK;
}

int32_t cllama_kv_prefix_cached(const cllama_context *c, const cllama_token *t, int32_t n) {
    return c && c->kv && t ? cll_kvpage_probe(c->kv, t, n) : 0;
}

int32_t cllama_seq_adopt(cllama_context *c, int32_t seq_id, const cllama_token *t, int32_t n) {
    if (!c || !c->kv || !t || seq_id < 0 || (uint32_t)seq_id >= c->p.n_seq_max || c->seq_len[seq_id] != 0) return 0;
    if (cll_kvpage_n_cells(c->kv, seq_id) != 0) cll_kvpage_truncate(c->kv, seq_id, 0);
    const int32_t got = cll_kvpage_adopt(c->kv, seq_id, t, n);
    if (got > 0) {
        kv_sync_row(c, seq_id);
        c->seq_len[seq_id] = got;
    }
    return got;
}

cllama_status cllama_kv_info_get(const cllama_context *c, cllama_kv_info *out) {
    if (!c || !out) return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_kv_info_get: NULL context or out");
    memset(out, 0, sizeof *out);
    if (c->kv) {
        cll_kvpage_stats st;
        cll_kvpage_get_stats(c->kv, &st);
        out->paged = true;
        out->block_cells = (uint32_t)st.block_cells;
        out->total_cells = (uint32_t)st.n_blocks * (uint32_t)st.block_cells;
        out->free_cells = (uint32_t)(st.free_blocks + st.cached_blocks) * (uint32_t)st.block_cells;
        return CLLAMA_OK;
    }
    uint64_t used = 0;
    for (uint32_t s = 0; s < c->p.n_seq_max; s++) used += (uint64_t)c->seq_len[s];
    out->block_cells = 1;
    out->total_cells = c->p.n_seq_max * c->p.n_ctx;
    out->free_cells = (uint32_t)(out->total_cells - used);
    return CLLAMA_OK;
}

int32_t cllama_seq_len(const cllama_context *c, int32_t seq_id) {
    if (!c || seq_id < 0 || (uint32_t)seq_id >= c->p.n_seq_max) return -1;
    return c->seq_len[seq_id];
}

cllama_status cllama_context_counters(const cllama_context *c, cllama_counters *out) {
    if (!c || !out) return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_context_counters: NULL context or out");
    cll_driver_counters k;
    c->model->drv->counters(c->ds, &k);
    *out = (cllama_counters){.forwards = k.forwards,
                             .tokens = k.tokens,
                             .device_steps = k.device_steps,
                             .graph_replays = k.graph_replays,
                             .launches = k.launches,
                             .device_seconds = k.device_seconds,
                             .graph_captures = k.graph_captures,
                             .capture_seconds = k.capture_seconds,
                             .x_conversions = k.x_conversions,
                             .tp = k.tp > 0 ? k.tp : 1,
                             .allreduces = k.allreduces,
                             .allreduce_seconds = k.allreduce_seconds};
    return CLLAMA_OK;
}

cllama_status cllama_context_prepare(cllama_context *c, int32_t n_seq, int32_t n_tokens) {
    if (!c) return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_context_prepare: NULL context");
    if (!c->model->drv->prepare_batches) return CLLAMA_OK; /* a driver with nothing to prepare (the CPU) */
    if (n_seq > (int32_t)c->p.n_seq_max) n_seq = (int32_t)c->p.n_seq_max;
    if (n_seq >= 2) {
        const cll_status st = c->model->drv->prepare_batches(c->ds, n_seq);
        if (st != CLL_OK) return (cllama_status)st;
    }
    if (n_tokens > (int32_t)c->p.n_batch) n_tokens = (int32_t)c->p.n_batch;
    if (n_tokens > (int32_t)c->p.n_ctx) n_tokens = (int32_t)c->p.n_ctx;
    if (n_tokens <= 32) return CLLAMA_OK;
    if (c->seq_len[0] != 0)
        return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_context_prepare: sequence 0 holds %d cells (it must be empty)",
                                      c->seq_len[0]);
    cllama_token *tok = calloc((size_t)n_tokens, sizeof *tok);
    int32_t *pos = malloc((size_t)n_tokens * sizeof *pos), *seq = calloc((size_t)n_tokens, sizeof *seq);
    int8_t *lg = calloc((size_t)n_tokens, 1);
    cllama_status st = CLLAMA_OK;
    if (!tok || !pos || !seq || !lg) st = (cllama_status)cll_err(CLL_ERR_NOMEM, "cllama_context_prepare: out of memory");
    for (int32_t i = 0; st == CLLAMA_OK && i < n_tokens; i++) pos[i] = i;
    /* one pass per size class: 33, 48, 64, .. and n_tokens itself */
    for (int32_t n = 33; st == CLLAMA_OK;) {
        memset(lg, 0, (size_t)n);
        lg[n - 1] = 1;
        cllama_batch b = {n, tok, pos, seq, lg};
        st = cllama_decode(c, &b);
        const cllama_status tr = cllama_seq_truncate(c, 0, 0);
        if (st == CLLAMA_OK) st = tr;
        if (n == n_tokens) break;
        n = (n / 16 + 1) * 16 < n_tokens ? (n / 16 + 1) * 16 : n_tokens;
    }
    free(tok), free(pos), free(seq), free(lg);
    return st;
}

cllama_backend cllama_context_backend(const cllama_context *c) { return c ? c->p.backend : CLLAMA_BACKEND_CPU; }
