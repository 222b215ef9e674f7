/* sample: the sampler chain (see sample.h). */
#include "sample/sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int32_t id;
    float logit;
} cand;

struct cll_sampler {
    cll_sampler_params p;
    int32_t n_vocab;
    cand *c;         /* (n_vocab) candidates */
    int32_t *count;  /* (n_vocab) occurrences in the penalty window */
    int32_t *hist;   /* (repeat_last_n) ring of recent tokens */
    int32_t n_hist, hist_pos;
    uint64_t rng[4]; /* xoshiro256** state */
};

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro_next(uint64_t *s) {
    const uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

/* uniform in [0, 1) with 53 bits */
static double uniform(cll_sampler *s) { return (double)(xoshiro_next(s->rng) >> 11) * (1.0 / 9007199254740992.0); }

cll_status cll_sampler_create(const cll_sampler_params *p, int32_t n_vocab, cll_sampler **out) {
    *out = NULL;
    if (n_vocab <= 0) return cll_err(CLL_ERR_ARG, "sampler: n_vocab %d must be positive", n_vocab);
    if (p->repeat_penalty <= 0.0f) return cll_err(CLL_ERR_ARG, "sampler: repeat_penalty %g must be > 0", p->repeat_penalty);
    cll_sampler *s = calloc(1, sizeof *s);
    if (!s) return cll_err(CLL_ERR_NOMEM, "sampler: out of memory");
    s->p = *p;
    if (s->p.repeat_last_n < 0) s->p.repeat_last_n = 0;
    s->n_vocab = n_vocab;
    s->c = malloc(sizeof *s->c * (size_t)n_vocab);
    s->count = calloc((size_t)n_vocab, sizeof *s->count);
    s->hist = malloc(sizeof *s->hist * (size_t)(s->p.repeat_last_n + 1));
    if (!s->c || !s->count || !s->hist) {
        cll_sampler_free(s);
        return cll_err(CLL_ERR_NOMEM, "sampler: out of memory");
    }
    cll_sampler_reset(s);
    *out = s;
    return CLL_OK;
}

void cll_sampler_free(cll_sampler *s) {
    if (!s) return;
    free(s->c);
    free(s->count);
    free(s->hist);
    free(s);
}

void cll_sampler_reset(cll_sampler *s) {
    s->n_hist = s->hist_pos = 0;
    uint64_t x = s->p.seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
}

void cll_sampler_accept(cll_sampler *s, int32_t tok) {
    const int32_t N = s->p.repeat_last_n;
    if (N <= 0) return;
    s->hist[s->hist_pos] = tok;
    s->hist_pos = (s->hist_pos + 1) % N;
    if (s->n_hist < N) s->n_hist++;
}

int32_t cll_sample_argmax(const float *logits, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

/* descending logit, ties to the lower id */
static int cand_cmp(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}
static bool cand_before(const cand *x, const cand *y) { return cand_cmp(x, y) < 0; }

/* keep the k best candidates at the front, sorted: a min-heap of size k over the rest */
static void top_k_select(cand *c, int32_t n, int32_t k) {
    /* heap root = the worst of the kept k */
    for (int32_t i = 0; i < n; i++) {
        if (i < k) {
            int32_t j = i; /* sift up */
            while (j > 0) {
                int32_t par = (j - 1) / 2;
                if (cand_before(&c[par], &c[j])) {
                    cand t = c[par];
                    c[par] = c[j];
                    c[j] = t;
                    j = par;
                } else
                    break;
            }
        } else if (cand_before(&c[i], &c[0])) {
            c[0] = c[i];
            int32_t j = 0; /* sift down */
            for (;;) {
                int32_t l = 2 * j + 1, r = l + 1, w = j;
                if (l < k && cand_before(&c[w], &c[l])) w = l;
                if (r < k && cand_before(&c[w], &c[r])) w = r;
                if (w == j) break;
                cand t = c[w];
                c[w] = c[j];
                c[j] = t;
                j = w;
            }
        }
    }
    qsort(c, (size_t)k, sizeof *c, cand_cmp);
}

static int32_t finish(cll_sampler *s, int32_t k);

int32_t cll_sampler_sample(cll_sampler *s, const float *logits) {
    const int32_t n = s->n_vocab;
    for (int32_t i = 0; i < n; i++) s->c[i] = (cand){i, logits[i]};
    /* penalties over the window */
    const bool pen = s->n_hist > 0 && (s->p.repeat_penalty != 1.0f || s->p.presence_penalty != 0.0f ||
                                       s->p.frequency_penalty != 0.0f);
    if (pen) {
        for (int32_t j = 0; j < s->n_hist; j++)
            if (s->hist[j] >= 0 && s->hist[j] < n) s->count[s->hist[j]]++;
        for (int32_t j = 0; j < s->n_hist; j++) {
            const int32_t t = s->hist[j];
            if (t < 0 || t >= n || s->count[t] == 0) continue;
            float *l = &s->c[t].logit;
            *l = *l > 0.0f ? *l / s->p.repeat_penalty : *l * s->p.repeat_penalty;
            *l -= (float)s->count[t] * s->p.frequency_penalty + s->p.presence_penalty;
            s->count[t] = 0; /* each token once */
        }
    }
    if (s->p.temperature <= 0.0f) {
        int32_t best = 0;
        for (int32_t i = 1; i < n; i++)
            if (s->c[i].logit > s->c[best].logit) best = i;
        return s->c[best].id;
    }
    int32_t k = s->p.top_k > 0 && s->p.top_k < n ? s->p.top_k : n;
    if (k < n)
        top_k_select(s->c, n, k);
    else
        qsort(s->c, (size_t)n, sizeof *s->c, cand_cmp);
    return finish(s, k);
}

cll_status cll_sample_topk(const float *logits, int32_t n, int32_t k, int32_t *ids, float *vals) {
    if (!logits || !ids || !vals || k < 1 || k > n) return cll_err(CLL_ERR_ARG, "top-k: k %d outside [1, %d]", k, n);
    cand *c = malloc(sizeof *c * (size_t)n);
    if (!c) return cll_err(CLL_ERR_NOMEM, "top-k: out of memory");
    for (int32_t i = 0; i < n; i++) c[i] = (cand){i, logits[i]};
    top_k_select(c, n, k);
    for (int32_t i = 0; i < k; i++) {
        ids[i] = c[i].id;
        vals[i] = c[i].logit;
    }
    free(c);
    return CLL_OK;
}

int32_t cll_sampler_topk_need(const cll_sampler *s, int32_t k_max) {
    if (!s) return 0;
    const bool pen = s->p.repeat_last_n != 0 && (s->p.repeat_penalty != 1.0f || s->p.presence_penalty != 0.0f ||
                                                 s->p.frequency_penalty != 0.0f);
    if (pen) return 0; /* penalties move logits before the top-k cut: the sampler needs them all */
    if (s->p.temperature <= 0.0f) return 1;
    return s->p.top_k > 0 && s->p.top_k <= k_max && s->p.top_k < s->n_vocab ? s->p.top_k : 0;
}

int32_t cll_sampler_sample_topk(cll_sampler *s, const int32_t *ids, const float *logits, int32_t k) {
    const int32_t need = cll_sampler_topk_need(s, k);
    if (need <= 0 || need > k) return -1;
    if (s->p.temperature <= 0.0f) return ids[0];
    for (int32_t i = 0; i < need; i++) s->c[i] = (cand){ids[i], logits[i]};
    return finish(s, need);
}

/* the draw after the top-k cut, on s->c[0, k) sorted by cand_cmp: top-p, min-p, temperature */
static int32_t finish(cll_sampler *s, int32_t k) {
    /* top-p on the untempered distribution: smallest prefix with mass >= top_p */
    if (s->p.top_p < 1.0f) {
        const float mx = s->c[0].logit;
        double z = 0.0;
        for (int32_t i = 0; i < k; i++) z += exp((double)(s->c[i].logit - mx));
        double cum = 0.0;
        for (int32_t i = 0; i < k; i++) {
            cum += exp((double)(s->c[i].logit - mx)) / z;
            if (cum >= s->p.top_p) {
                k = i + 1;
                break;
            }
        }
    }
    /* min-p: p_i >= min_p * p_max  <=>  logit_i >= logit_max + ln(min_p) */
    if (s->p.min_p > 0.0f) {
        const float cut = s->c[0].logit + logf(s->p.min_p);
        int32_t keep = 1;
        while (keep < k && s->c[keep].logit >= cut) keep++;
        k = keep;
    }
    /* temperature, softmax, draw */
    const float mx = s->c[0].logit;
    double z = 0.0;
    for (int32_t i = 0; i < k; i++) z += exp((double)((s->c[i].logit - mx) / s->p.temperature));
    const double u = uniform(s) * z;
    double cum = 0.0;
    for (int32_t i = 0; i < k; i++) {
        cum += exp((double)((s->c[i].logit - mx) / s->p.temperature));
        if (u < cum) return s->c[i].id;
    }
    return s->c[k - 1].id;
}

bool cll_sampler_is_plain_greedy(const cll_sampler *s) {
    return s && s->p.temperature <= 0.0f &&
           (s->p.repeat_last_n == 0 ||
            (s->p.repeat_penalty == 1.0f && s->p.presence_penalty == 0.0f && s->p.frequency_penalty == 0.0f));
}
