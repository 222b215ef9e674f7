/* threads: fork-join pool. Workers spin on a generation counter for a short while
 * (a decode step issues ~200 joins, so a futex sleep/wake per join would cost tens of
 * microseconds each) and then sleep on a futex so an idle pool burns no CPU. */
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
    int ith;
    pthread_t tid;
} worker;

struct cll_pool {
    int n;                    /* threads including the caller */
    worker *w;                /* (n - 1) workers */
    cll_task_fn fn;
    void *arg;
    _Atomic uint32_t gen;     /* futex word: bumped once per task */
    _Atomic int pending;      /* workers still running the current task */
    _Atomic int sleepers;     /* workers parked in futex_wait on gen */
    _Atomic int main_sleeping;/* the caller parked in futex_wait on done */
    _Atomic uint32_t done;    /* futex word: the generation the last worker finished */
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

static void *worker_main(void *p) {
    worker *me = p;
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
        pool->fn(pool->arg, me->ith, pool->n);
        if (atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel) == 1) {
            atomic_store(&pool->done, seen);
            if (atomic_load(&pool->main_sleeping)) futex(&pool->done, FUTEX_WAKE_PRIVATE, 1);
        }
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
        w->ith = i;
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

void cll_pool_run(cll_pool *p, cll_task_fn fn, void *arg) {
    if (!p || p->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    atomic_store_explicit(&p->pending, p->n - 1, memory_order_relaxed);
    uint32_t g = atomic_fetch_add(&p->gen, 1) + 1; /* seq_cst: publishes fn/arg/pending */
    if (atomic_load(&p->sleepers) > 0) futex(&p->gen, FUTEX_WAKE_PRIVATE, INT_MAX);
    fn(arg, 0, p->n);
    if (atomic_load_explicit(&p->pending, memory_order_acquire) == 0) return;
    if (!spin_until_changed(&p->done, g - 1)) {
        atomic_store(&p->main_sleeping, 1);
        while (atomic_load(&p->done) != g) futex(&p->done, FUTEX_WAIT_PRIVATE, g - 1);
        atomic_store(&p->main_sleeping, 0);
    }
    /* done == g implies pending reached 0 with acq_rel ordering */
    while (atomic_load_explicit(&p->pending, memory_order_acquire) != 0) CPU_RELAX();
}
