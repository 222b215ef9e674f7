/* cpu/kern_table: every CPU kernel row. Order is best-first: dispatch takes the first
 * supported default row, else the first supported row, so an AVX-512 VNNI row precedes
 * its AVX2 twin, an r8 (repacked) row precedes the plain-layout row that serves shapes
 * it refuses (rows % 8 != 0), and the scalar row closes every type. Default = the type's
 * first choice on its ISA tier; the rows after it are the fallbacks.
 * Token counts: a CPU weight keeps one GEMV row (n == 1) and one GEMM row (every n > 1) of one
 * layout, chosen at load with shapes of n_tokens 1 and 0 (not fixed), so no CPU row limits the
 * count; device is CLL_KDEVICE_CPU and the ISA bits gate each row. */
#include "cpu/kern_common.h"
#include "cpu/kern_ggml.h"

static bool plain_avx2_ok(const cll_kernel_row *r, const cll_kernel_shape *s) {
    (void)r;
    return cll_kern_plain_avx2_has(s->wtype);
}

static bool lowq_gemv_avx2_ok(const cll_kernel_row *r, const cll_kernel_shape *s) {
    (void)r;
    return cll_kern_lowq_gemv_avx2_has(s->wtype);
}

static bool lowq_gemv_avx512_ok(const cll_kernel_row *r, const cll_kernel_shape *s) {
    (void)r;
    return cll_kern_lowq_gemv_avx512_has(s->wtype);
}

/* AVX512-VBMI has no ISA bit of its own in the registry: asked of the CPU here */
static bool iq3s_vbmi_ok(const cll_kernel_row *r, const cll_kernel_shape *s) {
    (void)r;
    return s->wtype == CLL_TYPE_IQ3_S && __builtin_cpu_supports("avx512vbmi");
}

/* ---- impls ---- */
#define R8_IMPL(T, ACT, ISA)                                                                                \
    static const kern_impl k_r8_##T##_##ISA = {ACT, 8, cll_kern_r8_size_##T, cll_kern_r8_pack_##T,        \
                                              cll_kern_run_r8_##T##_##ISA};
R8_IMPL(q4_0, KACT_Q8_0X, avx2)
R8_IMPL(q4_1, KACT_Q8_1, avx2)
R8_IMPL(q5_1, KACT_Q8_1, avx2)
R8_IMPL(q8_0, KACT_Q8_0X, avx2)
R8_IMPL(q4_K, KACT_Q8_K, avx2)
R8_IMPL(q5_K, KACT_Q8_K, avx2)
R8_IMPL(q6_K, KACT_Q8_K, avx2)
R8_IMPL(q4_0, KACT_Q8_0X, avx512)
R8_IMPL(q4_1, KACT_Q8_1, avx512)
R8_IMPL(q5_1, KACT_Q8_1, avx512)
R8_IMPL(q8_0, KACT_Q8_0X, avx512)
R8_IMPL(q4_K, KACT_Q8_K, avx512)
R8_IMPL(q5_K, KACT_Q8_K, avx512)
R8_IMPL(q6_K, KACT_Q8_K, avx512)

/* decode rows (kern_lowq.h): plain layout, GEMM in 8-row groups */
static const kern_impl k_lowq_gemv_avx2 = {KACT_Q8_K, 1, NULL, NULL, cll_kern_run_lowq_gemv_avx2};
static const kern_impl k_lowq_d8_avx2 = {KACT_Q8_K, 8, NULL, NULL, cll_kern_run_lowq_d8_avx2};
static const kern_impl k_iq3x_gemv_avx2 = {KACT_Q8_K, 1, cll_kern_iq3x_size, cll_kern_iq3x_pack, cll_kern_run_iq3x_gemv_avx2};
static const kern_impl k_iq3x_d8_avx2 = {KACT_Q8_K, 8, cll_kern_iq3x_size, cll_kern_iq3x_pack, cll_kern_run_iq3x_d8_avx2};
static const kern_impl k_lowq_gemv_avx512 = {KACT_Q8_K, 1, NULL, NULL, cll_kern_run_lowq_gemv_avx512};
static const kern_impl k_iq3s_gemv_vbmi = {KACT_Q8_K, 1, NULL, NULL, cll_kern_run_iq3_s_gemv_vbmi};
static const kern_impl k_lowq_d8_avx512 = {KACT_Q8_K, 8, NULL, NULL, cll_kern_run_lowq_d8_avx512};
static const kern_impl k_lowq_z16_avx512 = {KACT_Q8_K, 8, NULL, NULL, cll_kern_run_lowq_z16_avx512};
static const kern_impl k_iq3x_z16_avx512 = {KACT_Q8_K, 8, cll_kern_iq3x_size, cll_kern_iq3x_pack, cll_kern_run_iq3x_z16_avx512};

#define RZ16_IMPL(T, ACT)                                                                                        \
    static const kern_impl k_rz16_##T = {ACT, 8, cll_kern_r8_size_##T, cll_kern_r8_pack_##T,            \
                                         cll_kern_run_r8z16_##T##_avx512};
RZ16_IMPL(q4_0, KACT_Q8_0X)
RZ16_IMPL(q4_1, KACT_Q8_1)
RZ16_IMPL(q5_1, KACT_Q8_1)
RZ16_IMPL(q8_0, KACT_Q8_0X)
RZ16_IMPL(q4_K, KACT_Q8_K)
RZ16_IMPL(q5_K, KACT_Q8_K)
RZ16_IMPL(q6_K, KACT_Q8_K)

static const kern_impl k_r8z_q6_K_avx512 = {KACT_Q8_K, 8, cll_kern_r8_size_q6_K, cll_kern_r8_pack_q6_K,
                                            cll_kern_run_r8_q6_K_gemv_avx512z};

static const kern_impl k_r8z_q4_K_avx512 = {KACT_Q8_K, 8, cll_kern_r8_size_q4_K, cll_kern_r8_pack_q4_K,
                                            cll_kern_run_r8_q4_K_gemv_avx512z};
static const kern_impl k_r8z_q5_K_avx512 = {KACT_Q8_K, 8, cll_kern_r8_size_q5_K, cll_kern_r8_pack_q5_K,
                                            cll_kern_run_r8_q5_K_gemv_avx512z};
static const kern_impl k_iq4_xs_gemv_z = {KACT_Q8_K, 1, NULL, NULL, cll_kern_run_iq4_xs_gemv_avx512z};
static const kern_impl k_q2_K_gemv_z = {KACT_Q8_K, 1, NULL, NULL, cll_kern_run_q2_K_gemv_avx512z};
static const kern_impl k_q3_K_gemv_z = {KACT_Q8_K, 1, NULL, NULL, cll_kern_run_q3_K_gemv_avx512z};

static const kern_impl k_scalar_f32 = {KACT_F32, 1, NULL, NULL, cll_kern_run_scalar};
static const kern_impl k_scalar_f16 = {KACT_F16, 1, NULL, NULL, cll_kern_run_scalar};
static const kern_impl k_scalar_bf16 = {KACT_BF16, 1, NULL, NULL, cll_kern_run_scalar};
static const kern_impl k_scalar_q8_0 = {KACT_Q8_0, 1, NULL, NULL, cll_kern_run_scalar};
static const kern_impl k_scalar_q8_1 = {KACT_Q8_1, 1, NULL, NULL, cll_kern_run_scalar};
static const kern_impl k_scalar_q8_K = {KACT_Q8_K, 1, NULL, NULL, cll_kern_run_scalar};

static const kern_impl k_plain_f32 = {KACT_F32, 1, NULL, NULL, cll_kern_run_plain_avx2};
static const kern_impl k_plain_f16 = {KACT_F16, 1, NULL, NULL, cll_kern_run_plain_avx2};
static const kern_impl k_plain_q8_0x = {KACT_Q8_0X, 1, NULL, NULL, cll_kern_run_plain_avx2};
static const kern_impl k_plain_q8_1 = {KACT_Q8_1, 1, NULL, NULL, cll_kern_run_plain_avx2};
static const kern_impl k_plain_q8_K = {KACT_Q8_K, 1, NULL, NULL, cll_kern_run_plain_avx2};

#define V512 (CLL_ISA_AVX2 | CLL_ISA_AVX512 | CLL_ISA_VNNI)
#define R8_ROWS(T)                                                                                          \
    {"matmul_" #T "_avx512vnni_r8x4", CLL_KOP_MATMUL, CLL_TYPE_##T##_ID, V512, "layout=r8 tile=8x4 dpbusd",  \
     KLAYOUT_R8, 8, NULL, true, true, &k_r8_##T##_avx512},                                                  \
    {"matmul_" #T "_avx2_r8x4", CLL_KOP_MATMUL, CLL_TYPE_##T##_ID, CLL_ISA_AVX2,                           \
     R8_AVX2_PARAMS_##T, KLAYOUT_R8, 8, NULL, true, true, &k_r8_##T##_avx2}
/* the AVX2 K-quant GEMMs of >= 8 tokens sweep predecoded records (kern_r8_avx2.c) */
#define R8_AVX2_PARAMS_q4_0 "layout=r8 tile=8x4 maddubs"
#define R8_AVX2_PARAMS_q8_0 "layout=r8 tile=8x4 maddubs"
#define R8_AVX2_PARAMS_q4_1 "layout=r8 tile=8x4 maddubs"
#define R8_AVX2_PARAMS_q5_1 "layout=r8 tile=8x4 maddubs"
#define R8_AVX2_PARAMS_q4_K "layout=r8 tile=8x4 maddubs predecode=8 rows/chunk (n>=8)"
#define R8_AVX2_PARAMS_q5_K "layout=r8 tile=8x4 maddubs predecode=8 rows/chunk (n>=8)"
#define R8_AVX2_PARAMS_q6_K "layout=r8 tile=8x4 maddubs predecode=8 rows/chunk (n>=8)"
/* decrow rows serve both ops: the GEMV, and the GEMM of shapes the d8 rows refuse (rows % 8)
 * d8: GEMM of the decode rows; 8 plain rows decoded per token chunk (rows % 8 == 0) */
#define D8_ROW_512(T, ID, DFLT)                                                                              \
    {"matmul_" #T "_avx512vnni_d8x4", CLL_KOP_GEMM, ID, V512, "layout=plain decode=8 rows/chunk tile=8x4 dpbusd", \
     KLAYOUT_PLAIN, 8, NULL, DFLT, DFLT, &k_lowq_d8_avx512}
/* z16: the same with 16 rows per zmm (kern_z16.h); an odd 8-row group runs the d8 tiles */
#define Z16_ROW(T, ID)                                                                                       \
    {"matmul_" #T "_avx512vnni_z16x8", CLL_KOP_GEMM, ID, V512, "layout=plain decode=16 rows/chunk tile=16x8 zmm dpbusd", \
     KLAYOUT_PLAIN, 8, NULL, true, true, &k_lowq_z16_avx512}
#define D8_ROW_AVX2(T, ID, DFLT)                                                                             \
    {"matmul_" #T "_avx2_d8x4", CLL_KOP_GEMM, ID, CLL_ISA_AVX2, "layout=plain decode=8 rows/chunk tile=8x4 maddubs", \
     KLAYOUT_PLAIN, 8, NULL, DFLT, DFLT, &k_lowq_d8_avx2}
#define DEC_GEMV_ROW(T, ID, DFLT)                                                                            \
    {"matmul_" #T "_avx2_decrow", CLL_KOP_MATMUL, ID, CLL_ISA_AVX2, "layout=plain rows=1 simd-decode+maddubs",   \
     KLAYOUT_PLAIN, 1, lowq_gemv_avx2_ok, DFLT, DFLT, &k_lowq_gemv_avx2}
#define DEC_GEMV_ROW_512(T, ID, DFLT)                                                                        \
    {"matmul_" #T "_avx512vnni_decrow", CLL_KOP_MATMUL, ID, V512, "layout=plain rows=1 simd-decode+dpbusd",      \
     KLAYOUT_PLAIN, 1, lowq_gemv_avx512_ok, DFLT, DFLT, &k_lowq_gemv_avx512}
/* DFLT: the row is its type's first choice (no r8 row exists for the type) */
#define PLAIN_ROW(T, ID, IMPL, DFLT)                                                                         \
    {"matmul_" #T "_avx2_row", CLL_KOP_MATMUL, ID, CLL_ISA_AVX2, "layout=plain rows=1 tokens-inner",          \
     KLAYOUT_PLAIN, 1, plain_avx2_ok, DFLT, DFLT, &IMPL}
#define SCALAR_ROW(T, ID, IMPL, DFLT)                                                                        \
    {"matmul_" #T "_scalar", CLL_KOP_MATMUL, ID, 0, "layout=plain reference-dot", KLAYOUT_PLAIN, 1, NULL,     \
     DFLT, DFLT, &IMPL}
/* a scalar row that the type's default rows equal bit for bit (not a default itself) */
#define SCALAR_ROW_EXACT(T, ID, IMPL)                                                                        \
    {"matmul_" #T "_scalar", CLL_KOP_MATMUL, ID, 0, "layout=plain reference-dot", KLAYOUT_PLAIN, 1, NULL,     \
     true, false, &IMPL}

/* the GEMM of an r8 K-quant on the 16-row zmm tile (kern_z16.h): two r8 groups decoded per
 * token chunk; an odd 8-row group runs the r8x4 tile */
#define RZ16_ROW(T)                                                                                          \
    {"matmul_" #T "_avx512vnni_r8z16x8", CLL_KOP_GEMM, CLL_TYPE_##T##_ID, V512,                              \
     "layout=r8 decode=16 rows/chunk tile=16x8 zmm dpbusd", KLAYOUT_R8, 8, NULL, true, true, &k_rz16_##T}

#define CLL_TYPE_q4_0_ID CLL_TYPE_Q4_0
#define CLL_TYPE_q8_0_ID CLL_TYPE_Q8_0
#define CLL_TYPE_q4_1_ID CLL_TYPE_Q4_1
#define CLL_TYPE_q5_1_ID CLL_TYPE_Q5_1
#define CLL_TYPE_q4_K_ID CLL_TYPE_Q4_K
#define CLL_TYPE_q5_K_ID CLL_TYPE_Q5_K
#define CLL_TYPE_q6_K_ID CLL_TYPE_Q6_K

static const cll_kernel_row k_rows[] = {
    RZ16_ROW(q4_0),
    R8_ROWS(q4_0),
    RZ16_ROW(q8_0),
    R8_ROWS(q8_0),
    /* Q4_1 / Q5_1 x Q8_1: the r8 rows equal the scalar rows bit for bit (kern_r8_q1_avx2.c) */
    RZ16_ROW(q4_1),
    R8_ROWS(q4_1),
    RZ16_ROW(q5_1),
    R8_ROWS(q5_1),
    {"matmul_q4_K_avx512vnni_r8x1z", CLL_KOP_GEMV, CLL_TYPE_Q4_K, V512, "layout=r8 tile=8x1 zmm dpbusd", KLAYOUT_R8, 8,
     NULL, true, true, &k_r8z_q4_K_avx512},
    RZ16_ROW(q4_K),
    R8_ROWS(q4_K),
    {"matmul_q5_K_avx512vnni_r8x1z", CLL_KOP_GEMV, CLL_TYPE_Q5_K, V512, "layout=r8 tile=8x1 zmm dpbusd", KLAYOUT_R8, 8,
     NULL, true, true, &k_r8z_q5_K_avx512},
    RZ16_ROW(q5_K),
    R8_ROWS(q5_K),
    {"matmul_q6_K_avx512vnni_r8x1z", CLL_KOP_GEMV, CLL_TYPE_Q6_K, V512, "layout=r8 tile=8x1 zmm dpbusd", KLAYOUT_R8, 8,
     NULL, true, true, &k_r8z_q6_K_avx512},
    RZ16_ROW(q6_K),
    R8_ROWS(q6_K),
    /* "small-n<=K": the one-token row runs batches of 2..K tokens a token at a time beside a GEMM that
     * decodes rows per chunk (cpu/matmul.c small_n_row): that decode costs as much as 4-6 tokens of
     * the row (Xeon box, kbench -t 2 8192x2048, ms: IQ4_XS row 0.31 a token vs z16 1.84 / 1.98 / 2.27
     * at 2 / 4 / 8 tokens; Q2_K 0.35 vs 1.62 / 1.68 / 1.96; Q3_K 0.42 vs 1.80 / 1.84 / 2.14; IQ3_S 1.00
     * vs 2.36 / 2.44 / 2.69); K stays below the crossover, which moves with the machine */
    Z16_ROW(q2_K, CLL_TYPE_Q2_K),
    D8_ROW_512(q2_K, CLL_TYPE_Q2_K, false),
    D8_ROW_AVX2(q2_K, CLL_TYPE_Q2_K, true),
    {"matmul_q2_K_avx512vnni_rowz", CLL_KOP_MATMUL, CLL_TYPE_Q2_K, V512, "layout=plain rows=1 zmm 64 qs bytes/vector dpbusd small-n<=4",
     KLAYOUT_PLAIN, 1, NULL, true, true, &k_q2_K_gemv_z},
    DEC_GEMV_ROW(q2_K, CLL_TYPE_Q2_K, true),
    Z16_ROW(q3_K, CLL_TYPE_Q3_K),
    D8_ROW_512(q3_K, CLL_TYPE_Q3_K, false),
    D8_ROW_AVX2(q3_K, CLL_TYPE_Q3_K, true),
    {"matmul_q3_K_avx512vnni_rowz", CLL_KOP_MATMUL, CLL_TYPE_Q3_K, V512, "layout=plain rows=1 zmm 64 qs bytes/vector dpbusd small-n<=3",
     KLAYOUT_PLAIN, 1, NULL, true, true, &k_q3_K_gemv_z},
    DEC_GEMV_ROW(q3_K, CLL_TYPE_Q3_K, true),
    /* AVX-512: the x3 layout too (below). Its z16 GEMM decodes nibbles instead of looking the grid up
     * (the same records as the VBMI decoder), and its one-token row (AVX2 code) beats the VBMI row:
     * Xeon box, kbench -t 2 8192x2048 n 1: 0.76 vs 1.08 ms. The packed rows are 24% larger */
    {"matmul_iq3_s_avx512vnni_x3z16x8", CLL_KOP_GEMM, CLL_TYPE_IQ3_S, V512,
     "layout=x3 (grid+signs as nibbles) decode=16 rows/chunk tile=16x8 zmm dpbusd", KLAYOUT_IQ3X, 8, NULL, true, true,
     &k_iq3x_z16_avx512},
    Z16_ROW(iq3_s, CLL_TYPE_IQ3_S),
    D8_ROW_512(iq3_s, CLL_TYPE_IQ3_S, false),
    /* AVX2: the x3 layout (IQ3_S grid and signs resolved into nibbles at load; 136 bytes per
     * super-block, no grid gather per group) before the plain rows */
    {"matmul_iq3_s_avx2_x3d8x4", CLL_KOP_GEMM, CLL_TYPE_IQ3_S, CLL_ISA_AVX2,
     "layout=x3 (grid+signs as nibbles) decode=8 rows/chunk tile=8x4 maddubs", KLAYOUT_IQ3X, 8, NULL, true, true,
     &k_iq3x_d8_avx2},
    D8_ROW_AVX2(iq3_s, CLL_TYPE_IQ3_S, true),
    /* not a default since 4c3c40a: the x3 row beats it (the tuner races against the default) */
    {"matmul_iq3_s_avx512vbmi_decrow", CLL_KOP_MATMUL, CLL_TYPE_IQ3_S, V512, "layout=plain rows=1 vpermi2b-grid+dpbusd zmm small-n<=2",
     KLAYOUT_PLAIN, 1, iq3s_vbmi_ok, true, false, &k_iq3s_gemv_vbmi},
    DEC_GEMV_ROW_512(iq3_s, CLL_TYPE_IQ3_S, false),
    {"matmul_iq3_s_avx2_x3row", CLL_KOP_MATMUL, CLL_TYPE_IQ3_S, CLL_ISA_AVX2,
     "layout=x3 (grid+signs as nibbles) rows=1 simd-decode+maddubs small-n<=2", KLAYOUT_IQ3X, 1, NULL, true, true, &k_iq3x_gemv_avx2},
    DEC_GEMV_ROW(iq3_s, CLL_TYPE_IQ3_S, true),
    Z16_ROW(iq2_xxs, CLL_TYPE_IQ2_XXS),
    D8_ROW_512(iq2_xxs, CLL_TYPE_IQ2_XXS, false),
    D8_ROW_AVX2(iq2_xxs, CLL_TYPE_IQ2_XXS, true),
    DEC_GEMV_ROW(iq2_xxs, CLL_TYPE_IQ2_XXS, true),
    Z16_ROW(iq2_xs, CLL_TYPE_IQ2_XS),
    D8_ROW_512(iq2_xs, CLL_TYPE_IQ2_XS, false),
    D8_ROW_AVX2(iq2_xs, CLL_TYPE_IQ2_XS, true),
    DEC_GEMV_ROW(iq2_xs, CLL_TYPE_IQ2_XS, true),
    Z16_ROW(iq2_s, CLL_TYPE_IQ2_S),
    D8_ROW_512(iq2_s, CLL_TYPE_IQ2_S, false),
    D8_ROW_AVX2(iq2_s, CLL_TYPE_IQ2_S, true),
    DEC_GEMV_ROW(iq2_s, CLL_TYPE_IQ2_S, true),
    Z16_ROW(iq3_xxs, CLL_TYPE_IQ3_XXS),
    D8_ROW_512(iq3_xxs, CLL_TYPE_IQ3_XXS, false),
    D8_ROW_AVX2(iq3_xxs, CLL_TYPE_IQ3_XXS, true),
    DEC_GEMV_ROW(iq3_xxs, CLL_TYPE_IQ3_XXS, true),
    Z16_ROW(iq4_xs, CLL_TYPE_IQ4_XS),
    D8_ROW_512(iq4_xs, CLL_TYPE_IQ4_XS, false),
    D8_ROW_AVX2(iq4_xs, CLL_TYPE_IQ4_XS, true),
    {"matmul_iq4_xs_avx512vnni_rowz", CLL_KOP_MATMUL, CLL_TYPE_IQ4_XS, V512, "layout=plain rows=1 zmm 4 subs/vector dpbusd small-n<=4",
     KLAYOUT_PLAIN, 1, NULL, true, true, &k_iq4_xs_gemv_z},
    DEC_GEMV_ROW_512(iq4_xs, CLL_TYPE_IQ4_XS, false),
    DEC_GEMV_ROW(iq4_xs, CLL_TYPE_IQ4_XS, true), /* after the AVX-512 rows: first choice only under an AVX2 cap */
    PLAIN_ROW(f32, CLL_TYPE_F32, k_plain_f32, true),
    PLAIN_ROW(f16, CLL_TYPE_F16, k_plain_f16, true),
    PLAIN_ROW(q4_0, CLL_TYPE_Q4_0, k_plain_q8_0x, false),
    PLAIN_ROW(q4_1, CLL_TYPE_Q4_1, k_plain_q8_1, false),
    PLAIN_ROW(q5_0, CLL_TYPE_Q5_0, k_plain_q8_0x, true),
    PLAIN_ROW(q5_1, CLL_TYPE_Q5_1, k_plain_q8_1, false),
    PLAIN_ROW(q8_0, CLL_TYPE_Q8_0, k_plain_q8_0x, false),
    PLAIN_ROW(iq4_nl, CLL_TYPE_IQ4_NL, k_plain_q8_0x, true),
    PLAIN_ROW(q2_K, CLL_TYPE_Q2_K, k_plain_q8_K, true),
    PLAIN_ROW(q3_K, CLL_TYPE_Q3_K, k_plain_q8_K, true),
    PLAIN_ROW(q4_K, CLL_TYPE_Q4_K, k_plain_q8_K, false),
    PLAIN_ROW(q5_K, CLL_TYPE_Q5_K, k_plain_q8_K, false),
    PLAIN_ROW(q6_K, CLL_TYPE_Q6_K, k_plain_q8_K, false),
    PLAIN_ROW(iq4_xs, CLL_TYPE_IQ4_XS, k_plain_q8_K, true),
    SCALAR_ROW(f32, CLL_TYPE_F32, k_scalar_f32, false),
    SCALAR_ROW(f16, CLL_TYPE_F16, k_scalar_f16, false),
    SCALAR_ROW(bf16, CLL_TYPE_BF16, k_scalar_bf16, true),
    SCALAR_ROW(q4_0, CLL_TYPE_Q4_0, k_scalar_q8_0, false),
    SCALAR_ROW_EXACT(q4_1, CLL_TYPE_Q4_1, k_scalar_q8_1),
    SCALAR_ROW(q5_0, CLL_TYPE_Q5_0, k_scalar_q8_0, false),
    SCALAR_ROW_EXACT(q5_1, CLL_TYPE_Q5_1, k_scalar_q8_1),
    SCALAR_ROW(q8_0, CLL_TYPE_Q8_0, k_scalar_q8_0, false),
    SCALAR_ROW(q2_K, CLL_TYPE_Q2_K, k_scalar_q8_K, false),
    SCALAR_ROW(q3_K, CLL_TYPE_Q3_K, k_scalar_q8_K, false),
    SCALAR_ROW(q4_K, CLL_TYPE_Q4_K, k_scalar_q8_K, false),
    SCALAR_ROW(q5_K, CLL_TYPE_Q5_K, k_scalar_q8_K, false),
    SCALAR_ROW(q6_K, CLL_TYPE_Q6_K, k_scalar_q8_K, false),
    SCALAR_ROW(iq2_xxs, CLL_TYPE_IQ2_XXS, k_scalar_q8_K, true),
    SCALAR_ROW(iq2_xs, CLL_TYPE_IQ2_XS, k_scalar_q8_K, true),
    SCALAR_ROW(iq2_s, CLL_TYPE_IQ2_S, k_scalar_q8_K, true),
    SCALAR_ROW(iq3_xxs, CLL_TYPE_IQ3_XXS, k_scalar_q8_K, true),
    SCALAR_ROW(iq3_s, CLL_TYPE_IQ3_S, k_scalar_q8_K, true),
    SCALAR_ROW(iq4_nl, CLL_TYPE_IQ4_NL, k_scalar_q8_0, false),
    SCALAR_ROW(iq4_xs, CLL_TYPE_IQ4_XS, k_scalar_q8_K, false),
    CLL_KERN_GGML_ROWS, /* reference numerics (kern_ggml.h): chosen only in that mode */
};

static const cll_kernel_table k_table = {"cpu", k_rows, sizeof k_rows / sizeof k_rows[0]};

const cll_kernel_table *cll_cpu_kernel_table_get(void) { return &k_table; }
