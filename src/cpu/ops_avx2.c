/* cpu/ops_avx2: AVX2/FMA/F16C inner loops of attention (compiled with -mavx2 -mfma -mf16c;
 * called only when CPUID says the CPU has them). */
#include <immintrin.h>

#include "cpu/ops_simd.h"

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

float cll_ops_dot_f16_avx2(const float *q, const uint16_t *k, int32_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int32_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i))), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8),
                             _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i + 8))), a1);
    }
    for (; i + 8 <= n; i += 8)
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i))), a0);
    float s = hsum(_mm256_add_ps(a0, a1));
    for (; i < n; i++) s += q[i] * _cvtsh_ss(k[i]);
    return s;
}

float cll_ops_dot_f32_avx2(const float *q, const float *k, int32_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int32_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(k + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), _mm256_loadu_ps(k + i + 8), a1);
    }
    for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(k + i), a0);
    float s = hsum(_mm256_add_ps(a0, a1));
    for (; i < n; i++) s += q[i] * k[i];
    return s;
}

void cll_ops_axpy_f16_avx2(float *y, float a, const uint16_t *x, int32_t n) {
    const __m256 va = _mm256_set1_ps(a);
    int32_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))),
                                                _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += a * _cvtsh_ss(x[i]);
}

void cll_ops_axpy_f32_avx2(float *y, float a, const float *x, int32_t n) {
    const __m256 va = _mm256_set1_ps(a);
    int32_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += a * x[i];
}

void cll_ops_to_f16_avx2(uint16_t *dst, const float *src, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) dst[i] = _cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT);
}

/* ---- ggml-cpu's flash-attention numerics for an F16 cache (see cll_ops_attn_head_fa16) ---- */

/* ggml_vec_dot_f16 on an AVX2 build: 4 accumulators of 8 lanes, one FMA per 8 elements
 * of each 32-element step; then acc0 += acc2, acc1 += acc3, acc0 += acc1; the 8 lanes
 * are folded lo + hi and then by two horizontal adds. K mod 32 leftovers go in double. */
float cll_ops_dot_f16_ggml_avx2(const float *q, const uint16_t *k, int32_t n) {
    __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    const int32_t np = n & ~31;
    for (int32_t i = 0; i < np; i += 32)
        for (int j = 0; j < 4; j++)
            a[j] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i + 8 * j))),
                                   _mm256_loadu_ps(q + i + 8 * j), a[j]);
    a[0] = _mm256_add_ps(a[0], a[2]);
    a[1] = _mm256_add_ps(a[1], a[3]);
    a[0] = _mm256_add_ps(a[0], a[1]);
    const __m128 t0 = _mm_add_ps(_mm256_castps256_ps128(a[0]), _mm256_extractf128_ps(a[0], 1));
    const __m128 t1 = _mm_hadd_ps(t0, t0);
    double s = (double)_mm_cvtss_f32(_mm_hadd_ps(t1, t1));
    for (int32_t i = np; i < n; i++) s += (double)(q[i] * _cvtsh_ss(k[i]));
    return (float)s;
}

/* one online-softmax step on the fp16 accumulator: acc = fp16(acc * ms) when the max
 * moved (ggml_vec_scale_f16), then acc = fp16(fma(v, vs, acc)) (ggml_vec_mad_f16) */
void cll_ops_fa16_step_avx2(uint16_t *acc, const uint16_t *v, bool rescale, float ms, float vs, int32_t n) {
    const __m256 vms = _mm256_set1_ps(ms), vvs = _mm256_set1_ps(vs);
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 y = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(acc + i)));
        if (rescale)
            y = _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_mul_ps(y, vms), _MM_FROUND_TO_NEAREST_INT));
        y = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + i))), vvs, y);
        _mm_storeu_si128((__m128i *)(acc + i), _mm256_cvtps_ph(y, _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; i++) {
        float y = _cvtsh_ss(acc[i]);
        if (rescale) y = _cvtsh_ss(_cvtss_sh(y * ms, _MM_FROUND_TO_NEAREST_INT));
        acc[i] = _cvtss_sh(__builtin_fmaf(_cvtsh_ss(v[i]), vs, y), _MM_FROUND_TO_NEAREST_INT);
    }
}
