/* cli/cmd_synth: `cllama synth --shape NAME --type TYPE -o FILE [--layers N] [--seed S]`
 * writes a random-weight GGUF of a real model shape with llama.cpp's type mix;
 * `--layout` prints the per-tensor types instead (the format of anchors' mix-*.txt). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "cli/cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: cllama synth --shape NAME --type TYPE -o FILE [--layers N] [--seed S] [--quiet]\n"
            "       cllama synth --shape NAME --type TYPE --layout [--layers N]\n"
            "  shapes: %s\n  types:  %s\n",
            cll_bench_synth_shapes(), cll_bench_synth_types());
}

int cll_cmd_synth(int argc, char **argv) {
    cll_synth_opts o = {.shape = NULL, .type = "F16", .seed = 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if ((!strcmp(a, "--shape") || !strcmp(a, "-s")) && has) o.shape = argv[++i];
        else if ((!strcmp(a, "--type") || !strcmp(a, "-t")) && has) o.type = argv[++i];
        else if ((!strcmp(a, "-o") || !strcmp(a, "--out")) && has) o.out = argv[++i];
        else if (!strcmp(a, "--layers") && has) o.layers = atoi(argv[++i]);
        else if (!strcmp(a, "--seed") && has) o.seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--layout")) o.layout_only = true;
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) o.quiet = true;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "cllama synth: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!o.shape || (!o.out && !o.layout_only)) {
        fprintf(stderr, "cllama synth: --shape and -o FILE (or --layout) are required\n");
        usage(stderr);
        return 2;
    }
    if (o.layers < 0) {
        fprintf(stderr, "cllama synth: --layers must be positive\n");
        return 2;
    }
    if (cll_bench_synth(&o) != CLL_OK) {
        fprintf(stderr, "cllama synth: %s\n", cll_last_error());
        return 1;
    }
    return 0;
}
