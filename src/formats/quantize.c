/* formats/quantize: float32 -> block quantizers. Two kinds live here:
 *  - activation quantizers (Q8_0, Q8_1, Q8_K) that reproduce ggml-cpu's from_float byte
 *    for byte (act_Q8_*.bin): these feed the integer dot products;
 *  - weight quantizers for the legacy types, ggml's *_ref without an importance matrix
 *    (F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 bytes; K-quants are in quantize_kquant.c).
 * The rounding mode is part of the format contract: each function says which one. */
#include <math.h>
#include <string.h>

#include "formats/dequant.h"

#define F2H cll_f32_to_fp16

/* ggml's nearest_int: add 1.5*2^23 so the FPU rounds to the nearest integer, ties to
 * even, then read the integer out of the mantissa (|x| < 2^22 assumed). */
static inline int nearest_int(float fval) {
    float val = fval + 12582912.f;
    int i;
    memcpy(&i, &val, sizeof(int));
    return (i & 0x007fffff) - 0x00400000;
}

static float block_amax(const float *x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; j++) amax = fmaxf(amax, fabsf(x[j]));
    return amax;
}

/* Activation Q8_0, as ggml-cpu's AVX2 path: d = amax/127, id = 127/amax (not 1/d),
 * round-half-even (vroundps nearest). */
void cll_quantize_q8_0(const float *x, void *dst, int64_t n) {
    cll_block_q8_0 *y = dst;
    for (int64_t i = 0; i < n / CLL_QK8_0; i++, x += 32) {
        const float amax = block_amax(x, 32);
        const float d = amax / 127.f;
        const float id = amax != 0.0f ? 127.f / amax : 0.0f;
        y[i].d = F2H(d);
        for (int j = 0; j < 32; j++) y[i].qs[j] = (int8_t)nearbyintf(x[j] * id);
    }
}

/* Activation Q8_1: as Q8_0 plus s = fp16(d * sum(q)) with the integer sum. */
void cll_quantize_q8_1(const float *x, void *dst, int64_t n) {
    cll_block_q8_1 *y = dst;
    for (int64_t i = 0; i < n / CLL_QK8_1; i++, x += 32) {
        const float amax = block_amax(x, 32);
        const float d = amax / 127.f;
        const float id = amax != 0.0f ? 127.f / amax : 0.0f;
        int sum = 0;
        for (int j = 0; j < 32; j++) {
            y[i].qs[j] = (int8_t)nearbyintf(x[j] * id);
            sum += y[i].qs[j];
        }
        y[i].d = F2H(d);
        y[i].s = F2H(d * (float)sum);
    }
}

/* Activation Q8_K (ggml's reference, which ggml-cpu uses on x86): the scale maps the
 * element of largest magnitude to -127 (signed), nearest_int rounding, q clamped to 127. */
void cll_quantize_q8_K(const float *x, void *dst, int64_t n) {
    cll_block_q8_K *y = dst;
    for (int64_t i = 0; i < n / CLL_QK_K; i++, x += CLL_QK_K) {
        float max = 0, amax = 0;
        for (int j = 0; j < CLL_QK_K; j++) {
            const float ax = fabsf(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (!amax) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -127.f / max;
        for (int j = 0; j < CLL_QK_K; j++) {
            const int v = nearest_int(iscale * x[j]);
            y[i].qs[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int j = 0; j < CLL_QK_K / 16; j++) {
            int sum = 0;
            for (int k = 0; k < 16; k++) sum += y[i].qs[j * 16 + k];
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1 / iscale;
    }
}

/* ---- weight quantizers (ggml *_ref) ------------------------------------------------ */

void cll_quantize_f32(const float *x, void *dst, int64_t n) { memcpy(dst, x, (size_t)n * sizeof(float)); }

void cll_quantize_f16(const float *x, void *dst, int64_t n) {
    uint16_t *h = dst;
    for (int64_t i = 0; i < n; i++) h[i] = F2H(x[i]);
}

void cll_quantize_bf16(const float *x, void *dst, int64_t n) {
    uint16_t *h = dst;
    for (int64_t i = 0; i < n; i++) h[i] = cll_f32_to_bf16(x[i]);
}

/* Q8_0 weights: id = 1/d and roundf (half away from zero), unlike the activation path */
void cll_quantize_q8_0_ref(const float *x, void *dst, int64_t n) {
    cll_block_q8_0 *y = dst;
    for (int64_t i = 0; i < n / CLL_QK8_0; i++, x += 32) {
        const float amax = block_amax(x, 32);
        const float d = amax / 127.f;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = F2H(d);
        for (int j = 0; j < 32; j++) y[i].qs[j] = (int8_t)roundf(x[j] * id);
    }
}

/* signed value of largest magnitude (first one wins ties) */
static float block_signed_max(const float *x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

static void block_min_max(const float *x, int n, float *mn, float *mx) {
    float lo = INFINITY, hi = -INFINITY;
    for (int j = 0; j < n; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    *mn = lo;
    *mx = hi;
}

/* Q4_0: d = max/-8 so the extreme maps to -8; q = min(15, trunc(x/d + 8.5)) */
void cll_quantize_q4_0(const float *x, void *dst, int64_t n) {
    cll_block_q4_0 *y = dst;
    for (int64_t i = 0; i < n / CLL_QK4_0; i++, x += 32) {
        const float d = block_signed_max(x, 32) / -8;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = F2H(d);
        for (int j = 0; j < 16; j++) {
            const int8_t a = (int8_t)(x[j] * id + 8.5f), b = (int8_t)(x[16 + j] * id + 8.5f);
            const uint8_t x0 = (uint8_t)(a < 15 ? a : 15), x1 = (uint8_t)(b < 15 ? b : 15);
            y[i].qs[j] = (uint8_t)(x0 | (x1 << 4));
        }
    }
}

/* Q4_1: d = (max-min)/15, m = min; q = min(15, trunc((x-min)/d + 0.5)) */
void cll_quantize_q4_1(const float *x, void *dst, int64_t n) {
    cll_block_q4_1 *y = dst;
    for (int64_t i = 0; i < n / CLL_QK4_1; i++, x += 32) {
        float mn, mx;
        block_min_max(x, 32, &mn, &mx);
        const float d = (mx - mn) / ((1 << 4) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = F2H(d);
        y[i].m = F2H(mn);
        for (int j = 0; j < 16; j++) {
            const int8_t a = (int8_t)((x[j] - mn) * id + 0.5f), b = (int8_t)((x[16 + j] - mn) * id + 0.5f);
            const uint8_t x0 = (uint8_t)(a < 15 ? a : 15), x1 = (uint8_t)(b < 15 ? b : 15);
            y[i].qs[j] = (uint8_t)(x0 | (x1 << 4));
        }
    }
}

/* Q5_0: d = max/-16; q = min(31, trunc(x/d + 16.5)); bit 4 of element j -> qh bit j */
void cll_quantize_q5_0(const float *x, void *dst, int64_t n) {
    cll_block_q5_0 *y = dst;
    for (int64_t i = 0; i < n / CLL_QK5_0; i++, x += 32) {
        const float d = block_signed_max(x, 32) / -16;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = F2H(d);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            const int8_t a = (int8_t)(x[j] * id + 16.5f), b = (int8_t)(x[16 + j] * id + 16.5f);
            const uint8_t x0 = (uint8_t)(a < 31 ? a : 31), x1 = (uint8_t)(b < 31 ? b : 31);
            y[i].qs[j] = (uint8_t)((x0 & 0x0F) | ((x1 & 0x0F) << 4));
            qh |= ((x0 & 0x10u) >> 4) << j;
            qh |= ((x1 & 0x10u) >> 4) << (j + 16);
        }
        memcpy(y[i].qh, &qh, 4);
    }
}

/* Q5_1: d = (max-min)/31, m = min; q = trunc((x-min)/d + 0.5) */
void cll_quantize_q5_1(const float *x, void *dst, int64_t n) {
    cll_block_q5_1 *y = dst;
    for (int64_t i = 0; i < n / CLL_QK5_1; i++, x += 32) {
        float mn, mx;
        block_min_max(x, 32, &mn, &mx);
        const float d = (mx - mn) / ((1 << 5) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = F2H(d);
        y[i].m = F2H(mn);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            const uint8_t x0 = (uint8_t)((x[j] - mn) * id + 0.5f), x1 = (uint8_t)((x[16 + j] - mn) * id + 0.5f);
            y[i].qs[j] = (uint8_t)((x0 & 0x0F) | ((x1 & 0x0F) << 4));
            qh |= ((x0 & 0x10u) >> 4) << j;
            qh |= ((x1 & 0x10u) >> 4) << (j + 16);
        }
        memcpy(y[i].qh, &qh, 4);
    }
}
