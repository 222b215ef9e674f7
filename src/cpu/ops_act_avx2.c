/* cpu/ops_act_avx2: SiLU(g) * u, 8 floats at a time with AVX2 + FMA, bit for bit the scalar loop
 * of cll_ops_silu_mul: the same vectorised glibc expf (FMA variant: x / ln2 * 32 in double, the
 * 32-entry 2^(i/32) table, a degree-3 polynomial, one rounding to float) as ops_act_avx512.c,
 * as two 4-double halves with a gathered table, then the same float ops in the same order.
 * The scalar expf calls were ~2.5% of an AVX2 pp512. Owns nothing. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "cpu/ops.h"
#include "cpu/ops_exp2tab.h"

/* the double result of glibc's expf for 4 floats (before its final rounding to float) */
static inline __m256d expf4d(__m128 x) {
    const __m256d xd = _mm256_cvtps_pd(x);
    const __m256d z = _mm256_mul_pd(_mm256_set1_pd(0x1.71547652b82fep0 * 32), xd);
    const __m256d sh = _mm256_set1_pd(0x1.8p+52); /* round to integer by the add */
    __m256d kd = _mm256_add_pd(z, sh);
    const __m256i ki = _mm256_castpd_si256(kd);
    kd = _mm256_sub_pd(kd, sh);
    const __m256d r = _mm256_sub_pd(z, kd);
    const __m256i idx = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
    const __m256i t = _mm256_add_epi64(_mm256_i64gather_epi64((const long long *)k_exp2_tab, idx, 8),
                                       _mm256_slli_epi64(ki, 47));
    const __m256d r2 = _mm256_mul_pd(r, r);
    const __m256d p = _mm256_fmadd_pd(_mm256_set1_pd(0x1.c6af84b912394p-5 / 32 / 32 / 32), r,
                                      _mm256_set1_pd(0x1.ebfce50fac4f3p-3 / 32 / 32));
    __m256d y = _mm256_fmadd_pd(_mm256_set1_pd(0x1.62e42ff0c52d6p-1 / 32), r, _mm256_set1_pd(1.0));
    return _mm256_mul_pd(_mm256_fmadd_pd(p, r2, y), _mm256_castsi256_pd(t));
}

static inline __m256 expf8(__m256 x) {
    const __m128 lo = _mm256_cvtpd_ps(expf4d(_mm256_castps256_ps128(x)));
    const __m128 hi = _mm256_cvtpd_ps(expf4d(_mm256_extractf128_ps(x, 1)));
    __m256 e = _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
    /* expf's special cases: overflow to inf above 0x1.62e42ep6, 0 below -0x1.9fe368p6, NaN */
    e = _mm256_blendv_ps(e, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, _mm256_set1_ps(0x1.62e42ep6f), _CMP_GT_OQ));
    e = _mm256_blendv_ps(e, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(-0x1.9fe368p6f), _CMP_LT_OQ));
    return _mm256_blendv_ps(e, _mm256_add_ps(x, x), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

void cll_ops_expf8_avx2(const float *x, float *y) { _mm256_storeu_ps(y, expf8(_mm256_loadu_ps(x))); }

void cll_ops_silu_mul_avx2(float *g, const float *u, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i);
        const __m256 e = expf8(_mm256_sub_ps(_mm256_setzero_ps(), x));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(one, e)), _mm256_loadu_ps(u + i)));
    }
    for (; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* ---- ggml-cpu's SiLU (reference numerics) ------------------------------------------------- */

/* ggml_v_expf (ggml-cpu vec.h, AVX2 + FMA; the ARM optimized-routines algorithm): 2^n by the
 * exponent bits, a degree-5 polynomial on the reduced argument, its own overflow/underflow
 * paths; max error ~1.5 ulp, so it differs from glibc's expf in many last bits */
static inline __m256 ggml_expf8(__m256 x) {
    const __m256 r = _mm256_set1_ps(0x1.8p23f);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
    const __m256 n = _mm256_sub_ps(z, r);
    const __m256 b =
        _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(z), 23);
    const __m256 k = _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_castps_si256(_mm256_set1_ps(1))));
    const __m256 an = _mm256_andnot_ps(_mm256_set1_ps(-0.f), n);
    const __m256 c = _mm256_cmp_ps(an, _mm256_set1_ps(126), _CMP_GT_OQ);
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 j = _mm256_fmadd_ps(
        _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                        _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
        u, _mm256_mul_ps(_mm256_set1_ps(0x1.ffffecp-1f), b));
    if (!_mm256_movemask_ps(c)) return _mm256_fmadd_ps(j, k, k);
    const __m256i g = _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ)),
                                       _mm256_set1_epi32((int)0x82000000u));
    const __m256 s1 = _mm256_castsi256_ps(_mm256_add_epi32(g, _mm256_set1_epi32(0x7f000000)));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_sub_epi32(e, g));
    const __m256 d = _mm256_cmp_ps(an, _mm256_set1_ps(192), _CMP_GT_OQ);
    return _mm256_or_ps(_mm256_and_ps(d, _mm256_mul_ps(s1, s1)),
                        _mm256_andnot_ps(d, _mm256_or_ps(_mm256_and_ps(c, _mm256_mul_ps(_mm256_fmadd_ps(s2, j, s2), s1)),
                                                         _mm256_andnot_ps(c, _mm256_fmadd_ps(k, j, k)))));
}

/* ggml_vec_swiglu_f32: silu(x) = x / (1 + ggml_expf(0 - x)), times u. The lanes are
 * independent, so any grouping of a row's vector part gives the same bits; what matters is
 * which elements ggml sends to its scalar tail (the last nc % 8 of a row: libm expf). */
void cll_ops_silu_mul_ggml_avx2(float *g, const float *u, int64_t c0, int64_t c1, int64_t nc) {
    const int64_t nv = nc - nc % 8; /* columns [0, nv) take the vector path */
    const __m256 one = _mm256_set1_ps(1.0f);
    int64_t i = c0;
    for (; i < c1 && i < nv; i += 8) {
        const int64_t m = (c1 < nv ? c1 : nv) - i; /* a partial vector at a chunk's end: via a buffer */
        float xb[8] = {0}, ub[8] = {0};
        const float *xp = g + (i - c0), *up = u + (i - c0);
        if (m < 8) {
            memcpy(xb, xp, (size_t)m * sizeof(float));
            memcpy(ub, up, (size_t)m * sizeof(float));
            xp = xb;
            up = ub;
        }
        const __m256 x = _mm256_loadu_ps(xp);
        const __m256 s = _mm256_div_ps(x, _mm256_add_ps(one, ggml_expf8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
        const __m256 y = _mm256_mul_ps(s, _mm256_loadu_ps(up));
        if (m < 8) {
            _mm256_storeu_ps(xb, y);
            memcpy(g + (i - c0), xb, (size_t)m * sizeof(float));
            i = i + m - 8; /* the loop's += 8 lands on i + m */
        } else {
            _mm256_storeu_ps(g + (i - c0), y);
        }
    }
    for (; i < c1; i++) {
        const float x = g[i - c0];
        g[i - c0] = x / (1.0f + expf(-x)) * u[i - c0];
    }
}
