/* cpu/kern_ggml: matmul rows that reproduce ggml-cpu's AVX2 vec_dot operation order bit for
 * bit (the reference-numerics mode, CLLAMA_NUMERICS_GGML): same activation quantizer, same
 * integer lanes, same float multiply/fma/horizontal-sum sequence per block. They read the
 * file layout, are never a default and never crowned (not bit-exact with the default rows);
 * a model loaded in ggml numerics selects them through cll_kernels_numerics_scope.
 * Rule: a row is listed here only after its outputs matched llama.cpp's own matmul outputs
 * with 0 differing elements: tests/ggml_numerics_test.c checks every row against ggml's
 * vec_dot (tests/golden/ggml_numerics.json), the real-model goldens end to end.
 * Covered: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_NL IQ4_XS; every other type
 * (F32 F16 BF16 and the IQ2/IQ3 grids) falls back to its usual row with a warning naming the site. */
#ifndef CLL_CPU_KERN_GGML_H
#define CLL_CPU_KERN_GGML_H

#include "cpu/kern_common.h"

/* Q8_0-activation types (q4_0, q5_0, q8_0, iq4_nl), Q8_1-activation types (q4_1, q5_1) and
 * Q8_K-activation types (q2_K .. q6_K, iq4_xs) */
extern const kern_impl cll_kern_ggml_impl_q8_0x;
extern const kern_impl cll_kern_ggml_impl_q8_1;
extern const kern_impl cll_kern_ggml_impl_q8_K;
bool cll_kern_ggml_supports(const cll_kernel_row *r, const cll_kernel_shape *s);

/* the row tag cll_kernels_numerics_scope("ggml") selects */
#define CLL_KERN_GGML_PARAMS "layout=plain numerics=ggml (ggml-cpu AVX2 vec_dot order)"
#define CLL_KERN_GGML_ROW(T, ID, IMPL)                                                                      \
    {"matmul_" #T "_avx2_ggml", CLL_KOP_MATMUL, ID, CLL_ISA_AVX2, CLL_KERN_GGML_PARAMS, KLAYOUT_PLAIN, 1,   \
     cll_kern_ggml_supports, false, false, &IMPL}
/* appended at the end of the CPU table (kern_table.c): never the first choice of a shape */
#define CLL_KERN_GGML_ROWS                                                                                  \
    CLL_KERN_GGML_ROW(q4_0, CLL_TYPE_Q4_0, cll_kern_ggml_impl_q8_0x),                                      \
        CLL_KERN_GGML_ROW(q4_1, CLL_TYPE_Q4_1, cll_kern_ggml_impl_q8_1),                                   \
        CLL_KERN_GGML_ROW(q5_0, CLL_TYPE_Q5_0, cll_kern_ggml_impl_q8_0x),                                  \
        CLL_KERN_GGML_ROW(q5_1, CLL_TYPE_Q5_1, cll_kern_ggml_impl_q8_1),                                   \
        CLL_KERN_GGML_ROW(q8_0, CLL_TYPE_Q8_0, cll_kern_ggml_impl_q8_0x),                                  \
        CLL_KERN_GGML_ROW(q2_K, CLL_TYPE_Q2_K, cll_kern_ggml_impl_q8_K),                                   \
        CLL_KERN_GGML_ROW(q3_K, CLL_TYPE_Q3_K, cll_kern_ggml_impl_q8_K),                                   \
        CLL_KERN_GGML_ROW(q4_K, CLL_TYPE_Q4_K, cll_kern_ggml_impl_q8_K),                                   \
        CLL_KERN_GGML_ROW(q5_K, CLL_TYPE_Q5_K, cll_kern_ggml_impl_q8_K),                                   \
        CLL_KERN_GGML_ROW(q6_K, CLL_TYPE_Q6_K, cll_kern_ggml_impl_q8_K),                                   \
        CLL_KERN_GGML_ROW(iq4_nl, CLL_TYPE_IQ4_NL, cll_kern_ggml_impl_q8_0x),                              \
        CLL_KERN_GGML_ROW(iq4_xs, CLL_TYPE_IQ4_XS, cll_kern_ggml_impl_q8_K)

#endif
