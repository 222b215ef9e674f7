/* cli/perplexity_stats: per-token log-softmax, the compact base-logits rows, the KL-divergence
 * sums and report of `cllama perplexity`. Each function follows the llama.cpp function it names
 * (tools/perplexity/perplexity.cpp) operation by operation, types included: a float product that
 * llama.cpp rounds to float is rounded to float here too, so files and numbers match. */
#include "cli/perplexity.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* std::max / std::min semantics (first argument wins ties and NaN comparisons) */
static inline float fmax_std(float a, float b) { return a < b ? b : a; }
static inline float fmin_std(float a, float b) { return b < a ? b : a; }

/* ggml's round-to-nearest through the float mantissa (llama.cpp's nearest_int) */
static inline int nearest_int(float fval) {
    float val = fval + 12582912.f;
    int i;
    memcpy(&i, &val, sizeof(int));
    return (i & 0x007fffff) - 0x00400000;
}

double cll_ppl_nll(const float *logits, int32_t n_vocab, int32_t tok) {
    float max_logit = logits[0];
    for (int32_t i = 1; i < n_vocab; ++i) max_logit = fmax_std(max_logit, logits[i]);
    double sum_exp = 0.0;
    for (int32_t i = 0; i < n_vocab; ++i) sum_exp += expf(logits[i] - max_logit);
    const double log_softmax = (double)(logits[tok] - max_logit) - log(sum_exp);
    return -log_softmax;
}

double cll_ppl_nll_store(const float *logits, int32_t n_vocab, uint16_t *log_prob, int32_t tok) {
    float max_logit = logits[0];
    float min_logit = logits[0];
    for (int32_t i = 1; i < n_vocab; ++i) {
        max_logit = fmax_std(max_logit, logits[i]);
        min_logit = fmin_std(min_logit, logits[i]);
    }
    min_logit = fmax_std(min_logit, max_logit - 16);
    double sum_exp = 0.0;
    for (int32_t i = 0; i < n_vocab; ++i) sum_exp += expf(logits[i] - max_logit);
    const float log_sum_exp = (float)log(sum_exp);
    const float min_log_prob = min_logit - max_logit - log_sum_exp;
    const float scale = (max_logit - min_logit) / 65535.f;
    memcpy(log_prob, &scale, sizeof scale);
    memcpy(log_prob + 2, &min_log_prob, sizeof min_log_prob);
    log_prob += 4;
    if (scale != 0.f) {
        const float inv_scale = 1 / scale;
        for (int32_t i = 0; i < n_vocab; ++i)
            log_prob[i] = logits[i] > min_logit ? (uint16_t)nearest_int(inv_scale * (logits[i] - min_logit)) : 0;
    } else {
        memset(log_prob, 0, (size_t)n_vocab * sizeof(uint16_t));
    }
    if (n_vocab & 1) log_prob[n_vocab] = 0; /* the pad word */
    const float nll = max_logit + log_sum_exp - logits[tok];
    return nll;
}

double cll_kld_row(const float *logits, int32_t n_vocab, const uint16_t *base_log_prob, int32_t tok,
                   cll_kld_sums *kld, float *p_diff_out) {
    float max_logit = logits[0];
    int32_t imax = 0;
    for (int32_t i = 1; i < n_vocab; ++i) {
        if (logits[i] > max_logit) {
            max_logit = logits[i];
            imax = i;
        }
    }
    double sum_exp = 0.0;
    for (int32_t i = 0; i < n_vocab; ++i) sum_exp += expf(logits[i] - max_logit);
    const float log_sum_exp = (float)log(sum_exp);
    float scale, min_log_prob;
    memcpy(&scale, base_log_prob, sizeof scale);
    memcpy(&min_log_prob, base_log_prob + 2, sizeof min_log_prob);
    base_log_prob += 4;

    const float nll = max_logit + log_sum_exp - logits[tok];
    kld->sum_nll += nll;
    kld->sum_nll2 += (float)(nll * nll);

    const float nll_base = -(scale * base_log_prob[tok] + min_log_prob);
    kld->sum_nll_base += nll_base;
    kld->sum_nll_base2 += (float)(nll_base * nll_base);
    kld->sum_nll_nll_base += (float)(nll * nll_base);

    max_logit += log_sum_exp;
    double sum = 0;
    int32_t imax_base = -1;
    float p_log_base_max = 0;
    for (int32_t i = 0; i < n_vocab; ++i) {
        const float p_log_base = scale * base_log_prob[i] + min_log_prob;
        if (i == 0 || p_log_base > p_log_base_max) {
            p_log_base_max = p_log_base;
            imax_base = i;
        }
        if (p_log_base > -16.f) {
            const float p_base = expf(p_log_base);
            sum += (float)(p_base * (p_log_base - logits[i] + max_logit));
        }
    }
    kld->sum_kld += sum;
    kld->sum_kld2 += sum * sum;
    ++kld->count;
    if (imax == imax_base) ++kld->n_same_top;

    const float p_base = expf(-nll_base);
    const float p = expf(-nll);
    const float p_diff = p - p_base;
    kld->sum_p_diff += p_diff;
    const double p_diff2 = (float)(p_diff * p_diff);
    kld->sum_p_diff2 += p_diff2;
    kld->sum_p_diff4 += p_diff2 * p_diff2;
    kld->max_p_diff = fmax_std(kld->max_p_diff, fabsf(p_diff));
    *p_diff_out = p_diff;
    return sum;
}

void cll_kld_merge(cll_kld_sums *into, const cll_kld_sums *s) {
    into->sum_nll += s->sum_nll;
    into->sum_nll2 += s->sum_nll2;
    into->sum_nll_base += s->sum_nll_base;
    into->sum_nll_base2 += s->sum_nll_base2;
    into->sum_nll_nll_base += s->sum_nll_nll_base;
    into->sum_kld += s->sum_kld;
    into->sum_kld2 += s->sum_kld2;
    into->sum_p_diff += s->sum_p_diff;
    into->sum_p_diff2 += s->sum_p_diff2;
    into->sum_p_diff4 += s->sum_p_diff4;
    into->n_same_top += s->n_same_top;
    into->max_p_diff = fmax_std(into->max_p_diff, s->max_p_diff);
    into->count += s->count;
}

typedef struct {
    double f, df;
} mean_unc;

static mean_unc mean_and_uncertainty(double sum, double sum2, size_t count) {
    if (count < 1) return (mean_unc){0., 0.};
    double f = sum / count;
    double df = sum2 / count - f * f;
    df = df > 0 && count > 10 ? sqrt(df / (count - 1)) : 0.;
    return (mean_unc){f, df};
}

static double covariance(double suma, double sumb, double sumab, size_t count) {
    if (count < 10) return 0.0;
    double var = sumab / count - (suma / count) * (sumb / count);
    var /= count - 1;
    return var;
}

void cll_kld_print_header(FILE *f) {
    fprintf(f, "\nchunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              "
               "Δp RMS            Same top p\n");
}

void cll_kld_print_chunk(FILE *f, int chunk, const cll_kld_sums *kld) {
    fprintf(f, "%4d", chunk);
    mean_unc log_ppl = mean_and_uncertainty(kld->sum_nll, kld->sum_nll2, kld->count);
    const double ppl_val = exp(log_ppl.f);
    const double ppl_unc = ppl_val * log_ppl.df;
    fprintf(f, "    %9.4lf ± %9.4lf", ppl_val, ppl_unc);
    mean_unc log_ppl_base = mean_and_uncertainty(kld->sum_nll_base, kld->sum_nll_base2, kld->count);
    const double log_ppl_cov = covariance(kld->sum_nll, kld->sum_nll_base, kld->sum_nll_nll_base, kld->count);
    const double log_ppl_ratio_val = log_ppl.f - log_ppl_base.f;
    const double log_ppl_ratio_unc =
        sqrt(log_ppl.df * log_ppl.df + log_ppl_base.df * log_ppl_base.df - 2.0 * log_ppl_cov);
    fprintf(f, "    %10.5lf ± %10.5lf", log_ppl_ratio_val, log_ppl_ratio_unc);
    mean_unc kl_div = mean_and_uncertainty(kld->sum_kld, kld->sum_kld2, kld->count);
    fprintf(f, "    %10.5lf ± %10.5lf", kl_div.f, kl_div.df);
    mean_unc p_diff_mse = mean_and_uncertainty(kld->sum_p_diff2, kld->sum_p_diff4, kld->count);
    const double p_diff_rms_val = sqrt(p_diff_mse.f);
    const double p_diff_rms_unc = 0.5 / p_diff_rms_val * p_diff_mse.df;
    fprintf(f, "    %6.3lf ± %6.3lf %%", 100.0 * p_diff_rms_val, 100.0 * p_diff_rms_unc);
    double p_top_val = 1. * kld->n_same_top / kld->count;
    double p_top_unc = sqrt(p_top_val * (1 - p_top_val) / (kld->count - 1));
    fprintf(f, "    %6.3lf ± %6.3lf %%", 100.0 * p_top_val, 100.0 * p_top_unc);
    fprintf(f, "\n");
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* llama.cpp's percentile lambda: linear interpolation with a float position */
static float percentile(const float *v, size_t n, float fraction) {
    if (fraction <= 0) return v[0];
    if (fraction >= 1) return v[n - 1];
    float p = fraction * (float)(n - 1);
    size_t ip = (size_t)p;
    p -= (float)ip;
    return (1 - p) * v[ip] + p * v[ip + 1 < n - 1 ? ip + 1 : n - 1];
}

static float median(const float *v, size_t n) {
    return n % 2 == 0 ? 0.5f * (v[n / 2] + v[n / 2 - 1]) : v[n / 2];
}

void cll_kld_print_final(FILE *f, const cll_kld_sums *kld, float *kld_values, float *p_diff_values, size_t n) {
    if (kld->count < 100 || n == 0) return; /* llama.cpp: no statistics on so few values */
    qsort(kld_values, n, sizeof(float), cmp_float);
    qsort(p_diff_values, n, sizeof(float), cmp_float);

    fprintf(f, "====== Perplexity statistics ======\n");
    mean_unc log_ppl = mean_and_uncertainty(kld->sum_nll, kld->sum_nll2, kld->count);
    const double ppl_val = exp(log_ppl.f);
    const double ppl_unc = ppl_val * log_ppl.df;
    fprintf(f, "Mean PPL(Q)                   : %10.6lf ± %10.6lf\n", ppl_val, ppl_unc);
    mean_unc log_ppl_base = mean_and_uncertainty(kld->sum_nll_base, kld->sum_nll_base2, kld->count);
    const double ppl_base_val = exp(log_ppl_base.f);
    const double ppl_base_unc = ppl_base_val * log_ppl_base.df;
    fprintf(f, "Mean PPL(base)                : %10.6lf ± %10.6lf\n", ppl_base_val, ppl_base_unc);
    const double log_ppl_cov = covariance(kld->sum_nll, kld->sum_nll_base, kld->sum_nll_nll_base, kld->count);
    const double log_ppl_cor = log_ppl_cov / (log_ppl.df * log_ppl_base.df);
    fprintf(f, "Cor(ln(PPL(Q)), ln(PPL(base))): %6.2lf%%\n", 100.0 * log_ppl_cor);
    const double log_ppl_ratio_val = log_ppl.f - log_ppl_base.f;
    const double log_ppl_ratio_unc =
        sqrt(log_ppl.df * log_ppl.df + log_ppl_base.df * log_ppl_base.df - 2.0 * log_ppl_cov);
    fprintf(f, "Mean ln(PPL(Q)/PPL(base))     : %10.6lf ± %10.6lf\n", log_ppl_ratio_val, log_ppl_ratio_unc);
    const double ppl_ratio_val = exp(log_ppl_ratio_val);
    const double ppl_ratio_unc = ppl_ratio_val * log_ppl_ratio_unc;
    fprintf(f, "Mean PPL(Q)/PPL(base)         : %10.6lf ± %10.6lf\n", ppl_ratio_val, ppl_ratio_unc);
    const double ppl_cov = ppl_val * ppl_base_val * log_ppl_cov;
    const double ppl_diff_val = ppl_val - ppl_base_val;
    const double ppl_diff_unc = sqrt(ppl_unc * ppl_unc + ppl_base_unc * ppl_base_unc - 2.0 * ppl_cov);
    fprintf(f, "Mean PPL(Q)-PPL(base)         : %10.6lf ± %10.6lf\n", ppl_diff_val, ppl_diff_unc);
    fprintf(f, "\n");

    fprintf(f, "====== KL divergence statistics ======\n");
    mean_unc kl_div = mean_and_uncertainty(kld->sum_kld, kld->sum_kld2, kld->count);
    fprintf(f, "Mean    KLD: %10.6lf ± %10.6lf\n", kl_div.f, kl_div.df);
    fprintf(f, "Maximum KLD: %10.6f\n", (double)kld_values[n - 1]);
    fprintf(f, "99.9%%   KLD: %10.6f\n", (double)percentile(kld_values, n, 0.999f));
    fprintf(f, "99.0%%   KLD: %10.6f\n", (double)percentile(kld_values, n, 0.990f));
    fprintf(f, "95.0%%   KLD: %10.6f\n", (double)percentile(kld_values, n, 0.950f));
    fprintf(f, "90.0%%   KLD: %10.6f\n", (double)percentile(kld_values, n, 0.900f));
    fprintf(f, "Median  KLD: %10.6f\n", (double)median(kld_values, n));
    fprintf(f, "10.0%%   KLD: %10.6f\n", (double)percentile(kld_values, n, 0.100f));
    fprintf(f, " 5.0%%   KLD: %10.6f\n", (double)percentile(kld_values, n, 0.050f));
    fprintf(f, " 1.0%%   KLD: %10.6f\n", (double)percentile(kld_values, n, 0.010f));
    fprintf(f, " 0.1%%   KLD: %10.6f\n", (double)percentile(kld_values, n, 0.001f));
    fprintf(f, "Minimum KLD: %10.6f\n", (double)kld_values[0]);
    fprintf(f, "\n");

    fprintf(f, "====== Token probability statistics ======\n");
    mean_unc p_diff = mean_and_uncertainty(kld->sum_p_diff, kld->sum_p_diff2, kld->count);
    fprintf(f, "Mean    Δp: %6.3lf ± %5.3lf %%\n", 100.0 * p_diff.f, 100.0 * p_diff.df);
    fprintf(f, "Maximum Δp: %6.3lf%%\n", 100.0 * p_diff_values[n - 1]);
    fprintf(f, "99.9%%   Δp: %6.3lf%%\n", 100.0 * percentile(p_diff_values, n, 0.999f));
    fprintf(f, "99.0%%   Δp: %6.3lf%%\n", 100.0 * percentile(p_diff_values, n, 0.990f));
    fprintf(f, "95.0%%   Δp: %6.3lf%%\n", 100.0 * percentile(p_diff_values, n, 0.950f));
    fprintf(f, "90.0%%   Δp: %6.3lf%%\n", 100.0 * percentile(p_diff_values, n, 0.900f));
    fprintf(f, "75.0%%   Δp: %6.3lf%%\n", 100.0 * percentile(p_diff_values, n, 0.750f));
    fprintf(f, "Median  Δp: %6.3lf%%\n", 100.0 * median(p_diff_values, n));
    fprintf(f, "25.0%%   Δp: %6.3lf%%\n", 100.0 * percentile(p_diff_values, n, 0.250f));
    fprintf(f, "10.0%%   Δp: %6.3lf%%\n", 100.0 * percentile(p_diff_values, n, 0.100f));
    fprintf(f, " 5.0%%   Δp: %6.3lf%%\n", 100.0 * percentile(p_diff_values, n, 0.050f));
    fprintf(f, " 1.0%%   Δp: %6.3lf%%\n", 100.0 * percentile(p_diff_values, n, 0.010f));
    fprintf(f, " 0.1%%   Δp: %6.3lf%%\n", 100.0 * percentile(p_diff_values, n, 0.001f));
    fprintf(f, "Minimum Δp: %6.3lf%%\n", 100.0 * p_diff_values[0]);
    mean_unc p_diff_mse = mean_and_uncertainty(kld->sum_p_diff2, kld->sum_p_diff4, kld->count);
    const double p_diff_rms_val = sqrt(p_diff_mse.f);
    const double p_diff_rms_unc = 0.5 / p_diff_rms_val * p_diff_mse.df;
    fprintf(f, "RMS Δp    : %6.3lf ± %5.3lf %%\n", 100.0 * p_diff_rms_val, 100.0 * p_diff_rms_unc);
    const double same_top_p = 1.0 * kld->n_same_top / kld->count;
    fprintf(f, "Same top p: %6.3lf ± %5.3lf %%\n", 100.0 * same_top_p,
            100.0 * sqrt(same_top_p * (1.0 - same_top_p) / (kld->count - 1)));
}

int cll_logits_file_open(cll_logits_file *lf, const char *path) {
    memset(lf, 0, sizeof *lf);
    lf->f = fopen(path, "rb");
    if (!lf->f) {
        fprintf(stderr, "cllama perplexity: cannot open %s\n", path);
        return -1;
    }
    struct stat st;
    char magic[8];
    int32_t hdr[3];
    if (fstat(fileno(lf->f), &st) != 0 || fread(magic, 1, 8, lf->f) != 8 || memcmp(magic, "_logits_", 8) != 0) {
        fprintf(stderr, "cllama perplexity: %s does not look like a file containing log-probabilities\n", path);
        goto fail;
    }
    if (fread(hdr, sizeof(int32_t), 3, lf->f) != 3) {
        fprintf(stderr, "cllama perplexity: %s: failed reading n_ctx, n_vocab, n_chunk\n", path);
        goto fail;
    }
    lf->n_ctx = hdr[0];
    lf->n_vocab = hdr[1];
    lf->n_chunk = hdr[2];
    if (lf->n_ctx < 4 || lf->n_ctx > (1 << 20) || lf->n_vocab < 1 || lf->n_vocab > (1 << 24) || lf->n_chunk < 1) {
        fprintf(stderr, "cllama perplexity: %s: bad header (n_ctx %d, n_vocab %d, n_chunk %d)\n", path, lf->n_ctx,
                lf->n_vocab, lf->n_chunk);
        goto fail;
    }
    const uint64_t rows = (uint64_t)(lf->n_ctx - 1 - lf->n_ctx / 2);
    const uint64_t want = 20 + (uint64_t)lf->n_chunk * (uint64_t)lf->n_ctx * 4 +
                          (uint64_t)lf->n_chunk * rows * (uint64_t)cll_ppl_row_words(lf->n_vocab) * 2;
    if ((uint64_t)st.st_size != want) {
        fprintf(stderr,
                "cllama perplexity: %s: %lld bytes, but n_ctx %d, n_vocab %d and %d chunks make %llu "
                "(truncated or not a llama-perplexity logits file)\n",
                path, (long long)st.st_size, lf->n_ctx, lf->n_vocab, lf->n_chunk, (unsigned long long)want);
        goto fail;
    }
    size_t nt = (size_t)lf->n_chunk * (size_t)lf->n_ctx;
    lf->tokens = malloc(nt * sizeof(int32_t));
    if (!lf->tokens || fread(lf->tokens, sizeof(int32_t), nt, lf->f) != nt) {
        fprintf(stderr, "cllama perplexity: failed reading evaluation tokens from %s\n", path);
        goto fail;
    }
    for (size_t i = 0; i < nt; i++)
        if (lf->tokens[i] < 0 || lf->tokens[i] >= lf->n_vocab) {
            fprintf(stderr, "cllama perplexity: %s: token %zu is %d, outside the vocab (%d)\n", path, i,
                    lf->tokens[i], lf->n_vocab);
            goto fail;
        }
    return 0;
fail:
    cll_logits_file_close(lf);
    return -1;
}

void cll_logits_file_close(cll_logits_file *lf) {
    if (lf->f) fclose(lf->f);
    free(lf->tokens);
    memset(lf, 0, sizeof *lf);
}
