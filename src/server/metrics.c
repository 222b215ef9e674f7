/* server/metrics: counters, gauges and their Prometheus rendering. */
#include "server/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

/* the window over which tokens/s is measured: long enough to be stable, short enough to follow load */
#define RATE_WINDOW_S 5.0

void cll_server_metrics_init(cll_server_metrics *m, int parallel) {
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    m->parallel = parallel;
    m->win_t0 = cll_now();
}

void cll_server_metrics_free(cll_server_metrics *m) {
    if (m) pthread_mutex_destroy(&m->mu);
}

void cll_server_metrics_status(cll_server_metrics *m, int code) {
    pthread_mutex_lock(&m->mu);
    int i;
    for (i = 0; i < CLL_SERVER_METRICS_CODES; i++) {
        if (m->codes[i] == code) break;
        if (m->codes[i] == 0) {
            m->codes[i] = code;
            break;
        }
    }
    if (i < CLL_SERVER_METRICS_CODES) m->code_count[i]++;
    else m->code_other++;
    pthread_mutex_unlock(&m->mu);
}

void cll_server_metrics_auth_refused(cll_server_metrics *m) {
    pthread_mutex_lock(&m->mu);
    m->auth_refused++;
    pthread_mutex_unlock(&m->mu);
}

void cll_server_metrics_kv(cll_server_metrics *m, uint32_t total, uint32_t free_cells, int reclaimed, int preempted) {
    pthread_mutex_lock(&m->mu);
    m->kv_total = total;
    m->kv_free = free_cells;
    m->kv_reclaimed += (uint64_t)reclaimed;
    m->kv_preempted += (uint64_t)preempted;
    pthread_mutex_unlock(&m->mu);
}

static const double k_step_le[CLL_SERVER_STEP_BUCKETS] = {0.0025, 0.005, 0.0075, 0.01, 0.0125, 0.015, 0.02,
                                                          0.03,   0.05,  0.1,    0.25, 0.5,    1.0};

void cll_server_metrics_step(cll_server_metrics *m, int gen_tokens, double seconds, bool greedy, bool topk, bool prompt) {
    int b = 0;
    while (b < CLL_SERVER_STEP_BUCKETS && seconds > k_step_le[b]) b++;
    pthread_mutex_lock(&m->mu);
    m->step_hist[prompt][b]++;
    m->step_sum[prompt] += seconds;
    m->step_n[prompt]++;
    m->gen_tokens += (uint64_t)gen_tokens;
    m->decode_steps++;
    m->greedy_steps += greedy;
    m->topk_steps += topk;
    m->decode_seconds += seconds;
    m->win_tokens += (uint64_t)gen_tokens;
    double now = cll_now();
    if (now - m->win_t0 >= RATE_WINDOW_S) {
        m->rate = (double)m->win_tokens / (now - m->win_t0);
        m->win_t0 = now;
        m->win_tokens = 0;
    }
    pthread_mutex_unlock(&m->mu);
}

void cll_server_metrics_admit(cll_server_metrics *m, int prompt_tokens, int cached_tokens) {
    pthread_mutex_lock(&m->mu);
    m->prompt_tokens += (uint64_t)prompt_tokens;
    m->prompt_tokens_cached += (uint64_t)cached_tokens;
    pthread_mutex_unlock(&m->mu);
}

void cll_server_metrics_gauges(cll_server_metrics *m, int queue_depth, int active) {
    pthread_mutex_lock(&m->mu);
    m->queue_depth = queue_depth;
    m->active = active;
    pthread_mutex_unlock(&m->mu);
}

char *cll_server_metrics_render(cll_server_metrics *m) {
    pthread_mutex_lock(&m->mu);
    cll_server_metrics c = *m; /* copy, then format without the lock */
    double now = cll_now();
    /* an idle server must not keep reporting the rate of its last busy window */
    if (now - m->win_t0 > 2 * RATE_WINDOW_S) c.rate = 0;
    pthread_mutex_unlock(&m->mu);

    size_t cap = 16384, n = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
#define OUT(...) \
    do { \
        int w_ = snprintf(s + n, cap - n, __VA_ARGS__); \
        if (w_ > 0) n += (size_t)w_ < cap - n ? (size_t)w_ : cap - n - 1; \
    } while (0)
    OUT("# HELP cllama_requests_total HTTP responses by status code.\n# TYPE cllama_requests_total counter\n");
    for (int i = 0; i < CLL_SERVER_METRICS_CODES && c.codes[i]; i++)
        OUT("cllama_requests_total{code=\"%d\"} %llu\n", c.codes[i], (unsigned long long)c.code_count[i]);
    if (c.code_other) OUT("cllama_requests_total{code=\"other\"} %llu\n", (unsigned long long)c.code_other);
    OUT("# HELP cllama_auth_refused_total Requests refused with 401 for a missing, malformed or wrong API key.\n"
        "# TYPE cllama_auth_refused_total counter\n");
    OUT("cllama_auth_refused_total %llu\n", (unsigned long long)c.auth_refused);
    OUT("# HELP cllama_prompt_tokens_total Prompt tokens of admitted requests.\n# TYPE cllama_prompt_tokens_total counter\n");
    OUT("cllama_prompt_tokens_total %llu\n", (unsigned long long)c.prompt_tokens);
    OUT("# HELP cllama_prompt_tokens_cached_total Prompt tokens reused from the prefix cache.\n"
        "# TYPE cllama_prompt_tokens_cached_total counter\n");
    OUT("cllama_prompt_tokens_cached_total %llu\n", (unsigned long long)c.prompt_tokens_cached);
    OUT("# HELP cllama_generated_tokens_total Sampled tokens.\n# TYPE cllama_generated_tokens_total counter\n");
    OUT("cllama_generated_tokens_total %llu\n", (unsigned long long)c.gen_tokens);
    OUT("# HELP cllama_decode_steps_total Batched decode calls.\n# TYPE cllama_decode_steps_total counter\n");
    OUT("cllama_decode_steps_total %llu\n", (unsigned long long)c.decode_steps);
    OUT("# HELP cllama_greedy_steps_total Decode calls whose every sampling slot was greedy: the driver's argmax, no "
        "logits copied.\n# TYPE cllama_greedy_steps_total counter\n");
    OUT("cllama_greedy_steps_total %llu\n", (unsigned long long)c.greedy_steps);
    OUT("# HELP cllama_topk_steps_total Sampling steps that took each slot's best candidates (cllama_decode_topk), no "
        "logits copied.\n# TYPE cllama_topk_steps_total counter\n");
    OUT("cllama_topk_steps_total %llu\n", (unsigned long long)c.topk_steps);
    OUT("# HELP cllama_kv_cells KV cache cells (a paged pool: all of its blocks; else n_ctx per slot).\n"
        "# TYPE cllama_kv_cells gauge\n");
    OUT("cllama_kv_cells %u\n", c.kv_total);
    OUT("# HELP cllama_kv_cells_free KV cells in no sequence's blocks (unpaged: past every slot's length).\n"
        "# TYPE cllama_kv_cells_free gauge\n");
    OUT("cllama_kv_cells_free %u\n", c.kv_free);
    OUT("# HELP cllama_kv_reclaimed_total Idle slots whose cached prefix was dropped to make KV room.\n"
        "# TYPE cllama_kv_reclaimed_total counter\n");
    OUT("cllama_kv_reclaimed_total %llu\n", (unsigned long long)c.kv_reclaimed);
    OUT("# HELP cllama_kv_preempted_total Requests answered 503 because the KV pool was full.\n"
        "# TYPE cllama_kv_preempted_total counter\n");
    OUT("cllama_kv_preempted_total %llu\n", (unsigned long long)c.kv_preempted);
    OUT("# HELP cllama_decode_seconds_total Time spent in batched decode.\n# TYPE cllama_decode_seconds_total counter\n");
    OUT("cllama_decode_seconds_total %.6f\n", c.decode_seconds);
    OUT("# HELP cllama_step_seconds Engine steps by time: kind=\"decode\" a token per generating sequence only, "
        "kind=\"prefill\" prompt chunks too.\n# TYPE cllama_step_seconds histogram\n");
    for (int k = 0; k < 2; k++) {
        const char *kind = k ? "prefill" : "decode";
        uint64_t cum = 0;
        for (int b = 0; b <= CLL_SERVER_STEP_BUCKETS; b++) {
            cum += c.step_hist[k][b];
            if (b < CLL_SERVER_STEP_BUCKETS)
                OUT("cllama_step_seconds_bucket{kind=\"%s\",le=\"%g\"} %llu\n", kind, k_step_le[b], (unsigned long long)cum);
            else
                OUT("cllama_step_seconds_bucket{kind=\"%s\",le=\"+Inf\"} %llu\n", kind, (unsigned long long)cum);
        }
        OUT("cllama_step_seconds_sum{kind=\"%s\"} %.6f\n", kind, c.step_sum[k]);
        OUT("cllama_step_seconds_count{kind=\"%s\"} %llu\n", kind, (unsigned long long)c.step_n[k]);
    }
    OUT("# HELP cllama_tokens_per_second Generated tokens per second over the last window.\n"
        "# TYPE cllama_tokens_per_second gauge\n");
    OUT("cllama_tokens_per_second %.3f\n", c.rate);
    OUT("# HELP cllama_queue_depth Requests waiting for a sequence slot.\n# TYPE cllama_queue_depth gauge\n");
    OUT("cllama_queue_depth %d\n", c.queue_depth);
    OUT("# HELP cllama_active_sequences Sequences prefilling or generating.\n# TYPE cllama_active_sequences gauge\n");
    OUT("cllama_active_sequences %d\n", c.active);
    OUT("# HELP cllama_parallel_slots Sequence slots (--parallel).\n# TYPE cllama_parallel_slots gauge\n");
    OUT("cllama_parallel_slots %d\n", c.parallel);
#undef OUT
    return s;
}
