/* placeholder until the info command lands: says so instead of pretending */
#include <stdio.h>
#include "cli/cli.h"
int cll_cmd_info(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "cllama: 'info' is not built yet\n");
    return 2;
}
