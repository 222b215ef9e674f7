/* cpu/kern_r8_q1_avx2: GEMV/GEMM of Q4_1 and Q5_1 on their r8 records (kern_r8_pack.c:
 * d[8] m[8] fp16 | nibbles as q4_0's | Q5_1: qh[32]) against Q8_1 activations (ggml's
 * bytes), with AVX2. The tile is kern_r8_avx2.c's tile_q4_0 (8 rows x T tokens, 4-byte
 * activation broadcasts, halves of 16 elements, token order pinned) without the -8 offset:
 * the quants are unsigned as stored, so vpmaddubsw takes them directly.
 * Bounds of the int16 pair sums: 4-bit quants sum 16 products per int16 lane
 * (16*15*127 = 30480 < 32767), 5-bit quants 8 (8*31*127 = 31496), then vpmaddwd widens.
 * Float order per block and token, the scalar reference's (formats/vec_dot_ref.c, built
 * without contraction): acc += (dw*da) * float(isum) + mw*sa, as mul, mul, mul, add, add —
 * so these rows equal matmul_q4_1_scalar / matmul_q5_1_scalar bit for bit (tested). */
#include <immintrin.h>
#include <string.h>

#include "cpu/knobs.h"
#include "cpu/kern_avx2_util.h"
#include "cpu/kern_common.h"

/* cpu.pf_gemv bytes ahead of the record (as kern_r8_avx2.c's GEMV) */
INLINE void pf_gemv(const uint8_t *rec, int bytes) {
    const int pf = cll_cpu_knob.pf_gemv;
    for (int o = 0; o < bytes; o += 64) _mm_prefetch((const char *)rec + pf + o, _MM_HINT_T0);
}

/* one token's block step, the reference's float order: acc + ((dw*da)*isum + mw*sa) */
INLINE __m256 q1_block_acc(__m256 acc, const cll_block_q8_1 *ab, __m256 dw, __m256 mw, __m256i isum) {
    int32_t ds;
    memcpy(&ds, ab, 4); /* d, s fp16 */
    const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128(ds));
    const __m256 da = _mm256_broadcastss_ps(f), sa = _mm256_broadcastss_ps(_mm_movehdup_ps(f));
    const __m256 p = _mm256_mul_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(isum));
    return _mm256_add_ps(acc, _mm256_add_ps(p, _mm256_mul_ps(mw, sa)));
}

INLINE void tile_q1(const uint8_t *wg, int64_t nb, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                    const int T, const int q5) {
    const size_t recsz = q5 ? 192 : 160;
    const __m256i m4 = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
    __m256 acc[8];
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *rec = wg + b * recsz;
        pf_gemv(rec, (int)recsz);
        __m256i s[8];
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            const __m256i v0 = _mm256_loadu_si256((const __m256i *)(rec + 32 + 64 * h));
            const __m256i v1 = _mm256_loadu_si256((const __m256i *)(rec + 64 + 64 * h));
            __m256i w0 = _mm256_and_si256(v0, m4), w1 = _mm256_and_si256(_mm256_srli_epi16(v0, 4), m4);
            __m256i w2 = _mm256_and_si256(v1, m4), w3 = _mm256_and_si256(_mm256_srli_epi16(v1, 4), m4);
            if (q5) {
                const __m256i qh = _mm256_loadu_si256((const __m256i *)(rec + 160));
                w0 = _mm256_or_si256(w0, hbit(qh, 4 * h));
                w1 = _mm256_or_si256(w1, hbit(qh, 4 * h + 1));
                w2 = _mm256_or_si256(w2, hbit(qh, 4 * h + 2));
                w3 = _mm256_or_si256(w3, hbit(qh, 4 * h + 3));
            }
#pragma GCC unroll 8
            for (int t = 0; t < T; t++) {
                const int8_t *q = ((const cll_block_q8_1 *)(act + t * stride) + b)->qs + 16 * h;
                if (t) AFTER(q, s[t - 1]);
                __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(w0, bcast32(q)), _mm256_maddubs_epi16(w1, bcast32(q + 4)));
                p = _mm256_add_epi16(p, _mm256_add_epi16(_mm256_maddubs_epi16(w2, bcast32(q + 8)),
                                                         _mm256_maddubs_epi16(w3, bcast32(q + 12))));
                if (q5) { /* 8 products per int16 lane: widen each half */
                    p = _mm256_madd_epi16(p, ones);
                    s[t] = h ? _mm256_add_epi32(s[t], p) : p;
                } else {
                    s[t] = h ? _mm256_add_epi16(s[t], p) : p;
                }
            }
        }
        const __m256 dw = load_fp16x8((const uint16_t *)rec), mw = load_fp16x8((const uint16_t *)rec + 8);
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            const __m256i isum = q5 ? s[t] : _mm256_madd_epi16(s[t], ones);
            acc[t] = q1_block_acc(acc[t], (const cll_block_q8_1 *)(act + t * stride) + b, dw, mw, isum);
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

/* token chunks stay in L2 while each 8-row group sweeps them (kern_r8_avx2.c's driver) */
#define DEFINE_Q1_RUN(NAME, Q5, TMAX)                                                                            \
    void NAME(const kern_args *a, int64_t r0, int64_t r1) {                                                     \
        const int64_t nb = a->cols / 32;                                                                        \
        const size_t gbytes = (size_t)nb * ((Q5) ? 192 : 160);                                                  \
        const int64_t chunk = a->n == 1 ? 1 : kern_token_chunk(a->act_stride);                                  \
        for (int64_t t0 = 0; t0 < a->n; t0 += chunk) {                                                          \
            const int64_t t1 = t0 + chunk < a->n ? t0 + chunk : a->n;                                           \
            for (int64_t g = r0 / 8; g < r1 / 8; g++) {                                                         \
                const uint8_t *wg = a->w + (size_t)g * gbytes;                                                  \
                const size_t st = a->act_stride;                                                                \
                int64_t t = t0;                                                                                 \
                for (; t + (TMAX) <= t1; t += (TMAX))                                                           \
                    tile_q1(wg, nb, a->act + t * st, st, a->y + t * a->ldy + g * 8, a->ldy, TMAX, Q5);          \
                if ((TMAX) > 4 && t + 4 <= t1) {                                                                \
                    tile_q1(wg, nb, a->act + t * st, st, a->y + t * a->ldy + g * 8, a->ldy, 4, Q5);             \
                    t += 4;                                                                                     \
                }                                                                                               \
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

DEFINE_Q1_RUN(cll_kern_run_r8_q4_1_avx2, 0, 8)
DEFINE_Q1_RUN(cll_kern_run_r8_q5_1_avx2, 1, 4)
