/* cpu/ops_attn_avx512: prefill attention as 16-lane tiles (AVX-512F). A tile is up to 16
 * (token, head) query rows that read the same cache region (one sequence, one KV head): the
 * lanes of every vector are the 16 rows. Per step of 8 keys: the keys (f16 or f32) are widened
 * once into L1, S = Q·Kᵀ by FMAs of a transposed Q column with the key element broadcast, an
 * online softmax per lane (running max and sum; exp by a degree-6 polynomial and vscalefps),
 * then O = O·alpha + P·V into a transposed accumulator. Each key row is read once per tile
 * instead of once per (token, head), and no horizontal sums are needed.
 * Owns nothing; scratch comes from the caller (cll_ops_attn_tile_scratch floats).
 * Rule: head dims are multiples of 16 (the caller checks). */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "cpu/ops.h"
#include "cpu/ops_attn_tile.h"
#include "cpu/ops_exp512.h"

#define AT_L 16 /* lanes: query rows per tile */
#define AT_K 8  /* keys per step */

size_t cll_ops_attn_tile_scratch(int32_t hd_k, int32_t hd_v) {
    return (size_t)AT_L * (size_t)(hd_k + hd_v) + (size_t)AT_K * (size_t)(hd_k + hd_v);
}

/* rows [j, j + AT_K) of a cache region widened to f32 (rows past nk zero) */
static inline void widen_rows(float *dst, const void *src, int64_t stride, const cll_kv_rows *rows, bool f16, int32_t j, int32_t nk, int32_t hd) {
    for (int32_t r = 0; r < AT_K; r++) {
        float *o = dst + (size_t)r * hd;
        if (r >= nk) {
            memset(o, 0, (size_t)hd * sizeof *o);
            continue;
        }
        if (f16) {
            const uint16_t *s = (const uint16_t *)src + cll_kv_row(rows, j + r) * stride;
            for (int32_t d = 0; d < hd; d += 16)
                _mm512_store_ps(o + d, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + d))));
        } else {
            const float *s = (const float *)src + cll_kv_row(rows, j + r) * stride;
            for (int32_t d = 0; d < hd; d += 16) _mm512_store_ps(o + d, _mm512_loadu_ps(s + d));
        }
    }
}

void cll_ops_attn_tile16(const float *const *q, float *const *out, const int32_t *lo, const int32_t *hi, int nl,
                         const void *k, const void *v, int64_t ks, int64_t vs, bool kv_f16, int32_t hd_k, int32_t hd_v,
                         float scale, float *scr, const cll_kv_rows *rows) {
    float *QT = scr;                      /* (hd_k, 16) q * scale, lanes past nl zero */
    float *OT = QT + (size_t)AT_L * hd_k; /* (hd_v, 16) running P·V */
    float *KF = OT + (size_t)AT_L * hd_v; /* (8, hd_k) widened keys */
    float *VF = KF + (size_t)AT_K * hd_k; /* (8, hd_v) widened values */
    int32_t lo16[AT_L], hi16[AT_L], j0, j1;
    cll_attn_tile_begin(AT_L, q, lo, hi, nl, hd_k, hd_v, scale, QT, OT, lo16, hi16, &j0, &j1);
    const __m512i vlo = _mm512_loadu_si512(lo16), vhi = _mm512_loadu_si512(hi16);
    __m512 m = _mm512_set1_ps(-1e30f), lsum = _mm512_setzero_ps();
    for (int32_t jb = j0; jb < j1; jb += AT_K) {
        const int32_t nk = j1 - jb < AT_K ? j1 - jb : AT_K;
        widen_rows(KF, k, ks, rows, kv_f16, jb, nk, hd_k);
        __m512 S[AT_K];
#pragma GCC unroll 8
        for (int j = 0; j < AT_K; j++) S[j] = _mm512_setzero_ps();
        for (int32_t d = 0; d < hd_k; d++) {
            const __m512 qd = _mm512_load_ps(QT + d * AT_L);
#pragma GCC unroll 8
            for (int j = 0; j < AT_K; j++) S[j] = _mm512_fmadd_ps(qd, _mm512_set1_ps(KF[j * hd_k + d]), S[j]);
        }
        __mmask16 ok[AT_K];
        __m512 mx = m;
#pragma GCC unroll 8
        for (int j = 0; j < AT_K; j++) {
            const __m512i kj = _mm512_set1_epi32(jb + j);
            ok[j] = _mm512_cmple_epi32_mask(vlo, kj) & _mm512_cmpgt_epi32_mask(vhi, kj);
            mx = _mm512_mask_max_ps(mx, ok[j], mx, S[j]);
        }
        const __m512 alpha = exp512(_mm512_sub_ps(m, mx));
        m = mx;
        __m512 P[AT_K], ps = _mm512_setzero_ps();
#pragma GCC unroll 8
        for (int j = 0; j < AT_K; j++) {
            P[j] = _mm512_maskz_mov_ps(ok[j], exp512(_mm512_sub_ps(S[j], mx)));
            ps = _mm512_add_ps(ps, P[j]);
        }
        lsum = _mm512_fmadd_ps(lsum, alpha, ps);
        widen_rows(VF, v, vs, rows, kv_f16, jb, nk, hd_v);
        for (int32_t d = 0; d < hd_v; d++) {
            __m512 o = _mm512_mul_ps(_mm512_load_ps(OT + d * AT_L), alpha);
#pragma GCC unroll 8
            for (int j = 0; j < AT_K; j++) o = _mm512_fmadd_ps(P[j], _mm512_set1_ps(VF[j * hd_v + d]), o);
            _mm512_store_ps(OT + d * AT_L, o);
        }
    }
    float inv[AT_L];
    _mm512_storeu_ps(inv, _mm512_maskz_div_ps(_mm512_cmp_ps_mask(lsum, _mm512_setzero_ps(), _CMP_GT_OQ),
                                              _mm512_set1_ps(1.0f), lsum));
    cll_attn_tile_end(AT_L, out, nl, hd_v, OT, inv);
}

void cll_ops_exp16_attn_avx512(const float *x, float *y) { _mm512_storeu_ps(y, exp512(_mm512_loadu_ps(x))); }
