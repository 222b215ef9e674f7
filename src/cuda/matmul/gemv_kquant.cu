/* cuda/matmul/gemv_kquant: gemv, get_rows and gemm panels of the K-quants (Q2_K, Q3_K, Q4_K,
 * Q5_K, Q6_K) against q8_1 activations (32-element activation blocks, not ggml-cpu's q8_K: the
 * integer sums are exact per 16-element half, mins use the exact integer activation sums).
 * Launch geometry and budgets: see cuda/matmul/kernels.cuh (4 warps x 1 row, grid (rows/4, nb),
 * ~16 KB smem per block; stage: Q2_K 24 super-blocks (2016 B), Q3_K 16 (1760 B), Q4_K 14
 * (2016 B), Q5_K 11 (1936 B), Q6_K 8 (1680 B); 4 lanes per 32-group, one super-block
 * per warp pass). Owns nothing. Rule: results equal the f64 dot of to_f32(w) with the dequantized
 * q8_1 activation up to float rounding (the gate's bar). */
#include "cuda/matmul/kernels.cuh"

static const cll_cu_fmt_ops k_ops[] = {
    CLL_CU_FMT_OPS(CLL_TYPE_Q2_K, "gemv_q2_K_stage_dp4a"),
    CLL_CU_FMT_OPS(CLL_TYPE_Q3_K, "gemv_q3_K_stage_dp4a"),
    CLL_CU_FMT_OPS(CLL_TYPE_Q4_K, "gemv_q4_K_stage_dp4a"),
    CLL_CU_FMT_OPS(CLL_TYPE_Q5_K, "gemv_q5_K_stage_dp4a"),
    CLL_CU_FMT_OPS(CLL_TYPE_Q6_K, "gemv_q6_K_stage_dp4a"),
};

const cll_cu_fmt_ops *cll_cu_fmt_kquant(uint32_t type) {
    for (size_t i = 0; i < sizeof k_ops / sizeof k_ops[0]; i++)
        if (k_ops[i].type == type) return &k_ops[i];
    return NULL;
}
