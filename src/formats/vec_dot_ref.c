/* formats/vec_dot_ref: the reference integer dot products (weight row x quantized
 * activation row). Each block type is first unpacked into small integers plus float
 * scales (dot_unpack.c), then one loop per activation family does exact integer sums
 * per sub-block and applies the scales, so every type shares the same, easily checked
 * arithmetic. Why integers: that is what ggml's kernels compute; only the order of the
 * float accumulation differs between implementations. */
#include <math.h>

#include "formats/dot_unpack.h"

/* 32-element block types against Q8_0 / Q8_1 */
static float dot_q8_0_family(uint32_t wtype, const void *w, const cll_block_q8_0 *y, int64_t nb) {
    float sumf = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        cll_unpacked32 u;
        cll_dot_unpack32(wtype, w, i, &u);
        int sumi = 0;
        for (int j = 0; j < 32; j++) sumi += u.v[j] * y[i].qs[j];
        sumf += (float)sumi * (u.d * cll_fp16_to_f32(y[i].d));
    }
    return sumf;
}

static float dot_q8_1_family(uint32_t wtype, const void *w, const cll_block_q8_1 *y, int64_t nb) {
    float sumf = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        cll_unpacked32 u;
        cll_dot_unpack32(wtype, w, i, &u);
        int sumi = 0;
        for (int j = 0; j < 32; j++) sumi += u.v[j] * y[i].qs[j];
        /* x = d*q + m: sum(x*y) = d*dy*sum(q*qy) + m*(dy*sum(qy)) = ... + m*s */
        sumf += (u.d * cll_fp16_to_f32(y[i].d)) * (float)sumi + u.m * cll_fp16_to_f32(y[i].s);
    }
    return sumf;
}

/* 256-element super-block types against Q8_K */
static float dot_q8_K_family(uint32_t wtype, const void *w, const cll_block_q8_K *y, int64_t nb) {
    float sumf = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        cll_unpacked256 u;
        cll_dot_unpack256(wtype, w, i, &u);
        int isum = 0, msum = 0;
        for (int sb = 0; sb < 16; sb++) {
            int s = 0;
            for (int j = 16 * sb; j < 16 * sb + 16; j++) s += u.v[j] * y[i].qs[j];
            isum += u.sc[sb] * s;
            msum += u.m[sb] * y[i].bsums[sb];
        }
        /* x = d*sc*v - dmin*m per 16: sum(x*y) = dy*(d*sum(sc*v.qy) - dmin*sum(m*bsums)) */
        sumf += (y[i].d * u.d) * (float)isum - (y[i].d * u.dmin) * (float)msum;
    }
    return sumf;
}

float cll_vec_dot_ref(uint32_t wtype, const void *wrow, const void *act_row, int64_t n) {
    const cll_type_traits *t = cll_type_traits_get(wtype);
    if (!t || n <= 0 || n % t->blck) return NAN;
    switch (wtype) {
    case CLL_TYPE_F32: {
        const float *w = wrow, *x = act_row;
        float s = 0.0f;
        for (int64_t i = 0; i < n; i++) s += w[i] * x[i];
        return s;
    }
    case CLL_TYPE_F16: {
        const uint16_t *w = wrow;
        const float *x = act_row;
        float s = 0.0f;
        for (int64_t i = 0; i < n; i++) s += cll_fp16_to_f32(w[i]) * x[i];
        return s;
    }
    case CLL_TYPE_BF16: {
        const uint16_t *w = wrow;
        const float *x = act_row;
        float s = 0.0f;
        for (int64_t i = 0; i < n; i++) s += cll_bf16_to_f32(w[i]) * cll_bf16_to_f32(cll_f32_to_bf16(x[i]));
        return s;
    }
    default: break;
    }
    if (!cll_dot_unpack_supported(wtype)) return NAN;
    const int64_t nb = n / t->blck;
    switch (t->vec_dot_type) {
    case CLL_TYPE_Q8_0: return dot_q8_0_family(wtype, wrow, act_row, nb);
    case CLL_TYPE_Q8_1: return dot_q8_1_family(wtype, wrow, act_row, nb);
    case CLL_TYPE_Q8_K: return dot_q8_K_family(wtype, wrow, act_row, nb);
    default: return NAN;
    }
}
