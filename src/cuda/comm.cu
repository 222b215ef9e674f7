/* cuda/comm: the CUDA driver's communicator for a tensor-parallel context (model/driver.h comm_*):
 * one NCCL communicator per GPU of the context, made together (ncclCommInitAll: one process drives
 * every GPU, a thread per rank), and an all-reduce (sum of f32 rows, in place) that a rank's forward
 * enqueues on its stream, inside its captured step graph too.
 * NCCL is loaded at run time (dlopen "libnccl.so.2", the library the machine's CUDA image ships),
 * so the binary starts, and runs unsplit, where it is absent; only a split asks for it.
 * Every rank on one GPU (--devices 0,0): the simulated split, with no NCCL: the ranks' threads meet at
 * a host barrier, each stream waits for the others' partial rows (events), and each rank sums its
 * chunk of the elements over every rank's buffer, in rank order, writing the sum into all of them (one
 * reader and writer per element, as the CPU's group); a second barrier and event wait keep any rank
 * from touching its rows before every chunk is written. The barrier is on the host, so these ranks
 * run their steps eagerly (cll_cu_comm_capturable: false), slower; it is a proof of the split's math
 * with the real kernels on the one-GPU machine, not a way to run a model.
 * Lifetime (NCCL's rules for one thread driving several ranks): the communicators are finalized together
 * inside one NCCL group, then destroyed (ncclCommDestroy of one rank alone is a collective that would wait
 * for the others); an abort (a rank failed while others may wait for it in a collective) aborts them all
 * in one group. First it marks the communicator failed, so no rank starts enqueuing again; then it takes
 * the write side of a lock whose read side each rank holds while it enqueues (so no rank is inside NCCL,
 * or launching a graph that holds a collective, while the communicators are freed), but for at most
 * CLL_CU_COMM_ABORT_WAIT_S: a rank still inside an NCCL call then is one blocked waiting for the failed
 * peer on the host, which only the abort (NCCL's abort flag) releases.
 * NCCL_RUNTIME_CONNECT=0 (unless set): every connection is made inside ncclCommInitAll, none lazily at
 * a collective's first enqueue, where it would be a handshake with peers in the middle of a capture.
 * Owns: the communicators. The library stays loaded for the process (NCCL's own threads outlive a
 * communicator). Rule: NVLink multicast stays off: NCCL_NVLS_ENABLE is set to 0 before the
 * communicators exist (it can take a host's shared GPUs out of service), and nothing here calls
 * cuMulticastCreate. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cuda/comm.cuh"

extern "C" {
#include "core/threads.h"
}

/* the NCCL C ABI (stable since 2.0): the few entry points and constants used here */
typedef struct nccl_comm *nccl_comm_t;
typedef int nccl_result_t; /* ncclSuccess = 0 */
enum { NCCL_FLOAT32 = 7, NCCL_SUM = 0 };
#define CLL_CU_COMM_ABORT_WAIT_S 2 /* how long an abort waits for the ranks still enqueuing */
typedef nccl_result_t (*fn_init_all)(nccl_comm_t *comms, int ndev, const int *devlist);
typedef nccl_result_t (*fn_all_reduce)(const void *send, void *recv, size_t count, int dtype, int op, nccl_comm_t comm,
                                       cudaStream_t stream);
typedef nccl_result_t (*fn_comm)(nccl_comm_t comm);
typedef const char *(*fn_err)(nccl_result_t r);
typedef nccl_result_t (*fn_version)(int *v);
typedef nccl_result_t (*fn_void)(void);

/* libnccl.so.2's entry points, loaded once for the process (never unloaded) */
static pthread_once_t g_nccl_once = PTHREAD_ONCE_INIT;
static struct {
    void *lib;
    char why[256];
    fn_init_all init_all;
    fn_all_reduce all_reduce;
    fn_comm destroy, abort_, finalize; /* finalize: NCCL >= 2.14 */
    fn_void group_start, group_end;
    fn_err err;
    int version;
} g_nccl; /* zero until nccl_load */

static void nccl_load(void) {
    g_nccl.lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!g_nccl.lib) {
        const char *why = dlerror();
        snprintf(g_nccl.why, sizeof g_nccl.why, "%s", why ? why : "not found");
        return;
    }
    void *l = g_nccl.lib;
    g_nccl.init_all = (fn_init_all)dlsym(l, "ncclCommInitAll");
    g_nccl.all_reduce = (fn_all_reduce)dlsym(l, "ncclAllReduce");
    g_nccl.destroy = (fn_comm)dlsym(l, "ncclCommDestroy");
    g_nccl.abort_ = (fn_comm)dlsym(l, "ncclCommAbort");
    g_nccl.finalize = (fn_comm)dlsym(l, "ncclCommFinalize");
    g_nccl.group_start = (fn_void)dlsym(l, "ncclGroupStart");
    g_nccl.group_end = (fn_void)dlsym(l, "ncclGroupEnd");
    g_nccl.err = (fn_err)dlsym(l, "ncclGetErrorString");
    fn_version ver = (fn_version)dlsym(l, "ncclGetVersion");
    if (ver) ver(&g_nccl.version);
    if (!g_nccl.init_all || !g_nccl.all_reduce || !g_nccl.destroy || !g_nccl.abort_ || !g_nccl.group_start ||
        !g_nccl.group_end) {
        snprintf(g_nccl.why, sizeof g_nccl.why,
                 "libnccl.so.2 lacks ncclCommInitAll / ncclAllReduce / ncclCommDestroy / ncclCommAbort / ncclGroupStart / "
                 "ncclGroupEnd");
        g_nccl.init_all = NULL;
    }
}

struct cll_driver_comm {
    int32_t n;
    int32_t devices[CLL_CU_COMM_MAX];
    nccl_comm_t comm[CLL_CU_COMM_MAX];
    bool nccl;                 /* the communicators exist (several GPUs) */
    pthread_rwlock_t lock;     /* read: a rank enqueuing; write: the abort */
    pthread_mutex_t abort_mu;  /* one abort, however many ranks fail */
    int failed;  /* (atomic) a rank failed: nothing enqueues from now on */
    bool aborted; /* the communicators are gone (under abort_mu) */
    /* every rank on one GPU: the simulated split (no NCCL) */
    bool local;
    cll_barrier *bar;
    float *buf[CLL_CU_COMM_MAX];
    int64_t cnt[CLL_CU_COMM_MAX];
    cudaEvent_t ev_a[CLL_CU_COMM_MAX], ev_b[CLL_CU_COMM_MAX];
};

typedef struct {
    float *p[CLL_CU_COMM_MAX];
} ptrs_t;

/* elements [b, e) of every rank's rows: their sum in rank order, written back to all of them */
__global__ static void local_sum_kernel(ptrs_t bufs, int32_t n, int64_t b, int64_t e) {
    for (int64_t j = b + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < e; j += (int64_t)gridDim.x * blockDim.x) {
        float v = bufs.p[0][j];
        for (int32_t r = 1; r < n; r++) v = __fadd_rn(v, bufs.p[r][j]);
        for (int32_t r = 0; r < n; r++) bufs.p[r][j] = v;
    }
}

/* a failing call inside the protocol abandons the group (the other ranks must not wait for this one) */
#define LTRY(call)                                                                                           \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            cll_barrier_abort(c->bar, true);                                                                 \
            return cll_err(CLL_ERR_DEVICE, "%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
        }                                                                                                    \
    } while (0)

static cll_status local_allreduce(cll_driver_comm *c, int32_t rank, float *buf, int64_t count, cudaStream_t st) {
    c->buf[rank] = buf;
    c->cnt[rank] = count;
    cll_status st_;
    LTRY(cudaEventRecord(c->ev_a[rank], st));
    if ((st_ = cll_barrier_meet(c->bar, rank)) != CLL_OK) return st_;
    for (int32_t q = 0; q < c->n; q++) {
        if (c->cnt[q] != count) {
            cll_cu_comm_abort(c, true);
            return cll_err(CLL_ERR_INTERNAL, "tensor parallel: ranks all-reduce %lld and %lld floats", (long long)count,
                           (long long)c->cnt[q]);
        }
        if (q != rank) LTRY(cudaStreamWaitEvent(st, c->ev_a[q], 0));
    }
    ptrs_t p;
    memset(&p, 0, sizeof p);
    for (int32_t q = 0; q < c->n; q++) p.p[q] = c->buf[q];
    const int64_t per = count / c->n, rem = count % c->n;
    const int64_t b = rank * per + (rank < rem ? rank : rem), e = b + per + (rank < rem ? 1 : 0);
    if (e > b) {
        const int64_t blocks = cll_cdiv(e - b, 256);
        local_sum_kernel<<<(unsigned)(blocks < 1024 ? blocks : 1024), 256, 0, st>>>(p, c->n, b, e);
        LTRY(cudaGetLastError());
    }
    LTRY(cudaEventRecord(c->ev_b[rank], st));
    if ((st_ = cll_barrier_meet(c->bar, rank)) != CLL_OK) return st_;
    for (int32_t q = 0; q < c->n; q++)
        if (q != rank) LTRY(cudaStreamWaitEvent(st, c->ev_b[q], 0));
    return CLL_OK;
}

static void local_free(cll_driver_comm *c) {
    for (int32_t r = 0; r < c->n; r++) {
        if (c->ev_a[r]) cudaEventDestroy(c->ev_a[r]);
        if (c->ev_b[r]) cudaEventDestroy(c->ev_b[r]);
    }
    cll_barrier_free(c->bar);
}

static const char *nccl_err(nccl_result_t r) { return g_nccl.err ? g_nccl.err(r) : "unknown NCCL error"; }

extern "C" cll_status cll_cu_comm_create(int32_t n, const int32_t *devices, cll_driver_comm **out) {
    *out = NULL;
    if (n < 1 || n > CLL_CU_COMM_MAX) return cll_err(CLL_ERR_ARG, "cuda comm: %d GPUs (1 to %d)", n, CLL_CU_COMM_MAX);
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess) {
        cudaGetLastError();
        ndev = 0;
    }
    for (int32_t r = 0; r < n; r++)
        if (devices[r] < 0 || devices[r] >= ndev)
            return cll_err(CLL_ERR_ARG, "cuda comm: rank %d asks for GPU %d; %d %s visible", r, devices[r], ndev,
                           ndev == 1 ? "is" : "are");
    cll_driver_comm *c = (cll_driver_comm *)calloc(1, sizeof *c);
    if (!c) return cll_err(CLL_ERR_NOMEM, "cuda comm: out of memory");
    c->n = n;
    for (int32_t r = 0; r < n; r++) c->devices[r] = devices[r];
    if (n == 1) { /* one rank: nothing to reduce, no library needed */
        *out = c;
        return CLL_OK;
    }
    bool all_same = true, unique = true;
    for (int32_t r = 1; r < n; r++) {
        all_same &= devices[r] == devices[0];
        for (int32_t q = 0; q < r; q++) unique &= devices[q] != devices[r];
    }
    if (all_same) { /* the simulated split on one GPU */
        c->local = true;
        if (cll_barrier_create(n, &c->bar) != CLL_OK) {
            free(c);
            return cll_err(CLL_ERR_NOMEM, "cuda comm: out of memory");
        }
        cudaError_t e = cudaSetDevice(devices[0]);
        for (int32_t r = 0; r < n && e == cudaSuccess; r++) {
            e = cudaEventCreateWithFlags(&c->ev_a[r], cudaEventDisableTiming);
            if (e == cudaSuccess) e = cudaEventCreateWithFlags(&c->ev_b[r], cudaEventDisableTiming);
        }
        if (e != cudaSuccess) {
            local_free(c);
            free(c);
            return cll_err(CLL_ERR_DEVICE, "cuda comm: events for the one-GPU split: %s", cudaGetErrorString(e));
        }
        cll_log_loud("tensor parallel: all %d ranks on GPU %d: a simulated split (no NCCL; steps run without graphs, "
                     "slower than one rank): a check of the split, not a speed-up", n, devices[0]);
        *out = c;
        return CLL_OK;
    }
    if (!unique) {
        free(c);
        return cll_err(CLL_ERR_ARG, "cuda comm: a GPU is listed twice (one rank a GPU, or every rank on one GPU to simulate "
                                    "the split)");
    }
    pthread_once(&g_nccl_once, nccl_load);
    if (!g_nccl.init_all) {
        free(c);
        return cll_err(CLL_ERR_UNSUPPORTED, "tensor parallel over %d GPUs needs NCCL (libnccl.so.2): %s", n, g_nccl.why);
    }
    /* multicast off, whatever the environment says (see the file comment) */
    const char *nv = getenv("NCCL_NVLS_ENABLE");
    if (nv && strcmp(nv, "0")) cll_log_loud("NCCL_NVLS_ENABLE=%s overridden to 0: cllama never uses NVLink multicast", nv);
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    setenv("NCCL_RUNTIME_CONNECT", "0", 0); /* every connection made at init (see the file comment) */
    if (pthread_rwlock_init(&c->lock, NULL)) {
        free(c);
        return cll_err(CLL_ERR_NOMEM, "cuda comm: cannot make its lock");
    }
    pthread_mutex_init(&c->abort_mu, NULL);
    const nccl_result_t r = g_nccl.init_all(c->comm, n, devices);
    if (r != 0) {
        pthread_rwlock_destroy(&c->lock);
        pthread_mutex_destroy(&c->abort_mu);
        free(c);
        return cll_err(CLL_ERR_DEVICE, "ncclCommInitAll over %d GPUs: %s", n, nccl_err(r));
    }
    c->nccl = true;
    cll_log(CLL_LOG_INFO, "tensor parallel: NCCL %d over %d GPUs", g_nccl.version, n);
    *out = c;
    return CLL_OK;
}

extern "C" void cll_cu_comm_free(cll_driver_comm *c) {
    if (!c) return;
    if (c->local) local_free(c);
    if (c->nccl && !c->aborted) {
        /* one thread, several ranks: finalize them together (each is collective), then free each locally */
        if (g_nccl.finalize) {
            g_nccl.group_start();
            for (int32_t r = 0; r < c->n; r++) g_nccl.finalize(c->comm[r]);
            g_nccl.group_end();
        }
        for (int32_t r = 0; r < c->n; r++) g_nccl.destroy(c->comm[r]);
    }
    if (c->nccl) {
        pthread_rwlock_destroy(&c->lock);
        pthread_mutex_destroy(&c->abort_mu);
    }
    free(c);
}

extern "C" void cll_cu_comm_abort(cll_driver_comm *c, bool on) {
    if (c && c->local) { /* the host group: wake the waiters (on), ready again once all returned (off) */
        cll_barrier_abort(c->bar, on);
        return;
    }
    if (!c || !on || !c->nccl) return;
    /* a rank failed while the others may wait in a collective: abort frees them (and the communicators,
     * which cannot be made whole again: the context answers with an error from now on). No rank starts
     * enqueuing after the mark; the write lock waits for those still at it (see the file comment). */
    __atomic_store_n(&c->failed, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&c->abort_mu);
    if (!c->aborted) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += CLL_CU_COMM_ABORT_WAIT_S;
        const bool locked = pthread_rwlock_timedwrlock(&c->lock, &until) == 0;
        if (!locked) cll_log_loud("tensor parallel: a rank is still inside NCCL after %d s; aborting the communicators under it",
                                  CLL_CU_COMM_ABORT_WAIT_S);
        g_nccl.group_start();
        for (int32_t r = 0; r < c->n; r++) g_nccl.abort_(c->comm[r]);
        g_nccl.group_end();
        c->aborted = true;
        if (locked) pthread_rwlock_unlock(&c->lock);
    }
    pthread_mutex_unlock(&c->abort_mu);
}

bool cll_cu_comm_enter(cll_driver_comm *c) {
    if (!c || !c->nccl) return true;
    pthread_rwlock_rdlock(&c->lock);
    if (!__atomic_load_n(&c->failed, __ATOMIC_SEQ_CST)) return true;
    pthread_rwlock_unlock(&c->lock);
    cll_err(CLL_ERR_DEVICE, "tensor parallel: the GPUs' communicator was aborted after a rank failed; make a new context");
    return false;
}

void cll_cu_comm_leave(cll_driver_comm *c) {
    if (c && c->nccl) pthread_rwlock_unlock(&c->lock);
}

bool cll_cu_comm_failed(const cll_driver_comm *c) {
    return c && c->nccl && __atomic_load_n(&c->failed, __ATOMIC_SEQ_CST);
}

/* on NCCL the caller is between cll_cu_comm_enter and leave (so the communicator is whole) */
cll_status cll_cu_comm_allreduce(cll_driver_comm *c, int32_t rank, float *buf, int64_t count, cudaStream_t st) {
    if (!c || c->n == 1 || count == 0) return CLL_OK;
    if (c->local) return local_allreduce(c, rank, buf, count, st);
    if (rank < 0 || rank >= c->n) return cll_err(CLL_ERR_ARG, "cuda comm: rank %d of %d", rank, c->n);
    const nccl_result_t r = g_nccl.all_reduce(buf, buf, (size_t)count, NCCL_FLOAT32, NCCL_SUM, c->comm[rank], st);
    if (r != 0) return cll_err(CLL_ERR_DEVICE, "ncclAllReduce of %lld floats on rank %d: %s", (long long)count, rank, nccl_err(r));
    return CLL_OK;
}

int32_t cll_cu_comm_size(const cll_driver_comm *c) { return c ? c->n : 1; }
bool cll_cu_comm_capturable(const cll_driver_comm *c) { return !c || !c->local; }
