/* placeholder until the tokenize command lands: says so instead of pretending */
#include <stdio.h>
#include "cli/cli.h"
int cll_cmd_tokenize(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "cllama: 'tokenize' is not built yet\n");
    return 2;
}
