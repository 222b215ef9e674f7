/* server/sched: continuous batching. One engine thread owns the cllama_context; up to
 * n_seq_max jobs decode together, one token per generating sequence plus bounded prompt
 * chunks of newly admitted ones, in ONE cllama_decode per step. Free slots keep their KV so a
 * new prompt that shares a prefix with what a slot holds reuses it.
 * Owns: the engine thread, the wait queue, the slots and their samplers' use.
 * Rule: only the engine thread touches the context; HTTP threads see a job only through the
 * fields marked "under mu" and the functions below. */
#ifndef CLL_SERVER_SCHED_H
#define CLL_SERVER_SCHED_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cllama.h"
#include "server/metrics.h"
#include "server/stop.h"

typedef enum {
    CLL_SERVER_FINISH_NONE = 0,
    CLL_SERVER_FINISH_STOP,      /* end-of-generation token or a stop string */
    CLL_SERVER_FINISH_LENGTH,    /* max_tokens or the sequence's context is full */
    CLL_SERVER_FINISH_CANCELLED, /* the client went away */
    CLL_SERVER_FINISH_ERROR,     /* the engine failed; message in error */
} cll_server_finish;

typedef struct cll_server_job {
    /* set by the submitter, read-only afterwards */
    cllama_token *prompt;        /* owned */
    int32_t n_prompt;
    int32_t max_tokens;          /* -1 = until end of generation or context */
    bool ignore_eos;             /* end-of-generation tokens do not end the job (benchmarks) */
    cllama_sampler *sampler;     /* owned; used only by the engine thread once submitted */
    char **stops;                /* owned: the engine may still read them after the client left */
    size_t n_stops;
    /* under the scheduler's mu */
    pthread_cond_t cond;         /* signalled when out grows or the job finishes */
    char *out;                   /* released text (a prefix of the final text) */
    size_t out_len, out_cap;
    cllama_token *gen;           /* generated ids (eog excluded) */
    int32_t n_gen, gen_cap;
    int32_t n_cached;            /* prompt tokens served from the prefix cache */
    cll_server_finish finish;
    char error[256];
    bool busy;                   /* finish ERROR because the KV cache had no room: answer 503, retry later */
    bool cancel;                 /* set by the HTTP side; the engine frees the slot at once */
    bool queued, running;
    int refs;                    /* 1 for the HTTP side + 1 while the scheduler holds it */
    double t_submit, t_first;    /* clock at submission and at the first generated token */
    struct cll_server_job *next; /* wait-queue link */
    /* engine thread only */
    cll_server_stop gate;
} cll_server_job;

typedef struct cll_server_sched cll_server_sched;

/* Start the engine thread. queue_max: jobs allowed to wait while every slot is busy; chunk: prompt
 * tokens per sequence per step; step_tokens: most tokens per step (at least slots + chunk; at most
 * the context's n_batch). */
/* the tokens one step may carry: --step-tokens (asked > 0) or by default a token per slot plus one
 * chunk, on a GPU at least CLL_SERVER_GPU_STEP_TOKENS (a step there reads the weights once however wide
 * it is); never below a token per slot plus one chunk (the scheduler's floor, cll_server_sched_start).
 * H200, l2-7b Q4_K_M, 64 streams of 16-1024-token prompts + a 4k one (sixteenth session, 4 runs a
 * side): 512 a step 5995-6014 tok/s, TTFT p50/p99 0.067-0.070/0.121-0.129 s, vs 200 (72 slots + 128)
 * 5683-5755, 0.080-0.088/0.186-0.196 s, the long prompt's gap ratio the same (1.90-2.03x vs
 * 1.89-1.95x); 1024: 5576. On a CPU a wide step is a long one: one chunk's worth. */
#define CLL_SERVER_GPU_STEP_TOKENS 512
int cll_server_step_tokens(bool gpu, int parallel, int chunk, int asked);
int cll_server_sched_start(cllama_context *ctx, int queue_max, int chunk, int step_tokens, cll_server_metrics *metrics,
                           cll_server_sched **out);
/* Stop the engine thread: running and queued jobs finish as cancelled, submit refuses.
 * HTTP threads may still wait on and release their jobs afterwards. */
void cll_server_sched_stop_engine(cll_server_sched *s);
/* Stop the engine (if still running) and free everything; no HTTP thread may hold a job. */
void cll_server_sched_stop(cll_server_sched *s);

/* A job that takes ownership of prompt, sampler and stops (even on failure). NULL on OOM. */
cll_server_job *cll_server_job_new(cllama_token *prompt, int32_t n_prompt, int32_t max_tokens, cllama_sampler *sampler,
                                   char **stops, size_t n_stops);
/* Queue it. Returns 0, or -1 when the queue is full (the job stays the caller's). */
int cll_server_sched_submit(cll_server_sched *s, cll_server_job *j);

/* HTTP side: wait up to timeout_s for text past *taken or for the end. Copies new text into a
 * malloc'd *text (NULL when none) and advances *taken. Returns the finish state (NONE while
 * running). */
cll_server_finish cll_server_job_wait(cll_server_sched *s, cll_server_job *j, double timeout_s, size_t *taken,
                                      char **text, size_t *text_n);
/* ask the engine to drop the job (client gone); safe at any time, idempotent */
void cll_server_job_cancel(cll_server_sched *s, cll_server_job *j);
/* the HTTP side lets go of the job; the last holder frees it */
void cll_server_job_release(cll_server_sched *s, cll_server_job *j);
/* read the finished job's counters and error under the lock */
void cll_server_job_result(cll_server_sched *s, cll_server_job *j, int32_t *n_prompt, int32_t *n_gen,
                           int32_t *n_cached, char *error, size_t error_cap);
/* time to first token (s), or -1 if none yet */
/* the job ended for want of KV room (a 503 to retry, not a 500) */
bool cll_server_job_busy(cll_server_sched *s, cll_server_job *j);
double cll_server_job_ttft(cll_server_sched *s, cll_server_job *j);

#endif
