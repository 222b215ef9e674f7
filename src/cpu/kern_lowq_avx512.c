/* cpu/kern_lowq_avx512: the d8 GEMM of kern_lowq_avx2.c with AVX-512 VNNI (256-bit VL
 * forms): vpdpbusd sums 4 u8 x s8 products per row lane without saturation (so IQ4_XS's
 * u <= 241 fits too), vpmulld applies the int32 scale of each 16-element sub-block. The
 * integer sums equal the AVX2 row's; the float ops after them are the same, in the same order. */
#include "cpu/kern_lowq.h"

/* ---- GEMV: one row, decoded block by block, vpdpbusd (no int16 saturation) ------------ */

INLINE float dot_dec_vnni(const kdec256 *k, const cll_block_q8_K *a) {
    const __m256i sc = lq_ld(k->sc);
    const __m256i s0 = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(sc)), s1 = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(sc, 1));
    __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int c = 0; c < 8; c++) {
        /* lanes 0..3: sub 2c, lanes 4..7: sub 2c+1 */
        const int m = c & 3;
        const __m256i sv = _mm256_permutevar8x32_epi32(c < 4 ? s0 : s1, _mm256_setr_epi32(2 * m, 2 * m, 2 * m, 2 * m, 2 * m + 1,
                                                                                          2 * m + 1, 2 * m + 1, 2 * m + 1));
        const __m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), lq_ld(k->u + 32 * c), lq_ld(a->qs + 32 * c));
        isum = _mm256_add_epi32(isum, _mm256_mullo_epi32(p, sv));
    }
    __m256i cr = _mm256_madd_epi16(lq_ld(k->mc), lq_ld(a->bsums));
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(isum), _mm256_extracti128_si256(isum, 1));
    __m128i hc = _mm_add_epi32(_mm256_castsi256_si128(cr), _mm256_extracti128_si256(cr, 1));
    h = _mm_hadd_epi32(_mm_hadd_epi32(h, hc), _mm_setzero_si128()); /* [isum, corr] */
    return a->d * (k->d * (float)_mm_cvtsi128_si32(h) - k->fm * (float)_mm_extract_epi32(h, 1));
}

INLINE void run_gemv(const kern_args *a, int64_t r0, int64_t r1, const uint32_t T) {
    const int64_t nb = a->cols / 256;
    const size_t bsz = cll_type_traits_get(T)->type_size;
    kdec256 k;
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = a->w + (size_t)r * a->w_row_bytes;
        if (r + 1 < r1) _mm_prefetch((const char *)(w + a->w_row_bytes), _MM_HINT_T0);
        for (int64_t t = 0; t < a->n; t++) {
            const cll_block_q8_K *y = (const cll_block_q8_K *)(a->act + t * a->act_stride);
            float s = 0;
            for (int64_t b = 0; b < nb; b++) {
                lq_decode(T, w, b, bsz, &k);
                s += dot_dec_vnni(&k, y + b);
            }
            a->y[t * a->ldy + r] = s;
        }
    }
}

void cll_kern_run_lowq_gemv_avx512(const kern_args *a, int64_t r0, int64_t r1) {
    switch (a->wtype) {
    case CLL_TYPE_IQ4_XS: run_gemv(a, r0, r1, CLL_TYPE_IQ4_XS); break;
    default: break;
    }
}

bool cll_kern_lowq_gemv_avx512_has(uint32_t wtype) { return wtype == CLL_TYPE_IQ4_XS; }

INLINE void tile_d8(const uint8_t *recs, int64_t nb, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                    const int T, const int add) {
    __m256 acc[4];
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) acc[t] = add ? _mm256_loadu_ps(y + t * ldy) : _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *rec = recs + b * KD8_REC;
        const __m256i *q = (const __m256i *)rec, *sc = (const __m256i *)(rec + KD8_SC);
        __m256i isum[4];
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) isum[t] = _mm256_setzero_si256();
        for (int j = 0; j < 16; j++) {
            const __m256i w0 = lq_ld(q + 4 * j), w1 = lq_ld(q + 4 * j + 1), w2 = lq_ld(q + 4 * j + 2),
                          w3 = lq_ld(q + 4 * j + 3), s = lq_ld(sc + j);
#pragma GCC unroll 4
            for (int t = 0; t < T; t++) {
                const int8_t *aq = ((const cll_block_q8_K *)(act + t * stride) + b)->qs + 16 * j;
                __m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), w0, lq_bcast32(aq));
                p = _mm256_dpbusd_epi32(p, w1, lq_bcast32(aq + 4));
                p = _mm256_dpbusd_epi32(p, w2, lq_bcast32(aq + 8));
                p = _mm256_dpbusd_epi32(p, w3, lq_bcast32(aq + 12));
                isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(p, s));
            }
        }
        const __m256 dw = _mm256_loadu_ps((const float *)(rec + KD8_D)), fw = _mm256_loadu_ps((const float *)(rec + KD8_FM));
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) {
            const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
            const __m256 da = _mm256_set1_ps(ab->d);
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(isum[t]), acc[t]);
            acc[t] = _mm256_fnmadd_ps(_mm256_mul_ps(fw, da), _mm256_cvtepi32_ps(lq_corr8(rec, ab)), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

INLINE void sweep_d8(const uint8_t *recs, int64_t nbs, const uint8_t *act, size_t st, float *y, int64_t ldy,
                     int64_t t0, int64_t t1, const int add) {
    int64_t t = t0;
    for (; t + 4 <= t1; t += 4) tile_d8(recs, nbs, act + t * st, st, y + t * ldy, ldy, 4, add);
    const uint8_t *at = act + t * st;
    float *yt = y + t * ldy;
    switch (t1 - t) {
    case 3: tile_d8(recs, nbs, at, st, yt, ldy, 3, add); break;
    case 2: tile_d8(recs, nbs, at, st, yt, ldy, 2, add); break;
    case 1: tile_d8(recs, nbs, at, st, yt, ldy, 1, add); break;
    default: break;
    }
}

static _Thread_local uint8_t g_d8[LQ_SEG * KD8_REC] __attribute__((aligned(64)));

/* token chunk: see kern_lowq_avx2.c */
static int64_t lq_chunk(size_t act_stride) {
    int64_t c = (int64_t)((512u * 1024u) / act_stride);
    return c < 4 ? 4 : c & ~(int64_t)3;
}

void cll_kern_run_lowq_d8_avx512(const kern_args *a, int64_t r0, int64_t r1) {
    const int64_t nb = a->cols / 256;
    const size_t bsz = cll_type_traits_get(a->wtype)->type_size, st = a->act_stride;
    const int64_t chunk = lq_chunk(st);
    for (int64_t t0 = 0; t0 < a->n; t0 += chunk) {
        const int64_t t1 = t0 + chunk < a->n ? t0 + chunk : a->n;
        for (int64_t g = r0 / 8; g < r1 / 8; g++) {
            const uint8_t *wg = a->w + (size_t)g * 8 * a->w_row_bytes;
            for (int64_t b0 = 0; b0 < nb; b0 += LQ_SEG) {
                const int64_t nbs = nb - b0 < LQ_SEG ? nb - b0 : LQ_SEG;
                for (int64_t b = 0; b < nbs; b++) lq_build_d8(a->wtype, wg, a->w_row_bytes, bsz, b0 + b, g_d8 + b * KD8_REC, 1);
                const uint8_t *act = a->act + (size_t)b0 * sizeof(cll_block_q8_K);
                if (b0) sweep_d8(g_d8, nbs, act, st, a->y + g * 8, a->ldy, t0, t1, 1);
                else sweep_d8(g_d8, nbs, act, st, a->y + g * 8, a->ldy, t0, t1, 0);
            }
        }
    }
}
