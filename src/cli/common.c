/* cli/common: helpers shared by the subcommands (default model lookup). */
#include "cli/cli.h"
#include "tune/tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CLL_DEFAULT_MODEL_FILE "gemma-3-270m-q4_k_m.gguf"

int cll_cli_default_model(char *buf, size_t cap) {
    const char *env = getenv("CLLAMA_MODEL");
    if (env && *env) {
        snprintf(buf, cap, "%s", env);
        return 0;
    }
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(buf, cap, "%s/cllama/models/%s", xdg, CLL_DEFAULT_MODEL_FILE);
    else
        snprintf(buf, cap, "%s/.cache/cllama/models/%s", home ? home : ".", CLL_DEFAULT_MODEL_FILE);
    struct stat st;
    if (stat(buf, &st) != 0) {
        fprintf(stderr,
                "cllama: no model given and the default model is not installed (%s).\n"
                "        run scripts/setup.sh to install it, or pass -m FILE.gguf\n",
                buf);
        return -1;
    }
    return 0;
}

const char *cll_cli_model_or_default(const char *given, char *buf, size_t cap) {
    if (given) return given;
    return cll_cli_default_model(buf, cap) == 0 ? buf : NULL;
}

int cll_cli_int_list(const char *s, int *out, int max) {
    int n = 0;
    while (*s) {
        char *end;
        const long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > 1 << 20 || n == max) return -1;
        out[n++] = (int)v;
        if (*end && *end != ',') return -1;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

int cll_cli_parse_backend(const char *cmd, const char *value, cllama_backend *out) {
    if (value && !strcmp(value, "cpu")) *out = CLLAMA_BACKEND_CPU;
    else if (value && !strcmp(value, "cuda")) *out = CLLAMA_BACKEND_CUDA;
    else {
        fprintf(stderr, "cllama %s: --backend takes cpu or cuda, not '%s'\n", cmd, value ? value : "");
        return -1;
    }
    return 0;
}

int cll_cli_apply_tune(const char *cmd, cllama_backend backend, const char *tune, const char *pin, cll_tune_loaded *out) {
    const char *env = getenv("CLLAMA_BACKEND");
    const bool cuda = backend == CLLAMA_BACKEND_CUDA || (backend == CLLAMA_BACKEND_DEFAULT && env && !strcmp(env, "cuda"));
    if (cll_tune_load_for(cuda ? "cuda" : "cpu", tune, pin, out) != CLL_OK) {
        fprintf(stderr, "cllama %s: %s\n", cmd, cll_last_error());
        return -1;
    }
    return 0;
}

int cll_cli_parse_numerics(const char *cmd, const char *value, cllama_numerics *out) {
    if (value && !strcmp(value, "ggml")) *out = CLLAMA_NUMERICS_GGML;
    else if (value && !strcmp(value, "default")) *out = CLLAMA_NUMERICS_DEFAULT;
    else {
        fprintf(stderr, "cllama %s: --numerics takes default or ggml, not '%s'\n", cmd, value ? value : "");
        return -1;
    }
    return 0;
}

int cll_cli_parse_kv(const char *cmd, const char *value, cllama_kv_type *out) {
    if (value && !strcmp(value, "f32")) *out = CLLAMA_KV_F32;
    else if (value && !strcmp(value, "f16")) *out = CLLAMA_KV_F16;
    else {
        fprintf(stderr, "cllama %s: --kv takes f16 or f32, not '%s'\n", cmd, value ? value : "");
        return -1;
    }
    return 0;
}
