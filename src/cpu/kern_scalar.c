/* cpu/kern_scalar: the portable row for every weight type: formats' reference integer
 * dot (cll_vec_dot_ref) for the block types, plain float loops for F32/F16/BF16 (F16
 * with fp16-rounded activations, as ggml-cpu rounds them before its F16 dot). */
#include <string.h>

#include "cpu/kern_common.h"

/* dot of one row with one token, block by block; tmp holds one dequantized block */
static float dot_row(const kern_args *a, const uint8_t *w, const uint8_t *act) {
    switch (a->wtype) {
    case CLL_TYPE_F32: {
        const float *x = (const float *)act, *ww = (const float *)w;
        float s = 0;
        for (int64_t i = 0; i < a->cols; i++) s += ww[i] * x[i];
        return s;
    }
    case CLL_TYPE_F16: {
        const uint16_t *x = (const uint16_t *)act, *ww = (const uint16_t *)w;
        float s = 0;
        for (int64_t i = 0; i < a->cols; i++) s += cll_fp16_to_f32(ww[i]) * cll_fp16_to_f32(x[i]);
        return s;
    }
    case CLL_TYPE_BF16: {
        const uint16_t *x = (const uint16_t *)act, *ww = (const uint16_t *)w;
        float s = 0;
        for (int64_t i = 0; i < a->cols; i++) s += cll_bf16_to_f32(ww[i]) * cll_bf16_to_f32(x[i]);
        return s;
    }
    default: break;
    }
    /* block types: formats' reference integer dot on ggml's activation blocks */
    return cll_vec_dot_ref(a->wtype, w, act, a->cols);
}

void cll_kern_run_scalar(const kern_args *a, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++)
        for (int64_t t = 0; t < a->n; t++)
            a->y[t * a->ldy + r] = dot_row(a, a->w + r * a->w_row_bytes, a->act + t * a->act_stride);
}
