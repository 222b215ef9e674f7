/* server/oai: OpenAI-shaped response objects: whole completions, stream chunks (as SSE
 * "data: ...\n\n" records) and usage blocks, for chat and text completions.
 * Owns: nothing; every builder returns a malloc'd string the caller frees (NULL on OOM).
 * Rule: text from the model is sanitized to valid UTF-8 before it goes into JSON. */
#ifndef CLL_SERVER_OAI_H
#define CLL_SERVER_OAI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cllama.h"

typedef struct {
    bool chat;               /* chat.completion vs text_completion shapes */
    const char *id;          /* "chatcmpl-..." / "cmpl-..." */
    long created;
    const char *model;
    int32_t n_prompt, n_gen, n_cached; /* usage */
} cll_server_oai;

/* "stop" / "length" (NULL while running) */
const char *cll_server_oai_finish_str(int finish);
/* a fresh id with the given prefix, e.g. "chatcmpl-" + 24 random alphanumerics */
void cll_server_oai_id(char *buf, size_t cap, const char *prefix);

char *cll_server_oai_response(const cll_server_oai *o, const char *text, size_t n, const char *finish,
                              const cllama_token *toks, int32_t n_toks);
/* one chunk: role_only sends the opening {"role":"assistant","content":""} delta; finish
 * non-NULL closes the choice (with usage attached, as llama.cpp does). */
char *cll_server_oai_chunk(const cll_server_oai *o, const char *text, size_t n, bool role_only, const char *finish);
/* the stream_options.include_usage chunk: choices [] and usage */
char *cll_server_oai_usage_chunk(const cll_server_oai *o);

#endif
