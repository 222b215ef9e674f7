/* threads: a fixed pool of worker threads that run one task at a time on all threads
 * (fork-join), used by every parallel op of the CPU driver.
 * Owns its pthreads. Rule: cll_pool_run is called from one thread at a time; the
 * caller takes part (it claims chunks like a worker), so a pool of 1 runs inline. */
#ifndef CLL_THREADS_H
#define CLL_THREADS_H

#include "core/core.h"

typedef struct cll_pool cll_pool;
typedef void (*cll_task_fn)(void *arg, int ith, int nth);

cll_status cll_pool_create(int n_threads, cll_pool **out); /* n_threads <= 0: physical cores */
void cll_pool_free(cll_pool *p);
int cll_pool_size(const cll_pool *p);
/* run fn(arg, ith, nth) for ith in [0, nth) on the pool and wait for all. Each ith runs
 * exactly once, on whichever thread claims it first (the caller included), so per-ith
 * scratch is safe but thread identity is not implied. */
void cll_pool_run(cll_pool *p, cll_task_fn fn, void *arg);
/* the same with n_chunks chunks: fn(arg, c, n_chunks) for c in [0, n_chunks). More chunks
 * than threads keep a thread the scheduler parks from holding up the join. */
void cll_pool_run_chunks(cll_pool *p, cll_task_fn fn, void *arg, int n_chunks);

/* A barrier of n threads that can be abandoned: the meeting point of the ranks of a tensor-parallel
 * context (cpu/comm, cuda/comm's one-GPU split). cll_barrier_wait returns true once all n arrived,
 * false when the barrier is (or becomes) aborted; cll_barrier_abort(b, true) wakes every waiter with
 * false and fails every later wait until cll_barrier_abort(b, false), which the owner calls once every
 * thread has left. */
typedef struct cll_barrier cll_barrier;
cll_status cll_barrier_create(int n, cll_barrier **out);
void cll_barrier_free(cll_barrier *b);
bool cll_barrier_wait(cll_barrier *b);
/* the same for rank `rank` of a tensor-parallel group: CLL_OK, or CLL_ERR_INTERNAL saying its
 * all-reduce was abandoned (another rank failed) */
cll_status cll_barrier_meet(cll_barrier *b, int32_t rank);
void cll_barrier_abort(cll_barrier *b, bool on);

int cll_physical_cores(void);
/* split [0, n) into nth near-equal chunks; chunk ith is [*b, *e) */
static inline void cll_split(int64_t n, int ith, int nth, int64_t *b, int64_t *e) {
    int64_t per = n / nth, rem = n % nth;
    *b = ith * per + (ith < rem ? ith : rem);
    *e = *b + per + (ith < rem ? 1 : 0);
}

#endif
