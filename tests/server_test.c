/* server_test: the server's pure parts — request parsing and validation, error objects,
 * UTF-8 checks, the stop-string gate, OpenAI chunk shapes, metrics text. No HTTP, no model. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef CLLAMA_HAVE_SERVER
#include <jansson.h>

#include "server/auth.h"
#include "server/metrics.h"
#include "server/oai.h"
#include "server/req.h"
#include "server/sched.h"
#include "server/stop.h"

static cllama_sampler_params defaults(void) {
    cllama_sampler_params p;
    memset(&p, 0, sizeof p);
    p.temperature = 0.8f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.repeat_penalty = 1.0f;
    p.repeat_last_n = 64;
    p.seed = 42;
    return p;
}

static int parse(cll_server_req_kind k, const char *body, cll_server_req *r, cll_server_err *e) {
    cllama_sampler_params d = defaults();
    return cll_server_req_parse(k, body, strlen(body), &d, r, e);
}

/* expect a failure with this status and error code */
static void expect_err(cll_server_req_kind k, const char *body, int http, const char *code) {
    cll_server_req r;
    cll_server_err e;
    memset(&e, 0, sizeof e);
    int rc = parse(k, body, &r, &e);
    if (rc == 0) {
        cll_server_req_free(&r);
        fail_msg("accepted a bad request: %s", body);
    }
    assert_int_equal(e.http, http);
    if (code) {
        assert_non_null(e.code);
        assert_string_equal(e.code, code);
    }
    assert_true(strlen(e.message) > 0);
}

static void test_parse_chat_full(void **st) {
    (void)st;
    cll_server_req r;
    cll_server_err e;
    const char *b = "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
                    "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hel\"},{\"type\":\"text\",\"text\":\"lo\"}]},"
                    "{\"role\":\"developer\",\"content\":null}],"
                    "\"stream\":true,\"stream_options\":{\"include_usage\":true},\"max_tokens\":7,"
                    "\"max_completion_tokens\":9,\"stop\":[\"\\n\\n\",\"END\",\"\"],\"temperature\":0,\"top_p\":0.5,"
                    "\"top_k\":3,\"min_p\":0.1,\"seed\":-5,\"presence_penalty\":0.5,\"frequency_penalty\":-0.5,"
                    "\"repeat_penalty\":1.1,\"n\":1,\"unknown_field\":{\"x\":1}}";
    assert_int_equal(parse(CLL_SERVER_REQ_CHAT, b, &r, &e), 0);
    assert_string_equal(r.model, "m");
    assert_int_equal(r.n_msgs, 3);
    assert_string_equal(r.msgs[1].content, "Hello");
    assert_string_equal(r.msgs[2].role, "system");
    assert_string_equal(r.msgs[2].content, "");
    assert_true(r.stream);
    assert_true(r.include_usage);
    assert_int_equal(r.max_tokens, 9); /* max_completion_tokens wins */
    assert_int_equal(r.n_stop, 2);     /* the empty stop string is dropped */
    assert_string_equal(r.stop[0], "\n\n");
    assert_true(r.sp.temperature == 0.0f);
    assert_true(r.sp.top_p == 0.5f);
    assert_int_equal(r.sp.top_k, 3);
    assert_true(r.sp_seed_set);
    assert_int_equal((int64_t)r.sp.seed, -5);
    assert_true(r.sp.repeat_penalty > 1.09f && r.sp.repeat_penalty < 1.11f);
    cll_server_req_free(&r);
}

static void test_parse_defaults(void **st) {
    (void)st;
    cll_server_req r;
    cll_server_err e;
    assert_int_equal(parse(CLL_SERVER_REQ_COMPLETION, "{\"prompt\":[\"Once\"]}", &r, &e), 0);
    assert_string_equal(r.prompt, "Once");
    assert_null(r.model);
    assert_false(r.stream);
    assert_int_equal(r.max_tokens, -1);
    assert_int_equal(r.n_stop, 0);
    assert_false(r.sp_seed_set);
    assert_int_equal(r.sp.top_k, 40);
    cll_server_req_free(&r);
    assert_int_equal(parse(CLL_SERVER_REQ_COMPLETION, "{\"prompt\":\"x\",\"stop\":\"a\"}", &r, &e), 0);
    assert_int_equal(r.n_stop, 1);
    cll_server_req_free(&r);
    cll_server_req_free(NULL);
}

static void test_parse_bad(void **st) {
    (void)st;
    const cll_server_req_kind C = CLL_SERVER_REQ_CHAT, P = CLL_SERVER_REQ_COMPLETION;
    expect_err(C, "", 400, NULL);
    expect_err(C, "{", 400, "invalid_json");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]} trailing", 400, "invalid_json");
    expect_err(C, "[]", 400, NULL);
    expect_err(C, "\"str\"", 400, NULL);
    expect_err(C, "{}", 400, "missing_required_parameter");
    expect_err(C, "{\"messages\":[]}", 400, "invalid_type");
    expect_err(C, "{\"messages\":\"hi\"}", 400, "invalid_type");
    expect_err(C, "{\"messages\":[42]}", 400, "invalid_type");
    expect_err(C, "{\"messages\":[{\"content\":\"hi\"}]}", 400, "invalid_type");
    expect_err(C, "{\"messages\":[{\"role\":\"wizard\",\"content\":\"hi\"}]}", 400, "invalid_value");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":7}]}", 400, "invalid_type");
    expect_err(C, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}", 400, "invalid_type");
    const char *ok = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
    char b[512];
    const char *bad_fields[] = {
        "\"temperature\":\"hot\"", "\"temperature\":-1", "\"top_p\":2", "\"top_k\":1.5", "\"top_k\":-1",
        "\"max_tokens\":0", "\"max_tokens\":-3", "\"max_tokens\":\"9\"", "\"max_tokens\":1e30", "\"stream\":1",
        "\"stream_options\":true", "\"n\":2", "\"stop\":5", "\"stop\":[1]", "\"seed\":1.5", "\"model\":5",
        "\"presence_penalty\":3", "\"repeat_penalty\":0", "\"stream_options\":{\"include_usage\":\"yes\"}",
    };
    for (size_t i = 0; i < sizeof bad_fields / sizeof *bad_fields; i++) {
        snprintf(b, sizeof b, "{%s,%s}", ok, bad_fields[i]);
        expect_err(C, b, 400, NULL);
    }
    expect_err(P, "{}", 400, "missing_required_parameter");
    expect_err(P, "{\"prompt\":[\"a\",\"b\"]}", 400, "invalid_type");
    expect_err(P, "{\"prompt\":[1,2,3]}", 400, "invalid_type");
    /* ill-formed UTF-8 inside a string, and a lone surrogate escape */
    expect_err(P, "{\"prompt\":\"\xff\xfe\"}", 400, "invalid_encoding");
    expect_err(P, "{\"prompt\":\"\xc3\"}", 400, "invalid_encoding");
    expect_err(P, "{\"prompt\":\"\\ud800\"}", 400, NULL);
    expect_err(P, "{\"prompt\":\"a\\u0000b\"}", 400, NULL);
    /* too many stop strings / too long */
    snprintf(b, sizeof b, "{\"prompt\":\"x\",\"stop\":[");
    for (int i = 0; i < CLL_SERVER_MAX_STOP + 1; i++) strcat(b, i ? ",\"s\"" : "\"s\"");
    strcat(b, "]}");
    expect_err(P, b, 400, "invalid_value");
    /* deep nesting must not crash */
    size_t depth = 100000;
    char *deep = malloc(depth * 2 + 32);
    assert_non_null(deep);
    strcpy(deep, "{\"prompt\":\"x\",\"y\":");
    size_t o = strlen(deep);
    for (size_t i = 0; i < depth; i++) deep[o++] = '[';
    for (size_t i = 0; i < depth; i++) deep[o++] = ']';
    deep[o++] = '}';
    deep[o] = 0;
    cll_server_req r;
    cll_server_err e;
    if (parse(P, deep, &r, &e) == 0) cll_server_req_free(&r);
    free(deep);
}

static void test_err_json(void **st) {
    (void)st;
    cll_server_err e;
    assert_int_equal(cll_server_err_set(&e, 404, "invalid_request_error", "model", "model_not_found", "no %s", "\xff"),
                     -1);
    char *s = cll_server_err_json(&e);
    assert_non_null(s);
    json_error_t je;
    json_t *j = json_loads(s, 0, &je);
    assert_non_null(j);
    json_t *err = json_object_get(j, "error");
    assert_true(json_is_object(err));
    assert_string_equal(json_string_value(json_object_get(err, "type")), "invalid_request_error");
    assert_string_equal(json_string_value(json_object_get(err, "param")), "model");
    assert_string_equal(json_string_value(json_object_get(err, "code")), "model_not_found");
    assert_string_equal(json_string_value(json_object_get(err, "message")), "no \xEF\xBF\xBD");
    json_decref(j);
    free(s);
    cll_server_err_set(&e, 500, "server_error", NULL, NULL, "x");
    s = cll_server_err_json(&e);
    j = json_loads(s, 0, &je);
    assert_true(json_is_null(json_object_get(json_object_get(j, "error"), "param")));
    json_decref(j);
    free(s);
}

static void test_utf8(void **st) {
    (void)st;
    assert_true(cll_server_utf8_valid("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80", 15));
    assert_false(cll_server_utf8_valid("\xc0\xaf", 2));         /* overlong */
    assert_false(cll_server_utf8_valid("\xed\xa0\x80", 3));     /* surrogate */
    assert_false(cll_server_utf8_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
    assert_false(cll_server_utf8_valid("\xe2\x82", 2));         /* cut short */
    size_t n;
    char *s = cll_server_utf8_sanitize("a\xffz\xe2\x82", 5, &n);
    assert_string_equal(s, "a\xEF\xBF\xBDz\xEF\xBF\xBD\xEF\xBF\xBD");
    assert_int_equal(n, strlen(s));
    free(s);
}

/* feed pieces through the gate; return the concatenated released text and the stop flag */
static char *run_gate(const char *const *pieces, size_t np, char *const *stops, size_t ns, int *stopped,
                      size_t *released_before_flush) {
    cll_server_stop g;
    cll_server_stop_init(&g, stops, ns);
    char *acc = calloc(1, 1024);
    *stopped = 0;
    for (size_t i = 0; i < np && !*stopped; i++) {
        const char *o;
        size_t n;
        int rc = cll_server_stop_push(&g, pieces[i], strlen(pieces[i]), &o, &n);
        assert_true(rc >= 0);
        strncat(acc, o, n);
        if (rc == 1) *stopped = 1;
    }
    if (released_before_flush) *released_before_flush = strlen(acc);
    if (!*stopped) {
        const char *o;
        size_t n;
        cll_server_stop_flush(&g, &o, &n);
        strncat(acc, o, n);
    }
    cll_server_stop_free(&g);
    return acc;
}

static void test_stop_gate(void **st) {
    (void)st;
    int stopped;
    size_t before;
    char *s1[] = {"END", "\n\n"};
    const char *p1[] = {"Hello wor", "ld. E", "N", "D more"};
    char *t = run_gate(p1, 4, s1, 2, &stopped, NULL);
    assert_true(stopped);
    assert_string_equal(t, "Hello world. "); /* spans three pieces; stop text never released */
    free(t);
    const char *p2[] = {"a\n", "\nb"};
    t = run_gate(p2, 2, s1, 2, &stopped, NULL);
    assert_true(stopped);
    assert_string_equal(t, "a");
    free(t);
    /* a held-back prefix that never completes is released at the end */
    const char *p3[] = {"xyz EN"};
    t = run_gate(p3, 1, s1, 2, &stopped, &before);
    assert_false(stopped);
    assert_int_equal(before, 4); /* "xyz " out, "EN" held */
    assert_string_equal(t, "xyz EN");
    free(t);
    /* earliest match wins across stop strings */
    char *s2[] = {"cd", "b"};
    const char *p4[] = {"abcd"};
    t = run_gate(p4, 1, s2, 2, &stopped, NULL);
    assert_string_equal(t, "a");
    free(t);
    /* stop at the very start */
    const char *p5[] = {"END"};
    t = run_gate(p5, 1, s1, 2, &stopped, NULL);
    assert_true(stopped);
    assert_string_equal(t, "");
    free(t);
    /* UTF-8 split across pieces is held until complete */
    cll_server_stop g;
    cll_server_stop_init(&g, NULL, 0);
    const char *o;
    size_t n;
    assert_int_equal(cll_server_stop_push(&g, "caf\xc3", 4, &o, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(cll_server_stop_push(&g, "\xa9!", 2, &o, &n), 0);
    assert_int_equal(n, 3);
    assert_memory_equal(o, "\xc3\xa9!", 3);
    assert_int_equal(cll_server_stop_push(&g, "\xf0\x9f", 2, &o, &n), 0);
    assert_int_equal(n, 0);
    cll_server_stop_flush(&g, &o, &n); /* a cut-off character still comes out at the end */
    assert_int_equal(n, 2);
    cll_server_stop_free(&g);
}

static void test_oai_shapes(void **st) {
    (void)st;
    cll_server_oai o = {.chat = true, .id = "chatcmpl-x", .created = 5, .model = "m", .n_prompt = 3, .n_gen = 2};
    char *c = cll_server_oai_chunk(&o, "h\xff", 2, false, NULL);
    assert_non_null(c);
    assert_memory_equal(c, "data: ", 6);
    assert_string_equal(c + strlen(c) - 2, "\n\n");
    json_error_t je;
    json_t *j = json_loadb(c + 6, strlen(c) - 8, 0, &je);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "object")), "chat.completion.chunk");
    json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(ch, "delta"), "content")),
                        "h\xEF\xBF\xBD");
    assert_true(json_is_null(json_object_get(ch, "finish_reason")));
    json_decref(j);
    free(c);
    c = cll_server_oai_chunk(&o, NULL, 0, false, "stop");
    j = json_loadb(c + 6, strlen(c) - 8, 0, &je);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "usage"), "total_tokens")), 5);
    json_decref(j);
    free(c);
    o.chat = false;
    cllama_token toks[2] = {7, 9};
    c = cll_server_oai_response(&o, "hi", 2, "length", toks, 2);
    j = json_loads(c, 0, &je);
    assert_string_equal(json_string_value(json_object_get(j, "object")), "text_completion");
    ch = json_array_get(json_object_get(j, "choices"), 0);
    assert_string_equal(json_string_value(json_object_get(ch, "text")), "hi");
    assert_string_equal(json_string_value(json_object_get(ch, "finish_reason")), "length");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(ch, "tokens"), 1)), 9);
    json_decref(j);
    free(c);
    assert_string_equal(cll_server_oai_finish_str(CLL_SERVER_FINISH_STOP), "stop");
    assert_null(cll_server_oai_finish_str(CLL_SERVER_FINISH_NONE));
    char id[40];
    cll_server_oai_id(id, sizeof id, "cmpl-");
    assert_int_equal(strlen(id), 5 + 24);
}

static void test_metrics(void **st) {
    (void)st;
    cll_server_metrics m;
    cll_server_metrics_init(&m, 8);
    cll_server_metrics_status(&m, 200);
    cll_server_metrics_status(&m, 200);
    cll_server_metrics_status(&m, 413);
    cll_server_metrics_admit(&m, 10, 4);
    cll_server_metrics_step(&m, 3, 0.01, true, false, false);
    cll_server_metrics_step(&m, 1, 0.01, false, true, false);
    cll_server_metrics_step(&m, 0, 0.004, false, false, true); /* a prefill chunk only: nothing sampled */
    cll_server_metrics_step(&m, 2, 2.0, false, false, true);
    cll_server_metrics_gauges(&m, 2, 5);
    char *s = cll_server_metrics_render(&m);
    assert_non_null(strstr(s, "cllama_requests_total{code=\"200\"} 2\n"));
    assert_non_null(strstr(s, "cllama_requests_total{code=\"413\"} 1\n"));
    assert_non_null(strstr(s, "cllama_prompt_tokens_total 10\n"));
    assert_non_null(strstr(s, "cllama_generated_tokens_total 6\n"));
    assert_non_null(strstr(s, "cllama_decode_steps_total 4\n"));
    /* the step histogram: cumulative buckets per kind, a bound holds the steps at or under it */
    assert_non_null(strstr(s, "cllama_step_seconds_bucket{kind=\"decode\",le=\"0.0075\"} 0\n"));
    assert_non_null(strstr(s, "cllama_step_seconds_bucket{kind=\"decode\",le=\"0.01\"} 2\n"));
    assert_non_null(strstr(s, "cllama_step_seconds_bucket{kind=\"decode\",le=\"+Inf\"} 2\n"));
    assert_non_null(strstr(s, "cllama_step_seconds_count{kind=\"decode\"} 2\n"));
    assert_non_null(strstr(s, "cllama_step_seconds_sum{kind=\"decode\"} 0.020000\n"));
    assert_non_null(strstr(s, "cllama_step_seconds_bucket{kind=\"prefill\",le=\"0.0025\"} 0\n"));
    assert_non_null(strstr(s, "cllama_step_seconds_bucket{kind=\"prefill\",le=\"0.005\"} 1\n"));
    assert_non_null(strstr(s, "cllama_step_seconds_bucket{kind=\"prefill\",le=\"1\"} 1\n"));
    assert_non_null(strstr(s, "cllama_step_seconds_bucket{kind=\"prefill\",le=\"+Inf\"} 2\n"));
    assert_non_null(strstr(s, "cllama_greedy_steps_total 1\n"));
    assert_non_null(strstr(s, "cllama_topk_steps_total 1\n"));
    assert_non_null(strstr(s, "cllama_queue_depth 2\n"));
    assert_non_null(strstr(s, "cllama_active_sequences 5\n"));
    assert_non_null(strstr(s, "cllama_auth_refused_total 0\n"));
    free(s);
    cll_server_metrics_auth_refused(&m);
    cll_server_metrics_auth_refused(&m);
    s = cll_server_metrics_render(&m);
    assert_non_null(strstr(s, "# TYPE cllama_auth_refused_total counter\n"));
    assert_non_null(strstr(s, "cllama_auth_refused_total 2\n"));
    /* the text was not cut short by the render buffer */
    assert_non_null(strstr(s, "cllama_parallel_slots 8\n"));
    free(s);
    cll_server_metrics_free(&m);
}

static void test_ct_equal(void **st) {
    (void)st;
    const char *k = "sk-0123456789abcdef";
    const size_t n = strlen(k);
    assert_true(cll_server_ct_equal(k, n, "sk-0123456789abcdef", n));
    assert_false(cll_server_ct_equal(k, n, "sk-0123456789abcdeF", n));  /* last byte */
    assert_false(cll_server_ct_equal(k, n, "tk-0123456789abcdef", n));  /* first byte */
    assert_false(cll_server_ct_equal(k, n, "sk-0123456789abcde", n - 1)); /* prefix */
    assert_false(cll_server_ct_equal(k, n, "sk-0123456789abcdefg", n + 1)); /* plus a suffix */
    assert_false(cll_server_ct_equal(k, n, "", 0));
    assert_false(cll_server_ct_equal(k, n, "SK-0123456789ABCDEF", n));  /* case */
    /* a candidate equal to the key on the key's length but longer must not pass */
    assert_false(cll_server_ct_equal(k, n, "sk-0123456789abcdef\0", n + 1));
    /* lengths that differ only in high bits (only the key's length of cand is ever read) */
    assert_false(cll_server_ct_equal(k, n, k, n + 256));
    assert_false(cll_server_ct_equal(k, n, k, n + ((size_t)1 << 40)));
    assert_false(cll_server_ct_equal("", 0, "x", 1));
    assert_true(cll_server_ct_equal("", 0, "", 0));
    /* every single-byte flip anywhere in the key is caught */
    char buf[64];
    for (size_t i = 0; i < n; i++)
        for (int bit = 0; bit < 8; bit++) {
            memcpy(buf, k, n + 1);
            buf[i] = (char)(buf[i] ^ (1 << bit));
            assert_false(cll_server_ct_equal(k, n, buf, n));
        }
}

static cll_server_keys two_keys(void) {
    cll_server_keys ks = {0};
    char err[256];
    assert_int_equal(cll_server_keys_add(&ks, "alpha-key-1", err, sizeof err), 0);
    assert_int_equal(cll_server_keys_add(&ks, "BETA_key_22", err, sizeof err), 0);
    return ks;
}

static void test_auth_check(void **st) {
    (void)st;
    cll_server_keys none = {0};
    assert_int_equal(cll_server_auth_check(&none, NULL), CLL_SERVER_AUTH_OK);
    assert_int_equal(cll_server_auth_check(NULL, "Bearer x"), CLL_SERVER_AUTH_OK);
    cll_server_keys ks = two_keys();
    assert_int_equal(cll_server_auth_check(&ks, "Bearer alpha-key-1"), CLL_SERVER_AUTH_OK);
    assert_int_equal(cll_server_auth_check(&ks, "Bearer BETA_key_22"), CLL_SERVER_AUTH_OK);
    assert_int_equal(cll_server_auth_check(&ks, "bearer alpha-key-1"), CLL_SERVER_AUTH_OK); /* scheme: any case */
    assert_int_equal(cll_server_auth_check(&ks, "BEARER  alpha-key-1  "), CLL_SERVER_AUTH_OK);
    assert_int_equal(cll_server_auth_check(&ks, NULL), CLL_SERVER_AUTH_MISSING);
    assert_int_equal(cll_server_auth_check(&ks, ""), CLL_SERVER_AUTH_SCHEME);
    assert_int_equal(cll_server_auth_check(&ks, "Bearer"), CLL_SERVER_AUTH_SCHEME);
    assert_int_equal(cll_server_auth_check(&ks, "Bearer   "), CLL_SERVER_AUTH_SCHEME);
    assert_int_equal(cll_server_auth_check(&ks, "Basic YWxwaGEta2V5LTE="), CLL_SERVER_AUTH_SCHEME);
    assert_int_equal(cll_server_auth_check(&ks, "alpha-key-1"), CLL_SERVER_AUTH_SCHEME);
    assert_int_equal(cll_server_auth_check(&ks, "Beareralpha-key-1"), CLL_SERVER_AUTH_SCHEME);
    assert_int_equal(cll_server_auth_check(&ks, "Bearer alpha-key-"), CLL_SERVER_AUTH_WRONG_KEY);
    assert_int_equal(cll_server_auth_check(&ks, "Bearer alpha-key-11"), CLL_SERVER_AUTH_WRONG_KEY);
    assert_int_equal(cll_server_auth_check(&ks, "Bearer alpha-key-2"), CLL_SERVER_AUTH_WRONG_KEY);
    assert_int_equal(cll_server_auth_check(&ks, "Bearer ALPHA-KEY-1"), CLL_SERVER_AUTH_WRONG_KEY);
    assert_int_equal(cll_server_auth_check(&ks, "Bearer alpha-key-1 BETA_key_22"), CLL_SERVER_AUTH_WRONG_KEY);
    assert_int_equal(cll_server_auth_check(&ks, "Bearer beta_key_22"), CLL_SERVER_AUTH_WRONG_KEY);
    assert_true(strlen(cll_server_auth_message(CLL_SERVER_AUTH_MISSING)) > 0);
    assert_null(strstr(cll_server_auth_message(CLL_SERVER_AUTH_WRONG_KEY), "alpha"));
    cll_server_keys_free(&ks);
    assert_int_equal(ks.n, 0);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* the step budget: without --step-tokens a slot's token each plus a chunk, on a GPU at least 512;
 * never below a slot's token each plus a chunk */
static void test_default_step_tokens(void **st) {
    (void)st;
    assert_int_equal(cll_server_step_tokens(false, 72, 128, 0), 200);
    assert_int_equal(cll_server_step_tokens(true, 72, 128, 0), CLL_SERVER_GPU_STEP_TOKENS);
    assert_int_equal(cll_server_step_tokens(true, 4, 128, 0), 512);
    assert_int_equal(cll_server_step_tokens(true, 512, 128, 0), 640); /* wider already: kept */
    assert_int_equal(cll_server_step_tokens(false, 4, 64, 0), 68);
    assert_int_equal(cll_server_step_tokens(false, 4, 64, 1024), 1024); /* asked: taken */
    assert_int_equal(cll_server_step_tokens(true, 4, 64, 100), 100);    /* asked on a GPU: taken too */
    assert_int_equal(cll_server_step_tokens(true, 72, 128, 64), 200);   /* below the floor: raised */
}

static void test_key_file(void **st) {
    (void)st;
    char dir[] = "/tmp/cllama-keys-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/keys", dir);
    write_file(path, "# team keys\n\n  key-one  \r\n\t# indented comment\nkey#two\n\n");
    cll_server_keys ks = {0};
    assert_int_equal(cll_server_keys_load_file(&ks, path, err, sizeof err), 0);
    assert_int_equal(ks.n, 2);
    assert_string_equal(ks.keys[0], "key-one");
    assert_string_equal(ks.keys[1], "key#two");
    assert_int_equal(cll_server_auth_check(&ks, "Bearer key-one"), CLL_SERVER_AUTH_OK);
    assert_int_equal(cll_server_auth_check(&ks, "Bearer key#two"), CLL_SERVER_AUTH_OK);
    cll_server_keys_free(&ks);
    /* only comments: an error, not a server without keys */
    write_file(path, "# nothing\n\n   \n");
    assert_int_equal(cll_server_keys_load_file(&ks, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "holds no key"));
    write_file(path, "");
    assert_int_equal(cll_server_keys_load_file(&ks, path, err, sizeof err), -1);
    /* a key with an inner space: refused, and the message does not quote it */
    write_file(path, "good-key\nsecret part\n");
    assert_int_equal(cll_server_keys_load_file(&ks, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "line 2"));
    assert_null(strstr(err, "secret"));
    cll_server_keys_free(&ks);
    unlink(path);
    /* missing */
    assert_int_equal(cll_server_keys_load_file(&ks, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot read"));
    rmdir(dir);
    /* --api-key itself: empty and control bytes refused */
    assert_int_equal(cll_server_keys_add(&ks, "", err, sizeof err), -1);
    assert_int_equal(cll_server_keys_add(&ks, "a\tb", err, sizeof err), -1);
    assert_int_equal(ks.n, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_chat_full), cmocka_unit_test(test_parse_defaults), cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_err_json),        cmocka_unit_test(test_utf8),           cmocka_unit_test(test_stop_gate),
        cmocka_unit_test(test_oai_shapes),      cmocka_unit_test(test_metrics),        cmocka_unit_test(test_ct_equal),
        cmocka_unit_test(test_auth_check),      cmocka_unit_test(test_key_file),
        cmocka_unit_test(test_default_step_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) {
    tu_skip("server_test: built without the server (CLLAMA_SERVER=OFF)");
    return 77;
}
#endif
