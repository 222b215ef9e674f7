/* formats/fp16: IEEE half and bfloat16 <-> float32 by exact bit manipulation.
 * Why bit math instead of F16C: the reference must be portable and define the answer
 * for every input (subnormals, NaN payloads); SIMD code elsewhere is tested against it. */
#include <string.h>

#include "formats/formats.h"

static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float cll_fp16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    if (exp == 0x1f) return u2f(sign | 0x7f800000u | (mant << 13)); /* inf / NaN, payload kept */
    if (exp == 0) {
        if (mant == 0) return u2f(sign);
        /* subnormal mant * 2^-24: renormalise into a float32 normal */
        uint32_t e = 113; /* float exponent of 2^-14 */
        while (!(mant & 0x400)) {
            mant <<= 1;
            e--;
        }
        return u2f(sign | (e << 23) | ((mant & 0x3ff) << 13));
    }
    return u2f(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t cll_f32_to_fp16(float f) {
    uint32_t u = f2u(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00; /* NaN: canonical quiet NaN, as ggml's bit math */
    if (a >= 0x477ff000u) return sign | 0x7c00; /* >= 65520 rounds (ties-even) to inf */
    if (a >= 0x38800000u) {                     /* normal half: drop 13 bits, round to even */
        uint32_t r = a - (112u << 23);
        r = (r + 0xfffu + ((r >> 13) & 1)) >> 13;
        return (uint16_t)(sign | r);
    }
    if (a <= 0x33000000u) return sign; /* <= 2^-25: rounds to zero (2^-25 ties to even 0) */
    /* subnormal half: value = m * 2^(e-150) = k * 2^-24  ->  k = m >> (126 - e) */
    uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e; /* 14..24 */
    uint32_t k = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (k & 1))) k++;
    return (uint16_t)(sign | k);
}

float cll_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t cll_f32_to_bf16(float f) {
    uint32_t u = f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 64); /* NaN: force quiet */
    return (uint16_t)((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}
