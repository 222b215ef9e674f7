/* cpu/matmul: y = x · Wᵀ for every weight format, dispatched through the CPU kernel
 * registry (kernels/registry.h). A weight is "prepared" once at load (it may be repacked
 * into an interleaved layout the chosen kernel wants); the forward calls cll_cpu_matmul
 * with caller-owned scratch, so nothing is allocated per step.
 * Rule: every variant matches the reference (formats to_f32 + the activation quantizer
 * of the type's vec_dot_type) within its declared tolerance; tests walk every row. */
#ifndef CLL_CPU_MATMUL_H
#define CLL_CPU_MATMUL_H

#include "core/core.h"
#include "core/threads.h"

typedef struct cll_cpu_weight cll_cpu_weight;

/* W is (rows x cols): rows output features, cols = K contiguous (GGUF ne[0] = cols,
 * ne[1] = rows). data points into the model map and must outlive the weight. */
cll_status cll_cpu_weight_create(uint32_t type, int64_t rows, int64_t cols, const void *data, cll_cpu_weight **out);
/* The same for one named row of the CPU table (cll_kernels_find(cll_cpu_kernel_table(),
 * name)): no dispatch, overrides or env; the row runs every product of the ops it serves
 * (the other op takes the default row of the row's layout). A row this CPU or this shape
 * cannot run is CLL_ERR_UNSUPPORTED, saying why; nothing falls back. */
struct cll_kernel_row;
cll_status cll_cpu_weight_create_row(const struct cll_kernel_row *row, int64_t rows, int64_t cols, const void *data,
                                     cll_cpu_weight **out);
void cll_cpu_weight_free(cll_cpu_weight *w);
int64_t cll_cpu_weight_rows(const cll_cpu_weight *w);
int64_t cll_cpu_weight_cols(const cll_cpu_weight *w);
const char *cll_cpu_weight_kernel(const cll_cpu_weight *w); /* name of the chosen kernel row (n > 1) */
const char *cll_cpu_weight_gemv_kernel(const cll_cpu_weight *w); /* ... and for n == 1 */
/* the row of 2..cpu.small_n_max tokens beside a chunk-decoding GEMM row (a direct tile, or a one-token row
 * up to its "small-n<=K"), or NULL */
const char *cll_cpu_weight_small_kernel(const cll_cpu_weight *w);
/* the row a matmul of n tokens runs (the GEMV row, the small-n row up to its limit, else the GEMM row) */
const char *cll_cpu_weight_kernel_for(const cll_cpu_weight *w, int64_t n);
/* true when the weight runs from its own repacked copy: the kernels never read `data`
 * again, so the owner of the map may release those pages (madvise MADV_DONTNEED on a
 * file mapping) to keep RSS at one copy of the model */
bool cll_cpu_weight_repacked(const cll_cpu_weight *w);

/* bytes of scratch cll_cpu_matmul needs for n tokens (quantized activations etc.) */
size_t cll_cpu_matmul_scratch(const cll_cpu_weight *w, int64_t n);

/* y (n, rows) = x (n, cols) · Wᵀ ; x rows at stride ldx floats, y rows at stride ldy.
 * Runs on the pool (call from the pool's owner thread, not from inside a task). */
void cll_cpu_matmul(cll_pool *pool, const cll_cpu_weight *w, const float *x, int64_t ldx, int64_t n, float *y,
                    int64_t ldy, void *scratch);

/* Several weights applied to the same x (q/k/v, gate/up): the activations are quantized
 * once and all products run in one fork-join. ys[i] is (n, ldys[i]). scratch must hold
 * the largest cll_cpu_matmul_scratch of the weights. Falls back to one call per weight
 * when the weights read different activation layouts or more than 8 are given. */
void cll_cpu_matmul_many(cll_pool *pool, int nw, const cll_cpu_weight *const *ws, const float *x, int64_t ldx,
                         int64_t n, float *const *ys, const int64_t *ldys, void *scratch);

/* The same with an elementwise epilogue: ep(ep_arg, r0, r1) runs once for every row
 * range [r0, r1) of the outputs, on the thread that just wrote those rows of every ys[i]
 * for all n tokens (SiLU(gate) * up while both are in cache, and no extra fork-join).
 * The ranges cover [0, rows) exactly once; weights of different shapes or activation
 * layouts get the epilogue as a separate pass over the pool. */
typedef void (*cll_cpu_mm_epilogue)(void *ep_arg, int64_t r0, int64_t r1);
void cll_cpu_matmul_many_ep(cll_pool *pool, int nw, const cll_cpu_weight *const *ws, const float *x, int64_t ldx,
                            int64_t n, float *const *ys, const int64_t *ldys, void *scratch, cll_cpu_mm_epilogue ep,
                            void *ep_arg);

/* the CPU kernel registry (every row; `cllama kernels`, tests and kbench walk it) */
struct cll_kernel_table;
const struct cll_kernel_table *cll_cpu_kernel_table(void);

#endif
