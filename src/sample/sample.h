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

/* true when sampling is a plain argmax of the logits (temperature <= 0, no penalties): the
 * caller may then take the driver's on-device argmax instead of the logits */
bool cll_sampler_is_plain_greedy(const cll_sampler *s);

/* argmax, lowest id wins ties */
int32_t cll_sample_argmax(const float *logits, int32_t n);

#endif
