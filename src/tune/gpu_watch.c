/* tune/gpu_watch: what a CUDA race must know about the GPU besides its own work: other processes
 * computing on it (no race then) and the SM clock during a round (a throttled round is redone).
 * Through NVML, opened at run time (dlopen of libnvidia-ml.so.1, which the driver installs), so
 * nothing links against it and a machine without it says "unobserved".
 * Owns the library handle (opened once per process). Rule: an answer that cannot be had is
 * reported as such, never guessed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tune/gpu_watch.h"

typedef int (*nvml_init_fn)(void);
typedef int (*nvml_handle_fn)(unsigned, void **);
typedef int (*nvml_clock_fn)(void *, int, unsigned *);
typedef struct {
    unsigned pid;
    unsigned long long used;
    unsigned gi, ci;
} nvml_proc; /* nvmlProcessInfo_t (v2 layout) */
typedef int (*nvml_procs_fn)(void *, unsigned *, nvml_proc *);

static struct {
    int state; /* 0 untried, 1 ready, -1 unavailable */
    void *dev;
    nvml_clock_fn clock, max_clock;
    nvml_procs_fn procs;
} g;

static bool ready(void) {
    if (g.state) return g.state > 0;
    g.state = -1;
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return false;
    nvml_init_fn init = (nvml_init_fn)dlsym(h, "nvmlInit_v2");
    nvml_handle_fn handle = (nvml_handle_fn)dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
    g.clock = (nvml_clock_fn)dlsym(h, "nvmlDeviceGetClockInfo");
    g.max_clock = (nvml_clock_fn)dlsym(h, "nvmlDeviceGetMaxClockInfo");
    g.procs = (nvml_procs_fn)dlsym(h, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (!g.procs) g.procs = (nvml_procs_fn)dlsym(h, "nvmlDeviceGetComputeRunningProcesses_v2");
    if (!init || !handle || !g.clock || !g.max_clock || init() != 0 || handle(0, &g.dev) != 0) return false;
    g.state = 1;
    return true;
}

bool cll_gpu_watch_available(void) { return ready(); }

/* NVML_CLOCK_SM = 1 */
int cll_gpu_watch_sm_clock(int *max_mhz) {
    if (max_mhz) *max_mhz = 0;
    if (!ready()) return 0;
    unsigned now = 0, mx = 0;
    if (g.clock(g.dev, 1, &now) != 0) return 0;
    if (max_mhz && g.max_clock(g.dev, 1, &mx) == 0) *max_mhz = (int)mx;
    return (int)now;
}

int cll_gpu_watch_foreign(char *buf, size_t cap) {
    if (buf && cap) buf[0] = 0;
    if (!ready() || !g.procs) return -1;
    nvml_proc ps[64];
    unsigned n = 64;
    if (g.procs(g.dev, &n, ps) != 0) return -1;
    int foreign = 0;
    size_t o = 0;
    const unsigned me = (unsigned)getpid();
    for (unsigned i = 0; i < n && i < 64; i++) {
        if (ps[i].pid == me) continue;
        foreign++;
        if (buf && o + 24 < cap) o += (size_t)snprintf(buf + o, cap - o, "%spid %u", o ? ", " : "", ps[i].pid);
    }
    return foreign;
}
