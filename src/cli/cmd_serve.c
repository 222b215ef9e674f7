/* cli/cmd_serve: `cllama serve` — parses the flags and hands over to the HTTP server. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#ifdef CLLAMA_HAVE_SERVER
#include "server/server.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: cllama serve [-m MODEL] [options]\n"
            "  -m, --model FILE       GGUF model (default: $CLLAMA_MODEL, else the instruction-tuned model\n"
            "                         scripts/setup.sh installs, below)\n"
            "      --host ADDR        address to listen on (default 127.0.0.1)\n"
            "      --port N           port (default 8080; 0 = any free port)\n"
            "  -np, --parallel N      sequences decoded together (default 4)\n"
            "  -c, --ctx N            tokens of context per sequence (default: engine default)\n"
            "      --kv-cells N       a paged KV cache: one pool of N cells (blocks of 64) shared by the\n"
            "                         slots, each still up to --ctx; slots hold only the blocks they use,\n"
            "                         idle prefixes are dropped when room runs out, and a request that\n"
            "                         finds the pool full gets a 503 (default 0: --ctx cells per slot)\n"
            "      --backend cpu|cuda (default $CLLAMA_BACKEND, else cpu)\n"
            CLL_CLI_SPLIT_USAGE
            "  -t, --threads N        CPU threads (default: physical cores)\n"
            "      --max-body BYTES   request body limit, 413 beyond (default 1048576)\n"
            "      --queue N          waiting requests before 503 (default 64)\n"
            "      --model-alias NAME model id to serve (default: file name without .gguf)\n"
            "      --timeout S        idle seconds allowed while a request is being received (default 30)\n"
            "      --chunk N          prompt tokens per sequence per batched step (default 128)\n"
            "      --step-tokens N    most tokens one step carries: a token per generating slot plus prompt\n"
            "                         chunks of several slots (default: parallel + chunk, at least 512 on\n"
            "                         a GPU; a smaller N is raised to parallel + chunk)\n"
            "      --api-key KEY      require 'Authorization: Bearer KEY' on every endpoint but /health,\n"
            "                         the chat page at / and CORS preflights, else 401 (repeatable).\n"
            "                         Also $CLLAMA_API_KEY. A key on the command line shows in ps:\n"
            "                         prefer $CLLAMA_API_KEY or --api-key-file\n"
            "      --api-key-file FILE\n"
            "                         keys, one per line (blank lines and # comments skipped); every\n"
            "                         key of --api-key, the files and $CLLAMA_API_KEY is accepted\n"
            "      --ssl-cert-file FILE\n"
            "                         PEM certificate (chain): serve HTTPS (needs --ssl-key-file)\n"
            "      --ssl-key-file FILE\n"
            "                         the certificate's PEM private key (unencrypted)\n"
            "      --tune FILE        tune sidecar (default $CLLAMA_TUNE, else this box's sidecar, else its\n"
            "                         class defaults; 'none': the built-ins); see `cllama tune doctor`\n"
            "      --pin SITE=VARIANT[,...]\n"
            "                         run a kernel variant at a site ($CLLAMA_PIN too)\n");
    cll_cli_print_default(f, CLL_CLI_JOB_CHAT);
}

/* strict integer flag: the whole value must be a number in [lo, hi] */
static int int_arg(const char *flag, const char *v, long lo, long hi, long *out) {
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || x < lo || x > hi) {
        fprintf(stderr, "cllama serve: %s needs an integer in [%ld, %ld]\n", flag, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

static int serve(int argc, char **argv, cll_server_keys *keys) {
    cll_server_config cfg;
    cll_server_config_default(&cfg);
    const char *model = NULL, *tune = NULL, *pin = NULL;
    cll_cli_split split = {0};
    char err[1024];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x = 0;
#define FLAG(s, l) (!strcmp(a, s) || !strcmp(a, l))
        if (FLAG("-h", "--help")) {
            usage(stdout);
            return 0;
        } else if (FLAG("-m", "--model") && v) {
            model = v;
        } else if (!strcmp(a, "--host") && v) {
            cfg.host = v;
        } else if (!strcmp(a, "--model-alias") && v) {
            cfg.alias = v;
        } else if (!strcmp(a, "--backend") && v) {
            if (!strcmp(v, "cpu")) cfg.backend = CLLAMA_BACKEND_CPU;
            else if (!strcmp(v, "cuda")) cfg.backend = CLLAMA_BACKEND_CUDA;
            else {
                fprintf(stderr, "cllama serve: --backend must be cpu or cuda\n");
                return 2;
            }
        } else if (!strcmp(a, "--port")) {
            if (int_arg(a, v, 0, 65535, &x)) return 2;
            cfg.port = (int)x;
        } else if (FLAG("-np", "--parallel")) {
            if (int_arg(a, v, 1, 256, &x)) return 2;
            cfg.parallel = (int)x;
        } else if (FLAG("-c", "--ctx")) {
            if (int_arg(a, v, 0, 1 << 22, &x)) return 2;
            cfg.n_ctx = (int)x;
        } else if (!strcmp(a, "--kv-cells")) {
            if (int_arg(a, v, 0, 1L << 30, &x)) return 2;
            cfg.kv_cells = x;
        } else if (FLAG("-t", "--threads")) {
            if (int_arg(a, v, 0, 1024, &x)) return 2;
            cfg.threads = (int)x;
        } else if (!strcmp(a, "--max-body")) {
            if (int_arg(a, v, 1, 1L << 30, &x)) return 2;
            cfg.max_body = (size_t)x;
        } else if (!strcmp(a, "--queue")) {
            if (int_arg(a, v, 0, 1 << 16, &x)) return 2;
            cfg.queue = (int)x;
        } else if (!strcmp(a, "--timeout")) {
            if (int_arg(a, v, 1, 86400, &x)) return 2;
            cfg.timeout_s = (int)x;
        } else if (!strcmp(a, "--chunk")) {
            if (int_arg(a, v, 1, 4096, &x)) return 2;
            cfg.chunk = (int)x;
        } else if (!strcmp(a, "--step-tokens")) {
            if (int_arg(a, v, 1, 1 << 16, &x)) return 2;
            cfg.step_tokens = (int)x;
        } else if (!strcmp(a, "--api-key") && v) {
            if (cll_server_keys_add(keys, v, err, sizeof err)) {
                fprintf(stderr, "cllama serve: %s\n", err);
                return 2;
            }
        } else if (!strcmp(a, "--api-key-file") && v) {
            if (cll_server_keys_load_file(keys, v, err, sizeof err)) {
                fprintf(stderr, "cllama serve: %s\n", err);
                return 2;
            }
        } else if (!strcmp(a, "--ssl-cert-file") && v) {
            cfg.ssl_cert_file = v;
        } else if (!strcmp(a, "--ssl-key-file") && v) {
            cfg.ssl_key_file = v;
        } else if (!strcmp(a, "--tune") && v) {
            tune = v;
        } else if (!strcmp(a, "--pin") && v) {
            pin = v;
        } else if ((!strcmp(a, "--tp") || !strcmp(a, "--devices") || !strcmp(a, "--gpu-mem-limit")) && v) {
            if (cll_cli_parse_split("serve", a, v, &split) < 0) return 2;
        } else {
            fprintf(stderr, "cllama serve: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
#undef FLAG
        /* every option but --help takes a value */
        i++;
    }
    const char *env_key = getenv("CLLAMA_API_KEY");
    if (env_key && *env_key && cll_server_keys_add(keys, env_key, err, sizeof err)) {
        fprintf(stderr, "cllama serve: $CLLAMA_API_KEY: %s\n", err);
        return 2;
    }
    if (!cfg.ssl_cert_file != !cfg.ssl_key_file) {
        fprintf(stderr, "cllama serve: HTTPS needs both --ssl-cert-file and --ssl-key-file\n");
        return 2;
    }
    cfg.api_keys = keys;
    char buf[4096];
    cfg.model_path = cll_cli_model_or_default("serve", CLL_CLI_JOB_CHAT, model, buf, sizeof buf);
    if (!cfg.model_path) return 1;
    if (cll_cli_apply_tune("serve", cfg.backend, tune, pin, NULL)) return 2; /* before the model loads */
    cllama_model_params mp = cllama_model_default_params();
    if (cll_cli_split_apply("serve", &split, &mp)) return 2;
    cfg.tp = mp.tp;
    cfg.devices = mp.devices;
    cfg.device = mp.device;
    cfg.gpu_mem_limit = mp.gpu_mem_limit;
    return cll_server_run(&cfg);
}

int cll_cmd_serve(int argc, char **argv) {
    cll_server_keys keys = {0};
    int rc = serve(argc, argv, &keys);
    cll_server_keys_free(&keys);
    return rc;
}
#else
int cll_cmd_serve(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "cllama: this build has no server (configure with -DCLLAMA_SERVER=ON)\n");
    return 2;
}
#endif
