/* cuda/matmul/pick: which form serves a product site (cll_cu_pick_form) and whether the model
 * keeps its f16 prefill panels resident (cll_cu_panels_fit): pure functions of their arguments,
 * no device, no environment (the driver reads the knobs and passes them), so the host part of
 * tests/cuda_kernels_test.c checks them on a machine without a GPU.
 * Owns nothing. Rule: the driver dispatches on these answers, not on its own copies of the rules. */
#include "cuda/pick.h"

extern "C" {
#include "formats/formats.h"
#include "kernels/registry.h"
}

static bool is_float(uint32_t t) { return t == CLL_TYPE_F32 || t == CLL_TYPE_F16 || t == CLL_TYPE_BF16; }

cll_cu_form cll_cu_pick_form(const cll_cu_form_query *q) {
    if (q->n_tokens <= 1) return CLL_CU_FORM_GEMV; /* decode (experts: the gemv over mat_ids) */
    if (q->n_mat > 1) {
        if (q->grouped_off || !q->grouped_row || (q->device != CLL_KDEVICE_CPU && q->device < CLL_KDEVICE_CUDA_SM(8, 0)))
            return CLL_CU_FORM_MOE_TOKENS;
        return q->resident || q->wtype == CLL_TYPE_F16 ? CLL_CU_FORM_MOE_GROUPED_F16 : CLL_CU_FORM_MOE_GROUPED;
    }
    if (is_float(q->wtype)) return CLL_CU_FORM_GEMM_DIRECT;
    return q->resident ? CLL_CU_FORM_GEMM_RESIDENT : CLL_CU_FORM_GEMM_PANEL;
}

const char *cll_cu_form_name(cll_cu_form f) {
    switch (f) {
    case CLL_CU_FORM_GEMV: return "gemv";
    case CLL_CU_FORM_GEMM_DIRECT: return "gemm direct";
    case CLL_CU_FORM_GEMM_PANEL: return "gemm streamed f16 panel";
    case CLL_CU_FORM_GEMM_RESIDENT: return "gemm resident f16 panel";
    case CLL_CU_FORM_MOE_TOKENS: return "moe token by token";
    case CLL_CU_FORM_MOE_GROUPED: return "moe grouped (decoding tiles)";
    case CLL_CU_FORM_MOE_GROUPED_F16: return "moe grouped (f16 rows)";
    }
    return "?";
}

bool cll_cu_panels_fit(size_t total, size_t free_after, int mode) {
    if (mode <= 0 || total == 0) return false;
    const size_t gib = (size_t)1 << 30;
    const size_t limit = mode == 1 ? free_after / 4 : free_after > gib ? free_after - gib : 0;
    return total <= limit;
}
