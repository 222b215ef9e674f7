/* cpu/kern_r8_avx512: the r8 kernels of kern_r8_avx2.c with AVX-512 VNNI (256-bit VL
 * forms): vpdpbusd replaces vpmaddubsw + vpmaddwd and never saturates, so the integer
 * sums (and the float ops after them, in the same order) equal the AVX2 kernels'.
 * Same tiles (8 rows x up to 4 tokens) and layouts; selected only when CPUID reports
 * AVX512F/BW/VL/DQ + VNNI. Scales multiply the int32 sums with vpmulld. */
#include <immintrin.h>
#include <string.h>

#include "cpu/kern_common.h"
#include "cpu/kern_avx2_util.h"

/* A tile of 1-8 tokens streams the weights from DRAM once: prefetch ~6 KiB ahead in the linear
 * stream of records (kern_r8z_avx512.c's prefetch_ahead measures the distance) */
INLINE void pf_gemv(const uint8_t *rec, const int recsz) {
    const char *p = (const char *)rec + 6144;
    for (int i = 0; i < recsz; i += 64) _mm_prefetch(p + i, _MM_HINT_T0);
}

/* ---- Q4_0 x Q8_0 ----------------------------------------------------------------- */

INLINE void tile_q4_0(const uint8_t *wg, int64_t nb, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                      const int T) {
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256 acc[8];
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *rec = wg + b * 144;
        pf_gemv(rec, 144);
        const __m256 dw = load_fp16x8((const uint16_t *)rec);
        __m256i w[8];
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(rec + 16 + 32 * c));
            w[2 * c] = _mm256_and_si256(v, m4);
            w[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        }
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            const kact_q8_0x *ab = (const kact_q8_0x *)(act + t * stride) + b;
            __m256i s = _mm256_setzero_si256();
#pragma GCC unroll 8
            for (int g = 0; g < 8; g++) s = _mm256_dpbusd_epi32(s, w[g], bcast32(ab->qs + 4 * g));
            __m256i s32 = _mm256_sub_epi32(s, _mm256_set1_epi32(ab->s8));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32), _mm256_mul_ps(dw, _mm256_set1_ps(ab->d)), acc[t]);
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

/* ---- Q8_0 x Q8_0 ----------------------------------------------------------------- */

INLINE void tile_q8_0(const uint8_t *wg, int64_t nb, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                      const int T) {
    __m256 acc[8];
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *rec = wg + b * 272;
        pf_gemv(rec, 272);
        const __m256 dw = load_fp16x8((const uint16_t *)rec);
        const __m256i *wq = (const __m256i *)(rec + 16);
        __m256i aw[8];
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++) aw[g] = _mm256_abs_epi8(_mm256_loadu_si256(wq + g));
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            const kact_q8_0x *ab = (const kact_q8_0x *)(act + t * stride) + b;
            __m256i s32 = _mm256_setzero_si256();
#pragma GCC unroll 8
            for (int g = 0; g < 8; g++) {
                __m256i sa = _mm256_sign_epi8(bcast32(ab->qs + 4 * g), _mm256_loadu_si256(wq + g));
                s32 = _mm256_dpbusd_epi32(s32, aw[g], sa);
            }
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32), _mm256_mul_ps(dw, _mm256_set1_ps(ab->d)), acc[t]);
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

/* ---- Q4_K / Q5_K x Q8_K (q5: the 5th bits follow the q4_K record) ------------------ */

/* sums of a Q8_K block's activations per 32-element sub-block, as int16 pairs (subs 2j, 2j+1) in bsp[j] */
INLINE void q8k_sub_sums(const cll_block_q8_K *ab, int32_t bsp[4]) {
    const __m128i b0 = _mm_loadu_si128((const __m128i *)ab->bsums), b1 = _mm_loadu_si128((const __m128i *)ab->bsums + 1);
    _mm_storeu_si128((__m128i *)bsp, _mm_hadd_epi16(b0, b1));
}

INLINE void tile_q45_K(const uint8_t *wg, int64_t nb, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                       const int T, const int q5) {
    const size_t recsz = q5 ? 1440 : 1184;
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256 acc[8];
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *rec = wg + b * recsz;
        pf_gemv(rec, (int)recsz);
        const uint8_t *sc = rec + 32, *mm = rec + 96, *qs = rec + 160;
        __m256i isum[8];
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) isum[t] = _mm256_setzero_si256();
        for (int s = 0; s < 8; s++) {
            const __m256i *src = (const __m256i *)(qs + 256 * (s >> 1));
            __m256i w[8];
            if (s & 1) {
#pragma GCC unroll 8
                for (int c = 0; c < 8; c++) w[c] = _mm256_and_si256(_mm256_srli_epi16(_mm256_loadu_si256(src + c), 4), m4);
            } else {
#pragma GCC unroll 8
                for (int c = 0; c < 8; c++) w[c] = _mm256_and_si256(_mm256_loadu_si256(src + c), m4);
            }
            if (q5) {
                const __m256i *hsrc = (const __m256i *)(rec + 1184), b4 = _mm256_set1_epi8(0x10);
#pragma GCC unroll 8
                for (int c = 0; c < 8; c++) {
                    __m256i h = _mm256_loadu_si256(hsrc + c); /* bit s -> bit 4 (16-bit shifts stay in-byte here) */
                    h = s <= 4 ? _mm256_slli_epi16(h, 4 - s) : _mm256_srli_epi16(h, s - 4);
                    w[c] = _mm256_or_si256(w[c], _mm256_and_si256(h, b4));
                }
            }
            const __m256i scv = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(sc + 8 * s)));
#pragma GCC unroll 8
            for (int t = 0; t < T; t++) {
                const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
                const int8_t *aq = ab->qs + 32 * s;
                __m256i p = _mm256_setzero_si256(), q = _mm256_setzero_si256();
#pragma GCC unroll 4
                for (int c = 0; c < 4; c++) {
                    p = _mm256_dpbusd_epi32(p, w[c], bcast32(aq + 4 * c));
                    q = _mm256_dpbusd_epi32(q, w[c + 4], bcast32(aq + 16 + 4 * c));
                }
                isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(_mm256_add_epi32(p, q), scv));
            }
        }
        const __m256 dw = load_fp16x8((const uint16_t *)rec), dmw = load_fp16x8((const uint16_t *)rec + 8);
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
            int32_t bsp[4];
            q8k_sub_sums(ab, bsp);
            __m256i msum = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                __m256i mv = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(mm + 16 * j)));
                msum = _mm256_add_epi32(msum, _mm256_madd_epi16(mv, _mm256_set1_epi32(bsp[j])));
            }
            const __m256 da = _mm256_set1_ps(ab->d);
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(isum[t]), acc[t]);
            acc[t] = _mm256_fnmadd_ps(_mm256_mul_ps(dmw, da), _mm256_cvtepi32_ps(msum), acc[t]);
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

/* ---- Q6_K x Q8_K ----------------------------------------------------------------- */

INLINE void tile_q6_K(const uint8_t *wg, int64_t nb, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                      const int T) {
    const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
    __m256 acc[8];
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *rec = wg + b * 1680;
        pf_gemv(rec, 1680);
        const int8_t *sc = (const int8_t *)(rec + 16);
        const uint8_t *ql = rec + 144, *qh = rec + 1168;
        __m256i isum[8];
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) isum[t] = _mm256_setzero_si256();
        for (int k = 0; k < 8; k++) {
            const __m256i *lsrc = (const __m256i *)(ql + 256 * (k >> 1));
            const __m256i *hsrc = (const __m256i *)(qh + 256 * (k >> 2));
            const int hs = 2 * (k & 3);
            __m256i w[8];
#pragma GCC unroll 8
            for (int c = 0; c < 8; c++) {
                __m256i lo = _mm256_loadu_si256(lsrc + c);
                lo = (k & 1) ? _mm256_and_si256(_mm256_srli_epi16(lo, 4), m4) : _mm256_and_si256(lo, m4);
                __m256i hi = _mm256_loadu_si256(hsrc + c);
                hi = hs <= 4 ? _mm256_slli_epi16(hi, 4 - hs) : _mm256_srli_epi16(hi, hs - 4);
                w[c] = _mm256_or_si256(lo, _mm256_and_si256(hi, m30));
            }
            const __m256i sck = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(sc + 16 * k)));
            /* int32 scale per row: sign-extended int16 lanes 0 / 1 of each pair */
            const __m256i s0 = _mm256_srai_epi32(_mm256_slli_epi32(sck, 16), 16), s1 = _mm256_srai_epi32(sck, 16);
            const __m256i sck32 = _mm256_slli_epi16(sck, 5); /* 32 * sc: the -32 offset of the quants */
#pragma GCC unroll 8
            for (int t = 0; t < T; t++) {
                const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
                const int8_t *aq = ab->qs + 32 * k;
                __m256i p0 = _mm256_setzero_si256(), p1 = _mm256_setzero_si256();
#pragma GCC unroll 4
                for (int c = 0; c < 4; c++) {
                    p0 = _mm256_dpbusd_epi32(p0, w[c], bcast32(aq + 4 * c));
                    p1 = _mm256_dpbusd_epi32(p1, w[c + 4], bcast32(aq + 16 + 4 * c));
                }
                __m256i v = _mm256_add_epi32(_mm256_mullo_epi32(p0, s0), _mm256_mullo_epi32(p1, s1));
                v = _mm256_sub_epi32(v, _mm256_madd_epi16(sck32, bcast32(ab->bsums + 2 * k)));
                isum[t] = _mm256_add_epi32(isum[t], v);
            }
        }
        const __m256 dw = load_fp16x8((const uint16_t *)rec);
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(ab->d)), _mm256_cvtepi32_ps(isum[t]), acc[t]);
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

/* ---- drivers: token chunks stay in L2 while each 8-row group sweeps them ---------- */

/* one 8-row group gg (records at wq) over tokens [u0, t1): 8-token tiles, then 4, then the rest */
#define R8_GROUP_SWEEP(TILE, a, nb, wq, gg, u0, t1)                                                             \
    do {                                                                                                        \
        const size_t st_ = (a)->act_stride;                                                                     \
        int64_t u = (u0);                                                                                       \
        for (; u + 8 <= (t1); u += 8) TILE(wq, nb, (a)->act + u * st_, st_, (a)->y + u * (a)->ldy + (gg) * 8, (a)->ldy, 8); \
        for (; u + 4 <= (t1); u += 4) TILE(wq, nb, (a)->act + u * st_, st_, (a)->y + u * (a)->ldy + (gg) * 8, (a)->ldy, 4); \
        const uint8_t *at_ = (a)->act + u * st_;                                                                \
        float *yt_ = (a)->y + u * (a)->ldy + (gg) * 8;                                                          \
        switch ((t1) - u) {                                                                                     \
        case 3: TILE(wq, nb, at_, st_, yt_, (a)->ldy, 3); break;                                                \
        case 2: TILE(wq, nb, at_, st_, yt_, (a)->ldy, 2); break;                                                \
        case 1: TILE(wq, nb, at_, st_, yt_, (a)->ldy, 1); break;                                                \
        default: break;                                                                                         \
        }                                                                                                       \
    } while (0)

#define DEFINE_R8_RUN(NAME, TILE, BLK, REC)                                                                     \
    void NAME(const kern_args *a, int64_t r0, int64_t r1) {                                                     \
        const int64_t nb = a->cols / (BLK);                                                                     \
        const size_t gbytes = (size_t)nb * (REC);                                                               \
        const int64_t chunk = a->n == 1 ? 1 : kern_token_chunk(a->act_stride);                                  \
        for (int64_t t0 = 0; t0 < a->n; t0 += chunk) {                                                          \
            const int64_t t1 = t0 + chunk < a->n ? t0 + chunk : a->n;                                           \
            for (int64_t g = r0 / 8; g < r1 / 8; g++) R8_GROUP_SWEEP(TILE, a, nb, a->w + (size_t)g * gbytes, g, t0, t1); \
        }                                                                                                       \
    }

/* the pair tiles' pieces: 32 bytes of each group's record in the two halves of a zmm, their 8 fp16 scales
 * as 16 floats, and a tile's 16-row results stored */
INLINE __m512i pair256(const void *lo, const void *hi) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)lo)),
                              _mm256_loadu_si256((const __m256i *)hi), 1);
}
INLINE __m512 pair_fp16x8(const uint8_t *lo, const uint8_t *hi) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(load_fp16x8((const uint16_t *)lo)), load_fp16x8((const uint16_t *)hi), 1);
}
/* a K-quant sub-block of 32 against the 16 rows of w[8]: the first 16 values (w[0..3]) into *p, the last 16
 * (w[4..7]) into *q, as the ymm tiles' two dpbusd chains */
INLINE void dot32_pair(const __m512i *w, const int8_t *aq, __m512i *p, __m512i *q) {
    __m512i a = _mm512_setzero_si512(), b = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
        int32_t a0, a1;
        memcpy(&a0, aq + 4 * c, 4);
        memcpy(&a1, aq + 16 + 4 * c, 4);
        a = _mm512_dpbusd_epi32(a, w[c], _mm512_set1_epi32(a0));
        b = _mm512_dpbusd_epi32(b, w[c + 4], _mm512_set1_epi32(a1));
    }
    *p = a;
    *q = b;
}
INLINE void pair_store(const __m512 *acc, const int T, float *y, int64_t ldy) {
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) {
        _mm256_storeu_ps(y + t * ldy, _mm512_castps512_ps256(acc[t]));
        _mm256_storeu_ps(y + t * ldy + 8, _mm512_extractf32x8_ps(acc[t], 1));
    }
}

/* Q4_0 on two adjacent 8-row groups at once (16 rows a zmm: the first group's records in the low half, the
 * second's in the high half), decoded in registers per tile: twice the int8 width of tile_q4_0 a dpbusd,
 * with every row's integer sum and float ops those of tile_q4_0 (each lane one row), so the same bits.
 * The batched decode's 5-8 token steps are compute-bound on the ymm tile (kbench -t 2 8192x2048: n 4 0.32
 * ms, n 8 0.74 ms) */
INLINE void tile2_q4_0(const uint8_t *wg, size_t gbytes, int64_t nb, const uint8_t *act, size_t stride, float *y,
                       int64_t ldy, const int T) {
    const __m512i m4 = _mm512_set1_epi8(15);
    __m512 acc[8];
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *r0 = wg + b * 144, *r1 = r0 + gbytes;
        pf_gemv(r0, 144);
        pf_gemv(r1, 144);
        const __m512 dw = pair_fp16x8(r0, r1);
        __m512i w[8];
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            const __m512i v = pair256(r0 + 16 + 32 * c, r1 + 16 + 32 * c);
            w[2 * c] = _mm512_and_si512(v, m4);
            w[2 * c + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        }
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            const kact_q8_0x *ab = (const kact_q8_0x *)(act + t * stride) + b;
            __m512i s = _mm512_setzero_si512();
#pragma GCC unroll 8
            for (int g = 0; g < 8; g++) {
                int32_t q;
                memcpy(&q, ab->qs + 4 * g, 4);
                s = _mm512_dpbusd_epi32(s, w[g], _mm512_set1_epi32(q));
            }
            const __m512i s32 = _mm512_sub_epi32(s, _mm512_set1_epi32(ab->s8));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s32), _mm512_mul_ps(dw, _mm512_set1_ps(ab->d)), acc[t]);
        }
    }
    pair_store(acc, T, y, ldy);
}

/* Q4_K on two adjacent 8-row groups (tile_q45_K's sums and float ops per row, 16 rows a zmm: the same bits) */
INLINE void tile2_q4_K(const uint8_t *wg, size_t gbytes, int64_t nb, const uint8_t *act, size_t stride, float *y,
                       int64_t ldy, const int T) {
    const __m512i m4 = _mm512_set1_epi8(15);
    __m512 acc[8];
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *r0 = wg + b * 1184, *r1 = r0 + gbytes;
        pf_gemv(r0, 1184);
        pf_gemv(r1, 1184);
        __m512i isum[8];
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) isum[t] = _mm512_setzero_si512();
        for (int s = 0; s < 8; s++) {
            const uint8_t *q0 = r0 + 160 + 256 * (s >> 1), *q1 = r1 + 160 + 256 * (s >> 1);
            __m512i w[8];
#pragma GCC unroll 8
            for (int c = 0; c < 8; c++) {
                const __m512i v = pair256(q0 + 32 * c, q1 + 32 * c);
                w[c] = (s & 1) ? _mm512_and_si512(_mm512_srli_epi16(v, 4), m4) : _mm512_and_si512(v, m4);
            }
            const __m512i scv = _mm512_cvtepu8_epi32(_mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(r0 + 32 + 8 * s)),
                                                                        _mm_loadl_epi64((const __m128i *)(r1 + 32 + 8 * s))));
#pragma GCC unroll 8
            for (int t = 0; t < T; t++) {
                const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
                const int8_t *aq = ab->qs + 32 * s;
                __m512i p, q;
                dot32_pair(w, aq, &p, &q);
                isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(_mm512_add_epi32(p, q), scv));
            }
        }
        const __m512 dw = pair_fp16x8(r0, r1), dmw = pair_fp16x8(r0 + 16, r1 + 16);
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
            int32_t bsp[4];
            q8k_sub_sums(ab, bsp);
            __m512i msum = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                const __m256i mb = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(r0 + 96 + 16 * j))),
                                                           _mm_loadu_si128((const __m128i *)(r1 + 96 + 16 * j)), 1);
                msum = _mm512_add_epi32(msum, _mm512_madd_epi16(_mm512_cvtepu8_epi16(mb), _mm512_set1_epi32(bsp[j])));
            }
            const __m512 da = _mm512_set1_ps(ab->d);
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, da), _mm512_cvtepi32_ps(isum[t]), acc[t]);
            acc[t] = _mm512_fnmadd_ps(_mm512_mul_ps(dmw, da), _mm512_cvtepi32_ps(msum), acc[t]);
        }
    }
    pair_store(acc, T, y, ldy);
}

/* Q6_K on two adjacent 8-row groups (tile_q6_K's sums, scales, offset and float ops per row: the same bits) */
INLINE void tile2_q6_K(const uint8_t *wg, size_t gbytes, int64_t nb, const uint8_t *act, size_t stride, float *y,
                       int64_t ldy, const int T) {
    const __m512i m4 = _mm512_set1_epi8(15), m30 = _mm512_set1_epi8(0x30);
    __m512 acc[8];
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *r0 = wg + b * 1680, *r1 = r0 + gbytes;
        pf_gemv(r0, 1680);
        pf_gemv(r1, 1680);
        __m512i isum[8];
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) isum[t] = _mm512_setzero_si512();
        for (int k = 0; k < 8; k++) {
            const size_t lo_off = 144 + 256 * (size_t)(k >> 1), hi_off = 1168 + 256 * (size_t)(k >> 2);
            const int hs = 2 * (k & 3);
            __m512i w[8];
#pragma GCC unroll 8
            for (int c = 0; c < 8; c++) {
                __m512i lo = pair256(r0 + lo_off + 32 * c, r1 + lo_off + 32 * c);
                lo = (k & 1) ? _mm512_and_si512(_mm512_srli_epi16(lo, 4), m4) : _mm512_and_si512(lo, m4);
                __m512i hi = pair256(r0 + hi_off + 32 * c, r1 + hi_off + 32 * c);
                hi = hs <= 4 ? _mm512_slli_epi16(hi, 4 - hs) : _mm512_srli_epi16(hi, hs - 4);
                w[c] = _mm512_or_si512(lo, _mm512_and_si512(hi, m30));
            }
            const __m256i sc8 = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(r0 + 16 + 16 * k))),
                                                        _mm_loadu_si128((const __m128i *)(r1 + 16 + 16 * k)), 1);
            const __m512i sck = _mm512_cvtepi8_epi16(sc8);
            const __m512i s0 = _mm512_srai_epi32(_mm512_slli_epi32(sck, 16), 16), s1 = _mm512_srai_epi32(sck, 16);
            const __m512i sck32 = _mm512_slli_epi16(sck, 5); /* 32 * sc: the -32 offset of the quants */
#pragma GCC unroll 8
            for (int t = 0; t < T; t++) {
                const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
                const int8_t *aq = ab->qs + 32 * k;
                __m512i p0, p1;
                dot32_pair(w, aq, &p0, &p1);
                int32_t bs;
                memcpy(&bs, ab->bsums + 2 * k, 4);
                __m512i v = _mm512_add_epi32(_mm512_mullo_epi32(p0, s0), _mm512_mullo_epi32(p1, s1));
                v = _mm512_sub_epi32(v, _mm512_madd_epi16(sck32, _mm512_set1_epi32(bs)));
                isum[t] = _mm512_add_epi32(isum[t], v);
            }
        }
        const __m512 dw = pair_fp16x8(r0, r1);
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(ab->d)), _mm512_cvtepi32_ps(isum[t]), acc[t]);
        }
    }
    pair_store(acc, T, y, ldy);
}

/* the r8 driver with adjacent group pairs on TILE2 (16 rows a zmm) for a chunk's 5-8 token runs, the ymm TILE
 * for the rest (fewer tokens, an odd last group) */
#define DEFINE_R8_RUN2(NAME, TILE, TILE2, BLK, REC)                                                              \
    void NAME(const kern_args *a, int64_t r0, int64_t r1) {                                                     \
        const int64_t nb = a->cols / (BLK);                                                                     \
        const size_t gbytes = (size_t)nb * (REC), st = a->act_stride;                                           \
        const int64_t chunk = a->n == 1 ? 1 : kern_token_chunk(st);                                             \
        for (int64_t t0 = 0; t0 < a->n; t0 += chunk) {                                                          \
            const int64_t t1 = t0 + chunk < a->n ? t0 + chunk : a->n;                                           \
            for (int64_t g = r0 / 8; g < r1 / 8; g++) {                                                         \
                const uint8_t *wg = a->w + (size_t)g * gbytes;                                                  \
                const bool pair = g + 1 < r1 / 8;                                                               \
                int64_t t = t0;                                                                                 \
                for (; pair && t + 8 <= t1; t += 8) TILE2(wg, gbytes, nb, a->act + t * st, st, a->y + t * a->ldy + g * 8, a->ldy, 8); \
                if (pair && t1 - t > 4) {                                                                       \
                    const uint8_t *at = a->act + t * st;                                                        \
                    float *yt = a->y + t * a->ldy + g * 8;                                                      \
                    if (t1 - t == 5) TILE2(wg, gbytes, nb, at, st, yt, a->ldy, 5);                              \
                    else if (t1 - t == 6) TILE2(wg, gbytes, nb, at, st, yt, a->ldy, 6);                         \
                    else TILE2(wg, gbytes, nb, at, st, yt, a->ldy, 7);                                          \
                    t = t1;                                                                                     \
                }                                                                                               \
                for (int64_t gg = g; gg <= g + (pair ? 1 : 0) && t < t1; gg++)                                  \
                    R8_GROUP_SWEEP(TILE, a, nb, a->w + (size_t)gg * gbytes, gg, t, t1);                         \
                if (pair) g++;                                                                                  \
            }                                                                                                   \
        }                                                                                                       \
    }

DEFINE_R8_RUN2(cll_kern_run_r8_q4_0_avx512, tile_q4_0, tile2_q4_0, 32, 144)
DEFINE_R8_RUN(cll_kern_run_r8_q8_0_avx512, tile_q8_0, 32, 272)
#define tile_q4_K(wg, nb, act, st, y, ldy, T) tile_q45_K(wg, nb, act, st, y, ldy, T, 0)
#define tile_q5_K(wg, nb, act, st, y, ldy, T) tile_q45_K(wg, nb, act, st, y, ldy, T, 1)
DEFINE_R8_RUN2(cll_kern_run_r8_q4_K_avx512, tile_q4_K, tile2_q4_K, 256, 1184)
DEFINE_R8_RUN(cll_kern_run_r8_q5_K_avx512, tile_q5_K, 256, 1440)
DEFINE_R8_RUN2(cll_kern_run_r8_q6_K_avx512, tile_q6_K, tile2_q6_K, 256, 1680)
