/* cuda/matmul: weight products on the device, every format the CPU engine reads.
 * Forms: gemv (one or a few activation rows, decode; one launch may run many independent
 * products, which is how MoE runs only the chosen experts) and gemm (prefill: a dequantized
 * f16 panel streamed through cuBLAS). Rows of the CUDA kernel table (cuda/rows) point here.
 * Owns: nothing but code; weights live in the driver's model, scratch in its state.
 * Rule: every row reads a weight byte once per product, and is gated against the CPU reference
 * (cuda/gate) before anything times or serves it. */
#ifndef CLL_CUDA_MATMUL_CUH
#define CLL_CUDA_MATMUL_CUH

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda/pick.h"

/* A weight resident on the device: n_mat matrices (experts) of rows x cols, each row a run of
 * the format's blocks. layout 0: the file's block bytes, every row padded to row_stride (a
 * multiple of 16 bytes) so 16-byte loads never straddle rows. Other layouts are repacks a
 * row declares (cll_cu_layout_*). */
typedef struct {
    uint32_t type;         /* GGML type id */
    int layout;            /* 0 = file blocks, padded rows; CLL_CU_LAYOUT_SPLIT */
    int64_t rows, cols;    /* per matrix: output features x input features */
    int64_t n_mat;         /* experts (1 = dense) */
    size_t row_stride;     /* bytes between rows (multiple of 16) */
    size_t mat_stride;     /* bytes between matrices */
    const uint8_t *d;      /* device bytes */
} cll_cu_weight;

/* q8_1 activation block (32 values): d (fp16), s = d * sum(q) (fp16), qs[32] — cll_block_q8_1 */

/* Optional fused tail of a one-product decode gemv whose output is the residual stream's width
 * (the o and down products of a dense layer without post norms; cuda/matmul/epilogue.cuh):
 * each output row's writer also adds it to the residual, x[i] += y[i]; each block leaves the
 * double sum of its rows' squares in part[block]; the grid's last block to finish (an atomic
 * ticket, reset by that block) sums the partials in a fixed order and writes the next RMS
 * norm, xn = (x * 1/rms) * norm (norm NULL: ones), and its q8_1 blocks (xq NULL: none). y is
 * still written. on = 0: no tail. Replaces the residual+norm kernel between two gemvs.
 * slot non-NULL: the polled tail instead (no ticket, no partials; epilogue.cuh): each row's writer
 * also stores its value into slot[row] (a relaxed store) and its block leaves; one consumer block,
 * the grid's last, polls the slots, adds them into x and writes xn and xq with the bits of
 * cuda/ops/norm.cu's register kernel (it replays that kernel's reduction order), then empties the
 * slots for the next launch. Served by the split rows that read the activation from global
 * (k_gemv_sp, k_gemv_spk) and the float rows (k_gemv_f) where cll_cu_resid_poll_ok holds; every other row refuses it
 * (cudaErrorNotSupported, nothing launched). */
#define CLL_CU_EPI_MAX_BLOCKS 65536
typedef struct {
    int on;
    float *x;              /* (rows) residual stream */
    double *part;          /* (CLL_CU_EPI_MAX_BLOCKS) per-block partial sums (scratch) */
    int *ticket;           /* one int, zero between launches */
    const float *norm;     /* (rows) or NULL */
    float eps;
    float *xn;             /* (rows), or NULL (polled tail only: nothing reads the f32 rows) */
    void *xq;              /* q8_1 blocks of xn, or NULL */
    uint32_t *slot;        /* the polled tail: rows words, all 0xffffffff between launches (the caller
                            * sets them once); NULL: the ticket tail */
} cll_cu_resid_epi;

/* Scratch of the split-K products (the int8 tensor-core tile of 9..64 tokens, gemv_mma.cu):
 * room for ws_floats float partial sums and n_tickets ints, zero between launches (each launch
 * leaves its tickets at zero). ws NULL: a row runs unsplit. Sizes: CLL_CU_SPLITK_FLOATS and
 * CLL_CU_SPLITK_TICKETS (cuda/pick.h); a launch that would need more runs less split. */
typedef struct {
    float *ws;
    int64_t ws_floats;
    int *tickets;
    int n_tickets;
} cll_cu_splitk;

/* A decode MoE product that routes its one token itself (no routing kernel before it): every
 * block runs the token's routing in one warp (cuda/ops/route.cuh, the routing kernel's own body)
 * from the router logits, takes expert sel[b] for slot b (nb == k), and block (0, 0) writes sel and
 * selw for the products and the residual kernel after it. logits NULL: off (mat_ids as given).
 * Served by the split rows k_gemv_sp / k_gemv_spx (others refuse with cudaErrorNotSupported). */
#define CLL_CU_ROUTE_EMAX 512
#define CLL_CU_ROUTE_KMAX 32
typedef struct {
    const float *logits; /* (n_expert) the token's router logits */
    int32_t n_expert, k;
    bool renorm;
    int32_t *sel; /* (k) out */
    float *selw;  /* (k) out */
} cll_cu_route;

/* nb independent products y_b = W[mat_b] . x_b (b < nb), each of one activation row.
 * Inputs: f32 x_b at x + b*x_stride floats (x_stride 0: one shared row), and its q8_1 form at
 * xq + b*xq_stride blocks (rows that need it; quantized once per layer input by the caller).
 * mat_ids: device array (nb) of matrix indices, NULL = all 0; read on the device, so the
 * launch is graph-safe when a router kernel writes them. y_b at y + b*y_stride floats. */
typedef struct {
    int nb;
    const int32_t *mat_ids;
    const float *x;
    int64_t x_stride;
    const void *xq;
    int64_t xq_stride;
    float *y;
    int64_t y_stride;
    /* optional: the weight bytes the step reads next (the following product). The blocks of
     * the last wave ask L2 for them as they finish, so the DRAM keeps streaming through this
     * product's tail and the small kernels before the next one. NULL / 0: none. */
    const void *pf_next;
    size_t pf_bytes;
    cll_cu_resid_epi epi;  /* nb == 1, no mat_ids; every gemv row honours it */
    cll_cu_splitk sk;      /* split-K scratch for the rows that split K over blocks (zeros: none) */
    cll_cu_route route;    /* nb == route.k, no mat_ids, no epi; the split rows only */
    /* optional (gu non-NULL): the product's input is the gated activation of gate|up rows, b's at
     * gu + b * ld (f gate values then f up values, f = the weight's cols), activated and quantized to
     * q8_1 by the launch itself as cuda/ops/norm.cu's act kernel would (same bits); xq is not read.
     * The rows with cll_cu_gemv_impl.acts only; no epi, no route. */
    struct {
        const float *gu;
        int64_t ld;
        bool gelu;
    } act_in;
    /* optional (y non-NULL): the product is a gate|up pair of one token (2f rows: f gate rows, then
     * f up rows, f = act_out.f), and the launch writes their gated activation act(gate_i, up_i)
     * (cll_act_gated: the act kernel's bits) to act_out.y (f floats) in place of the 2f rows at y: a
     * warp sums gate row i and up row f + i. The rows with cll_cu_gemv_impl.acts_out only; nb 1, no
     * mat_ids, no epi, no route, no act_in.
     * yq (the quantized rows, R = 2 split rows only; f % 32 == 0): the activation's q8_1 blocks too, the
     * act kernel's bytes (cll_warp_q8_1 over the 32 values of a block). A block of 4 warps has 4 of a q8_1
     * block's 32 values: the producers store their values into slot with relaxed stores and leave, and
     * f / 32 consumer warps after them in the grid each poll a q8_1 block's 32 slots, write it and empty
     * the slots (gemv_split.cu, SpAct). */
    struct {
        float *y;
        int64_t f;
        bool gelu;
        void *yq;
        void *slot; /* yq: f 32-bit words, all 0xffffffff between launches (the caller sets them once) */
    } act_out;
} cll_cu_gemv_args;

/* launcher of one gemv row; returns the launch's cudaError_t */
typedef cudaError_t (*cll_cu_gemv_fn)(const cll_cu_weight *w, const cll_cu_gemv_args *a, cudaStream_t s);

/* Grouped MoE product (prefill): the slots of a batch (token i's k-th expert choice is slot
 * i*n_used + k) sorted by expert (cll_cu_moe_sort: ids, off, toff), and for every slot j of
 * expert e's range [off[e], off[e+1]): y + ids[j]*ldy = X[ids[j] / x_div] . W[e]^T (rows
 * floats). x_div = n_used reads the token's row (gate/up), 1 reads the slot's own row (down).
 * One launch covers every expert: blocks of CLL_CU_MOE_BN slots of one expert (tiles; toff[e]
 * = expert e's first tile, toff[n_expert] = their count, read on the device) times a run of
 * weight rows; max_tiles bounds toff[n_expert] on the host (cll_cu_moe_max_tiles). */
#define CLL_CU_MOE_BN 64
typedef struct {
    const float *x;
    int64_t ldx;
    int32_t x_div;
    const int32_t *ids, *off, *toff; /* device: (n_slots), (n_expert + 1), (n_expert + 1) */
    int32_t n_expert;
    int64_t max_tiles;
    float *y;
    int64_t ldy;
    /* the f16 rows (moe_f16_*): the slots' activation rows are gathered once, in sorted order, as
     * f16 into xh (n_slots x cols halves, scratch) and streamed through a cp.async pipeline */
    int64_t n_slots;
    void *xh;
    size_t xh_bytes;
} cll_cu_moe_args;
typedef cudaError_t (*cll_cu_moe_fn)(const cll_cu_weight *w, const cll_cu_moe_args *a, cudaStream_t s);
static inline int64_t cll_cu_moe_max_tiles(int64_t n_slots, int64_t n_expert) {
    return (n_slots + CLL_CU_MOE_BN - 1) / CLL_CU_MOE_BN + (n_expert < n_slots ? n_expert : n_slots);
}

/* Fused dequant-in-tile product (cuda/matmul/gemm_fused.cu): y + t*ldy (rows floats) = W . x_t for
 * the n tokens of xh (n x cols halves, dense: the f16 X cll_cu_gemm_fused converts), each weight
 * byte read once per 64 tokens; sk: split-K scratch (NULL: unsplit). Dense split-layout weights. */
typedef cudaError_t (*cll_cu_fgemm_fn)(const cll_cu_weight *w, const void *xh, int64_t n, float *y, int64_t ldy,
                                       const cll_cu_splitk *sk, cudaStream_t s);

/* the part of a CUDA kernel-table row (kernels/registry impl) that matmul code fills */
typedef struct {
    cll_cu_gemv_fn gemv;   /* NULL for gemm-only rows */
    bool needs_q8;         /* reads xq (q8_1) rather than x */
    int layout;            /* weight layout it reads */
    cll_cu_moe_fn moe;     /* grouped MoE rows (CLL_KOP_MOE); NULL otherwise */
    bool few;              /* a few-token row: the nb rows are tokens of ONE product (no mat_ids),
                            * each weight byte read once for all (cuda/matmul/gemv_few.cu) */
    bool routes;           /* honours cll_cu_gemv_args.route (the decode MoE self-routing) */
    bool acts;             /* honours cll_cu_gemv_args.act_in (the activation computed in the staging) */
    cll_cu_fgemm_fn fgemm; /* the fused dequant-in-tile GEMM rows (CLL_KOP_GEMM); NULL otherwise */
    bool acts_out;         /* honours cll_cu_gemv_args.act_out (the gate|up pair activated by the launch) */
} cll_cu_gemv_impl;

/* Quantize n rows of cols floats (row stride ld) to q8_1 blocks (row stride cols/32 blocks),
 * exactly as ggml-cpu's quantize_row_q8_1 does (round half away... see .cu). cols % 32 == 0. */
cudaError_t cll_cu_quantize_q8_1(const float *x, int64_t ld, int64_t n, int64_t cols, void *xq, cudaStream_t s);

/* Dequantize rows ids[i] (device array, n) of matrix 0 of w to f32: out + i*ld_out.
 * scale multiplies every value (embedding scale; 1 = none). */
cudaError_t cll_cu_get_rows(const cll_cu_weight *w, const int32_t *ids, int64_t n, float *out, int64_t ld_out,
                            float scale, cudaStream_t s);

/* Prefill product Y (n x rows, row stride ldy) = X (n x cols, row stride ldx) . W[mat]^T for n >= 1
 * tokens: the weight is dequantized to an f16 panel in slabs of at most panel_bytes (scratch,
 * >= one row-slab of 128 rows) and multiplied on tensor cores by cuBLAS (fp32 accumulate);
 * X is converted to f16 in xh (scratch, n*cols halves). */
typedef struct {
    cublasHandle_t blas;
    void *panel;           /* scratch for the f16 weight slab */
    size_t panel_bytes;
    void *xh;              /* scratch for the f16 activations */
    size_t xh_bytes;
} cll_cu_gemm_ctx;
cudaError_t cll_cu_gemm(const cll_cu_gemm_ctx *g, const cll_cu_weight *w, int64_t mat, const float *x, int64_t ldx,
                        int64_t n, float *y, int64_t ldy, cudaStream_t s, bool x_ready = false);
/* The same product through a fused row (cll_cu_gemv_impl.fgemm) of a dense weight: X converted to
 * f16 in g->xh, each 32-value group in the order the fused rows read it (cll_cu_fused_xpos; unless
 * x_ready: CLL_CU_X_FUSED, left there by an earlier fused part), then f(w, xh, ...); no panel, no
 * cuBLAS. */
cudaError_t cll_cu_gemm_fused(const cll_cu_gemm_ctx *g, cll_cu_fgemm_fn f, const cll_cu_weight *w, const float *x,
                              int64_t ldx, int64_t n, float *y, int64_t ldy, const cll_cu_splitk *sk, cudaStream_t s,
                              bool x_ready = false);
#define CLL_CU_X_FUSED 3 /* the X kind of cll_cu_gemm_fused (beside cll_cu_gemm_x_kind's 0..2) */
/* cll_cu_fused_xpos: cuda/common.cuh (the norm and activation kernels write that order too) */
/* how cll_cu_gemm converts X for w: 0 not at all (F32), 1 to f16, 2 to bf16. A product of several
 * parts over the same X and cols converts it once: x_ready for every later part of the same kind
 * (xh then holds X as the earlier call left it) */
int cll_cu_gemm_x_kind(const cll_cu_weight *w);


/* Every matrix of a quantized weight decoded to f16 at dst (n_mat x rows x cols halves, dense):
 * the resident prefill panel (then read as an F16 weight: cll_cu_weight_desc). The bytes are
 * the streamed panel's. cudaErrorInvalidValue for a type without a panel (floats). */
bool cll_cu_weight_has_panel(const cll_cu_weight *w);
cudaError_t cll_cu_panel_full(const cll_cu_weight *w, void *dst, cudaStream_t s);

/* Weight upload. row_stride = the row's device bytes in the layout rounded up to 16
 * (0 for a layout the type lacks or a ragged cols); a weight of n_mat matrices in a layout takes
 * cll_cu_weight_bytes(). cll_cu_weight_upload copies host GGUF bytes
 * (matrices back to back, rows unpadded) into dev_dst (16-byte aligned, that many bytes; the
 * padding is zeroed) with cudaMemcpy2D and fills *w. Synchronous (pageable host memory).
 * Returns cudaErrorInvalidValue for a type the matmul does not serve or a ragged cols. */
size_t cll_cu_row_stride(uint32_t type, int layout, int64_t cols);
size_t cll_cu_weight_bytes(uint32_t type, int layout, int64_t rows, int64_t cols, int64_t n_mat);
cudaError_t cll_cu_weight_upload(cll_cu_weight *w, const void *host, uint32_t type, int64_t rows, int64_t cols,
                                 int64_t n_mat, void *dev_dst);
/* Weight layouts: 0 = file blocks; CLL_CU_LAYOUT_SPLIT = quants and scales re-cut into aligned
 * regions per row (cuda/matmul/split.cuh; Q4_0, Q8_0, Q5_1, Q4_K, Q5_K, Q6_K, IQ4_XS and the others
 * there: the same row_stride and byte count as layout 0; IQ3_S and Q3_K: their values expanded to
 * nibbles, 17 B per 32 values and 146 B per 256). Upload a weight in the layout of the gemv row that serves it
 * (cll_cu_gemv_impl.layout); get_rows and the gemm read either layout. The repack runs on the
 * host (slabs of <= 32 MB). cudaErrorInvalidValue for a layout the type lacks. */
#define CLL_CU_LAYOUT_SPLIT 1
cudaError_t cll_cu_weight_upload_l(cll_cu_weight *w, const void *host, uint32_t type, int layout, int64_t rows,
                                   int64_t cols, int64_t n_mat, void *dev_dst);
/* fill *w for bytes already on the device in that layout (no copy) */
void cll_cu_weight_desc(cll_cu_weight *w, uint32_t type, int layout, int64_t rows, int64_t cols, int64_t n_mat,
                        const void *dev);
/* true when the CUDA matmul serves weights of this type (gemv, get_rows and gemm) */
bool cll_cu_type_served(uint32_t type);

/* the grouped MoE row for an expert weight of this type in this layout: the default, or the
 * row an override names; NULL: none (the driver then runs the experts token by token) */
const cll_cu_gemv_impl *cll_cu_moe_default(uint32_t type, int layout, int64_t rows, int64_t cols);

/* the few-token gemv row for n_tokens (2..8) tokens of one dense product of a weight of this type
 * uploaded in this layout: the default or an override; NULL: none (the batch takes the gemm) */
const cll_cu_gemv_impl *cll_cu_gemv_few_default(uint32_t type, int layout, int64_t rows, int64_t cols, int n_tokens,
                                                bool *forced);
/* the int8 tensor-core few-token row of a weight of this type in this layout (cuda/matmul/gemv_mma.cu),
 * NULL when the type or shape has none */
const cll_cu_gemv_impl *cll_cu_gemv_mma_row(uint32_t type, int layout, int64_t rows, int64_t cols);
/* the fused f16 GEMM row of a dense weight of this type, layout and shape (NULL: none) */
const cll_cu_gemv_impl *cll_cu_gemm_fused_row(uint32_t type, int layout, int64_t rows, int64_t cols);

/* true when an override (a pin, a tune sidecar) names the type's int8 tensor-core row for the
 * n9-64 class ("cuda/gemv/q4_K/n9-64=gemv_q4_K_split_mma"): the driver then hands it batches of
 * 9..64 tokens (the tile) whatever CLLAMA_CUDA_MMA_MAX says */
bool cll_cu_gemv_tile_pinned(uint32_t type, int layout, int64_t rows, int64_t cols);

/* the gemv rows: one table (cuda/matmul/rows.cu) */
typedef struct cll_kernel_table cll_kernel_table;
/* whether row fn (an impl with acts_out) activates a gate|up pair of weight w without changing its sums: not
 * where it would split the rows' K over warps (w4r2ks4 on rows past 128 groups: its activated launch would
 * run its base form's order), which refuses act_out (cudaErrorNotSupported) */
bool cll_cu_acts_out_ok(cll_cu_gemv_fn fn, const cll_cu_weight *w);
/* whether row fn serves the polled residual tail (cll_cu_resid_epi.slot) on weight w (one matrix): a split row
 * whose kernel reads the activation from global (k_gemv_sp, and k_gemv_spk with its fallback) or a float row
 * (k_gemv_f), of a width the norm kernel keeps in registers at <= 2 float4 a thread (rows % 4 == 0,
 * 4 <= rows <= 4096). Pure: no device is asked. A row it does not hold for refuses the tail
 * (cudaErrorNotSupported) */
bool cll_cu_resid_poll_ok(cll_cu_gemv_fn fn, const cll_cu_weight *w);
/* Two one-token products over one q8_1 activation (a->xq, nb 1) in one launch, y1 = W1 . x and y2 = W2 . x
 * (a->y unused; a->pf_next as a gemv's), where f1 and f2 (the rows a step picked for w1 and w2) both run the
 * w4r2pre body on their shapes and the type pair is one of gemv_split.cu's SP_PAIRS: the outputs are the
 * bits of the two rows' own launches. cudaErrorNotSupported (nothing launched) where that does not hold. */
cudaError_t cll_cu_gemv_pair(cll_cu_gemv_fn f1, const cll_cu_weight *w1, float *y1, cll_cu_gemv_fn f2,
                             const cll_cu_weight *w2, float *y2, const cll_cu_gemv_args *a, cudaStream_t st);
const cll_kernel_table *cll_cu_kernel_table(void);
/* the gemv row for a weight type: the default, or the row an override names (CLLAMA_KERNEL); NULL: not served */
const cll_cu_gemv_impl *cll_cu_gemv_default(uint32_t type, int64_t rows, int64_t cols);

#endif
