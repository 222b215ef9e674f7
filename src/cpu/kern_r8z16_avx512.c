/* cpu/kern_r8z16_avx512: the GEMM of the r8-layout K-quants (Q4_K, Q5_K, Q6_K) on the 16-row
 * zmm tile of kern_z16.h, and Q4_0 / Q8_0 on a 16-row zmm tile of their own (below). Two r8 groups (16 rows) of a super-block are decoded into a d16
 * record once per token chunk (unsigned quants, int32 scales, correction weights: Q6_K's -32
 * offset folded into the integer sum, Q4_K/Q5_K's mins as the dmin term), then swept by
 * 16x8 tiles. The r8 ymm tiles (kern_r8_avx512.c) decode in every 8-token tile and use half
 * the int8 width per instruction; they keep the GEMV, and serve an odd 8-row group here. */
#include "cpu/kern_z16.h"

/* Q6_K record (kern_r8_pack.c): d[8] | sc[8 k][8 r][2] int8 | ql[4 p][8 c][32] | qh[2 h][8 c][32] */
static void z16_q6_K(const uint8_t *const rec2[2], uint8_t *out) {
    const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
    /* int8 pairs (row r: sub 2k, 2k+1) -> sub 2k of the 8 rows, then sub 2k+1 */
    const __m512i deint = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    for (int h = 0; h < 2; h++) {
        const uint8_t *rec = rec2[h];
        const int8_t *sc = (const int8_t *)(rec + 16);
        const uint8_t *ql = rec + 144, *qh = rec + 1168;
        for (int k = 0; k < 8; k++) {
            const __m256i *lsrc = (const __m256i *)(ql + 256 * (k >> 1));
            const __m256i *hsrc = (const __m256i *)(qh + 256 * (k >> 2));
            const int hs = 2 * (k & 3);
#pragma GCC unroll 8
            for (int c = 0; c < 8; c++) {
                __m256i lo = _mm256_loadu_si256(lsrc + c);
                lo = (k & 1) ? _mm256_and_si256(_mm256_srli_epi16(lo, 4), m4) : _mm256_and_si256(lo, m4);
                __m256i hi = _mm256_loadu_si256(hsrc + c);
                hi = hs <= 4 ? _mm256_slli_epi16(hi, 4 - hs) : _mm256_srli_epi16(hi, hs - 4);
                lq_st(out + 64 * (8 * k + c) + 32 * h, _mm256_or_si256(lo, _mm256_and_si256(hi, m30)));
            }
            const __m128i s8 = _mm_loadu_si128((const __m128i *)(sc + 16 * k));
            const __m512i s32 = _mm512_permutexvar_epi32(deint, _mm512_cvtepi8_epi32(s8));
            lq_st(out + KZ_SC + 64 * (2 * k) + 32 * h, _mm512_castsi512_si256(s32));
            lq_st(out + KZ_SC + 64 * (2 * k + 1) + 32 * h, _mm512_extracti64x4_epi64(s32, 1));
            /* -32 * sc as int16 pairs (subs 2k, 2k+1) per row: the offset, folded */
            lq_st(out + KZ_MC + 64 * k + 32 * h, _mm256_mullo_epi16(_mm256_cvtepi8_epi16(s8), _mm256_set1_epi16(-32)));
        }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)rec));
        _mm256_storeu_ps((float *)(out + KZ_D) + 8 * h, d);
        _mm256_storeu_ps((float *)(out + KZ_FM) + 8 * h, d);
    }
}

/* Q4_K / Q5_K record: d[8] dmin[8] | sc[8 s][8 r] u8 | m[4 j][8 r][2] u8 | q[4 p][8 c][32]
 * (lo nibble = sub 2p, hi = sub 2p+1) | (Q5_K) qh[8 c][32]: bit s = the 5th bit of sub s */
static void z16_q45_K(const uint8_t *const rec2[2], uint8_t *out, const int q5) {
    const __m256i m4 = _mm256_set1_epi8(15), b4 = _mm256_set1_epi8(0x10), lo16 = _mm256_set1_epi32(0xFFFF);
    for (int h = 0; h < 2; h++) {
        const uint8_t *rec = rec2[h];
        const uint8_t *sc = rec + 32, *mm = rec + 96, *qs = rec + 160;
        const __m256i *hsrc = (const __m256i *)(rec + 1184);
        for (int s = 0; s < 8; s++) {
            const __m256i *src = (const __m256i *)(qs + 256 * (s >> 1));
#pragma GCC unroll 8
            for (int c = 0; c < 8; c++) {
                __m256i v = _mm256_loadu_si256(src + c);
                v = (s & 1) ? _mm256_and_si256(_mm256_srli_epi16(v, 4), m4) : _mm256_and_si256(v, m4);
                if (q5) {
                    __m256i hb = _mm256_loadu_si256(hsrc + c); /* bit s -> bit 4 */
                    hb = s <= 4 ? _mm256_slli_epi16(hb, 4 - s) : _mm256_srli_epi16(hb, s - 4);
                    v = _mm256_or_si256(v, _mm256_and_si256(hb, b4));
                }
                lq_st(out + 64 * (8 * s + c) + 32 * h, v);
            }
            const __m256i sv = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(sc + 8 * s)));
            lq_st(out + KZ_SC + 64 * (2 * s) + 32 * h, sv);
            lq_st(out + KZ_SC + 64 * (2 * s + 1) + 32 * h, sv);
        }
        /* mins: pair p of 16-element subs = 32-element sub p, both halves weigh m_p */
        for (int j = 0; j < 4; j++) {
            const __m256i m16 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(mm + 16 * j))); /* r: m2j, m2j+1 */
            const __m256i ev = _mm256_and_si256(m16, lo16), od = _mm256_srli_epi32(m16, 16);
            lq_st(out + KZ_MC + 64 * (2 * j) + 32 * h, _mm256_or_si256(ev, _mm256_slli_epi32(ev, 16)));
            lq_st(out + KZ_MC + 64 * (2 * j + 1) + 32 * h, _mm256_or_si256(od, _mm256_slli_epi32(od, 16)));
        }
        _mm256_storeu_ps((float *)(out + KZ_D) + 8 * h, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)rec)));
        _mm256_storeu_ps((float *)(out + KZ_FM) + 8 * h, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)rec + 1)));
    }
}

static _Thread_local uint8_t g_rz16[KZ_SEG * KZ_REC] __attribute__((aligned(64)));

INLINE void run_rz16(const kern_args *a, int64_t r0, int64_t r1, const int kind, kern_run_fn tail) {
    const size_t recsz = kind == 6 ? 1680 : kind == 5 ? 1440 : 1184;
    const int64_t nb = a->cols / 256;
    const size_t gbytes = (size_t)nb * recsz, st = a->act_stride;
    const int64_t chunk = kz_chunk(st);
    const int64_t r16 = r0 + (r1 - r0) / 16 * 16;
    for (int64_t t0 = 0; t0 < a->n; t0 += chunk) {
        const int64_t t1 = t0 + chunk < a->n ? t0 + chunk : a->n;
        for (int64_t r = r0; r < r16; r += 16) {
            const uint8_t *wg = a->w + (size_t)(r / 8) * gbytes;
            for (int64_t b0 = 0; b0 < nb; b0 += KZ_SEG) {
                const int64_t nbs = nb - b0 < KZ_SEG ? nb - b0 : KZ_SEG;
                for (int64_t b = 0; b < nbs; b++) {
                    const uint8_t *rec2[2] = {wg + (size_t)(b0 + b) * recsz, wg + gbytes + (size_t)(b0 + b) * recsz};
                    if (kind == 6) z16_q6_K(rec2, g_rz16 + b * KZ_REC);
                    else z16_q45_K(rec2, g_rz16 + b * KZ_REC, kind == 5);
                }
                kz_sweep_any(g_rz16, nbs, a->act + (size_t)b0 * sizeof(cll_block_q8_K), st, a->y + r, a->ldy, t0, t1,
                             b0 > 0, kind != 6, kind == 6);
            }
        }
    }
    if (r16 < r1) tail(a, r16, r1);
}

/* ---- Q4_0 / Q8_0 x Q8_0: blocks of 32, a float scale per block and token ---------------------
 * d16 block record: q[8 g][16 r][4] u8 (u = q + 8 for Q4_0, q + 128 for Q8_0) | d[16] f32;
 * x . a = dw * da * (u . a - off * sum a), off * sum a = s8 (Q4_0) or 16 * s8 (Q8_0) */
#define KZ0_REC 576
#define KZ0_SEG 256 /* blocks of a 16-row group kept per thread (144 KiB; cols <= 8192 at once) */

/* Q4_0 record (kern_r8_pack.c): d[8] fp16 | q[4 c][32]: lo nibble = elems 8c..8c+3, hi = 8c+4.. */
static void z16_q4_0(const uint8_t *const rec2[2], uint8_t *out) {
    const __m256i m4 = _mm256_set1_epi8(15);
    for (int h = 0; h < 2; h++) {
        const uint8_t *rec = rec2[h];
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(rec + 16 + 32 * c));
            lq_st(out + 64 * (2 * c) + 32 * h, _mm256_and_si256(v, m4));
            lq_st(out + 64 * (2 * c + 1) + 32 * h, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
        }
        _mm256_storeu_ps((float *)(out + 512) + 8 * h, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)rec)));
    }
}

/* Q8_0 record: d[8] fp16 | q[8 g][32] int8 elems 4g..4g+3 */
static void z16_q8_0(const uint8_t *const rec2[2], uint8_t *out) {
    const __m256i b7 = _mm256_set1_epi8((char)0x80);
    for (int h = 0; h < 2; h++) {
        const uint8_t *rec = rec2[h];
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++)
            lq_st(out + 64 * g + 32 * h, _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(rec + 16 + 32 * g)), b7));
        _mm256_storeu_ps((float *)(out + 512) + 8 * h, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)rec)));
    }
}

INLINE void kz0_tile(const uint8_t *recs, int64_t nb, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                     const int T, const int add, const int q8) {
    __m512 acc[8];
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) acc[t] = add ? _mm512_loadu_ps(y + t * ldy) : _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *rec = recs + b * KZ0_REC;
        __m512i w[8];
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++) w[g] = _mm512_load_si512((const __m512i *)rec + g);
        const __m512 dw = _mm512_load_ps((const float *)(rec + 512));
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            const kact_q8_0x *ab = (const kact_q8_0x *)(act + t * stride) + b;
            __m512i p = _mm512_setzero_si512();
#pragma GCC unroll 8
            for (int g = 0; g < 8; g++) p = _mm512_dpbusd_epi32(p, w[g], kz_bcast32(ab->qs + 4 * g));
            const __m512i s8 = _mm512_set1_epi32(ab->s8);
            p = _mm512_sub_epi32(p, q8 ? _mm512_slli_epi32(s8, 4) : s8);
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dw, _mm512_set1_ps(ab->d)), acc[t]);
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) _mm512_storeu_ps(y + t * ldy, acc[t]);
}

INLINE void kz0_sweep(const uint8_t *recs, int64_t nbs, const uint8_t *act, size_t st, float *y, int64_t ldy,
                      int64_t t0, int64_t t1, const int add, const int q8) {
    int64_t t = t0;
    for (; t + 8 <= t1; t += 8) kz0_tile(recs, nbs, act + t * st, st, y + t * ldy, ldy, 8, add, q8);
    for (; t + 4 <= t1; t += 4) kz0_tile(recs, nbs, act + t * st, st, y + t * ldy, ldy, 4, add, q8);
    const uint8_t *at = act + t * st;
    float *yt = y + t * ldy;
    switch (t1 - t) {
    case 3: kz0_tile(recs, nbs, at, st, yt, ldy, 3, add, q8); break;
    case 2: kz0_tile(recs, nbs, at, st, yt, ldy, 2, add, q8); break;
    case 1: kz0_tile(recs, nbs, at, st, yt, ldy, 1, add, q8); break;
    default: break;
    }
}

static _Thread_local uint8_t g_rz0[KZ0_SEG * KZ0_REC] __attribute__((aligned(64)));

INLINE void run_rz0(const kern_args *a, int64_t r0, int64_t r1, const int q8, kern_run_fn tail) {
    const size_t recsz = q8 ? 272 : 144;
    const int64_t nb = a->cols / 32;
    const size_t gbytes = (size_t)nb * recsz, st = a->act_stride;
    const int64_t chunk = kz_chunk(st);
    const int64_t r16 = r0 + (r1 - r0) / 16 * 16;
    for (int64_t t0 = 0; t0 < a->n; t0 += chunk) {
        const int64_t t1 = t0 + chunk < a->n ? t0 + chunk : a->n;
        for (int64_t r = r0; r < r16; r += 16) {
            const uint8_t *wg = a->w + (size_t)(r / 8) * gbytes;
            for (int64_t b0 = 0; b0 < nb; b0 += KZ0_SEG) {
                const int64_t nbs = nb - b0 < KZ0_SEG ? nb - b0 : KZ0_SEG;
                for (int64_t b = 0; b < nbs; b++) {
                    const uint8_t *rec2[2] = {wg + (size_t)(b0 + b) * recsz, wg + gbytes + (size_t)(b0 + b) * recsz};
                    if (q8) z16_q8_0(rec2, g_rz0 + b * KZ0_REC);
                    else z16_q4_0(rec2, g_rz0 + b * KZ0_REC);
                }
                const uint8_t *act = a->act + (size_t)b0 * sizeof(kact_q8_0x);
                float *y = a->y + r;
                if (q8) {
                    if (b0) kz0_sweep(g_rz0, nbs, act, st, y, a->ldy, t0, t1, 1, 1);
                    else kz0_sweep(g_rz0, nbs, act, st, y, a->ldy, t0, t1, 0, 1);
                } else {
                    if (b0) kz0_sweep(g_rz0, nbs, act, st, y, a->ldy, t0, t1, 1, 0);
                    else kz0_sweep(g_rz0, nbs, act, st, y, a->ldy, t0, t1, 0, 0);
                }
            }
        }
    }
    if (r16 < r1) tail(a, r16, r1);
}

void cll_kern_run_r8z16_q4_0_avx512(const kern_args *a, int64_t r0, int64_t r1) {
    run_rz0(a, r0, r1, 0, cll_kern_run_r8_q4_0_avx512);
}
void cll_kern_run_r8z16_q8_0_avx512(const kern_args *a, int64_t r0, int64_t r1) {
    run_rz0(a, r0, r1, 1, cll_kern_run_r8_q8_0_avx512);
}

void cll_kern_run_r8z16_q4_K_avx512(const kern_args *a, int64_t r0, int64_t r1) {
    run_rz16(a, r0, r1, 4, cll_kern_run_r8_q4_K_avx512);
}
void cll_kern_run_r8z16_q5_K_avx512(const kern_args *a, int64_t r0, int64_t r1) {
    run_rz16(a, r0, r1, 5, cll_kern_run_r8_q5_K_avx512);
}
void cll_kern_run_r8z16_q6_K_avx512(const kern_args *a, int64_t r0, int64_t r1) {
    run_rz16(a, r0, r1, 6, cll_kern_run_r8_q6_K_avx512);
}
