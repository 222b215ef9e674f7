/* placeholder until the run command lands: says so instead of pretending */
#include <stdio.h>
#include "cli/cli.h"
int cll_cmd_run(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "cllama: 'run' is not built yet\n");
    return 2;
}
