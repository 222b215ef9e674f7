/* cli: the `cllama` command. One file per subcommand (cmd_<name>.c) with an entry
 * int cll_cmd_<name>(int argc, char **argv) (argv[0] is the subcommand name).
 * Rule: commands print one clear error line and return non-zero on failure. */
#ifndef CLL_CLI_H
#define CLL_CLI_H

#include <stdbool.h>
#include <stddef.h>

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

/* The default model: $CLLAMA_MODEL if set, else the Gemma-3-270M Q4_K_M in
 * $XDG_CACHE_HOME/cllama/models/ (installed by scripts/setup.sh). Returns 0 and fills
 * buf, or prints an error telling the user how to get it and returns -1. */
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

/* model path from -m if given, else the default */
const char *cll_cli_model_or_default(const char *given, char *buf, size_t cap);

#endif
