/* cli: the `cllama` command. One file per subcommand (cmd_<name>.c) with an entry
 * int cll_cmd_<name>(int argc, char **argv) (argv[0] is the subcommand name).
 * Rule: commands print one clear error line and return non-zero on failure. */
#ifndef CLL_CLI_H
#define CLL_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cllama.h"

int cll_cmd_info(int argc, char **argv);
int cll_cmd_tokenize(int argc, char **argv);
int cll_cmd_run(int argc, char **argv);
int cll_cmd_chat(int argc, char **argv);
int cll_cmd_kernels(int argc, char **argv);
int cll_cmd_bench(int argc, char **argv);
/* the batched bench (cmd_bench_batched.c): llama-batched-bench's -npp/-ntg/-npl protocol */
bool cll_cli_bench_is_batched(int argc, char **argv);
int cll_cmd_bench_batched(int argc, char **argv);
int cll_cmd_board(int argc, char **argv);
int cll_cmd_synth(int argc, char **argv);
int cll_cmd_serve(int argc, char **argv);
int cll_cmd_perplexity(int argc, char **argv);
int cll_cmd_tune(int argc, char **argv);

/* The default models, by job: a continuation takes a base model, a chat an instruction-tuned one.
 * Each lives in $XDG_CACHE_HOME/cllama/models/ (installed by scripts/setup.sh); $CLLAMA_MODEL, and
 * -m above it, override both. */
typedef enum {
    CLL_CLI_JOB_TEXT, /* run, bench, perplexity, tokenize, info: Gemma-3-270M Q4_K_M (base) */
    CLL_CLI_JOB_CHAT, /* chat, serve: SmolLM2-135M-Instruct Q4_1 (instruction-tuned, ChatML) */
} cll_cli_job;
/* the path a job's default resolves to, installed or not: true when it is $CLLAMA_MODEL */
bool cll_cli_default_path(cll_cli_job job, char *buf, size_t cap);
/* the job's default model in words, and the commands that use it */
const char *cll_cli_default_name(cll_cli_job job);
const char *cll_cli_default_cmds(cll_cli_job job);
/* a usage line (indented two spaces): the resolved path, what it is, whether it is installed */
void cll_cli_print_default(FILE *f, cll_cli_job job);
/* the job's default into buf: 0, or -1 after printing "cllama CMD: ..." (CMD may be NULL) saying which file is
 * missing and how to get it (a $CLLAMA_MODEL path is not checked here: the load names it) */
int cll_cli_default_model_for(const char *cmd, cll_cli_job job, char *buf, size_t cap);
/* the continuation default (CLL_CLI_JOB_TEXT), as the golden tests and `cllama info` use it */
int cll_cli_default_model(char *buf, size_t cap);
/* --backend VALUE: "cpu" or "cuda" into *out; prints "cllama CMD: ..." and returns -1 otherwise */
int cll_cli_parse_backend(const char *cmd, const char *value, cllama_backend *out);
/* a comma list of whole numbers 0..2^20 ("128,256") into out (at most max): the count, or -1 when
 * malformed or longer than max */
int cll_cli_int_list(const char *s, int *out, int max);
/* --numerics default|ggml and --kv f16|f32, the same way */
int cll_cli_parse_numerics(const char *cmd, const char *value, cllama_numerics *out);
/* pins (--pin SPEC, $CLLAMA_PIN: a variant outside the grid is an error) and the tune file of the
 * backend a load will use, before the load: --tune FILE, else $CLLAMA_TUNE ("none": the built-ins),
 * else this box's own sidecar, else its class defaults (tune/defaults), else the built-ins; problems
 * warn and fall back to the defaults. *out (may be NULL) says what applied (bench records' stamp).
 * 0, or -1 after printing the error. */
struct cll_tune_loaded; /* tune/tune.h */
int cll_cli_apply_tune(const char *cmd, cllama_backend backend, const char *tune, const char *pin, struct cll_tune_loaded *out);
int cll_cli_parse_kv(const char *cmd, const char *value, cllama_kv_type *out);

/* tensor parallel and device memory: --tp N, --devices 0,1,..., --gpu-mem-limit SIZE (bytes, or with a
 * K/M/G/T suffix in binary units: 40G) */
typedef struct {
    int32_t tp;           /* 0: not given */
    int32_t devices[16];
    int32_t n_devices;    /* 0: not given */
    uint64_t mem_limit;   /* 0: not given */
} cll_cli_split;
#define CLL_CLI_SPLIT_USAGE                                                                                   \
    "  --tp N            split the model over N ranks, tensor parallel (cuda: N GPUs over NCCL; cpu: host\n"   \
    "                    thread groups, the split-math check); N must divide the KV heads (the error lists\n" \
    "                    the counts that do)\n"                                                               \
    "  --devices 0,1     the GPUs of the ranks, in rank order (implies --tp with their count)\n"              \
    "  --gpu-mem-limit SIZE  device memory each GPU may give the model and its context (40G, 512M)\n"
/* 1 when opt is one of them (its value taken), 0 when it is not, -1 after printing why the value is bad */
int cll_cli_parse_split(const char *cmd, const char *opt, const char *value, cll_cli_split *s);
/* into model params: 0, or -1 after printing (a --tp that disagrees with the --devices count) */
int cll_cli_split_apply(const char *cmd, const cll_cli_split *s, cllama_model_params *mp);

/* model path from -m if given, else the job's default (NULL after printing why not) */
const char *cll_cli_model_or_default(const char *cmd, cll_cli_job job, const char *given, char *buf, size_t cap);

#endif
