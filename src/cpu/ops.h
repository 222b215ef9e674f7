/* cpu/ops: the non-matmul math of the CPU forward: RMSNorm, RoPE, gated activations,
 * attention of one query head over a KV range.
 * Owns nothing; every buffer is the caller's (the session's scratch).
 * Rule: numerics follow ggml-cpu where it is cheap to (double-accumulated norm and softmax
 * sums, iterated rope theta, the fp16 GELU table), so logits land near llama.cpp's. */
#ifndef CLL_CPU_OPS_H
#define CLL_CPU_OPS_H

#include "core/core.h"
#include "model/model.h"

/* y = x / sqrt(mean(x^2) + eps) * w  (w may be NULL = 1; y may alias x) */
void cll_ops_rmsnorm(float *y, const float *x, const float *w, int64_t n, float eps);

/* rope cos/sin for one position: cs (n_rot/2, 2) = {cos, sin} per pair; ff = frequency
 * factors (n_rot/2) or NULL */
void cll_ops_rope_cs(float *cs, int32_t pos, int32_t n_rot, const cll_rope *r, const float *ff);
/* rotate the first n_rot dims of each of n_heads heads (x is (n_heads, hd)) */
void cll_ops_rope_apply(float *x, int32_t n_heads, int32_t hd, int32_t n_rot, const float *cs, cll_rope_kind kind);
/* the same, rounded as ggml-cpu's rope (compiled with FP contraction): x0*c - x1*s is
 * fma(x0, c, -(x1*s)) and x0*s + x1*c is fma(x0, s, x1*c) (verified bit-exact against
 * llama.cpp's rope outputs); the reference-numerics mode uses it */
void cll_ops_rope_apply_fma(float *x, int32_t n_heads, int32_t hd, int32_t n_rot, const float *cs,
                            cll_rope_kind kind);

/* g = act(g) * u over n elements */
void cll_ops_silu_mul(float *g, const float *u, int64_t n);
/* gelu_tab (65536) from cll_ops_gelu_table_init: ggml-cpu's fp16 GELU table */
void cll_ops_gelu_mul(float *g, const float *u, int64_t n, const uint16_t *gelu_tab);
void cll_ops_gelu_table_init(uint16_t *tab);

/* Where the key at position pos lies in a cache region: rows of a paged cache come from the
 * sequence's block table (blk, blocks of 1 << shift cells; the region is the layer's whole cache);
 * NULL: row = pos (the region starts at the sequence's first cell). */
typedef struct {
    const int32_t *blk;
    int32_t shift;
} cll_kv_rows;
static inline int64_t cll_kv_row(const cll_kv_rows *r, int32_t pos) {
    return r ? ((int64_t)r->blk[pos >> r->shift] << r->shift) + (pos & ((1 << r->shift) - 1)) : pos;
}

/* One query head against keys/values [lo, hi) of a cache region (rows: cll_kv_row).
 * q (hd_k); k rows of hd_k at stride ks elements, v rows of hd_v at stride vs elements, both
 * F32 (kv_f16 false) or F16 (true); scores (hi - lo) scratch; out (hd_v).
 * softmax(scale * q·k) · v with the max-subtracted exp summed in double. */
void cll_ops_attn_head(const float *q, const void *k, const void *v, int64_t ks, int64_t vs, bool kv_f16,
                       int32_t lo, int32_t hi, int32_t hd_k, int32_t hd_v, float scale, float *scores, float *out,
                       const cll_kv_rows *rows);

/* One query head against an F16 cache with llama.cpp's CPU flash-attention numerics (ops.c
 * says which), as its 1-thread run does it (one pass, no split-KV chunks): q (hd_k) holds
 * fp16 values; keys/values [lo, hi) at strides ks/vs elements; acc scratch (hd_v fp16);
 * out (hd_v). */
void cll_ops_attn_head_fa16(const float *q, const uint16_t *k, const uint16_t *v, int64_t ks, int64_t vs, int32_t lo,
                            int32_t hi, int32_t hd_k, int32_t hd_v, float scale, uint16_t *acc, float *out,
                            const cll_kv_rows *rows);

/* Up to 16 query rows (nl) of one cache region as one AVX-512 tile (ops_attn_avx512.c): row l
 * is q[l] (hd_k) against keys [lo[l], hi[l]) into out[l] (hd_v), softmax(scale * q·k) · v in
 * f32 with an online softmax. Needs AVX-512F and hd_k, hd_v multiples of 16; scr: 64-byte
 * aligned, cll_ops_attn_tile_scratch(hd_k, hd_v) floats. */
void cll_ops_attn_tile16(const float *const *q, float *const *out, const int32_t *lo, const int32_t *hi, int nl,
                         const void *k, const void *v, int64_t ks, int64_t vs, bool kv_f16, int32_t hd_k, int32_t hd_v,
                         float scale, float *scr, const cll_kv_rows *rows);
/* The same with up to 8 rows on AVX2 + FMA (ops_attn_avx2.c); hd_k, hd_v multiples of 8; the
 * same scratch (sized for 16 lanes). */
void cll_ops_attn_tile8(const float *const *q, float *const *out, const int32_t *lo, const int32_t *hi, int nl,
                        const void *k, const void *v, int64_t ks, int64_t vs, bool kv_f16, int32_t hd_k, int32_t hd_v,
                        float scale, float *scr, const cll_kv_rows *rows);
size_t cll_ops_attn_tile_scratch(int32_t hd_k, int32_t hd_v);
/* y[0..15] = the attention tiles' e^x (cpu/ops_exp512.h), for the tests: ~2 ulp of expf on [-87, 88],
 * 0 below, never a denormal */
void cll_ops_exp16_attn_avx512(const float *x, float *y);

/* g = SiLU(g) * u with AVX-512 (ops_act_avx512.c): bit for bit cll_ops_silu_mul (glibc's
 * expf algorithm vectorised); y[0..7] = expf(x[0..7]) the same way (for the tests) */
void cll_ops_silu_mul_avx512(float *g, const float *u, int64_t n);
void cll_ops_expf8_avx512(const float *x, float *y);
/* the same with AVX2 + FMA (ops_act_avx2.c) */
void cll_ops_silu_mul_avx2(float *g, const float *u, int64_t n);
void cll_ops_expf8_avx2(const float *x, float *y);
/* ggml-cpu's swiglu on columns [c0, c1) of one row of width nc (g and u point at column c0):
 * ggml_v_expf's SiLU on the row's first nc - nc % 8 columns, libm expf on the rest, as
 * ggml_vec_swiglu_f32 does on AVX2 (bit-exact against llama.cpp: tests/ggml_numerics_test.c);
 * the reference-numerics mode's SiLU. AVX2 + FMA. */
void cll_ops_silu_mul_ggml_avx2(float *g, const float *u, int64_t c0, int64_t c1, int64_t nc);

/* dst[i] = fp16(src[i]) */
void cll_ops_to_f16(uint16_t *dst, const float *src, int64_t n);

#endif
