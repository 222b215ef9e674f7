/* cpu/kern_lowq_avx512: the d8 GEMM of kern_lowq_avx2.c with AVX-512 VNNI (256-bit VL
 * forms): vpdpbusd sums 4 u8 x s8 products per row lane without saturation (so IQ4_XS's
 * u <= 241 fits too), vpmulld applies the int32 scale of each 16-element sub-block. The
 * integer sums equal the AVX2 row's; the float ops after them are the same, in the same order. */
#include "cpu/kern_z16.h"

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

/* IQ3_S with 16-lane gathers (two sub-blocks per vpgatherdd zmm) */
INLINE void dec_iq3_s_512(const uint8_t *blk, kdec256 *o) {
    const cll_block_iq3_s *x = (const cll_block_iq3_s *)blk;
    const __m256i off = _mm256_set1_epi8(16);
    const __m512i sh = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7), one = _mm512_set1_epi32(1);
    for (int ib = 0; ib < 8; ib += 2) {
        __m512i idx = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(x->qs + 8 * ib)));
        const __m512i qh = _mm512_inserti64x4(_mm512_set1_epi32(x->qh[ib]), _mm256_set1_epi32(x->qh[ib + 1]), 1);
        idx = _mm512_or_si512(idx, _mm512_slli_epi32(_mm512_and_si512(_mm512_srlv_epi32(qh, sh), one), 8));
        const __m512i g = _mm512_i32gather_epi32(idx, (const int *)cll_iq3s_grid, 4);
        lq_st(o->u + 32 * ib, lq_signed_off(_mm512_castsi512_si256(g), x->signs + 4 * ib, off));
        lq_st(o->u + 32 * ib + 32, lq_signed_off(_mm512_extracti64x4_epi64(g, 1), x->signs + 4 * ib + 4, off));
    }
    const uint32_t s4 = (uint32_t)x->scales[0] | ((uint32_t)x->scales[1] << 8) | ((uint32_t)x->scales[2] << 16) |
                        ((uint32_t)x->scales[3] << 24);
    for (int ib = 0; ib < 8; ib++) {
        const int16_t sv = (int16_t)(1 + 2 * ((s4 >> (4 * ib)) & 15));
        o->sc[2 * ib] = o->sc[2 * ib + 1] = sv;
        o->mc[2 * ib] = o->mc[2 * ib + 1] = (int16_t)(16 * sv);
    }
    o->d = o->fm = h2f(x->d);
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
                if (T == CLL_TYPE_IQ3_S) dec_iq3_s_512(w + (size_t)b * bsz, &k);
                else lq_decode(T, w, b, bsz, &k);
                s += dot_dec_vnni(&k, y + b);
            }
            a->y[t * a->ldy + r] = s;
        }
    }
}

void cll_kern_run_lowq_gemv_avx512(const kern_args *a, int64_t r0, int64_t r1) {
    switch (a->wtype) {
    case CLL_TYPE_IQ4_XS: run_gemv(a, r0, r1, CLL_TYPE_IQ4_XS); break;
    case CLL_TYPE_IQ3_S: run_gemv(a, r0, r1, CLL_TYPE_IQ3_S); break;
    default: break;
    }
}

bool cll_kern_lowq_gemv_avx512_has(uint32_t wtype) { return wtype == CLL_TYPE_IQ4_XS || wtype == CLL_TYPE_IQ3_S; }

/* s32: the type's scales are per 32 elements (sc[2j] == sc[2j+1]): 8 vpdpbusd per vpmulld */
static void build_d8_iq3_s_vbmi(const uint8_t *w, size_t row_bytes, int64_t b, uint8_t *rec);
static void build_z16_iq3_s_vbmi(const uint8_t *w, size_t row_bytes, int64_t b, uint8_t *rec);

INLINE void tile_d8(const uint8_t *recs, int64_t nb, const uint8_t *act, size_t stride, float *y, int64_t ldy,
                    const int T, const int add, const int s32) {
    __m256 acc[8];
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) acc[t] = add ? _mm256_loadu_ps(y + t * ldy) : _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *rec = recs + b * KD8_REC;
        const __m256i *q = (const __m256i *)rec, *sc = (const __m256i *)(rec + KD8_SC);
        __m256i isum[8];
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) isum[t] = _mm256_setzero_si256();
        const int G = s32 ? 8 : 4; /* 4-element groups per scale */
        for (int j = 0; j < 64 / G; j++) {
            __m256i w[8];
#pragma GCC unroll 8
            for (int c = 0; c < G; c++) w[c] = lq_ld(q + G * j + c);
            const __m256i s = lq_ld(sc + (s32 ? 2 * j : j));
#pragma GCC unroll 8
            for (int t = 0; t < T; t++) {
                const int8_t *aq = ((const cll_block_q8_K *)(act + t * stride) + b)->qs + 4 * G * j;
                __m256i p = _mm256_setzero_si256();
#pragma GCC unroll 8
                for (int c = 0; c < G; c++) p = _mm256_dpbusd_epi32(p, w[c], lq_bcast32(aq + 4 * c));
                isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(p, s));
            }
        }
        const __m256 dw = _mm256_loadu_ps((const float *)(rec + KD8_D)), fw = _mm256_loadu_ps((const float *)(rec + KD8_FM));
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            const cll_block_q8_K *ab = (const cll_block_q8_K *)(act + t * stride) + b;
            const __m256 da = _mm256_set1_ps(ab->d);
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(isum[t]), acc[t]);
            acc[t] = _mm256_fnmadd_ps(_mm256_mul_ps(fw, da), _mm256_cvtepi32_ps(lq_corr8(rec, ab)), acc[t]);
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

/* 8-token tiles (AVX-512VL: 32 ymm registers), then 4, then the rest */
INLINE void sweep_d8(const uint8_t *recs, int64_t nbs, const uint8_t *act, size_t st, float *y, int64_t ldy,
                     int64_t t0, int64_t t1, const int add, const int s32) {
    int64_t t = t0;
    for (; t + 8 <= t1; t += 8) tile_d8(recs, nbs, act + t * st, st, y + t * ldy, ldy, 8, add, s32);
    for (; t + 4 <= t1; t += 4) tile_d8(recs, nbs, act + t * st, st, y + t * ldy, ldy, 4, add, s32);
    const uint8_t *at = act + t * st;
    float *yt = y + t * ldy;
    switch (t1 - t) {
    case 3: tile_d8(recs, nbs, at, st, yt, ldy, 3, add, s32); break;
    case 2: tile_d8(recs, nbs, at, st, yt, ldy, 2, add, s32); break;
    case 1: tile_d8(recs, nbs, at, st, yt, ldy, 1, add, s32); break;
    default: break;
    }
}

static _Thread_local uint8_t g_d8[LQ_SEG * KD8_REC] __attribute__((aligned(64)));

/* token chunk: 1 MiB of activations (VNNI parts have >= 1 MiB of L2 per core). kbench -T q3_K
 * GEMM n=512 2048x8192, 2 threads: 512 KiB 32.6 ms -> 1 MiB 28.5 ms (iq3_s 33.6 -> 29.5) */
static int64_t lq_chunk(size_t act_stride) {
    int64_t c = (int64_t)((1024u * 1024u) / act_stride);
    return c < 4 ? 4 : c & ~(int64_t)3;
}

void cll_kern_run_lowq_d8_avx512(const kern_args *a, int64_t r0, int64_t r1) {
    const int64_t nb = a->cols / 256;
    const size_t bsz = cll_type_traits_get(a->wtype)->type_size, st = a->act_stride;
    const int64_t chunk = lq_chunk(st);
    const uint32_t wt = a->wtype;
    /* IQ3_S decodes by vpermi2b where the CPU has AVX512-VBMI (kbench -T iq3_s -t 1 -c gemm: see the commit) */
    const int vbmi = wt == CLL_TYPE_IQ3_S && __builtin_cpu_supports("avx512vbmi");
    const int s32 = wt == CLL_TYPE_IQ3_S || wt == CLL_TYPE_IQ4_XS || wt == CLL_TYPE_IQ2_XXS || wt == CLL_TYPE_IQ3_XXS;
    for (int64_t t0 = 0; t0 < a->n; t0 += chunk) {
        const int64_t t1 = t0 + chunk < a->n ? t0 + chunk : a->n;
        for (int64_t g = r0 / 8; g < r1 / 8; g++) {
            const uint8_t *wg = a->w + (size_t)g * 8 * a->w_row_bytes;
            for (int64_t b0 = 0; b0 < nb; b0 += LQ_SEG) {
                const int64_t nbs = nb - b0 < LQ_SEG ? nb - b0 : LQ_SEG;
                if (vbmi)
                    for (int64_t b = 0; b < nbs; b++) build_d8_iq3_s_vbmi(wg, a->w_row_bytes, b0 + b, g_d8 + b * KD8_REC);
                else
                    for (int64_t b = 0; b < nbs; b++) lq_build_d8(a->wtype, wg, a->w_row_bytes, bsz, b0 + b, g_d8 + b * KD8_REC, 1);
                const uint8_t *act = a->act + (size_t)b0 * sizeof(cll_block_q8_K);
                float *y = a->y + g * 8;
                if (s32) {
                    if (b0) sweep_d8(g_d8, nbs, act, st, y, a->ldy, t0, t1, 1, 1);
                    else sweep_d8(g_d8, nbs, act, st, y, a->ldy, t0, t1, 0, 1);
                } else {
                    if (b0) sweep_d8(g_d8, nbs, act, st, y, a->ldy, t0, t1, 1, 0);
                    else sweep_d8(g_d8, nbs, act, st, y, a->ldy, t0, t1, 0, 0);
                }
            }
        }
    }
}

/* ---- z16: 16-row zmm tiles (kern_z16.h); an odd 8-row group at the end of a share runs the
 * d8 tiles above ------------------------------------------------------------------------- */

static _Thread_local uint8_t g_z16[KZ_SEG * KZ_REC] __attribute__((aligned(64)));

/* x3: IQ3_S in the x3 layout (rows of nb * X3_BYTES; its nibbles decode without the grid) */
static void run_z16(const kern_args *a, int64_t r0, int64_t r1, const int x3) {
    const int64_t nb = a->cols / 256;
    const size_t bsz = x3 ? X3_BYTES : cll_type_traits_get(a->wtype)->type_size, st = a->act_stride;
    const size_t rb = x3 ? (size_t)nb * X3_BYTES : a->w_row_bytes;
    const int64_t chunk = kz_chunk(st);
    const uint32_t wt = a->wtype;
    const int vbmi = !x3 && wt == CLL_TYPE_IQ3_S && __builtin_cpu_supports("avx512vbmi");
    const int s32 = wt == CLL_TYPE_IQ3_S || wt == CLL_TYPE_IQ4_XS || wt == CLL_TYPE_IQ2_XXS || wt == CLL_TYPE_IQ3_XXS;
    const int fold = lq_off(wt) > 0; /* d == fm: the offset correction joins the integer sum */
    const int64_t r16 = r0 + (r1 - r0) / 16 * 16;
    for (int64_t t0 = 0; t0 < a->n; t0 += chunk) {
        const int64_t t1 = t0 + chunk < a->n ? t0 + chunk : a->n;
        for (int64_t r = r0; r < r16; r += 16) {
            const uint8_t *wg = a->w + (size_t)r * rb;
            for (int64_t b0 = 0; b0 < nb; b0 += KZ_SEG) {
                const int64_t nbs = nb - b0 < KZ_SEG ? nb - b0 : KZ_SEG;
                for (int64_t b = 0; b < nbs; b++) {
                    uint8_t *rec = g_z16 + b * KZ_REC;
                    if (vbmi) build_z16_iq3_s_vbmi(wg, rb, b0 + b, rec);
                    else {
                        kdec256 k[16];
                        if (x3)
                            for (int i = 0; i < 16; i++) dec_iq3_x(wg + (size_t)i * rb + (size_t)(b0 + b) * X3_BYTES, &k[i]);
                        else
                            for (int i = 0; i < 16; i++) lq_decode(wt, wg + (size_t)i * rb, b0 + b, bsz, &k[i]);
                        kz_interleave(k, rec, fold);
                    }
                }
                kz_sweep_any(g_z16, nbs, a->act + (size_t)b0 * sizeof(cll_block_q8_K), st, a->y + r, a->ldy, t0, t1,
                             b0 > 0, s32, fold);
            }
        }
    }
    if (r16 < r1) {
        if (x3) cll_kern_run_iq3x_d8_avx2(a, r16, r1);
        else cll_kern_run_lowq_d8_avx512(a, r16, r1);
    }
}

void cll_kern_run_lowq_z16_avx512(const kern_args *a, int64_t r0, int64_t r1) { run_z16(a, r0, r1, 0); }
void cll_kern_run_iq3x_z16_avx512(const kern_args *a, int64_t r0, int64_t r1) { run_z16(a, r0, r1, 1); }

/* ---- IQ3_S GEMV with AVX512-VBMI: the 64 grid lookups of a super-block as vpermi2b over the
 * byte planes of the grid (4 planes x 4 x 128-entry tables, bit 7 and the qh bit pick by
 * mask), no gathers; then 4 x 64-element vpdpbusd ------------------------------------- */

#define VBMI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi")))

static inline VBMI __attribute__((always_inline)) __m512i iq3s_plane(int j, __m512i idx, __mmask64 m7, __mmask64 m8) {
    const __m512i *t = (const __m512i *)cll_kern_iq3s_planes[j];
    const __m512i r0 = _mm512_permutex2var_epi8(_mm512_load_si512(t), idx, _mm512_load_si512(t + 1));
    const __m512i r1 = _mm512_permutex2var_epi8(_mm512_load_si512(t + 2), idx, _mm512_load_si512(t + 3));
    const __m512i r2 = _mm512_permutex2var_epi8(_mm512_load_si512(t + 4), idx, _mm512_load_si512(t + 5));
    const __m512i r3 = _mm512_permutex2var_epi8(_mm512_load_si512(t + 6), idx, _mm512_load_si512(t + 7));
    return _mm512_mask_mov_epi8(_mm512_mask_mov_epi8(r0, m7, r1), m8, _mm512_mask_mov_epi8(r2, m7, r3));
}

/* the 256 decoded bytes u = v + 16 of an IQ3_S super-block, 64 per zmm in element order */
static inline VBMI __attribute__((always_inline)) void iq3_s_u_vbmi(const cll_block_iq3_s *x, __m512i U[4]) {
    const __m512i idx = _mm512_loadu_si512(x->qs); /* low 8 bits of the 64 indices, in element order */
    const __mmask64 m7 = _mm512_movepi8_mask(idx);
    uint64_t qh, sg[4];
    memcpy(&qh, x->qh, 8); /* bit k: the 9th bit of index k */
    memcpy(sg, x->signs, 32); /* bit e: the sign of element e */
    const __mmask64 m8 = (__mmask64)qh;
    const __m512i R0 = iq3s_plane(0, idx, m7, m8), R1 = iq3s_plane(1, idx, m7, m8), R2 = iq3s_plane(2, idx, m7, m8),
                  R3 = iq3s_plane(3, idx, m7, m8);
    /* element 4k + j = plane j of index k: interleave bytes, then 128-bit lanes */
    const __m512i A = _mm512_unpacklo_epi8(R0, R1), B = _mm512_unpackhi_epi8(R0, R1);
    const __m512i C = _mm512_unpacklo_epi8(R2, R3), D = _mm512_unpackhi_epi8(R2, R3);
    const __m512i E0 = _mm512_unpacklo_epi16(A, C), E1 = _mm512_unpackhi_epi16(A, C);
    const __m512i E2 = _mm512_unpacklo_epi16(B, D), E3 = _mm512_unpackhi_epi16(B, D);
    const __m512i T0 = _mm512_shuffle_i64x2(E0, E1, 0x44), T1 = _mm512_shuffle_i64x2(E2, E3, 0x44);
    const __m512i T2 = _mm512_shuffle_i64x2(E0, E1, 0xEE), T3 = _mm512_shuffle_i64x2(E2, E3, 0xEE);
    const __m512i G[4] = {_mm512_shuffle_i64x2(T0, T1, 0x88), _mm512_shuffle_i64x2(T0, T1, 0xDD),
                          _mm512_shuffle_i64x2(T2, T3, 0x88), _mm512_shuffle_i64x2(T2, T3, 0xDD)};
    const __m512i off = _mm512_set1_epi8(16);
#pragma GCC unroll 4
    for (int L = 0; L < 4; L++) U[L] = _mm512_mask_sub_epi8(_mm512_add_epi8(off, G[L]), (__mmask64)sg[L], off, G[L]);
}

static inline VBMI __attribute__((always_inline)) float dot_iq3_s_vbmi(const cll_block_iq3_s *x, const cll_block_q8_K *a) {
    __m512i U[4];
    iq3_s_u_vbmi(x, U);
    uint32_t s4;
    memcpy(&s4, x->scales, 4);
    __m512i isum = _mm512_setzero_si512();
    int corr = 0;
#pragma GCC unroll 4
    for (int L = 0; L < 4; L++) {
        const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), U[L], _mm512_loadu_si512(a->qs + 64 * L));
        const int s0 = 1 + 2 * (int)((s4 >> (8 * L)) & 15), s1 = 1 + 2 * (int)((s4 >> (8 * L + 4)) & 15);
        isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(p, _mm512_inserti64x4(_mm512_set1_epi32(s0), _mm256_set1_epi32(s1), 1)));
        corr += s0 * (a->bsums[4 * L] + a->bsums[4 * L + 1]) + s1 * (a->bsums[4 * L + 2] + a->bsums[4 * L + 3]);
    }
    return a->d * h2f(x->d) * (float)(_mm512_reduce_add_epi32(isum) - 16 * corr);
}

/* IQ3_S kdec256 through the VBMI lookups (the d8 GEMM's decoder on CPUs with VBMI) */
static VBMI void dec_iq3_s_vbmi(const uint8_t *blk, kdec256 *o) {
    const cll_block_iq3_s *x = (const cll_block_iq3_s *)blk;
    __m512i U[4];
    iq3_s_u_vbmi(x, U);
    for (int L = 0; L < 4; L++) _mm512_storeu_si512(o->u + 64 * L, U[L]);
    uint32_t s4;
    memcpy(&s4, x->scales, 4);
    for (int ib = 0; ib < 8; ib++) {
        const int16_t sv = (int16_t)(1 + 2 * ((s4 >> (4 * ib)) & 15));
        o->sc[2 * ib] = o->sc[2 * ib + 1] = sv;
        o->mc[2 * ib] = o->mc[2 * ib + 1] = (int16_t)(16 * sv);
    }
    o->d = o->fm = h2f(x->d);
}

static VBMI void build_d8_iq3_s_vbmi(const uint8_t *w, size_t row_bytes, int64_t b, uint8_t *rec) {
    kdec256 k[8];
    for (int r = 0; r < 8; r++) dec_iq3_s_vbmi(w + (size_t)r * row_bytes + (size_t)b * sizeof(cll_block_iq3_s), &k[r]);
    lq_interleave_d8(k, rec, 1);
}

static VBMI void build_z16_iq3_s_vbmi(const uint8_t *w, size_t row_bytes, int64_t b, uint8_t *rec) {
    kdec256 k[16];
    for (int r = 0; r < 16; r++) dec_iq3_s_vbmi(w + (size_t)r * row_bytes + (size_t)b * sizeof(cll_block_iq3_s), &k[r]);
    kz_interleave(k, rec, 1);
}

VBMI void cll_kern_run_iq3_s_gemv_vbmi(const kern_args *a, int64_t r0, int64_t r1) {
    const int64_t nb = a->cols / 256;
    for (int64_t r = r0; r < r1; r++) {
        const cll_block_iq3_s *w = (const cll_block_iq3_s *)(a->w + (size_t)r * a->w_row_bytes);
        if (r + 1 < r1) _mm_prefetch((const char *)w + a->w_row_bytes, _MM_HINT_T0);
        for (int64_t t = 0; t < a->n; t++) {
            const cll_block_q8_K *y = (const cll_block_q8_K *)(a->act + t * a->act_stride);
            float s = 0;
            for (int64_t b = 0; b < nb; b++) s += dot_iq3_s_vbmi(w + b, y + b);
            a->y[t * a->ldy + r] = s;
        }
    }
}
