/* server/req: turns an OpenAI request body (JSON bytes) into a checked cll_server_req and
 * builds OpenAI-style error objects. Pure: jansson + libc only, no HTTP, no engine calls,
 * so the fuzz target and the unit tests drive it directly.
 * Owns: the strings inside a parsed request (free with cll_server_req_free).
 * Rule: any byte string in, either a fully valid request or an error with its HTTP status out. */
#ifndef CLL_SERVER_REQ_H
#define CLL_SERVER_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cllama.h"

typedef enum { CLL_SERVER_REQ_CHAT = 0, CLL_SERVER_REQ_COMPLETION = 1 } cll_server_req_kind;

#define CLL_SERVER_MAX_STOP 16      /* OpenAI allows 4; more costs nothing until it is silly */
#define CLL_SERVER_MAX_STOP_LEN 256 /* bytes per stop string */

typedef struct {
    cll_server_req_kind kind;
    char *model;                  /* NULL when the request names none */
    cllama_chat_message *msgs;    /* chat: role/content strings owned here */
    size_t n_msgs;
    char *prompt;                 /* completion: the raw prompt (NUL-terminated) */
    size_t prompt_len;
    bool stream;
    bool include_usage;           /* stream_options.include_usage */
    bool return_tokens;           /* extension: ids of the generated tokens in the reply */
    bool ignore_eos;              /* extension (as llama.cpp): keep going past end-of-generation */
    int32_t max_tokens;           /* -1 = until end of generation or context */
    char **stop;                  /* stop strings (non-empty), owned here */
    size_t n_stop;
    cllama_sampler_params sp;     /* defaults overridden by the request's fields */
    bool sp_seed_set;             /* the request chose the seed (else the server draws one) */
} cll_server_req;

typedef struct {
    int http;                     /* 400, 404, 413, 500, 503, ... */
    char message[320];
    const char *type;             /* "invalid_request_error", "server_error", ... */
    const char *param;            /* offending field or NULL */
    const char *code;             /* "model_not_found", ... or NULL */
} cll_server_err;

/* Parse body (len bytes, need not be NUL-terminated). defaults: sampler settings used for
 * fields the request leaves out. Returns 0 and fills *out, or -1 and fills *err (out is then
 * empty: nothing to free, though freeing it is harmless). */
int cll_server_req_parse(cll_server_req_kind kind, const char *body, size_t len, const cllama_sampler_params *defaults,
                         cll_server_req *out, cll_server_err *err);
void cll_server_req_free(cll_server_req *r);

/* Fill err; returns -1 so `return cll_server_err_set(...)` reads naturally. */
int cll_server_err_set(cll_server_err *err, int http, const char *type, const char *param, const char *code,
                       const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* {"error":{"message","type","param","code"}} as a malloc'd string (never NULL unless OOM). */
char *cll_server_err_json(const cll_server_err *err);

/* true when s[0..n) is well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF) */
bool cll_server_utf8_valid(const char *s, size_t n);
/* Copy s[0..n) into a malloc'd NUL-terminated string with every ill-formed byte replaced by
 * U+FFFD, so a model's odd bytes can always be put in JSON. *out_n = its length. */
char *cll_server_utf8_sanitize(const char *s, size_t n, size_t *out_n);

#endif
