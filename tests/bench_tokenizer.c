/* bench_tokenizer: tokens/s of cll_tok_encode on one core (a benchmark, not a test).
 * usage: bench_tokenizer MODEL.gguf TEXTFILE [reps]. Prints one line per model:
 * bytes, tokens, best and mean seconds, MB/s, tokens/s; checks decode(encode(x)) == x. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s MODEL.gguf TEXTFILE [reps]\n", argv[0]); return 2; }
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    cll_gguf *g;
    cll_tokenizer *t;
    if (cll_gguf_open(argv[1], &g) || cll_tok_create(g, &t)) { fprintf(stderr, "%s\n", cll_last_error()); return 1; }
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 1; }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n);
    if (fread(text, 1, (size_t)n, f) != (size_t)n) return 1;
    fclose(f);
    int32_t cap = (int32_t)n + 16, got = 0;
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    double best = 1e30, sum = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = cll_now();
        if (cll_tok_encode(t, text, (size_t)n, false, false, ids, cap, &got)) { fprintf(stderr, "%s\n", cll_last_error()); return 1; }
        double dt = cll_now() - t0;
        sum += dt;
        if (dt < best) best = dt;
    }
    char *back = malloc((size_t)n * 2 + 16);
    int64_t bl = cll_tok_decode(t, ids, got, back, (int64_t)n * 2 + 16, false);
    printf("%-40s %-22s %8ld bytes %8d tokens  best %.3f s  mean %.3f s  %6.2f MB/s  %9.0f tok/s  roundtrip %s\n",
           strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1], cll_tok_kind_name(t), n, got, best, sum / reps,
           n / best / 1e6, got / best, bl == n && !memcmp(back, text, (size_t)n) ? "exact" : "differs");
    free(back);
    free(ids);
    free(text);
    cll_tok_free(t);
    cll_gguf_free(g);
    return 0;
}
