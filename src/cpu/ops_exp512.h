/* cpu/ops_exp512: e^x on 16 floats for the AVX-512 ops (the attention tiles): a degree-6
 * polynomial on the Cody-Waite reduced argument and vscalefps, within ~2 ulp of expf.
 * Owns nothing. Rule: include only from *_avx512.c files. */
#ifndef CLL_CPU_OPS_EXP512_H
#define CLL_CPU_OPS_EXP512_H

#include <immintrin.h>

/* e^x for x <= 88, within ~2 ulp of expf on [-69, 88]; below -69 (and NaN) it gives 0. A softmax weight
 * under e^-69 (~2^-100 of the best key's) changes no sum, while a denormal anywhere (e^x under FLT_MIN,
 * or a weight that small times a value below 1 landing in an empty accumulator) costs a microcode assist
 * per use on Intel cores: a sharp softmax's tail of them made the prefill attention of a 1B-shaped file
 * 2.7x slower on the Xeon box. A weight of at least 2^-100 times an f16 value (>= 2^-24 unless 0) stays
 * a normal float. */
static inline __m512 exp512(__m512 x) {
    const __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-69.0f), _CMP_GE_OQ);
    x = _mm512_max_ps(x, _mm512_set1_ps(-69.0f));
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
