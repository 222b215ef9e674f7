/* cli/perplexity: `cllama perplexity -m MODEL -f TEXT [-c 512] [-b 2048] [--chunks N] ...` —
 * llama.cpp's llama-perplexity protocol through the public API: the text is tokenized whole
 * (with BOS as the vocab adds it), cut into chunks of n_ctx tokens, each chunk decoded from an
 * empty cache with its first token replaced by BOS (when the model adds BOS), and -log p of the
 * next token accumulated in double over the second half of each chunk. n_batch / n_ctx chunks
 * run side by side as sequences of one batch, as llama.cpp does. --kl-divergence-base FILE
 * alone saves the scored rows in llama.cpp's base-logits format; with --kl-divergence it reads
 * such a file and prints llama.cpp's KL-divergence report (the tokens come from the file). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <math.h>

#include "cli/cli.h"
#include "cli/perplexity.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: cllama perplexity [-m MODEL] -f TEXT [-c 512] [-b 2048] [--chunks N] [-t N]\n"
            "                         [--backend cpu|cuda] [--numerics default|ggml] [--kv f16|f32] [--tp N]\n"
            "                         [--kl-divergence-base FILE [--kl-divergence]] [--save-logits FILE]\n"
            "  -f TEXT       the text file to score (one trailing newline is dropped, as llama.cpp does)\n"
            "  -c N          tokens per chunk (default 512); the second half of each chunk is scored\n"
            "  -b N          tokens per batch (default 2048); b >= c runs b/c chunks side by side\n"
            "  --chunks N    score at most N chunks (default: all the text holds)\n"
            "  -t N          CPU threads (default: physical cores)\n"
            "  --save-logits FILE, --kl-divergence-base FILE (without --kl-divergence)\n"
            "                save the scored log-probabilities in llama-perplexity's base-logits format\n"
            "  --kl-divergence  with --kl-divergence-base FILE: score the tokens stored in FILE and print\n"
            "                the KL divergence of this model's distributions from the stored ones\n"
            "  --numerics ggml  llama.cpp's CPU numerics bit for bit (see `cllama run --help`)\n"
            CLL_CLI_SPLIT_USAGE "  (a split's perplexity is the check that it computes the model: it should equal the unsplit one)\n");
    cll_cli_print_default(f, CLL_CLI_JOB_TEXT);
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    while (b) {
        size_t k = fread(b + n, 1, cap - n, f);
        n += k;
        if (n < cap) break;
        char *nb = realloc(b, cap * 2 + 1);
        if (!nb) {
            free(b);
            b = NULL;
            break;
        }
        b = nb;
        cap *= 2;
    }
    if (b && ferror(f)) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) b[n] = 0;
    *len = n;
    return b;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The evaluation loop shared by PPL and KLD: it decodes chunk groups and hands every scored
 * row (logits, next token, sequence of the group) to a consumer, in llama.cpp's row order
 * (sequence-major within a group, positions ascending). */
typedef struct {
    cllama_context *c;
    int32_t n_ctx, n_batch, n_seq, n_vocab;
    bool add_bos;
    cllama_token bos;
    int32_t out_cap; /* logits rows one cllama_decode may ask for (the context's budget) */
    cllama_token *tok; /* (n_batch) */
    int32_t *pos, *seq; /* (n_batch) */
    int8_t *want;       /* (n_batch) */
    int32_t *row_seq, *row_tgt; /* (n_batch): per batch index, the consumer's seq and target */
} ppl_eval;

typedef int (*row_fn)(void *user, int32_t seq, const float *logits, int32_t target);

/* decode b[0..n) in pieces that each ask for at most out_cap rows, feeding rows as they come */
static int decode_piecewise(ppl_eval *ev, int32_t n, row_fn fn, void *user) {
    int32_t s = 0;
    while (s < n) {
        int32_t e = s, outs = 0;
        while (e < n && (outs + (ev->want[e] ? 1 : 0)) <= ev->out_cap) outs += ev->want[e++] ? 1 : 0;
        cllama_batch b = {.n_tokens = e - s, .tokens = ev->tok + s, .pos = ev->pos + s, .seq_id = ev->seq + s,
                          .logits = ev->want + s};
        cllama_status st = cllama_decode(ev->c, &b);
        if (st == CLLAMA_ERR_RANGE && outs > 1) { /* the context holds fewer rows than we guessed */
            ev->out_cap = outs / 2;
            continue;
        }
        if (st != CLLAMA_OK) {
            fprintf(stderr, "cllama perplexity: decode failed: %s\n", cllama_last_error());
            return -1;
        }
        for (int32_t i = s; i < e; i++) {
            if (!ev->want[i]) continue;
            const float *lg = cllama_get_logits(ev->c, i - s);
            if (!lg) {
                fprintf(stderr, "cllama perplexity: no logits: %s\n", cllama_last_error());
                return -1;
            }
            if (fn(user, ev->row_seq[i], lg, ev->row_tgt[i])) return -1;
        }
        s = e;
    }
    return 0;
}

/* one group of chunks [i, i + n_seq_batch) of tokens (n_ctx each); rows go to fn */
static int eval_group(ppl_eval *ev, const cllama_token *tokens, int i, int n_seq_batch, row_fn fn, void *user) {
    const int32_t n_ctx = ev->n_ctx, n_batch = ev->n_batch, first = n_ctx / 2;
    const int32_t num_batches = (n_ctx + n_batch - 1) / n_batch;
    const int32_t start = i * n_ctx, end = start + n_ctx;
    for (int32_t s = 0; s < n_seq_batch; s++)
        if (cllama_seq_truncate(ev->c, s, 0) != CLLAMA_OK) {
            fprintf(stderr, "cllama perplexity: %s\n", cllama_last_error());
            return -1;
        }
    for (int32_t j = 0; j < num_batches; ++j) {
        const int32_t batch_start = start + j * n_batch;
        const int32_t batch_size = end - batch_start < n_batch ? end - batch_start : n_batch;
        int32_t n = 0;
        for (int32_t s = 0; s < n_seq_batch; s++) {
            const int32_t seq_start = batch_start + s * n_ctx;
            for (int32_t k = 0; k < batch_size; ++k) {
                const int32_t pos = j * n_batch + k;
                ev->tok[n] = (ev->add_bos && j == 0 && k == 0) ? ev->bos : tokens[seq_start + k];
                ev->pos[n] = pos;
                ev->seq[n] = s;
                /* the last position has no next token to score: llama.cpp computes its logits and
                 * drops them; asking for them would only cost a row */
                ev->want[n] = pos >= first && pos < n_ctx - 1;
                ev->row_seq[n] = s;
                ev->row_tgt[n] = pos < n_ctx - 1 ? tokens[seq_start + k + 1] : -1;
                n++;
            }
        }
        if (decode_piecewise(ev, n, fn, user)) return -1;
    }
    return 0;
}

/* ---- perplexity ---------------------------------------------------------------------- */
typedef struct {
    int32_t n_vocab, rows_per_chunk;
    double *nll, *nll2; /* (n_seq) this group's sums per sequence */
    FILE *save;         /* base-logits output or NULL */
    uint16_t *row;      /* (cll_ppl_row_words) */
    /* KLD */
    cll_logits_file *base;
    uint16_t *base_rows; /* (n_seq, rows_per_chunk, row words) this group's stored rows */
    int32_t *row_i;      /* (n_seq) rows consumed per sequence this group */
    cll_kld_sums *ks;    /* (n_seq) */
    float *kld_values, *p_diff_values; /* (n_chunk * rows_per_chunk) */
    size_t n_values;
    size_t *seq_value0; /* (n_seq) where each sequence's values start */
} ppl_acc;

static int ppl_row(void *user, int32_t seq, const float *lg, int32_t target) {
    ppl_acc *a = user;
    double v;
    if (a->save) {
        v = cll_ppl_nll_store(lg, a->n_vocab, a->row, target);
        if (fwrite(a->row, sizeof(uint16_t), (size_t)cll_ppl_row_words(a->n_vocab), a->save) !=
            (size_t)cll_ppl_row_words(a->n_vocab)) {
            fprintf(stderr, "cllama perplexity: writing the logits file failed\n");
            return -1;
        }
    } else {
        v = cll_ppl_nll(lg, a->n_vocab, target);
    }
    a->nll[seq] += v;
    a->nll2[seq] += v * v;
    return 0;
}

static int kld_row(void *user, int32_t seq, const float *lg, int32_t target) {
    ppl_acc *a = user;
    const size_t words = (size_t)cll_ppl_row_words(a->n_vocab);
    const int32_t r = a->row_i[seq]++;
    const uint16_t *base = a->base_rows + ((size_t)seq * a->rows_per_chunk + r) * words;
    float p_diff;
    const size_t at = a->seq_value0[seq] + r;
    a->kld_values[at] = (float)cll_kld_row(lg, a->n_vocab, base, target, &a->ks[seq], &p_diff);
    a->p_diff_values[at] = p_diff;
    return 0;
}

static void print_eta(const char *fn, double t_total, int n_chunk, int n_seq) {
    int total_seconds = (int)(t_total * n_chunk / n_seq);
    fprintf(stderr, "%s: %.2f seconds per pass - ETA ", fn, t_total);
    if (total_seconds >= 60 * 60) {
        fprintf(stderr, "%d hours ", total_seconds / (60 * 60));
        total_seconds = total_seconds % (60 * 60);
    }
    fprintf(stderr, "%.2f minutes\n", total_seconds / 60.0);
}

int cll_cmd_perplexity(int argc, char **argv) {
    const char *model_arg = NULL, *text_path = NULL, *logits_path = NULL;
    bool kl_divergence = false;
    int n_ctx = 512, n_batch = 2048, n_chunks = -1;
    cllama_model_params mp = cllama_model_default_params();
    cll_cli_split split = {0};
    cllama_context_params cp = cllama_context_default_params();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VALUE()                                                                   \
    do {                                                                               \
        if (!v) {                                                                      \
            fprintf(stderr, "cllama perplexity: %s needs a value\n", a);               \
            return 2;                                                                  \
        }                                                                              \
        i++;                                                                           \
    } while (0)
#define NEED_INT(dst, lo)                                                                              \
    do {                                                                                               \
        NEED_VALUE();                                                                                  \
        char *e_;                                                                                      \
        long x_ = strtol(v, &e_, 10);                                                                  \
        if (!*v || *e_ || x_ < (lo) || x_ > (1L << 24)) {                                              \
            fprintf(stderr, "cllama perplexity: %s takes an integer >= %d, not '%s'\n", a, (int)(lo), v); \
            return 2;                                                                                  \
        }                                                                                              \
        dst = (int)x_;                                                                                 \
    } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            NEED_VALUE();
            model_arg = v;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
            NEED_VALUE();
            text_path = v;
        } else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) {
            NEED_INT(n_ctx, 4);
        } else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) {
            NEED_INT(n_batch, 1);
        } else if (!strcmp(a, "--chunks")) {
            NEED_INT(n_chunks, 1);
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            NEED_INT(cp.n_threads, 1);
        } else if (!strcmp(a, "--backend")) {
            NEED_VALUE();
            if (cll_cli_parse_backend("perplexity", v, &mp.backend)) return 2;
        } else if (!strcmp(a, "--numerics")) {
            NEED_VALUE();
            if (cll_cli_parse_numerics("perplexity", v, &mp.numerics)) return 2;
        } else if (!strcmp(a, "--tp") || !strcmp(a, "--devices") || !strcmp(a, "--gpu-mem-limit")) {
            NEED_VALUE();
            if (cll_cli_parse_split("perplexity", a, v, &split) < 0) return 2;
        } else if (!strcmp(a, "--kv")) {
            NEED_VALUE();
            if (cll_cli_parse_kv("perplexity", v, &cp.kv_type)) return 2;
        } else if (!strcmp(a, "--kl-divergence-base") || !strcmp(a, "--save-all-logits") ||
                   !strcmp(a, "--save-logits")) {
            NEED_VALUE();
            if (logits_path && strcmp(logits_path, v)) {
                fprintf(stderr, "cllama perplexity: one logits file only (%s and %s)\n", logits_path, v);
                return 2;
            }
            logits_path = v;
        } else if (!strcmp(a, "--kl-divergence")) {
            kl_divergence = true;
        } else {
            fprintf(stderr, "cllama perplexity: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
#undef NEED_INT
#undef NEED_VALUE
    }
    if (kl_divergence && !logits_path) {
        fprintf(stderr, "cllama perplexity: --kl-divergence needs --kl-divergence-base FILE (the base model's "
                        "log-probabilities, written by --save-logits)\n");
        return 2;
    }
    if (!kl_divergence && !text_path) {
        fprintf(stderr, "cllama perplexity: -f TEXT is required (the text to score)\n");
        usage(stderr);
        return 2;
    }

    /* the base file first: a bad file fails before a model loads */
    cll_logits_file base = {0};
    if (kl_divergence) {
        if (cll_logits_file_open(&base, logits_path)) return 1;
        n_ctx = base.n_ctx;
    }
    size_t text_len = 0;
    char *text = NULL;
    if (!kl_divergence) {
        text = read_file(text_path, &text_len);
        if (!text) {
            fprintf(stderr, "cllama perplexity: cannot read %s\n", text_path);
            return 1;
        }
        if (text_len && text[text_len - 1] == '\n') text[--text_len] = 0; /* as llama.cpp's -f */
    }

    /* llama.cpp: n_seq = max(1, n_batch / n_ctx) chunks side by side; n_batch = min(n_batch, n_seq * n_ctx) */
    const int n_seq = n_batch / n_ctx > 1 ? n_batch / n_ctx : 1;
    if (n_batch > n_seq * n_ctx) n_batch = n_seq * n_ctx;

    int rc = 1;
    char defpath[4096];
    cllama_model *m = NULL;
    cllama_context *c = NULL;
    cllama_token *tokens = NULL;
    FILE *save = NULL;
    ppl_eval ev = {0};
    ppl_acc acc = {0};
    const char *path = cll_cli_model_or_default("perplexity", CLL_CLI_JOB_TEXT, model_arg, defpath, sizeof defpath);
    if (!path) goto out;
    mp.progress = isatty(2);
    if (cll_cli_split_apply("perplexity", &split, &mp)) return 2;
    if (cllama_model_load(path, &mp, &m) != CLLAMA_OK) {
        fprintf(stderr, "cllama perplexity: %s\n", cllama_last_error());
        goto out;
    }
    const int32_t n_vocab = cllama_model_n_vocab(m);
    if (kl_divergence && base.n_vocab != n_vocab) {
        fprintf(stderr, "cllama perplexity: inconsistent vocabulary (%d in %s vs %d in the model)\n", base.n_vocab,
                logits_path, n_vocab);
        goto out;
    }
    if (n_seq * n_ctx > cllama_model_n_ctx_train(m))
        fprintf(stderr, "perplexity: warning: model was trained on only %d context tokens (%d specified)\n",
                cllama_model_n_ctx_train(m), n_seq * n_ctx);
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_seq_max = (uint32_t)n_seq;
    cp.n_batch = (uint32_t)n_batch;
    if (cllama_context_create(m, &cp, &c) != CLLAMA_OK) {
        fprintf(stderr, "cllama perplexity: %s\n", cllama_last_error());
        goto out;
    }

    int n_chunk;
    if (kl_divergence) {
        tokens = base.tokens;
        n_chunk = base.n_chunk;
        if (n_chunks > 0 && n_chunks < n_chunk) n_chunk = n_chunks;
    } else {
        fprintf(stderr, "perplexity: tokenizing the input ..\n");
        const double t0 = now_s();
        int32_t nt = 0;
        cllama_status st = cllama_tokenize(m, text, text_len, true, false, NULL, 0, &nt);
        if (st != CLLAMA_OK && st != CLLAMA_ERR_RANGE) {
            fprintf(stderr, "cllama perplexity: %s\n", cllama_last_error());
            goto out;
        }
        tokens = malloc(((size_t)nt + 1) * sizeof *tokens);
        if (!tokens || cllama_tokenize(m, text, text_len, true, false, tokens, nt, &nt) != CLLAMA_OK) {
            fprintf(stderr, "cllama perplexity: tokenizing %s failed: %s\n", text_path, cllama_last_error());
            goto out;
        }
        fprintf(stderr, "perplexity: tokenization took %g ms\n", 1e3 * (now_s() - t0));
        if (nt < 2 * n_ctx) {
            fprintf(stderr, "cllama perplexity: you need at least %d tokens to evaluate perplexity with a context of %d\n",
                    2 * n_ctx, n_ctx);
            fprintf(stderr, "cllama perplexity: the data file you provided tokenizes to only %d tokens\n", nt);
            goto out;
        }
        const int n_chunk_max = nt / n_ctx;
        n_chunk = n_chunks < 0 ? n_chunk_max : (n_chunks < n_chunk_max ? n_chunks : n_chunk_max);
    }

    const int32_t first = n_ctx / 2, rows = n_ctx - 1 - first;
    const size_t words = (size_t)cll_ppl_row_words(n_vocab);
    ev = (ppl_eval){.c = c, .n_ctx = n_ctx, .n_batch = n_batch, .n_seq = n_seq, .n_vocab = n_vocab,
                    .add_bos = cllama_add_bos(m), .bos = cllama_token_bos(m)};
    /* the context keeps a fixed budget of logits rows (64 MiB of them); a bigger ask is
     * split into more decodes, and decode_piecewise halves this guess should it be too big */
    ev.out_cap = (int32_t)((64u << 20) / ((size_t)n_vocab * sizeof(float)));
    if (ev.out_cap < n_seq) ev.out_cap = n_seq;
    if (ev.out_cap < 1) ev.out_cap = 1;
    if (ev.add_bos && ev.bos < 0) {
        fprintf(stderr, "cllama perplexity: the model adds BOS but has no BOS token\n");
        goto out;
    }
    ev.tok = malloc((size_t)n_batch * sizeof *ev.tok);
    ev.pos = malloc((size_t)n_batch * sizeof *ev.pos);
    ev.seq = malloc((size_t)n_batch * sizeof *ev.seq);
    ev.want = malloc((size_t)n_batch);
    ev.row_seq = malloc((size_t)n_batch * sizeof *ev.row_seq);
    ev.row_tgt = malloc((size_t)n_batch * sizeof *ev.row_tgt);
    acc.n_vocab = n_vocab;
    acc.rows_per_chunk = rows;
    acc.nll = calloc((size_t)n_seq, sizeof *acc.nll);
    acc.nll2 = calloc((size_t)n_seq, sizeof *acc.nll2);
    if (!ev.tok || !ev.pos || !ev.seq || !ev.want || !ev.row_seq || !ev.row_tgt || !acc.nll || !acc.nll2) {
        fprintf(stderr, "cllama perplexity: out of memory\n");
        goto out;
    }
    if (kl_divergence) {
        acc.base = &base;
        acc.base_rows = malloc((size_t)n_seq * rows * words * sizeof(uint16_t));
        acc.row_i = calloc((size_t)n_seq, sizeof *acc.row_i);
        acc.ks = calloc((size_t)n_seq, sizeof *acc.ks);
        acc.seq_value0 = calloc((size_t)n_seq, sizeof *acc.seq_value0);
        acc.kld_values = malloc((size_t)n_chunk * rows * sizeof(float));
        acc.p_diff_values = malloc((size_t)n_chunk * rows * sizeof(float));
        if (!acc.base_rows || !acc.row_i || !acc.ks || !acc.seq_value0 || !acc.kld_values || !acc.p_diff_values) {
            fprintf(stderr, "cllama perplexity: out of memory\n");
            goto out;
        }
    } else if (logits_path) {
        save = fopen(logits_path, "wb");
        if (!save) {
            fprintf(stderr, "cllama perplexity: failed to open %s for writing\n", logits_path);
            goto out;
        }
        fprintf(stderr, "perplexity: saving all logits to %s\n", logits_path);
        const int32_t hdr[3] = {n_ctx, n_vocab, n_chunk};
        acc.save = save;
        acc.row = calloc(words, sizeof(uint16_t));
        if (fwrite("_logits_", 1, 8, save) != 8 || fwrite(hdr, sizeof hdr[0], 3, save) != 3 ||
            fwrite(tokens, sizeof *tokens, (size_t)n_chunk * n_ctx, save) != (size_t)n_chunk * n_ctx || !acc.row) {
            fprintf(stderr, "cllama perplexity: writing %s failed\n", logits_path);
            goto out;
        }
    }

    const char *fn = kl_divergence ? "kl_divergence" : "perplexity";
    fprintf(stderr, "%s: %s over %d chunks, n_ctx=%d, batch_size=%d, n_seq=%d\n", fn,
            kl_divergence ? "computing" : "calculating perplexity", n_chunk, n_ctx, n_batch, n_seq);
    double nll = 0.0, nll2 = 0.0;
    int count = 0;
    cll_kld_sums ks = {0};
    for (int i = 0; i < n_chunk; i += n_seq) {
        const int n_seq_batch = n_seq < n_chunk - i ? n_seq : n_chunk - i;
        const double t0 = now_s();
        for (int s = 0; s < n_seq_batch; s++) acc.nll[s] = acc.nll2[s] = 0.0;
        if (kl_divergence) {
            const size_t want_words = (size_t)n_seq_batch * rows * words;
            if (fread(acc.base_rows, sizeof(uint16_t), want_words, base.f) != want_words) {
                fprintf(stderr, "cllama perplexity: failed reading log-probs for chunk %d\n", i);
                goto out;
            }
            for (int s = 0; s < n_seq_batch; s++) {
                acc.row_i[s] = 0;
                acc.ks[s] = (cll_kld_sums){0};
                acc.seq_value0[s] = (size_t)(i + s) * rows;
            }
        }
        if (eval_group(&ev, tokens, i, n_seq_batch, kl_divergence ? kld_row : ppl_row, &acc)) goto out;
        if (i == 0) {
            print_eta(fn, now_s() - t0, n_chunk, n_seq);
            if (kl_divergence) cll_kld_print_header(stdout);
        }
        for (int s = 0; s < n_seq_batch; s++) {
            if (kl_divergence) {
                cll_kld_merge(&ks, &acc.ks[s]);
                cll_kld_print_chunk(stdout, i + s + 1, &ks);
            } else {
                nll += acc.nll[s];
                nll2 += acc.nll2[s];
                count += rows;
                printf("[%d]%.4lf,", i + s + 1, exp(nll / count));
            }
        }
        fflush(stdout);
    }
    printf("\n");
    if (kl_divergence) {
        cll_kld_print_final(stdout, &ks, acc.kld_values, acc.p_diff_values, (size_t)n_chunk * rows);
    } else {
        nll2 /= count;
        nll /= count;
        const double ppl = exp(nll);
        nll2 -= nll * nll;
        if (nll2 > 0) {
            nll2 = sqrt(nll2 / (count - 1));
            printf("Final estimate: PPL = %.4lf +/- %.5lf\n", ppl, nll2 * ppl);
        } else {
            fprintf(stderr, "cllama perplexity: unexpected negative standard deviation of log(prob)\n");
            goto out;
        }
    }
    if (save && fflush(save) != 0) {
        fprintf(stderr, "cllama perplexity: writing %s failed\n", logits_path);
        goto out;
    }
    rc = 0;
out:
    if (save && fclose(save) != 0 && rc == 0) {
        fprintf(stderr, "cllama perplexity: writing %s failed\n", logits_path);
        rc = 1;
    }
    free(ev.tok);
    free(ev.pos);
    free(ev.seq);
    free(ev.want);
    free(ev.row_seq);
    free(ev.row_tgt);
    free(acc.nll);
    free(acc.nll2);
    free(acc.row);
    free(acc.base_rows);
    free(acc.row_i);
    free(acc.ks);
    free(acc.seq_value0);
    free(acc.kld_values);
    free(acc.p_diff_values);
    if (tokens != base.tokens) free(tokens);
    cll_logits_file_close(&base);
    free(text);
    cllama_context_free(c);
    cllama_model_free(m);
    return rc;
}
