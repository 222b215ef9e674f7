/* server/srv: the state the HTTP glue (http.c) and the OpenAI routes (routes.c) share, and the
 * response helpers both use.
 * Owns: nothing itself; cll_server_run (http.c) builds and frees what it points to.
 * Rule: every response goes through cll_server_respond*, so every status code is counted. */
#ifndef CLL_SERVER_SRV_H
#define CLL_SERVER_SRV_H

#include <microhttpd.h>
#include <stdbool.h>

#include "server/metrics.h"
#include "server/req.h"
#include "server/sched.h"
#include "server/server.h"

typedef struct {
    cll_server_config cfg;
    cllama_model *model;
    cllama_context *ctx;
    cll_server_sched *sched;
    cll_server_metrics metrics;
    char model_id[256];      /* the id /v1/models lists and replies carry */
    char file_id[256];       /* the file name, also accepted as a model name */
    long created;            /* model "created" time: when the server loaded it */
    int n_ctx;
    uint32_t kv_pool;        /* paged KV: the pool's cells (0: not paged) */               /* per sequence */
    cllama_sampler_params sp_default;
    double prep_seconds;     /* wall time of the start-up preparation (cllama_context_prepare) */
    double prep_device;      /* ... and the device time of its passes, left out of the served forwards' */
} cll_server;

/* queue a response; count its status; body is copied */
enum MHD_Result cll_server_respond(cll_server *srv, struct MHD_Connection *c, unsigned status, const char *ctype,
                                   const char *body, size_t len);
enum MHD_Result cll_server_respond_error(cll_server *srv, struct MHD_Connection *c, const cll_server_err *e);
/* the client closed its end (checked without blocking) */
bool cll_server_client_gone(struct MHD_Connection *c);

/* routes.c: POST bodies of the two generation endpoints */
enum MHD_Result cll_server_route_generate(cll_server *srv, struct MHD_Connection *c, cll_server_req_kind kind,
                                          const char *body, size_t len);
enum MHD_Result cll_server_route_models(cll_server *srv, struct MHD_Connection *c);

#endif
