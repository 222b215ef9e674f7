/* model/driver: the one interface every backend driver implements (cpu/, cuda/).
 * A driver prepares a bound model for its device (repack or upload), creates per-context
 * state (KV cache + activations, sized once), and runs a forward over a batch of tokens of
 * one or more sequences, returning logits rows or on-device greedy ids.
 * Owns nothing itself: a cll_driver is a const table of entry points.
 * Rule: session/ talks to drivers only through this header; no driver internals leak up. */
#ifndef CLL_MODEL_DRIVER_H
#define CLL_MODEL_DRIVER_H

#include "model/model.h"

typedef struct cll_driver_model cll_driver_model; /* a driver's prepared weights */
typedef struct cll_driver_state cll_driver_state; /* a driver's KV cache + activations */
typedef struct cll_driver_comm cll_driver_comm;   /* a driver's communicator among tensor-parallel ranks */
typedef struct cll_driver cll_driver;

typedef struct {
    int n_threads;      /* CPU: load-time threads (repack); 0 = default */
    bool ggml_numerics; /* CPU: rows that follow ggml-cpu's operation order (kern_ggml.h) */
    bool progress;      /* print load progress on stderr (TTY front ends) */
    int device;         /* CUDA: device ordinal */
    uint64_t mem_limit; /* CUDA: bytes of device memory this model and its contexts may take (0: what is free) */
    /* tensor parallel (the tp driver, tp/driver.h): tp ranks of `inner`, rank r on devices[r]
     * (NULL: 0..tp-1; the CPU's ranks are host threads); ignored by the other drivers */
    int32_t tp;
    const int32_t *devices;
    const cll_driver *inner;
} cll_driver_model_params;

typedef struct {
    int32_t n_ctx;      /* KV positions per sequence */
    int32_t n_seq;      /* sequences, each with its own KV region */
    int32_t n_batch;    /* max tokens per forward */
    int32_t n_out_max;  /* max logits rows per forward */
    int n_threads;      /* CPU: worker threads; 0 = physical cores */
    bool kv_f32;        /* F32 KV cache (goldens); default F16 like llama.cpp */
    bool ggml_numerics; /* CPU reference attention; the caller feeds one token per forward */
    /* paged KV (the session's cll_kvpage, model/kvpage.h): n_cells > 0 sizes the cache as a pool of
     * n_cells cells in blocks of block_cells (a power of two) shared by every sequence, addressed
     * through the block tables each forward carries (cll_driver_batch.blocks); both drivers
     * allocate only the pool. 0: every sequence owns n_ctx cells. */
    int32_t n_cells, block_cells;
    /* tensor parallel: this state is rank `rank` of the ranks joined by comm (made by the same driver's
     * comm_create); its forward all-reduces the partial rows of O, down and the experts' sum through
     * it. NULL: the whole model */
    cll_driver_comm *comm;
    int32_t rank;
} cll_driver_state_params;

typedef struct {
    int32_t n;
    const int32_t *tokens; /* (n) */
    const int32_t *pos;    /* (n) position of each token in its sequence */
    const int32_t *seq;    /* (n) sequence id < n_seq */
    const int8_t *want;    /* (n) nonzero: output for this token; NULL = last token only */
    /* paged KV: the block table of every sequence (n_seq x blocks_stride block ids; the cell of
     * (seq, pos) is blocks[seq * blocks_stride + pos / block_cells] * block_cells + pos % block_cells),
     * covering every (seq, pos) of the batch; blocks_dirty: changed since the last forward. NULL when
     * the state is not paged. */
    const int32_t *blocks;
    int32_t blocks_stride;
    bool blocks_dirty;
    int32_t top_k; /* CLL_OUT_TOPK: candidates per row */
} cll_driver_batch;

/* what a forward hands back for the tokens that want output (in batch order) */
typedef enum {
    CLL_OUT_LOGITS = 0, /* logits (n_want, n_vocab) f32 */
    CLL_OUT_ARGMAX = 1, /* ids (n_want) int32: greedy argmax, lowest id on ties */
    CLL_OUT_TOPK = 2,   /* the top_k best candidates of each row (cll_driver_batch.top_k <= the
                         * driver's topk_max): ids (n_want, top_k) int32, then their logits
                         * (n_want, top_k) f32, descending logit, ties to the lower id */
} cll_driver_out;

/* counters that prove where the work ran (tests read them; a silent fallback must show) */
typedef struct {
    uint64_t forwards;      /* forward calls */
    uint64_t tokens;        /* tokens run */
    uint64_t device_steps;  /* forwards whose every layer ran on the driver's device */
    uint64_t graph_replays; /* CUDA: decode steps replayed from a captured graph */
    uint64_t launches;      /* CUDA: kernel launches recorded per decode step (graph nodes) */
    double device_seconds;  /* CUDA: device time of the forwards (events from the first copy in to the last
                             * copy out); beside the caller's wall time it shows the host's share */
    uint64_t graph_captures; /* CUDA: step graphs captured and instantiated (a batched step's shape, first
                              * repeated) */
    double capture_seconds;  /* CUDA: host time those captures took (inside the steps that made them) */
    uint64_t x_conversions;  /* CUDA: f32-to-f16 input conversions the batch products launched (a graph's at
                              * its capture); a norm or activation kernel writing a product's f16 rows spares one */
    uint64_t allreduces;     /* tensor parallel: all-reduces run (rank 0's count; a graph replay counts its
                              * captured ones) */
    double allreduce_seconds; /* tensor parallel: time the forwards spent in them where the driver can tell (CPU:
                               * host time inside the all-reduce, waits for the other ranks included) */
    int32_t tp;              /* tensor-parallel degree of the state (1: one device) */
} cll_driver_counters;

struct cll_driver {
    const char *name; /* "cpu", "cuda", "tp" */
    /* the prepared model reads no tensor bytes of its cll_model after model_create (CUDA: every weight
     * uploaded): a caller may free host copies it made for it (the tp driver's column slices) */
    bool owns_weights;
    cll_status (*model_create)(const cll_model *m, const cll_driver_model_params *p, cll_driver_model **out);
    void (*model_free)(cll_driver_model *dm);
    /* one line for logs: the kernel picked for a typical site, device name, resident bytes */
    const char *(*model_desc)(const cll_driver_model *dm);
    cll_status (*state_create)(cll_driver_model *dm, const cll_driver_state_params *p, cll_driver_state **out);
    void (*state_free)(cll_driver_state *s);
    size_t (*state_bytes)(const cll_driver_state *s);
    /* Run the batch: K/V of every token land in the cache at (seq, pos) first, so a token sees
     * its own sequence's keys at positions <= its own. out is (n_want, n_vocab) f32 for
     * CLL_OUT_LOGITS or (n_want) int32 for CLL_OUT_ARGMAX. The caller has validated ids,
     * positions and capacity; the driver re-checks the cheap bounds. */
    cll_status (*forward)(cll_driver_state *s, const cll_driver_batch *b, cll_driver_out kind, void *out);
    void (*counters)(const cll_driver_state *s, cll_driver_counters *out);
    int32_t topk_max; /* the most candidates CLL_OUT_TOPK returns per row (0: not served) */
    /* optional: host memory forward's out lands in fastest (CUDA: page-locked, so the logits copy is
     * one DMA, not staged through the driver's bounce buffer); NULL from host_alloc, or no hook: the
     * caller allocates its own. What host_alloc gave goes back through host_free. */
    void *(*host_alloc)(size_t bytes);
    void (*host_free)(void *p);
    /* optional: make ready now what a batched decode step of 2..n_max rows (each its own sequence, every
     * row asking for output) needs before it runs at full speed (CUDA: its step graph, captured here
     * instead of in the steps of a loaded server); NULL: nothing to prepare */
    cll_status (*prepare_batches)(cll_driver_state *s, int32_t n_max);
    /* optional: topk_max for one prepared model, where it depends on it (tp: its inner driver's);
     * NULL: topk_max */
    int32_t (*model_topk_max)(const cll_driver_model *dm);
    /* optional (a driver whose states can be tensor-parallel ranks): the communicator of n ranks, rank r
     * on devices[r], made once per context before its ranks' states and freed after them; comm_abort
     * wakes every rank blocked in it with an error (on) or, once they have all returned, readies it
     * again (off; a driver whose communicator cannot recover answers CLL_ERR_DEVICE from then on) */
    cll_status (*comm_create)(int32_t n, const int32_t *devices, cll_driver_comm **out);
    void (*comm_free)(cll_driver_comm *c);
    void (*comm_abort)(cll_driver_comm *c, bool on);
};

extern const cll_driver cll_cpu_driver;
extern const cll_driver cll_cuda_driver; /* answers "not built" in a build without nvcc */
extern const cll_driver cll_tp_driver;   /* tensor parallel: the ranks of an inner driver (tp/driver.c) */

#endif
