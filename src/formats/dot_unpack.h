/* formats/dot_unpack: one block of a weight type as small integers plus float scales,
 * the form every integer dot product works on: x[j] = d * sc[j/16] * v[j] - dmin * m[j/16]
 * (256-element types) or x[j] = d * v[j] + m (32-element types).
 * Owns nothing; used by vec_dot_ref.c (and usable by kernel tests as a readable spec).
 * Rule: the unpacked form times its scales equals to_f32 exactly in real arithmetic. */
#ifndef CLL_FORMATS_DOT_UNPACK_H
#define CLL_FORMATS_DOT_UNPACK_H

#include <stdbool.h>

#include "formats/dequant.h"

typedef struct {
    int8_t v[32];
    float d; /* block scale */
    float m; /* additive offset (Q4_1, Q5_1), else 0 */
} cll_unpacked32;

typedef struct {
    int8_t v[256];
    int16_t sc[16]; /* integer scale per 16 elements */
    int16_t m[16];  /* integer min per 16 elements (Q2_K, Q4_K, Q5_K), else 0 */
    float d;        /* super-block scale, constant factors folded in (IQ2: /8, IQ3_XXS: /4) */
    float dmin;     /* super-block min scale, else 0 */
} cll_unpacked256;

bool cll_dot_unpack_supported(uint32_t wtype);
/* block i of a row of wtype (32-element types: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL MXFP4) */
void cll_dot_unpack32(uint32_t wtype, const void *row, int64_t i, cll_unpacked32 *u);
/* super-block i (K-quants, i-quants, TQ1_0, TQ2_0) */
void cll_dot_unpack256(uint32_t wtype, const void *row, int64_t i, cll_unpacked256 *u);
/* the i-quant half of cll_dot_unpack256 (dot_unpack_iq.c); false if wtype is not an i-quant */
bool cll_dot_unpack256_iq(uint32_t wtype, const void *row, int64_t i, cll_unpacked256 *u);

#endif
