/* cpu/kern_z16: the 16-row zmm GEMM tile of the 256-element formats on AVX-512 VNNI.
 * 16 rows of a super-block are decoded (kern_lowq.h's kdec256: u = v + off, int scales, the
 * offset / min correction weights) into a "d16" record once per token chunk; a tile then
 * holds 16 rows x up to 8 tokens: one zmm of decoded weights (4 elements of each of the 16
 * rows) serves 8 tokens, each vpdpbusd takes the token's 4 activation bytes as an embedded
 * {1to16} broadcast, and vpmulld applies the int32 scale of the sub-block. Each instruction does
 * twice the int8 work of the 8-row ymm tiles (kern_lowq_avx512.c, kern_r8_avx512.c); on this
 * Zen 5 box that made the GEMM ~1.9x faster (kbench -t 2 n=512, see the commits).
 *   x . a = da * (d * sum_j sc_j * (u_j . a_j) - fm * sum_j mc_j * bsum_j)
 * Where d == fm (every type with an offset instead of a min) the d16 record stores -mc and
 * the correction joins the integer sum (vpdpwssd into it), one conversion per block.
 * Owns nothing. Rule: include only from *_avx512.c files (after kern_lowq.h). */
#ifndef CLL_CPU_KERN_Z16_H
#define CLL_CPU_KERN_Z16_H

#include "cpu/kern_lowq.h"

/* d16 record: 16 rows x one super-block
 * q[64 g][16 r][4] u8 | sc[16 j][16 r] int32 | mc[8 p][16 r][2] int16 (subs 2p, 2p+1) |
 * d[16] f32 | fm[16] f32 */
#define KZ_REC 5760
#define KZ_SC 4096
#define KZ_MC 5120
#define KZ_D 5632
#define KZ_FM 5696
/* decoded super-blocks of one 16-row group kept per thread (cols <= 32 * 256 at once; wider
 * rows run in segments that add into y): 180 KiB, beside the token chunk in L2 */
#define KZ_SEG 32

/* Token chunk of the z16 drivers: 8 MiB of activations (all of a 512-token prefill for
 * cols <= 8192: the acts stream from L3, each weight group is decoded once). kbench -t 2 GEMM
 * n=512 ms 8192x2048 / 2048x8192, chunk 1 -> 4 -> 16 MiB: iq4_xs 15.2/17.6 -> 14.6/15.4 ->
 * 14.4/14.5, q6_K 15.9/17.8 -> 14.4/16.2 -> 15.6/14.8, q4_K 14.2/15.3 -> 13.9/14.5 -> 13.9/14.3 */
static inline int64_t kz_chunk(size_t act_stride) {
    const int64_t c = (int64_t)(((size_t)8 << 20) / act_stride);
    return c < 8 ? 8 : c & ~(int64_t)7;
}

/* interleave 16 decoded rows into a d16 record; neg: store -mc (the folded correction) */
INLINE void kz_interleave(const kdec256 k[16], uint8_t *rec, int neg) {
    for (int h = 0; h < 2; h++)
        for (int c = 0; c < 8; c++) { /* groups 8c..8c+7 of rows 8h..8h+7 */
            __m256i v[8];
            for (int r = 0; r < 8; r++) v[r] = lq_ld(k[8 * h + r].u + 32 * c);
            lq_tr8(v);
            for (int i = 0; i < 8; i++) lq_st(rec + 64 * (8 * c + i) + 32 * h, v[i]);
        }
    int32_t *sc = (int32_t *)(rec + KZ_SC);
    int16_t *mc = (int16_t *)(rec + KZ_MC);
    float *d = (float *)(rec + KZ_D), *fm = (float *)(rec + KZ_FM);
    for (int r = 0; r < 16; r++) {
        for (int j = 0; j < 16; j++) sc[16 * j + r] = k[r].sc[j];
        for (int p = 0; p < 8; p++) {
            mc[32 * p + 2 * r] = (int16_t)(neg ? -k[r].mc[2 * p] : k[r].mc[2 * p]);
            mc[32 * p + 2 * r + 1] = (int16_t)(neg ? -k[r].mc[2 * p + 1] : k[r].mc[2 * p + 1]);
        }
        d[r] = k[r].d;
        fm[r] = k[r].fm;
    }
}

INLINE __m512i kz_bcast32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* y[t][0..15] (+)= the 16 rows of recs . tokens t < T; s32: scales per 32 elements (the
 * record's sc[2j] == sc[2j+1]: 8 vpdpbusd per vpmulld); fold: d == fm, -mc in the record */
INLINE void kz_tile(const uint8_t *recs, int64_t nb, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                    const int T, const int add, const int s32, const int fold) {
    __m512 acc[8];
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) acc[t] = add ? _mm512_loadu_ps(y + t * ldy) : _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *rec = recs + b * KZ_REC;
        const __m512i *q = (const __m512i *)rec, *sc = (const __m512i *)(rec + KZ_SC);
        const __m512i *mc = (const __m512i *)(rec + KZ_MC);
        __m512i isum[8];
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) isum[t] = _mm512_setzero_si512();
        const int G = s32 ? 8 : 4; /* 4-element groups per scale */
        for (int j = 0; j < 64 / G; j++) {
            __m512i w[8];
#pragma GCC unroll 8
            for (int c = 0; c < G; c++) w[c] = _mm512_load_si512(q + G * j + c);
            const __m512i s = _mm512_load_si512(sc + (s32 ? 2 * j : j));
#pragma GCC unroll 8
            for (int t = 0; t < T; t++) {
                const int8_t *aq = ((const cll_block_q8_K *)(act + t * stride) + b)->qs + 4 * G * j;
                __m512i p = _mm512_setzero_si512();
#pragma GCC unroll 8
                for (int c = 0; c < G; c++) p = _mm512_dpbusd_epi32(p, w[c], kz_bcast32(aq + 4 * c));
                isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(p, s));
            }
        }
        const __m512 dw = _mm512_load_ps((const float *)(rec + KZ_D));
        if (fold) {
#pragma GCC unroll 8
            for (int t = 0; t < T; t++) {
                const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
                __m512i s = isum[t];
#pragma GCC unroll 8
                for (int p = 0; p < 8; p++) s = _mm512_dpwssd_epi32(s, _mm512_load_si512(mc + p), kz_bcast32(ab->bsums + 2 * p));
                acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(ab->d)), _mm512_cvtepi32_ps(s), acc[t]);
            }
        } else {
            const __m512 fw = _mm512_load_ps((const float *)(rec + KZ_FM));
#pragma GCC unroll 8
            for (int t = 0; t < T; t++) {
                const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
                __m512i cr = _mm512_setzero_si512();
#pragma GCC unroll 8
                for (int p = 0; p < 8; p++) cr = _mm512_dpwssd_epi32(cr, _mm512_load_si512(mc + p), kz_bcast32(ab->bsums + 2 * p));
                const __m512 da = _mm512_set1_ps(ab->d);
                acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, da), _mm512_cvtepi32_ps(isum[t]), acc[t]);
                acc[t] = _mm512_fnmadd_ps(_mm512_mul_ps(fw, da), _mm512_cvtepi32_ps(cr), acc[t]);
            }
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) _mm512_storeu_ps(y + t * ldy, acc[t]);
}

/* 8-token tiles, then 4, then the rest */
INLINE void kz_sweep(const uint8_t *recs, int64_t nbs, const uint8_t *act, size_t st, float *y, int64_t ldy,
                     int64_t t0, int64_t t1, const int add, const int s32, const int fold) {
    int64_t t = t0;
    for (; t + 8 <= t1; t += 8) kz_tile(recs, nbs, act + t * st, st, y + t * ldy, ldy, 8, add, s32, fold);
    for (; t + 4 <= t1; t += 4) kz_tile(recs, nbs, act + t * st, st, y + t * ldy, ldy, 4, add, s32, fold);
    const uint8_t *at = act + t * st;
    float *yt = y + t * ldy;
    switch (t1 - t) {
    case 3: kz_tile(recs, nbs, at, st, yt, ldy, 3, add, s32, fold); break;
    case 2: kz_tile(recs, nbs, at, st, yt, ldy, 2, add, s32, fold); break;
    case 1: kz_tile(recs, nbs, at, st, yt, ldy, 1, add, s32, fold); break;
    default: break;
    }
}

/* the instantiations a driver picks from at run time (s32 x fold x add) */
INLINE void kz_sweep_any(const uint8_t *recs, int64_t nbs, const uint8_t *act, size_t st, float *y, int64_t ldy,
                         int64_t t0, int64_t t1, int add, int s32, int fold) {
#define KZ_SW(A, S, F) kz_sweep(recs, nbs, act, st, y, ldy, t0, t1, A, S, F)
    switch ((add ? 4 : 0) | (s32 ? 2 : 0) | (fold ? 1 : 0)) {
    case 0: KZ_SW(0, 0, 0); break;
    case 1: KZ_SW(0, 0, 1); break;
    case 2: KZ_SW(0, 1, 0); break;
    case 3: KZ_SW(0, 1, 1); break;
    case 4: KZ_SW(1, 0, 0); break;
    case 5: KZ_SW(1, 0, 1); break;
    case 6: KZ_SW(1, 1, 0); break;
    default: KZ_SW(1, 1, 1); break;
    }
#undef KZ_SW
}

#endif
