/* server: the OpenAI-compatible HTTP server behind `cllama serve` (libmicrohttpd + jansson).
 * Owns: the model, the context, the scheduler and the HTTP daemon for the process lifetime.
 * Rule: cll_server_run returns only after SIGINT/SIGTERM or a start-up failure, with
 * everything it built freed. */
#ifndef CLL_SERVER_H
#define CLL_SERVER_H

#include <stddef.h>

#include "cllama.h"
#include "server/auth.h"

typedef struct {
    const char *model_path;
    const char *host;        /* IPv4 address or "localhost"; default 127.0.0.1 */
    int port;                /* 0 = any free port (the log line says which) */
    int parallel;            /* sequence slots decoded together */
    int n_ctx;               /* tokens of KV per sequence; 0 = engine default */
    long kv_cells;           /* > 0: a paged KV pool of this many cells shared by the slots */
    cllama_backend backend;
    int32_t tp;              /* tensor-parallel ranks (cllama_model_params.tp; 0: none) */
    const int32_t *devices;  /* their GPUs (NULL: 0..tp-1) */
    int device;              /* the GPU without a split */
    uint64_t gpu_mem_limit;  /* per GPU (0: what is free) */
    int threads;             /* 0 = engine default */
    size_t max_body;         /* request body limit in bytes (413 beyond) */
    int queue;               /* requests waiting for a slot before 503 */
    const char *alias;       /* model id served; NULL = file name without .gguf */
    int timeout_s;           /* idle connection timeout while a request is being received */
    int chunk;               /* prompt tokens per sequence per step */
    int step_tokens;         /* most tokens one step carries (0: parallel + chunk) */
    const cll_server_keys *api_keys; /* NULL or none: no auth; else every endpoint but /health,
                                      * the page and CORS preflights needs Bearer one-of-these */
    const char *ssl_cert_file;       /* PEM certificate (chain); with ssl_key_file: HTTPS */
    const char *ssl_key_file;        /* PEM private key, unencrypted */
} cll_server_config;

void cll_server_config_default(cll_server_config *c);
int cll_server_run(const cll_server_config *cfg);

#endif
