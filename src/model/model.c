/* model: recipe table, hparams from metadata, tensor binding with shape/type checks. */
#include "model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/formats.h"

/* One row per supported general.architecture. mixtral-style MoE is "llama" with
 * llama.expert_count; qwen3moe is qwen3 with experts. */
static const cll_recipe k_recipes[] = {
    {.name = "llama", .rope = CLL_ROPE_NORM, .act = CLL_ACT_SILU, .moe_allowed = true},
    {.name = "qwen2", .rope = CLL_ROPE_NEOX, .act = CLL_ACT_SILU, .qkv_bias = true},
    {.name = "qwen3", .rope = CLL_ROPE_NEOX, .act = CLL_ACT_SILU, .qk_norm = true},
    {.name = "qwen3moe", .rope = CLL_ROPE_NEOX, .act = CLL_ACT_SILU, .qk_norm = true, .moe_allowed = true},
    {.name = "gemma3",
     .rope = CLL_ROPE_NEOX,
     .act = CLL_ACT_GELU_TANH,
     .qk_norm = true,
     .post_norms = true,
     .embd_scale = true,
     .q_prescale = true,
     .sliding_window = true,
     .chat_turn_marker = "<start_of_turn>"},
};
#define N_RECIPES (sizeof k_recipes / sizeof k_recipes[0])

const cll_recipe *cll_model_recipe(const char *arch) {
    for (size_t i = 0; i < N_RECIPES; i++)
        if (!strcmp(k_recipes[i].name, arch)) return &k_recipes[i];
    return NULL;
}

const char *cll_model_supported_archs(void) { return "llama (incl. mistral, mixtral), qwen2, qwen3, qwen3moe, gemma3"; }

/* ---- metadata helpers: "<arch>.<key>" with a default ---------------------------------- */
typedef struct {
    const cll_gguf *g;
    const char *arch;
} meta;

static const char *mkey(const meta *m, const char *k, char *buf, size_t cap) {
    snprintf(buf, cap, "%s.%s", m->arch, k);
    return buf;
}
static int32_t meta_i32(const meta *m, const char *k, int32_t dflt) {
    char key[160];
    uint32_t v;
    if (cll_gguf_get_u32(m->g, mkey(m, k, key, sizeof key), &v) && v <= INT32_MAX) return (int32_t)v;
    /* some files store per-layer arrays (e.g. head_count_kv); take the first entry */
    const cll_gguf_kv *kv;
    if (cll_gguf_get_arr(m->g, key, &kv) && kv->arr_n > 0) {
        int64_t x = cll_gguf_arr_int(kv, 0);
        if (x >= 0 && x <= INT32_MAX) return (int32_t)x;
    }
    return dflt;
}
static float meta_f32(const meta *m, const char *k, float dflt) {
    char key[160];
    float v;
    return cll_gguf_get_f32(m->g, mkey(m, k, key, sizeof key), &v) ? v : dflt;
}

/* ---- tensor binding --------------------------------------------------------------------- */
static cll_status bind(const cll_gguf *g, const char *name, bool required, int nd, int64_t ne0, int64_t ne1,
                       int64_t ne2, bool matrix, const cll_gguf_tensor **out) {
    *out = NULL;
    const cll_gguf_tensor *t = cll_gguf_find_tensor(g, name);
    if (!t) return required ? cll_err(CLL_ERR_FORMAT, "tensor %s: missing", name) : CLL_OK;
    const int64_t want[3] = {ne0, ne1, ne2};
    for (int i = 0; i < 3; i++) {
        int64_t have = (int64_t)t->ne[i];
        int64_t w = i < nd ? want[i] : 1;
        if (have != w)
            return cll_err(CLL_ERR_FORMAT,
                           "tensor %s: shape [%llu, %llu, %llu] where [%lld, %lld, %lld] was expected", name,
                           (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
                           (long long)ne0, (long long)(nd > 1 ? ne1 : 1), (long long)(nd > 2 ? ne2 : 1));
    }
    const cll_type_traits *tr = cll_type_traits_get(t->type);
    if (!tr || !tr->to_f32 || (matrix && !tr->weight_ok) || tr->blck == 0 || t->ne[0] % tr->blck)
        return cll_err(CLL_ERR_UNSUPPORTED, "tensor %s: type %s is not supported for inference", name,
                       cll_type_name(t->type));
    *out = t;
    return CLL_OK;
}

#define BIND(dst, req, nd, a, b, c, mat, fmt, ...)                                  \
    do {                                                                            \
        char nm_[96];                                                               \
        snprintf(nm_, sizeof nm_, fmt, __VA_ARGS__);                                \
        st = bind(g, nm_, (req), (nd), (a), (b), (c), (mat), &(dst));               \
        if (st != CLL_OK) goto fail;                                                \
    } while (0)

/* sliding-window layers: a per-layer bool array, or a period (local when il % p < p-1) */
static bool layer_is_swa(const meta *mt, int32_t il, int32_t n_swa) {
    if (n_swa <= 0) return false;
    char key[160];
    const cll_gguf_kv *kv;
    if (cll_gguf_get_arr(mt->g, mkey(mt, "attention.sliding_window_pattern", key, sizeof key), &kv)) {
        if ((uint64_t)il < kv->arr_n) return cll_gguf_arr_int(kv, (uint64_t)il) != 0;
        return false;
    }
    int32_t p = meta_i32(mt, "attention.sliding_window_pattern", 6);
    if (p <= 1) return p == 1; /* pattern 1: every layer local */
    return il % p < p - 1;
}

/* rope.scaling.*: the type ("linear" when only a factor is given, as llama.cpp reads it), the factor,
 * YaRN's original context and llama.cpp's magnitude factor (its cparams.yarn_attn_factor: the YaRN
 * term 1 + 0.1 ln(factor) that rope_yarn multiplies in is cancelled there and applied once) */
static cll_status read_rope_scaling(cll_model *m, const meta *mt) {
    cll_hparams *hp = &m->hp;
    char key[160], type[32] = "linear";
    cll_gguf_get_cstr(m->g, mkey(mt, "rope.scaling.type", key, sizeof key), type, sizeof type);
    float factor = meta_f32(mt, "rope.scaling.factor", meta_f32(mt, "rope.scale_linear", 0.0f));
    if (!isfinite(factor) || factor < 0.0f)
        return cll_err(CLL_ERR_FORMAT, "%s: rope.scaling.factor %g is not a positive number", m->arch, (double)factor);
    hp->rope_freq_scale = factor == 0.0f ? 1.0f : 1.0f / factor;
    hp->rope_ext_factor = 0.0f;
    hp->rope_attn_factor = meta_f32(mt, "rope.scaling.attn_factor", 1.0f);
    hp->n_ctx_orig = meta_i32(mt, "rope.scaling.original_context_length", hp->n_ctx_train);
    if (!strcmp(type, "none")) {
        hp->rope_freq_scale = 1.0f;
    } else if (!strcmp(type, "yarn")) {
        if (hp->n_ctx_orig <= 0)
            return cll_err(CLL_ERR_FORMAT, "%s: YaRN rope scaling needs rope.scaling.original_context_length > 0",
                           m->arch);
        hp->rope_ext_factor = 1.0f;
        hp->rope_attn_factor = cll_rope_yarn_attn_factor(1.0f / hp->rope_freq_scale, hp->rope_attn_factor);
    } else if (strcmp(type, "linear") != 0) {
        return cll_err(CLL_ERR_UNSUPPORTED, "%s: rope scaling '%s' is not supported (supported: none, linear, yarn)",
                       m->arch, type);
    }
    if (!isfinite(hp->rope_attn_factor) || hp->rope_attn_factor <= 0.0f)
        return cll_err(CLL_ERR_FORMAT, "%s: rope.scaling.attn_factor %g is not a positive number", m->arch,
                       (double)hp->rope_attn_factor);
    return CLL_OK;
}

static cll_status read_hparams(cll_model *m, const meta *mt) {
    cll_hparams *hp = &m->hp;
    const cll_gguf *g = m->g;
    const cll_gguf_tensor *te = cll_gguf_find_tensor(g, "token_embd.weight");
    if (!te) return cll_err(CLL_ERR_FORMAT, "tensor token_embd.weight: missing");
    hp->n_embd = meta_i32(mt, "embedding_length", (int32_t)te->ne[0]);
    hp->n_vocab = (int32_t)te->ne[1];
    hp->n_layer = meta_i32(mt, "block_count", 0);
    hp->n_ctx_train = meta_i32(mt, "context_length", 2048);
    hp->n_head = meta_i32(mt, "attention.head_count", 0);
    if (hp->n_embd <= 0 || hp->n_layer <= 0 || hp->n_head <= 0 || hp->n_layer > 4096 || hp->n_head > 4096)
        return cll_err(CLL_ERR_FORMAT, "%s: bad or missing hparams (embedding_length %d, block_count %d, head_count %d)",
                       m->arch, hp->n_embd, hp->n_layer, hp->n_head);
    hp->n_head_kv = meta_i32(mt, "attention.head_count_kv", hp->n_head);
    if (hp->n_head_kv <= 0 || hp->n_head % hp->n_head_kv)
        return cll_err(CLL_ERR_FORMAT, "%s: head_count %d is not a multiple of head_count_kv %d", m->arch,
                       hp->n_head, hp->n_head_kv);
    hp->head_dim_k = meta_i32(mt, "attention.key_length", hp->n_embd / hp->n_head);
    hp->head_dim_v = meta_i32(mt, "attention.value_length", hp->head_dim_k);
    hp->n_rot = meta_i32(mt, "rope.dimension_count", hp->head_dim_k);
    if (hp->head_dim_k <= 0 || hp->head_dim_v <= 0 || hp->n_rot <= 0 || hp->n_rot > hp->head_dim_k || hp->n_rot % 2)
        return cll_err(CLL_ERR_FORMAT, "%s: bad head dims (key_length %d, value_length %d, rope dims %d)", m->arch,
                       hp->head_dim_k, hp->head_dim_v, hp->n_rot);
    hp->n_ff = meta_i32(mt, "feed_forward_length", 0);
    hp->n_expert = m->recipe.moe_allowed ? meta_i32(mt, "expert_count", 0) : 0;
    hp->n_expert_used = meta_i32(mt, "expert_used_count", 0);
    hp->n_ff_exp = meta_i32(mt, "expert_feed_forward_length", hp->n_ff);
    hp->moe_norm_topk = true; /* mixtral and qwen3moe both renormalize the top-k weights */
    if (hp->n_expert > 0 &&
        (hp->n_expert_used <= 0 || hp->n_expert_used > hp->n_expert || hp->n_expert > 1024 || hp->n_ff_exp <= 0))
        return cll_err(CLL_ERR_FORMAT, "%s: bad MoE hparams (expert_count %d, expert_used_count %d, ffn %d)", m->arch,
                       hp->n_expert, hp->n_expert_used, hp->n_ff_exp);
    if (hp->n_expert == 0 && hp->n_ff <= 0)
        return cll_err(CLL_ERR_FORMAT, "%s: feed_forward_length missing", m->arch);
    hp->eps = meta_f32(mt, "attention.layer_norm_rms_epsilon", 1e-5f);
    hp->rope_base = meta_f32(mt, "rope.freq_base", 10000.0f);
    hp->rope_base_swa = meta_f32(mt, "rope.freq_base_swa", 10000.0f);
    const cll_status st = read_rope_scaling(m, mt);
    if (st != CLL_OK) return st;
    hp->n_swa = m->recipe.sliding_window ? meta_i32(mt, "attention.sliding_window", 0) : 0;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim_k);
    hp->logit_softcap = meta_f32(mt, "final_logit_softcapping", 0.0f);
    hp->n_logits = hp->n_vocab;
    hp->expert0 = 0;
    hp->n_expert_here = hp->n_expert;
    return CLL_OK;
}

cll_status cll_model_load(const cll_gguf *g, cll_model **out) {
    *out = NULL;
    char arch[32] = "";
    if (!cll_gguf_get_cstr(g, "general.architecture", arch, sizeof arch))
        return cll_err(CLL_ERR_FORMAT, "metadata general.architecture: missing");
    const cll_recipe *rc = cll_model_recipe(arch);
    if (!rc)
        return cll_err(CLL_ERR_UNSUPPORTED, "architecture '%s' is not supported (supported: %s)", arch,
                       cll_model_supported_archs());
    cll_model *m = calloc(1, sizeof *m);
    if (!m) return cll_err(CLL_ERR_NOMEM, "model: out of memory");
    m->g = g;
    snprintf(m->arch, sizeof m->arch, "%s", arch);
    m->recipe = *rc;
    meta mt = {g, m->arch};
    cll_status st = read_hparams(m, &mt);
    if (st != CLL_OK) {
        free(m);
        return st;
    }
    cll_hparams *hp = &m->hp;
    const int64_t d = hp->n_embd, hk = hp->head_dim_k, hv = hp->head_dim_v;
    const int64_t nq = hk * hp->n_head, nk = hk * hp->n_head_kv, nv = hv * hp->n_head_kv;
    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) {
        free(m);
        return cll_err(CLL_ERR_NOMEM, "model: out of memory");
    }
    BIND(m->tok_embd, true, 2, d, hp->n_vocab, 1, false, "%s", "token_embd.weight");
    BIND(m->output_norm, true, 1, d, 1, 1, false, "%s", "output_norm.weight");
    BIND(m->output, false, 2, d, hp->n_vocab, 1, true, "%s", "output.weight");
    if (!m->output) {
        /* tied embeddings: the output head is token_embd, which must then be matmul-able */
        BIND(m->output, true, 2, d, hp->n_vocab, 1, true, "%s", "token_embd.weight");
    }
    BIND(m->rope_freqs, false, 1, hp->n_rot / 2, 1, 1, false, "%s", "rope_freqs.weight");
    for (int32_t il = 0; il < hp->n_layer; il++) {
        cll_layer *L = &m->layers[il];
        const cll_recipe *r = &m->recipe;
        BIND(L->attn_norm, true, 1, d, 1, 1, false, "blk.%d.attn_norm.weight", il);
        BIND(L->wq, true, 2, d, nq, 1, true, "blk.%d.attn_q.weight", il);
        BIND(L->wk, true, 2, d, nk, 1, true, "blk.%d.attn_k.weight", il);
        BIND(L->wv, true, 2, d, nv, 1, true, "blk.%d.attn_v.weight", il);
        BIND(L->wo, true, 2, hv * hp->n_head, d, 1, true, "blk.%d.attn_output.weight", il);
        BIND(L->bq, r->qkv_bias, 1, nq, 1, 1, false, "blk.%d.attn_q.bias", il);
        BIND(L->bk, r->qkv_bias, 1, nk, 1, 1, false, "blk.%d.attn_k.bias", il);
        BIND(L->bv, r->qkv_bias, 1, nv, 1, 1, false, "blk.%d.attn_v.bias", il);
        BIND(L->q_norm, r->qk_norm, 1, hk, 1, 1, false, "blk.%d.attn_q_norm.weight", il);
        BIND(L->k_norm, r->qk_norm, 1, hk, 1, 1, false, "blk.%d.attn_k_norm.weight", il);
        BIND(L->post_attn_norm, r->post_norms, 1, d, 1, 1, false, "blk.%d.post_attention_norm.weight", il);
        BIND(L->ffn_norm, true, 1, d, 1, 1, false, "blk.%d.ffn_norm.weight", il);
        BIND(L->post_ffn_norm, r->post_norms, 1, d, 1, 1, false, "blk.%d.post_ffw_norm.weight", il);
        if (hp->n_expert > 0) {
            const int64_t E = hp->n_expert, f = hp->n_ff_exp;
            BIND(L->ffn_gate_inp, true, 2, d, E, 1, true, "blk.%d.ffn_gate_inp.weight", il);
            BIND(L->gate_exps, true, 3, d, f, E, true, "blk.%d.ffn_gate_exps.weight", il);
            BIND(L->up_exps, true, 3, d, f, E, true, "blk.%d.ffn_up_exps.weight", il);
            BIND(L->down_exps, true, 3, f, d, E, true, "blk.%d.ffn_down_exps.weight", il);
        } else {
            BIND(L->ffn_gate, true, 2, d, hp->n_ff, 1, true, "blk.%d.ffn_gate.weight", il);
            BIND(L->ffn_up, true, 2, d, hp->n_ff, 1, true, "blk.%d.ffn_up.weight", il);
            BIND(L->ffn_down, true, 2, hp->n_ff, d, 1, true, "blk.%d.ffn_down.weight", il);
        }
        L->swa = layer_is_swa(&mt, il, hp->n_swa);
        /* gemma3's local layers: their own base, never scaled (llama.cpp's rope_freq_scale_train_swa) */
        L->rope = cll_rope_make(L->swa ? hp->rope_base_swa : hp->rope_base, L->swa ? 1.0f : hp->rope_freq_scale,
                                hp->rope_ext_factor, hp->rope_attn_factor, hp->n_rot, hp->n_ctx_orig, 32.0f, 1.0f);
    }
    for (uint64_t i = 0; i < cll_gguf_n_tensors(g); i++) {
        const cll_gguf_tensor *t = cll_gguf_tensor_at(g, i);
        m->n_params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        m->n_bytes += t->nbytes;
    }
    *out = m;
    return CLL_OK;
fail:
    cll_model_free(m);
    return cll_err_prefix(st, "%s model", arch);
}

void cll_model_free(cll_model *m) {
    if (!m) return;
    free(m->layers);
    free(m->owned);
    free(m->owned_data);
    free(m);
}
