/* session/model_api: cllama_model_* and the tokenizer entry points of the public API. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/formats.h"
#include "kernels/registry.h"
#include "model/plan.h"
#include "session/session.h"

cllama_model_params cllama_model_default_params(void) {
    cllama_model_params p = {.n_threads = 0,
                             .vocab_only = false,
                             .numerics = CLLAMA_NUMERICS_DEFAULT,
                             .backend = CLLAMA_BACKEND_DEFAULT,
                             .device = 0,
                             .progress = false,
                             .tp = 0,
                             .devices = NULL,
                             .gpu_mem_limit = 0};
    return p;
}

const char *cllama_backend_name(cllama_backend b) {
    return b == CLLAMA_BACKEND_CPU ? "cpu" : b == CLLAMA_BACKEND_CUDA ? "cuda" : "default";
}

/* params, else env CLLAMA_BACKEND, else the CPU */
static cll_status resolve_backend(cllama_backend asked, cllama_backend *out) {
    *out = asked;
    if (asked == CLLAMA_BACKEND_DEFAULT) {
        const char *env = getenv("CLLAMA_BACKEND");
        if (!env || !*env || !strcmp(env, "cpu")) *out = CLLAMA_BACKEND_CPU;
        else if (!strcmp(env, "cuda")) *out = CLLAMA_BACKEND_CUDA;
        else return cll_err(CLL_ERR_ARG, "CLLAMA_BACKEND=%s: expected cpu or cuda", env);
    } else if (asked != CLLAMA_BACKEND_CPU && asked != CLLAMA_BACKEND_CUDA) {
        return cll_err(CLL_ERR_ARG, "unknown backend %d (cpu or cuda)", (int)asked);
    }
    return CLL_OK;
}

/* llama.cpp's LLAMA_FTYPE names, for the model description */
static const char *ftype_name(uint32_t ft) {
    static const char *names[] = {
        [0] = "F32",      [1] = "F16",     [2] = "Q4_0",    [3] = "Q4_1",    [7] = "Q8_0",    [8] = "Q5_0",
        [9] = "Q5_1",     [10] = "Q2_K",   [11] = "Q3_K_S", [12] = "Q3_K_M", [13] = "Q3_K_L", [14] = "Q4_K_S",
        [15] = "Q4_K_M",  [16] = "Q5_K_S", [17] = "Q5_K_M", [18] = "Q6_K",   [19] = "IQ2_XXS", [20] = "IQ2_XS",
        [21] = "Q2_K_S",  [22] = "IQ3_XS", [23] = "IQ3_XXS", [24] = "IQ1_S", [25] = "IQ4_NL", [26] = "IQ3_S",
        [27] = "IQ3_M",   [28] = "IQ2_S",  [29] = "IQ2_M",  [30] = "IQ4_XS", [31] = "IQ1_M",  [32] = "BF16",
    };
    if (ft < sizeof names / sizeof names[0] && names[ft]) return names[ft];
    return "?";
}

cllama_status cllama_model_load(const char *path, const cllama_model_params *p, cllama_model **out) {
    if (!out) return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_model_load: out is NULL");
    *out = NULL;
    if (!path) return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_model_load: path is NULL");
    cllama_model_params dp = cllama_model_default_params();
    if (!p) p = &dp;
    cllama_model *m = calloc(1, sizeof *m);
    if (!m) return (cllama_status)cll_err(CLL_ERR_NOMEM, "model: out of memory");
    cll_status st = cll_gguf_open(path, &m->g);
    if (st != CLL_OK) goto fail;
    cll_gguf_get_cstr(m->g, "general.architecture", m->arch, sizeof m->arch);
    if (!p->vocab_only) { /* the recipe first: an unknown architecture is the clearest error */
        st = cll_model_load(m->g, &m->m);
        if (st != CLL_OK) goto fail;
    }
    st = cll_tok_create(m->g, &m->tok);
    if (st != CLL_OK) goto fail;
    const cll_recipe *rc = cll_model_recipe(m->arch); /* a vocab-only load binds no model */
    if (!cll_gguf_find(m->g, "tokenizer.chat_template") && rc && rc->chat_turn_marker) {
        /* e.g. gemma GGUFs often ship without the template; chatml's markers are not tokens
         * in the gemma vocab, so use the family's own turn format */
        char bos[64], eos[64];
        cll_str b = cll_tok_text(m->tok, cll_tok_bos(m->tok)), e = cll_tok_text(m->tok, cll_tok_eos(m->tok));
        snprintf(bos, sizeof bos, "%.*s", (int)b.len, b.ptr ? b.ptr : "");
        snprintf(eos, sizeof eos, "%.*s", (int)e.len, e.ptr ? e.ptr : "");
        cll_chat_init(&m->chat, rc->chat_turn_marker, bos, eos);
    } else {
        cll_chat_init_gguf(&m->chat, m->g, m->tok);
    }
    if (!p->vocab_only) {
        m->numerics = p->numerics;
        if (m->numerics == CLLAMA_NUMERICS_DEFAULT) {
            const char *env = getenv("CLLAMA_NUMERICS");
            if (env && !strcmp(env, "ggml")) m->numerics = CLLAMA_NUMERICS_GGML;
            else if (env && *env && strcmp(env, "default")) {
                st = cll_err(CLL_ERR_ARG, "CLLAMA_NUMERICS=%s: expected ggml or default", env);
                goto fail;
            }
        }
        if (m->numerics != CLLAMA_NUMERICS_DEFAULT && m->numerics != CLLAMA_NUMERICS_GGML) {
            st = cll_err(CLL_ERR_ARG, "unknown numerics %d", (int)m->numerics);
            goto fail;
        }
        st = resolve_backend(p->backend, &m->backend);
        if (st != CLL_OK) goto fail;
        if (m->numerics == CLLAMA_NUMERICS_GGML && m->backend != CLLAMA_BACKEND_CPU) {
            st = cll_err(CLL_ERR_UNSUPPORTED, "numerics ggml reproduces llama.cpp's CPU kernels; it needs backend cpu");
            goto fail;
        }
        if (m->numerics == CLLAMA_NUMERICS_GGML && !(cll_kernels_cpu_features() & CLL_ISA_AVX2)) {
            st = cll_err(CLL_ERR_UNSUPPORTED, "numerics ggml reproduces ggml-cpu's AVX2 kernels; this CPU lacks AVX2");
            goto fail;
        }
        /* the weights are prepared once, here, by the chosen driver only (a CUDA load does
         * no CPU repack) */
        m->drv = m->backend == CLLAMA_BACKEND_CUDA ? &cll_cuda_driver : &cll_cpu_driver;
        cll_driver_model_params dp = {.n_threads = p->n_threads,
                                      .ggml_numerics = m->numerics == CLLAMA_NUMERICS_GGML,
                                      .progress = p->progress,
                                      .device = p->device,
                                      .mem_limit = p->gpu_mem_limit};
        if (p->tp < 0) {
            st = cll_err(CLL_ERR_ARG, "tensor parallel over %d ranks", p->tp);
            goto fail;
        }
        if (p->tp > 0) { /* the split: the tp driver over the backend's */
            if (m->numerics == CLLAMA_NUMERICS_GGML) {
                st = cll_err(CLL_ERR_UNSUPPORTED, "numerics ggml reproduces llama.cpp's one-device forward; it cannot be split (tp)");
                goto fail;
            }
            dp.inner = m->drv;
            dp.tp = p->tp;
            dp.devices = p->devices;
            m->drv = &cll_tp_driver;
            m->tp = p->tp;
        }
        st = m->drv->model_create(m->m, &dp, &m->dm);
        if (st != CLL_OK) goto fail;
        if (cll_tok_n_vocab(m->tok) > m->m->hp.n_vocab) {
            st = cll_err(CLL_ERR_FORMAT, "tokenizer has %d tokens but token_embd.weight has %d rows",
                         cll_tok_n_vocab(m->tok), m->m->hp.n_vocab);
            goto fail;
        }
        uint32_t ft = 0;
        const bool has_ft = cll_gguf_get_u32(m->g, "general.file_type", &ft);
        const double np = (double)m->m->n_params;
        char size[32];
        if (np >= 1e9)
            snprintf(size, sizeof size, "%.1fB", np / 1e9);
        else if (np >= 1e6)
            snprintf(size, sizeof size, "%.0fM", np / 1e6);
        else
            snprintf(size, sizeof size, "%.0fK", np / 1e3);
        snprintf(m->desc, sizeof m->desc, "%s %s %s", m->arch, size, has_ft ? ftype_name(ft) : "F32");
    } else {
        snprintf(m->desc, sizeof m->desc, "%s (vocab only)", m->arch[0] ? m->arch : "?");
    }
    *out = m;
    return CLLAMA_OK;
fail:
    cll_err_prefix(st, "loading %s", path);
    cllama_model_free(m);
    return (cllama_status)st;
}

void cllama_model_free(cllama_model *m) {
    if (!m) return;
    if (m->drv) m->drv->model_free(m->dm);
    cll_model_free(m->m);
    cll_tok_free(m->tok);
    cll_gguf_free(m->g);
    free(m);
}

const char *cllama_model_arch(const cllama_model *m) { return m ? m->arch : ""; }
const char *cllama_model_desc(const cllama_model *m) { return m ? m->desc : ""; }
uint64_t cllama_model_n_params(const cllama_model *m) { return m && m->m ? m->m->n_params : 0; }
uint64_t cllama_model_size_bytes(const cllama_model *m) { return m && m->m ? m->m->n_bytes : 0; }
int32_t cllama_model_n_vocab(const cllama_model *m) {
    if (!m) return 0;
    return m->m ? m->m->hp.n_vocab : cll_tok_n_vocab(m->tok);
}
int32_t cllama_model_n_ctx_train(const cllama_model *m) { return m && m->m ? m->m->hp.n_ctx_train : 0; }
int32_t cllama_model_n_embd(const cllama_model *m) { return m && m->m ? m->m->hp.n_embd : 0; }
int32_t cllama_model_n_layer(const cllama_model *m) { return m && m->m ? m->m->hp.n_layer : 0; }
cllama_numerics cllama_model_numerics(const cllama_model *m) { return m ? m->numerics : CLLAMA_NUMERICS_DEFAULT; }
uint64_t cllama_model_decode_bytes(const cllama_model *m) {
    if (!m || !m->m) return 0;
    cll_plan *p = NULL;
    if (cll_plan_create(m->m, &p) != CLL_OK) return 0;
    const uint64_t b = cll_plan_decode_bytes(p);
    cll_plan_free(p);
    return b;
}
uint64_t cllama_model_kv_read_bytes(const cllama_model *m, int64_t n_cells, int32_t elem_bytes) {
    if (!m || !m->m || n_cells <= 0 || elem_bytes <= 0) return 0;
    const cll_hparams *hp = &m->m->hp;
    const uint64_t per_cell = (uint64_t)hp->n_head_kv * (uint64_t)(hp->head_dim_k + hp->head_dim_v) * (uint64_t)elem_bytes;
    uint64_t b = 0;
    for (int32_t l = 0; l < hp->n_layer; l++) {
        const int64_t c = m->m->layers[l].swa && hp->n_swa > 0 && hp->n_swa < n_cells ? hp->n_swa : n_cells;
        b += (uint64_t)c * per_cell;
    }
    return b;
}
cllama_backend cllama_model_backend(const cllama_model *m) { return m ? m->backend : CLLAMA_BACKEND_CPU; }
int32_t cllama_model_tp(const cllama_model *m) { return m && m->tp > 0 ? m->tp : 1; }
const char *cllama_model_driver_desc(const cllama_model *m) {
    return m && m->drv && m->dm && m->drv->model_desc ? m->drv->model_desc(m->dm) : "";
}
bool cllama_model_meta_str(const cllama_model *m, const char *key, char *buf, size_t cap) {
    return m && key && buf && cap && cll_gguf_get_cstr(m->g, key, buf, cap);
}

/* ---- tokenizer ---------------------------------------------------------------------------------- */
cllama_token cllama_token_bos(const cllama_model *m) { return m ? cll_tok_bos(m->tok) : -1; }
cllama_token cllama_token_eos(const cllama_model *m) { return m ? cll_tok_eos(m->tok) : -1; }
bool cllama_token_is_eog(const cllama_model *m, cllama_token t) { return m && cll_tok_is_eog(m->tok, t); }
bool cllama_add_bos(const cllama_model *m) { return m && cll_tok_add_bos(m->tok); }

cllama_status cllama_tokenize(const cllama_model *m, const char *text, size_t len, bool add_special,
                              bool parse_special, cllama_token *out, int32_t cap, int32_t *n_out) {
    if (!m || (!text && len) || (!out && cap > 0) || !n_out)
        return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_tokenize: NULL argument");
    return (cllama_status)cll_tok_encode(m->tok, text ? text : "", len, add_special, parse_special, out, cap, n_out);
}

int32_t cllama_token_to_piece(const cllama_model *m, cllama_token t, char *buf, int32_t cap, bool special) {
    if (!m) return 0;
    return cll_tok_piece(m->tok, t, buf, cap, special);
}

int64_t cllama_detokenize(const cllama_model *m, const cllama_token *toks, int32_t n, char *buf, int64_t cap,
                          bool special) {
    if (!m) return 0;
    return cll_tok_decode(m->tok, toks, n, buf, cap, special);
}
