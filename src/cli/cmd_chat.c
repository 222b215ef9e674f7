/* cli/cmd_chat: `cllama chat` — a multi-turn REPL over the model's chat template.
 * Each turn renders the whole conversation, tokenizes it, and prefills only the tokens past
 * the part already in the KV cache (the common prefix with what was decoded before), so the
 * cache is kept between turns. Ctrl-D (end of input) quits; works with piped stdin. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cllama.h"

typedef struct {
    char *text; /* the assistant's reply being generated */
    size_t n, cap;
    cllama_token *ids; /* ids generated this turn */
    int32_t n_ids, cap_ids;
    char pend[8]; /* incomplete UTF-8 held back from stdout */
    size_t n_pend;
} turn;

static bool on_token(cllama_token t, const char *piece, size_t len, void *user) {
    turn *r = user;
    if (r->n + len + 1 > r->cap) {
        size_t cap = (r->n + len + 1) * 2;
        char *p = realloc(r->text, cap);
        if (!p) return false;
        r->text = p;
        r->cap = cap;
    }
    memcpy(r->text + r->n, piece, len);
    r->n += len;
    r->text[r->n] = 0;
    if (r->n_ids == r->cap_ids) {
        int32_t cap = r->cap_ids ? 2 * r->cap_ids : 256;
        cllama_token *p = realloc(r->ids, sizeof *p * (size_t)cap);
        if (!p) return false;
        r->ids = p;
        r->cap_ids = cap;
    }
    r->ids[r->n_ids++] = t;
    /* print up to the last complete UTF-8 character */
    size_t end = r->n, start = r->n - len - r->n_pend;
    size_t ok = end;
    for (size_t back = 1; back <= 4 && back <= end - start; back++) {
        unsigned char c = (unsigned char)r->text[end - back];
        if ((c & 0xC0) == 0x80) continue;
        size_t need = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
        if (need > back) ok = end - back;
        break;
    }
    fwrite(r->text + start, 1, ok - start, stdout);
    r->n_pend = end - ok;
    fflush(stdout);
    return true;
}

int cll_cmd_chat(int argc, char **argv) {
    const char *model_arg = NULL, *system = NULL;
    int32_t n_predict = 512;
    cllama_sampler_params sp = cllama_sampler_default_params();
    cllama_context_params cp = cllama_context_default_params();
    cllama_model_params mp = cllama_model_default_params();
    bool seed_given = false;
    cll_cli_split split = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: cllama chat [-m MODEL] [--system TEXT] [-n N] [--temp T] [--top-k K] [--top-p P]\n"
                   "                   [--min-p P] [--repeat-penalty R] [--seed S] [-t THREADS] [-c CTX]\n"
                   "                   [--backend cpu|cuda] [--tp N] [--devices LIST] [--gpu-mem-limit SIZE]\n"
                   "Type a message and press Enter; Ctrl-D quits. Works with piped stdin (one message a line).\n"
                   "  --temp 0    greedy (argmax)\n" CLL_CLI_SPLIT_USAGE);
            cll_cli_print_default(stdout, CLL_CLI_JOB_CHAT);
            return 0;
        }
        if (!v) {
            fprintf(stderr, "cllama chat: unknown option or missing value: '%s'\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) model_arg = v;
        else if (!strcmp(a, "--system")) system = v;
        else if (!strcmp(a, "-n")) n_predict = atoi(v);
        else if (!strcmp(a, "--temp")) sp.temperature = strtof(v, NULL);
        else if (!strcmp(a, "--top-k")) sp.top_k = atoi(v);
        else if (!strcmp(a, "--top-p")) sp.top_p = strtof(v, NULL);
        else if (!strcmp(a, "--min-p")) sp.min_p = strtof(v, NULL);
        else if (!strcmp(a, "--repeat-penalty")) sp.repeat_penalty = strtof(v, NULL);
        else if (!strcmp(a, "--seed")) sp.seed = strtoull(v, NULL, 0), seed_given = true;
        else if (!strcmp(a, "-t")) cp.n_threads = atoi(v);
        else if (!strcmp(a, "-c")) cp.n_ctx = (uint32_t)atoi(v);
        else if (!strcmp(a, "--backend")) {
            if (cll_cli_parse_backend("chat", v, &mp.backend)) return 2;
        } else if (!strcmp(a, "--tp") || !strcmp(a, "--devices") || !strcmp(a, "--gpu-mem-limit")) {
            if (cll_cli_parse_split("chat", a, v, &split) < 0) return 2;
        } else {
            fprintf(stderr, "cllama chat: unknown option '%s'\n", a);
            return 2;
        }
    }
    if (!seed_given) sp.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    char defpath[4096];
    const char *path = cll_cli_model_or_default("chat", CLL_CLI_JOB_CHAT, model_arg, defpath, sizeof defpath);
    if (!path) return 1;
    const bool tty = isatty(0);
    int rc = 1;
    cllama_model *m = NULL;
    cllama_context *c = NULL;
    cllama_sampler *s = NULL;
    cllama_chat_message *msgs = NULL;
    size_t n_msgs = 0, cap_msgs = 0;
    char *line = NULL, *rendered = NULL;
    size_t line_cap = 0;
    cllama_token *ids = NULL, *cached = NULL;
    int32_t n_cached = 0, cap_cached = 0;
    mp.progress = isatty(2);
    if (cll_cli_split_apply("chat", &split, &mp)) return 2;
    if (cllama_model_load(path, &mp, &m) != CLLAMA_OK || cllama_context_create(m, &cp, &c) != CLLAMA_OK ||
        cllama_sampler_create(&sp, cllama_model_n_vocab(m), &s) != CLLAMA_OK) {
        fprintf(stderr, "cllama chat: %s\n", cllama_last_error());
        goto done;
    }
    const cllama_token bos = cllama_token_bos(m);
    if (tty) fprintf(stderr, "cllama chat: %s, template %s. Ctrl-D quits.\n", cllama_model_desc(m), cllama_chat_template_name(m));
    if (system) {
        msgs = malloc(sizeof *msgs * (cap_msgs = 16));
        if (!msgs) goto done;
        msgs[n_msgs++] = (cllama_chat_message){"system", strdup(system)};
    }
    for (;;) {
        if (tty) {
            fprintf(stderr, "> ");
            fflush(stderr);
        }
        ssize_t len = getline(&line, &line_cap, stdin);
        if (len < 0) break;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (len == 0) continue;
        if (n_msgs + 2 > cap_msgs) {
            cap_msgs = cap_msgs ? 2 * cap_msgs : 16;
            cllama_chat_message *p = realloc(msgs, sizeof *p * cap_msgs);
            if (!p) goto done;
            msgs = p;
        }
        msgs[n_msgs++] = (cllama_chat_message){"user", strdup(line)};
        int64_t need = cllama_chat_apply(m, msgs, n_msgs, true, NULL, 0);
        if (need < 0) {
            fprintf(stderr, "cllama chat: chat template: %s\n", cllama_last_error());
            goto done;
        }
        free(rendered);
        rendered = malloc((size_t)need + 1);
        if (!rendered) goto done;
        cllama_chat_apply(m, msgs, n_msgs, true, rendered, need + 1);
        int32_t n = 0;
        cllama_tokenize(m, rendered, (size_t)need, true, true, NULL, 0, &n);
        free(ids);
        ids = malloc(sizeof *ids * (size_t)(n + 1));
        if (!ids || cllama_tokenize(m, rendered, (size_t)need, true, true, ids, n, &n) != CLLAMA_OK) {
            fprintf(stderr, "cllama chat: tokenize: %s\n", cllama_last_error());
            goto done;
        }
        /* a template that writes the BOS text and a tokenizer that adds BOS give two: keep one */
        if (n >= 2 && bos >= 0 && ids[0] == bos && ids[1] == bos) {
            memmove(ids, ids + 1, sizeof *ids * (size_t)(n - 1));
            n--;
        }
        /* reuse the cached prefix; always prefill at least one token to get fresh logits */
        int32_t common = 0;
        while (common < n_cached && common < n - 1 && cached[common] == ids[common]) common++;
        cllama_seq_truncate(c, 0, common);
        turn t = {0};
        cllama_generate_stats st;
        cllama_status gs = cllama_generate_tokens(c, 0, ids + common, n - common, true, n_predict, s, on_token, &t, &st);
        if (t.n_pend) fwrite(t.text + t.n - t.n_pend, 1, t.n_pend, stdout);
        printf("\n");
        fflush(stdout);
        if (gs != CLLAMA_OK) {
            fprintf(stderr, "cllama chat: %s\n", cllama_last_error());
            free(t.text);
            free(t.ids);
            goto done;
        }
        /* the cache now holds ids[0..n) and the generated ids except the last one sampled */
        int32_t total = n + t.n_ids;
        if (total > cap_cached) {
            cap_cached = total * 2;
            cllama_token *p = realloc(cached, sizeof *p * (size_t)cap_cached);
            if (!p) goto done;
            cached = p;
        }
        memcpy(cached, ids, sizeof *ids * (size_t)n);
        if (t.n_ids > 0) memcpy(cached + n, t.ids, sizeof *ids * (size_t)t.n_ids);
        n_cached = cllama_seq_len(c, 0);
        if (n_cached > total) n_cached = total;
        if (tty)
            fprintf(stderr, "[prefill %d tokens %.1f tok/s, %d generated %.1f tok/s]\n", st.n_prompt,
                    st.prefill_s > 0 ? st.n_prompt / st.prefill_s : 0.0, st.n_gen,
                    st.decode_s > 0 ? st.n_gen / st.decode_s : 0.0);
        msgs[n_msgs++] = (cllama_chat_message){"assistant", t.text ? t.text : strdup("")};
        free(t.ids);
    }
    rc = 0;
done:
    for (size_t i = 0; i < n_msgs; i++) free((char *)msgs[i].content);
    free(msgs);
    free(line);
    free(rendered);
    free(ids);
    free(cached);
    cllama_sampler_free(s);
    cllama_context_free(c);
    cllama_model_free(m);
    return rc;
}
