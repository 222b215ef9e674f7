/* session/generate: prompt prefill (batched, in n_batch chunks) + the sampling loop. */
#include <stdlib.h>
#include <string.h>

#include "sample/sample.h"
#include "session/session.h"

/* prefill ids into seq at its current end; logits only after the last id (or, when greedy is
 * non-NULL, the argmax of those logits in *greedy: on the GPU only the id crosses the bus) */
static cllama_status prefill(cllama_context *c, int32_t seq, const cllama_token *ids, int32_t n, cllama_token *greedy) {
    int32_t done = 0;
    while (done < n) {
        int32_t k = n - done;
        if ((uint32_t)k > c->p.n_batch) k = (int32_t)c->p.n_batch;
        const int32_t p0 = c->seq_len[seq];
        for (int32_t i = 0; i < k; i++) {
            c->g_tok[i] = ids[done + i];
            c->g_pos[i] = p0 + i;
            c->g_seq[i] = seq;
            c->g_want[i] = done + i == n - 1;
        }
        cllama_batch b = {.n_tokens = k, .tokens = c->g_tok, .pos = c->g_pos, .seq_id = c->g_seq, .logits = c->g_want};
        const bool last = done + k == n;
        cllama_status st = last && greedy ? cllama_decode_greedy(c, &b, greedy) : cllama_decode(c, &b);
        if (st != CLLAMA_OK) return st;
        done += k;
    }
    return CLLAMA_OK;
}

cllama_status cllama_generate_tokens(cllama_context *c, int32_t seq_id, const cllama_token *prompt, int32_t n_prompt,
                                     bool keep_cache, int32_t n_predict, cllama_sampler *s, cllama_token_cb cb,
                                     void *user, cllama_generate_stats *stats) {
    cllama_generate_stats stt = {0};
    if (stats) *stats = stt;
    if (!c || !s || (!prompt && n_prompt > 0) || n_prompt < 0)
        return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_generate_tokens: NULL context/sampler/prompt");
    if (seq_id < 0 || (uint32_t)seq_id >= c->p.n_seq_max)
        return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_generate_tokens: seq_id %d (n_seq_max %u)", seq_id,
                                      c->p.n_seq_max);
    if (!keep_cache) c->seq_len[seq_id] = 0;
    if (n_prompt == 0) /* the logits of the last cached token are not kept, so a step needs a token */
        return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_generate_tokens: empty prompt");
    if ((int64_t)c->seq_len[seq_id] + n_prompt > (int64_t)c->p.n_ctx)
        return (cllama_status)cll_err(CLL_ERR_RANGE, "context full: prompt of %d tokens after %d cached (n_ctx %u)",
                                      n_prompt, c->seq_len[seq_id], c->p.n_ctx);
    const cllama_model *m = c->model;
    for (int32_t i = 0; i < n_prompt; i++) cllama_sampler_accept(s, prompt[i]);
    stt.n_prompt = n_prompt;
    double t0 = cll_now();
    /* a plain greedy sampler takes the driver's argmax; anything else needs the logits */
    const bool greedy = cll_sampler_is_plain_greedy((const cll_sampler *)s);
    cllama_token next = -1;
    cllama_status st = prefill(c, seq_id, prompt, n_prompt, greedy ? &next : NULL);
    stt.prefill_s = cll_now() - t0;
    if (st != CLLAMA_OK) {
        if (stats) *stats = stt;
        return st;
    }
    const float *logits = greedy ? NULL : cllama_get_logits(c, -1);
    t0 = cll_now();
    for (int32_t g = 0; n_predict < 0 || g < n_predict; g++) {
        const cllama_token t = greedy ? next : cllama_sampler_sample(s, logits);
        cllama_sampler_accept(s, t);
        if (cllama_token_is_eog(m, t)) {
            stt.stopped_eog = true;
            break;
        }
        stt.n_gen++;
        if (cb) {
            int32_t len = cllama_token_to_piece(m, t, c->piece, (int32_t)sizeof c->piece, false);
            if (len < 0) len = 0;
            if (len > (int32_t)sizeof c->piece) len = (int32_t)sizeof c->piece;
            if (!cb(t, c->piece, (size_t)len, user)) break;
        }
        if (n_predict >= 0 && g + 1 >= n_predict) break;
        if ((uint32_t)c->seq_len[seq_id] >= c->p.n_ctx) break; /* context full: stop quietly */
        const int32_t pos = c->seq_len[seq_id];
        const int8_t want = 1;
        cllama_batch b = {.n_tokens = 1, .tokens = &t, .pos = &pos, .seq_id = &seq_id, .logits = &want};
        st = greedy ? cllama_decode_greedy(c, &b, &next) : cllama_decode(c, &b);
        if (st != CLLAMA_OK) break;
        if (!greedy) logits = cllama_get_logits(c, 0);
    }
    stt.decode_s = cll_now() - t0;
    if (stats) *stats = stt;
    return st;
}

cllama_status cllama_generate(cllama_context *c, const char *prompt, int32_t n_predict, cllama_sampler *s,
                              cllama_token_cb cb, void *user, cllama_generate_stats *stats) {
    if (!c || !prompt) return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_generate: NULL context or prompt");
    const cllama_model *m = c->model;
    const size_t len = strlen(prompt);
    int32_t n = 0;
    cllama_status st = cllama_tokenize(m, prompt, len, true, true, NULL, 0, &n);
    if (st != CLLAMA_OK && st != CLLAMA_ERR_RANGE) return st;
    cllama_token *ids = malloc(sizeof *ids * (size_t)(n > 0 ? n : 1));
    if (!ids) return (cllama_status)cll_err(CLL_ERR_NOMEM, "cllama_generate: out of memory");
    st = cllama_tokenize(m, prompt, len, true, true, ids, n, &n);
    if (st == CLLAMA_OK) st = cllama_generate_tokens(c, 0, ids, n, false, n_predict, s, cb, user, stats);
    free(ids);
    return st;
}
