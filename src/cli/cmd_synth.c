/* placeholder until the synth command lands: says so instead of pretending */
#include <stdio.h>
#include "cli/cli.h"
int cll_cmd_synth(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "cllama: 'synth' is not built yet\n");
    return 2;
}
