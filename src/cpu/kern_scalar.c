/* cpu/kern_scalar: the portable row for every weight type. Weights are dequantized one
 * block at a time with formats' reference to_f32 and dotted with the activations as the
 * vec_dot_type carries them (d*q per block); Q4_1/Q5_1 use ggml's m*s form with the
 * fp16 block sum of Q8_1, so the scalar row lands where ggml's integer dot does. */
#include <string.h>

#include "cpu/kern_common.h"

/* dot of one row with one token, block by block; tmp holds one dequantized block */
static float dot_row(const kern_args *a, const uint8_t *w, const uint8_t *act) {
    const cll_type_traits *tr = cll_type_traits_get(a->wtype);
    const int64_t blk = tr->blck, nb = a->cols / blk;
    float wf[256];
    double sum = 0; /* double: the scalar row is the careful one */
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
    case CLL_TYPE_Q4_1:
    case CLL_TYPE_Q5_1: {
        const cll_block_q8_1 *ab = (const cll_block_q8_1 *)act;
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *wb = w + b * tr->type_size;
            uint16_t dh, mh;
            memcpy(&dh, wb, 2);
            memcpy(&mh, wb + 2, 2);
            const bool q5 = a->wtype == CLL_TYPE_Q5_1;
            const uint8_t *qs = wb + (q5 ? 8 : 4);
            uint32_t qh = 0;
            if (q5) memcpy(&qh, wb + 4, 4);
            int isum = 0;
            for (int j = 0; j < 32; j++) {
                int q = j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
                if (q5) q |= (int)((qh >> j) & 1) << 4;
                isum += q * ab[b].qs[j];
            }
            const float d = cll_fp16_to_f32(dh), m = cll_fp16_to_f32(mh);
            sum += (double)(d * cll_fp16_to_f32(ab[b].d)) * isum + (double)m * cll_fp16_to_f32(ab[b].s);
        }
        return (float)sum;
    }
    default: break;
    }
    const int vdt = (int)tr->vec_dot_type;
    for (int64_t b = 0; b < nb; b++) {
        tr->to_f32(w + b * tr->type_size, wf, blk);
        if (vdt == CLL_TYPE_Q8_0) {
            const cll_block_q8_0 *ab = (const cll_block_q8_0 *)act + b;
            const float d = cll_fp16_to_f32(ab->d);
            float s = 0;
            for (int j = 0; j < 32; j++) s += wf[j] * ab->qs[j];
            sum += (double)s * d;
        } else { /* Q8_K */
            const cll_block_q8_K *ab = (const cll_block_q8_K *)act + b;
            float s = 0;
            for (int j = 0; j < 256; j++) s += wf[j] * ab->qs[j];
            sum += (double)s * ab->d;
        }
    }
    return (float)sum;
}

void cll_kern_run_scalar(const kern_args *a, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++)
        for (int64_t t = 0; t < a->n; t++)
            a->y[t * a->ldy + r] = dot_row(a, a->w + r * a->w_row_bytes, a->act + t * a->act_stride);
}
