/* threads: fork-join pool with chunks claimed dynamically. Workers spin on a generation
 * counter for a short while (a decode step issues ~200 joins, so a futex sleep/wake per
 * join would cost tens of microseconds each) and then sleep on a futex so an idle pool
 * burns no CPU.
 * A task is n_chunks chunks; every thread, the caller included, claims chunks from one
 * atomic ticket until none is left, and the caller waits only for chunks already claimed.
 * On a box with more runnable threads than cores a worker may not run for a whole
 * scheduler slice (milliseconds): the caller then runs that worker's chunks itself
 * instead of waiting for it to wake (the tiny-model 2-thread slowdown). */
#include "core/threads.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

/* How long a waiter spins before it sleeps. 200 us covers the gap between two
 * matmuls of a decode step (norms, rope, attention run on the main thread in between)
 * without keeping an idle pool hot for long. */
#define SPIN_NS 200000LL

typedef struct {
    cll_pool *pool;
    pthread_t tid;
} worker;

struct cll_pool {
    int n;                    /* threads including the caller */
    worker *w;                /* (n - 1) workers */
    cll_task_fn fn;           /* the current task; valid while any of its chunks is unfinished */
    void *arg;
    int n_chunks;
    /* (generation << 32) | chunks not yet claimed. A claim is a CAS that decrements the
     * low half, so a thread can only claim a chunk of the task that is current, and fn/arg
     * stay valid until the chunk it claimed is done. */
    _Atomic uint64_t ticket;
    _Atomic uint32_t gen;     /* futex word: bumped once per task, after ticket */
    _Atomic uint32_t done;    /* futex word: chunks of the current task finished */
    _Atomic int sleepers;     /* workers parked in futex_wait on gen */
    _Atomic int main_sleeping;/* the caller parked in futex_wait on done */
    _Atomic int stop;
};

static long futex(_Atomic uint32_t *addr, int op, uint32_t val) {
    return syscall(SYS_futex, (uint32_t *)addr, op, val, NULL, NULL, 0);
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* spin until *word != seen or the spin budget runs out; true if it changed. After the
 * first YIELD_NS the spinner also yields: on an oversubscribed box the thread it waits
 * for may be queued behind it on the same core. */
#define YIELD_NS 20000LL
static int spin_until_changed(_Atomic uint32_t *word, uint32_t seen) {
    int64_t t0 = 0, t = 0;
    for (unsigned i = 0;; i++) {
        if (atomic_load_explicit(word, memory_order_acquire) != seen) return 1;
        CPU_RELAX();
        if ((i & 255) == 255) {
            t = now_ns();
            if (!t0) t0 = t;
            else if (t - t0 > SPIN_NS) return 0;
            if (t - t0 > YIELD_NS) sched_yield();
        }
    }
}

/* claim and run chunks of the current task until none is left */
static void run_chunks(cll_pool *p) {
    uint64_t t = atomic_load_explicit(&p->ticket, memory_order_acquire);
    for (;;) {
        if ((uint32_t)t == 0) return;
        if (!atomic_compare_exchange_weak_explicit(&p->ticket, &t, t - 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        /* chunk (remaining - 1) of the task of this ticket's generation: its fn/arg are
         * still published, since that task cannot finish before this chunk does */
        const int n_chunks = p->n_chunks;
        p->fn(p->arg, n_chunks - (int)(uint32_t)t, n_chunks);
        const uint32_t d = atomic_fetch_add(&p->done, 1) + 1; /* seq_cst: Dekker with main_sleeping */
        if (d == (uint32_t)n_chunks && atomic_load(&p->main_sleeping)) futex(&p->done, FUTEX_WAKE_PRIVATE, 1);
        t = atomic_load_explicit(&p->ticket, memory_order_acquire);
    }
}

static void *worker_main(void *arg) {
    worker *me = arg;
    cll_pool *pool = me->pool;
    uint32_t seen = 0;
    for (;;) {
        if (!spin_until_changed(&pool->gen, seen)) {
            /* Dekker with the producer: announce sleeping, then re-check the word;
             * futex_wait itself fails with EAGAIN if gen moved in between. */
            atomic_fetch_add(&pool->sleepers, 1);
            while (atomic_load(&pool->gen) == seen) futex(&pool->gen, FUTEX_WAIT_PRIVATE, seen);
            atomic_fetch_sub(&pool->sleepers, 1);
        }
        seen = atomic_load_explicit(&pool->gen, memory_order_acquire);
        if (atomic_load_explicit(&pool->stop, memory_order_acquire)) return NULL;
        run_chunks(pool);
    }
}

int cll_physical_cores(void) {
    /* count distinct (package, core) pairs of the online CPUs */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1) ncpu = 1;
    int n = 0;
    int cap = (int)ncpu;
    long *seen = calloc((size_t)cap, sizeof *seen);
    if (!seen) return (int)ncpu;
    for (long c = 0; c < ncpu && c < 4096; c++) {
        char path[128];
        long core = -1, pkg = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/topology/core_id", c);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (fscanf(f, "%ld", &core) != 1) core = -1;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/topology/physical_package_id", c);
        f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%ld", &pkg) != 1) pkg = 0;
            fclose(f);
        }
        if (core < 0) continue;
        long key = pkg * 1000000 + core;
        int dup = 0;
        for (int i = 0; i < n; i++) dup |= seen[i] == key;
        if (!dup && n < cap) seen[n++] = key;
    }
    free(seen);
    return n > 0 ? n : (int)ncpu;
}

cll_status cll_pool_create(int n_threads, cll_pool **out) {
    *out = NULL;
    if (n_threads <= 0) n_threads = cll_physical_cores();
    if (n_threads > 1024) return cll_err(CLL_ERR_ARG, "thread pool: %d threads is too many", n_threads);
    cll_pool *p = calloc(1, sizeof *p);
    if (!p) return cll_err(CLL_ERR_NOMEM, "thread pool: out of memory");
    p->n = n_threads;
    if (n_threads > 1) {
        p->w = calloc((size_t)n_threads - 1, sizeof *p->w);
        if (!p->w) {
            free(p);
            return cll_err(CLL_ERR_NOMEM, "thread pool: out of memory");
        }
    }
    for (int i = 1; i < n_threads; i++) {
        worker *w = &p->w[i - 1];
        w->pool = p;
        int rc = pthread_create(&w->tid, NULL, worker_main, w);
        if (rc) {
            p->n = i; /* only the started ones get joined */
            cll_pool_free(p);
            return cll_err(CLL_ERR_INTERNAL, "thread pool: pthread_create: %s", strerror(rc));
        }
    }
    *out = p;
    return CLL_OK;
}

void cll_pool_free(cll_pool *p) {
    if (!p) return;
    if (p->n > 1) {
        atomic_store(&p->stop, 1);
        atomic_fetch_add(&p->gen, 1);
        futex(&p->gen, FUTEX_WAKE_PRIVATE, INT_MAX);
        for (int i = 1; i < p->n; i++) pthread_join(p->w[i - 1].tid, NULL);
    }
    free(p->w);
    free(p);
}

int cll_pool_size(const cll_pool *p) { return p ? p->n : 1; }

void cll_pool_run_chunks(cll_pool *p, cll_task_fn fn, void *arg, int n_chunks) {
    if (n_chunks <= 0) return;
    if (!p || p->n == 1 || n_chunks == 1) {
        for (int c = 0; c < n_chunks; c++) fn(arg, c, n_chunks);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    p->n_chunks = n_chunks;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    const uint32_t g = atomic_load_explicit(&p->gen, memory_order_relaxed) + 1;
    atomic_store_explicit(&p->ticket, ((uint64_t)g << 32) | (uint32_t)n_chunks, memory_order_release);
    atomic_store(&p->gen, g); /* seq_cst: publishes the task, then the sleepers check below */
    if (atomic_load(&p->sleepers) > 0) futex(&p->gen, FUTEX_WAKE_PRIVATE, INT_MAX);
    run_chunks(p);
    /* every chunk is claimed; wait for the ones other threads are still running */
    const uint32_t all = (uint32_t)n_chunks;
    uint32_t d = atomic_load_explicit(&p->done, memory_order_acquire);
    if (d == all) return;
    int64_t t0 = 0;
    for (unsigned i = 0; d != all; i++) {
        CPU_RELAX();
        if ((i & 255) == 255) {
            const int64_t t = now_ns();
            if (!t0) t0 = t;
            else if (t - t0 > SPIN_NS) break;
            if (t - t0 > YIELD_NS) sched_yield();
        }
        d = atomic_load_explicit(&p->done, memory_order_acquire);
    }
    if (d != all) {
        atomic_store(&p->main_sleeping, 1);
        while ((d = atomic_load(&p->done)) != all) futex(&p->done, FUTEX_WAIT_PRIVATE, d);
        atomic_store(&p->main_sleeping, 0);
    }
}

void cll_pool_run(cll_pool *p, cll_task_fn fn, void *arg) { cll_pool_run_chunks(p, fn, arg, p ? p->n : 1); }

/* ---- an abortable barrier ----------------------------------------------------------------------- */

struct cll_barrier {
    int n, arrived;
    uint64_t gen;
    bool aborted;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

cll_status cll_barrier_create(int n, cll_barrier **out) {
    *out = NULL;
    if (n < 1) return cll_err(CLL_ERR_ARG, "barrier of %d threads", n);
    cll_barrier *b = calloc(1, sizeof *b);
    if (!b) return cll_err(CLL_ERR_NOMEM, "barrier: out of memory");
    b->n = n;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    *out = b;
    return CLL_OK;
}

void cll_barrier_free(cll_barrier *b) {
    if (!b) return;
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    free(b);
}

bool cll_barrier_wait(cll_barrier *b) {
    pthread_mutex_lock(&b->mu);
    if (b->aborted) {
        pthread_mutex_unlock(&b->mu);
        return false;
    }
    const uint64_t gen = b->gen;
    if (++b->arrived == b->n) {
        b->arrived = 0;
        b->gen++;
        pthread_cond_broadcast(&b->cv);
    } else {
        while (b->gen == gen && !b->aborted) pthread_cond_wait(&b->cv, &b->mu);
    }
    const bool ok = b->gen != gen;
    pthread_mutex_unlock(&b->mu);
    return ok;
}

cll_status cll_barrier_meet(cll_barrier *b, int32_t rank) {
    if (cll_barrier_wait(b)) return CLL_OK;
    return cll_err(CLL_ERR_INTERNAL, "tensor parallel: rank %d's all-reduce was abandoned (another rank failed)", rank);
}

void cll_barrier_abort(cll_barrier *b, bool on) {
    if (!b) return;
    pthread_mutex_lock(&b->mu);
    b->aborted = on;
    if (!on) b->arrived = 0;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}
