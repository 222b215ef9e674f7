/* kernels/registry: the table of kernel variants ("rows") of a backend and the dispatch
 * rule: filter rows by ISA + supports(), then take the row an override names for the
 * site (tune sidecar hook, or env CLLAMA_KERNEL for forcing), else the first default row.
 * Owns the override table (set by the sidecar reader or a user pin) and the CPU feature probe.
 * Rule: the tests, the benchmark and `cllama kernels` walk the same rows dispatch uses. */
#ifndef CLL_KERNELS_REGISTRY_H
#define CLL_KERNELS_REGISTRY_H

#include "core/core.h"

/* ops a row serves (bits) */
enum { CLL_KOP_GEMV = 1u, CLL_KOP_GEMM = 2u, CLL_KOP_MATMUL = 3u };

/* CPU features a row may require (bits); cll_kernels_cpu_features() probes CPUID+XGETBV */
enum {
    CLL_ISA_AVX2 = 1u << 0,   /* with FMA, F16C, BMI2 (the *_avx2.c flag set) */
    CLL_ISA_AVX512 = 1u << 1, /* F, BW, VL, DQ */
    CLL_ISA_VNNI = 1u << 2,   /* AVX512-VNNI */
};
uint32_t cll_kernels_cpu_features(void);
/* "scalar", "avx2", "avx512vnni"... for the listing; buf must hold 48 bytes */
const char *cll_kernels_isa_str(uint32_t isa, char *buf, size_t cap);

typedef struct {
    uint32_t wtype;   /* GGML type id of the weight */
    int64_t rows;     /* output features */
    int64_t cols;     /* K */
    uint32_t features;/* what the CPU (or device) offers */
} cll_kernel_shape;

typedef struct cll_kernel_row cll_kernel_row;
struct cll_kernel_row {
    const char *name;   /* describes the kernel: gemm_q4_0_avx2_r8x4 */
    uint32_t op;        /* CLL_KOP_* bits */
    uint32_t wtype;
    uint32_t isa;       /* CLL_ISA_* bits required */
    const char *params; /* human-readable parameters: "layout=r8 tile=8x4" */
    int layout;         /* backend-defined weight layout id; 0 = as stored in the file */
    int interleave;     /* rows interleaved by the layout (1 = plain) */
    bool (*supports)(const cll_kernel_row *row, const cll_kernel_shape *s); /* NULL: ISA only */
    bool bit_exact;     /* bit-exact with the site's default row */
    bool is_default;
    const void *impl;   /* backend-specific entry points */
};

typedef struct cll_kernel_table {
    const char *backend; /* "cpu" */
    const cll_kernel_row *rows;
    size_t n;
} cll_kernel_table;

/* ISA bits present and supports() true */
bool cll_kernel_row_supported(const cll_kernel_row *r, const cll_kernel_shape *s);

/* Pick the row for op (one bit) at shape s among rows of the given layout (layout < 0:
 * any). *forced (may be NULL) tells whether an override chose it. NULL if no row fits. */
const cll_kernel_row *cll_kernels_select(const cll_kernel_table *t, uint32_t op, const cll_kernel_shape *s,
                                         int layout, bool *forced);
/* the site name of (backend, op, type): "cpu/gemv/q4_0" */
const char *cll_kernels_site(const cll_kernel_table *t, uint32_t op, uint32_t wtype, char *buf, size_t cap);

/* Override hook: force row `name` at `site` ("cpu/gemv/q4_0"); name NULL removes it.
 * A forced row that does not support a shape falls back to the default with one loud
 * warning line. Env CLLAMA_KERNEL=name[,name...] forces rows at every site of their
 * op and type. */
cll_status cll_kernels_set_override(const char *site, const char *name);
void cll_kernels_clear_overrides(void);

/* Numerics scope of the calling thread: while tag is set (e.g. "ggml"), dispatch on this
 * thread takes, at every site, the supported row whose params carry "numerics=<tag>" before
 * any override or default; a site with no such row keeps its usual row (one warning line).
 * A model loaded in a reference-numerics mode sets it around its weight preparation only,
 * so other models (and other threads) are untouched. NULL or "" ends the scope. */
void cll_kernels_numerics_scope(const char *tag);

#endif
