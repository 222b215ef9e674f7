/* formats: the traits table of every GGML weight type we know (block size, bytes per
 * block, reference dequantizer, reference quantizer where we have one) and the
 * fp16/bf16 scalar conversions. Block structs live in formats/blocks.h (shared with CUDA).
 * Rule: reference code here is the definition of bit-exact; SIMD kernels elsewhere
 * are tested against it. */
#ifndef CLL_FORMATS_H
#define CLL_FORMATS_H

#include "core/core.h"

/* GGML type ids (the numbers stored in GGUF tensor infos). */
typedef enum {
    CLL_TYPE_F32 = 0, CLL_TYPE_F16 = 1, CLL_TYPE_Q4_0 = 2, CLL_TYPE_Q4_1 = 3,
    CLL_TYPE_Q5_0 = 6, CLL_TYPE_Q5_1 = 7, CLL_TYPE_Q8_0 = 8, CLL_TYPE_Q8_1 = 9,
    CLL_TYPE_Q2_K = 10, CLL_TYPE_Q3_K = 11, CLL_TYPE_Q4_K = 12, CLL_TYPE_Q5_K = 13,
    CLL_TYPE_Q6_K = 14, CLL_TYPE_Q8_K = 15, CLL_TYPE_IQ2_XXS = 16, CLL_TYPE_IQ2_XS = 17,
    CLL_TYPE_IQ3_XXS = 18, CLL_TYPE_IQ1_S = 19, CLL_TYPE_IQ4_NL = 20, CLL_TYPE_IQ3_S = 21,
    CLL_TYPE_IQ2_S = 22, CLL_TYPE_IQ4_XS = 23, CLL_TYPE_I8 = 24, CLL_TYPE_I16 = 25,
    CLL_TYPE_I32 = 26, CLL_TYPE_I64 = 27, CLL_TYPE_F64 = 28, CLL_TYPE_IQ1_M = 29,
    CLL_TYPE_BF16 = 30, CLL_TYPE_TQ1_0 = 34, CLL_TYPE_TQ2_0 = 35, CLL_TYPE_MXFP4 = 39,
    CLL_TYPE_COUNT = 40
} cll_type;

typedef void (*cll_to_f32_fn)(const void *src, float *dst, int64_t n);   /* n % blck == 0 */
typedef void (*cll_from_f32_fn)(const float *src, void *dst, int64_t n); /* n % blck == 0 */

typedef struct {
    const char *name;        /* ggml's name, e.g. "q4_K" */
    uint32_t blck;           /* elements per block (0 = unknown id) */
    uint32_t type_size;      /* bytes per block */
    bool weight_ok;          /* we can run inference with tensors of this type */
    cll_to_f32_fn to_f32;    /* reference dequantizer (NULL for Q8_1/Q8_K) */
    cll_from_f32_fn from_f32;/* reference quantizer, or NULL */
    uint32_t vec_dot_type;   /* activation type the integer dot uses (Q8_0/Q8_1/Q8_K/F32...) */
} cll_type_traits;

/* NULL for ids that are not GGML types at all. */
const cll_type_traits *cll_type_traits_get(uint32_t type);
const char *cll_type_name(uint32_t type); /* "type#N" for unknown ids (static buffer per id not needed: returns "unknown") */

/* bytes of a row of n elements; 0 if n is not a multiple of the block size or the id is unknown */
uint64_t cll_row_bytes(uint32_t type, uint64_t n);

/* scalar conversions, bit-exact with ggml (subnormals, NaN, round to nearest even) */
float cll_fp16_to_f32(uint16_t h);
uint16_t cll_f32_to_fp16(float f);
float cll_bf16_to_f32(uint16_t h);
uint16_t cll_f32_to_bf16(float f);

/* activation quantizers, bit-exact with ggml-cpu's from_float (act_Q8_*.bin goldens).
 * Use these for activations: traits[Q8_0].from_f32 is the *weight* quantizer (ggml's
 * quantize_row_q8_0_ref: id = 1/d, roundf), which can differ from the activation path
 * (id = 127/amax, round-half-even) on rare ties. */
void cll_quantize_q8_0(const float *x, void *dst, int64_t n);
void cll_quantize_q8_1(const float *x, void *dst, int64_t n);
void cll_quantize_q8_K(const float *x, void *dst, int64_t n);

/* Reference dot product of one weight row with one activation row, n elements.
 * act_row is quantized to cll_type_traits_get(wtype)->vec_dot_type (Q8_0/Q8_1/Q8_K) for
 * block types; for F32/F16/BF16 weights it is float32 (BF16 rounds it to bf16 first, as
 * ggml does; F16 keeps it f32 and accumulates in f32). Computes what ggml computes: exact
 * integer dots per (sub-)block times the float scales, equal up to float summation order.
 * The CPU SIMD kernels are tested against this. NaN for types without a reference dot. */
float cll_vec_dot_ref(uint32_t wtype, const void *wrow, const void *act_row, int64_t n);

#endif
