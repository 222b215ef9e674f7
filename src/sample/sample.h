/* sample: token samplers — penalties over the last N tokens, then greedy, or top-k -> top-p
 * -> min-p -> temperature -> a seeded draw (xoshiro256** seeded by splitmix64).
 * Owns its candidate/count buffers (sized n_vocab at creation) and the token history.
 * Rule: deterministic for a seed; greedy is argmax with the lowest id winning ties. */
#ifndef CLL_SAMPLE_H
#define CLL_SAMPLE_H

#include "core/core.h"

typedef struct {
    float temperature;       /* <= 0: greedy */
    int32_t top_k;           /* <= 0: off */
    float top_p;             /* >= 1: off */
    float min_p;             /* <= 0: off */
    float repeat_penalty;    /* 1: off */
    int32_t repeat_last_n;   /* history window for the penalties (0: penalties off) */
    float presence_penalty;  /* 0: off */
    float frequency_penalty; /* 0: off */
    uint64_t seed;
} cll_sampler_params;

typedef struct cll_sampler cll_sampler;

cll_status cll_sampler_create(const cll_sampler_params *p, int32_t n_vocab, cll_sampler **out);
void cll_sampler_free(cll_sampler *s);
void cll_sampler_reset(cll_sampler *s); /* clears the history, reseeds */
void cll_sampler_accept(cll_sampler *s, int32_t tok);
int32_t cll_sampler_sample(cll_sampler *s, const float *logits);

/* Sampling from the k best candidates instead of all the logits (what a GPU step returns when only
 * candidates should cross the bus). cll_sampler_topk_need: how many candidates this sampler needs
 * for a draw identical to cll_sampler_sample's (1 for a plain argmax; top_k; 0 when it needs every
 * logit: penalties on, top-k off, or top_k > k_max). cll_sampler_sample_topk: the draw from ids /
 * logits [0, k) of one row, sorted as the full path sorts them (descending logit, ties to the lower
 * id), k >= the need; -1 when k is short. Same RNG stream, same token as cll_sampler_sample. */
int32_t cll_sampler_topk_need(const cll_sampler *s, int32_t k_max);
/* the k best of n logits in that order (the host's answer where a driver has no CLL_OUT_TOPK) */
cll_status cll_sample_topk(const float *logits, int32_t n, int32_t k, int32_t *ids, float *vals);
int32_t cll_sampler_sample_topk(cll_sampler *s, const int32_t *ids, const float *logits, int32_t k);

/* true when sampling is a plain argmax of the logits (temperature <= 0, no penalties): the
 * caller may then take the driver's on-device argmax instead of the logits */
bool cll_sampler_is_plain_greedy(const cll_sampler *s);

/* argmax, lowest id wins ties */
int32_t cll_sample_argmax(const float *logits, int32_t n);

#endif
