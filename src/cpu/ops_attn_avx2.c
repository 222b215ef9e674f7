/* cpu/ops_attn_avx2: prefill attention as 8-lane tiles (AVX2 + FMA), the ymm twin of
 * ops_attn_avx512.c for boxes (or ISA caps) without AVX-512. A tile is up to 8 (token, head)
 * query rows that read the same cache region (one sequence, one KV head): the lanes of every
 * vector are the 8 rows. Per step of 8 keys: the keys (f16 or f32) are widened once into L1,
 * S = Q·Kᵀ by FMAs of a transposed Q column with the key element broadcast, an online softmax
 * per lane (running max and sum; exp by a degree-6 polynomial, 2^n built in the exponent
 * bits), then O = O·alpha + P·V into a transposed accumulator. Each key row is read once per
 * tile instead of once per (token, head), and no horizontal sums are needed.
 * Owns nothing; scratch comes from the caller (cll_ops_attn_tile_scratch floats).
 * Rule: head dims are multiples of 8 (the caller checks). */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "cpu/ops.h"
#include "cpu/ops_attn_tile.h"

#define AT_L 8 /* lanes: query rows per tile */
#define AT_K 8 /* keys per step */

/* e^x on 8 floats within ~2 ulp of expf for x in [-69, 88]; below -69 (and NaN) it gives 0, as the
 * AVX-512 tiles' exp (cpu/ops_exp512.h says why: no denormal reaches the accumulators) */
static inline __m256 exp256(__m256 x) {
    const __m256 live = _mm256_cmp_ps(x, _mm256_set1_ps(-69.0f), _CMP_GE_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-69.0f)), _mm256_set1_ps(88.0f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.0f / 720.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    /* n in [-126, 127]: 2^n is the float with biased exponent n + 127 */
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(live, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

/* rows [j, j + AT_K) of a cache region widened to f32 (rows past nk zero) */
static inline void widen_rows8(float *dst, const void *src, int64_t stride, const cll_kv_rows *rows, bool f16, int32_t j, int32_t nk,
                               int32_t hd) {
    for (int32_t r = 0; r < AT_K; r++) {
        float *o = dst + (size_t)r * hd;
        if (r >= nk) {
            memset(o, 0, (size_t)hd * sizeof *o);
            continue;
        }
        if (f16) {
            const uint16_t *s = (const uint16_t *)src + cll_kv_row(rows, j + r) * stride;
            for (int32_t d = 0; d < hd; d += 8)
                _mm256_store_ps(o + d, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + d))));
        } else {
            const float *s = (const float *)src + cll_kv_row(rows, j + r) * stride;
            for (int32_t d = 0; d < hd; d += 8) _mm256_store_ps(o + d, _mm256_loadu_ps(s + d));
        }
    }
}

void cll_ops_attn_tile8(const float *const *q, float *const *out, const int32_t *lo, const int32_t *hi, int nl,
                        const void *k, const void *v, int64_t ks, int64_t vs, bool kv_f16, int32_t hd_k, int32_t hd_v,
                        float scale, float *scr, const cll_kv_rows *rows) {
    float *QT = scr;                      /* (hd_k, 8) q * scale, lanes past nl zero */
    float *OT = QT + (size_t)AT_L * hd_k; /* (hd_v, 8) running P·V */
    float *KF = OT + (size_t)AT_L * hd_v; /* (8, hd_k) widened keys */
    float *VF = KF + (size_t)AT_K * hd_k; /* (8, hd_v) widened values */
    int32_t lo8[AT_L], hi8[AT_L], j0, j1;
    cll_attn_tile_begin(AT_L, q, lo, hi, nl, hd_k, hd_v, scale, QT, OT, lo8, hi8, &j0, &j1);
    const __m256i vlo = _mm256_loadu_si256((const __m256i *)lo8), vhi = _mm256_loadu_si256((const __m256i *)hi8);
    __m256 m = _mm256_set1_ps(-1e30f), lsum = _mm256_setzero_ps();
    for (int32_t jb = j0; jb < j1; jb += AT_K) {
        const int32_t nk = j1 - jb < AT_K ? j1 - jb : AT_K;
        widen_rows8(KF, k, ks, rows, kv_f16, jb, nk, hd_k);
        __m256 S[AT_K];
#pragma GCC unroll 8
        for (int j = 0; j < AT_K; j++) S[j] = _mm256_setzero_ps();
        for (int32_t d = 0; d < hd_k; d++) {
            const __m256 qd = _mm256_load_ps(QT + d * AT_L);
#pragma GCC unroll 8
            for (int j = 0; j < AT_K; j++) S[j] = _mm256_fmadd_ps(qd, _mm256_broadcast_ss(&KF[j * hd_k + d]), S[j]);
        }
        __m256 ok[AT_K];
        __m256 mx = m;
#pragma GCC unroll 8
        for (int j = 0; j < AT_K; j++) {
            const __m256i kj = _mm256_set1_epi32(jb + j);
            /* lo <= key < hi */
            ok[j] = _mm256_castsi256_ps(_mm256_andnot_si256(_mm256_cmpgt_epi32(vlo, kj), _mm256_cmpgt_epi32(vhi, kj)));
            mx = _mm256_max_ps(mx, _mm256_blendv_ps(mx, S[j], ok[j]));
        }
        const __m256 alpha = exp256(_mm256_sub_ps(m, mx));
        m = mx;
        __m256 P[AT_K], ps = _mm256_setzero_ps();
#pragma GCC unroll 8
        for (int j = 0; j < AT_K; j++) {
            P[j] = _mm256_and_ps(ok[j], exp256(_mm256_sub_ps(S[j], mx)));
            ps = _mm256_add_ps(ps, P[j]);
        }
        lsum = _mm256_fmadd_ps(lsum, alpha, ps);
        widen_rows8(VF, v, vs, rows, kv_f16, jb, nk, hd_v);
        for (int32_t d = 0; d < hd_v; d++) {
            __m256 o = _mm256_mul_ps(_mm256_load_ps(OT + d * AT_L), alpha);
#pragma GCC unroll 8
            for (int j = 0; j < AT_K; j++) o = _mm256_fmadd_ps(P[j], _mm256_broadcast_ss(&VF[j * hd_v + d]), o);
            _mm256_store_ps(OT + d * AT_L, o);
        }
    }
    float inv[AT_L];
    const __m256 pos = _mm256_cmp_ps(lsum, _mm256_setzero_ps(), _CMP_GT_OQ);
    _mm256_storeu_ps(inv, _mm256_and_ps(pos, _mm256_div_ps(_mm256_set1_ps(1.0f), lsum)));
    cll_attn_tile_end(AT_L, out, nl, hd_v, OT, inv);
}
