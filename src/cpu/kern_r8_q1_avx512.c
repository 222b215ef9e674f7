/* cpu/kern_r8_q1_avx512: Q4_1 and Q5_1 on their r8 records (kern_r8_pack.c) with AVX-512
 * VNNI, against Q8_1 activations (ggml's bytes):
 *  - r8x4: kern_r8_q1_avx2.c's tile with 256-bit vpdpbusd (8 rows x up to 8 tokens; serves
 *    the GEMV, the small-n GEMM and the odd 8-row group of the z16 GEMM);
 *  - r8z16x8: the GEMM on a 16-row zmm tile (kern_r8z16_avx512.c's Q4_0 scheme): two r8 groups
 *    of a block decoded once per token chunk into a record q[8 g][16 r][4] u8 (5th bits or'd
 *    in) | d[16] f32 | m[16] f32, swept by 16-row x 8-token tiles.
 * vpdpbusd never saturates: the integer sums equal the AVX2 rows', and the float steps per
 * block and token are the scalar reference's (acc + ((dw*da)*isum + mw*sa), no contraction),
 * so every Q4_1 / Q5_1 r8 row equals the scalar row bit for bit. */
#include "cpu/kern_z16.h"

/* the GEMV streams the records: ~6 KiB ahead (as kern_r8_avx512.c) */
INLINE void pf_gemv(const uint8_t *rec, const int recsz) {
    const char *p = (const char *)rec + 6144;
    for (int i = 0; i < recsz; i += 64) _mm_prefetch(p + i, _MM_HINT_T0);
}

/* da, sa of a Q8_1 block (fp16 d, s) as floats in lanes 0, 1 */
INLINE __m128 q8_1_ds(const cll_block_q8_1 *ab) {
    int32_t ds;
    memcpy(&ds, ab, 4);
    return _mm_cvtph_ps(_mm_cvtsi32_si128(ds));
}

/* 8 weight registers of a record: unsigned quants of elements 4g..4g+3 of each row */
INLINE void q1_weights(const uint8_t *rec, __m256i w[8], const int q5) {
    const __m256i m4 = _mm256_set1_epi8(15);
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(rec + 32 + 32 * c));
        w[2 * c] = _mm256_and_si256(v, m4);
        w[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    }
    if (q5) {
        const __m256i qh = _mm256_loadu_si256((const __m256i *)(rec + 160));
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++) w[g] = _mm256_or_si256(w[g], hbit(qh, g));
    }
}

/* ---- r8x4: 8 rows x T tokens, ymm ---- */

INLINE void tile_q1(const uint8_t *wg, int64_t nb, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                    const int T, const int q5) {
    const size_t recsz = q5 ? 192 : 160;
    __m256 acc[8];
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *rec = wg + b * recsz;
        pf_gemv(rec, (int)recsz);
        const __m256 dw = load_fp16x8((const uint16_t *)rec), mw = load_fp16x8((const uint16_t *)rec + 8);
        __m256i w[8];
        q1_weights(rec, w, q5);
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            const cll_block_q8_1 *ab = (const cll_block_q8_1 *)(act + t * stride) + b;
            __m256i s = _mm256_setzero_si256();
#pragma GCC unroll 8
            for (int g = 0; g < 8; g++) s = _mm256_dpbusd_epi32(s, w[g], bcast32(ab->qs + 4 * g));
            const __m128 f = q8_1_ds(ab);
            const __m256 da = _mm256_broadcastss_ps(f), sa = _mm256_broadcastss_ps(_mm_movehdup_ps(f));
            const __m256 p = _mm256_mul_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(s));
            acc[t] = _mm256_add_ps(acc[t], _mm256_add_ps(p, _mm256_mul_ps(mw, sa)));
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

#define DEFINE_Q1_RUN(NAME, Q5)                                                                                  \
    void NAME(const kern_args *a, int64_t r0, int64_t r1) {                                                     \
        const int64_t nb = a->cols / 32;                                                                        \
        const size_t gbytes = (size_t)nb * ((Q5) ? 192 : 160), st = a->act_stride;                              \
        const int64_t chunk = a->n == 1 ? 1 : kern_token_chunk(st);                                             \
        for (int64_t t0 = 0; t0 < a->n; t0 += chunk) {                                                          \
            const int64_t t1 = t0 + chunk < a->n ? t0 + chunk : a->n;                                           \
            for (int64_t g = r0 / 8; g < r1 / 8; g++) {                                                         \
                const uint8_t *wg = a->w + (size_t)g * gbytes;                                                  \
                int64_t t = t0;                                                                                 \
                for (; t + 8 <= t1; t += 8) tile_q1(wg, nb, a->act + t * st, st, a->y + t * a->ldy + g * 8, a->ldy, 8, Q5); \
                for (; t + 4 <= t1; t += 4) tile_q1(wg, nb, a->act + t * st, st, a->y + t * a->ldy + g * 8, a->ldy, 4, Q5); \
                const uint8_t *at = a->act + t * st;                                                            \
                float *yt = a->y + t * a->ldy + g * 8;                                                          \
                switch (t1 - t) {                                                                               \
                case 3: tile_q1(wg, nb, at, st, yt, a->ldy, 3, Q5); break;                                      \
                case 2: tile_q1(wg, nb, at, st, yt, a->ldy, 2, Q5); break;                                      \
                case 1: tile_q1(wg, nb, at, st, yt, a->ldy, 1, Q5); break;                                      \
                default: break;                                                                                 \
                }                                                                                               \
            }                                                                                                   \
        }                                                                                                       \
    }

DEFINE_Q1_RUN(cll_kern_run_r8_q4_1_avx512, 0)
DEFINE_Q1_RUN(cll_kern_run_r8_q5_1_avx512, 1)

/* ---- r8z16x8: 16 rows x 8 tokens, zmm, on records decoded per token chunk ---- */
#define KZ1_REC 640 /* q[8 g][16 r][4] | d[16] f32 | m[16] f32 */
#define KZ1_SEG 256 /* blocks of a 16-row group kept per thread (160 KiB; cols <= 8192 at once) */

static void z16_q1(const uint8_t *const rec2[2], uint8_t *out, const int q5) {
    for (int h = 0; h < 2; h++) {
        const uint8_t *rec = rec2[h];
        __m256i w[8];
        q1_weights(rec, w, q5);
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++) lq_st(out + 64 * g + 32 * h, w[g]);
        _mm256_storeu_ps((float *)(out + 512) + 8 * h, load_fp16x8((const uint16_t *)rec));
        _mm256_storeu_ps((float *)(out + 576) + 8 * h, load_fp16x8((const uint16_t *)rec + 8));
    }
}

INLINE void kz1_tile(const uint8_t *recs, int64_t nb, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                     const int T, const int add) {
    __m512 acc[8];
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) acc[t] = add ? _mm512_loadu_ps(y + t * ldy) : _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *rec = recs + b * KZ1_REC;
        __m512i w[8];
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++) w[g] = _mm512_load_si512((const __m512i *)rec + g);
        const __m512 dw = _mm512_load_ps((const float *)(rec + 512)), mw = _mm512_load_ps((const float *)(rec + 576));
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            const cll_block_q8_1 *ab = (const cll_block_q8_1 *)(act + t * stride) + b;
            __m512i p = _mm512_setzero_si512();
#pragma GCC unroll 8
            for (int g = 0; g < 8; g++) p = _mm512_dpbusd_epi32(p, w[g], kz_bcast32(ab->qs + 4 * g));
            const __m128 f = q8_1_ds(ab);
            const __m512 da = _mm512_broadcastss_ps(f), sa = _mm512_broadcastss_ps(_mm_movehdup_ps(f));
            const __m512 pr = _mm512_mul_ps(_mm512_mul_ps(dw, da), _mm512_cvtepi32_ps(p));
            acc[t] = _mm512_add_ps(acc[t], _mm512_add_ps(pr, _mm512_mul_ps(mw, sa)));
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) _mm512_storeu_ps(y + t * ldy, acc[t]);
}

INLINE void kz1_sweep(const uint8_t *recs, int64_t nbs, const uint8_t *act, size_t st, float *y, int64_t ldy,
                      int64_t t0, int64_t t1, const int add) {
    int64_t t = t0;
    for (; t + 8 <= t1; t += 8) kz1_tile(recs, nbs, act + t * st, st, y + t * ldy, ldy, 8, add);
    for (; t + 4 <= t1; t += 4) kz1_tile(recs, nbs, act + t * st, st, y + t * ldy, ldy, 4, add);
    const uint8_t *at = act + t * st;
    float *yt = y + t * ldy;
    switch (t1 - t) {
    case 3: kz1_tile(recs, nbs, at, st, yt, ldy, 3, add); break;
    case 2: kz1_tile(recs, nbs, at, st, yt, ldy, 2, add); break;
    case 1: kz1_tile(recs, nbs, at, st, yt, ldy, 1, add); break;
    default: break;
    }
}

static _Thread_local uint8_t g_rz1[KZ1_SEG * KZ1_REC] __attribute__((aligned(64)));

INLINE void run_rz1(const kern_args *a, int64_t r0, int64_t r1, const int q5, kern_run_fn tail) {
    const size_t recsz = q5 ? 192 : 160;
    const int64_t nb = a->cols / 32;
    const size_t gbytes = (size_t)nb * recsz, st = a->act_stride;
    const int64_t chunk = kz_chunk(st);
    const int64_t r16 = r0 + (r1 - r0) / 16 * 16;
    for (int64_t t0 = 0; t0 < a->n; t0 += chunk) {
        const int64_t t1 = t0 + chunk < a->n ? t0 + chunk : a->n;
        for (int64_t r = r0; r < r16; r += 16) {
            const uint8_t *wg = a->w + (size_t)(r / 8) * gbytes;
            for (int64_t b0 = 0; b0 < nb; b0 += KZ1_SEG) {
                const int64_t nbs = nb - b0 < KZ1_SEG ? nb - b0 : KZ1_SEG;
                for (int64_t b = 0; b < nbs; b++) {
                    const uint8_t *rec2[2] = {wg + (size_t)(b0 + b) * recsz, wg + gbytes + (size_t)(b0 + b) * recsz};
                    z16_q1(rec2, g_rz1 + b * KZ1_REC, q5);
                }
                const uint8_t *act = a->act + (size_t)b0 * sizeof(cll_block_q8_1);
                if (b0) kz1_sweep(g_rz1, nbs, act, st, a->y + r, a->ldy, t0, t1, 1);
                else kz1_sweep(g_rz1, nbs, act, st, a->y + r, a->ldy, t0, t1, 0);
            }
        }
    }
    if (r16 < r1) tail(a, r16, r1);
}

void cll_kern_run_r8z16_q4_1_avx512(const kern_args *a, int64_t r0, int64_t r1) {
    run_rz1(a, r0, r1, 0, cll_kern_run_r8_q4_1_avx512);
}
void cll_kern_run_r8z16_q5_1_avx512(const kern_args *a, int64_t r0, int64_t r1) {
    run_rz1(a, r0, r1, 1, cll_kern_run_r8_q5_1_avx512);
}
