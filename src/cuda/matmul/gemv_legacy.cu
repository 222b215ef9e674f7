/* cuda/matmul/gemv_legacy: gemv, get_rows and gemm panels of the 32-element block formats
 * (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL) against q8_1 activations.
 * Launch geometry and budgets: see cuda/matmul/kernels.cuh (k_gemv_q8: 4 warps x 1 row each,
 * grid (rows/4, nb), double-buffered cp.async stage of ~2 KB per warp = ~16 KB smem per block;
 * stage: Q4_0/IQ4_NL 112 blocks (2016 B), Q4_1 96 (1920 B), Q5_0 88 (1936 B), Q5_1 80 (1920 B),
 * Q8_0 56 (1904 B)). Owns nothing. Rule: dots are exact int8 sums per block times float scales,
 * as ggml's vec_dot_*_q8_0/q8_1 (Q4_0/Q5_0 subtract their offset in the integers). */
#include "cuda/matmul/kernels.cuh"

static const cll_cu_fmt_ops k_ops[] = {
    CLL_CU_FMT_OPS(CLL_TYPE_Q4_0, "gemv_q4_0_stage_dp4a"),
    CLL_CU_FMT_OPS(CLL_TYPE_Q4_1, "gemv_q4_1_stage_dp4a"),
    CLL_CU_FMT_OPS(CLL_TYPE_Q5_0, "gemv_q5_0_stage_dp4a"),
    CLL_CU_FMT_OPS(CLL_TYPE_Q5_1, "gemv_q5_1_stage_dp4a"),
    CLL_CU_FMT_OPS(CLL_TYPE_Q8_0, "gemv_q8_0_stage_dp4a"),
    CLL_CU_FMT_OPS(CLL_TYPE_IQ4_NL, "gemv_iq4_nl_stage_dp4a"),
};

const cll_cu_fmt_ops *cll_cu_fmt_legacy(uint32_t type) {
    for (size_t i = 0; i < sizeof k_ops / sizeof k_ops[0]; i++)
        if (k_ops[i].type == type) return &k_ops[i];
    return NULL;
}
