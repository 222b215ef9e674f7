/* formats/quantize_kquant: reference weight quantizers for Q4_K, Q5_K and Q6_K (no importance
 * matrix), the search ggml's llama-quantize runs for those types without an imatrix:
 * per sub-block scale (and min) search, then 6/8-bit quantization of those scales
 * against the fp16 super-scale, then re-quantization of the values with the final scales.
 * Float operations are kept in the order ggml uses so the bytes match Q4_K.bin / Q5_K.bin / Q6_K.bin. */
#include <math.h>
#include <string.h>

#include "formats/dequant.h"

#define EPS_ZERO_GROUP 1e-15f

static inline int nearest_int(float fval) { /* round half even via the 1.5*2^23 trick */
    float val = fval + 12582912.f;
    int i;
    memcpy(&i, &val, sizeof(int));
    return (i & 0x007fffff) - 0x00400000;
}
static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Weighted least squares fit of x ~ scale * L + min (min <= 0), L in [0, nmax]: start
 * from the min/max grid, then try nstep+1 stretched grids and keep the lowest error.
 * Returns scale; *neg_min = -min. */
static float fit_scale_min(int n, int nmax, const float *x, const float *w, uint8_t *L, float *neg_min,
                           uint8_t *Laux, float rmin, float rdelta, int nstep) {
    float min = x[0], max = x[0], sum_w = w[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *neg_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        L[i] = (uint8_t)clampi(nearest_int(iscale * (x[i] - min)), 0, nmax);
        const float diff = scale * L[i] + min - x[i];
        best_error += w[i] * (diff * diff);
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clampi(nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                const float diff = this_scale * Laux[i] + this_min - x[i];
                cur_error += w[i] * (diff * diff);
            }
            if (cur_error < best_error) {
                memcpy(L, Laux, (size_t)n);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *neg_min = -min;
    return scale;
}

/* Q4_K and Q5_K share the search and the 6-bit scale/min packing; they differ in the
 * value range (nmax 15 / 31) and the search grid (rmin -1 / -0.5, 20 / 15 steps).
 * Fills d, dmin, scales of *hdr and the final levels L[256]. */
static void quantize_q45_K(const float *x, int nmax, float rmin, int nstep, uint16_t *d_out, uint16_t *dmin_out,
                           uint8_t packed[12], uint8_t L[CLL_QK_K]) {
    uint8_t Laux[32];
    float w[32], mins[8], scales[8];
    float max_scale = 0, max_min = 0; /* the min is subtracted, so scales are >= 0 */
    for (int j = 0; j < 8; ++j) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
        const float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) w[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = fit_scale_min(32, nmax, x + 32 * j, w, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    memset(packed, 0, 12);
    for (int j = 0; j < 8; ++j) {
        uint8_t ls = (uint8_t)nearest_int(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)nearest_int(inv_min * mins[j]);
        ls = ls < 63 ? ls : 63;
        lm = lm < 63 ? lm : 63;
        if (j < 4) {
            packed[j] = ls;
            packed[j + 4] = lm;
        } else {
            packed[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
            packed[j - 4] |= (uint8_t)((ls >> 4) << 6);
            packed[j - 0] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    *d_out = cll_f32_to_fp16(max_scale / 63.f);
    *dmin_out = cll_f32_to_fp16(max_min / 63.f);
    for (int j = 0; j < 8; ++j) { /* re-quantize against the scales as stored */
        uint8_t sc, m;
        cll_q4k_scale_min(j, packed, &sc, &m);
        const float d = cll_fp16_to_f32(*d_out) * sc;
        if (!d) continue;
        const float dm = cll_fp16_to_f32(*dmin_out) * m;
        for (int ii = 0; ii < 32; ++ii) L[32 * j + ii] = (uint8_t)clampi(nearest_int((x[32 * j + ii] + dm) / d), 0, nmax);
    }
}

void cll_quantize_q4_K(const float *x, void *dst, int64_t n) {
    cll_block_q4_K *y = dst;
    for (int64_t i = 0; i < n / CLL_QK_K; i++, x += CLL_QK_K) {
        uint8_t L[CLL_QK_K];
        quantize_q45_K(x, 15, -1.f, 20, &y[i].d, &y[i].dmin, y[i].scales, L);
        uint8_t *q = y[i].qs;
        for (int j = 0; j < CLL_QK_K; j += 64, q += 32)
            for (int l = 0; l < 32; ++l) q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
    }
}

void cll_quantize_q5_K(const float *x, void *dst, int64_t n) {
    cll_block_q5_K *y = dst;
    for (int64_t i = 0; i < n / CLL_QK_K; i++, x += CLL_QK_K) {
        uint8_t L[CLL_QK_K];
        quantize_q45_K(x, 31, -0.5f, 15, &y[i].d, &y[i].dmin, y[i].scales, L);
        uint8_t *ql = y[i].qs, m1 = 1, m2 = 2;
        memset(y[i].qh, 0, sizeof y[i].qh);
        for (int c = 0; c < CLL_QK_K; c += 64, ql += 32, m1 <<= 2, m2 <<= 2) {
            for (int j = 0; j < 32; ++j) {
                int l1 = L[c + j], l2 = L[c + j + 32];
                if (l1 > 15) { l1 -= 16; y[i].qh[j] |= m1; }
                if (l2 > 15) { l2 -= 16; y[i].qh[j] |= m2; }
                ql[j] = (uint8_t)(l1 | (l2 << 4));
            }
        }
    }
}

/* Symmetric fit x ~ scale * (L - nmax), L - nmax in [-nmax, nmax-1], weights x^2: start at
 * the grid through the largest magnitude, try 18 nearby grids, keep the best sum_lx^2/sum_l2. */
static float fit_scale_sym(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < EPS_ZERO_GROUP) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            const float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) L[i] = (int8_t)(nmax + clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

void cll_quantize_q6_K(const float *x, void *dst, int64_t n) {
    cll_block_q6_K *y = dst;
    for (int64_t i = 0; i < n / CLL_QK_K; i++, x += CLL_QK_K) {
        int8_t L[CLL_QK_K];
        float scales[16];
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < 16; ++ib) {
            scales[ib] = fit_scale_sym(16, 32, x + 16 * ib, L + 16 * ib);
            if (fabsf(scales[ib]) > max_abs_scale) {
                max_abs_scale = fabsf(scales[ib]);
                max_scale = scales[ib];
            }
        }
        memset(&y[i], 0, sizeof y[i]);
        if (max_abs_scale < EPS_ZERO_GROUP) continue;
        const float iscale = -128.f / max_scale;
        y[i].d = cll_f32_to_fp16(1 / iscale);
        for (int ib = 0; ib < 16; ++ib) {
            const int v = nearest_int(iscale * scales[ib]);
            y[i].scales[ib] = (int8_t)(v < 127 ? v : 127);
        }
        for (int j = 0; j < 16; ++j) {
            const float d = cll_fp16_to_f32(y[i].d) * y[i].scales[j];
            if (!d) continue;
            for (int ii = 0; ii < 16; ++ii) L[16 * j + ii] = (int8_t)(clampi(nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
        }
        uint8_t *ql = y[i].ql, *qh = y[i].qh;
        for (int j = 0; j < CLL_QK_K; j += 128, ql += 64, qh += 32) {
            for (int l = 0; l < 32; ++l) {
                const uint8_t q1 = L[j + l + 0] & 0xF, q2 = L[j + l + 32] & 0xF;
                const uint8_t q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
                ql[l + 0] = (uint8_t)(q1 | (q3 << 4));
                ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
                qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                  ((L[j + l + 96] >> 4) << 6));
            }
        }
    }
}
