/* cli/tokenize: `cllama tokenize [-m MODEL] [--bos] [--special] [--pieces] [TEXT]` —
 * prints the token ids of TEXT (or of all of stdin, newlines kept) on one line,
 * space-separated. No BOS/EOS unless --bos (then as the vocab adds them); control
 * tokens are recognised in the text only with --special. Works on vocab-only files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tokenizer/tokenizer.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: cllama tokenize [-m MODEL] [--bos] [--special] [--pieces] [TEXT]\n"
            "  prints the token ids of TEXT (or of stdin when TEXT is absent) on one line\n"
            "  -m MODEL    GGUF file (a vocab-only file is enough; default below)\n"
            "  --bos       add BOS/EOS as the model's metadata says\n"
            "  --special   recognise control-token text such as <start_of_turn> in the input\n"
            "  --pieces    also print each token's text on a second line\n");
    cll_cli_print_default(f, CLL_CLI_JOB_TEXT);
}

static char *read_all(FILE *f, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    while (b) {
        size_t k = fread(b + n, 1, cap - n, f);
        n += k;
        if (n < cap) break;
        char *nb = realloc(b, cap * 2);
        if (!nb) { free(b); return NULL; }
        b = nb;
        cap *= 2;
    }
    *len = n;
    return b;
}

int cll_cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *text = NULL;
    bool bos = false, special = false, pieces = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) {
            if (++i >= argc) { fprintf(stderr, "cllama tokenize: -m needs a file\n"); return 2; }
            model = argv[i];
        } else if (!strcmp(argv[i], "--bos")) bos = true;
        else if (!strcmp(argv[i], "--special")) special = true;
        else if (!strcmp(argv[i], "--pieces")) pieces = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return 0; }
        else if (!strcmp(argv[i], "--")) { if (i + 1 < argc) text = argv[i + 1]; break; }
        else if (argv[i][0] == '-' && argv[i][1]) { fprintf(stderr, "cllama tokenize: unknown option %s\n", argv[i]); usage(stderr); return 2; }
        else if (!text) text = argv[i];
        else { fprintf(stderr, "cllama tokenize: one TEXT only (quote it)\n"); return 2; }
    }
    char pbuf[4096];
    const char *path = cll_cli_model_or_default("tokenize", CLL_CLI_JOB_TEXT, model, pbuf, sizeof pbuf);
    if (!path) return 1;

    size_t len = 0;
    char *owned = NULL;
    if (text) len = strlen(text);
    else {
        owned = read_all(stdin, &len);
        if (!owned) { fprintf(stderr, "cllama tokenize: cannot read stdin\n"); return 1; }
        text = owned;
    }
    cll_gguf *g = NULL;
    cll_tokenizer *t = NULL;
    int rc = 1;
    int32_t *ids = NULL, n = 0;
    if (cll_gguf_open(path, &g) != CLL_OK || cll_tok_create(g, &t) != CLL_OK) {
        fprintf(stderr, "cllama tokenize: %s: %s\n", path, cll_last_error());
        goto out;
    }
    cll_status st = cll_tok_encode(t, text, len, bos, special, NULL, 0, &n);
    if (st != CLL_OK && st != CLL_ERR_RANGE) { fprintf(stderr, "cllama tokenize: %s\n", cll_last_error()); goto out; }
    ids = malloc(((size_t)n + 1) * sizeof *ids);
    if (!ids || cll_tok_encode(t, text, len, bos, special, ids, n, &n) != CLL_OK) {
        fprintf(stderr, "cllama tokenize: %s\n", cll_last_error());
        goto out;
    }
    for (int32_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
    printf("\n");
    if (pieces) {
        for (int32_t i = 0; i < n; i++) {
            char p[256];
            int32_t k = cll_tok_piece(t, ids[i], p, sizeof p, true);
            printf("%s[%.*s]", i ? " " : "", k < (int32_t)sizeof p ? k : (int)sizeof p, p);
        }
        printf("\n");
    }
    rc = 0;
out:
    free(ids);
    cll_tok_free(t);
    cll_gguf_free(g);
    free(owned);
    return rc;
}
