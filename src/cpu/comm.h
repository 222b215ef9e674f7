/* cpu/comm: the CPU driver's communicator for a tensor-parallel context (model/driver.h comm_*):
 * the ranks are host threads of one process (the tp driver runs each rank's forward on its own
 * thread), and an all-reduce sums their float rows in place.
 * Owns: the group's lock and the rank table. Rule: every rank calls every all-reduce in the same
 * order with the same count; the sum runs in rank order (rank 0 + rank 1 + ...), so every rank
 * ends with the same bits and a run is deterministic; n == 1 returns at once (TP=1 is the
 * unsplit forward bit for bit). */
#ifndef CLL_CPU_COMM_H
#define CLL_CPU_COMM_H

#include "core/core.h"

typedef struct cll_cpu_comm cll_cpu_comm;

cll_status cll_cpu_comm_create(int32_t n, cll_cpu_comm **out);
void cll_cpu_comm_free(cll_cpu_comm *c);
/* buf (count floats) of every rank becomes the element-wise sum over the ranks; blocks until
 * every rank has called. CLL_ERR_INTERNAL when the group was aborted (another rank failed). */
cll_status cll_cpu_comm_allreduce(cll_cpu_comm *c, int32_t rank, float *buf, int64_t count);
/* on: wake every waiting rank with an error, and fail every later call until reset (off), which the
 * caller makes once every rank has returned */
void cll_cpu_comm_abort(cll_cpu_comm *c, bool on);
/* all-reduces run so far (one per call of rank 0) and the floats they summed */
void cll_cpu_comm_stats(const cll_cpu_comm *c, uint64_t *calls, uint64_t *floats);

#endif
