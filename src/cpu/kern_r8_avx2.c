/* cpu/kern_r8_avx2: GEMV/GEMM on the r8 layouts (kern_r8_pack.c) with AVX2.
 * Micro-kernel: 8 weight rows x T tokens. The unpacked weight registers of a block are
 * reused for every token of the tile; each token's activations arrive as 4-byte
 * broadcasts, so vpmaddubsw + vpmaddwd leave one int32 per row in each lane and no
 * horizontal reduction is needed. 16 ymm registers: the GEMM tiles hold 4 weight
 * registers (half a 32-element group) + T int16/int32 sums + T accumulators, and pin the
 * token order (AFTER) so GCC does not hoist all products and spill them. T <= 4, or 8
 * for Q4_0 and Q8_0 (GCC keeps part of the accumulators in L1; 8 was slower for the
 * K-quants). Zen3, 1 core, n=512: Q4_0 155 -> 184 GOP/s, Q4_K 157 -> 190, Q6_K 100 ->
 * 128, Q8_0 104 -> 120 (kbench -c).
 * vpmaddubsw takes unsigned x signed bytes and saturates int16 pairs: unsigned nibbles
 * (<= 15) x |a| <= 127 allow 8 products summed in int16 (8*2*15*127 = 30480 < 32767);
 * 6-bit quants allow 2; Q8_0 uses the sign trick (|w| x sign(a, w)) and widens each. */
#include <immintrin.h>
#include <string.h>

#include "cpu/knobs.h"
#include "cpu/kern_avx2_util.h"
#include "cpu/kern_common.h"

/* GEMV streams the weights once from DRAM: software prefetch cpu.pf_gemv bytes (cpu/knobs.h,
 * default 2048) ahead of the record being read. kbench -c, 1 core: Q6_K 9 -> 16 GB/s,
 * Q4_0/Q4_K 15.5 -> 20 GB/s (2048 beat 4096 and 8192 for the 4-bit types). */
INLINE void pf_gemv(const uint8_t *rec, int bytes) {
    const int pf = cll_cpu_knob.pf_gemv;
    for (int o = 0; o < bytes; o += 64) _mm_prefetch((const char *)rec + pf + o, _MM_HINT_T0);
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
        __m256i s[8];
        /* two halves of 16 elements: 4 weight registers live at a time, so the 4 int16
         * sums, 4 float accumulators and the weights fit the 16 ymm without spills */
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            const __m256i v0 = _mm256_loadu_si256((const __m256i *)(rec + 16 + 64 * h));
            const __m256i v1 = _mm256_loadu_si256((const __m256i *)(rec + 48 + 64 * h));
            const __m256i w0 = _mm256_and_si256(v0, m4), w1 = _mm256_and_si256(_mm256_srli_epi16(v0, 4), m4);
            const __m256i w2 = _mm256_and_si256(v1, m4), w3 = _mm256_and_si256(_mm256_srli_epi16(v1, 4), m4);
#pragma GCC unroll 8
            for (int t = 0; t < T; t++) {
                const int8_t *q = ((const kact_q8_0x *)(act + t * stride) + b)->qs + 16 * h;
                if (t) AFTER(q, s[t - 1]);
                __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(w0, bcast32(q)), _mm256_maddubs_epi16(w1, bcast32(q + 4)));
                p = _mm256_add_epi16(p, _mm256_add_epi16(_mm256_maddubs_epi16(w2, bcast32(q + 8)),
                                                         _mm256_maddubs_epi16(w3, bcast32(q + 12))));
                s[t] = h ? _mm256_add_epi16(s[t], p) : p;
            }
        }
        const __m256 dw = load_fp16x8((const uint16_t *)rec);
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            const kact_q8_0x *ab = (const kact_q8_0x *)(act + t * stride) + b;
            __m256i s32 = _mm256_sub_epi32(_mm256_madd_epi16(s[t], _mm256_set1_epi16(1)), _mm256_set1_epi32(ab->s8));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32), _mm256_mul_ps(dw, _mm256_set1_ps(ab->d)), acc[t]);
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

/* ---- Q8_0 x Q8_0 ----------------------------------------------------------------- */

INLINE void tile_q8_0(const uint8_t *wg, int64_t nb, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                      const int T) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[8];
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *rec = wg + b * 272;
        pf_gemv(rec, 272);
        const __m256i *wq = (const __m256i *)(rec + 16);
        __m256i s32[8];
        /* halves of 16 elements, token order pinned (see tile_q4_0) */
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            __m256i aw[8];
#pragma GCC unroll 8
            for (int g = 0; g < 4; g++) aw[g] = _mm256_abs_epi8(_mm256_loadu_si256(wq + 4 * h + g));
#pragma GCC unroll 8
            for (int t = 0; t < T; t++) {
                const int8_t *q = ((const kact_q8_0x *)(act + t * stride) + b)->qs + 16 * h;
                if (t) AFTER(q, s32[t - 1]);
                __m256i p[8];
#pragma GCC unroll 8
                for (int g = 0; g < 4; g++)
                    p[g] = _mm256_madd_epi16(
                        _mm256_maddubs_epi16(aw[g], _mm256_sign_epi8(bcast32(q + 4 * g), _mm256_loadu_si256(wq + 4 * h + g))),
                        ones);
                __m256i v = _mm256_add_epi32(_mm256_add_epi32(p[0], p[1]), _mm256_add_epi32(p[2], p[3]));
                s32[t] = h ? _mm256_add_epi32(s32[t], v) : v;
            }
        }
        const __m256 dw = load_fp16x8((const uint16_t *)rec);
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            const kact_q8_0x *ab = (const kact_q8_0x *)(act + t * stride) + b;
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32[t]), _mm256_mul_ps(dw, _mm256_set1_ps(ab->d)), acc[t]);
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

/* ---- Q4_K / Q5_K x Q8_K (q5: the 5th bits follow the q4_K record) ------------------ */

/* one token's block step: acc + d*da*isum - dmin*da*(mins . sums of the activations per
 * 32-element sub-block, taken as int16 pairs of subs 2j, 2j+1) */
INLINE __m256 q45_block_acc(__m256 acc, const cll_block_q8_K *ab, const uint8_t *mm, __m256 dw, __m256 dmw, __m256i isum) {
    const __m128i b0 = _mm_loadu_si128((const __m128i *)ab->bsums), b1 = _mm_loadu_si128((const __m128i *)ab->bsums + 1);
    int32_t bsp[4];
    _mm_storeu_si128((__m128i *)bsp, _mm_hadd_epi16(b0, b1));
    __m256i msum = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        const __m256i mv = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(mm + 16 * j)));
        msum = _mm256_add_epi32(msum, _mm256_madd_epi16(mv, _mm256_set1_epi32(bsp[j])));
    }
    const __m256 da = _mm256_set1_ps(ab->d);
    acc = _mm256_fmadd_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(isum), acc);
    return _mm256_fnmadd_ps(_mm256_mul_ps(dmw, da), _mm256_cvtepi32_ps(msum), acc);
}

INLINE void tile_q45_K(const uint8_t *wg, int64_t nb, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                       const int T, const int q5) {
    const size_t recsz = q5 ? 1440 : 1184;
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256 acc[4];
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *rec = wg + b * recsz;
        pf_gemv(rec, (int)recsz);
        const uint8_t *sc = rec + 32, *mm = rec + 96, *qs = rec + 160;
        __m256i isum[4];
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) isum[t] = _mm256_setzero_si256();
        /* unrolled: the nibble and high-bit shifts become constants, not branches */
#pragma GCC unroll 8
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
            __m256i scv = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(sc + 8 * s)));
            scv = _mm256_or_si256(scv, _mm256_slli_epi32(scv, 16)); /* (sc, sc) int16 pair per row */
#pragma GCC unroll 4
            for (int t = 0; t < T; t++) {
                const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
                const int8_t *aq = ab->qs + 32 * s;
                __m256i p = _mm256_maddubs_epi16(w[0], bcast32(aq));
                if (q5) { /* 5-bit quants: only 4 int16 pair sums fit (4*2*31*127 = 31496) */
#pragma GCC unroll 4
                    for (int c = 1; c < 4; c++) p = _mm256_add_epi16(p, _mm256_maddubs_epi16(w[c], bcast32(aq + 4 * c)));
                    __m256i p2 = _mm256_maddubs_epi16(w[4], bcast32(aq + 16));
#pragma GCC unroll 4
                    for (int c = 5; c < 8; c++) p2 = _mm256_add_epi16(p2, _mm256_maddubs_epi16(w[c], bcast32(aq + 4 * c)));
                    isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(_mm256_madd_epi16(p, scv), _mm256_madd_epi16(p2, scv)));
                } else {
#pragma GCC unroll 8
                    for (int c = 1; c < 8; c++) p = _mm256_add_epi16(p, _mm256_maddubs_epi16(w[c], bcast32(aq + 4 * c)));
                    isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(p, scv));
                }
            }
        }
        const __m256 dw = load_fp16x8((const uint16_t *)rec), dmw = load_fp16x8((const uint16_t *)rec + 8);
#pragma GCC unroll 4
        for (int t = 0; t < T; t++)
            acc[t] = q45_block_acc(acc[t], (const cll_block_q8_K *)(act + t * stride) + b, mm, dw, dmw, isum[t]);
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

/* Q4_K alone: each 32-element sub-block in two halves of 4 weight registers, with the
 * token order pinned (AFTER), so weights, int16 sums and int32 sums stay in registers */
INLINE void tile_q4_K_h(const uint8_t *wg, int64_t nb, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                        const int T) {
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256 acc[4];
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *rec = wg + b * 1184;
        pf_gemv(rec, 1184);
        const uint8_t *sc = rec + 32, *mm = rec + 96, *qs = rec + 160;
        __m256i isum[4];
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) isum[t] = _mm256_setzero_si256();
        /* unrolled: the nibble and high-bit shifts become constants, not branches */
#pragma GCC unroll 8
        for (int s = 0; s < 8; s++) {
            const __m256i *src = (const __m256i *)(qs + 256 * (s >> 1));
            __m256i p16[4];
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                __m256i w[4];
#pragma GCC unroll 4
                for (int c = 0; c < 4; c++) {
                    const __m256i v = _mm256_loadu_si256(src + 4 * h + c);
                    w[c] = (s & 1) ? _mm256_and_si256(_mm256_srli_epi16(v, 4), m4) : _mm256_and_si256(v, m4);
                }
#pragma GCC unroll 4
                for (int t = 0; t < T; t++) {
                    const int8_t *aq = ((const cll_block_q8_K *)(act + t * stride) + b)->qs + 32 * s + 16 * h;
                    if (t) AFTER(aq, p16[t - 1]);
                    __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(w[0], bcast32(aq)),
                                                 _mm256_maddubs_epi16(w[1], bcast32(aq + 4)));
                    p = _mm256_add_epi16(p, _mm256_add_epi16(_mm256_maddubs_epi16(w[2], bcast32(aq + 8)),
                                                             _mm256_maddubs_epi16(w[3], bcast32(aq + 12))));
                    p16[t] = h ? _mm256_add_epi16(p16[t], p) : p;
                }
            }
            __m256i scv = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(sc + 8 * s)));
            scv = _mm256_or_si256(scv, _mm256_slli_epi32(scv, 16)); /* (sc, sc) int16 pair per row */
#pragma GCC unroll 4
            for (int t = 0; t < T; t++) isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(p16[t], scv));
        }
        const __m256 dw = load_fp16x8((const uint16_t *)rec), dmw = load_fp16x8((const uint16_t *)rec + 8);
#pragma GCC unroll 4
        for (int t = 0; t < T; t++)
            acc[t] = q45_block_acc(acc[t], (const cll_block_q8_K *)(act + t * stride) + b, mm, dw, dmw, isum[t]);
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

/* ---- Q6_K x Q8_K ----------------------------------------------------------------- */

INLINE void tile_q6_K(const uint8_t *wg, int64_t nb, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                      const int T) {
    const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
    /* pshufb masks: replicate int16 lane 0 (sub 2k) or lane 1 (sub 2k+1) of each 32-bit pair */
    const __m256i dup_lo = _mm256_set_epi8(13, 12, 13, 12, 9, 8, 9, 8, 5, 4, 5, 4, 1, 0, 1, 0, 13, 12, 13, 12, 9, 8,
                                           9, 8, 5, 4, 5, 4, 1, 0, 1, 0);
    const __m256i dup_hi = _mm256_set_epi8(15, 14, 15, 14, 11, 10, 11, 10, 7, 6, 7, 6, 3, 2, 3, 2, 15, 14, 15, 14, 11,
                                           10, 11, 10, 7, 6, 7, 6, 3, 2, 3, 2);
    __m256 acc[4];
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *rec = wg + b * 1680;
        const int8_t *sc = (const int8_t *)(rec + 16);
        const uint8_t *ql = rec + 144, *qh = rec + 1168;
        __m256i isum[4];
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) isum[t] = _mm256_setzero_si256();
        pf_gemv(rec, 1680);
        /* unrolled: the nibble and high-bit shifts become constants, not branches */
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            const __m256i *lsrc = (const __m256i *)(ql + 256 * (k >> 1));
            const __m256i *hsrc = (const __m256i *)(qh + 256 * (k >> 2));
            if (k) { /* chunk after chunk (see AFTER): the unrolled chunks otherwise spill */
                AFTER(lsrc, isum[0]);
                AFTER(hsrc, isum[0]);
            }
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
            const __m256i s0 = _mm256_shuffle_epi8(sck, dup_lo), s1 = _mm256_shuffle_epi8(sck, dup_hi);
            const __m256i sck32 = _mm256_slli_epi16(sck, 5); /* 32 * sc: the -32 offset of the quants */
#pragma GCC unroll 4
            for (int t = 0; t < T; t++) {
                const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
                const int8_t *aq = ab->qs + 32 * k;
                __m256i p0 = _mm256_add_epi16(_mm256_maddubs_epi16(w[0], bcast32(aq)),
                                              _mm256_maddubs_epi16(w[1], bcast32(aq + 4)));
                __m256i p1 = _mm256_add_epi16(_mm256_maddubs_epi16(w[2], bcast32(aq + 8)),
                                              _mm256_maddubs_epi16(w[3], bcast32(aq + 12)));
                __m256i p2 = _mm256_add_epi16(_mm256_maddubs_epi16(w[4], bcast32(aq + 16)),
                                              _mm256_maddubs_epi16(w[5], bcast32(aq + 20)));
                __m256i p3 = _mm256_add_epi16(_mm256_maddubs_epi16(w[6], bcast32(aq + 24)),
                                              _mm256_maddubs_epi16(w[7], bcast32(aq + 28)));
                __m256i v = _mm256_add_epi32(_mm256_madd_epi16(p0, s0), _mm256_madd_epi16(p1, s0));
                v = _mm256_add_epi32(v, _mm256_add_epi32(_mm256_madd_epi16(p2, s1), _mm256_madd_epi16(p3, s1)));
                v = _mm256_sub_epi32(v, _mm256_madd_epi16(sck32, bcast32(ab->bsums + 2 * k)));
                isum[t] = _mm256_add_epi32(isum[t], v);
            }
        }
        const __m256 dw = load_fp16x8((const uint16_t *)rec);
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) {
            const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(ab->d)), _mm256_cvtepi32_ps(isum[t]), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

/* Q6_K with the chunk in two halves of 4 weight registers (one 16-element scale each)
 * and the token order pinned, as tile_q4_K_h */
INLINE void tile_q6_K_h(const uint8_t *wg, int64_t nb, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                        const int T) {
    const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
    const __m256i dup_lo = _mm256_set_epi8(13, 12, 13, 12, 9, 8, 9, 8, 5, 4, 5, 4, 1, 0, 1, 0, 13, 12, 13, 12, 9, 8,
                                           9, 8, 5, 4, 5, 4, 1, 0, 1, 0);
    __m256 acc[4];
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *rec = wg + b * 1680;
        const int8_t *sc = (const int8_t *)(rec + 16);
        const uint8_t *ql = rec + 144, *qh = rec + 1168;
        __m256i isum[4];
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) isum[t] = _mm256_setzero_si256();
        /* unrolled: the nibble and high-bit shifts become constants, not branches */
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            const __m256i *lsrc = (const __m256i *)(ql + 256 * (k >> 1));
            const __m256i *hsrc = (const __m256i *)(qh + 256 * (k >> 2));
            const int hs = 2 * (k & 3);
            const __m256i sck = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(sc + 16 * k)));
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                __m256i w[4];
#pragma GCC unroll 4
                for (int c = 0; c < 4; c++) {
                    __m256i lo = _mm256_loadu_si256(lsrc + 4 * h + c);
                    lo = (k & 1) ? _mm256_and_si256(_mm256_srli_epi16(lo, 4), m4) : _mm256_and_si256(lo, m4);
                    __m256i hi = _mm256_loadu_si256(hsrc + 4 * h + c);
                    hi = hs <= 4 ? _mm256_slli_epi16(hi, 4 - hs) : _mm256_srli_epi16(hi, hs - 4);
                    w[c] = _mm256_or_si256(lo, _mm256_and_si256(hi, m30));
                }
                /* int16 scale of sub 2k (h = 0) or 2k+1 (h = 1) in both halves of each row's pair */
                const __m256i s16 = _mm256_shuffle_epi8(h ? _mm256_srli_epi32(sck, 16) : sck, dup_lo);
#pragma GCC unroll 4
                for (int t = 0; t < T; t++) {
                    const int8_t *aq = ((const cll_block_q8_K *)(act + t * stride) + b)->qs + 32 * k + 16 * h;
                    if (t) AFTER(aq, isum[t - 1]);
                    __m256i p0 = _mm256_add_epi16(_mm256_maddubs_epi16(w[0], bcast32(aq)),
                                                  _mm256_maddubs_epi16(w[1], bcast32(aq + 4)));
                    __m256i p1 = _mm256_add_epi16(_mm256_maddubs_epi16(w[2], bcast32(aq + 8)),
                                                  _mm256_maddubs_epi16(w[3], bcast32(aq + 12)));
                    isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(_mm256_madd_epi16(p0, s16), _mm256_madd_epi16(p1, s16)));
                }
            }
            const __m256i sck32 = _mm256_slli_epi16(sck, 5); /* 32 * sc: the -32 offset of the quants */
#pragma GCC unroll 4
            for (int t = 0; t < T; t++) {
                const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
                isum[t] = _mm256_sub_epi32(isum[t], _mm256_madd_epi16(sck32, bcast32(ab->bsums + 2 * k)));
            }
        }
        const __m256 dw = load_fp16x8((const uint16_t *)rec);
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) {
            const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(ab->d)), _mm256_cvtepi32_ps(isum[t]), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

/* ---- drivers: token chunks stay in L2 while each 8-row group sweeps them ---------- */

#define DEFINE_R8_RUN(NAME, TILE, BLK, REC) DEFINE_R8_RUN_T(NAME, TILE, BLK, REC, 4)
#define DEFINE_R8_RUN_T(NAME, TILE, BLK, REC, TMAX)                                                             \
    void NAME(const kern_args *a, int64_t r0, int64_t r1) {                                                     \
        const int64_t nb = a->cols / (BLK);                                                                     \
        const size_t gbytes = (size_t)nb * (REC);                                                               \
        const int64_t chunk = a->n == 1 ? 1 : kern_token_chunk(a->act_stride);                                  \
        for (int64_t t0 = 0; t0 < a->n; t0 += chunk) {                                                          \
            const int64_t t1 = t0 + chunk < a->n ? t0 + chunk : a->n;                                           \
            for (int64_t g = r0 / 8; g < r1 / 8; g++) {                                                         \
                const uint8_t *wg = a->w + (size_t)g * gbytes;                                                  \
                int64_t t = t0;                                                                                 \
                for (; t + TMAX <= t1; t += TMAX)                                                               \
                    TILE(wg, nb, a->act + t * a->act_stride, a->act_stride, a->y + t * a->ldy + g * 8, a->ldy, TMAX); \
                if (TMAX > 4 && t + 4 <= t1) {                                                                  \
                    TILE(wg, nb, a->act + t * a->act_stride, a->act_stride, a->y + t * a->ldy + g * 8, a->ldy, 4); \
                    t += 4;                                                                                     \
                }                                                                                               \
                const uint8_t *at = a->act + t * a->act_stride;                                                 \
                float *yt = a->y + t * a->ldy + g * 8;                                                          \
                switch (t1 - t) {                                                                               \
                case 3: TILE(wg, nb, at, a->act_stride, yt, a->ldy, 3); break;                                 \
                case 2: TILE(wg, nb, at, a->act_stride, yt, a->ldy, 2); break;                                 \
                case 1: TILE(wg, nb, at, a->act_stride, yt, a->ldy, 1); break;                                 \
                default: break;                                                                                 \
                }                                                                                               \
            }                                                                                                   \
        }                                                                                                       \
    }

DEFINE_R8_RUN_T(cll_kern_run_r8_q4_0_avx2, tile_q4_0, 32, 144, 8)
DEFINE_R8_RUN_T(cll_kern_run_r8_q8_0_avx2, tile_q8_0, 32, 272, 8)
#define tile_q4_K tile_q4_K_h
#define tile_q5_K(wg, nb, act, st, y, ldy, T) tile_q45_K(wg, nb, act, st, y, ldy, T, 1)
static DEFINE_R8_RUN(r8_q4_K_direct, tile_q4_K, 256, 1184)
static DEFINE_R8_RUN(r8_q5_K_direct, tile_q5_K, 256, 1440)
#define tile_q6_K_any(wg, nb, act, st, y, ldy, T) \
    ((T) == 1 ? tile_q6_K(wg, nb, act, st, y, ldy, 1) : tile_q6_K_h(wg, nb, act, st, y, ldy, T))
static DEFINE_R8_RUN(r8_q6_K_direct, tile_q6_K_any, 256, 1680)

/* ---- Q6_K GEMM on predecoded records ---------------------------------------------------
 * tile_q6_K_h rebuilds each 6-bit weight register from ql/qh (load, shift, mask, or: ~5
 * vector ops per register) once per 4-token tile, about a third of the tile's vector ops.
 * Here an 8-row group's blocks are decoded once per token chunk into registers' images in
 * L1/L2 (the records below, per block: w[8 k][2 h][4 c] | s16[8 k][2 h] | 32*sc[8 k] | d[8]),
 * and the token tiles only load them. The integer sums are the same exact values, and each
 * token's float accumulation runs block by block in the same order (carried through y across
 * segments), so the result is bit for bit tile_q6_K_h's. */
#define P6_S 2048
#define P6_C 2560
#define P6_D 2816
#define P6_REC 2848
#define P6_SEG 64
static _Thread_local uint8_t g_p6[P6_SEG * P6_REC] __attribute__((aligned(64)));

INLINE void predec_q6_K(const uint8_t *rec, uint8_t *o) {
    const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
    const __m256i dup_lo = _mm256_set_epi8(13, 12, 13, 12, 9, 8, 9, 8, 5, 4, 5, 4, 1, 0, 1, 0, 13, 12, 13, 12, 9, 8,
                                           9, 8, 5, 4, 5, 4, 1, 0, 1, 0);
    const int8_t *sc = (const int8_t *)(rec + 16);
    const uint8_t *ql = rec + 144, *qh = rec + 1168;
#pragma GCC unroll 8
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
            _mm256_store_si256((__m256i *)(o + 32 * (8 * k + c)), _mm256_or_si256(lo, _mm256_and_si256(hi, m30)));
        }
        const __m256i sck = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(sc + 16 * k)));
        _mm256_store_si256((__m256i *)(o + P6_S + 32 * (2 * k)), _mm256_shuffle_epi8(sck, dup_lo));
        _mm256_store_si256((__m256i *)(o + P6_S + 32 * (2 * k + 1)), _mm256_shuffle_epi8(_mm256_srli_epi32(sck, 16), dup_lo));
        _mm256_store_si256((__m256i *)(o + P6_C + 32 * k), _mm256_slli_epi16(sck, 5));
    }
    _mm256_store_ps((float *)(o + P6_D), load_fp16x8((const uint16_t *)rec));
}

INLINE void tile_q6_K_p(const uint8_t *pd, int64_t nbs, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                        const int T, const int add) {
    __m256 acc[4];
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) acc[t] = add ? _mm256_loadu_ps(y + t * ldy) : _mm256_setzero_ps();
    for (int64_t b = 0; b < nbs; b++) {
        const uint8_t *o = pd + b * P6_REC;
        __m256i isum[4];
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) isum[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                const __m256i *wp = (const __m256i *)(o + 32 * (8 * k + 4 * h));
                const __m256i w0 = _mm256_load_si256(wp), w1 = _mm256_load_si256(wp + 1);
                const __m256i w2 = _mm256_load_si256(wp + 2), w3 = _mm256_load_si256(wp + 3);
                const __m256i s16 = _mm256_load_si256((const __m256i *)(o + P6_S + 32 * (2 * k + h)));
#pragma GCC unroll 4
                for (int t = 0; t < T; t++) {
                    const int8_t *aq = ((const cll_block_q8_K *)(act + t * stride) + b)->qs + 32 * k + 16 * h;
                    if (t) AFTER(aq, isum[t - 1]);
                    const __m256i p0 = _mm256_add_epi16(_mm256_maddubs_epi16(w0, bcast32(aq)),
                                                        _mm256_maddubs_epi16(w1, bcast32(aq + 4)));
                    const __m256i p1 = _mm256_add_epi16(_mm256_maddubs_epi16(w2, bcast32(aq + 8)),
                                                        _mm256_maddubs_epi16(w3, bcast32(aq + 12)));
                    isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(_mm256_madd_epi16(p0, s16), _mm256_madd_epi16(p1, s16)));
                }
            }
            const __m256i sck32 = _mm256_load_si256((const __m256i *)(o + P6_C + 32 * k));
#pragma GCC unroll 4
            for (int t = 0; t < T; t++) {
                const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
                isum[t] = _mm256_sub_epi32(isum[t], _mm256_madd_epi16(sck32, bcast32(ab->bsums + 2 * k)));
            }
        }
        const __m256 dw = _mm256_load_ps((const float *)(o + P6_D));
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) {
            const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(ab->d)), _mm256_cvtepi32_ps(isum[t]), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

/* GEMM on predecoded records: per token chunk and 8-row group, the group's blocks (in
 * segments of P6_SEG) are decoded by PREDEC into g_p6 and swept by TILE in 4-token tiles;
 * later segments add into y. Fewer than 8 tokens run DIRECT (the decode would not pay). */
#define DEFINE_PRED_RUN(NAME, DIRECT, PREDEC, TILE, REC, PREC)                                                   \
    void NAME(const kern_args *a, int64_t r0, int64_t r1) {                                                     \
        if (a->n < 8) {                                                                                         \
            DIRECT(a, r0, r1);                                                                                  \
            return;                                                                                             \
        }                                                                                                       \
        const int64_t nb = a->cols / 256;                                                                       \
        const size_t gbytes = (size_t)nb * (REC);                                                               \
        const int64_t chunk = kern_token_chunk(a->act_stride);                                                  \
        for (int64_t t0 = 0; t0 < a->n; t0 += chunk) {                                                          \
            const int64_t t1 = t0 + chunk < a->n ? t0 + chunk : a->n;                                           \
            for (int64_t g = r0 / 8; g < r1 / 8; g++) {                                                         \
                const uint8_t *wg = a->w + (size_t)g * gbytes;                                                  \
                for (int64_t b0 = 0; b0 < nb; b0 += P6_SEG) {                                                   \
                    const int64_t nbs = nb - b0 < P6_SEG ? nb - b0 : P6_SEG;                                    \
                    for (int64_t b = 0; b < nbs; b++) PREDEC(wg + (size_t)(b0 + b) * (REC), g_p6 + b * (PREC)); \
                    const uint8_t *act = a->act + (size_t)b0 * sizeof(cll_block_q8_K);                          \
                    const size_t st = a->act_stride;                                                            \
                    const int add = b0 > 0;                                                                     \
                    int64_t t = t0;                                                                             \
                    for (; t + 4 <= t1; t += 4) TILE(g_p6, nbs, act + t * st, st, a->y + t * a->ldy + g * 8, a->ldy, 4, add); \
                    const uint8_t *at = act + t * st;                                                           \
                    float *yt = a->y + t * a->ldy + g * 8;                                                      \
                    switch (t1 - t) {                                                                           \
                    case 3: TILE(g_p6, nbs, at, st, yt, a->ldy, 3, add); break;                                 \
                    case 2: TILE(g_p6, nbs, at, st, yt, a->ldy, 2, add); break;                                 \
                    case 1: TILE(g_p6, nbs, at, st, yt, a->ldy, 1, add); break;                                 \
                    default: break;                                                                             \
                    }                                                                                           \
                }                                                                                               \
            }                                                                                                   \
        }                                                                                                       \
    }

DEFINE_PRED_RUN(cll_kern_run_r8_q6_K_avx2, r8_q6_K_direct, predec_q6_K, tile_q6_K_p, 1680, P6_REC)

/* ---- Q4_K / Q5_K GEMM on predecoded records (as Q6_K above): per block w[8 s][8 c] |
 * (sc, sc) int16 pairs [8 s] | d[8] | dmin[8] | the 64 mins bytes. Q4_K keeps tile_q4_K_h's
 * int16 grouping (8 products per pair sum), Q5_K tile_q45_K's (4); the float steps per
 * block are theirs, so the results are bit for bit the direct tiles'. */
#define P45_SC 2048
#define P45_D 2304
#define P45_DM 2336
#define P45_MM 2368
#define P45_REC 2432

INLINE void predec_q45_K(const uint8_t *rec, uint8_t *o, const int q5) {
    const __m256i m4 = _mm256_set1_epi8(15), b4 = _mm256_set1_epi8(0x10);
    const uint8_t *sc = rec + 32, *qs = rec + 160;
#pragma GCC unroll 8
    for (int s = 0; s < 8; s++) {
        const __m256i *src = (const __m256i *)(qs + 256 * (s >> 1)), *hsrc = (const __m256i *)(rec + 1184);
#pragma GCC unroll 8
        for (int c = 0; c < 8; c++) {
            const __m256i v = _mm256_loadu_si256(src + c);
            __m256i w = (s & 1) ? _mm256_and_si256(_mm256_srli_epi16(v, 4), m4) : _mm256_and_si256(v, m4);
            if (q5) {
                __m256i h = _mm256_loadu_si256(hsrc + c);
                h = s <= 4 ? _mm256_slli_epi16(h, 4 - s) : _mm256_srli_epi16(h, s - 4);
                w = _mm256_or_si256(w, _mm256_and_si256(h, b4));
            }
            _mm256_store_si256((__m256i *)(o + 32 * (8 * s + c)), w);
        }
        __m256i scv = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(sc + 8 * s)));
        _mm256_store_si256((__m256i *)(o + P45_SC + 32 * s), _mm256_or_si256(scv, _mm256_slli_epi32(scv, 16)));
    }
    _mm256_store_ps((float *)(o + P45_D), load_fp16x8((const uint16_t *)rec));
    _mm256_store_ps((float *)(o + P45_DM), load_fp16x8((const uint16_t *)rec + 8));
    _mm256_store_si256((__m256i *)(o + P45_MM), _mm256_loadu_si256((const __m256i *)(rec + 96)));
    _mm256_store_si256((__m256i *)(o + P45_MM + 32), _mm256_loadu_si256((const __m256i *)(rec + 128)));
}

INLINE void tile_q45_K_p(const uint8_t *pd, int64_t nbs, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                         const int T, const int add, const int q5) {
    __m256 acc[4];
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) acc[t] = add ? _mm256_loadu_ps(y + t * ldy) : _mm256_setzero_ps();
    for (int64_t b = 0; b < nbs; b++) {
        const uint8_t *o = pd + b * P45_REC;
        __m256i isum[4];
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) isum[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int s = 0; s < 8; s++) {
            const __m256i scv = _mm256_load_si256((const __m256i *)(o + P45_SC + 32 * s));
            __m256i p16[4];
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                const __m256i *wp = (const __m256i *)(o + 32 * (8 * s + 4 * h));
                const __m256i w0 = _mm256_load_si256(wp), w1 = _mm256_load_si256(wp + 1);
                const __m256i w2 = _mm256_load_si256(wp + 2), w3 = _mm256_load_si256(wp + 3);
#pragma GCC unroll 4
                for (int t = 0; t < T; t++) {
                    const int8_t *aq = ((const cll_block_q8_K *)(act + t * stride) + b)->qs + 32 * s + 16 * h;
                    if (t) AFTER(aq, q5 ? isum[t - 1] : p16[t - 1]);
                    __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(w0, bcast32(aq)), _mm256_maddubs_epi16(w1, bcast32(aq + 4)));
                    p = _mm256_add_epi16(p, _mm256_add_epi16(_mm256_maddubs_epi16(w2, bcast32(aq + 8)),
                                                             _mm256_maddubs_epi16(w3, bcast32(aq + 12))));
                    if (q5) isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(p, scv));
                    else p16[t] = h ? _mm256_add_epi16(p16[t], p) : p;
                }
            }
            if (!q5) {
#pragma GCC unroll 4
                for (int t = 0; t < T; t++) isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(p16[t], scv));
            }
        }
        const __m256 dw = _mm256_load_ps((const float *)(o + P45_D)), dmw = _mm256_load_ps((const float *)(o + P45_DM));
        const uint8_t *mm = o + P45_MM;
#pragma GCC unroll 4
        for (int t = 0; t < T; t++)
            acc[t] = q45_block_acc(acc[t], (const cll_block_q8_K *)(act + t * stride) + b, mm, dw, dmw, isum[t]);
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

#define predec_q4_K(rec, o) predec_q45_K(rec, o, 0)
#define predec_q5_K(rec, o) predec_q45_K(rec, o, 1)
#define tile_q4_K_p(pd, nbs, act, st, y, ldy, T, add) tile_q45_K_p(pd, nbs, act, st, y, ldy, T, add, 0)
#define tile_q5_K_p(pd, nbs, act, st, y, ldy, T, add) tile_q45_K_p(pd, nbs, act, st, y, ldy, T, add, 1)
DEFINE_PRED_RUN(cll_kern_run_r8_q4_K_avx2, r8_q4_K_direct, predec_q4_K, tile_q4_K_p, 1184, P45_REC)
DEFINE_PRED_RUN(cll_kern_run_r8_q5_K_avx2, r8_q5_K_direct, predec_q5_K, tile_q5_K_p, 1440, P45_REC)
