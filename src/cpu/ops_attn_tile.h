/* cpu/ops_attn_tile: the scalar ends of a prefill attention tile, shared by the 8-lane (AVX2,
 * ops_attn_avx2.c) and 16-lane (AVX-512, ops_attn_avx512.c) kernels: the lanes' key ranges
 * padded to L lanes (a lane past nl gets the empty range [0, 0)), the tile's key span, q * scale
 * transposed into QT (hd_k x L, lanes past nl zero) and the accumulator OT (hd_v x L) zeroed;
 * at the end, each live lane's row of OT times its normalizer into out. Owns nothing. */
#ifndef CLL_CPU_OPS_ATTN_TILE_H
#define CLL_CPU_OPS_ATTN_TILE_H

#include <stdint.h>
#include <string.h>

static inline void cll_attn_tile_begin(int L, const float *const *q, const int32_t *lo, const int32_t *hi, int nl,
                                       int32_t hd_k, int32_t hd_v, float scale, float *QT, float *OT, int32_t *lo_l,
                                       int32_t *hi_l, int32_t *j0, int32_t *j1) {
    *j0 = INT32_MAX;
    *j1 = 0;
    for (int l = 0; l < L; l++) {
        lo_l[l] = l < nl ? lo[l] : 0;
        hi_l[l] = l < nl ? hi[l] : 0; /* an empty range: the lane sees no key */
        if (l < nl) {
            *j0 = lo[l] < *j0 ? lo[l] : *j0;
            *j1 = hi[l] > *j1 ? hi[l] : *j1;
        }
    }
    for (int32_t d = 0; d < hd_k; d++)
        for (int l = 0; l < L; l++) QT[d * L + l] = l < nl ? q[l][d] * scale : 0.0f;
    memset(OT, 0, (size_t)L * (size_t)hd_v * sizeof *OT);
}

static inline void cll_attn_tile_end(int L, float *const *out, int nl, int32_t hd_v, const float *OT, const float *inv) {
    for (int l = 0; l < nl; l++)
        for (int32_t d = 0; d < hd_v; d++) out[l][d] = OT[d * L + l] * inv[l];
}

#endif
