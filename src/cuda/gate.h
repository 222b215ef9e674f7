/* cuda/gate: the one correctness gate and timing harness of the CUDA kernel rows, shared by the
 * tests (tests/cuda_kernels_test.c), the kernel benchmark (tests/kbench/cuda_kbench.c) and the
 * tuner. A gate run makes fresh random weights of the row's type, uploads them, NaN-poisons the
 * outputs (and the padding between output rows), runs the row and compares every output with
 * the CPU reference, then proves the bar can fail (poison control: the same comparison against
 * a deliberately perturbed expectation must fail).
 * Owns nothing beyond one call (device buffers are freed before returning).
 * Rule: a row is timed or served only after its gate passed; C callers only (plain C header). */
#ifndef CLL_CUDA_GATE_H
#define CLL_CUDA_GATE_H

#include "core/core.h"
#include "kernels/registry.h"

typedef struct {
    char row[64];          /* row name (or "get_rows_<type>") */
    uint32_t op, wtype;
    int64_t rows, cols;
    int nb;                /* gemv: products; gemm: tokens; get_rows: ids */
    int64_t n_mat;         /* matrices in the weight (experts) */
    int64_t n_out;         /* outputs compared */
    int64_t n_bad;         /* outputs outside the bar (unwritten ones included) */
    int64_t n_unwritten;   /* outputs still NaN (poison) */
    int64_t n_clobbered;   /* padding elements between output rows that were written */
    double max_err;        /* max |got - want| / scale, scale = sum |w_k x_k| of that output (0 = exact) */
    double tol;            /* the bar on max_err */
    char ref[96];          /* what the expectation is */
    bool q8_exact;         /* device q8_1 activation bytes == cll_quantize_q8_1 (rows that read q8_1) */
    bool tables_exact;     /* device codebooks == the C tables (i-quant rows) */
    bool tail_checked;     /* gemv nb = 1: the row also ran with the fused residual tail (cll_cu_resid_epi) */
    bool tail_ok;          /* ... and y, x + y, the RMS norm and its q8_1 bytes matched, the ticket reset */
    char tail_why[96];     /* the first mismatch, when not */
    int tail_poll;         /* gemv nb = 1: the polled residual tail (cll_cu_resid_epi.slot) 1 served, bit for bit the
                            * residual kernel's, 2 refused where cll_cu_resid_poll_ok says so (a mismatch fails) */
    bool act_out_checked;  /* gemv nb = 1 of a row with acts_out: the gate|up pair activated by the launch gave the
                            * act kernel's bits on the plain launch's rows, SiLU and GELU (a mismatch fails the gate) */
    bool exact_checked;    /* a row claiming bit_exact ran beside its type's default row (same layout) */
    bool exact_control_failed; /* ... and a one-bit flip of the default's output was counted */
    int64_t n_exact_diff;  /* outputs whose bits differ from the default's (counted in n_bad) */
    char exact_ref[64];    /* that default row */
    bool passed;
    bool control_failed;   /* true = the perturbed expectation was rejected (the bar can fail) */
} cll_cuda_gate_report;

/* Gate one row of the CUDA table (cll_cuda_kernel_table) at rows x cols.
 * GEMV rows: nb products. nb = 1: one dense product. nb > 1 and odd: MoE form, a weight of
 * n_mat = nb + 1 experts, mat_ids random (device array), one shared input (x_stride 0).
 * nb even: nb tokens, one matrix, each its own input row. Output rows strided (rows + 5).
 *   Expectation: types whose CPU dot runs on q8_0/q8_1 activations: cll_vec_dot_ref on the same
 *   quantized activation (q8_1 bytes; q8_0 = the same d and qs); K-quants and i-quants (CPU: q8_K)
 *   and float weights: f64 sum of to_f32(w) times the dequantized q8_1 activation (float weights:
 *   f32 x, bf16-rounded for BF16). Bar: |got - want| <= 1e-5 * sum |w_k x_k|.
 *   A row that claims bit_exact also runs its type's default row (same layout, one-token default)
 *   on the same weight and activation: every output must have the same bits (a one-bit flip of
 *   the default's output must be counted: the check's control).
 *   nb = 1 also runs the row a second time with the fused residual tail on (residual x0, norm
 *   weight g, poisoned xn / xq): y must repeat bit for bit, x must be x0 + y (f32), xn the RMS
 *   norm of it times g (within 2 ulp of the f64-summed host norm; the poison control moves one
 *   element by 8 ulp and must fail), xq byte-exact with cll_quantize_q8_1(xn), the ticket 0;
 *   then with the polled tail (cll_cu_resid_epi.slot): where cll_cu_resid_poll_ok holds, y, x, xn and
 *   xq bit for bit those of the plain launch plus the step's residual kernel (itself held to the host
 *   as above), twice on the same slots, every slot left empty; elsewhere a clean refusal.
 * GEMM rows: nb tokens, weight of 2 matrices, matrix 1 multiplied, the panel cut into ~3 slabs.
 *   Expectation: f64 to_f32(w) . x (f32). Bar relative to sum |w_k x_k|: 2e-3 (f16 panel and f16 x:
 *   two roundings of 2^-11), 8e-3 (bf16 x), 1e-5 (f32).
 * MOE rows: nb tokens, 3 distinct experts each of 9 (one expert takes every token: > 1 tile when
 *   nb > 64; one takes none), the device bucketing (cll_cu_moe_sort) checked against the host,
 *   then the grouped product in its gate/up form (a token's row per slot) and its down form (a
 *   row per slot). Expectation and bar: the GEMM rows' (f64 to_f32(w_e) . x, 2e-3).
 * CLL_OK when the row passed and the control failed; otherwise an error naming the worst output. */
cll_status cll_cuda_gate_row(const cll_kernel_row *row, int64_t rows, int64_t cols, int nb, uint64_t seed,
                             cll_cuda_gate_report *rep);
/* whether the default one-token gemv row of a type serves the polled residual tail on a rows x cols weight
 * (cll_cu_resid_poll_ok; host only, no device asked) */
bool cll_cuda_resid_poll_served(uint32_t type, int64_t rows, int64_t cols);
/* Two one-token products in one launch (cll_cu_gemv_pair: the q|k|v product of a file whose v weight has
 * another type) on fresh weights of types t1 (rows1 x cols) and t2 (rows2 x cols), split layout, one q8_1
 * activation: every output must have the bits of the two types' one-token default rows launched apart
 * (those rows are gated against the CPU reference by cll_cuda_gate_row), the poison between and after
 * the two output ranges must stay, and a one-bit flip of the apart launches' output must be counted.
 * want_served false: the pair must be declined (cudaErrorNotSupported) with nothing written. */
cll_status cll_cuda_gate_gemv_pair(uint32_t t1, uint32_t t2, int64_t rows1, int64_t rows2, int64_t cols, bool want_served,
                                   uint64_t seed, cll_cuda_gate_report *rep);
/* cll_cu_get_rows of a type: n_ids ids (repeats included) of a rows x cols weight, scale 1 and
 * a scale != 1; bar: bit-exact with to_f32 (times the scale in f32). */
cll_status cll_cuda_gate_get_rows(uint32_t type, int64_t rows, int64_t cols, int n_ids, uint64_t seed,
                                  cll_cuda_gate_report *rep);
/* The tensor-core prefill attention (cuda/ops/attn_prefill.cu): n query rows at positions p0..
 * of one sequence (not the first), n_head q heads over n_kv kv heads of dim hd, sliding window
 * n_swa (0: none), an F16 cache whose cells past the batch hold NaN (a read of them fails),
 * outputs NaN-poisoned. Expectation: f64 softmax(scale q.k) . v over the causal window; bar 4e-3
 * of sum p|v| (P is rounded to f16 before P.V). splits > 1: split-K over the keys in that many
 * splits (NaN-poisoned partials, merged). Report: rows = n, cols = hd, nb = n_head. */
cll_status cll_cuda_gate_attn_prefill(int hd, int n_head, int n_kv, int n, int p0, int n_swa, int splits, uint64_t seed,
                                      cll_cuda_gate_report *rep);
/* The MoE routing kernel (cuda/ops/moe.cu, cuda/ops/route.cuh) on 7 rows of n_expert router
 * logits (random, tied, all NaN, one NaN, one +inf): ids equal to the CPU rule's (NaN below every
 * number, ties to the lower id, so always k distinct ids in [0, n_expert)), weights within 1e-6.
 * Report: rows = 7, cols = n_expert, nb = k. */
cll_status cll_cuda_gate_moe_route(int32_t n_expert, int32_t k, bool renorm, uint64_t seed, cll_cuda_gate_report *rep);
/* The decode attention (cuda/ops/attn.cu's split GQA kernel) of one token at position len - 1 of
 * sequence 1 (cells past it and of sequence 0 hold NaN), n_chunks key chunks, a paged cache
 * (reversed 16-cell blocks) or not: the rope kernel then attention, and the attention doing the
 * rope itself (fuse_rope), on the same inputs. Bars: the two bit-identical (output and cache);
 * the first within 1e-5 of sum p|v| of an f64 softmax over its roped q and cache. warps: the block
 * width to run (4, 8, 16; one that does not fit the shape runs the kernel's own choice, and the
 * report's name says which ran). act_chunks: most chunks the keys use (0: the kernel's default;
 * fewer, longer chunks run several sub-chunks a block). form: CLL_CU_ATTN_SPLIT, _STREAM or _STREAM_TC
 * (cuda/pick.h; the streaming kernel runs 8 warps whatever warps says), 0 the default for the
 * gate's small context (split). rows > 1 (split form): a batched decode step, row i in a sequence of
 * its own at position len - 1 - 3i, the fused run with distinct_rows (len >= 3 rows - 2). n_swa > 0:
 * a sliding window (each row attends to its newest n_swa keys; the cells before the window hold NaN,
 * so a read past it fails). Report: rows = len, cols = hd, nb = n_head. */
cll_status cll_cuda_gate_attn_decode(int hd, int n_head, int n_kv, int len, int n_chunks, bool paged, int warps,
                                     int act_chunks, int form, int rows, int n_swa, uint64_t seed,
                                     cll_cuda_gate_report *rep);
/* The activation kernel (cll_cu_act_q8) on n >= 2 rows of f (f % 4 == 0) at once against the same rows one
 * launch each (the decode step's form): y, q8_1 and f16 rows (both orders) bit for bit; SiLU within 1e-6 of
 * the host's. Report: rows = n, cols = f. */
cll_status cll_cuda_gate_act(int64_t n, int64_t f, bool gelu, uint64_t seed, cll_cuda_gate_report *rep);
/* The one-GPU split's all-reduce (cuda/comm.cu with every rank on GPU 0): n host threads, each a stream and
 * rows of count floats, three rounds: every rank's rows equal the host's rank-order f32 sum bit for bit.
 * Report: rows = n, cols = count. */
cll_status cll_cuda_gate_comm_local(int32_t n, int64_t count, uint64_t seed, cll_cuda_gate_report *rep);
/* cll_cu_quantize_q8_1 on n rows x cols (strided input): byte-exact with cll_quantize_q8_1 */
cll_status cll_cuda_gate_quantize(int64_t n, int64_t cols, uint64_t seed, cll_cuda_gate_report *rep);
/* The device decoders of every block format (cuda/formats.cuh, __host__ __device__) run on the
 * HOST: element decoders bit-exact with to_f32, the 4-lane group dots summed per row equal to the
 * CPU reference dot (1e-5 of sum |w x|). Needs no GPU: the build box runs it in make test. */
cll_status cll_cuda_gate_decoders(void);
/* the device codebooks (i-quant grids, ksigns, IQ4 levels) bit-identical with formats/iq_tables.c */
cll_status cll_cuda_gate_tables(void);

/* Time a GEMV row with CUDA events: a ring of weight copies of >= 256 MB (beyond the 50 MB L2),
 * >= 150 ms of warm-up launches, then reps passes over the ring back to back. *gbps = weight
 * bytes of one product (rows x row_stride; the nb products of one launch read one matrix) per
 * launch over the mean launch time; *us (may be NULL) = that mean time in microseconds.
 * Weights are device-filled random bytes (speed does not depend on their values). */
cll_status cll_cuda_bench_row(const cll_kernel_row *row, int64_t rows, int64_t cols, int nb, int reps, double *gbps);
/* the decode attention (fused rope, F16 cache) of one token at position len - 1 over n_chunks key
 * chunks of an n_ctx context (at most act_chunks live, in form: cll_cuda_gate_attn_decode's), `layers`
 * separate caches in one replayed CUDA graph: *us per launch */
cll_status cll_cuda_bench_attn_us(int hd, int n_head, int n_kv, int len, int n_ctx, int n_chunks, int act_chunks, int form,
                                  int layers, int reps, double *us);
/* a measurement (cuda/matmul/chain.cu): a llama-2-7B-shaped stack's q|k|v, o, gate|up and down products
 * (Q4_0, random weights) as one persistent kernel (a producer warp bulk-copying weight tiles into a
 * shared-memory ring of `stages` stages, grid barriers between the phases, the norms and the
 * activation inside), checked against plain per-op kernels over two layers (*err: max |diff| / max |ref|
 * of the residual), then timed over `layers` layers: *us a layer and *gbps of weight bytes (flags time
 * parts alone: 1 no dots, 2 no grid barriers, 4 no products; 8 one bulk copy a row instead of a tile; 16 the producer warp copies with cp.async, 64 tiles of half the rows, 128 no norm / activation /
 * staging work (the barriers alone with 4); l2ahead > 0: the TMA producer asks L2 for the tile that
 * many tiles ahead of each copy) */
cll_status cll_cuda_bench_chain_us(int layers, int stages, int flags, int blocks_per_sm, int l2ahead, int reps, double *us, double *gbps, double *err);
cll_status cll_cuda_bench_row_us(const cll_kernel_row *row, int64_t rows, int64_t cols, int nb, int reps, double *gbps,
                                 double *us);

#endif
