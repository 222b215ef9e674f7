/* cpu/ops: scalar reference versions of the non-matmul ops (see ops.h). */
#include "cpu/ops.h"

#include <math.h>
#include <string.h>

#include "cpu/ops_simd.h"
#include "kernels/registry.h"
#include "formats/formats.h"

/* AVX2 + FMA + F16C: the inner loops of attention and fp16 stores (checked per call: the
 * check is one load, and no global state is kept) */
static inline bool have_avx2(void) {
    /* the registry's CPUID probe (clang's __builtin_cpu_supports has no "f16c") */
    return (cll_kernels_cpu_features() & CLL_ISA_AVX2) != 0; /* AVX2 implies FMA+F16C+BMI2 there */
}

void cll_ops_rmsnorm(float *y, const float *x, const float *w, int64_t n, float eps) {
    double sum = 0.0; /* ggml sums squares in double */
    for (int64_t i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / (double)n);
    const float scale = 1.0f / sqrtf(mean + eps);
    if (w)
        for (int64_t i = 0; i < n; i++) y[i] = (x[i] * scale) * w[i];
    else
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * scale;
}

void cll_ops_rope_cs(float *cs, int32_t pos, int32_t n_rot, const cll_rope *r, const float *ff) {
    /* theta_i = pos * base^(-2i/n_rot), iterated in float as ggml does; the scaling in cll_rope_angle */
    const float theta_scale = powf(r->base, -2.0f / (float)n_rot);
    float theta = (float)pos;
    for (int32_t i = 0; i < n_rot / 2; i++) {
        cll_rope_angle(*r, theta, i, ff ? ff[i] : 1.0f, &cs[2 * i], &cs[2 * i + 1]);
        theta *= theta_scale;
    }
}

void cll_ops_rope_apply(float *x, int32_t n_heads, int32_t hd, int32_t n_rot, const float *cs, cll_rope_kind kind) {
    const int32_t half = n_rot / 2;
    for (int32_t h = 0; h < n_heads; h++) {
        float *xh = x + (int64_t)h * hd;
        if (kind == CLL_ROPE_NEOX) {
            for (int32_t i = 0; i < half; i++) {
                const float c = cs[2 * i], s = cs[2 * i + 1];
                const float a = xh[i], b = xh[i + half];
                xh[i] = a * c - b * s;
                xh[i + half] = a * s + b * c;
            }
        } else {
            for (int32_t i = 0; i < half; i++) {
                const float c = cs[2 * i], s = cs[2 * i + 1];
                const float a = xh[2 * i], b = xh[2 * i + 1];
                xh[2 * i] = a * c - b * s;
                xh[2 * i + 1] = a * s + b * c;
            }
        }
    }
}

void cll_ops_rope_apply_fma(float *x, int32_t n_heads, int32_t hd, int32_t n_rot, const float *cs,
                            cll_rope_kind kind) {
    const int32_t half = n_rot / 2;
    /* NEOX pairs (i, i + half), NORM pairs (2i, 2i + 1) */
    const int32_t step = kind == CLL_ROPE_NEOX ? 1 : 2, off = kind == CLL_ROPE_NEOX ? half : 1;
    for (int32_t h = 0; h < n_heads; h++) {
        float *xh = x + (int64_t)h * hd;
        for (int32_t i = 0; i < half; i++) {
            const float c = cs[2 * i], s = cs[2 * i + 1];
            float *p0 = xh + i * step, *p1 = p0 + off;
            const float a = *p0, b = *p1;
            *p0 = fmaf(a, c, -(b * s));
            *p1 = fmaf(a, s, b * c);
        }
    }
}

void cll_ops_silu_mul(float *g, const float *u, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const float x = g[i];
        g[i] = x / (1.0f + expf(-x)) * u[i];
    }
}

void cll_ops_gelu_table_init(uint16_t *tab) {
    const float k_sqrt_2_over_pi = 0.79788456080286535587989211986876f, k_a = 0.044715f;
    for (uint32_t i = 0; i < 65536; i++) {
        const float x = cll_fp16_to_f32((uint16_t)i);
        /* 1 + a*x*x as one fma: ggml-cpu builds its table with FP contraction, and the plain
         * rounding differs in one entry (x = -1.999), which llama.cpp's greedy path can hit */
        const float y = 0.5f * x * (1.0f + tanhf(k_sqrt_2_over_pi * x * fmaf(k_a * x, x, 1.0f)));
        tab[i] = cll_f32_to_fp16(y);
    }
}

void cll_ops_gelu_mul(float *g, const float *u, int64_t n, const uint16_t *tab) {
    for (int64_t i = 0; i < n; i++) {
        const float x = g[i];
        float y;
        if (x <= -10.0f)
            y = 0.0f;
        else if (x >= 10.0f)
            y = x;
        else
            y = cll_fp16_to_f32(tab[cll_f32_to_fp16(x)]);
        g[i] = y * u[i];
    }
}

void cll_ops_to_f16(uint16_t *dst, const float *src, int64_t n) {
    if (have_avx2()) {
        cll_ops_to_f16_avx2(dst, src, n);
        return;
    }
    for (int64_t i = 0; i < n; i++) dst[i] = cll_f32_to_fp16(src[i]);
}

void cll_ops_attn_head(const float *q, const void *k, const void *v, int64_t ks, int64_t vs, bool kv_f16,
                       int32_t lo, int32_t hi, int32_t hd_k, int32_t hd_v, float scale, float *scores, float *out,
                       const cll_kv_rows *rows) {
    const int32_t nk = hi - lo;
    const bool simd = have_avx2();
    float mx = -INFINITY;
    for (int32_t j = 0; j < nk; j++) {
        float s = 0.0f;
        if (kv_f16) {
            const uint16_t *kr = (const uint16_t *)k + cll_kv_row(rows, lo + j) * ks;
            if (simd)
                s = cll_ops_dot_f16_avx2(q, kr, hd_k);
            else
                for (int32_t d = 0; d < hd_k; d++) s += q[d] * cll_fp16_to_f32(kr[d]);
        } else {
            const float *kr = (const float *)k + cll_kv_row(rows, lo + j) * ks;
            if (simd)
                s = cll_ops_dot_f32_avx2(q, kr, hd_k);
            else
                for (int32_t d = 0; d < hd_k; d++) s += q[d] * kr[d];
        }
        s *= scale;
        scores[j] = s;
        if (s > mx) mx = s;
    }
    double sum = 0.0;
    for (int32_t j = 0; j < nk; j++) {
        /* below -69 (e^-69 ~ 2^-100 of the best key's weight) 0: expf's denormals, and products of tiny
         * weights with values below 1, cost a microcode assist per use on Intel cores (cpu/ops_exp512.h),
         * and weights that small change no sum */
        const float e = scores[j] - mx < -69.0f ? 0.0f : expf(scores[j] - mx);
        scores[j] = e;
        sum += (double)e;
    }
    const float inv = (float)(1.0 / sum);
    /* a key whose weight would be under 2^-100 is skipped: w * v of an f16 value (>= 2^-24 unless 0) then
     * stays a normal float even where out is still 0, and out += 0 * v leaves out (never -0, v finite)
     * unchanged */
    const double tiny = 0x1p-100 * sum;
    for (int32_t d = 0; d < hd_v; d++) out[d] = 0.0f;
    for (int32_t j = 0; j < nk; j++) {
        if ((double)scores[j] < tiny) continue;
        const float w = scores[j] * inv;
        if (kv_f16) {
            const uint16_t *vr = (const uint16_t *)v + cll_kv_row(rows, lo + j) * vs;
            if (simd)
                cll_ops_axpy_f16_avx2(out, w, vr, hd_v);
            else
                for (int32_t d = 0; d < hd_v; d++) out[d] += w * cll_fp16_to_f32(vr[d]);
        } else {
            const float *vr = (const float *)v + cll_kv_row(rows, lo + j) * vs;
            if (simd)
                cll_ops_axpy_f32_avx2(out, w, vr, hd_v);
            else
                for (int32_t d = 0; d < hd_v; d++) out[d] += w * vr[d];
        }
    }
}

/* ---- llama.cpp's CPU flash attention over an F16 cache ------------------------------------------
 * This model family is chaotic under 8-bit activation quantization: one flipped rounding anywhere
 * moves the logits by ~0.2, so greedy paths only agree with llama.cpp when every op rounds as
 * ggml-cpu does. Its flash attention (ggml_compute_forward_flash_attn_ext_f16, the default on CPU)
 * for one query row: q rounded to fp16; s = ggml_vec_dot_f16(q, k) * scale; online softmax with
 * the running V sum kept in fp16 (rescaled by expf(Mold - M) when the max moves, then
 * acc = fp16(fma(v, expf(s - M), acc))), S = fma(S, ms, vs) in f32; out = f32(acc) * (1 / S).
 * A single-token batch over a cache of >= 512 cells runs split-KV: each thread takes a contiguous
 * chunk of cells, and the chunk results (M, S, f32(acc)) merge in order. */

static float dot_f16_ggml(const float *q, const uint16_t *k, int32_t n) {
    float a[4][8] = {{0}};
    const int32_t np = n & ~31;
    for (int32_t i = 0; i < np; i += 32)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 8; l++) a[j][l] = fmaf(cll_fp16_to_f32(k[i + 8 * j + l]), q[i + 8 * j + l], a[j][l]);
    float t[4];
    for (int l = 0; l < 8; l++) a[0][l] = (a[0][l] + a[2][l]) + (a[1][l] + a[3][l]);
    for (int l = 0; l < 4; l++) t[l] = a[0][l] + a[0][l + 4];
    double s = (double)((t[0] + t[1]) + (t[2] + t[3]));
    for (int32_t i = np; i < n; i++) s += (double)(q[i] * cll_fp16_to_f32(k[i]));
    return (float)s;
}

static void fa16_step(uint16_t *acc, const uint16_t *v, bool rescale, float ms, float vs, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        float y = cll_fp16_to_f32(acc[i]);
        if (rescale) y = cll_fp16_to_f32(cll_f32_to_fp16(y * ms));
        acc[i] = cll_f32_to_fp16(fmaf(cll_fp16_to_f32(v[i]), vs, y));
    }
}

/* online softmax over keys [b, e): acc (hd_v fp16) = unnormalized sum, *M max, *S sum */
static void fa16_chunk(const float *q, const uint16_t *k, const uint16_t *v, int64_t ks, int64_t vstr, int32_t b,
                       int32_t e, int32_t hd_k, int32_t hd_v, float scale, bool simd, uint16_t *acc, float *M_out,
                       float *S_out, const cll_kv_rows *rows) {
    memset(acc, 0, sizeof(uint16_t) * (size_t)hd_v);
    float M = -INFINITY, S = 0.0f;
    for (int32_t ic = b; ic < e; ic++) {
        const int64_t row = cll_kv_row(rows, ic);
        const uint16_t *kr = k + row * ks, *vr = v + row * vstr;
        const float s = (simd ? cll_ops_dot_f16_ggml_avx2(q, kr, hd_k) : dot_f16_ggml(q, kr, hd_k)) * scale;
        float ms = 1.0f, vs = 1.0f;
        const bool moved = s > M;
        /* below -104 expf is 0 (e^-104 < 2^-150): skip glibc's underflow path (errno) */
        if (moved) {
            ms = M - s < -104.0f ? 0.0f : expf(M - s);
            M = s;
        } else {
            vs = s - M < -104.0f ? 0.0f : expf(s - M);
        }
        if (simd)
            cll_ops_fa16_step_avx2(acc, vr, moved, ms, vs, hd_v);
        else
            fa16_step(acc, vr, moved, ms, vs, hd_v);
        S = fmaf(S, ms, vs);
    }
    *M_out = M;
    *S_out = S;
}

void cll_ops_attn_head_fa16(const float *q, const uint16_t *k, const uint16_t *v, int64_t ks, int64_t vs, int32_t lo,
                            int32_t hi, int32_t hd_k, int32_t hd_v, float scale, uint16_t *acc, float *out,
                            const cll_kv_rows *rows) {
    float M, S;
    fa16_chunk(q, k, v, ks, vs, lo, hi, hd_k, hd_v, scale, have_avx2(), acc, &M, &S, rows);
    const float inv = S == 0.0f ? 0.0f : 1.0f / S;
    for (int32_t d = 0; d < hd_v; d++) out[d] = cll_fp16_to_f32(acc[d]) * inv;
}
