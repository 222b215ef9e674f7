/* cpu/ops_simd: the ISA-specific inner loops behind cpu/ops.c (attention dots and axpys,
 * fp16 stores). Owns nothing. Rule: only ops.c calls these, after checking CPUID. */
#ifndef CLL_CPU_OPS_SIMD_H
#define CLL_CPU_OPS_SIMD_H

#include <stdbool.h>
#include <stdint.h>

float cll_ops_dot_f16_avx2(const float *q, const uint16_t *k, int32_t n);
float cll_ops_dot_f32_avx2(const float *q, const float *k, int32_t n);
void cll_ops_axpy_f16_avx2(float *y, float a, const uint16_t *x, int32_t n);
void cll_ops_axpy_f32_avx2(float *y, float a, const float *x, int32_t n);
void cll_ops_to_f16_avx2(uint16_t *dst, const float *src, int64_t n);
/* ggml-cpu flash-attention emulation (F16 cache), see cll_ops_attn_head_fa16 */
float cll_ops_dot_f16_ggml_avx2(const float *q, const uint16_t *k, int32_t n);
void cll_ops_fa16_step_avx2(uint16_t *acc, const uint16_t *v, bool rescale, float ms, float vs, int32_t n);

#endif
