/* cpu/kern_common: what the CPU matmul kernels share: the argument block, the
 * activation layouts written into scratch, the per-row entry points, and the
 * declarations of every kernel file (kern_scalar.c, kern_*_avx2.c, kern_*_avx512.c).
 * Owns nothing. Rule: a kernel computes y[t][r] for every token t < n and every row
 * r in [r0, r1) and writes nothing else; it allocates nothing. */
#ifndef CLL_CPU_KERN_COMMON_H
#define CLL_CPU_KERN_COMMON_H

#include "core/core.h"
#include "formats/blocks.h"
#include "formats/formats.h"
#include "kernels/registry.h"

/* Activation layouts in scratch, one token after the other (act_stride bytes apart). */
enum {
    KACT_F32 = 0,  /* float[cols] */
    KACT_BF16,     /* uint16 bf16 bits[cols], rounded to nearest even (ggml's BF16 path) */
    KACT_F16,      /* uint16 fp16 bits[cols], rounded to nearest even (ggml's F16 path) */
    KACT_Q8_0,     /* cll_block_q8_0[cols/32], ggml's bytes */
    KACT_Q8_1,     /* cll_block_q8_1[cols/32], ggml's bytes */
    KACT_Q8_K,     /* cll_block_q8_K[cols/256], ggml's bytes */
    KACT_Q8_0X,    /* kact_q8_0x[cols/32]: ggml's Q8_0 quants, scale widened to f32 + sums */
};

/* Q8_0 activation block widened for the SIMD kernels: same quants as ggml's Q8_0,
 * d = fp16->f32 of ggml's stored scale (so results match the fp16 scale exactly),
 * s8 = 8 * sum(qs) (the offset correction of unsigned-nibble weights). 40 bytes. */
typedef struct {
    float d;
    int32_t s8;
    int8_t qs[32];
} kact_q8_0x;
_Static_assert(sizeof(kact_q8_0x) == 40, "kact_q8_0x size");

typedef struct {
    const uint8_t *w;   /* weights: plain rows (w_row_bytes apart) or a repacked layout */
    size_t w_row_bytes; /* bytes of one plain row */
    int64_t rows, cols;
    const uint8_t *act; /* quantized activations, token t at act + t*act_stride */
    size_t act_stride;
    int64_t n;          /* tokens */
    float *y;           /* (n, ldy): y[t*ldy + r] */
    int64_t ldy;
    uint32_t wtype;
} kern_args;

typedef void (*kern_run_fn)(const kern_args *a, int64_t r0, int64_t r1);

/* the CPU side of a registry row (cll_kernel_row.impl) */
typedef struct {
    int act;       /* KACT_* the kernel reads */
    int row_align; /* rows a thread's share is a multiple of */
    /* repacked layout: bytes it needs, and the packer; NULL = the map is used as is */
    size_t (*packed_size)(int64_t rows, int64_t cols);
    void (*pack)(const void *src, void *dst, int64_t rows, int64_t cols);
    kern_run_fn run;
} kern_impl;

/* weight layouts (cll_kernel_row.layout) */
enum { KLAYOUT_PLAIN = 0, KLAYOUT_R8 = 1, KLAYOUT_IQ3X = 2 /* IQ3_S as nibbles (kern_lowq_avx2.c) */ };

/* ---- activation quantizers (kern_act.c, kern_act_avx2.c) ---- */
size_t cll_kern_act_stride(int act, int64_t cols);
/* quantize one token row x[cols] into dst in layout act */
void cll_kern_act_quantize(int act, const float *x, void *dst, int64_t cols);
void cll_kern_act_q8_0x_avx2(const float *x, kact_q8_0x *dst, int64_t cols);
void cll_kern_act_q8_1_avx2(const float *x, cll_block_q8_1 *dst, int64_t cols);
void cll_kern_act_f16_avx2(const float *x, uint16_t *dst, int64_t cols);
void cll_kern_act_q8_K_avx2(const float *x, cll_block_q8_K *dst, int64_t cols);

/* ---- scalar rows (kern_scalar.c): every weight type ---- */
void cll_kern_run_scalar(const kern_args *a, int64_t r0, int64_t r1);

/* ---- AVX2 plain-layout rows (kern_plain_avx2.c, kern_kquant_avx2.c) ---- */
void cll_kern_run_plain_avx2(const kern_args *a, int64_t r0, int64_t r1);
bool cll_kern_plain_avx2_has(uint32_t wtype);

/* ---- r8 repacked layouts (kern_r8_pack.c) and their AVX2 / AVX-512 VNNI kernels ---- */
size_t cll_kern_r8_size_q4_0(int64_t rows, int64_t cols);
void cll_kern_r8_pack_q4_0(const void *src, void *dst, int64_t rows, int64_t cols);
size_t cll_kern_r8_size_q4_1(int64_t rows, int64_t cols);
void cll_kern_r8_pack_q4_1(const void *src, void *dst, int64_t rows, int64_t cols);
size_t cll_kern_r8_size_q5_1(int64_t rows, int64_t cols);
void cll_kern_r8_pack_q5_1(const void *src, void *dst, int64_t rows, int64_t cols);
size_t cll_kern_r8_size_q8_0(int64_t rows, int64_t cols);
void cll_kern_r8_pack_q8_0(const void *src, void *dst, int64_t rows, int64_t cols);
size_t cll_kern_r8_size_q4_K(int64_t rows, int64_t cols);
void cll_kern_r8_pack_q4_K(const void *src, void *dst, int64_t rows, int64_t cols);
size_t cll_kern_r8_size_q5_K(int64_t rows, int64_t cols);
void cll_kern_r8_pack_q5_K(const void *src, void *dst, int64_t rows, int64_t cols);
size_t cll_kern_r8_size_q6_K(int64_t rows, int64_t cols);
void cll_kern_r8_pack_q6_K(const void *src, void *dst, int64_t rows, int64_t cols);

void cll_kern_run_r8_q4_0_avx2(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8_q8_0_avx2(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8_q4_K_avx2(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8_q5_K_avx2(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8_q6_K_avx2(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8_q4_0_avx512(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8_q8_0_avx512(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8_q4_K_avx512(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8_q5_K_avx512(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8_q6_K_avx512(const kern_args *a, int64_t r0, int64_t r1);
/* Q4_1 / Q5_1 x Q8_1 (kern_r8_q1_avx2.c, kern_r8_q1_avx512.c): bit-exact with the scalar rows */
void cll_kern_run_r8_q4_1_avx2(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8_q5_1_avx2(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8_q4_1_avx512(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8_q5_1_avx512(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8z16_q4_1_avx512(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8z16_q5_1_avx512(const kern_args *a, int64_t r0, int64_t r1);

/* ---- decode rows of the low-bit 256-element formats (kern_lowq.h) ---- */
void cll_kern_run_lowq_gemv_avx2(const kern_args *a, int64_t r0, int64_t r1);
bool cll_kern_lowq_gemv_avx2_has(uint32_t wtype);
void cll_kern_run_lowq_d8_avx2(const kern_args *a, int64_t r0, int64_t r1);
/* IQ3_S in the x3 layout (grid and signs resolved into nibbles at load): pack, GEMV, d8 GEMM */
size_t cll_kern_iq3x_size(int64_t rows, int64_t cols);
void cll_kern_iq3x_pack(const void *src, void *dst, int64_t rows, int64_t cols);
void cll_kern_run_iq3x_gemv_avx2(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_iq3x_d8_avx2(const kern_args *a, int64_t r0, int64_t r1);
bool cll_kern_lowq_d8_avx2_has(uint32_t wtype);
extern uint8_t cll_kern_iq3s_planes[4][512]; /* kern_lowq_tables.c */
void cll_kern_run_iq3_s_gemv_vbmi(const kern_args *a, int64_t r0, int64_t r1); /* AVX512-VBMI + VNNI */
void cll_kern_run_lowq_gemv_avx512(const kern_args *a, int64_t r0, int64_t r1);
bool cll_kern_lowq_gemv_avx512_has(uint32_t wtype);
void cll_kern_run_lowq_d8_avx512(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_lowq_z16_avx512(const kern_args *a, int64_t r0, int64_t r1); /* 16-row zmm tiles */
void cll_kern_run_iq3x_z16_avx512(const kern_args *a, int64_t r0, int64_t r1); /* the same on IQ3_S x3 */

/* r8 GEMM on the 16-row zmm tile (kern_r8z16_avx512.c) */
void cll_kern_run_r8z16_q4_0_avx512(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8z16_q8_0_avx512(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8z16_q4_K_avx512(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8z16_q5_K_avx512(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8z16_q6_K_avx512(const kern_args *a, int64_t r0, int64_t r1);

/* r8 GEMV with zmm (kern_r8z_avx512.c): two 4-element groups per vector */
void cll_kern_run_r8_q6_K_gemv_avx512z(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8_q4_K_gemv_avx512z(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_r8_q5_K_gemv_avx512z(const kern_args *a, int64_t r0, int64_t r1);
void cll_kern_run_iq4_xs_gemv_avx512z(const kern_args *a, int64_t r0, int64_t r1); /* file layout */
void cll_kern_run_q2_K_gemv_avx512z(const kern_args *a, int64_t r0, int64_t r1);   /* file layout */
void cll_kern_run_q3_K_gemv_avx512z(const kern_args *a, int64_t r0, int64_t r1);   /* file layout */

/* the CPU registry (kern_table.c) */
const cll_kernel_table *cll_cpu_kernel_table_get(void);

/* Token chunk of the GEMM drivers: how many tokens' activations stay hot in L2 while a
 * group of weight rows is swept over them (256 KiB of the 512 KiB Zen3 L2 per core). */
static inline int64_t kern_token_chunk(size_t act_stride) {
    int64_t c = (int64_t)((256u * 1024u) / (act_stride ? act_stride : 1));
    c &= ~(int64_t)3;
    return c < 4 ? 4 : c;
}

#endif
