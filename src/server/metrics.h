/* server/metrics: the counters and gauges behind GET /metrics (Prometheus text format).
 * Owns: one mutex-guarded block of numbers; writers are the HTTP threads (status codes) and
 * the engine thread (tokens, queue depth, active sequences, throughput window).
 * Rule: every update is O(1) under the lock; rendering copies the numbers first. */
#ifndef CLL_SERVER_METRICS_H
#define CLL_SERVER_METRICS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define CLL_SERVER_METRICS_CODES 8
/* the step-time histogram's upper bounds, seconds (a last +Inf bucket follows) */
#define CLL_SERVER_STEP_BUCKETS 13

typedef struct {
    pthread_mutex_t mu;
    int codes[CLL_SERVER_METRICS_CODES];         /* HTTP status codes seen, 0 = unused row */
    uint64_t code_count[CLL_SERVER_METRICS_CODES];
    uint64_t code_other;
    uint64_t auth_refused;        /* 401s: missing, malformed or wrong API key */
    uint64_t prompt_tokens;       /* prompt tokens of admitted requests */
    uint64_t prompt_tokens_cached;/* of those, served from the prefix cache */
    uint64_t gen_tokens;          /* sampled tokens */
    uint64_t decode_steps;        /* cllama_decode calls */
    uint64_t greedy_steps;        /* of those, greedy steps that took the driver's argmax (ids, no logits) */
    uint64_t topk_steps;          /* of those, sampling steps that took the best candidates only (no logits) */
    uint64_t kv_reclaimed;        /* paged KV: idle slots' cached prefixes dropped to make room */
    uint64_t kv_preempted;        /* paged KV: requests ended with 503 because the pool was full */
    uint32_t kv_total, kv_free;   /* paged KV: the pool's cells, and those in no sequence's blocks */
    double decode_seconds;        /* time inside cllama_decode */
    /* the steps' times by kind: [0] every token a generating slot's, [1] prompt tokens too */
    uint64_t step_hist[2][CLL_SERVER_STEP_BUCKETS + 1];
    double step_sum[2];
    uint64_t step_n[2];
    /* throughput over a sliding window: generated tokens and seconds of the last steps */
    double win_t0;
    uint64_t win_tokens;
    double rate;                  /* generated tokens/s of the last completed window */
    int queue_depth;
    int active;
    int parallel;
} cll_server_metrics;

void cll_server_metrics_init(cll_server_metrics *m, int parallel);
void cll_server_metrics_free(cll_server_metrics *m);
void cll_server_metrics_status(cll_server_metrics *m, int http_status);
/* a request refused for its API key (the 401 itself is also counted by status) */
void cll_server_metrics_auth_refused(cll_server_metrics *m);
/* paged KV: the pool's state after a step, and the reclaims / preemptions it took */
void cll_server_metrics_kv(cll_server_metrics *m, uint32_t total, uint32_t free_cells, int reclaimed, int preempted);
/* one engine step: the tokens it sampled, its time, whether it took the driver's argmax (every sampling
 * slot greedy) or top-k candidates, and whether it carried prompt tokens (a prefill chunk) */
void cll_server_metrics_step(cll_server_metrics *m, int gen_tokens, double seconds, bool greedy, bool topk, bool prompt);
void cll_server_metrics_admit(cll_server_metrics *m, int prompt_tokens, int cached_tokens);
void cll_server_metrics_gauges(cll_server_metrics *m, int queue_depth, int active);
/* malloc'd Prometheus exposition text */
char *cll_server_metrics_render(cll_server_metrics *m);

#endif
