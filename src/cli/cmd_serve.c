/* placeholder until the serve command lands: says so instead of pretending */
#include <stdio.h>
#include "cli/cli.h"
int cll_cmd_serve(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "cllama: 'serve' is not built yet\n");
    return 2;
}
