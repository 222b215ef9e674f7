/* cpu/comm: an in-process all-reduce for the ranks of a tensor-parallel context (comm.h).
 * Two barriers a call: after the first every rank's buffer is posted; rank k then sums the k-th
 * chunk of the elements over all buffers (rank order) and writes the sum back into every buffer,
 * so each element is read and written by one thread only; after the second barrier every buffer
 * holds the whole sum and may be touched again. */
#include "cpu/comm.h"

#include <pthread.h>
#include <stdlib.h>

#include "core/threads.h"

struct cll_cpu_comm {
    int32_t n;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int32_t arrived;
    uint64_t gen;
    bool aborted;
    float **slot;   /* (n) the posted buffers */
    int64_t *count; /* (n) their lengths (every rank must agree) */
    uint64_t calls, floats;
};

cll_status cll_cpu_comm_create(int32_t n, cll_cpu_comm **out) {
    *out = NULL;
    if (n < 1 || n > 1024) return cll_err(CLL_ERR_ARG, "cpu comm: %d ranks", n);
    cll_cpu_comm *c = calloc(1, sizeof *c);
    if (c) {
        c->slot = calloc((size_t)n, sizeof *c->slot);
        c->count = calloc((size_t)n, sizeof *c->count);
    }
    if (!c || !c->slot || !c->count) {
        cll_cpu_comm_free(c);
        return cll_err(CLL_ERR_NOMEM, "cpu comm: out of memory");
    }
    c->n = n;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    *out = c;
    return CLL_OK;
}

void cll_cpu_comm_free(cll_cpu_comm *c) {
    if (!c) return;
    if (c->slot && c->count) {
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->cv);
    }
    free(c->slot);
    free(c->count);
    free(c);
}

/* false when the group is (or becomes) aborted */
static bool barrier(cll_cpu_comm *c) {
    pthread_mutex_lock(&c->mu);
    if (c->aborted) {
        pthread_mutex_unlock(&c->mu);
        return false;
    }
    const uint64_t gen = c->gen;
    if (++c->arrived == c->n) {
        c->arrived = 0;
        c->gen++;
        pthread_cond_broadcast(&c->cv);
    } else {
        while (c->gen == gen && !c->aborted) pthread_cond_wait(&c->cv, &c->mu);
    }
    const bool ok = c->gen != gen;
    pthread_mutex_unlock(&c->mu);
    return ok;
}

cll_status cll_cpu_comm_allreduce(cll_cpu_comm *c, int32_t rank, float *buf, int64_t count) {
    if (!c || rank < 0 || rank >= c->n || (count > 0 && !buf))
        return cll_err(CLL_ERR_ARG, "cpu comm: all-reduce by rank %d", rank);
    if (c->n == 1) {
        c->calls++;
        c->floats += (uint64_t)count;
        return CLL_OK;
    }
    c->slot[rank] = buf;
    c->count[rank] = count;
    if (!barrier(c)) return cll_err(CLL_ERR_INTERNAL, "tensor parallel: rank %d's all-reduce was abandoned (another rank failed)", rank);
    for (int32_t r = 1; r < c->n; r++)
        if (c->count[r] != c->count[0]) {
            cll_cpu_comm_abort(c, true);
            return cll_err(CLL_ERR_INTERNAL, "tensor parallel: ranks all-reduce %lld and %lld floats",
                           (long long)c->count[0], (long long)c->count[r]);
        }
    int64_t b, e;
    cll_split(count, rank, c->n, &b, &e);
    for (int64_t j = b; j < e; j++) {
        float s = c->slot[0][j];
        for (int32_t r = 1; r < c->n; r++) s += c->slot[r][j];
        for (int32_t r = 0; r < c->n; r++) c->slot[r][j] = s;
    }
    if (rank == 0) {
        c->calls++;
        c->floats += (uint64_t)count;
    }
    if (!barrier(c)) return cll_err(CLL_ERR_INTERNAL, "tensor parallel: rank %d's all-reduce was abandoned (another rank failed)", rank);
    return CLL_OK;
}

void cll_cpu_comm_abort(cll_cpu_comm *c, bool on) {
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    c->aborted = on;
    if (!on) c->arrived = 0;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

void cll_cpu_comm_stats(const cll_cpu_comm *c, uint64_t *calls, uint64_t *floats) {
    *calls = c ? c->calls : 0;
    *floats = c ? c->floats : 0;
}
