/* session: the implementation of the public API (include/cllama.h) — model handles
 * (GGUF + tokenizer + recipe + a driver's prepared weights), contexts (a driver state, logits
 * of the last decode, per-sequence lengths), generation.
 * Owns: the model owns its gguf map, tokenizer, recipe and driver model; the context owns its
 * driver state and logits. Rule: drivers are reached only through model/driver.h; everything a
 * decode needs is allocated when the context is created; cllama_decode validates the whole
 * batch before touching the cache. */
#ifndef CLL_SESSION_H
#define CLL_SESSION_H

#include "cllama.h"
#include "gguf/gguf.h"
#include "model/driver.h"
#include "model/kvpage.h"
#include "model/model.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

struct cllama_model {
    cll_gguf *g;
    cll_tokenizer *tok;
    cll_model *m;          /* NULL when vocab_only */
    const cll_driver *drv; /* the backend's driver; NULL when vocab_only */
    cll_driver_model *dm;  /* its prepared weights; NULL when vocab_only */
    cllama_backend backend;
    int32_t tp;            /* tensor-parallel ranks (0: the backend's driver alone) */
    cll_chat_tmpl chat;    /* recognised chat template family */
    cllama_numerics numerics; /* resolved at load: params, else env CLLAMA_NUMERICS */
    char arch[32];
    char desc[96];
};

struct cllama_context {
    cllama_model *model;
    cllama_context_params p;
    cll_driver_state *ds;
    int32_t n_vocab;
    int32_t n_out_max;     /* logits rows one decode may ask for */
    int32_t *seq_len;      /* (n_seq_max) tokens in each sequence's cache */
    int32_t *seq_cnt;      /* (n_seq_max) decode's running count of a batch's tokens per sequence (zero between) */
    /* paged KV (p.n_kv_cells > 0): the pool's bookkeeping and the block tables handed to the
     * driver (n_seq_max x kv_stride block ids), rewritten for a sequence when its blocks change */
    cll_kvpage *kv;
    int32_t *kv_tab;
    int32_t kv_stride;
    bool kv_dirty;
    int32_t topk;          /* the k of a cllama_decode_topk in progress (the driver batch's top_k) */
    void *tk_buf;          /* (n_out_max x CLLAMA_TOPK_MAX) ids then logits from the driver */
    float *logits;         /* (n_out_max, n_vocab) logits of the last decode */
    bool logits_drv;       /* logits came from the driver's host_alloc (page-locked on CUDA) */
    int32_t *logit_row;    /* (n_batch) row of batch token i in logits, -1 if none */
    int32_t last_n;        /* tokens in the last decode */
    bool last_greedy;      /* the last decode returned ids, not logits */
    /* generation scratch */
    int32_t *g_tok, *g_pos, *g_seq; /* (n_batch) */
    int8_t *g_want;        /* (n_batch) */
    char piece[256];
};

#endif
