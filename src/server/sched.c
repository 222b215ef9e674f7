/* server/sched: the engine thread and its continuous-batching step. */
#include "server/sched.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "sample/sample.h"

typedef enum { SLOT_FREE = 0, SLOT_PREFILL, SLOT_GEN } slot_state;

typedef struct {
    slot_state state;
    cll_server_job *job;
    cllama_token *cache;   /* (n_ctx) the tokens whose KV this sequence holds, in order */
    int32_t n_cache;
    int32_t next_prompt;   /* index of the next prompt token to prefill */
    cllama_token next_tok; /* SLOT_GEN: sampled token to feed in the next step */
    int32_t batch_idx;     /* this step: batch index whose logits we sample from, or -1 */
    int32_t fed;           /* this step: tokens of this sequence in the batch */
    uint64_t last_used;    /* step counter: the least recently used free slot is evicted first */
} slot;

struct cll_server_sched {
    cllama_context *ctx;
    const cllama_model *model;
    cll_server_metrics *metrics;
    int n_slots, n_ctx, chunk, queue_max, n_batch;
    int32_t n_gen_rows;    /* this step's rows that are a generating slot's token (the rest: prompt chunks) */
    slot *slots;
    /* the batch, sized once: n_slots decode tokens + prompt chunks up to n_batch */
    cllama_token *b_tok;
    int32_t *b_pos, *b_seq;
    int8_t *b_logits;
    cllama_token *b_ids;   /* a greedy step's ids, one per token asking for output, in batch order */
    cllama_token *tk_ids;  /* a sampling step's candidates: (asking tokens x CLLAMA_TOPK_MAX) ids */
    float *tk_vals;        /* ... and their logits */
    int32_t *b_rank;       /* batch index -> its place among the tokens asking for output */
    pthread_mutex_t mu;
    pthread_cond_t wake;   /* new job, cancel, or quit */
    cll_server_job *q_head, *q_tail;
    int q_len;
    bool quit;
    pthread_t thread;
    bool started;
    uint64_t step;
    double step_min_s;     /* CLLAMA_SERVER_STEP_MS: every step lasts at least this (tests; 0: off) */
    bool step_log;         /* CLLAMA_SERVER_STEP_LOG=1: a line per step on stderr (diagnosis) */
    double t_start;
};

static void cond_init_mono(pthread_cond_t *c) {
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
}

cll_server_job *cll_server_job_new(cllama_token *prompt, int32_t n_prompt, int32_t max_tokens, cllama_sampler *sampler,
                                   char **stops, size_t n_stops) {
    cll_server_job *j = calloc(1, sizeof *j);
    if (!j) {
        free(prompt);
        cllama_sampler_free(sampler);
        for (size_t i = 0; i < n_stops; i++) free(stops[i]);
        free(stops);
        return NULL;
    }
    j->prompt = prompt;
    j->n_prompt = n_prompt;
    j->max_tokens = max_tokens;
    j->sampler = sampler;
    j->stops = stops;
    j->n_stops = n_stops;
    j->refs = 1;
    cond_init_mono(&j->cond);
    cll_server_stop_init(&j->gate, stops, n_stops);
    return j;
}

static void job_free(cll_server_job *j) {
    pthread_cond_destroy(&j->cond);
    cll_server_stop_free(&j->gate);
    cllama_sampler_free(j->sampler);
    free(j->prompt);
    for (size_t i = 0; i < j->n_stops; i++) free(j->stops[i]);
    free(j->stops);
    free(j->out);
    free(j->gen);
    free(j);
}

/* under mu */
static void job_unref(cll_server_job *j) {
    if (--j->refs == 0) job_free(j);
}

void cll_server_job_release(cll_server_sched *s, cll_server_job *j) {
    if (!j) return;
    pthread_mutex_lock(&s->mu);
    j->cancel = true; /* nobody is listening any more */
    job_unref(j);
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
}

void cll_server_job_cancel(cll_server_sched *s, cll_server_job *j) {
    pthread_mutex_lock(&s->mu);
    j->cancel = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
}

int cll_server_sched_submit(cll_server_sched *s, cll_server_job *j) {
    pthread_mutex_lock(&s->mu);
    /* a job waits in the queue even when a slot is free (until the engine admits it), so
     * free slots count as room on top of queue_max */
    int free_slots = 0;
    for (int i = 0; i < s->n_slots; i++) free_slots += s->slots[i].job == NULL;
    if (s->quit || s->q_len >= s->queue_max + free_slots) {
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    j->refs++;
    j->queued = true;
    j->t_submit = cll_now();
    j->next = NULL;
    if (s->q_tail) s->q_tail->next = j;
    else s->q_head = j;
    s->q_tail = j;
    s->q_len++;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

cll_server_finish cll_server_job_wait(cll_server_sched *s, cll_server_job *j, double timeout_s, size_t *taken,
                                      char **text, size_t *text_n) {
    *text = NULL;
    *text_n = 0;
    pthread_mutex_lock(&s->mu);
    if (j->out_len == *taken && j->finish == CLL_SERVER_FINISH_NONE && timeout_s > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        long long ns = ts.tv_nsec + (long long)(timeout_s * 1e9);
        ts.tv_sec += (time_t)(ns / 1000000000LL);
        ts.tv_nsec = (long)(ns % 1000000000LL);
        while (j->out_len == *taken && j->finish == CLL_SERVER_FINISH_NONE)
            if (pthread_cond_timedwait(&j->cond, &s->mu, &ts) == ETIMEDOUT) break;
    }
    if (j->out_len > *taken) {
        size_t n = j->out_len - *taken;
        char *t = malloc(n + 1);
        if (t) {
            memcpy(t, j->out + *taken, n);
            t[n] = 0;
            *text = t;
            *text_n = n;
            *taken = j->out_len;
        }
    }
    /* report the end only once every byte has been handed over */
    cll_server_finish f = *taken == j->out_len ? j->finish : CLL_SERVER_FINISH_NONE;
    pthread_mutex_unlock(&s->mu);
    return f;
}

void cll_server_job_result(cll_server_sched *s, cll_server_job *j, int32_t *n_prompt, int32_t *n_gen,
                           int32_t *n_cached, char *error, size_t error_cap) {
    pthread_mutex_lock(&s->mu);
    if (n_prompt) *n_prompt = j->n_prompt;
    if (n_gen) *n_gen = j->n_gen;
    if (n_cached) *n_cached = j->n_cached;
    if (error && error_cap) {
        strncpy(error, j->error, error_cap - 1);
        error[error_cap - 1] = 0;
    }
    pthread_mutex_unlock(&s->mu);
}

bool cll_server_job_busy(cll_server_sched *s, cll_server_job *j) {
    pthread_mutex_lock(&s->mu);
    const bool b = j->busy;
    pthread_mutex_unlock(&s->mu);
    return b;
}

double cll_server_job_ttft(cll_server_sched *s, cll_server_job *j) {
    pthread_mutex_lock(&s->mu);
    double t = j->t_first > 0 ? j->t_first - j->t_submit : -1;
    pthread_mutex_unlock(&s->mu);
    return t;
}

/* ---- engine thread -------------------------------------------------------------------- */

/* under mu: append released bytes to the job's output */
static bool job_append(cll_server_job *j, const char *t, size_t n) {
    if (!n) return true;
    if (j->out_len + n + 1 > j->out_cap) {
        size_t cap = j->out_cap ? j->out_cap : 256;
        while (cap < j->out_len + n + 1) cap *= 2;
        char *o = realloc(j->out, cap);
        if (!o) return false;
        j->out = o;
        j->out_cap = cap;
    }
    memcpy(j->out + j->out_len, t, n);
    j->out_len += n;
    j->out[j->out_len] = 0;
    return true;
}

/* under mu: end the slot's job and hand the slot back (its KV stays for prefix reuse) */
static void slot_finish(cll_server_sched *s, slot *sl, cll_server_finish f, const char *error) {
    cll_server_job *j = sl->job;
    if (j) {
        if (f != CLL_SERVER_FINISH_CANCELLED && f != CLL_SERVER_FINISH_ERROR) {
            const char *rest;
            size_t n;
            cll_server_stop_flush(&j->gate, &rest, &n);
            if (!job_append(j, rest, n)) {
                f = CLL_SERVER_FINISH_ERROR;
                error = "out of memory";
            }
        }
        if (error) snprintf(j->error, sizeof j->error, "%s", error);
        j->finish = f;
        j->running = false;
        pthread_cond_broadcast(&j->cond);
        job_unref(j);
    }
    sl->job = NULL;
    sl->state = SLOT_FREE;
    sl->last_used = s->step;
}

static int count_active(const cll_server_sched *s);

/* ---- paged KV room (cllama_context_params.n_kv_cells) ---- */

static bool kv_paged(const cll_server_sched *s, uint32_t *free_cells, uint32_t *total) {
    cllama_kv_info ki;
    if (cllama_kv_info_get(s->ctx, &ki) != CLLAMA_OK || !ki.paged) return false;
    if (free_cells) *free_cells = ki.free_cells;
    if (total) *total = ki.total_cells;
    return true;
}

/* engine thread: drop the cached prefixes of idle slots (least recently used first, never slot
 * `except`) until want cells are free; returns the slots dropped */
static int kv_reclaim_idle(cll_server_sched *s, int except, uint32_t want) {
    int n = 0;
    uint32_t fr = 0;
    while (kv_paged(s, &fr, NULL) && fr < want) {
        int lru = -1;
        for (int i = 0; i < s->n_slots; i++) {
            const slot *sl = &s->slots[i];
            if (i == except || sl->state != SLOT_FREE || sl->n_cache == 0) continue;
            if (lru < 0 || sl->last_used < s->slots[lru].last_used) lru = i;
        }
        if (lru < 0) break;
        cllama_seq_truncate(s->ctx, lru, 0);
        s->slots[lru].n_cache = 0;
        n++;
    }
    return n;
}

static int32_t common_prefix(const cllama_token *a, int32_t na, const cllama_token *b, int32_t nb) {
    int32_t n = na < nb ? na : nb, i = 0;
    while (i < n && a[i] == b[i]) i++;
    return i;
}

/* under mu: move queued jobs into free slots, best prefix match first */
static void admit(cll_server_sched *s) {
    while (s->q_head) {
        cll_server_job *j = s->q_head;
        if (j->cancel) { /* gone before it started */
            s->q_head = j->next;
            if (!s->q_head) s->q_tail = NULL;
            s->q_len--;
            j->queued = false;
            j->finish = CLL_SERVER_FINISH_CANCELLED;
            pthread_cond_broadcast(&j->cond);
            job_unref(j);
            continue;
        }
        /* A slot whose cache the prompt mostly extends (multi-turn chat, a shared system
         * prompt) is reused; otherwise the least recently used slot is taken, so a
         * one-token (BOS) match never evicts a conversation another client will continue. */
        int best = -1, lru = -1;
        int32_t best_lcp = 0;
        for (int i = 0; i < s->n_slots; i++) {
            slot *sl = &s->slots[i];
            if (sl->state != SLOT_FREE) continue;
            if (lru < 0 || sl->last_used < s->slots[lru].last_used) lru = i;
            int32_t l = common_prefix(sl->cache, sl->n_cache, j->prompt, j->n_prompt);
            if (l > best_lcp && 2 * l >= sl->n_cache) {
                best = i;
                best_lcp = l;
            }
        }
        if (best < 0 && lru >= 0) {
            best = lru;
            best_lcp = common_prefix(s->slots[lru].cache, s->slots[lru].n_cache, j->prompt, j->n_prompt);
        }
        if (best < 0) return;
        /* at least one prompt token must be decoded to get logits for the first sample */
        int32_t keep = best_lcp < j->n_prompt ? best_lcp : j->n_prompt - 1;
        uint32_t fr = 0, total = 0;
        if (kv_paged(s, &fr, &total)) {
            /* a paged KV: the prompt's cells (and the first reply token's) must be free, after what the
             * slot keeps; idle slots' prefixes go first, else the job waits for running ones to end */
            /* blocks any sequence filled with the same leading tokens (a shared system prompt, a
             * conversation another slot holds) are taken over when they reach further than what this
             * slot keeps: the prefix cache across slots */
            const int32_t shared = cllama_kv_prefix_cached(s->ctx, j->prompt, j->n_prompt);
            if (shared > keep) {
                cllama_seq_truncate(s->ctx, best, 0);
                keep = cllama_seq_adopt(s->ctx, best, j->prompt, j->n_prompt);
                memcpy(s->slots[best].cache, j->prompt, (size_t)keep * sizeof *j->prompt);
            } else {
                cllama_seq_truncate(s->ctx, best, keep);
            }
            s->slots[best].n_cache = keep;
            const uint32_t need = (uint32_t)(j->n_prompt - keep) + 1;
            int reclaimed = fr < need ? kv_reclaim_idle(s, best, need) : 0;
            kv_paged(s, &fr, NULL);
            cll_server_metrics_kv(s->metrics, total, fr, reclaimed, 0);
            if (fr < need) {
                if (count_active(s) > 0) return; /* FIFO: it goes first when room frees up */
                if ((uint32_t)j->n_prompt + 1 > total) { /* it could never fit: say so instead of waiting */
                    s->q_head = j->next;
                    if (!s->q_head) s->q_tail = NULL;
                    s->q_len--;
                    j->queued = false;
                    snprintf(j->error, sizeof j->error, "the prompt (%d tokens) does not fit the KV pool (%u cells)",
                             j->n_prompt, total);
                    j->finish = CLL_SERVER_FINISH_ERROR;
                    pthread_cond_broadcast(&j->cond);
                    job_unref(j);
                    continue;
                }
            }
        }
        s->q_head = j->next;
        if (!s->q_head) s->q_tail = NULL;
        s->q_len--;
        slot *sl = &s->slots[best];
        if (cllama_seq_truncate(s->ctx, best, keep) != CLLAMA_OK) {
            cllama_seq_truncate(s->ctx, best, 0);
            keep = 0;
        }
        sl->n_cache = keep;
        sl->next_prompt = keep;
        sl->job = j;
        sl->state = SLOT_PREFILL;
        j->queued = false;
        j->running = true;
        j->n_cached = keep;
        /* the prompt feeds the penalties' history, as llama.cpp's server does */
        cllama_sampler_reset(j->sampler);
        for (int32_t k = 0; k < j->n_prompt; k++) cllama_sampler_accept(j->sampler, j->prompt[k]);
        cll_server_metrics_admit(s->metrics, j->n_prompt, keep);
    }
}

static int count_active(const cll_server_sched *s) {
    int n = 0;
    for (int i = 0; i < s->n_slots; i++) n += s->slots[i].state != SLOT_FREE;
    return n;
}

/* Fill the batch for this step. Returns its token count. Engine thread only: no other
 * thread changes slot state, so no lock is needed. */
static int32_t build_batch(cll_server_sched *s) {
    int32_t n = 0;
    for (int i = 0; i < s->n_slots; i++) {
        slot *sl = &s->slots[i];
        sl->batch_idx = -1;
        sl->fed = 0;
        if (sl->state != SLOT_GEN) continue;
        s->b_tok[n] = sl->next_tok;
        s->b_pos[n] = sl->n_cache;
        s->b_seq[n] = i;
        s->b_logits[n] = 1;
        sl->fed = 1;
        sl->batch_idx = n++;
    }
    s->n_gen_rows = n;
    /* prompt chunks share what is left of the batch; running streams always get their token */
    for (int r = 0; r < s->n_slots && n < s->n_batch; r++) {
        int i = (int)((r + s->step) % (uint64_t)s->n_slots); /* rotate who prefills first */
        slot *sl = &s->slots[i];
        if (sl->state != SLOT_PREFILL) continue;
        int32_t left = sl->job->n_prompt - sl->next_prompt;
        int32_t take = left < s->chunk ? left : s->chunk;
        if (take > s->n_batch - n) take = s->n_batch - n;
        for (int32_t k = 0; k < take; k++) {
            s->b_tok[n] = sl->job->prompt[sl->next_prompt + k];
            s->b_pos[n] = sl->n_cache + k;
            s->b_seq[n] = i;
            s->b_logits[n] = 0;
            n++;
        }
        sl->fed = take;
        if (take == left) {
            s->b_logits[n - 1] = 1;
            sl->batch_idx = n - 1;
        }
    }
    return n;
}

/* the decode failed: every job in it ends with the error, and the sequences start empty */
static void fail_batch(cll_server_sched *s, const char *why) {
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->n_slots; i++) {
        slot *sl = &s->slots[i];
        if (sl->state == SLOT_FREE || sl->fed == 0) continue;
        cllama_seq_truncate(s->ctx, i, 0);
        sl->n_cache = 0;
        slot_finish(s, sl, CLL_SERVER_FINISH_ERROR, why);
    }
    pthread_mutex_unlock(&s->mu);
}

/* under mu, engine thread: a step found the KV pool full. Idle slots' prefixes are dropped if any
 * hold cells; else the request that loses least ends with a 503 (busy: retry later) and gives its
 * cells back: a slot still reading its prompt (nothing streamed yet; the one with the most prompt
 * left), else the generating slot admitted last. Never every job of the step, never a crash. */
static void kv_preempt(cll_server_sched *s) {
    uint32_t fr = 0, total = 0;
    kv_paged(s, &fr, &total);
    int reclaimed = kv_reclaim_idle(s, -1, fr + 1);
    int victim = -1;
    if (!reclaimed) {
        int32_t most_left = -1;
        for (int i = 0; i < s->n_slots; i++) {
            const slot *sl = &s->slots[i];
            if (sl->state != SLOT_PREFILL || !sl->job) continue;
            const int32_t left = sl->job->n_prompt - sl->next_prompt;
            if (left > most_left) {
                most_left = left;
                victim = i;
            }
        }
        double newest = -1.0;
        for (int i = 0; most_left < 0 && i < s->n_slots; i++) {
            const slot *sl = &s->slots[i];
            if (sl->state == SLOT_GEN && sl->job && sl->job->t_submit > newest) {
                newest = sl->job->t_submit;
                victim = i;
            }
        }
        if (victim >= 0 && count_active(s) == 1 && s->slots[victim].state == SLOT_GEN) {
            /* alone and still out of room: the pool is this reply's context; it ends as at n_ctx */
            slot_finish(s, &s->slots[victim], CLL_SERVER_FINISH_LENGTH, NULL);
            victim = -1;
        } else if (victim >= 0) {
            slot *sl = &s->slots[victim];
            sl->job->busy = true;
            cll_log(CLL_LOG_INFO, "server: the KV pool (%u cells) is full: a request ends with 503 (slot %d, %s)", total,
                    victim, sl->state == SLOT_PREFILL ? "reading its prompt" : "generating");
            slot_finish(s, sl, CLL_SERVER_FINISH_ERROR,
                        "the KV cache is full (every cell of the pool is held by running requests); retry shortly");
            cllama_seq_truncate(s->ctx, victim, 0);
            sl->n_cache = 0;
        }
    }
    kv_paged(s, &fr, NULL);
    cll_server_metrics_kv(s->metrics, total, fr, reclaimed, victim >= 0);
}

/* one token sampled for the slot: stream it, or end the job */
static void on_token(cll_server_sched *s, slot *sl, cllama_token t) {
    cll_server_job *j = sl->job;
    const cllama_model *m = s->model;
    char piece[256];
    int32_t np = 0;
    bool eog = cllama_token_is_eog(m, t) && !j->ignore_eos;
    if (!cllama_token_is_eog(m, t)) {
        np = cllama_token_to_piece(m, t, piece, (int32_t)sizeof piece, false);
        if (np < 0) np = 0;
        if (np > (int32_t)sizeof piece) np = (int32_t)sizeof piece; /* no real piece is this long */
    }
    pthread_mutex_lock(&s->mu);
    if (j->t_first == 0) j->t_first = cll_now();
    if (eog) {
        slot_finish(s, sl, CLL_SERVER_FINISH_STOP, NULL);
        pthread_mutex_unlock(&s->mu);
        return;
    }
    if (j->n_gen == j->gen_cap) {
        int32_t cap = j->gen_cap ? j->gen_cap * 2 : 64;
        cllama_token *g = realloc(j->gen, (size_t)cap * sizeof *g);
        if (g) {
            j->gen = g;
            j->gen_cap = cap;
        }
    }
    if (j->n_gen < j->gen_cap) j->gen[j->n_gen] = t;
    j->n_gen++;
    const char *rel;
    size_t nrel;
    int st = cll_server_stop_push(&j->gate, piece, (size_t)np, &rel, &nrel);
    if (st < 0 || !job_append(j, rel, nrel)) {
        slot_finish(s, sl, CLL_SERVER_FINISH_ERROR, "out of memory");
    } else if (st == 1) {
        slot_finish(s, sl, CLL_SERVER_FINISH_STOP, NULL);
    } else if (j->max_tokens >= 0 && j->n_gen >= j->max_tokens) {
        slot_finish(s, sl, CLL_SERVER_FINISH_LENGTH, NULL);
    } else if (sl->n_cache + 1 >= s->n_ctx) {
        /* prompt + completion fill the sequence's context (the KV holds all but the token
         * just sampled): a longer reply could not be continued, so stop with "length" */
        slot_finish(s, sl, CLL_SERVER_FINISH_LENGTH, NULL);
    } else {
        pthread_cond_broadcast(&j->cond);
        sl->next_tok = t;
        sl->state = SLOT_GEN;
    }
    pthread_mutex_unlock(&s->mu);
}

/* every slot that samples this step does a plain argmax (temperature 0, no penalties): the step
 * can take the driver's argmax (cllama_decode_greedy: on the GPU only the ids cross the bus instead of
 * n_vocab floats per slot) and b_rank maps each batch index to its id */
/* every slot that samples this step needs only its best candidates (no penalties, top_k <=
 * CLLAMA_TOPK_MAX): the step can take cllama_decode_topk with the largest need (on the GPU only
 * those cross the bus, instead of n_vocab floats per slot, and the host draws from k instead of
 * sorting a vocab); returns that k (0: the step needs the logits); b_rank as above */
static int32_t step_topk(cll_server_sched *s, int32_t n) {
    int32_t k = 0;
    for (int i = 0; i < s->n_slots; i++) {
        const slot *sl = &s->slots[i];
        if (sl->fed == 0 || !sl->job || sl->batch_idx < 0) continue;
        const int32_t need = cllama_sampler_topk_need(sl->job->sampler);
        if (need <= 0) return 0;
        if (need > k) k = need;
    }
    int32_t r = 0;
    for (int32_t i = 0; i < n; i++) s->b_rank[i] = s->b_logits[i] ? r++ : -1;
    return k;
}

static bool step_is_greedy(cll_server_sched *s, int32_t n) {
    int asking = 0;
    for (int i = 0; i < s->n_slots; i++) {
        const slot *sl = &s->slots[i];
        if (sl->fed == 0 || !sl->job || sl->batch_idx < 0) continue;
        if (!cll_sampler_is_plain_greedy((const cll_sampler *)sl->job->sampler)) return false;
        asking++;
    }
    if (!asking) return false;
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) s->b_rank[i] = s->b_logits[i] ? k++ : -1;
    return true;
}

/* after a successful decode: record what the KV now holds, sample where logits were asked (ids:
 * a greedy step's argmax ids, NULL: sample the logits) */
static int after_decode(cll_server_sched *s, const cllama_token *ids, int32_t topk) {
    int sampled = 0;
    for (int i = 0; i < s->n_slots; i++) {
        slot *sl = &s->slots[i];
        if (sl->fed == 0 || !sl->job) continue;
        if (sl->state == SLOT_GEN) {
            sl->cache[sl->n_cache++] = sl->next_tok;
        } else {
            memcpy(sl->cache + sl->n_cache, sl->job->prompt + sl->next_prompt, (size_t)sl->fed * sizeof *sl->cache);
            sl->n_cache += sl->fed;
            sl->next_prompt += sl->fed;
        }
        if (sl->batch_idx < 0) continue;
        cllama_token t;
        if (ids) {
            t = ids[s->b_rank[sl->batch_idx]];
        } else if (topk > 0) {
            const size_t at = (size_t)s->b_rank[sl->batch_idx] * (size_t)topk;
            t = cllama_sampler_sample_topk(sl->job->sampler, s->tk_ids + at, s->tk_vals + at, topk);
            if (t < 0) {
                pthread_mutex_lock(&s->mu);
                slot_finish(s, sl, CLL_SERVER_FINISH_ERROR, "the step returned too few candidates");
                pthread_mutex_unlock(&s->mu);
                continue;
            }
        } else {
            const float *logits = cllama_get_logits(s->ctx, sl->batch_idx);
            if (!logits) {
                pthread_mutex_lock(&s->mu);
                slot_finish(s, sl, CLL_SERVER_FINISH_ERROR, "the engine returned no logits");
                pthread_mutex_unlock(&s->mu);
                continue;
            }
            t = cllama_sampler_sample(sl->job->sampler, logits);
        }
        cllama_sampler_accept(sl->job->sampler, t);
        sampled++;
        on_token(s, sl, t);
    }
    return sampled;
}

static void *engine_main(void *arg) {
    cll_server_sched *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        /* a job whose client left gives its slot back before the next step */
        for (int i = 0; i < s->n_slots; i++)
            if (s->slots[i].job && s->slots[i].job->cancel)
                slot_finish(s, &s->slots[i], CLL_SERVER_FINISH_CANCELLED, NULL);
        if (s->quit) break;
        admit(s);
        int active = count_active(s);
        cll_server_metrics_gauges(s->metrics, s->q_len, active);
        if (active == 0) {
            pthread_cond_wait(&s->wake, &s->mu);
            continue;
        }
        pthread_mutex_unlock(&s->mu);

        int32_t n = build_batch(s);
        cllama_batch b = {n, s->b_tok, s->b_pos, s->b_seq, s->b_logits};
        const bool greedy = step_is_greedy(s, n);
        const int32_t topk = greedy ? 0 : step_topk(s, n);
        cllama_counters k0 = {0}, k1 = {0};
        if (s->step_log) cllama_context_counters(s->ctx, &k0);
        double t0 = cll_now();
        cllama_status st = greedy     ? cllama_decode_greedy(s->ctx, &b, s->b_ids)
                           : topk > 0 ? cllama_decode_topk(s->ctx, &b, topk, s->tk_ids, s->tk_vals)
                                      : cllama_decode(s->ctx, &b);
        double dt = cll_now() - t0;
        s->step++;
        if (s->step_log) { /* when, what the step carried, how long it took (the device's share; a graph?) */
            int segs = 0;
            for (int32_t i = s->n_gen_rows; i < n; i++) segs += i == s->n_gen_rows || s->b_seq[i] != s->b_seq[i - 1];
            cllama_context_counters(s->ctx, &k1);
            fprintf(stderr, "cllama serve: step %llu at %.4f s: %d rows, %d generating + %d prompt tokens in %d run(s), "
                            "%.2f ms (device %.2f ms, %s, %s)%s\n",
                    (unsigned long long)s->step, t0 - s->t_start, n, s->n_gen_rows, n - s->n_gen_rows, segs, dt * 1e3,
                    (k1.device_seconds - k0.device_seconds) * 1e3,
                    k1.graph_captures > k0.graph_captures ? "captured" : k1.graph_replays > k0.graph_replays ? "graph" : "eager",
                    greedy ? "greedy" : topk > 0 ? "top-k" : "logits", st == CLLAMA_OK ? "" : " (failed)");
        }
        if (s->step_min_s > dt) { /* CLLAMA_SERVER_STEP_MS: tests that need steps to overlap */
            const double w = s->step_min_s - dt;
            struct timespec ts = {(time_t)w, (long)((w - (double)(time_t)w) * 1e9)};
            nanosleep(&ts, NULL);
        }
        if (st == CLLAMA_ERR_KV_FULL) {
            /* the paged pool had no block for some sequence: nothing ran. Idle prefixes go first;
             * else one request of the step ends with a 503 and the step is rebuilt without it */
            pthread_mutex_lock(&s->mu);
            kv_preempt(s);
            pthread_mutex_unlock(&s->mu);
        } else if (st != CLLAMA_OK) {
            char why[256];
            snprintf(why, sizeof why, "decode failed: %s", cllama_last_error());
            cll_log(CLL_LOG_ERROR, "server: %s", why);
            fail_batch(s, why);
        } else {
            int sampled = after_decode(s, greedy ? s->b_ids : NULL, topk);
            cll_server_metrics_step(s->metrics, sampled, dt, greedy, topk > 0, n > s->n_gen_rows);
            cllama_kv_info ki;
            if (cllama_kv_info_get(s->ctx, &ki) == CLLAMA_OK)
                cll_server_metrics_kv(s->metrics, ki.total_cells, ki.free_cells, 0, 0);
        }
        pthread_mutex_lock(&s->mu);
    }
    /* quitting: every job still held ends as cancelled */
    for (int i = 0; i < s->n_slots; i++)
        if (s->slots[i].job) slot_finish(s, &s->slots[i], CLL_SERVER_FINISH_CANCELLED, NULL);
    while (s->q_head) {
        cll_server_job *j = s->q_head;
        s->q_head = j->next;
        j->finish = CLL_SERVER_FINISH_CANCELLED;
        pthread_cond_broadcast(&j->cond);
        job_unref(j);
    }
    s->q_tail = NULL;
    s->q_len = 0;
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int cll_server_step_tokens(bool gpu, int parallel, int chunk, int asked) {
    const int floor = parallel + chunk;
    const int want = asked > 0 ? asked : gpu ? CLL_SERVER_GPU_STEP_TOKENS : floor;
    return want > floor ? want : floor;
}

int cll_server_sched_start(cllama_context *ctx, int queue_max, int chunk, int step_tokens, cll_server_metrics *metrics,
                           cll_server_sched **out) {
    *out = NULL;
    cll_server_sched *s = calloc(1, sizeof *s);
    if (!s) return -1;
    s->ctx = ctx;
    s->model = cllama_context_model(ctx);
    s->metrics = metrics;
    s->n_slots = (int)cllama_n_seq_max(ctx);
    s->n_ctx = (int)cllama_n_ctx(ctx);
    s->chunk = chunk > 0 ? chunk : 64;
    const char *sm = getenv("CLLAMA_SERVER_STEP_MS");
    s->step_min_s = sm && *sm ? atof(sm) / 1000.0 : 0.0;
    if (!(s->step_min_s > 0.0 && s->step_min_s < 10.0)) s->step_min_s = 0.0;
    const char *sl = getenv("CLLAMA_SERVER_STEP_LOG");
    s->step_log = sl && sl[0] == '1';
    s->t_start = cll_now();
    s->queue_max = queue_max > 0 ? queue_max : 0;
    /* every generating sequence gets its token, plus room for at least one prompt chunk, up to
     * step_tokens (the context's n_batch holds it) */
    s->n_batch = s->n_slots + s->chunk;
    if (step_tokens > s->n_batch && step_tokens <= (int)cllama_n_batch(ctx)) s->n_batch = step_tokens;
    s->slots = calloc((size_t)s->n_slots, sizeof *s->slots);
    s->b_tok = calloc((size_t)s->n_batch, sizeof *s->b_tok);
    s->b_pos = calloc((size_t)s->n_batch, sizeof *s->b_pos);
    s->b_seq = calloc((size_t)s->n_batch, sizeof *s->b_seq);
    s->b_logits = calloc((size_t)s->n_batch, sizeof *s->b_logits);
    s->b_ids = calloc((size_t)s->n_batch, sizeof *s->b_ids);
    s->b_rank = calloc((size_t)s->n_batch, sizeof *s->b_rank);
    s->tk_ids = calloc((size_t)s->n_batch * CLLAMA_TOPK_MAX, sizeof *s->tk_ids);
    s->tk_vals = calloc((size_t)s->n_batch * CLLAMA_TOPK_MAX, sizeof *s->tk_vals);
    bool ok = s->slots && s->b_tok && s->b_pos && s->b_seq && s->b_logits && s->b_ids && s->b_rank && s->tk_ids &&
              s->tk_vals;
    for (int i = 0; ok && i < s->n_slots; i++) {
        s->slots[i].cache = calloc((size_t)s->n_ctx, sizeof(cllama_token));
        ok = s->slots[i].cache != NULL;
        cllama_seq_truncate(ctx, i, 0);
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->wake, NULL);
    if (ok) ok = s->started = pthread_create(&s->thread, NULL, engine_main, s) == 0;
    if (!ok) {
        s->quit = true;
        cll_server_sched_stop(s);
        return -1;
    }
    *out = s;
    return 0;
}

void cll_server_sched_stop_engine(cll_server_sched *s) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->quit = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    if (s->started) pthread_join(s->thread, NULL);
    s->started = false;
}

void cll_server_sched_stop(cll_server_sched *s) {
    if (!s) return;
    cll_server_sched_stop_engine(s);
    for (int i = 0; s->slots && i < s->n_slots; i++) free(s->slots[i].cache);
    free(s->slots);
    free(s->b_tok);
    free(s->b_pos);
    free(s->b_seq);
    free(s->b_logits);
    free(s->b_ids);
    free(s->b_rank);
    free(s->tk_ids);
    free(s->tk_vals);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->wake);
    free(s);
}
