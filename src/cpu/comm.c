/* cpu/comm: an in-process all-reduce for the ranks of a tensor-parallel context (comm.h).
 * Two barriers a call: after the first every rank's buffer is posted; rank k then sums the k-th
 * chunk of the elements over all buffers (rank order) and writes the sum back into every buffer,
 * so each element is read and written by one thread only; after the second barrier every buffer
 * holds the whole sum and may be touched again. */
#include "cpu/comm.h"

#include <stdlib.h>

#include "core/threads.h"

struct cll_cpu_comm {
    int32_t n;
    cll_barrier *bar;
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
    if (!c || !c->slot || !c->count || cll_barrier_create(n, &c->bar) != CLL_OK) {
        cll_cpu_comm_free(c);
        return cll_err(CLL_ERR_NOMEM, "cpu comm: out of memory");
    }
    c->n = n;
    *out = c;
    return CLL_OK;
}

void cll_cpu_comm_free(cll_cpu_comm *c) {
    if (!c) return;
    cll_barrier_free(c->bar);
    free(c->slot);
    free(c->count);
    free(c);
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
    cll_status st;
    if ((st = cll_barrier_meet(c->bar, rank)) != CLL_OK) return st;
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
    if ((st = cll_barrier_meet(c->bar, rank)) != CLL_OK) return st;
    return CLL_OK;
}

void cll_cpu_comm_abort(cll_cpu_comm *c, bool on) {
    if (c) cll_barrier_abort(c->bar, on);
}

void cll_cpu_comm_stats(const cll_cpu_comm *c, uint64_t *calls, uint64_t *floats) {
    *calls = c ? c->calls : 0;
    *floats = c ? c->floats : 0;
}
