/* kernels/registry: the table of kernel variants ("rows") of a backend (cpu, cuda) and the
 * dispatch rule: filter rows by ISA + supports(shape: type, rows, cols, token count, device),
 * then take the row an override names for the site (tune sidecar hook, or env CLLAMA_KERNEL
 * for forcing), else the first default row. Naming a row (cll_kernels_find) is separate from
 * preparing a weight for it, so tests and benches run a row without touching dispatch state.
 * Owns the override table (set by the sidecar reader or a user pin) and the CPU feature probe.
 * Rule: the tests, the benchmark and `cllama kernels` walk the same rows dispatch uses.
 * C and C++ (the CUDA row table includes it): declarations sit inside extern "C". */
#ifndef CLL_KERNELS_REGISTRY_H
#define CLL_KERNELS_REGISTRY_H

#include "core/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ops a row serves (bits) */
/* GEMV: one (or a few) activation rows; GEMM: a block of tokens; MOE: the grouped expert
 * product of a prefill (every expert's tokens in one launch; CUDA) */
enum { CLL_KOP_GEMV = 1u, CLL_KOP_GEMM = 2u, CLL_KOP_MATMUL = 3u, CLL_KOP_MOE = 4u };

/* CPU features a row may require (bits); cll_kernels_cpu_features() probes CPUID+XGETBV */
enum {
    CLL_ISA_AVX2 = 1u << 0,   /* with FMA, F16C, BMI2 (the *_avx2.c flag set) */
    CLL_ISA_AVX512 = 1u << 1, /* F, BW, VL, DQ */
    CLL_ISA_VNNI = 1u << 2,   /* AVX512-VNNI */
};
uint32_t cll_kernels_cpu_features(void);
/* "scalar", "avx2", "avx512vnni"... for the listing; buf must hold 48 bytes */
const char *cll_kernels_isa_str(uint32_t isa, char *buf, size_t cap);

/* where a row runs (cll_kernel_shape.device): the CPU, or a CUDA device named by its sm
 * version, major * 10 + minor (CLL_KDEVICE_CUDA_SM(9, 0) = 90 for an H100/H200) */
enum { CLL_KDEVICE_CPU = 0 };
#define CLL_KDEVICE_CUDA_SM(major, minor) ((int32_t)((major) * 10 + (minor)))

/* what a row is asked to serve. New fields go at the end: rows and shapes are built with
 * positional or designated initializers in C and C++. */
typedef struct {
    uint32_t wtype;   /* GGML type id of the weight */
    int64_t rows;     /* output features */
    int64_t cols;     /* K */
    uint32_t features;/* what the CPU offers (CLL_ISA_* bits); 0 on a CUDA device */
    int64_t n_tokens; /* activation rows per product; 0 = not fixed when choosing (the CPU
                       * picks one GEMM row per weight for every count above 1) */
    int32_t device;   /* CLL_KDEVICE_CPU, or CLL_KDEVICE_CUDA_SM(major, minor) */
} cll_kernel_shape;

/* For supports(): a row that serves only token counts in [lo, hi] (hi 0 = no upper bound)
 * declares it with this; a shape whose n_tokens is 0 (not fixed) passes. */
bool cll_kernel_shape_tokens_in(const cll_kernel_shape *s, int64_t lo, int64_t hi);
/* The token-count class of a site: "n1" (decode), "n2-8" (a few sequences' decode: GEMV
 * forms), "n9-64", "n65+" (prefill); "" for 0 (not fixed). */
const char *cll_kernels_token_class(int64_t n_tokens);

typedef struct cll_kernel_row cll_kernel_row;
struct cll_kernel_row {
    const char *name;   /* describes the kernel: gemm_q4_0_avx2_r8x4 */
    uint32_t op;        /* CLL_KOP_* bits */
    uint32_t wtype;
    uint32_t isa;       /* CLL_ISA_* bits required */
    const char *params; /* human-readable parameters: "layout=r8 tile=8x4" */
    int layout;         /* backend-defined weight layout id; 0 = as stored in the file */
    int interleave;     /* rows interleaved by the layout (1 = plain) */
    /* shape rules beyond type/ISA/interleave (token count: cll_kernel_shape_tokens_in;
     * device: s->device); NULL: none */
    bool (*supports)(const cll_kernel_row *row, const cll_kernel_shape *s);
    bool bit_exact;     /* bit-exact with the site's default row */
    bool is_default;
    const void *impl;   /* backend-specific entry points */
};

typedef struct cll_kernel_table {
    const char *backend; /* "cpu", "cuda" */
    const cll_kernel_row *rows;
    size_t n;
} cll_kernel_table;

/* ISA bits present and supports() true */
bool cll_kernel_row_supported(const cll_kernel_row *r, const cll_kernel_shape *s);

/* the row called `name`, NULL if the table has none (no dispatch, no overrides) */
const cll_kernel_row *cll_kernels_find(const cll_kernel_table *t, const char *name);

/* Pick the row for op (one bit) at shape s among rows of the given layout (layout < 0:
 * any). *forced (may be NULL) tells whether an override chose it. NULL if no row fits. */
const cll_kernel_row *cll_kernels_select(const cll_kernel_table *t, uint32_t op, const cll_kernel_shape *s,
                                         int layout, bool *forced);
/* The same without overrides, env or numerics scope: the first supported default row of
 * the layout, else the first supported row (what a named row's other op pairs with). */
const cll_kernel_row *cll_kernels_default(const cll_kernel_table *t, uint32_t op, const cll_kernel_shape *s,
                                          int layout);
/* the site name of (backend, op, type): "cpu/gemv/q4_0" */
const char *cll_kernels_site(const cll_kernel_table *t, uint32_t op, uint32_t wtype, char *buf, size_t cap);
/* the same with the token-count class: "cuda/gemv/q4_K/n2-8" (n_tokens 0: the plain site) */
const char *cll_kernels_site_class(const cll_kernel_table *t, uint32_t op, uint32_t wtype, int64_t n_tokens,
                                   char *buf, size_t cap);

/* Override hook: force row `name` at `site`: "cpu/gemv/q4_0" (every token count), or a
 * site with a token-count class, "cuda/gemv/q4_K/n2-8", which wins over the plain site for
 * shapes of that class; name NULL removes it. A forced row that does not support a shape
 * falls back to the default with one loud warning line. Env CLLAMA_KERNEL=name[,name...]
 * forces rows at every site of their op and type; name@ROWSxCOLS only on weights of that shape
 * (one product of a model: an A/B of one product's row in the whole step). To run one row on purpose (tests,
 * benches), find it and prepare the weight for it instead (cll_cpu_weight_create_row). */
cll_status cll_kernels_set_override(const char *site, const char *name);
void cll_kernels_clear_overrides(void);

/* Numerics scope of the calling thread: while tag is set (e.g. "ggml"), dispatch on this
 * thread takes, at every site, the supported row whose params carry "numerics=<tag>" before
 * any override or default; a site with no such row keeps its usual row (one warning line).
 * A model loaded in a reference-numerics mode sets it around its weight preparation only,
 * so other models (and other threads) are untouched. NULL or "" ends the scope. */
void cll_kernels_numerics_scope(const char *tag);

#ifdef __cplusplus
}
#endif

#endif
