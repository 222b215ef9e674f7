/* cpu/ops_act_avx512: SiLU(g) * u, 8 floats at a time (AVX-512F/DQ), bit for bit the scalar
 * loop of cll_ops_silu_mul: e^-x is glibc's expf algorithm (the FMA variant its ifunc picks on
 * every AVX-512 CPU: x / ln2 * 32 in double, a 32-entry table of 2^(i/32), a degree-3
 * polynomial, one rounding to float) vectorised, then the same float ops in the same order.
 * Checked against expf on all 2^32 floats (bit-identical; tests/cpu_kernels_test.c repeats it
 * on a sample). The scalar expf calls were ~6% of a pp512. Owns nothing. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "cpu/ops.h"
#include "cpu/ops_exp2tab.h"

static inline __m256 expf8(__m256 x) {
    const __m512d xd = _mm512_cvtps_pd(x);
    const __m512d z = _mm512_mul_pd(_mm512_set1_pd(0x1.71547652b82fep0 * 32), xd);
    const __m512d sh = _mm512_set1_pd(0x1.8p+52); /* round to integer by the add */
    __m512d kd = _mm512_add_pd(z, sh);
    const __m512i ki = _mm512_castpd_si512(kd);
    kd = _mm512_sub_pd(kd, sh);
    const __m512d r = _mm512_sub_pd(z, kd);
    const __m512i idx = _mm512_and_si512(ki, _mm512_set1_epi64(31));
    const __m512i *tab = (const __m512i *)k_exp2_tab;
    const __m512i t0 = _mm512_permutex2var_epi64(_mm512_loadu_si512(tab), idx, _mm512_loadu_si512(tab + 1));
    const __m512i t1 = _mm512_permutex2var_epi64(_mm512_loadu_si512(tab + 2), idx, _mm512_loadu_si512(tab + 3));
    const __m512i t = _mm512_add_epi64(_mm512_mask_blend_epi64(_mm512_test_epi64_mask(idx, _mm512_set1_epi64(16)), t0, t1),
                                       _mm512_slli_epi64(ki, 47));
    const __m512d r2 = _mm512_mul_pd(r, r);
    const __m512d p = _mm512_fmadd_pd(_mm512_set1_pd(0x1.c6af84b912394p-5 / 32 / 32 / 32), r,
                                      _mm512_set1_pd(0x1.ebfce50fac4f3p-3 / 32 / 32));
    __m512d y = _mm512_fmadd_pd(_mm512_set1_pd(0x1.62e42ff0c52d6p-1 / 32), r, _mm512_set1_pd(1.0));
    y = _mm512_mul_pd(_mm512_fmadd_pd(p, r2, y), _mm512_castsi512_pd(t));
    __m256 e = _mm512_cvtpd_ps(y);
    /* expf's special cases: overflow to inf above 0x1.62e42ep6, 0 below -0x1.9fe368p6, NaN */
    e = _mm256_mask_blend_ps(_mm256_cmp_ps_mask(x, _mm256_set1_ps(0x1.62e42ep6f), _CMP_GT_OQ), e, _mm256_set1_ps(INFINITY));
    e = _mm256_mask_blend_ps(_mm256_cmp_ps_mask(x, _mm256_set1_ps(-0x1.9fe368p6f), _CMP_LT_OQ), e, _mm256_setzero_ps());
    return _mm256_mask_blend_ps(_mm256_cmp_ps_mask(x, x, _CMP_UNORD_Q), e, _mm256_add_ps(x, x));
}

void cll_ops_expf8_avx512(const float *x, float *y) { _mm256_storeu_ps(y, expf8(_mm256_loadu_ps(x))); }

void cll_ops_silu_mul_avx512(float *g, const float *u, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i);
        const __m256 e = expf8(_mm256_sub_ps(_mm256_setzero_ps(), x));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(one, e)), _mm256_loadu_ps(u + i)));
    }
    for (; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}
