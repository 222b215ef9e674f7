/* cuda/matmul/gemv_iq: gemv, get_rows and gemm panels of the i-quants (IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_XXS, IQ3_S, IQ4_XS) against q8_1 activations; grids in global memory (iq_grids.cuh, L1
 * resident: 2-8 KB each), sign patterns computed (ksigns = i | parity << 7), IQ4 levels by
 * byte_perm from 4 words. Launch geometry and budgets: see cuda/matmul/kernels.cuh (4 warps x 1
 * row, grid (rows/4, nb), ~16 KB smem per block; stage: IQ2_XXS 24 super-blocks (1584 B), IQ2_XS
 * 24 (1776 B), IQ2_S 24 (1968 B), IQ3_XXS 16 (1568 B), IQ3_S 16 (1760 B), IQ4_XS 14 (1904 B)).
 * Owns the device codebooks of this translation unit. Rule: codebooks bit-identical with the C
 * tables (cll_cu_iq_tables_check, run by the gate). */
#define CLL_CU_WANT_IQ 1
#include <string.h>

#include <vector>

#include "cuda/matmul/kernels.cuh"

extern "C" {
#include "formats/iq_tables.h"
}

static const cll_cu_fmt_ops k_ops[] = {
    CLL_CU_FMT_OPS(CLL_TYPE_IQ2_XXS, "gemv_iq2_xxs_stage_dp4a"),
    CLL_CU_FMT_OPS(CLL_TYPE_IQ2_XS, "gemv_iq2_xs_stage_dp4a"),
    CLL_CU_FMT_OPS(CLL_TYPE_IQ2_S, "gemv_iq2_s_stage_dp4a"),
    CLL_CU_FMT_OPS(CLL_TYPE_IQ3_XXS, "gemv_iq3_xxs_stage_dp4a"),
    CLL_CU_FMT_OPS(CLL_TYPE_IQ3_S, "gemv_iq3_s_stage_dp4a"),
    CLL_CU_FMT_OPS(CLL_TYPE_IQ4_XS, "gemv_iq4_xs_stage_dp4a"),
};

const cll_cu_fmt_ops *cll_cu_fmt_iq(uint32_t type) {
    for (size_t i = 0; i < sizeof k_ops / sizeof k_ops[0]; i++)
        if (k_ops[i].type == type) return &k_ops[i];
    return NULL;
}

/* the inline tables, evaluated on the device for every index */
__global__ void k_iq_inline_tables(uint8_t *ksigns, int8_t *kv) {
    const int i = threadIdx.x;
    if (i < 128) ksigns[i] = (uint8_t)cu_ksigns((uint32_t)i);
    if (i < 16) kv[i] = (int8_t)cu_kv1(i);
}

/* the table lookups by prmt's sign mode, for every 16-bit pattern p: one-hot activation bytes read each
 * nibble's value back out of the integer sum. out[16p + j]: cu_kv8d's (the split IQ4_XS order) nibble j
 * of p in the word's low half, out[16p + 4 + j] in its high half; out[16p + 8 + j] / [16p + 12 + j]:
 * cu_kv8i's (ggml's IQ4_NL / IQ4_XS order) low / high nibble of byte j of p | p << 16 */
__global__ void k_iq4_kv8d(int8_t *out) {
    const uint32_t p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= 65536) return;
    for (int j = 0; j < 4; j++) {
        out[16 * p + j] = (int8_t)cu_kv8d(p, 1 << 8 * j, 0, 0);
        out[16 * p + 4 + j] = (int8_t)cu_kv8d(p << 16, 0, 1 << 8 * j, 0);
        out[16 * p + 8 + j] = (int8_t)cu_kv8i(p | p << 16, 1 << 8 * j, 0, 0);
        out[16 * p + 12 + j] = (int8_t)cu_kv8i(p | p << 16, 0, 1 << 8 * j, 0);
    }
}

/* every codebook entry read back through the decoders' own access path on the device
 * (cu_g64 / cu_ldg of CU_GRID), not through cudaMemcpyFromSymbol: a broken device load path
 * (the cu_ldg recursion that read garbage) fails here, by name, before any gemv runs */
#define CU_IQ_PATH_WORDS (2 * (256 + 512 + 1024) + 256 + 512)
__global__ void k_iq_grid_paths(uint32_t *out) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x) {
        out[2 * i] = cu_g64(CU_GRID(iq2xxs_grid), (uint32_t)i, 0);
        out[2 * i + 1] = cu_g64(CU_GRID(iq2xxs_grid), (uint32_t)i, 1);
    }
    uint32_t *o = out + 512;
    for (int i = threadIdx.x; i < 512; i += blockDim.x) {
        o[2 * i] = cu_g64(CU_GRID(iq2xs_grid), (uint32_t)i, 0);
        o[2 * i + 1] = cu_g64(CU_GRID(iq2xs_grid), (uint32_t)i, 1);
    }
    o += 1024;
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) {
        o[2 * i] = cu_g64(CU_GRID(iq2s_grid), (uint32_t)i, 0);
        o[2 * i + 1] = cu_g64(CU_GRID(iq2s_grid), (uint32_t)i, 1);
    }
    o += 2048;
    for (int i = threadIdx.x; i < 256; i += blockDim.x) o[i] = cu_ldg(CU_GRID(iq3xxs_grid) + i);
    o += 256;
    for (int i = threadIdx.x; i < 512; i += blockDim.x) o[i] = cu_ldg(CU_GRID(iq3s_grid) + i);
}

template <class T, size_t N> static cudaError_t same_symbol(const T (&sym)[N], const T *host, bool *same) {
    T tmp[N];
    CLL_CU_RET(cudaMemcpyFromSymbol(tmp, sym, sizeof tmp));
    if (memcmp(tmp, host, sizeof tmp)) *same = false;
    return cudaSuccess;
}

cudaError_t cll_cu_iq_tables_check(bool *same) {
    *same = true;
    CLL_CU_RET(same_symbol(cll_cu_iq2xxs_grid, cll_iq2xxs_grid, same));
    CLL_CU_RET(same_symbol(cll_cu_iq2xs_grid, cll_iq2xs_grid, same));
    CLL_CU_RET(same_symbol(cll_cu_iq2s_grid, cll_iq2s_grid, same));
    CLL_CU_RET(same_symbol(cll_cu_iq3xxs_grid, cll_iq3xxs_grid, same));
    CLL_CU_RET(same_symbol(cll_cu_iq3s_grid, cll_iq3s_grid, same));
    uint8_t *d = NULL;
    CLL_CU_RET(cudaMalloc(&d, 144));
    k_iq_inline_tables<<<1, 128>>>(d, (int8_t *)(d + 128));
    uint8_t h[144];
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    cudaFree(d);
    if (e != cudaSuccess) return e;
    if (memcmp(h, cll_ksigns_iq2xs, 128) || memcmp(h + 128, cll_kvalues_iq4nl, 16)) *same = false;
    /* the sign-mode lookups of the IQ4_XS / IQ4_NL dots, every nibble pattern in every place */
    {
        int8_t *dk = NULL;
        CLL_CU_RET(cudaMalloc(&dk, 16 * 65536));
        k_iq4_kv8d<<<256, 256>>>(dk);
        std::vector<int8_t> hk(16 * 65536);
        e = cudaGetLastError();
        if (e == cudaSuccess) e = cudaMemcpy(hk.data(), dk, hk.size(), cudaMemcpyDeviceToHost);
        cudaFree(dk);
        if (e != cudaSuccess) return e;
        for (uint32_t p = 0; p < 65536 && *same; p++) {
            const uint32_t w = p | p << 16;
            for (int j = 0; j < 8; j++)
                if (hk[16 * p + j] != cll_kvalues_iq4nl[(p >> 4 * (j & 3)) & 15]) *same = false;
            for (int j = 0; j < 4; j++)
                if (hk[16 * p + 8 + j] != cll_kvalues_iq4nl[(w >> 8 * j) & 15] ||
                    hk[16 * p + 12 + j] != cll_kvalues_iq4nl[(w >> (8 * j + 4)) & 15])
                    *same = false;
        }
    }
    /* the decoders' load path */
    uint32_t *dp = NULL;
    CLL_CU_RET(cudaMalloc(&dp, CU_IQ_PATH_WORDS * 4));
    k_iq_grid_paths<<<1, 256>>>(dp);
    std::vector<uint32_t> hpv(CU_IQ_PATH_WORDS);
    uint32_t *hp = hpv.data();
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpy(hp, dp, CU_IQ_PATH_WORDS * 4, cudaMemcpyDeviceToHost);
    cudaFree(dp);
    if (e != cudaSuccess) return e;
    const uint8_t *hb = (const uint8_t *)hp;
    if (memcmp(hb, cll_iq2xxs_grid, 256 * 8) || memcmp(hb + 2048, cll_iq2xs_grid, 512 * 8) ||
        memcmp(hb + 2048 + 4096, cll_iq2s_grid, 1024 * 8) || memcmp(hb + 2048 + 4096 + 8192, cll_iq3xxs_grid, 256 * 4) ||
        memcmp(hb + 2048 + 4096 + 8192 + 1024, cll_iq3s_grid, 512 * 4))
        *same = false;
    return cudaSuccess;
}
