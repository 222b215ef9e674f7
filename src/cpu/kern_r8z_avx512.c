/* cpu/kern_r8z_avx512: GEMV (one token) on the r8 layouts with 512-bit vectors: two
 * 4-element groups of the 8 interleaved rows per zmm (64 contiguous bytes of the record),
 * so the 6-bit (Q6_K) reconstruction and vpdpbusd run on twice the bytes per instruction;
 * the activation dwords of the two groups go to the two 256-bit halves (one vpermd), and
 * the halves are added once per super-block. Integer sums equal kern_r8_avx512.c's, the
 * float ops after them are the same (fma of d * da times the int32 lanes, per block).
 * Also here: the IQ4_XS GEMV on the file layout with zmm (4 sub-blocks of 32 per vector). */
#include <immintrin.h>
#include <string.h>

#include "cpu/kern_common.h"
#include "formats/iq_tables.h"

#define INLINE static inline __attribute__((always_inline))

/* Decode streams the weights once; the hardware prefetchers alone leave the single-token
 * kernels waiting on DRAM. Each record prefetches the one 4 records ahead in the same linear
 * stream (the 8-row groups are contiguous). kbench -t 1 -c GEMV q6_K 8192x2048 / 2048x8192
 * from DRAM, distance 0 -> 2 -> 4 -> 8 records: 33.8/29.1 -> 38.0/36.6 -> 40.6/39.8 ->
 * 39.2/41.0 GB/s; the prefetch past the end of a share is harmless. */
INLINE void prefetch_ahead(const uint8_t *rec, const int recsz) {
    const char *p = (const char *)rec + 4 * recsz;
    for (int i = 0; i < recsz; i += 64) _mm_prefetch(p + i, _MM_HINT_T0);
}

/* Q6_K record (kern_r8_pack.c): d[8] fp16 | sc[8 k][8 r][2] i8 @16 | ql[4 p][8 c][32] @144 | qh[2 h][8 c][32] @1168 */
INLINE __m256 q6_block(const uint8_t *rec, const cll_block_q8_K *ab) {
    const __m512i m4 = _mm512_set1_epi8(15), m30 = _mm512_set1_epi8(0x30);
    const __m512i sel = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const int8_t *sc = (const int8_t *)(rec + 16);
    const uint8_t *ql = rec + 144, *qh = rec + 1168;
    __m512i isum = _mm512_setzero_si512();
    __m256i csum = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
        const uint8_t *lsrc = ql + 256 * (k >> 1), *hsrc = qh + 256 * (k >> 2);
        const int hs = 2 * (k & 3);
        const int8_t *aq = ab->qs + 32 * k;
        __m512i p[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            __m512i lo = _mm512_loadu_si512(lsrc + 64 * i);
            lo = (k & 1) ? _mm512_and_si512(_mm512_srli_epi16(lo, 4), m4) : _mm512_and_si512(lo, m4);
            __m512i hi = _mm512_loadu_si512(hsrc + 64 * i);
            hi = hs <= 4 ? _mm512_slli_epi16(hi, 4 - hs) : _mm512_srli_epi16(hi, hs - 4);
            const __m512i w = _mm512_or_si512(lo, _mm512_and_si512(hi, m30));
            const __m512i av = _mm512_permutexvar_epi32(sel, _mm512_castsi128_si512(_mm_loadl_epi64((const __m128i *)(aq + 8 * i))));
            p[i >> 1] = _mm512_dpbusd_epi32(p[i >> 1], w, av);
        }
        const __m256i sck = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(sc + 16 * k)));
        const __m256i s0 = _mm256_srai_epi32(_mm256_slli_epi32(sck, 16), 16), s1 = _mm256_srai_epi32(sck, 16);
        isum = _mm512_add_epi32(isum, _mm512_add_epi32(_mm512_mullo_epi32(p[0], _mm512_broadcast_i64x4(s0)),
                                                       _mm512_mullo_epi32(p[1], _mm512_broadcast_i64x4(s1))));
        int32_t bs;
        memcpy(&bs, ab->bsums + 2 * k, 4);
        csum = _mm256_add_epi32(csum, _mm256_madd_epi16(_mm256_slli_epi16(sck, 5), _mm256_set1_epi32(bs)));
    }
    const __m256i is = _mm256_sub_epi32(_mm256_add_epi32(_mm512_castsi512_si256(isum), _mm512_extracti64x4_epi64(isum, 1)), csum);
    return _mm256_cvtepi32_ps(is);
}

void cll_kern_run_r8_q6_K_gemv_avx512z(const kern_args *a, int64_t r0, int64_t r1) {
    const int64_t nb = a->cols / 256;
    const size_t gbytes = (size_t)nb * 1680;
    for (int64_t t = 0; t < a->n; t++) {
        const cll_block_q8_K *ab = (const cll_block_q8_K *)(a->act + t * a->act_stride);
        for (int64_t g = r0 / 8; g < r1 / 8; g++) {
            const uint8_t *wg = a->w + (size_t)g * gbytes;
            __m256 acc = _mm256_setzero_ps();
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t *rec = wg + b * 1680;
                prefetch_ahead(rec, 1680);
                const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)rec));
                acc = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(ab[b].d)), q6_block(rec, ab + b), acc);
            }
            _mm256_storeu_ps(a->y + t * a->ldy + g * 8, acc);
        }
    }
}

/* Q4_K / Q5_K record (kern_r8_pack.c): d[8] dmin[8] fp16 | sc[8 s][8 r] u8 @32 | m[4 j][8 r][2] u8 @96 |
 * q[4 p][8 c][32] @160 (lo nibble: sub 2p, hi: sub 2p+1) | q5: qh[8 c][32] @1184 (bit s: 5th bit of sub s) */
INLINE __m256 q45_block(const uint8_t *rec, const cll_block_q8_K *ab, const int q5, __m256 acc) {
    const __m512i m4 = _mm512_set1_epi8(15), b4 = _mm512_set1_epi8(0x10);
    const __m512i sel = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const uint8_t *sc = rec + 32, *mm = rec + 96, *qs = rec + 160, *qh = rec + 1184;
    __m512i isum = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int s = 0; s < 8; s++) {
        const uint8_t *src = qs + 256 * (s >> 1);
        const int8_t *aq = ab->qs + 32 * s;
        __m512i p = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            __m512i w = _mm512_loadu_si512(src + 64 * i);
            w = (s & 1) ? _mm512_and_si512(_mm512_srli_epi16(w, 4), m4) : _mm512_and_si512(w, m4);
            if (q5) {
                __m512i h = _mm512_loadu_si512(qh + 64 * i);
                h = s <= 4 ? _mm512_slli_epi16(h, 4 - s) : _mm512_srli_epi16(h, s - 4);
                w = _mm512_or_si512(w, _mm512_and_si512(h, b4));
            }
            const __m512i av = _mm512_permutexvar_epi32(sel, _mm512_castsi128_si512(_mm_loadl_epi64((const __m128i *)(aq + 8 * i))));
            p = _mm512_dpbusd_epi32(p, w, av);
        }
        const __m256i scv = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(sc + 8 * s)));
        isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(p, _mm512_broadcast_i64x4(scv)));
    }
    const __m256i is = _mm256_add_epi32(_mm512_castsi512_si256(isum), _mm512_extracti64x4_epi64(isum, 1));
    /* mins x the 32-element activation sums (int16 pairs of subs 2j, 2j+1) */
    __m128i b0 = _mm_loadu_si128((const __m128i *)ab->bsums), b1 = _mm_loadu_si128((const __m128i *)ab->bsums + 1);
    int32_t bsp[4];
    _mm_storeu_si128((__m128i *)bsp, _mm_hadd_epi16(b0, b1));
    __m256i msum = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        msum = _mm256_add_epi32(msum, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(mm + 16 * j))),
                                                        _mm256_set1_epi32(bsp[j])));
    const __m256 da = _mm256_set1_ps(ab->d);
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)rec)), dmw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)rec + 1));
    acc = _mm256_fmadd_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(is), acc);
    return _mm256_fnmadd_ps(_mm256_mul_ps(dmw, da), _mm256_cvtepi32_ps(msum), acc);
}

INLINE void run_q45(const kern_args *a, int64_t r0, int64_t r1, const int q5) {
    const int64_t nb = a->cols / 256;
    const size_t rec = q5 ? 1440 : 1184, gbytes = (size_t)nb * rec;
    for (int64_t t = 0; t < a->n; t++) {
        const cll_block_q8_K *ab = (const cll_block_q8_K *)(a->act + t * a->act_stride);
        for (int64_t g = r0 / 8; g < r1 / 8; g++) {
            const uint8_t *wg = a->w + (size_t)g * gbytes;
            __m256 acc = _mm256_setzero_ps();
            for (int64_t b = 0; b < nb; b++) {
                prefetch_ahead(wg + b * rec, (int)rec);
                acc = q45_block(wg + b * rec, ab + b, q5, acc);
            }
            _mm256_storeu_ps(a->y + t * a->ldy + g * 8, acc);
        }
    }
}

void cll_kern_run_r8_q4_K_gemv_avx512z(const kern_args *a, int64_t r0, int64_t r1) { run_q45(a, r0, r1, 0); }
void cll_kern_run_r8_q5_K_gemv_avx512z(const kern_args *a, int64_t r0, int64_t r1) { run_q45(a, r0, r1, 1); }

/* ---- IQ4_XS x Q8_K, one row at a time, file layout ------------------------------------- */

/* four 32-element sub-blocks per pair of zmm: lanes of `lo` hold elements 0..15 of sub-blocks
 * 4h..4h+3 (low nibbles of their 16 qs bytes), `hi` elements 16..31; u = level + 128 */
INLINE float dot_iq4_xs_z(const cll_block_iq4_xs *x, const cll_block_q8_K *a, int64_t nb) {
    const __m512i lut = _mm512_add_epi8(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)cll_kvalues_iq4nl)),
                                        _mm512_set1_epi8((char)128));
    const __m512i m4 = _mm512_set1_epi8(15);
    const __m512i e0 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i e1 = _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
    const __m256i shl = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28), shh = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    __m512 acc = _mm512_setzero_ps();
    __m256 accc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        prefetch_ahead((const uint8_t *)(x + b) + 6144 - 4 * (int)sizeof *x, (int)sizeof *x); /* rows are contiguous */
        uint32_t sl;
        memcpy(&sl, x[b].scales_l, 4);
        const __m256i ls = _mm256_sub_epi32(
            _mm256_or_si256(_mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)sl), shl), _mm256_set1_epi32(15)),
                            _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(x[b].scales_h), shh),
                                                               _mm256_set1_epi32(3)), 4)),
            _mm256_set1_epi32(32)); /* ls - 32 of the 8 sub-blocks */
        const __m512i lsz = _mm512_castsi256_si512(ls);
        __m512i isum = _mm512_setzero_si512();
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            const __m512i v = _mm512_loadu_si512(x[b].qs + 64 * h);
            const __m512i ulo = _mm512_shuffle_epi8(lut, _mm512_and_si512(v, m4));
            const __m512i uhi = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
            const __m512i A0 = _mm512_loadu_si512(a[b].qs + 128 * h), A1 = _mm512_loadu_si512(a[b].qs + 128 * h + 64);
            const __m512i alo = _mm512_shuffle_i64x2(A0, A1, 0x88), ahi = _mm512_shuffle_i64x2(A0, A1, 0xDD);
            const __m512i p = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ulo, alo), uhi, ahi);
            isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(p, _mm512_permutexvar_epi32(h ? e1 : e0, lsz)));
        }
        /* the +128 offset: 128 * sum over sub-blocks of (ls - 32) * (sum of its 32 activations) */
        const __m256i bs = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)a[b].bsums), _mm256_set1_epi16(1));
        const float dd = a[b].d * _cvtsh_ss(x[b].d);
        acc = _mm512_fmadd_ps(_mm512_set1_ps(dd), _mm512_cvtepi32_ps(isum), acc);
        accc = _mm256_fmadd_ps(_mm256_set1_ps(128.0f * dd), _mm256_cvtepi32_ps(_mm256_mullo_epi32(ls, bs)), accc);
    }
    return _mm512_reduce_add_ps(acc) - _mm512_reduce_add_ps(_mm512_castps256_ps512(accc));
}

void cll_kern_run_iq4_xs_gemv_avx512z(const kern_args *a, int64_t r0, int64_t r1) {
    const int64_t nb = a->cols / 256;
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = a->w + (size_t)r * a->w_row_bytes;
        if (r + 1 < r1) _mm_prefetch((const char *)(w + a->w_row_bytes), _MM_HINT_T0);
        for (int64_t t = 0; t < a->n; t++)
            a->y[t * a->ldy + r] = dot_iq4_xs_z((const cll_block_iq4_xs *)w,
                                               (const cll_block_q8_K *)(a->act + t * a->act_stride), nb);
    }
}

/* ---- Q2_K x Q8_K, one row at a time, file layout --------------------------------------
 * One zmm load holds the 64 qs bytes; shift 2j gives elements 32j + l (bytes 0..31) and
 * 128 + 32j + l (bytes 32..63), dotted against the matching 32-byte halves of the activations
 * (vshufi64x2), int32 scale per lane by vpermd of the 16 widened scales; the mins term by
 * vpmaddwd of the 16 mins with the bsums. */
INLINE float dot_q2_K_z(const cll_block_q2_K *x, const cll_block_q8_K *a, int64_t nb) {
    const __m512i m3 = _mm512_set1_epi8(3), m15 = _mm512_set1_epi32(15);
    /* lane k of the j-th product: sub-block 8 * (k >> 3) + 2j + ((k >> 2) & 1) */
    const __m512i e = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 8, 8, 8, 8, 9, 9, 9, 9);
    __m512 acc = _mm512_setzero_ps();
    __m256 accm = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        prefetch_ahead((const uint8_t *)(x + b) + 6144 - 4 * (int)sizeof *x, (int)sizeof *x);
        const __m128i sc8 = _mm_loadu_si128((const __m128i *)x[b].scales);
        const __m512i scl = _mm512_and_si512(_mm512_cvtepu8_epi32(sc8), m15);
        const __m512i q = _mm512_loadu_si512(x[b].qs);
        const __m512i A0 = _mm512_loadu_si512(a[b].qs), A1 = _mm512_loadu_si512(a[b].qs + 64);
        const __m512i A2 = _mm512_loadu_si512(a[b].qs + 128), A3 = _mm512_loadu_si512(a[b].qs + 192);
        const __m512i av[4] = {_mm512_shuffle_i64x2(A0, A2, 0x44), _mm512_shuffle_i64x2(A0, A2, 0xEE),
                               _mm512_shuffle_i64x2(A1, A3, 0x44), _mm512_shuffle_i64x2(A1, A3, 0xEE)};
        __m512i isum = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            const __m512i u = _mm512_and_si512(j ? _mm512_srli_epi16(q, 2 * j) : q, m3);
            const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, av[j]);
            const __m512i s = _mm512_permutexvar_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(2 * j)), scl);
            isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(p, s));
        }
        const __m256i mn = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), _mm_set1_epi8(15)));
        const __m256i ms = _mm256_madd_epi16(mn, _mm256_loadu_si256((const __m256i *)a[b].bsums));
        acc = _mm512_fmadd_ps(_mm512_set1_ps(a[b].d * _cvtsh_ss(x[b].d)), _mm512_cvtepi32_ps(isum), acc);
        accm = _mm256_fmadd_ps(_mm256_set1_ps(a[b].d * _cvtsh_ss(x[b].dmin)), _mm256_cvtepi32_ps(ms), accm);
    }
    return _mm512_reduce_add_ps(acc) - _mm512_reduce_add_ps(_mm512_castps256_ps512(accm));
}

void cll_kern_run_q2_K_gemv_avx512z(const kern_args *a, int64_t r0, int64_t r1) {
    const int64_t nb = a->cols / 256;
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = a->w + (size_t)r * a->w_row_bytes;
        if (r + 1 < r1) _mm_prefetch((const char *)(w + a->w_row_bytes), _MM_HINT_T0);
        for (int64_t t = 0; t < a->n; t++)
            a->y[t * a->ldy + r] = dot_q2_K_z((const cll_block_q2_K *)w,
                                             (const cll_block_q8_K *)(a->act + t * a->act_stride), nb);
    }
}

/* ---- Q3_K x Q8_K, one row at a time, file layout --------------------------------------
 * As Q2_K: one zmm of the 64 qs bytes, shift 2j; the high bit of element 128n + 32j + l is
 * bit 4n + j of hmask[l] (hmask in both halves, the upper one shifted by 4: 16-bit shifts
 * below 8 keep bytes apart), u = q2 + 4 * hbit (0..7), the -4 offset as sc * 4 * bsum. */
INLINE float dot_q3_K_z(const cll_block_q3_K *x, const cll_block_q8_K *a, int64_t nb) {
    const __m512i m3 = _mm512_set1_epi8(3), b2 = _mm512_set1_epi8(4);
    const __m512i e = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 8, 8, 8, 8, 9, 9, 9, 9);
    __m512 acc = _mm512_setzero_ps();
    __m256 accc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        prefetch_ahead((const uint8_t *)(x + b) + 6144 - 4 * (int)sizeof *x, (int)sizeof *x);
        /* the 16 six-bit scales minus 32 (kern_lowq.h's dec_q3_K) */
        uint32_t a0, a1, a2;
        memcpy(&a0, x[b].scales, 4);
        memcpy(&a1, x[b].scales + 4, 4);
        memcpy(&a2, x[b].scales + 8, 4);
        const __m128i lo = _mm_srlv_epi32(_mm_setr_epi32((int)a0, (int)a1, (int)a0, (int)a1), _mm_setr_epi32(0, 0, 4, 4));
        const __m128i hi = _mm_srlv_epi32(_mm_set1_epi32((int)a2), _mm_setr_epi32(0, 2, 4, 6));
        const __m128i s8 = _mm_sub_epi8(
            _mm_or_si128(_mm_and_si128(lo, _mm_set1_epi8(15)), _mm_slli_epi32(_mm_and_si128(hi, _mm_set1_epi8(3)), 4)),
            _mm_set1_epi8(32));
        const __m512i scl = _mm512_cvtepi8_epi32(s8);
        const __m512i q = _mm512_loadu_si512(x[b].qs);
        const __m256i hm = _mm256_loadu_si256((const __m256i *)x[b].hmask);
        const __m512i H = _mm512_inserti64x4(_mm512_castsi256_si512(hm), _mm256_srli_epi16(hm, 4), 1);
        const __m512i A0 = _mm512_loadu_si512(a[b].qs), A1 = _mm512_loadu_si512(a[b].qs + 64);
        const __m512i A2 = _mm512_loadu_si512(a[b].qs + 128), A3 = _mm512_loadu_si512(a[b].qs + 192);
        const __m512i av[4] = {_mm512_shuffle_i64x2(A0, A2, 0x44), _mm512_shuffle_i64x2(A0, A2, 0xEE),
                               _mm512_shuffle_i64x2(A1, A3, 0x44), _mm512_shuffle_i64x2(A1, A3, 0xEE)};
        __m512i isum = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            const __m512i hb = j < 2 ? _mm512_slli_epi16(H, 2 - j) : (j == 2 ? H : _mm512_srli_epi16(H, 1)); /* bit j -> bit 2 */
            const __m512i u = _mm512_or_si512(_mm512_and_si512(j ? _mm512_srli_epi16(q, 2 * j) : q, m3), _mm512_and_si512(hb, b2));
            const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, av[j]);
            isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(p, _mm512_permutexvar_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(2 * j)), scl)));
        }
        const __m256i cs = _mm256_madd_epi16(_mm256_cvtepi8_epi16(s8), _mm256_loadu_si256((const __m256i *)a[b].bsums));
        const float dd = a[b].d * _cvtsh_ss(x[b].d);
        acc = _mm512_fmadd_ps(_mm512_set1_ps(dd), _mm512_cvtepi32_ps(isum), acc);
        accc = _mm256_fmadd_ps(_mm256_set1_ps(4.0f * dd), _mm256_cvtepi32_ps(cs), accc);
    }
    return _mm512_reduce_add_ps(acc) - _mm512_reduce_add_ps(_mm512_castps256_ps512(accc));
}

void cll_kern_run_q3_K_gemv_avx512z(const kern_args *a, int64_t r0, int64_t r1) {
    const int64_t nb = a->cols / 256;
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = a->w + (size_t)r * a->w_row_bytes;
        for (int64_t t = 0; t < a->n; t++)
            a->y[t * a->ldy + r] = dot_q3_K_z((const cll_block_q3_K *)w,
                                             (const cll_block_q8_K *)(a->act + t * a->act_stride), nb);
    }
}
