/* cpu/ops: scalar reference versions of the non-matmul ops (see ops.h). */
#include "cpu/ops.h"

#include <math.h>

#include "cpu/ops_simd.h"
#include "kernels/registry.h"
#include "formats/formats.h"

/* AVX2 + FMA + F16C: the inner loops of attention and fp16 stores (checked per call: the
 * check is one load, and no global state is kept) */
static inline bool have_avx2(void) {
    /* the registry's CPUID probe (clang's __builtin_cpu_supports has no "f16c") */
    return (cll_kernels_cpu_features() & CLL_ISA_AVX2) != 0; /* AVX2 implies FMA+F16C+BMI2 there */
}

void cll_ops_rmsnorm(float *y, const float *x, const float *w, int64_t n, float eps) {
    double sum = 0.0; /* ggml sums squares in double */
    for (int64_t i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / (double)n);
    const float scale = 1.0f / sqrtf(mean + eps);
    if (w)
        for (int64_t i = 0; i < n; i++) y[i] = (x[i] * scale) * w[i];
    else
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * scale;
}

void cll_ops_rope_cs(float *cs, int32_t pos, int32_t n_rot, float base, float freq_scale, const float *ff) {
    /* theta_i = pos * base^(-2i/n_rot), iterated in float as ggml does */
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    float theta = (float)pos;
    for (int32_t i = 0; i < n_rot / 2; i++) {
        const float t = freq_scale * (ff ? theta / ff[i] : theta);
        cs[2 * i] = cosf(t);
        cs[2 * i + 1] = sinf(t);
        theta *= theta_scale;
    }
}

void cll_ops_rope_apply(float *x, int32_t n_heads, int32_t hd, int32_t n_rot, const float *cs, cll_rope_kind kind) {
    const int32_t half = n_rot / 2;
    for (int32_t h = 0; h < n_heads; h++) {
        float *xh = x + (int64_t)h * hd;
        if (kind == CLL_ROPE_NEOX) {
            for (int32_t i = 0; i < half; i++) {
                const float c = cs[2 * i], s = cs[2 * i + 1];
                const float a = xh[i], b = xh[i + half];
                xh[i] = a * c - b * s;
                xh[i + half] = a * s + b * c;
            }
        } else {
            for (int32_t i = 0; i < half; i++) {
                const float c = cs[2 * i], s = cs[2 * i + 1];
                const float a = xh[2 * i], b = xh[2 * i + 1];
                xh[2 * i] = a * c - b * s;
                xh[2 * i + 1] = a * s + b * c;
            }
        }
    }
}

void cll_ops_silu_mul(float *g, const float *u, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const float x = g[i];
        g[i] = x / (1.0f + expf(-x)) * u[i];
    }
}

void cll_ops_gelu_table_init(uint16_t *tab) {
    const float k_sqrt_2_over_pi = 0.79788456080286535587989211986876f, k_a = 0.044715f;
    for (uint32_t i = 0; i < 65536; i++) {
        const float x = cll_fp16_to_f32((uint16_t)i);
        const float y = 0.5f * x * (1.0f + tanhf(k_sqrt_2_over_pi * x * (1.0f + k_a * x * x)));
        tab[i] = cll_f32_to_fp16(y);
    }
}

void cll_ops_gelu_mul(float *g, const float *u, int64_t n, const uint16_t *tab) {
    for (int64_t i = 0; i < n; i++) {
        const float x = g[i];
        float y;
        if (x <= -10.0f)
            y = 0.0f;
        else if (x >= 10.0f)
            y = x;
        else
            y = cll_fp16_to_f32(tab[cll_f32_to_fp16(x)]);
        g[i] = y * u[i];
    }
}

void cll_ops_to_f16(uint16_t *dst, const float *src, int64_t n) {
    if (have_avx2()) {
        cll_ops_to_f16_avx2(dst, src, n);
        return;
    }
    for (int64_t i = 0; i < n; i++) dst[i] = cll_f32_to_fp16(src[i]);
}

void cll_ops_attn_head(const float *q, const void *k, const void *v, int64_t ks, int64_t vs, bool kv_f16,
                       int32_t lo, int32_t hi, int32_t hd_k, int32_t hd_v, float scale, float *scores, float *out) {
    const int32_t nk = hi - lo;
    const bool simd = have_avx2();
    float mx = -INFINITY;
    for (int32_t j = 0; j < nk; j++) {
        float s = 0.0f;
        if (kv_f16) {
            const uint16_t *kr = (const uint16_t *)k + (int64_t)(lo + j) * ks;
            if (simd)
                s = cll_ops_dot_f16_avx2(q, kr, hd_k);
            else
                for (int32_t d = 0; d < hd_k; d++) s += q[d] * cll_fp16_to_f32(kr[d]);
        } else {
            const float *kr = (const float *)k + (int64_t)(lo + j) * ks;
            if (simd)
                s = cll_ops_dot_f32_avx2(q, kr, hd_k);
            else
                for (int32_t d = 0; d < hd_k; d++) s += q[d] * kr[d];
        }
        s *= scale;
        scores[j] = s;
        if (s > mx) mx = s;
    }
    double sum = 0.0;
    for (int32_t j = 0; j < nk; j++) {
        const float e = expf(scores[j] - mx);
        scores[j] = e;
        sum += (double)e;
    }
    const float inv = (float)(1.0 / sum);
    for (int32_t d = 0; d < hd_v; d++) out[d] = 0.0f;
    for (int32_t j = 0; j < nk; j++) {
        const float w = scores[j] * inv;
        if (kv_f16) {
            const uint16_t *vr = (const uint16_t *)v + (int64_t)(lo + j) * vs;
            if (simd)
                cll_ops_axpy_f16_avx2(out, w, vr, hd_v);
            else
                for (int32_t d = 0; d < hd_v; d++) out[d] += w * cll_fp16_to_f32(vr[d]);
        } else {
            const float *vr = (const float *)v + (int64_t)(lo + j) * vs;
            if (simd)
                cll_ops_axpy_f32_avx2(out, w, vr, hd_v);
            else
                for (int32_t d = 0; d < hd_v; d++) out[d] += w * vr[d];
        }
    }
}
