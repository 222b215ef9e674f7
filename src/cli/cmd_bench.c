/* placeholder until the bench command lands: says so instead of pretending */
#include <stdio.h>
#include "cli/cli.h"
int cll_cmd_bench(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "cllama: 'bench' is not built yet\n");
    return 2;
}
