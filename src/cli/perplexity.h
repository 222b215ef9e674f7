/* cli/perplexity: the per-token math and the base-logits file of `cllama perplexity`,
 * written to match llama.cpp's tools/perplexity/perplexity.cpp expression for expression
 * (float where it uses float, double where it uses double), so our numbers and our files
 * are interchangeable with llama-perplexity's. Owns nothing beyond the caller's buffers.
 * Rule: every file read is checked against the file size; a bad file is a clear error. */
#ifndef CLL_CLI_PERPLEXITY_H
#define CLL_CLI_PERPLEXITY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* uint16 words per stored row: 2 floats (scale, min log-prob) + n_vocab words, padded even */
static inline int32_t cll_ppl_row_words(int32_t n_vocab) { return 2 * ((n_vocab + 1) / 2) + 4; }

/* -log p(tok) of one logits row, as llama.cpp's plain log_softmax */
double cll_ppl_nll(const float *logits, int32_t n_vocab, int32_t tok);
/* the same row stored compactly into out (cll_ppl_row_words words); returns -log p(tok) as
 * llama.cpp's saving path computes it (float) */
double cll_ppl_nll_store(const float *logits, int32_t n_vocab, uint16_t *out, int32_t tok);

/* running sums of the KL-divergence report (llama.cpp's kl_divergence_result) */
typedef struct {
    double sum_nll, sum_nll2, sum_nll_base, sum_nll_base2, sum_nll_nll_base;
    double sum_kld, sum_kld2, sum_p_diff, sum_p_diff2, sum_p_diff4;
    float max_p_diff;
    size_t n_same_top, count;
} cll_kld_sums;

/* one row against its stored base row: adds to s, returns the row's KLD, *p_diff its Δp */
double cll_kld_row(const float *logits, int32_t n_vocab, const uint16_t *base, int32_t tok, cll_kld_sums *s,
                   float *p_diff);
void cll_kld_merge(cll_kld_sums *into, const cll_kld_sums *s);
/* the running line per chunk and the header before the first one */
void cll_kld_print_header(FILE *f);
void cll_kld_print_chunk(FILE *f, int chunk, const cll_kld_sums *s);
/* the final statistics (sorts kld[] and p_diff[] in place); prints nothing under 100 tokens */
void cll_kld_print_final(FILE *f, const cll_kld_sums *s, float *kld, float *p_diff, size_t n);

/* base-logits file: "_logits_", int32 n_ctx, int32 n_vocab, int32 n_chunk,
 * int32 tokens[n_chunk * n_ctx], then per chunk (n_ctx - 1 - n_ctx/2) rows of
 * cll_ppl_row_words(n_vocab) uint16 words (all little-endian, as llama.cpp writes it) */
typedef struct {
    FILE *f;
    int32_t n_ctx, n_vocab, n_chunk;
    int32_t *tokens; /* (n_chunk * n_ctx) */
} cll_logits_file;

/* opens and validates (sizes against the file length); prints "cllama perplexity: ..." and
 * returns -1 on failure */
int cll_logits_file_open(cll_logits_file *lf, const char *path);
void cll_logits_file_close(cll_logits_file *lf);

#endif
