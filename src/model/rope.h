/* model/rope: a layer's rotary embedding as ggml's rope_ext computes it, shared by the CPU
 * forward and the CUDA kernels (one definition of the angle, so the two backends and the
 * reference agree on what a rope parameter means).
 *   pair i of n_rot/2: theta_i = pos * base^(-2i/n_rot), iterated in float as ggml does, then
 *   divided by the file's frequency factor ff[i] (rope_freqs.weight, Llama 3.1) when present;
 *   interpolated angle = freq_scale * theta_i (linear scaling: freq_scale = 1 / factor);
 *   YaRN (ext_factor != 0): the angle mixes the interpolated and the original angle with a ramp
 *   that is 1 below pair corr0 (high frequencies: extrapolated) and 0 above pair corr1 (low
 *   frequencies: interpolated), and cos and sin are scaled by mscale.
 * The float operations are ggml-cpu's as its x86 builds compile them (a * b + c contracted to one fma where
 * the source writes it so): the reference numerics (CLLAMA_NUMERICS=ggml) match its rope bit for bit
 * (tests/ggml_numerics_test.c, tests/golden/rope_yarn.json). Owns nothing. */
#ifndef CLL_MODEL_ROPE_H
#define CLL_MODEL_ROPE_H

#include <math.h>
#include <stdint.h>

typedef struct {
    float base;       /* freq_base of this layer (gemma3's local layers have their own) */
    float freq_scale; /* 1 / rope.scaling.factor for linear and YaRN scaling, else 1 */
    float ext_factor; /* YaRN's ramp weight: 1 for a YaRN file, 0 otherwise */
    float corr0, corr1; /* YaRN: the ramp's first and last pair (ggml_rope_yarn_corr_dims) */
    float mscale;     /* cos and sin are multiplied by this (1 unless YaRN or rope.scaling.attn_factor) */
} cll_rope;

#if defined(__CUDACC__)
#define CLL_ROPE_FN __host__ __device__ static __forceinline__
#else
#define CLL_ROPE_FN static inline
#endif

/* cos and sin of pair i whose unscaled angle is theta (pos * base^(-2i/n_rot)); ff = the pair's
 * frequency factor (1 when the file has none). ggml_rope_cache_init / rope_yarn's arithmetic. */
CLL_ROPE_FN void cll_rope_angle(const cll_rope r, float theta, int32_t i, float ff, float *c, float *s) {
    const float extrap = theta / ff;
    const float interp = r.freq_scale * extrap;
    float t = interp;
    if (r.ext_factor != 0.0f) {
        const float y = ((float)i - r.corr0) / fmaxf(0.001f, r.corr1 - r.corr0);
        const float mix = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * r.ext_factor;
        t = fmaf(interp, 1.0f - mix, extrap * mix); /* ggml-cpu's contraction of i * (1 - m) + e * m */
    }
    *c = cosf(t) * r.mscale;
    *s = sinf(t) * r.mscale;
}

/* llama.cpp's yarn_attn_factor for a YaRN file of this factor (rope.scaling.factor) and rope.scaling.attn_factor:
 * its magnitude 1 + 0.1 ln(factor) cancelled by the same term that rope_yarn multiplies in, as llama.cpp
 * computes it (its x86 builds contract a * b + c into one fma; so do these) */
static inline float cll_rope_yarn_attn_factor(float factor, float attn_factor) {
    const float lf = logf(factor);
    const float m = factor <= 1.0f ? 1.0f : fmaf(0.1f, lf, 1.0f);
    return m * (1.0f / fmaf(0.1f, lf, 1.0f)) * attn_factor;
}

/* cll_rope for a layer: YaRN's ramp from the original training context (n_ctx_orig) and the
 * beta_fast / beta_slow rotation counts (ggml_rope_yarn_corr_dims), and the magnitude scale
 * (llama.cpp's yarn_attn_factor times rope_yarn's own 1 + 0.1 ln(1 / freq_scale) factor; attn_factor =
 * rope.scaling.attn_factor) */
static inline cll_rope cll_rope_make(float base, float freq_scale, float ext_factor, float attn_factor, int32_t n_rot,
                                     int32_t n_ctx_orig, float beta_fast, float beta_slow) {
    cll_rope r = {base, freq_scale, ext_factor, 0.0f, 0.0f, attn_factor};
    if (ext_factor != 0.0f) {
        const float pi = 3.14159265358979323846f;
        const float start = floorf((float)n_rot * logf((float)n_ctx_orig / (beta_fast * 2 * pi)) / (2 * logf(base)));
        const float end = ceilf((float)n_rot * logf((float)n_ctx_orig / (beta_slow * 2 * pi)) / (2 * logf(base)));
        r.corr0 = fmaxf(0.0f, start);
        r.corr1 = fminf((float)(n_rot - 1), end);
        r.mscale = attn_factor * fmaf(0.1f, logf(1.0f / freq_scale), 1.0f);
    }
    return r;
}

#endif
