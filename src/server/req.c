/* server/req: OpenAI request parsing and validation, error objects, UTF-8 checks. */
#include "server/req.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cll_server_err_set(cll_server_err *err, int http, const char *type, const char *param, const char *code,
                       const char *fmt, ...) {
    if (!err) return -1;
    err->http = http;
    err->type = type;
    err->param = param;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return -1;
}

char *cll_server_err_json(const cll_server_err *err) {
    size_t mlen = 0;
    /* the message may quote user bytes (jansson's error text does): make it valid first */
    char *msg = cll_server_utf8_sanitize(err->message, strlen(err->message), &mlen);
    json_t *e = json_object();
    json_object_set_new(e, "message", msg ? json_stringn(msg, mlen) : json_string("error"));
    json_object_set_new(e, "type", json_string(err->type ? err->type : "invalid_request_error"));
    json_object_set_new(e, "param", err->param ? json_string(err->param) : json_null());
    json_object_set_new(e, "code", err->code ? json_string(err->code) : json_null());
    free(msg);
    json_t *root = json_object();
    json_object_set_new(root, "error", e);
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return s;
}

/* ---- UTF-8 --------------------------------------------------------------------------- */

/* Length of the well-formed sequence at s (1..4), or 0 when ill-formed or cut short. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned cp, min;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; min = 0x10000; }
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

bool cll_server_utf8_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(p + i, n - i);
        if (!k) return false;
        i += k;
    }
    return true;
}

char *cll_server_utf8_sanitize(const char *s, size_t n, size_t *out_n) {
    /* worst case every byte becomes the 3-byte U+FFFD */
    if (n > (SIZE_MAX - 1) / 3) return NULL;
    char *o = malloc(n * 3 + 1);
    if (!o) return NULL;
    const unsigned char *p = (const unsigned char *)s;
    size_t j = 0;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(p + i, n - i);
        if (k) {
            memcpy(o + j, p + i, k);
            j += k;
            i += k;
        } else {
            memcpy(o + j, "\xEF\xBF\xBD", 3);
            j += 3;
            i += 1;
        }
    }
    o[j] = 0;
    if (out_n) *out_n = j;
    return o;
}

/* ---- field readers --------------------------------------------------------------------- */

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* Optional number field in [lo, hi]. Returns 1 if present and fine, 0 if absent/null, -1 on error. */
static int get_num(json_t *root, const char *key, double lo, double hi, double *out, cll_server_err *err) {
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_number(v))
        return cll_server_err_set(err, 400, "invalid_request_error", key, "invalid_type", "'%s' must be a number",
                                  key);
    double d = json_number_value(v);
    if (!isfinite(d) || d < lo || d > hi)
        return cll_server_err_set(err, 400, "invalid_request_error", key, "invalid_value",
                                  "'%s' must be between %g and %g (got %g)", key, lo, hi, d);
    *out = d;
    return 1;
}

static int get_int(json_t *root, const char *key, long long lo, long long hi, long long *out, cll_server_err *err) {
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v))
        return cll_server_err_set(err, 400, "invalid_request_error", key, "invalid_type", "'%s' must be an integer",
                                  key);
    long long x = (long long)json_integer_value(v);
    if (x < lo || x > hi)
        return cll_server_err_set(err, 400, "invalid_request_error", key, "invalid_value",
                                  "'%s' must be between %lld and %lld (got %lld)", key, lo, hi, x);
    *out = x;
    return 1;
}

static int get_bool(json_t *root, const char *key, bool *out, cll_server_err *err) {
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_boolean(v))
        return cll_server_err_set(err, 400, "invalid_request_error", key, "invalid_type", "'%s' must be a boolean",
                                  key);
    *out = json_is_true(v);
    return 1;
}

/* message content: a string, null, or an array of {"type":"text","text":...} parts */
static char *read_content(json_t *c, size_t idx, cll_server_err *err) {
    if (!c || json_is_null(c)) return dup_n("", 0);
    if (json_is_string(c)) return dup_n(json_string_value(c), json_string_length(c));
    if (!json_is_array(c)) {
        cll_server_err_set(err, 400, "invalid_request_error", "messages", "invalid_type",
                           "messages[%zu].content must be a string or an array of text parts", idx);
        return NULL;
    }
    size_t total = 0, i;
    json_t *part;
    json_array_foreach(c, i, part) {
        json_t *type = json_object_get(part, "type"), *text = json_object_get(part, "text");
        if (!json_is_object(part) || !json_is_string(type) || strcmp(json_string_value(type), "text") ||
            !json_is_string(text)) {
            cll_server_err_set(err, 400, "invalid_request_error", "messages", "invalid_type",
                               "messages[%zu].content[%zu]: only {\"type\":\"text\",\"text\":...} parts are supported",
                               idx, i);
            return NULL;
        }
        total += json_string_length(text);
    }
    char *out = malloc(total + 1);
    if (!out) return NULL;
    size_t o = 0;
    json_array_foreach(c, i, part) {
        json_t *text = json_object_get(part, "text");
        memcpy(out + o, json_string_value(text), json_string_length(text));
        o += json_string_length(text);
    }
    out[o] = 0;
    return out;
}

static int read_messages(json_t *root, cll_server_req *r, cll_server_err *err) {
    json_t *m = json_object_get(root, "messages");
    if (!m) return cll_server_err_set(err, 400, "invalid_request_error", "messages", "missing_required_parameter",
                                      "'messages' is required");
    if (!json_is_array(m) || json_array_size(m) == 0)
        return cll_server_err_set(err, 400, "invalid_request_error", "messages", "invalid_type",
                                  "'messages' must be a non-empty array");
    size_t n = json_array_size(m);
    r->msgs = calloc(n, sizeof *r->msgs);
    if (!r->msgs) return cll_server_err_set(err, 500, "server_error", NULL, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *msg = json_array_get(m, i);
        json_t *role = json_object_get(msg, "role");
        if (!json_is_object(msg) || !json_is_string(role))
            return cll_server_err_set(err, 400, "invalid_request_error", "messages", "invalid_type",
                                      "messages[%zu] must be an object with a string 'role'", i);
        const char *rs = json_string_value(role);
        if (!strcmp(rs, "developer")) rs = "system"; /* OpenAI's newer name for the system role */
        if (strcmp(rs, "system") && strcmp(rs, "user") && strcmp(rs, "assistant"))
            return cll_server_err_set(err, 400, "invalid_request_error", "messages", "invalid_value",
                                      "messages[%zu].role must be system, developer, user or assistant", i);
        char *content = read_content(json_object_get(msg, "content"), i, err);
        if (!content) return -1;
        r->msgs[i].content = content;
        r->msgs[i].role = dup_n(rs, strlen(rs));
        r->n_msgs = i + 1;
        if (!r->msgs[i].role) return cll_server_err_set(err, 500, "server_error", NULL, NULL, "out of memory");
    }
    return 0;
}

static int add_stop(cll_server_req *r, json_t *s, cll_server_err *err) {
    size_t n = json_string_length(s);
    if (n == 0) return 0; /* an empty stop string would stop before the first byte: ignore it */
    if (n > CLL_SERVER_MAX_STOP_LEN)
        return cll_server_err_set(err, 400, "invalid_request_error", "stop", "invalid_value",
                                  "each stop string must be at most %d bytes", CLL_SERVER_MAX_STOP_LEN);
    if (r->n_stop >= CLL_SERVER_MAX_STOP)
        return cll_server_err_set(err, 400, "invalid_request_error", "stop", "invalid_value",
                                  "at most %d stop strings", CLL_SERVER_MAX_STOP);
    char *d = dup_n(json_string_value(s), n);
    if (!d) return cll_server_err_set(err, 500, "server_error", NULL, NULL, "out of memory");
    r->stop[r->n_stop++] = d;
    return 0;
}

static int read_stop(json_t *root, cll_server_req *r, cll_server_err *err) {
    json_t *s = json_object_get(root, "stop");
    if (!s || json_is_null(s)) return 0;
    r->stop = calloc(CLL_SERVER_MAX_STOP, sizeof *r->stop);
    if (!r->stop) return cll_server_err_set(err, 500, "server_error", NULL, NULL, "out of memory");
    if (json_is_string(s)) return add_stop(r, s, err);
    if (!json_is_array(s))
        return cll_server_err_set(err, 400, "invalid_request_error", "stop", "invalid_type",
                                  "'stop' must be a string or an array of strings");
    size_t i;
    json_t *e;
    json_array_foreach(s, i, e) {
        if (!json_is_string(e))
            return cll_server_err_set(err, 400, "invalid_request_error", "stop", "invalid_type",
                                      "'stop' must be a string or an array of strings");
        if (add_stop(r, e, err)) return -1;
    }
    return 0;
}

static int read_sampling(json_t *root, cll_server_req *r, cll_server_err *err) {
    double d;
    long long x;
    int k;
    if ((k = get_num(root, "temperature", 0, 100, &d, err)) < 0) return -1;
    if (k) r->sp.temperature = (float)d;
    if ((k = get_num(root, "top_p", 0, 1, &d, err)) < 0) return -1;
    if (k) r->sp.top_p = (float)d;
    if ((k = get_num(root, "min_p", 0, 1, &d, err)) < 0) return -1;
    if (k) r->sp.min_p = (float)d;
    if ((k = get_int(root, "top_k", 0, 1 << 30, &x, err)) < 0) return -1;
    if (k) r->sp.top_k = (int32_t)x;
    if ((k = get_num(root, "presence_penalty", -2, 2, &d, err)) < 0) return -1;
    if (k) r->sp.presence_penalty = (float)d;
    if ((k = get_num(root, "frequency_penalty", -2, 2, &d, err)) < 0) return -1;
    if (k) r->sp.frequency_penalty = (float)d;
    if ((k = get_num(root, "repeat_penalty", 0, 100, &d, err)) < 0) return -1;
    if (k) {
        if (d <= 0)
            return cll_server_err_set(err, 400, "invalid_request_error", "repeat_penalty", "invalid_value",
                                      "'repeat_penalty' must be > 0");
        r->sp.repeat_penalty = (float)d;
    }
    if ((k = get_int(root, "repeat_last_n", 0, 1 << 20, &x, err)) < 0) return -1;
    if (k) r->sp.repeat_last_n = (int32_t)x;
    /* seeds may be any integer: keep the bits */
    json_t *seed = json_object_get(root, "seed");
    if (seed && !json_is_null(seed)) {
        if (!json_is_integer(seed))
            return cll_server_err_set(err, 400, "invalid_request_error", "seed", "invalid_type",
                                      "'seed' must be an integer");
        r->sp.seed = (uint64_t)json_integer_value(seed);
        r->sp_seed_set = true;
    }
    return 0;
}

static int parse_root(cll_server_req_kind kind, json_t *root, cll_server_req *r, cll_server_err *err) {
    if (!json_is_object(root))
        return cll_server_err_set(err, 400, "invalid_request_error", NULL, NULL, "the request body must be a JSON object");
    json_t *model = json_object_get(root, "model");
    if (model && !json_is_null(model)) {
        if (!json_is_string(model))
            return cll_server_err_set(err, 400, "invalid_request_error", "model", "invalid_type",
                                      "'model' must be a string");
        r->model = dup_n(json_string_value(model), json_string_length(model));
        if (!r->model) return cll_server_err_set(err, 500, "server_error", NULL, NULL, "out of memory");
    }
    if (kind == CLL_SERVER_REQ_CHAT) {
        if (read_messages(root, r, err)) return -1;
    } else {
        json_t *p = json_object_get(root, "prompt");
        if (!p)
            return cll_server_err_set(err, 400, "invalid_request_error", "prompt", "missing_required_parameter",
                                      "'prompt' is required");
        /* a one-element array of strings is a common client habit; more would need n prompts */
        if (json_is_array(p) && json_array_size(p) == 1) p = json_array_get(p, 0);
        if (!json_is_string(p))
            return cll_server_err_set(err, 400, "invalid_request_error", "prompt", "invalid_type",
                                      "'prompt' must be a string (batches of prompts are not supported)");
        r->prompt_len = json_string_length(p);
        r->prompt = dup_n(json_string_value(p), r->prompt_len);
        if (!r->prompt) return cll_server_err_set(err, 500, "server_error", NULL, NULL, "out of memory");
    }
    if (get_bool(root, "stream", &r->stream, err) < 0) return -1;
    json_t *so = json_object_get(root, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_object(so))
            return cll_server_err_set(err, 400, "invalid_request_error", "stream_options", "invalid_type",
                                      "'stream_options' must be an object");
        if (get_bool(so, "include_usage", &r->include_usage, err) < 0) return -1;
    }
    if (get_bool(root, "return_tokens", &r->return_tokens, err) < 0) return -1;
    if (get_bool(root, "ignore_eos", &r->ignore_eos, err) < 0) return -1;
    long long x;
    int k;
    /* max_completion_tokens is the newer name; when both are given it wins */
    if ((k = get_int(root, "max_tokens", 1, INT32_MAX, &x, err)) < 0) return -1;
    if (k) r->max_tokens = (int32_t)x;
    if ((k = get_int(root, "max_completion_tokens", 1, INT32_MAX, &x, err)) < 0) return -1;
    if (k) r->max_tokens = (int32_t)x;
    json_t *n = json_object_get(root, "n");
    if (n && !json_is_null(n) && (!json_is_integer(n) || json_integer_value(n) != 1))
        return cll_server_err_set(err, 400, "invalid_request_error", "n", "invalid_value", "only n = 1 is supported");
    if (read_stop(root, r, err)) return -1;
    return read_sampling(root, r, err);
}

int cll_server_req_parse(cll_server_req_kind kind, const char *body, size_t len, const cllama_sampler_params *defaults,
                         cll_server_req *out, cll_server_err *err) {
    memset(out, 0, sizeof *out);
    out->kind = kind;
    out->max_tokens = -1;
    if (defaults) out->sp = *defaults;
    if (!body || len == 0)
        return cll_server_err_set(err, 400, "invalid_request_error", NULL, NULL, "the request body is empty");
    json_error_t je;
    /* jansson rejects ill-formed UTF-8, lone surrogates and \u0000 for us */
    json_t *root = json_loadb(body, len, 0, &je);
    if (!root) {
        bool utf8 = !cll_server_utf8_valid(body, len);
        return cll_server_err_set(err, 400, "invalid_request_error", NULL, utf8 ? "invalid_encoding" : "invalid_json",
                                  "%s: %s (line %d, column %d)",
                                  utf8 ? "the request body is not valid UTF-8" : "invalid JSON", je.text, je.line,
                                  je.column);
    }
    int rc = parse_root(kind, root, out, err);
    json_decref(root);
    if (rc) cll_server_req_free(out);
    return rc;
}

void cll_server_req_free(cll_server_req *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n_msgs; i++) {
        free((char *)r->msgs[i].role);
        free((char *)r->msgs[i].content);
    }
    free(r->msgs);
    for (size_t i = 0; i < r->n_stop; i++) free(r->stop[i]);
    free(r->stop);
    free(r->model);
    free(r->prompt);
    cll_server_req_kind k = r->kind;
    memset(r, 0, sizeof *r);
    r->kind = k;
    r->max_tokens = -1;
}
