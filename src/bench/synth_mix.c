/* bench/synth_mix: the per-tensor type llama.cpp's quantizer (default mix, no imatrix,
 * not --pure) gives each tensor of a file type, re-derived from the layouts it produced
 * (shared/anchors/{h200,cpu}/mix-*.txt; tests/synth_test.py compares every one).
 * Rules kept: output head -> q6_K (unless q8_0), attn_v/ffn_down bumps by the
 * "more bits" layer pattern, i-quant and Q3_K family bumps, and the fallback when a row
 * length is not a multiple of the chosen type's block. */
#include <string.h>
#include <strings.h>

#include "bench/bench.h"
#include "formats/formats.h"

typedef struct {
    const char *name;
    int base;      /* ggml type of the bulk of the tensors */
    int file_type; /* llama_ftype number stored in general.file_type */
} ftype_row;

static const ftype_row k_ftypes[] = {
    {"F32", CLL_TYPE_F32, 0},        {"F16", CLL_TYPE_F16, 1},        {"BF16", CLL_TYPE_BF16, 32},
    {"Q4_0", CLL_TYPE_Q4_0, 2},      {"Q4_1", CLL_TYPE_Q4_1, 3},      {"Q8_0", CLL_TYPE_Q8_0, 7},
    {"Q5_0", CLL_TYPE_Q5_0, 8},      {"Q5_1", CLL_TYPE_Q5_1, 9},      {"Q2_K", CLL_TYPE_Q2_K, 10},
    {"Q3_K_S", CLL_TYPE_Q3_K, 11},   {"Q3_K_M", CLL_TYPE_Q3_K, 12},   {"Q3_K_L", CLL_TYPE_Q3_K, 13},
    {"Q4_K_S", CLL_TYPE_Q4_K, 14},   {"Q4_K_M", CLL_TYPE_Q4_K, 15},   {"Q5_K_S", CLL_TYPE_Q5_K, 16},
    {"Q5_K_M", CLL_TYPE_Q5_K, 17},   {"Q6_K", CLL_TYPE_Q6_K, 18},     {"IQ3_XS", CLL_TYPE_IQ3_S, 22},
    {"IQ3_XXS", CLL_TYPE_IQ3_XXS, 23}, {"IQ4_NL", CLL_TYPE_IQ4_NL, 25}, {"IQ3_S", CLL_TYPE_IQ3_S, 26},
    {"IQ3_M", CLL_TYPE_IQ3_S, 27},   {"IQ4_XS", CLL_TYPE_IQ4_XS, 30},
};
#define N_FTYPES (sizeof k_ftypes / sizeof k_ftypes[0])

static const ftype_row *find(const char *ft) {
    for (size_t i = 0; i < N_FTYPES; i++)
        if (!strcasecmp(k_ftypes[i].name, ft)) return &k_ftypes[i];
    return NULL;
}

const char *cll_bench_synth_types(void) {
    return "F32,F16,BF16,Q4_0,Q4_1,Q5_0,Q5_1,Q8_0,Q2_K,Q3_K_S,Q3_K_M,Q3_K_L,Q4_K_S,Q4_K_M,Q5_K_S,Q5_K_M,"
           "Q6_K,IQ3_XXS,IQ3_XS,IQ3_S,IQ3_M,IQ4_NL,IQ4_XS";
}

int cll_bench_mix_default(const char *ft) {
    const ftype_row *r = find(ft);
    return r ? r->base : -1;
}

int cll_bench_mix_file_type(const char *ft) {
    const ftype_row *r = find(ft);
    return r ? r->file_type : -1;
}

/* llama.cpp's layer pattern for the tensors that get more bits in the _M mixes: the first
 * and last eighth of the layers, and every third layer in between. */
static bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

static bool is(const char *ft, const char *x) { return !strcasecmp(ft, x); }

/* a K- or i-quant needs rows that are a multiple of 256; llama.cpp then falls back */
static int fallback(int t, uint64_t ne0) {
    const cll_type_traits *tr = cll_type_traits_get((uint32_t)t);
    if (tr && ne0 % tr->blck == 0) return t;
    switch (t) {
    case CLL_TYPE_Q4_K: t = CLL_TYPE_Q5_0; break;
    case CLL_TYPE_Q5_K: t = CLL_TYPE_Q5_1; break;
    case CLL_TYPE_Q6_K: t = CLL_TYPE_Q8_0; break;
    default: t = CLL_TYPE_IQ4_NL; break; /* Q2_K, Q3_K, IQ* */
    }
    tr = cll_type_traits_get((uint32_t)t);
    return ne0 % tr->blck == 0 ? t : CLL_TYPE_F16;
}

int cll_bench_mix_type(const cll_mix_ctx *c, const char *name, int il, int nl, uint64_t ne0) {
    const ftype_row *r = find(c->ftype);
    if (!r) return -1;
    const char *ft = c->ftype;
    int t = r->base;
    /* float file types are not re-typed per tensor */
    if (t == CLL_TYPE_F32 || t == CLL_TYPE_F16 || t == CLL_TYPE_BF16) return t;
    bool output = !strcmp(name, "output.weight") || (!c->has_output && !strcmp(name, "token_embd.weight"));
    if (output) {
        if (ne0 % 256) return CLL_TYPE_Q8_0;
        return t == CLL_TYPE_Q8_0 ? t : CLL_TYPE_Q6_K;
    }
    if (!strcmp(name, "token_embd.weight")) {
        if (is(ft, "IQ3_XXS")) t = CLL_TYPE_IQ3_S;
    } else if (strstr(name, "attn_v.weight")) {
        if ((is(ft, "IQ3_XS") || is(ft, "IQ3_S")) && c->n_gqa >= 4) t = CLL_TYPE_Q4_K;
        else if (is(ft, "IQ3_XXS")) t = c->n_gqa >= 4 ? CLL_TYPE_Q4_K : CLL_TYPE_IQ3_S;
        else if (is(ft, "Q2_K")) t = c->n_gqa >= 4 ? CLL_TYPE_Q4_K : CLL_TYPE_Q3_K;
        else if (is(ft, "IQ3_M")) t = CLL_TYPE_Q4_K;
        else if (is(ft, "Q3_K_M")) t = il < 2 ? CLL_TYPE_Q5_K : CLL_TYPE_Q4_K;
        else if (is(ft, "Q3_K_L")) t = CLL_TYPE_Q5_K;
        else if ((is(ft, "IQ4_NL") || is(ft, "IQ4_XS")) && c->n_gqa >= 4) t = CLL_TYPE_Q5_K;
        else if ((is(ft, "Q4_K_M") || is(ft, "Q5_K_M")) && more_bits(il, nl)) t = CLL_TYPE_Q6_K;
        else if (is(ft, "Q4_K_S") && il < 4) t = CLL_TYPE_Q5_K;
        if (c->n_expert == 8) t = CLL_TYPE_Q8_0;
    } else if (strstr(name, "attn_k.weight")) {
        if (c->n_expert == 8) t = CLL_TYPE_Q8_0;
        else if (is(ft, "IQ3_XS")) t = CLL_TYPE_IQ3_XXS;
    } else if (strstr(name, "attn_q.weight")) {
        if (is(ft, "IQ3_XS")) t = CLL_TYPE_IQ3_XXS;
    } else if (strstr(name, "ffn_down")) {
        if (is(ft, "Q2_K")) t = CLL_TYPE_Q3_K;
        else if (is(ft, "IQ3_XXS")) t = il < nl / 8 ? CLL_TYPE_Q4_K : CLL_TYPE_Q3_K;
        else if (is(ft, "Q3_K_M")) t = il < nl / 16 ? CLL_TYPE_Q5_K : CLL_TYPE_Q4_K;
        else if (is(ft, "Q3_K_L")) t = CLL_TYPE_Q5_K;
        else if (is(ft, "IQ3_M") && (il < nl / 8 || (c->n_expert == 8 && more_bits(il, nl)))) t = CLL_TYPE_Q4_K;
        else if (is(ft, "Q4_K_M") && more_bits(il, nl)) t = CLL_TYPE_Q6_K;
        else if (il < nl / 8 && (is(ft, "IQ4_NL") || is(ft, "IQ4_XS"))) t = CLL_TYPE_Q5_K;
        else if (is(ft, "Q5_K_M") && more_bits(il, nl)) t = CLL_TYPE_Q6_K;
        else if (is(ft, "Q4_K_S") && il < nl / 8) t = CLL_TYPE_Q5_K;
    } else if (strstr(name, "attn_output.weight")) {
        if (c->n_expert == 8) {
            if (is(ft, "Q2_K") || is(ft, "IQ3_XXS") || is(ft, "Q3_K_S") || is(ft, "Q3_K_M") || is(ft, "IQ4_NL") ||
                is(ft, "Q4_K_S") || is(ft, "Q4_K_M") || is(ft, "IQ3_S") || is(ft, "IQ3_M") || is(ft, "IQ4_XS"))
                t = CLL_TYPE_Q5_K;
        } else {
            if (is(ft, "Q2_K")) t = CLL_TYPE_Q3_K;
            else if (is(ft, "IQ3_M") || is(ft, "Q3_K_M")) t = CLL_TYPE_Q4_K;
            else if (is(ft, "Q3_K_L")) t = CLL_TYPE_Q5_K;
        }
    } else if (strstr(name, "ffn_gate") || strstr(name, "ffn_up")) {
        if (is(ft, "IQ3_XS") && il >= nl / 8 && il < 7 * nl / 8) t = CLL_TYPE_IQ3_XXS;
    }
    return fallback(t, ne0);
}
