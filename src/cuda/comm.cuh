/* cuda/comm: the NCCL communicator of a tensor-parallel context (comm.cu). The driver table's
 * comm_create / comm_free / comm_abort are the extern "C" entry points; a rank's forward calls
 * cll_cu_comm_allreduce on its stream (capturable into its step graph). */
#ifndef CLL_CUDA_COMM_CUH
#define CLL_CUDA_COMM_CUH

#include "cuda/common.cuh"

extern "C" {
#include "model/driver.h"
}

#define CLL_CU_COMM_MAX 16

extern "C" cll_status cll_cu_comm_create(int32_t n, const int32_t *devices, cll_driver_comm **out);
extern "C" void cll_cu_comm_free(cll_driver_comm *c);
extern "C" void cll_cu_comm_abort(cll_driver_comm *c, bool on);
/* buf (count floats on rank's GPU) becomes the sum over the ranks, enqueued on st; on NCCL, between
 * cll_cu_comm_enter and cll_cu_comm_leave */
cll_status cll_cu_comm_allreduce(cll_driver_comm *c, int32_t rank, float *buf, int64_t count, cudaStream_t st);
/* a rank's launches of a step or a capture (anything that enqueues an NCCL collective, or a graph holding
 * one) run between enter and leave, so an abort (which frees the communicators) never overlaps them; a
 * communicator already aborted: false and a message (the launches must not run). Nothing between them may
 * wait for the GPU: the abort is what frees a rank waiting on a peer that failed. No-ops for one rank and
 * for the one-GPU simulated split (its barrier aborts by itself). */
bool cll_cu_comm_enter(cll_driver_comm *c);
void cll_cu_comm_leave(cll_driver_comm *c);
/* the communicators were aborted (a rank failed): graphs that captured them must not be destroyed (NCCL's
 * clean-up of a captured collective would touch the freed communicator): a failed context leaks them */
bool cll_cu_comm_failed(const cll_driver_comm *c);
int32_t cll_cu_comm_size(const cll_driver_comm *c);
/* false for the one-GPU simulated split (its all-reduce meets at a host barrier): its ranks' steps run
 * eagerly, never from a captured graph */
bool cll_cu_comm_capturable(const cll_driver_comm *c);

#endif
