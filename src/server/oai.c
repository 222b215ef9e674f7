/* server/oai: OpenAI response and chunk JSON. */
#include "server/oai.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/req.h"
#include "server/sched.h"

const char *cll_server_oai_finish_str(int finish) {
    switch (finish) {
    case CLL_SERVER_FINISH_STOP: return "stop";
    case CLL_SERVER_FINISH_LENGTH: return "length";
    default: return NULL;
    }
}

void cll_server_oai_id(char *buf, size_t cap, const char *prefix) {
    static const char al[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    /* ids only need to be unique-ish, not secret: a per-thread xorshift seeded from the clock */
    static _Thread_local uint64_t x;
    if (!x) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        x = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ULL ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)&x;
        if (!x) x = 1;
    }
    int n = snprintf(buf, cap, "%s", prefix);
    if (n < 0) n = 0;
    for (size_t i = (size_t)n; i + 1 < cap && i < (size_t)n + 24; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[i] = al[x % (sizeof al - 1)];
        buf[i + 1] = 0;
    }
}

static json_t *text_json(const char *t, size_t n) {
    size_t m = 0;
    char *s = cll_server_utf8_sanitize(t ? t : "", t ? n : 0, &m);
    json_t *j = s ? json_stringn(s, m) : json_string("");
    free(s);
    return j;
}

static json_t *usage_json(const cll_server_oai *o) {
    json_t *u = json_object();
    json_object_set_new(u, "prompt_tokens", json_integer(o->n_prompt));
    json_object_set_new(u, "completion_tokens", json_integer(o->n_gen));
    json_object_set_new(u, "total_tokens", json_integer((json_int_t)o->n_prompt + o->n_gen));
    json_t *d = json_object();
    json_object_set_new(d, "cached_tokens", json_integer(o->n_cached));
    json_object_set_new(u, "prompt_tokens_details", d);
    return u;
}

static json_t *envelope(const cll_server_oai *o, bool chunk) {
    json_t *r = json_object();
    json_object_set_new(r, "id", json_string(o->id));
    json_object_set_new(r, "object", json_string(o->chat ? (chunk ? "chat.completion.chunk" : "chat.completion")
                                                         : "text_completion"));
    json_object_set_new(r, "created", json_integer(o->created));
    json_object_set_new(r, "model", json_string(o->model));
    json_object_set_new(r, "system_fingerprint", json_string("cllama"));
    return r;
}

static char *dump(json_t *r, bool sse) {
    char *s = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    if (!s || !sse) return s;
    size_t n = strlen(s);
    char *o = malloc(n + 9);
    if (o) {
        memcpy(o, "data: ", 6);
        memcpy(o + 6, s, n);
        memcpy(o + 6 + n, "\n\n", 3);
    }
    free(s);
    return o;
}

char *cll_server_oai_response(const cll_server_oai *o, const char *text, size_t n, const char *finish,
                              const cllama_token *toks, int32_t n_toks) {
    json_t *r = envelope(o, false);
    json_t *ch = json_object();
    json_object_set_new(ch, "index", json_integer(0));
    if (o->chat) {
        json_t *msg = json_object();
        json_object_set_new(msg, "role", json_string("assistant"));
        json_object_set_new(msg, "content", text_json(text, n));
        json_object_set_new(ch, "message", msg);
    } else {
        json_object_set_new(ch, "text", text_json(text, n));
    }
    json_object_set_new(ch, "logprobs", json_null());
    json_object_set_new(ch, "finish_reason", finish ? json_string(finish) : json_null());
    if (toks) {
        json_t *a = json_array();
        for (int32_t i = 0; i < n_toks; i++) json_array_append_new(a, json_integer(toks[i]));
        json_object_set_new(ch, "tokens", a);
    }
    json_t *choices = json_array();
    json_array_append_new(choices, ch);
    json_object_set_new(r, "choices", choices);
    json_object_set_new(r, "usage", usage_json(o));
    return dump(r, false);
}

char *cll_server_oai_chunk(const cll_server_oai *o, const char *text, size_t n, bool role_only, const char *finish) {
    json_t *r = envelope(o, true);
    json_t *ch = json_object();
    json_object_set_new(ch, "index", json_integer(0));
    if (o->chat) {
        json_t *d = json_object();
        if (role_only) {
            json_object_set_new(d, "role", json_string("assistant"));
            json_object_set_new(d, "content", json_string(""));
        } else if (n) {
            json_object_set_new(d, "content", text_json(text, n));
        }
        json_object_set_new(ch, "delta", d);
    } else {
        json_object_set_new(ch, "text", text_json(text, n));
    }
    json_object_set_new(ch, "logprobs", json_null());
    json_object_set_new(ch, "finish_reason", finish ? json_string(finish) : json_null());
    json_t *choices = json_array();
    json_array_append_new(choices, ch);
    json_object_set_new(r, "choices", choices);
    if (finish) json_object_set_new(r, "usage", usage_json(o));
    return dump(r, true);
}

char *cll_server_oai_usage_chunk(const cll_server_oai *o) {
    json_t *r = envelope(o, true);
    json_object_set_new(r, "choices", json_array());
    json_object_set_new(r, "usage", usage_json(o));
    return dump(r, true);
}
