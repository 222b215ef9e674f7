/* cpu/ops_exp512: e^x on 16 floats for the AVX-512 ops (the attention tiles): a degree-6
 * polynomial on the Cody-Waite reduced argument and vscalefps, within ~2 ulp of expf.
 * Owns nothing. Rule: include only from *_avx512.c files. */
#ifndef CLL_CPU_OPS_EXP512_H
#define CLL_CPU_OPS_EXP512_H

#include <immintrin.h>

/* e^x for x <= 88, within ~2 ulp of expf on [-87, 88]; below -87 (and NaN) it gives 0: e^x is under
 * FLT_MIN there, and a denormal result (what vscalefps makes of 2^-127..2^-149) costs a microcode
 * assist per use on Intel cores: a sharp softmax's tail of them made the prefill attention of a
 * 1B-shaped file 2.7x slower on the Xeon box (the AVX2 exp clamps at -87 for the same reason) */
static inline __m512 exp512(__m512 x) {
    const __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_GE_OQ);
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 720.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_maskz_scalef_ps(live, p, n);
}

#endif
