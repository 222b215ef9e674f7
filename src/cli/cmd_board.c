/* placeholder until the board command lands: says so instead of pretending */
#include <stdio.h>
#include "cli/cli.h"
int cll_cmd_board(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "cllama: 'board' is not built yet\n");
    return 2;
}
