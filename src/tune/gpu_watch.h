/* tune/gpu_watch: other processes on the GPU and its SM clock, for the CUDA races (NVML at run
 * time; see gpu_watch.c). Device 0. */
#ifndef CLL_TUNE_GPU_WATCH_H
#define CLL_TUNE_GPU_WATCH_H

#include <stdbool.h>
#include <stddef.h>

/* NVML could be opened and device 0 found */
bool cll_gpu_watch_available(void);
/* the current SM clock in MHz (0: unobserved); *max_mhz its maximum (may be NULL) */
int cll_gpu_watch_sm_clock(int *max_mhz);
/* compute processes on the GPU other than this one (-1: unobserved); buf lists their pids */
int cll_gpu_watch_foreign(char *buf, size_t cap);

#endif
