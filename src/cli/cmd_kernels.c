/* placeholder until the kernels command lands: says so instead of pretending */
#include <stdio.h>
#include "cli/cli.h"
int cll_cmd_kernels(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "cllama: 'kernels' is not built yet\n");
    return 2;
}
