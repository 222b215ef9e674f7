/* cpu/kern_act: activation quantization into the layouts the kernels read (KACT_*).
 * Bytes equal ggml-cpu's from_float for the type's vec_dot_type (formats' quantizers
 * are the definition; the AVX2 versions are tested against them byte for byte). */
#include <string.h>

#include "cpu/kern_common.h"

size_t cll_kern_act_stride(int act, int64_t cols) {
    size_t s;
    switch (act) {
    case KACT_F32: s = (size_t)cols * 4; break;
    case KACT_BF16:
    case KACT_F16: s = (size_t)cols * 2; break;
    case KACT_Q8_0: s = (size_t)(cols / 32) * sizeof(cll_block_q8_0); break;
    case KACT_Q8_1: s = (size_t)(cols / 32) * sizeof(cll_block_q8_1); break;
    case KACT_Q8_K: s = (size_t)(cols / 256) * sizeof(cll_block_q8_K); break;
    case KACT_Q8_0X: s = (size_t)(cols / 32) * sizeof(kact_q8_0x); break;
    default: s = 0;
    }
    return (s + 63) & ~(size_t)63; /* every token starts on a cache line */
}

static void q8_0x_scalar(const float *x, kact_q8_0x *y, int64_t cols) {
    cll_block_q8_0 tmp;
    for (int64_t b = 0; b < cols / 32; b++) {
        cll_quantize_q8_0(x + 32 * b, &tmp, 32);
        y[b].d = cll_fp16_to_f32(tmp.d);
        int s = 0;
        for (int j = 0; j < 32; j++) s += tmp.qs[j];
        y[b].s8 = 8 * s;
        memcpy(y[b].qs, tmp.qs, 32);
    }
}

void cll_kern_act_quantize(int act, const float *x, void *dst, int64_t cols) {
    const bool avx2 = (cll_kernels_cpu_features() & CLL_ISA_AVX2) != 0;
    switch (act) {
    case KACT_F32: memcpy(dst, x, (size_t)cols * 4); break;
    case KACT_BF16: {
        uint16_t *h = dst;
        for (int64_t i = 0; i < cols; i++) h[i] = cll_f32_to_bf16(x[i]);
        break;
    }
    case KACT_F16:
        if (avx2) cll_kern_act_f16_avx2(x, dst, cols);
        else
            for (int64_t i = 0; i < cols; i++) ((uint16_t *)dst)[i] = cll_f32_to_fp16(x[i]);
        break;
    case KACT_Q8_0: cll_quantize_q8_0(x, dst, cols); break;
    case KACT_Q8_1:
        if (avx2) cll_kern_act_q8_1_avx2(x, dst, cols);
        else cll_quantize_q8_1(x, dst, cols);
        break;
    case KACT_Q8_K:
        if (avx2) cll_kern_act_q8_K_avx2(x, dst, cols);
        else cll_quantize_q8_K(x, dst, cols);
        break;
    case KACT_Q8_0X:
        if (avx2) cll_kern_act_q8_0x_avx2(x, dst, cols);
        else q8_0x_scalar(x, dst, cols);
        break;
    default: break;
    }
}
