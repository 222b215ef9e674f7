/* formats/traits: the one table of GGML types — block geometry for every id ggml
 * defines, dequantizers/quantizers for the ones we implement. */
#include "formats/dequant.h"

/* Dequantizers live in dequant_{legacy,kquant,iq}.c, quantizers in quantize.c.
 * weight_ok marks the types the engine serves; IQ1_S/IQ1_M/TQ1_0/TQ2_0/MXFP4 dequantize bit-exactly
 * but no CPU/CUDA kernels are promised for them, so they are not weight_ok. Q8_1 and Q8_K
 * are activation-only formats: they have a quantizer and no to_f32 (ggml has none). */
static const cll_type_traits k_traits[CLL_TYPE_COUNT] = {
    [CLL_TYPE_F32] = {"f32", 1, 4, true, cll_dequant_f32, cll_quantize_f32, CLL_TYPE_F32},
    [CLL_TYPE_F16] = {"f16", 1, 2, true, cll_dequant_f16, cll_quantize_f16, CLL_TYPE_F16},
    [CLL_TYPE_Q4_0] = {"q4_0", 32, 18, true, cll_dequant_q4_0, cll_quantize_q4_0, CLL_TYPE_Q8_0},
    [CLL_TYPE_Q4_1] = {"q4_1", 32, 20, true, cll_dequant_q4_1, cll_quantize_q4_1, CLL_TYPE_Q8_1},
    [CLL_TYPE_Q5_0] = {"q5_0", 32, 22, true, cll_dequant_q5_0, cll_quantize_q5_0, CLL_TYPE_Q8_0},
    [CLL_TYPE_Q5_1] = {"q5_1", 32, 24, true, cll_dequant_q5_1, cll_quantize_q5_1, CLL_TYPE_Q8_1},
    [CLL_TYPE_Q8_0] = {"q8_0", 32, 34, true, cll_dequant_q8_0, cll_quantize_q8_0_ref, CLL_TYPE_Q8_0},
    [CLL_TYPE_Q8_1] = {"q8_1", 32, 36, false, NULL, cll_quantize_q8_1, CLL_TYPE_Q8_1},
    [CLL_TYPE_Q2_K] = {"q2_K", 256, 84, true, cll_dequant_q2_K, NULL, CLL_TYPE_Q8_K},
    [CLL_TYPE_Q3_K] = {"q3_K", 256, 110, true, cll_dequant_q3_K, NULL, CLL_TYPE_Q8_K},
    [CLL_TYPE_Q4_K] = {"q4_K", 256, 144, true, cll_dequant_q4_K, cll_quantize_q4_K, CLL_TYPE_Q8_K},
    [CLL_TYPE_Q5_K] = {"q5_K", 256, 176, true, cll_dequant_q5_K, cll_quantize_q5_K, CLL_TYPE_Q8_K},
    [CLL_TYPE_Q6_K] = {"q6_K", 256, 210, true, cll_dequant_q6_K, cll_quantize_q6_K, CLL_TYPE_Q8_K},
    [CLL_TYPE_Q8_K] = {"q8_K", 256, 292, false, NULL, cll_quantize_q8_K, CLL_TYPE_Q8_K},
    [CLL_TYPE_IQ2_XXS] = {"iq2_xxs", 256, 66, true, cll_dequant_iq2_xxs, NULL, CLL_TYPE_Q8_K},
    [CLL_TYPE_IQ2_XS] = {"iq2_xs", 256, 74, true, cll_dequant_iq2_xs, NULL, CLL_TYPE_Q8_K},
    [CLL_TYPE_IQ3_XXS] = {"iq3_xxs", 256, 98, true, cll_dequant_iq3_xxs, NULL, CLL_TYPE_Q8_K},
    [CLL_TYPE_IQ1_S] = {"iq1_s", 256, 50, false, cll_dequant_iq1_s, NULL, CLL_TYPE_Q8_K},
    [CLL_TYPE_IQ4_NL] = {"iq4_nl", 32, 18, true, cll_dequant_iq4_nl, NULL, CLL_TYPE_Q8_0},
    [CLL_TYPE_IQ3_S] = {"iq3_s", 256, 110, true, cll_dequant_iq3_s, NULL, CLL_TYPE_Q8_K},
    [CLL_TYPE_IQ2_S] = {"iq2_s", 256, 82, true, cll_dequant_iq2_s, NULL, CLL_TYPE_Q8_K},
    [CLL_TYPE_IQ4_XS] = {"iq4_xs", 256, 136, true, cll_dequant_iq4_xs, NULL, CLL_TYPE_Q8_K},
    [CLL_TYPE_I8] = {"i8", 1, 1, false, NULL, NULL, CLL_TYPE_I8},
    [CLL_TYPE_I16] = {"i16", 1, 2, false, NULL, NULL, CLL_TYPE_I16},
    [CLL_TYPE_I32] = {"i32", 1, 4, false, NULL, NULL, CLL_TYPE_I32},
    [CLL_TYPE_I64] = {"i64", 1, 8, false, NULL, NULL, CLL_TYPE_I64},
    [CLL_TYPE_F64] = {"f64", 1, 8, false, NULL, NULL, CLL_TYPE_F64},
    [CLL_TYPE_IQ1_M] = {"iq1_m", 256, 56, false, cll_dequant_iq1_m, NULL, CLL_TYPE_Q8_K},
    [CLL_TYPE_BF16] = {"bf16", 1, 2, true, cll_dequant_bf16, cll_quantize_bf16, CLL_TYPE_BF16},
    [CLL_TYPE_TQ1_0] = {"tq1_0", 256, 54, false, cll_dequant_tq1_0, NULL, CLL_TYPE_Q8_K},
    [CLL_TYPE_TQ2_0] = {"tq2_0", 256, 66, false, cll_dequant_tq2_0, NULL, CLL_TYPE_Q8_K},
    [CLL_TYPE_MXFP4] = {"mxfp4", 32, 17, false, cll_dequant_mxfp4, NULL, CLL_TYPE_Q8_0},
};

const cll_type_traits *cll_type_traits_get(uint32_t type) {
    if (type >= CLL_TYPE_COUNT || k_traits[type].blck == 0) return NULL;
    return &k_traits[type];
}

const char *cll_type_name(uint32_t type) {
    const cll_type_traits *t = cll_type_traits_get(type);
    return t ? t->name : "unknown";
}

uint64_t cll_row_bytes(uint32_t type, uint64_t n) {
    const cll_type_traits *t = cll_type_traits_get(type);
    if (!t || n % t->blck) return 0;
    uint64_t r;
    if (!cll_mul_ok(n / t->blck, t->type_size, &r)) return 0;
    return r;
}
