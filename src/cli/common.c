/* cli/common: helpers shared by the subcommands (the default models by job, flag parsers). */
#include "cli/cli.h"
#include "tune/tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* the default model of each job (scripts/setup.sh installs both under these names). A chat needs an
 * instruction-tuned model: Gemma-3-270M is a base model and answers a chat with a continuation. */
static const struct {
    const char *file, *name, *cmds;
} k_default[] = {
    [CLL_CLI_JOB_TEXT] = {"gemma-3-270m-q4_k_m.gguf", "Gemma-3-270M Q4_K_M, a base model for continuations",
                          "run, bench, perplexity, tokenize, info"},
    [CLL_CLI_JOB_CHAT] = {"smollm2-135m-instruct-q4_1.gguf", "SmolLM2-135M-Instruct Q4_1, instruction-tuned",
                          "chat, serve"},
};

bool cll_cli_default_path(cll_cli_job job, char *buf, size_t cap) {
    const char *env = getenv("CLLAMA_MODEL");
    if (env && *env) {
        snprintf(buf, cap, "%s", env);
        return true;
    }
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (xdg && *xdg) snprintf(buf, cap, "%s/cllama/models/%s", xdg, k_default[job].file);
    else snprintf(buf, cap, "%s/.cache/cllama/models/%s", home ? home : ".", k_default[job].file);
    return false;
}

const char *cll_cli_default_name(cll_cli_job job) { return k_default[job].name; }
const char *cll_cli_default_cmds(cll_cli_job job) { return k_default[job].cmds; }

void cll_cli_print_default(FILE *f, cll_cli_job job) {
    char path[4096];
    struct stat st;
    const bool env = cll_cli_default_path(job, path, sizeof path);
    const bool here = stat(path, &st) == 0;
    if (env) fprintf(f, "  default model: %s ($CLLAMA_MODEL)%s\n", path, here ? "" : " (missing)");
    else
        fprintf(f, "  default model: %s\n                 (%s)%s\n", path, k_default[job].name,
                here ? "" : "; not installed: bash scripts/setup.sh installs it");
}

int cll_cli_default_model_for(const char *cmd, cll_cli_job job, char *buf, size_t cap) {
    if (cll_cli_default_path(job, buf, cap)) return 0; /* $CLLAMA_MODEL: the load names a missing file */
    struct stat st;
    if (stat(buf, &st) != 0) {
        /* no fallback to the other job's model: a base model in a chat answers with garbage */
        fprintf(stderr,
                "cllama%s%s: no model given and the default %smodel is not installed: %s\n"
                "        (%s). `bash scripts/setup.sh` installs it; or pass -m FILE.gguf\n",
                cmd ? " " : "", cmd ? cmd : "", job == CLL_CLI_JOB_CHAT ? "chat " : "", buf, k_default[job].name);
        return -1;
    }
    return 0;
}

int cll_cli_default_model(char *buf, size_t cap) { return cll_cli_default_model_for(NULL, CLL_CLI_JOB_TEXT, buf, cap); }

const char *cll_cli_model_or_default(const char *cmd, cll_cli_job job, const char *given, char *buf, size_t cap) {
    if (given) return given;
    return cll_cli_default_model_for(cmd, job, buf, cap) == 0 ? buf : NULL;
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

/* "40G", "512M", "1073741824": bytes (binary units), 0 when malformed */
static uint64_t parse_size(const char *v) {
    char *end;
    const double x = strtod(v, &end);
    if (end == v || !(x > 0)) return 0;
    double mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1024.0, end++; break;
    case 'm': case 'M': mul = 1024.0 * 1024, end++; break;
    case 'g': case 'G': mul = 1024.0 * 1024 * 1024, end++; break;
    case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024, end++; break;
    default: break;
    }
    if (mul > 1 && (*end == 'i' || *end == 'I')) end++;
    if (mul > 1 && (*end == 'b' || *end == 'B')) end++;
    if (*end || x * mul >= 1.8e19) return 0;
    return (uint64_t)(x * mul);
}

int cll_cli_parse_split(const char *cmd, const char *opt, const char *value, cll_cli_split *s) {
    if (!strcmp(opt, "--tp")) {
        char *end;
        const long n = value ? strtol(value, &end, 10) : 0;
        if (!value || *end || n < 1 || n > 16) {
            fprintf(stderr, "cllama %s: --tp takes a rank count from 1 to 16, not '%s'\n", cmd, value ? value : "");
            return -1;
        }
        s->tp = (int32_t)n;
        return 1;
    }
    if (!strcmp(opt, "--devices")) {
        int v[16];
        const int n = value ? cll_cli_int_list(value, v, 16) : -1;
        if (n < 1) {
            fprintf(stderr, "cllama %s: --devices takes a comma list of GPU ordinals (0,1), not '%s'\n", cmd,
                    value ? value : "");
            return -1;
        }
        for (int i = 0; i < n; i++) s->devices[i] = v[i];
        s->n_devices = n;
        return 1;
    }
    if (!strcmp(opt, "--gpu-mem-limit")) {
        const uint64_t b = value ? parse_size(value) : 0;
        if (!b) {
            fprintf(stderr, "cllama %s: --gpu-mem-limit takes a size (40G, 512M, or bytes), not '%s'\n", cmd,
                    value ? value : "");
            return -1;
        }
        s->mem_limit = b;
        return 1;
    }
    return 0;
}

int cll_cli_split_apply(const char *cmd, const cll_cli_split *s, cllama_model_params *mp) {
    if (s->n_devices && s->tp && s->tp != s->n_devices) {
        fprintf(stderr, "cllama %s: --tp %d but --devices lists %d GPUs\n", cmd, s->tp, s->n_devices);
        return -1;
    }
    mp->tp = s->tp ? s->tp : s->n_devices;
    mp->devices = s->n_devices ? s->devices : NULL;
    if (s->n_devices && !s->tp && s->n_devices == 1) { /* one listed GPU: no split, that device */
        mp->tp = 0;
        mp->device = s->devices[0];
        mp->devices = NULL;
    }
    mp->gpu_mem_limit = s->mem_limit;
    return 0;
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
