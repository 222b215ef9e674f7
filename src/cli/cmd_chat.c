/* placeholder until the chat command lands: says so instead of pretending */
#include <stdio.h>
#include "cli/cli.h"
int cll_cmd_chat(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "cllama: 'chat' is not built yet\n");
    return 2;
}
