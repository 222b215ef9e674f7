/* server/http: libmicrohttpd glue: start-up (model, context, scheduler, daemon), request
 * bodies with their size limit, routing, the response helpers, and shutdown on a signal. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "core/core.h"
#include "server/page.h"
#include "server/srv.h"

/* most connections a thread-per-connection daemon accepts at once: every waiting client costs
 * a thread, and the queue bounds useful work anyway */
#define MAX_CONNECTIONS 256

typedef struct {
    char *body;
    size_t len, cap;
    bool too_big;     /* the body passed --max-body: it is discarded and the answer is 413 */
    bool answered;    /* a response is queued; later calls only drain */
    cll_server_auth_result refused; /* not OK: the body is drained unread and the answer is 401 */
} conn_state;

/* while the daemon starts, libmicrohttpd's messages (a TLS key it cannot use, ...) always reach
 * stderr; afterwards only at log level info */
static atomic_bool g_starting;

void cll_server_config_default(cll_server_config *c) {
    memset(c, 0, sizeof *c);
    c->host = "127.0.0.1";
    c->port = 8080;
    c->parallel = 4;
    c->n_ctx = 0;
    c->backend = CLLAMA_BACKEND_DEFAULT; /* env CLLAMA_BACKEND, else cpu */
    c->max_body = 1 << 20;
    c->queue = 64;
    c->timeout_s = 30;
    c->chunk = 128;
}

enum MHD_Result cll_server_respond(cll_server *srv, struct MHD_Connection *c, unsigned status, const char *ctype,
                                   const char *body, size_t len) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    if (ctype) MHD_add_response_header(r, "Content-Type", ctype);
    MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
    if (status == 503) MHD_add_response_header(r, "Retry-After", "1");
    if (status == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    cll_server_metrics_status(&srv->metrics, (int)status);
    enum MHD_Result res = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return res;
}

enum MHD_Result cll_server_respond_error(cll_server *srv, struct MHD_Connection *c, const cll_server_err *e) {
    char *j = cll_server_err_json(e);
    if (!j) return MHD_NO;
    enum MHD_Result res = cll_server_respond(srv, c, (unsigned)e->http, "application/json", j, strlen(j));
    free(j);
    return res;
}

bool cll_server_client_gone(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return false;
    /* POLLRDHUP: the peer shut its side. Plain readability would also fire for a pipelined
     * next request, which is not a hang-up. */
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

static enum MHD_Result respond_simple(cll_server *srv, struct MHD_Connection *c, int status, const char *code,
                                      const char *fmt, const char *arg) {
    cll_server_err e;
    cll_server_err_set(&e, status, status >= 500 ? "server_error" : "invalid_request_error", NULL, code, fmt, arg);
    return cll_server_respond_error(srv, c, &e);
}

/* 401 for a request without a valid API key; counted apart from the status codes */
static enum MHD_Result respond_unauthorized(cll_server *srv, struct MHD_Connection *c, cll_server_auth_result why) {
    cll_server_metrics_auth_refused(&srv->metrics);
    cll_server_err e;
    cll_server_err_set(&e, 401, "invalid_request_error", NULL, "invalid_api_key", "%s", cll_server_auth_message(why));
    return cll_server_respond_error(srv, c, &e);
}

/* paths anyone may fetch when keys are on: the liveness probe, and the static chat page (it
 * holds no data; the API calls it makes carry the key the user types into it) */
static bool open_path(const char *url, const char *method) {
    return !strcmp(method, "OPTIONS") || !strcmp(url, "/health") || !strcmp(url, "/v1/health") || !strcmp(url, "/") ||
           !strcmp(url, "/index.html");
}

static enum MHD_Result route(cll_server *srv, struct MHD_Connection *c, const char *url, const char *method,
                             conn_state *cs) {
    bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD"), post = !strcmp(method, "POST");
    if (!strcmp(method, "OPTIONS")) { /* CORS preflight for browser clients on other origins */
        struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (!r) return MHD_NO;
        MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
        MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        MHD_add_response_header(r, "Access-Control-Allow-Headers", "Content-Type, Authorization");
        cll_server_metrics_status(&srv->metrics, 204);
        enum MHD_Result res = MHD_queue_response(c, 204, r);
        MHD_destroy_response(r);
        return res;
    }
    bool is_chat = !strcmp(url, "/v1/chat/completions") || !strcmp(url, "/chat/completions");
    bool is_cmpl = !strcmp(url, "/v1/completions") || !strcmp(url, "/completions");
    if (is_chat || is_cmpl) {
        if (!post) return respond_simple(srv, c, 405, "method_not_allowed", "%s needs POST", url);
        return cll_server_route_generate(srv, c, is_chat ? CLL_SERVER_REQ_CHAT : CLL_SERVER_REQ_COMPLETION, cs->body,
                                         cs->len);
    }
    bool is_models = !strcmp(url, "/v1/models") || !strcmp(url, "/models");
    bool is_health = !strcmp(url, "/health") || !strcmp(url, "/v1/health");
    bool is_metrics = !strcmp(url, "/metrics");
    bool is_page = !strcmp(url, "/") || !strcmp(url, "/index.html");
    if (!is_models && !is_health && !is_metrics && !is_page)
        return respond_simple(srv, c, 404, "not_found", "no route for %.200s", url);
    if (!get) return respond_simple(srv, c, 405, "method_not_allowed", "%s needs GET", url);
    if (is_models) return cll_server_route_models(srv, c);
    if (is_health) return cll_server_respond(srv, c, 200, "application/json", "{\"status\":\"ok\"}", 15);
    if (is_page)
        return cll_server_respond(srv, c, 200, "text/html; charset=utf-8", cll_server_page_html,
                                  strlen(cll_server_page_html));
    char *m = cll_server_metrics_render(&srv->metrics);
    if (!m) return MHD_NO;
    /* where the forward runs, and the driver's own counters (a silent fallback would show) */
    cllama_counters k = {0};
    cllama_context_counters(srv->ctx, &k);
    char drv[2560];
    const int nd = snprintf(drv, sizeof drv,
                            "# HELP cllama_backend_info The backend the model runs on.\n# TYPE cllama_backend_info gauge\n"
                            "cllama_backend_info{backend=\"%s\"} 1\n"
                            "# HELP cllama_driver_forwards_total Driver forward calls.\n"
                            "# TYPE cllama_driver_forwards_total counter\ncllama_driver_forwards_total %llu\n"
                            "# HELP cllama_driver_device_steps_total Forwards that ran wholly on the backend's device.\n"
                            "# TYPE cllama_driver_device_steps_total counter\ncllama_driver_device_steps_total %llu\n"
                            "# HELP cllama_driver_graph_replays_total Decode steps replayed from a captured CUDA graph.\n"
                            "# TYPE cllama_driver_graph_replays_total counter\ncllama_driver_graph_replays_total %llu\n"
                            "# HELP cllama_driver_device_seconds_total Device time of the served forwards (CUDA; beside "
                            "cllama_decode_seconds_total it shows the host's share of a step; the start-up passes are "
                            "not counted).\n"
                            "# TYPE cllama_driver_device_seconds_total counter\ncllama_driver_device_seconds_total %.6f\n"
                            "# HELP cllama_server_prepare_seconds Wall time of the start-up preparation (CUDA: every "
                            "batch size's step graph and the prompt passes).\n"
                            "# TYPE cllama_server_prepare_seconds gauge\ncllama_server_prepare_seconds %.6f\n"
                            "# HELP cllama_driver_graph_captures_total Step graphs captured (CUDA: every batch size at "
                            "start, a batched step's other shapes on their second consecutive sight).\n"
                            "# TYPE cllama_driver_graph_captures_total counter\ncllama_driver_graph_captures_total %llu\n"
                            "# HELP cllama_driver_graph_capture_seconds_total Host time of those captures, inside the "
                            "steps that made them.\n# TYPE cllama_driver_graph_capture_seconds_total counter\n"
                            "cllama_driver_graph_capture_seconds_total %.6f\n",
                            cllama_backend_name(cllama_context_backend(srv->ctx)), (unsigned long long)k.forwards,
                            (unsigned long long)k.device_steps, (unsigned long long)k.graph_replays,
                            k.device_seconds - srv->prep_device, srv->prep_seconds, (unsigned long long)k.graph_captures,
                            k.capture_seconds);
    const size_t nm = strlen(m);
    char *all = realloc(m, nm + (size_t)nd + 1);
    if (!all) {
        free(m);
        return MHD_NO;
    }
    memcpy(all + nm, drv, (size_t)nd + 1);
    enum MHD_Result res = cll_server_respond(srv, c, 200, "text/plain; version=0.0.4", all, nm + (size_t)nd);
    free(all);
    return res;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    cll_server *srv = cls;
    conn_state *cs = *con_cls;
    if (!cs) { /* headers are in; the body (if any) follows in later calls */
        cs = calloc(1, sizeof *cs);
        if (!cs) return MHD_NO;
        *con_cls = cs;
        if (srv->cfg.api_keys && srv->cfg.api_keys->n && !open_path(url, method)) {
            cs->refused = cll_server_auth_check(
                srv->cfg.api_keys, MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION));
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(cl, &end, 10);
            if (errno || end == cl || v > srv->cfg.max_body) {
                /* refuse before reading a byte of it; MHD then closes the connection */
                cs->answered = true;
                /* without a valid key the answer is 401, not 413 */
                if (cs->refused != CLL_SERVER_AUTH_OK) return respond_unauthorized(srv, c, cs->refused);
                cll_server_err e;
                cll_server_err_set(&e, 413, "invalid_request_error", NULL, "request_too_large",
                                   "the request body is larger than the server's limit of %zu bytes (--max-body)",
                                   srv->cfg.max_body);
                return cll_server_respond_error(srv, c, &e);
            }
        }
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (cs->answered || cs->too_big || cs->refused != CLL_SERVER_AUTH_OK) return MHD_YES;
        if (cs->len + n > srv->cfg.max_body) { /* chunked bodies carry no length up front */
            cs->too_big = true;
            free(cs->body);
            cs->body = NULL;
            cs->len = cs->cap = 0;
            return MHD_YES;
        }
        if (cs->len + n + 1 > cs->cap) {
            size_t cap = cs->cap ? cs->cap : 4096;
            while (cap < cs->len + n + 1) cap *= 2;
            char *b = realloc(cs->body, cap);
            if (!b) return MHD_NO;
            cs->body = b;
            cs->cap = cap;
        }
        memcpy(cs->body + cs->len, upload, n);
        cs->len += n;
        cs->body[cs->len] = 0;
        return MHD_YES;
    }
    if (cs->answered) return MHD_YES;
    cs->answered = true;
    if (cs->refused != CLL_SERVER_AUTH_OK) return respond_unauthorized(srv, c, cs->refused);
    if (cs->too_big) {
        cll_server_err e;
        cll_server_err_set(&e, 413, "invalid_request_error", NULL, "request_too_large",
                           "the request body is larger than the server's limit of %zu bytes (--max-body)",
                           srv->cfg.max_body);
        return cll_server_respond_error(srv, c, &e);
    }
    /* the whole request is in: from here on a slow generation must not trip the idle timeout */
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0);
    return route(srv, c, url, method, cs);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)cls;
    (void)c;
    (void)toe;
    conn_state *cs = *con_cls;
    if (!cs) return;
    free(cs->body);
    free(cs);
    *con_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    const bool starting = atomic_load(&g_starting);
    if (!starting && cll_log_get_level() < CLL_LOG_INFO) return;
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    size_t n = strlen(buf);
    while (n && buf[n - 1] == '\n') buf[--n] = 0;
    if (starting) fprintf(stderr, "cllama serve: libmicrohttpd: %s\n", buf);
    else cll_log(CLL_LOG_INFO, "http: %s", buf);
}

static int resolve(const char *host, int port, struct sockaddr_in *sa) {
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &sa->sin_addr) == 1) return 0;
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(host, NULL, &hints, &ai) != 0 || !ai) return -1;
    sa->sin_addr = ((struct sockaddr_in *)ai->ai_addr)->sin_addr;
    freeaddrinfo(ai);
    return 0;
}

static void base_name(const char *path, char *out, size_t cap) {
    const char *b = strrchr(path, '/');
    snprintf(out, cap, "%s", b ? b + 1 : path);
}

/* a PEM file whole, NUL-terminated (libmicrohttpd takes PEM text); NULL after saying why */
static char *read_pem(const char *flag, const char *path, bool is_key) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cllama serve: cannot read %s %s: %s\n", flag, path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 20, n = 0; /* certificate chains are a few KiB; 1 MiB is plenty */
    char *buf = malloc(cap + 1);
    if (buf) n = fread(buf, 1, cap + 1, f);
    const bool bad = !buf || ferror(f);
    const int err = errno;
    fclose(f);
    const char *why = NULL;
    if (bad) why = buf ? strerror(err) : "out of memory";
    else if (n > cap) why = "larger than 1 MiB, not a PEM file";
    else {
        buf[n] = 0;
        if (strlen(buf) != n) why = "it holds NUL bytes: not a PEM file (DER? convert it with openssl to PEM)";
        else if (!is_key && !strstr(buf, "-----BEGIN CERTIFICATE-----"))
            why = "no '-----BEGIN CERTIFICATE-----' block: not a PEM certificate";
        else if (is_key && (strstr(buf, "ENCRYPTED PRIVATE KEY") || strstr(buf, "Proc-Type: 4,ENCRYPTED")))
            why = "the private key is encrypted; give an unencrypted one (openssl pkey -in KEY -out KEY.plain)";
        else if (is_key && !strstr(buf, "PRIVATE KEY-----"))
            why = "no '-----BEGIN ... PRIVATE KEY-----' block: not a PEM private key";
    }
    if (why) {
        fprintf(stderr, "cllama serve: %s %s: %s\n", flag, path, why);
        if (buf) {
            memset(buf, 0, n < cap ? n : cap);
            free(buf);
        }
        return NULL;
    }
    return buf;
}

static void free_secret(char *p) {
    if (!p) return;
    memset(p, 0, strlen(p));
    __asm__ __volatile__("" : : "r"(p) : "memory");
    free(p);
}

int cll_server_run(const cll_server_config *cfg) {
    /* TLS first: a bad certificate must fail in a blink, not after the model has loaded */
    char *tls_cert = NULL, *tls_key = NULL;
    const bool tls = cfg->ssl_cert_file || cfg->ssl_key_file;
    if (tls) {
        if (!cfg->ssl_cert_file || !cfg->ssl_key_file) {
            fprintf(stderr, "cllama serve: HTTPS needs both --ssl-cert-file and --ssl-key-file\n");
            return 1;
        }
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
            fprintf(stderr,
                    "cllama serve: this cllama was linked with a libmicrohttpd built without TLS support "
                    "(MHD_FEATURE_TLS is off), so --ssl-cert-file/--ssl-key-file cannot work. Install a "
                    "libmicrohttpd built with GnuTLS (Debian/Ubuntu: libmicrohttpd-dev with libgnutls28-dev; from "
                    "source: ./configure --enable-https) and rebuild cllama, or put a TLS proxy in front of a "
                    "plain-HTTP cllama serve\n");
            return 1;
        }
        tls_cert = read_pem("--ssl-cert-file", cfg->ssl_cert_file, false);
        if (tls_cert) tls_key = read_pem("--ssl-key-file", cfg->ssl_key_file, true);
        if (!tls_cert || !tls_key) {
            free_secret(tls_cert);
            free_secret(tls_key);
            return 1;
        }
    }

    cll_server *srv = calloc(1, sizeof *srv);
    if (!srv) {
        free_secret(tls_cert);
        free_secret(tls_key);
        return 1;
    }
    srv->cfg = *cfg;
    if (srv->cfg.parallel < 1) srv->cfg.parallel = 1;
    if (srv->cfg.queue < 0) srv->cfg.queue = 0;
    int rc = 1;
    struct MHD_Daemon *d = NULL;
    cll_server_metrics_init(&srv->metrics, srv->cfg.parallel);

    /* signals: blocked here so every thread inherits the mask and only sigwait sees them */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client that vanished must not kill the process on write */

    cllama_model_params mp = cllama_model_default_params();
    mp.n_threads = cfg->threads;
    mp.backend = cfg->backend;
    mp.tp = cfg->tp;
    mp.devices = cfg->devices;
    mp.device = cfg->device;
    mp.gpu_mem_limit = cfg->gpu_mem_limit;
    mp.progress = isatty(2);
    if (cllama_model_load(cfg->model_path, &mp, &srv->model) != CLLAMA_OK) {
        fprintf(stderr, "cllama serve: cannot load %s: %s\n", cfg->model_path, cllama_last_error());
        goto out;
    }
    cllama_context_params cp = cllama_context_default_params();
    cp.n_ctx = cfg->n_ctx > 0 ? (uint32_t)cfg->n_ctx : 0;
    cp.n_seq_max = (uint32_t)srv->cfg.parallel;
    cp.n_kv_cells = cfg->kv_cells > 0 ? (uint32_t)cfg->kv_cells : 0;
    cp.n_threads = cfg->threads;
    cp.backend = CLLAMA_BACKEND_DEFAULT; /* the model's */
    /* one step carries a token per sequence plus prompt chunks (each <= --chunk) up to --step-tokens
     * (cll_server_step_tokens: by default one chunk's worth, at least 512 on a GPU, where a step reads
     * the weights once however many tokens it carries, so a burst of new prompts is read in fewer steps
     * while a lone long prompt still adds one chunk per step; never below the scheduler's floor, so the
     * start-up passes warm every size a step can have) */
    const int chunk = cfg->chunk > 0 ? cfg->chunk : 128;
    const int step = cll_server_step_tokens(cllama_model_backend(srv->model) == CLLAMA_BACKEND_CUDA, srv->cfg.parallel,
                                            chunk, cfg->step_tokens);
    if (cp.n_batch < (uint32_t)step) cp.n_batch = (uint32_t)step;
    if (cllama_context_create(srv->model, &cp, &srv->ctx) != CLLAMA_OK) {
        fprintf(stderr, "cllama serve: cannot create the context: %s\n", cllama_last_error());
        goto out;
    }
    { /* the batched steps' graphs and the prompt steps' kernels now, not inside the first loaded steps */
        cllama_counters k0 = {0}, k1 = {0};
        cllama_context_counters(srv->ctx, &k0);
        const double t0 = cll_now();
        if (cllama_context_prepare(srv->ctx, srv->cfg.parallel, step) != CLLAMA_OK)
            fprintf(stderr, "cllama serve: warning: steps not prepared (%s): the first step of each size pays for it\n",
                    cllama_last_error());
        srv->prep_seconds = cll_now() - t0;
        cllama_context_counters(srv->ctx, &k1);
        srv->prep_device = k1.device_seconds - k0.device_seconds;
        if (k1.graph_captures > k0.graph_captures)
            fprintf(stderr, "cllama serve: step graphs for 2..%d sequences ready (%llu captured in %.2f s), prompt steps "
                            "up to %d tokens warmed\n",
                    srv->cfg.parallel, (unsigned long long)(k1.graph_captures - k0.graph_captures),
                    k1.capture_seconds - k0.capture_seconds, step);
    }
    srv->n_ctx = (int)cllama_n_ctx(srv->ctx);
    srv->sp_default = cllama_sampler_default_params();
    srv->created = (long)time(NULL);
    base_name(cfg->model_path, srv->file_id, sizeof srv->file_id);
    if (cfg->alias && *cfg->alias) {
        snprintf(srv->model_id, sizeof srv->model_id, "%s", cfg->alias);
    } else {
        snprintf(srv->model_id, sizeof srv->model_id, "%s", srv->file_id);
        size_t n = strlen(srv->model_id);
        if (n > 5 && !strcmp(srv->model_id + n - 5, ".gguf")) srv->model_id[n - 5] = 0;
    }
    if (cll_server_sched_start(srv->ctx, srv->cfg.queue, chunk, step, &srv->metrics, &srv->sched)) {
        fprintf(stderr, "cllama serve: cannot start the scheduler\n");
        goto out;
    }
    struct sockaddr_in sa;
    if (resolve(cfg->host, cfg->port, &sa)) {
        fprintf(stderr, "cllama serve: cannot resolve host '%s'\n", cfg->host);
        goto out;
    }
    /* libmicrohttpd's own TLS (GnuTLS): the PEM text in memory, loaded into its credentials here */
    struct MHD_OptionItem tls_opts[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, tls_cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, tls_key},
        {MHD_OPTION_END, 0, NULL},
    };
    if (!tls) tls_opts[0].option = MHD_OPTION_END;
    atomic_store(&g_starting, true);
    errno = 0;
    d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL |
                             MHD_USE_ERROR_LOG | (tls ? MHD_USE_TLS : 0),
                         (uint16_t)cfg->port, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv,
                         MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                         MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_CONNECTION_TIMEOUT,
                         (unsigned)(cfg->timeout_s > 0 ? cfg->timeout_s : 30), MHD_OPTION_CONNECTION_LIMIT,
                         (unsigned)MAX_CONNECTIONS, MHD_OPTION_END);
    const int start_errno = errno;
    atomic_store(&g_starting, false);
    if (!d) {
        if (tls)
            fprintf(stderr,
                    "cllama serve: cannot start HTTPS on %s:%d: %s (libmicrohttpd's reason, if it gave one, is on "
                    "the line above; check that --ssl-key-file is the key of --ssl-cert-file)\n",
                    cfg->host, cfg->port, start_errno ? strerror(start_errno) : "the certificate or key was refused");
        else fprintf(stderr, "cllama serve: cannot listen on %s:%d: %s\n", cfg->host, cfg->port, strerror(start_errno));
        goto out;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    int port = di ? di->port : cfg->port;
    fprintf(stderr, "cllama serve: model %s (%s, template %s), %d slots x %d tokens, queue %d\n", srv->model_id,
            cllama_model_desc(srv->model) ? cllama_model_desc(srv->model) : "?",
            cllama_chat_template_name(srv->model) ? cllama_chat_template_name(srv->model) : "?", srv->cfg.parallel,
            srv->n_ctx, srv->cfg.queue);
    cllama_kv_info ki;
    if (cllama_kv_info_get(srv->ctx, &ki) == CLLAMA_OK && ki.paged) {
        fprintf(stderr, "cllama serve: paged KV: a pool of %u cells in blocks of %u shared by the slots\n", ki.total_cells,
                ki.block_cells);
        srv->kv_pool = ki.total_cells;
    }
    if (cllama_kv_info_get(srv->ctx, &ki) == CLLAMA_OK) cll_server_metrics_kv(&srv->metrics, ki.total_cells, ki.free_cells, 0, 0);
    fprintf(stderr, "cllama serve: backend %s%s%s\n", cllama_backend_name(cllama_context_backend(srv->ctx)),
            *cllama_model_driver_desc(srv->model) ? ": " : "", cllama_model_driver_desc(srv->model));
    if (cfg->api_keys && cfg->api_keys->n)
        fprintf(stderr,
                "cllama serve: %zu API key%s: every endpoint but /health, / and CORS preflights needs "
                "'Authorization: Bearer <key>'\n",
                cfg->api_keys->n, cfg->api_keys->n == 1 ? "" : "s");
    fprintf(stderr, "cllama serve: listening on %s://%s:%d\n", tls ? "https" : "http", cfg->host, port);
    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "cllama serve: signal %d, shutting down\n", sig);
    rc = 0;
out:
    /* order: stop the engine first so every waiting HTTP thread sees its job end, then the
     * daemon joins those threads */
    if (srv->sched) cll_server_sched_stop_engine(srv->sched);
    if (d) MHD_stop_daemon(d);
    cll_server_sched_stop(srv->sched);
    cllama_context_free(srv->ctx);
    cllama_model_free(srv->model);
    cll_server_metrics_free(&srv->metrics);
    free(srv);
    free_secret(tls_cert);
    free_secret(tls_key);
    return rc;
}
