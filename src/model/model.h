/* model: the architecture recipes. general.architecture picks a recipe that reads the
 * hparams from metadata and binds tensor names to weight views (pointers into the GGUF map).
 * Owns the layer table only; the cll_gguf (and its map) must outlive the model.
 * Rule: a recipe only describes (norm/rope/act kind, biases, q/k-norm, post-norms, sliding
 * window, MoE); no backend code branches on the architecture name. */
#ifndef CLL_MODEL_H
#define CLL_MODEL_H

#include "gguf/gguf.h"
#include "model/rope.h"

typedef enum { CLL_ROPE_NORM = 0, CLL_ROPE_NEOX = 1 } cll_rope_kind;
typedef enum { CLL_ACT_SILU = 0, CLL_ACT_GELU_TANH = 1 } cll_act_kind;

/* what the forward must do for this architecture */
typedef struct {
    const char *name;        /* recipe name: "llama", "qwen2", ... */
    cll_rope_kind rope;
    cll_act_kind act;        /* gated FFN: down(act(gate(x)) * up(x)) */
    bool qkv_bias;           /* attn_{q,k,v}.bias required */
    bool qk_norm;            /* per-head RMS norm of q and k before RoPE */
    bool post_norms;         /* post_attention_norm / post_ffw_norm before the residual adds */
    bool embd_scale;         /* input embeddings * sqrt(n_embd) */
    bool q_prescale;         /* q *= attn_scale after RoPE and attention uses scale 1 (gemma) */
    bool moe_allowed;        /* expert_count > 0 selects the MoE FFN */
    bool sliding_window;     /* <arch>.attention.sliding_window (+ _pattern) makes local layers */
    /* a file without tokenizer.chat_template chats in the family's own turn format, turns
     * opened by this marker (its markers are tokens of the vocab, chatml's are not); NULL:
     * the template recognised from the file, else chatml */
    const char *chat_turn_marker;
} cll_recipe;

typedef struct {
    int32_t n_vocab, n_embd, n_layer, n_ctx_train;
    int32_t n_head, n_head_kv, head_dim_k, head_dim_v, n_rot;
    int32_t n_ff;            /* dense FFN width */
    int32_t n_expert, n_expert_used, n_ff_exp; /* MoE (n_expert 0 = dense) */
    bool moe_norm_topk;      /* renormalize the k selected router weights to sum 1 */
    float eps;               /* RMSNorm epsilon */
    float rope_base, rope_base_swa, rope_freq_scale;
    /* YaRN (rope.scaling.type "yarn"): ext_factor 1, the original training context the ramp is
     * measured against (rope.scaling.original_context_length, else context_length); attn_factor:
     * llama.cpp's yarn_attn_factor (rope.scaling.attn_factor times YaRN's cancelled magnitude term) */
    float rope_ext_factor, rope_attn_factor;
    int32_t n_ctx_orig;
    int32_t n_swa;           /* sliding window in tokens (0 = none) */
    float attn_scale;        /* applied to q·k (or to q when q_prescale) */
    float logit_softcap;     /* 0 = off */
    /* what this model's tensors hold when it is one rank's share of a tensor-parallel split
     * (model/shard.h; the whole model otherwise): the output head's rows (n_vocab unsplit: a
     * rank's logits are the vocab columns [its v0, v0 + n_logits)) and the experts
     * [expert0, expert0 + n_expert_here) of the expert tensors (every expert unsplit; the router
     * always scores all n_expert). n_head, n_head_kv and n_ff are then the rank's own. */
    int32_t n_logits;
    int32_t expert0, n_expert_here;
} cll_hparams;

typedef struct {
    const cll_gguf_tensor *attn_norm, *wq, *wk, *wv, *wo;
    const cll_gguf_tensor *bq, *bk, *bv;                 /* optional biases */
    const cll_gguf_tensor *q_norm, *k_norm;              /* (head_dim) */
    const cll_gguf_tensor *post_attn_norm, *ffn_norm, *post_ffn_norm;
    const cll_gguf_tensor *ffn_gate, *ffn_up, *ffn_down; /* dense */
    const cll_gguf_tensor *ffn_gate_inp;                 /* router (n_embd -> n_expert) */
    const cll_gguf_tensor *gate_exps, *up_exps, *down_exps; /* (n_expert, ...) 3-D */
    bool swa;                /* sliding-window (local) layer */
    cll_rope rope;           /* this layer's rotary embedding (model/rope.h) */
} cll_layer;

typedef struct {
    const cll_gguf *g;
    char arch[32];           /* general.architecture */
    cll_recipe recipe;
    cll_hparams hp;
    const cll_gguf_tensor *tok_embd, *output_norm, *output; /* output == tok_embd when tied */
    const cll_gguf_tensor *rope_freqs;                      /* optional (n_rot/2) frequency factors */
    cll_layer *layers;       /* (n_layer) */
    uint64_t n_params, n_bytes;
    void *owned;             /* a shard view's tensor structs (model/shard.h); NULL when bound */
    void *owned_data;        /* a shard view's column-sliced copies (may be dropped after a driver's upload) */
} cll_model;

/* Bind the recipe for g's architecture. Errors name the architecture (listing the supported
 * ones), the missing tensor, or the tensor with a bad shape/type. */
cll_status cll_model_load(const cll_gguf *g, cll_model **out);
void cll_model_free(cll_model *m);
/* "llama, qwen2, ..." */
const char *cll_model_supported_archs(void);
/* the recipe of general.architecture `arch`, NULL when unsupported (for front ends that read
 * only the vocab and so bind no model) */
const cll_recipe *cll_model_recipe(const char *arch);

#endif
