/* server/routes: POST /v1/chat/completions and /v1/completions (whole replies and SSE
 * streams) and GET /v1/models. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "server/oai.h"
#include "server/srv.h"

/* how long one wait for engine output lasts before we look at the client socket again */
#define POLL_S 0.1

/* ---- prompt preparation ------------------------------------------------------------------ */

/* the model name must be ours: the alias, the file name, or the file name without .gguf */
static bool model_matches(const cll_server *srv, const char *name) {
    if (!name || !*name) return true; /* clients that send none get the loaded model */
    if (!strcmp(name, srv->model_id) || !strcmp(name, srv->file_id)) return true;
    size_t n = strlen(srv->file_id);
    return n > 5 && !strncmp(name, srv->file_id, n - 5) && name[n - 5] == 0;
}

static char *render_chat(const cll_server *srv, const cll_server_req *r, size_t *len, cll_server_err *e) {
    int64_t need = cllama_chat_apply(srv->model, r->msgs, r->n_msgs, true, NULL, 0);
    if (need < 0) {
        cll_server_err_set(e, 500, "server_error", "messages", NULL, "cannot render the chat template: %s",
                           cllama_last_error());
        return NULL;
    }
    char *buf = malloc((size_t)need + 1);
    if (!buf) {
        cll_server_err_set(e, 500, "server_error", NULL, NULL, "out of memory");
        return NULL;
    }
    int64_t got = cllama_chat_apply(srv->model, r->msgs, r->n_msgs, true, buf, need + 1);
    if (got < 0 || got > need) {
        free(buf);
        cll_server_err_set(e, 500, "server_error", NULL, NULL, "chat template rendering changed size");
        return NULL;
    }
    buf[got] = 0;
    *len = (size_t)got;
    return buf;
}

/* Some templates write the BOS text themselves; adding BOS again would double it. */
static bool text_starts_with_bos(const cllama_model *m, const char *text, size_t len) {
    cllama_token bos = cllama_token_bos(m);
    if (bos < 0) return false;
    char piece[64];
    int32_t n = cllama_token_to_piece(m, bos, piece, (int32_t)sizeof piece, true);
    return n > 0 && n <= (int32_t)sizeof piece && (size_t)n <= len && !memcmp(text, piece, (size_t)n);
}

static cllama_token *tokenize(const cll_server *srv, const char *text, size_t len, bool add_special, int32_t *n_out,
                              cll_server_err *e) {
    int32_t cap = len + 8 > (size_t)INT32_MAX ? INT32_MAX : (int32_t)(len + 8);
    for (int attempt = 0; attempt < 2; attempt++) {
        cllama_token *t = malloc((size_t)cap * sizeof *t);
        if (!t) break;
        int32_t n = 0;
        cllama_status st = cllama_tokenize(srv->model, text, len, add_special, true, t, cap, &n);
        if (st == CLLAMA_OK && n <= cap) {
            *n_out = n;
            return t;
        }
        free(t);
        if (st != CLLAMA_ERR_RANGE || n <= cap) {
            cll_server_err_set(e, 400, "invalid_request_error", NULL, NULL, "cannot tokenize the prompt: %s",
                               cllama_last_error());
            return NULL;
        }
        cap = n;
    }
    cll_server_err_set(e, 500, "server_error", NULL, NULL, "out of memory");
    return NULL;
}

/* parse, check, tokenize and queue: the job on success, else NULL with *e filled */
static cll_server_job *make_job(cll_server *srv, cll_server_req *r, cll_server_err *e) {
    if (!model_matches(srv, r->model)) {
        cll_server_err_set(e, 404, "invalid_request_error", "model", "model_not_found",
                           "The model '%.200s' does not exist; this server serves '%.60s'", r->model, srv->model_id);
        return NULL;
    }
    char *chat = NULL;
    const char *text = r->prompt;
    size_t len = r->prompt_len;
    if (r->kind == CLL_SERVER_REQ_CHAT) {
        chat = render_chat(srv, r, &len, e);
        if (!chat) return NULL;
        text = chat;
    }
    bool add_special = r->kind == CLL_SERVER_REQ_COMPLETION || !text_starts_with_bos(srv->model, text, len);
    int32_t n = 0;
    cllama_token *toks = tokenize(srv, text, len, add_special, &n, e);
    free(chat);
    if (!toks) return NULL;
    if (n == 0) {
        free(toks);
        cll_server_err_set(e, 400, "invalid_request_error", "prompt", NULL, "the prompt is empty");
        return NULL;
    }
    /* prompt + at least one generated token must fit a sequence's context, and the paged pool */
    const bool over_ctx = n >= srv->n_ctx, over_pool = srv->kv_pool && (uint32_t)n + 1 > srv->kv_pool;
    if (over_ctx || over_pool) {
        free(toks);
        cll_server_err_set(e, 400, "invalid_request_error", r->kind == CLL_SERVER_REQ_CHAT ? "messages" : "prompt",
                           "context_length_exceeded",
                           "the prompt has %d tokens but %s holds %u (prompt + at least one generated token must "
                           "fit); shorten the prompt or restart with a larger %s",
                           n, over_ctx ? "a sequence's context" : "the paged KV pool",
                           over_ctx ? (unsigned)srv->n_ctx : srv->kv_pool, over_ctx ? "--ctx" : "--kv-cells");
        return NULL;
    }
    cllama_sampler_params sp = r->sp;
    if (!r->sp_seed_set) sp.seed = ((uint64_t)time(NULL) << 20) ^ (uint64_t)(uintptr_t)r ^ (uint64_t)(cll_now() * 1e9);
    cllama_sampler *smp = NULL;
    if (cllama_sampler_create(&sp, cllama_model_n_vocab(srv->model), &smp) != CLLAMA_OK) {
        free(toks);
        cll_server_err_set(e, 400, "invalid_request_error", NULL, NULL, "bad sampling parameters: %s",
                           cllama_last_error());
        return NULL;
    }
    cll_server_job *j = cll_server_job_new(toks, n, r->max_tokens, smp, r->stop, r->n_stop);
    if (j) j->ignore_eos = r->ignore_eos;
    r->stop = NULL; /* the job owns them now */
    r->n_stop = 0;
    if (!j) {
        cll_server_err_set(e, 500, "server_error", NULL, NULL, "out of memory");
        return NULL;
    }
    if (cll_server_sched_submit(srv->sched, j) != 0) {
        cll_server_job_release(srv->sched, j);
        cll_server_err_set(e, 503, "server_error", NULL, "server_busy",
                           "all %d slots are busy and the queue (%d) is full; retry shortly", srv->cfg.parallel,
                           srv->cfg.queue);
        return NULL;
    }
    return j;
}

static void fill_oai(cll_server *srv, cll_server_job *j, cll_server_oai *o) {
    o->model = srv->model_id;
    cll_server_job_result(srv->sched, j, &o->n_prompt, &o->n_gen, &o->n_cached, NULL, 0);
}

/* ---- whole replies ------------------------------------------------------------------------ */

static enum MHD_Result reply_whole(cll_server *srv, struct MHD_Connection *c, cll_server_req *r, cll_server_job *j) {
    size_t taken = 0, len = 0, cap = 0;
    char *all = NULL;
    cll_server_finish f;
    for (;;) {
        char *t;
        size_t n;
        f = cll_server_job_wait(srv->sched, j, POLL_S, &taken, &t, &n);
        if (t) {
            if (len + n + 1 > cap) {
                cap = (len + n + 1) * 2;
                char *a = realloc(all, cap);
                if (!a) {
                    free(t);
                    f = CLL_SERVER_FINISH_ERROR;
                    break;
                }
                all = a;
            }
            memcpy(all + len, t, n);
            len += n;
            free(t);
        }
        if (f != CLL_SERVER_FINISH_NONE) break;
        if (cll_server_client_gone(c)) {
            /* nobody will read the answer: give the slot back now */
            cll_server_job_cancel(srv->sched, j);
            cll_server_job_release(srv->sched, j);
            free(all);
            return MHD_NO;
        }
    }
    if (f == CLL_SERVER_FINISH_ERROR || f == CLL_SERVER_FINISH_CANCELLED) {
        cll_server_err e;
        char why[256] = "";
        cll_server_job_result(srv->sched, j, NULL, NULL, NULL, why, sizeof why);
        if (cll_server_job_busy(srv->sched, j)) /* no KV room: a 503 with Retry-After, as a full queue */
            cll_server_err_set(&e, 503, "server_error", NULL, "server_busy", "%s", why);
        else
            cll_server_err_set(&e, 500, "server_error", NULL, NULL, "generation failed: %s", why[0] ? why : "cancelled");
        cll_server_job_release(srv->sched, j);
        free(all);
        return cll_server_respond_error(srv, c, &e);
    }
    cll_server_oai o = {.chat = r->kind == CLL_SERVER_REQ_CHAT, .created = (long)time(NULL)};
    char id[48];
    cll_server_oai_id(id, sizeof id, o.chat ? "chatcmpl-" : "cmpl-");
    o.id = id;
    fill_oai(srv, j, &o);
    char *body = cll_server_oai_response(&o, all, len, cll_server_oai_finish_str(f), r->return_tokens ? j->gen : NULL,
                                         j->n_gen < j->gen_cap ? j->n_gen : j->gen_cap);
    cll_server_job_release(srv->sched, j);
    free(all);
    if (!body) {
        cll_server_err e;
        cll_server_err_set(&e, 500, "server_error", NULL, NULL, "out of memory");
        return cll_server_respond_error(srv, c, &e);
    }
    enum MHD_Result res = cll_server_respond(srv, c, 200, "application/json", body, strlen(body));
    free(body);
    return res;
}

/* ---- streams ------------------------------------------------------------------------------ */

typedef struct {
    cll_server *srv;
    struct MHD_Connection *c;
    cll_server_job *job;
    cll_server_oai o;
    char id[48];
    bool include_usage;
    bool started;            /* the opening role chunk went out */
    bool done;               /* [DONE] is in buf: end after it drains */
    size_t taken;            /* job output bytes consumed */
    char *buf;               /* formatted SSE bytes not yet written */
    size_t len, off, cap;
} stream;

static bool sbuf_add(stream *st, char *s) {
    if (!s) return false;
    size_t n = strlen(s);
    if (st->len + n > st->cap) {
        size_t cap = (st->len + n) * 2;
        char *b = realloc(st->buf, cap);
        if (!b) {
            free(s);
            return false;
        }
        st->buf = b;
        st->cap = cap;
    }
    memcpy(st->buf + st->len, s, n);
    st->len += n;
    free(s);
    return true;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Wait a little for output and format it. Returns false when the stream must be cut. */
static bool stream_produce(stream *st) {
    if (!st->started && st->o.chat) {
        st->started = true;
        return sbuf_add(st, cll_server_oai_chunk(&st->o, NULL, 0, true, NULL));
    }
    st->started = true;
    char *t;
    size_t n;
    cll_server_finish f = cll_server_job_wait(st->srv->sched, st->job, POLL_S, &st->taken, &t, &n);
    if (t) {
        bool ok = sbuf_add(st, cll_server_oai_chunk(&st->o, t, n, false, NULL));
        free(t);
        if (!ok) return false;
    }
    if (f == CLL_SERVER_FINISH_NONE) return true;
    if (f == CLL_SERVER_FINISH_ERROR || f == CLL_SERVER_FINISH_CANCELLED) {
        /* headers are gone already: report in-band as OpenAI does, then end the stream */
        cll_server_err e;
        char why[256] = "";
        cll_server_job_result(st->srv->sched, st->job, NULL, NULL, NULL, why, sizeof why);
        if (cll_server_job_busy(st->srv->sched, st->job))
            cll_server_err_set(&e, 503, "server_error", NULL, "server_busy", "%s", why);
        else
            cll_server_err_set(&e, 500, "server_error", NULL, NULL, "generation failed: %s", why[0] ? why : "cancelled");
        char *ej = cll_server_err_json(&e);
        if (ej) {
            size_t m = strlen(ej);
            char *rec = malloc(m + 9);
            if (rec) snprintf(rec, m + 9, "data: %s\n\n", ej);
            free(ej);
            sbuf_add(st, rec);
        }
    } else {
        fill_oai(st->srv, st->job, &st->o);
        if (!sbuf_add(st, cll_server_oai_chunk(&st->o, NULL, 0, false, cll_server_oai_finish_str(f)))) return false;
        if (st->include_usage && !sbuf_add(st, cll_server_oai_usage_chunk(&st->o))) return false;
    }
    st->done = true;
    return sbuf_add(st, dup_str("data: [DONE]\n\n"));
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max) {
    (void)pos;
    stream *st = cls;
    while (st->off == st->len) {
        if (st->done) return MHD_CONTENT_READER_END_OF_STREAM;
        st->off = st->len = 0;
        if (!stream_produce(st)) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (st->off == st->len && cll_server_client_gone(st->c)) {
            cll_server_job_cancel(st->srv->sched, st->job);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
    size_t n = st->len - st->off < max ? st->len - st->off : max;
    memcpy(out, st->buf + st->off, n);
    st->off += n;
    return (ssize_t)n;
}

/* MHD destroys the response when the connection ends, for whatever reason: a client that
 * vanished mid-stream frees its sequence here at the latest */
static void stream_free(void *cls) {
    stream *st = cls;
    cll_server_job_release(st->srv->sched, st->job);
    free(st->buf);
    free(st);
}

static enum MHD_Result reply_stream(cll_server *srv, struct MHD_Connection *c, cll_server_req *r, cll_server_job *j) {
    stream *st = calloc(1, sizeof *st);
    if (!st) {
        cll_server_job_release(srv->sched, j);
        return MHD_NO;
    }
    st->srv = srv;
    st->c = c;
    st->job = j;
    st->include_usage = r->include_usage;
    st->o.chat = r->kind == CLL_SERVER_REQ_CHAT;
    st->o.created = (long)time(NULL);
    st->o.model = srv->model_id;
    cll_server_oai_id(st->id, sizeof st->id, st->o.chat ? "chatcmpl-" : "cmpl-");
    st->o.id = st->id;
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, st, stream_free);
    if (!resp) {
        stream_free(st);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
    cll_server_metrics_status(&srv->metrics, 200);
    enum MHD_Result res = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp); /* MHD keeps its own reference until the connection ends */
    return res;
}

enum MHD_Result cll_server_route_generate(cll_server *srv, struct MHD_Connection *c, cll_server_req_kind kind,
                                          const char *body, size_t len) {
    cll_server_req r;
    cll_server_err e;
    if (cll_server_req_parse(kind, body, len, &srv->sp_default, &r, &e)) return cll_server_respond_error(srv, c, &e);
    cll_server_job *j = make_job(srv, &r, &e);
    enum MHD_Result res;
    if (!j) {
        res = cll_server_respond_error(srv, c, &e);
        if (e.http == 503) cll_log(CLL_LOG_INFO, "server: busy, answered 503");
    } else {
        res = r.stream ? reply_stream(srv, c, &r, j) : reply_whole(srv, c, &r, j);
    }
    cll_server_req_free(&r);
    return res;
}

enum MHD_Result cll_server_route_models(cll_server *srv, struct MHD_Connection *c) {
    json_t *m = json_object();
    json_object_set_new(m, "id", json_string(srv->model_id));
    json_object_set_new(m, "object", json_string("model"));
    json_object_set_new(m, "created", json_integer(srv->created));
    json_object_set_new(m, "owned_by", json_string("cllama"));
    json_t *meta = json_object();
    json_object_set_new(meta, "file", json_string(srv->file_id));
    json_object_set_new(meta, "desc", json_string(cllama_model_desc(srv->model) ? cllama_model_desc(srv->model) : ""));
    json_object_set_new(meta, "n_ctx", json_integer(srv->n_ctx));
    json_object_set_new(meta, "n_ctx_train", json_integer(cllama_model_n_ctx_train(srv->model)));
    json_object_set_new(meta, "n_vocab", json_integer(cllama_model_n_vocab(srv->model)));
    json_object_set_new(meta, "parallel", json_integer(srv->cfg.parallel));
    json_object_set_new(m, "meta", meta);
    json_t *data = json_array();
    json_array_append_new(data, m);
    json_t *root = json_object();
    json_object_set_new(root, "object", json_string("list"));
    json_object_set_new(root, "data", data);
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    enum MHD_Result res = cll_server_respond(srv, c, s ? 200 : 500, "application/json", s ? s : "{}", s ? strlen(s) : 2);
    free(s);
    return res;
}
