/* cli/main: `cllama <command> [args]` — dispatches to the subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cllama.h"

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} cmd;

static const cmd k_cmds[] = {
    {"run", cll_cmd_run, "generate a continuation of a prompt"},
    {"chat", cll_cmd_chat, "interactive chat with the model's template"},
    {"serve", cll_cmd_serve, "OpenAI-compatible HTTP server"},
    {"bench", cll_cmd_bench, "llama-bench compatible benchmark (pp512 / tg128)"},
    {"board", cll_cmd_board, "render / import / check the benchmark board"},
    {"perplexity", cll_cmd_perplexity, "llama-perplexity compatible PPL and KL divergence of a text"},
    {"info", cll_cmd_info, "print a GGUF file's model facts"},
    {"tokenize", cll_cmd_tokenize, "print the token ids of a text"},
    {"kernels", cll_cmd_kernels, "list the kernel registry (--backend cpu|cuda)"},
    {"tune", cll_cmd_tune, "race this box's kernel variants into its tune sidecar; tune doctor explains it"},
    {"synth", cll_cmd_synth, "write a random-weight GGUF of a real model shape"},
};

static void usage(FILE *f) {
    fprintf(f, "cllama %s — LLM inference for GGUF models\n\nusage: cllama <command> [options]\n\ncommands:\n",
            cllama_version());
    for (size_t i = 0; i < sizeof k_cmds / sizeof k_cmds[0]; i++)
        fprintf(f, "  %-9s %s\n", k_cmds[i].name, k_cmds[i].help);
    fprintf(f, "\ndefault models, when no -m is given ($CLLAMA_MODEL overrides both; `cllama info` says more):\n");
    const cll_cli_job jobs[] = {CLL_CLI_JOB_CHAT, CLL_CLI_JOB_TEXT};
    for (size_t i = 0; i < 2; i++) {
        char path[4096];
        const bool env = cll_cli_default_path(jobs[i], path, sizeof path);
        fprintf(f, "  %s:\n    %s%s\n", cll_cli_default_cmds(jobs[i]), path, env ? " ($CLLAMA_MODEL)" : "");
    }
    fprintf(f, "\n`cllama <command> --help` shows a command's options.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("cllama %s\n", cllama_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof k_cmds / sizeof k_cmds[0]; i++)
        if (!strcmp(argv[1], k_cmds[i].name)) return k_cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "cllama: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
