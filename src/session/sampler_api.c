/* session/sampler_api: the public sampler API over sample/sample.h (a cllama_sampler is a
 * cll_sampler). */
#include "cllama.h"
#include "sample/sample.h"

_Static_assert(sizeof(cllama_token) == sizeof(int32_t), "token ids are int32");

cllama_sampler_params cllama_sampler_default_params(void) {
    cllama_sampler_params p = {.temperature = 0.8f,
                               .top_k = 40,
                               .top_p = 0.95f,
                               .min_p = 0.05f,
                               .repeat_penalty = 1.0f,
                               .repeat_last_n = 64,
                               .presence_penalty = 0.0f,
                               .frequency_penalty = 0.0f,
                               .seed = 0x5eed};
    return p;
}

cllama_status cllama_sampler_create(const cllama_sampler_params *p, int32_t n_vocab, cllama_sampler **out) {
    if (!out) return (cllama_status)cll_err(CLL_ERR_ARG, "cllama_sampler_create: out is NULL");
    *out = NULL;
    cllama_sampler_params dp = cllama_sampler_default_params();
    if (!p) p = &dp;
    cll_sampler_params q = {.temperature = p->temperature,
                            .top_k = p->top_k,
                            .top_p = p->top_p,
                            .min_p = p->min_p,
                            .repeat_penalty = p->repeat_penalty,
                            .repeat_last_n = p->repeat_last_n,
                            .presence_penalty = p->presence_penalty,
                            .frequency_penalty = p->frequency_penalty,
                            .seed = p->seed};
    cll_sampler *s;
    cll_status st = cll_sampler_create(&q, n_vocab, &s);
    if (st != CLL_OK) return (cllama_status)st;
    *out = (cllama_sampler *)s;
    return CLLAMA_OK;
}

void cllama_sampler_free(cllama_sampler *s) { cll_sampler_free((cll_sampler *)s); }
void cllama_sampler_reset(cllama_sampler *s) {
    if (s) cll_sampler_reset((cll_sampler *)s);
}
void cllama_sampler_accept(cllama_sampler *s, cllama_token t) {
    if (s) cll_sampler_accept((cll_sampler *)s, t);
}
cllama_token cllama_sampler_sample(cllama_sampler *s, const float *logits) {
    if (!s || !logits) return -1;
    return cll_sampler_sample((cll_sampler *)s, logits);
}

int32_t cllama_sampler_topk_need(const cllama_sampler *s) {
    return cll_sampler_topk_need((const cll_sampler *)s, CLLAMA_TOPK_MAX);
}
cllama_token cllama_sampler_sample_topk(cllama_sampler *s, const cllama_token *ids, const float *logits, int32_t k) {
    if (!s || !ids || !logits || k < 1) return -1;
    return cll_sampler_sample_topk((cll_sampler *)s, ids, logits, k);
}
