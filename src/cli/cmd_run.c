/* cli/cmd_run: `cllama run` — generate a continuation of a prompt, streaming text as it is
 * produced (incomplete UTF-8 held back), or printing the prompt and generated ids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cllama.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: cllama run [-m MODEL] [-p PROMPT] [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p P]\n"
            "                  [--repeat-penalty R] [--repeat-last-n N] [--seed S] [-t THREADS] [-c CTX]\n"
            "                  [--kv f16|f32] [--numerics default|ggml] [--backend cpu|cuda] [--print-ids]\n"
            "                  [--print-margins]\n"
            "                  [--tune SIDECAR] [--pin SITE=VARIANT[,...]]\n"
            "  -p PROMPT   text to continue (default: read stdin)\n"
            "  -n N        tokens to generate (default 128; -1 = until end of generation / context)\n"
            "  --temp 0    greedy (argmax)\n"
            "  --numerics ggml  reproduce llama.cpp's CPU numerics bit for bit (weight repack off, flash\n"
            "              attention, F16 KV, one token per decode): greedy ids token-exact with llama.cpp,\n"
            "              slower prefill (env CLLAMA_NUMERICS=ggml does the same)\n"
            "  --backend cuda  run the whole model on the GPU (default: env CLLAMA_BACKEND, else cpu)\n"
            CLL_CLI_SPLIT_USAGE
            "  --print-ids print 'prompt: <ids>' and 'generated: <ids>' instead of text\n"
            "  --print-margins  with --temp 0: --print-ids plus 'margins: <m>', each step's best logit minus\n"
            "              its second best (where two runs, TP=1 and TP=2 or CPU and GPU, part, the margin at\n"
            "              that step says whether numeric noise explains it)\n"
            "  --tune F    apply the tune sidecar F (default: env CLLAMA_TUNE, else this box's sidecar, else its\n"
            "              class defaults; 'none': the built-ins); see `cllama tune doctor`\n"
            "  --pin S=V   run kernel variant V at site S (e.g. cpu/gemv/q4_K=<row of `cllama kernels`>;\n"
            "              env CLLAMA_PIN); a variant the site does not have is an error\n");
    cll_cli_print_default(f, CLL_CLI_JOB_TEXT);
}

/* emit the longest prefix of buf that ends on a UTF-8 character boundary; keep the rest */
typedef struct {
    char buf[512];
    size_t n;
} utf8_out;

static size_t complete_prefix(const char *s, size_t n) {
    /* look back at most 3 bytes for a lead byte whose sequence is not complete yet */
    for (size_t back = 1; back <= 4 && back <= n; back++) {
        const unsigned char c = (unsigned char)s[n - back];
        if ((c & 0xC0) == 0x80) continue; /* continuation byte */
        size_t need = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
        return need > back ? n - back : n;
    }
    return n;
}

static void out_put(utf8_out *o, const char *p, size_t len) {
    while (len > 0) {
        size_t k = len < sizeof o->buf - o->n ? len : sizeof o->buf - o->n;
        memcpy(o->buf + o->n, p, k);
        o->n += k;
        p += k;
        len -= k;
        size_t ok = complete_prefix(o->buf, o->n);
        if (ok == 0 && o->n == sizeof o->buf) ok = o->n; /* garbage: do not stall */
        fwrite(o->buf, 1, ok, stdout);
        memmove(o->buf, o->buf + ok, o->n - ok);
        o->n -= ok;
    }
    fflush(stdout);
}

typedef struct {
    bool print_ids;
    utf8_out out;
    int32_t *ids;
    int32_t n, cap;
} run_state;

static bool on_token(cllama_token t, const char *piece, size_t len, void *user) {
    run_state *r = user;
    if (r->print_ids) {
        if (r->n == r->cap) {
            int32_t cap = r->cap ? 2 * r->cap : 256;
            int32_t *p = realloc(r->ids, sizeof *p * (size_t)cap);
            if (!p) return false;
            r->ids = p;
            r->cap = cap;
        }
        r->ids[r->n++] = t;
    } else {
        out_put(&r->out, piece, len);
    }
    return true;
}

static char *read_all(FILE *f) {
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    if (!b) return NULL;
    size_t k;
    while ((k = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (n + 1 == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                return NULL;
            }
            b = nb;
        }
    }
    b[n] = 0;
    return b;
}

/* --print-margins: the greedy continuation with each step's margin (best logit minus the second best,
 * from cllama_decode_topk's two candidates: on a GPU only those cross the bus). The prompt goes in
 * chunks of the context's batch, the last token asking for output; then one token a step. Prints
 * 'prompt:', 'generated:' (the ids --print-ids prints) and 'margins:' lines. */
static int run_margins(cllama_context *c, const cllama_model *m, const cllama_token *ids, int32_t n, int32_t n_predict,
                       uint32_t n_ctx) {
    const int32_t nb = (int32_t)cllama_n_batch(c);
    const int32_t room = (int32_t)n_ctx - n + 1; /* the last token sampled needs no cell */
    const int32_t want = n_predict < 0 || n_predict > room ? room : n_predict;
    int32_t *pos = malloc(sizeof *pos * (size_t)(nb > 0 ? nb : 1)), *seq = calloc((size_t)(nb > 0 ? nb : 1), sizeof *seq);
    int8_t *lg = calloc((size_t)(nb > 0 ? nb : 1), 1);
    cllama_token *gen = malloc(sizeof *gen * (size_t)(want > 0 ? want : 1));
    float *mg = malloc(sizeof *mg * (size_t)(want > 0 ? want : 1));
    int rc = 1, ng = 0;
    if (!pos || !seq || !lg || !gen || !mg) {
        fprintf(stderr, "cllama run: out of memory\n");
        goto out;
    }
    cllama_token top[2], cur = 0;
    float tl[2];
    for (int32_t i0 = 0; i0 < n; i0 += nb) {
        const int32_t k = n - i0 < nb ? n - i0 : nb;
        for (int32_t j = 0; j < k; j++) pos[j] = i0 + j, lg[j] = 0;
        const bool last = i0 + k == n;
        lg[k - 1] = last;
        const cllama_batch b = {.n_tokens = k, .tokens = ids + i0, .pos = pos, .seq_id = seq, .logits = lg};
        if ((last ? cllama_decode_topk(c, &b, 2, top, tl) : cllama_decode(c, &b)) != CLLAMA_OK) {
            fprintf(stderr, "cllama run: %s\n", cllama_last_error());
            goto out;
        }
        lg[k - 1] = 0;
    }
    /* the same stops as cllama_generate_tokens: an end-of-generation token ends it unprinted, and a full
     * context after its last token */
    for (ng = 0; ng < want;) {
        cur = top[0];
        if (cllama_token_is_eog(m, cur)) break;
        gen[ng] = cur;
        mg[ng++] = tl[0] - tl[1];
        if (ng == want || (uint32_t)(n + ng - 1) >= n_ctx) break;
        const int32_t p = n + ng - 1;
        const int8_t one = 1;
        const cllama_batch b = {.n_tokens = 1, .tokens = &cur, .pos = &p, .seq_id = seq, .logits = &one};
        if (cllama_decode_topk(c, &b, 2, top, tl) != CLLAMA_OK) {
            fprintf(stderr, "cllama run: %s\n", cllama_last_error());
            goto out;
        }
    }
    printf("prompt:");
    for (int32_t i = 0; i < n; i++) printf(" %d", ids[i]);
    printf("\ngenerated:");
    for (int32_t i = 0; i < ng; i++) printf(" %d", gen[i]);
    printf("\nmargins:");
    for (int32_t i = 0; i < ng; i++) printf(" %.4f", (double)mg[i]);
    printf("\n");
    fflush(stdout);
    rc = 0;
out:
    free(pos), free(seq), free(lg), free(gen), free(mg);
    return rc;
}

int cll_cmd_run(int argc, char **argv) {
    const char *model_arg = NULL, *prompt = NULL, *tune = NULL, *pin = NULL;
    int32_t n_predict = 128;
    cllama_sampler_params sp = cllama_sampler_default_params();
    cllama_context_params cp = cllama_context_default_params();
    cllama_model_params mp = cllama_model_default_params();
    bool print_ids = false, print_margins = false, seed_given = false;
    cll_cli_split split = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VALUE()                                                     \
    do {                                                                 \
        if (!v) {                                                        \
            fprintf(stderr, "cllama run: %s needs a value\n", a);        \
            return 2;                                                    \
        }                                                                \
        i++;                                                             \
    } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            NEED_VALUE();
            model_arg = v;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) {
            NEED_VALUE();
            prompt = v;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) {
            NEED_VALUE();
            n_predict = atoi(v);
        } else if (!strcmp(a, "--temp")) {
            NEED_VALUE();
            sp.temperature = strtof(v, NULL);
        } else if (!strcmp(a, "--top-k")) {
            NEED_VALUE();
            sp.top_k = atoi(v);
        } else if (!strcmp(a, "--top-p")) {
            NEED_VALUE();
            sp.top_p = strtof(v, NULL);
        } else if (!strcmp(a, "--min-p")) {
            NEED_VALUE();
            sp.min_p = strtof(v, NULL);
        } else if (!strcmp(a, "--repeat-penalty")) {
            NEED_VALUE();
            sp.repeat_penalty = strtof(v, NULL);
        } else if (!strcmp(a, "--repeat-last-n")) {
            NEED_VALUE();
            sp.repeat_last_n = atoi(v);
        } else if (!strcmp(a, "--seed") || !strcmp(a, "-s")) {
            NEED_VALUE();
            sp.seed = strtoull(v, NULL, 0);
            seed_given = true;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            NEED_VALUE();
            cp.n_threads = atoi(v);
        } else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) {
            NEED_VALUE();
            cp.n_ctx = (uint32_t)atoi(v);
        } else if (!strcmp(a, "--kv")) {
            NEED_VALUE();
            if (cll_cli_parse_kv("run", v, &cp.kv_type)) return 2;
        } else if (!strcmp(a, "--numerics")) {
            NEED_VALUE();
            if (cll_cli_parse_numerics("run", v, &mp.numerics)) return 2;
        } else if (!strcmp(a, "--backend")) {
            NEED_VALUE();
            if (cll_cli_parse_backend("run", v, &mp.backend)) return 2;
        } else if (!strcmp(a, "--tp") || !strcmp(a, "--devices") || !strcmp(a, "--gpu-mem-limit")) {
            NEED_VALUE();
            if (cll_cli_parse_split("run", a, v, &split) < 0) return 2;
        } else if (!strcmp(a, "--print-ids")) {
            print_ids = true;
        } else if (!strcmp(a, "--print-margins")) {
            print_margins = true;
        } else if (!strcmp(a, "--tune")) {
            NEED_VALUE();
            tune = v;
        } else if (!strcmp(a, "--pin")) {
            NEED_VALUE();
            pin = v;
        } else {
            fprintf(stderr, "cllama run: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
#undef NEED_VALUE
    }
    if (print_margins && sp.temperature > 0) {
        fprintf(stderr, "cllama run: --print-margins prints a greedy run's margins: add --temp 0\n");
        return 2;
    }
    if (!seed_given) sp.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    char defpath[4096];
    const char *path = cll_cli_model_or_default("run", CLL_CLI_JOB_TEXT, model_arg, defpath, sizeof defpath);
    if (!path) return 1;
    char *owned_prompt = NULL;
    if (!prompt) {
        owned_prompt = read_all(stdin);
        if (!owned_prompt) {
            fprintf(stderr, "cllama run: cannot read the prompt from stdin\n");
            return 1;
        }
        prompt = owned_prompt;
    }
    int rc = 1;
    cllama_model *m = NULL;
    cllama_context *c = NULL;
    cllama_sampler *s = NULL;
    cllama_token *ids = NULL;
    run_state rs = {.print_ids = print_ids};
    mp.progress = isatty(2);
    if (cll_cli_split_apply("run", &split, &mp)) {
        free(owned_prompt);
        return 2;
    }
    if (cll_cli_apply_tune("run", mp.backend, tune, pin, NULL)) {
        free(owned_prompt);
        return 2;
    }
    if (cllama_model_load(path, &mp, &m) != CLLAMA_OK) {
        fprintf(stderr, "cllama run: %s\n", cllama_last_error());
        goto done;
    }
    int32_t n = 0;
    const size_t plen = strlen(prompt);
    cllama_tokenize(m, prompt, plen, true, true, NULL, 0, &n);
    ids = malloc(sizeof *ids * (size_t)(n > 0 ? n : 1));
    if (!ids || cllama_tokenize(m, prompt, plen, true, true, ids, n, &n) != CLLAMA_OK) {
        fprintf(stderr, "cllama run: tokenize: %s\n", cllama_last_error());
        goto done;
    }
    if (n == 0) {
        fprintf(stderr, "cllama run: the prompt is empty\n");
        goto done;
    }
    if (cp.n_ctx == 0) {
        uint32_t train = (uint32_t)cllama_model_n_ctx_train(m);
        uint32_t want = (uint32_t)n + (n_predict > 0 ? (uint32_t)n_predict : 0) + 1;
        cp.n_ctx = train < 4096 ? train : 4096;
        if (cp.n_ctx < want) cp.n_ctx = want;
    }
    if (cllama_context_create(m, &cp, &c) != CLLAMA_OK || cllama_sampler_create(&sp, cllama_model_n_vocab(m), &s) != CLLAMA_OK) {
        fprintf(stderr, "cllama run: %s\n", cllama_last_error());
        goto done;
    }
    if (print_margins) {
        if (cllama_sampler_topk_need(s) != 1) { /* penalties move the choice off the raw logits' best */
            fprintf(stderr, "cllama run: --print-margins prints a plain greedy run's margins: drop the penalties\n");
            rc = 2;
            goto done;
        }
        rc = run_margins(c, m, ids, n, n_predict, cllama_n_ctx(c));
        goto done;
    }
    cllama_generate_stats st;
    if (cllama_generate_tokens(c, 0, ids, n, false, n_predict, s, on_token, &rs, &st) != CLLAMA_OK) {
        fprintf(stderr, "\ncllama run: %s\n", cllama_last_error());
        goto done;
    }
    if (print_ids) {
        printf("prompt:");
        for (int32_t i = 0; i < n; i++) printf(" %d", ids[i]);
        printf("\ngenerated:");
        for (int32_t i = 0; i < rs.n; i++) printf(" %d", rs.ids[i]);
        printf("\n");
    } else {
        fwrite(rs.out.buf, 1, rs.out.n, stdout);
        printf("\n");
    }
    fflush(stdout);
    fprintf(stderr, "prefill: %d tokens in %.3f s (%.2f tok/s) | decode: %d tokens in %.3f s (%.2f tok/s)%s\n",
            st.n_prompt, st.prefill_s, st.prefill_s > 0 ? st.n_prompt / st.prefill_s : 0.0, st.n_gen, st.decode_s,
            st.decode_s > 0 ? st.n_gen / st.decode_s : 0.0, st.stopped_eog ? " | stopped at end of generation" : "");
    rc = 0;
done:
    free(rs.ids);
    free(ids);
    free(owned_prompt);
    cllama_sampler_free(s);
    cllama_context_free(c);
    cllama_model_free(m);
    return rc;
}
