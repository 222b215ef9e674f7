/* cli/info: `cllama info [--json] [--tensors] [FILE]` — a GGUF file's facts: version,
 * architecture, parameter count, hparams from the <arch>.* keys, tokenizer, tensor
 * bytes per type, file type. Every <arch>.* key is also printed generically, so a key
 * we have no label for is still shown. A bad file gives one error line and exit 1. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "cli/cli.h"
#include "cpu/matmul.h"
#include "cuda/cuda.h"
#include "formats/formats.h"
#include "gguf/gguf.h"
#include "tune/tune.h"

/* labelled hparams, by suffix after "<arch>." */
static const struct {
    const char *suffix, *label;
} k_hparams[] = {
    {"context_length", "context length"},
    {"embedding_length", "embedding length"},
    {"block_count", "block count"},
    {"feed_forward_length", "feed-forward length"},
    {"attention.head_count", "head count"},
    {"attention.head_count_kv", "head count (kv)"},
    {"attention.key_length", "key length (head dim)"},
    {"attention.value_length", "value length"},
    {"rope.dimension_count", "rope dimensions"},
    {"rope.freq_base", "rope freq base"},
    {"rope.scaling.type", "rope scaling"},
    {"rope.scaling.factor", "rope scaling factor"},
    {"attention.layer_norm_rms_epsilon", "rms norm eps"},
    {"attention.layer_norm_epsilon", "layer norm eps"},
    {"attention.sliding_window", "sliding window"},
    {"expert_count", "experts"},
    {"expert_used_count", "experts used"},
    {"expert_feed_forward_length", "expert ffn length"},
    {"vocab_size", "vocab size (hparam)"},
};

/* llama.cpp's LLAMA_FTYPE numbering (general.file_type) */
static const char *ftype_name(uint32_t ft) {
    static const char *k[] = {
        [0] = "ALL_F32", [1] = "MOSTLY_F16", [2] = "MOSTLY_Q4_0", [3] = "MOSTLY_Q4_1",
        [7] = "MOSTLY_Q8_0", [8] = "MOSTLY_Q5_0", [9] = "MOSTLY_Q5_1", [10] = "MOSTLY_Q2_K",
        [11] = "MOSTLY_Q3_K_S", [12] = "MOSTLY_Q3_K_M", [13] = "MOSTLY_Q3_K_L", [14] = "MOSTLY_Q4_K_S",
        [15] = "MOSTLY_Q4_K_M", [16] = "MOSTLY_Q5_K_S", [17] = "MOSTLY_Q5_K_M", [18] = "MOSTLY_Q6_K",
        [19] = "MOSTLY_IQ2_XXS", [20] = "MOSTLY_IQ2_XS", [21] = "MOSTLY_Q2_K_S", [22] = "MOSTLY_IQ3_XS",
        [23] = "MOSTLY_IQ3_XXS", [24] = "MOSTLY_IQ1_S", [25] = "MOSTLY_IQ4_NL", [26] = "MOSTLY_IQ3_S",
        [27] = "MOSTLY_IQ3_M", [28] = "MOSTLY_IQ2_S", [29] = "MOSTLY_IQ2_M", [30] = "MOSTLY_IQ4_XS",
        [31] = "MOSTLY_IQ1_M", [32] = "MOSTLY_BF16", [36] = "MOSTLY_TQ1_0", [37] = "MOSTLY_TQ2_0",
        [38] = "MOSTLY_MXFP4_MOE",
    };
    if (ft < sizeof k / sizeof k[0] && k[ft]) return k[ft];
    return "unknown";
}

/* ---- value formatting ----------------------------------------------------------- */

static void put_str(FILE *f, cll_str s, size_t max) {
    fputc('"', f);
    for (uint64_t i = 0; i < s.len && i < max; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c >= 0x20 && c != 0x7f) fputc(c, f);
        else fprintf(f, "\\x%02x", c);
    }
    if (s.len > max) fputs("...", f);
    fputc('"', f);
}

/* a key or name, unquoted, on one line whatever bytes it holds */
static void put_plain(FILE *f, cll_str s, size_t max) {
    for (uint64_t i = 0; i < s.len && i < max; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c > 0x20 && c < 0x7f) fputc(c, f);
        else fprintf(f, "\\x%02x", c);
    }
    if (s.len > max) fputs("...", f);
}

static void put_scalar(FILE *f, uint32_t t, const uint8_t *p) {
    switch (t) {
    case CLL_GGUF_U8: fprintf(f, "%u", p[0]); break;
    case CLL_GGUF_I8: fprintf(f, "%d", (int8_t)p[0]); break;
    case CLL_GGUF_BOOL: fputs(p[0] ? "true" : "false", f); break;
    case CLL_GGUF_U16: { uint16_t v; memcpy(&v, p, 2); fprintf(f, "%u", v); break; }
    case CLL_GGUF_I16: { int16_t v; memcpy(&v, p, 2); fprintf(f, "%d", v); break; }
    case CLL_GGUF_U32: { uint32_t v; memcpy(&v, p, 4); fprintf(f, "%" PRIu32, v); break; }
    case CLL_GGUF_I32: { int32_t v; memcpy(&v, p, 4); fprintf(f, "%" PRId32, v); break; }
    case CLL_GGUF_U64: { uint64_t v; memcpy(&v, p, 8); fprintf(f, "%" PRIu64, v); break; }
    case CLL_GGUF_I64: { int64_t v; memcpy(&v, p, 8); fprintf(f, "%" PRId64, v); break; }
    case CLL_GGUF_F32: { float v; memcpy(&v, p, 4); fprintf(f, "%g", v); break; }
    case CLL_GGUF_F64: { double v; memcpy(&v, p, 8); fprintf(f, "%g", v); break; }
    default: fputs("?", f);
    }
}

static uint32_t scalar_bytes(uint32_t t) {
    switch (t) {
    case CLL_GGUF_U8: case CLL_GGUF_I8: case CLL_GGUF_BOOL: return 1;
    case CLL_GGUF_U16: case CLL_GGUF_I16: return 2;
    case CLL_GGUF_U32: case CLL_GGUF_I32: case CLL_GGUF_F32: return 4;
    case CLL_GGUF_U64: case CLL_GGUF_I64: case CLL_GGUF_F64: return 8;
    default: return 0;
    }
}

static void put_value(FILE *f, const cll_gguf *g, const cll_gguf_kv *kv) {
    if (kv->type == CLL_GGUF_STRING) {
        put_str(f, kv->str, 100);
    } else if (kv->type == CLL_GGUF_ARRAY) {
        fprintf(f, "[%s x %" PRIu64 "]", cll_gguf_vtype_name(kv->arr_type), kv->arr_n);
        uint64_t show = kv->arr_n < 8 ? kv->arr_n : 8;
        uint32_t es = scalar_bytes(kv->arr_type);
        if (show && (es || kv->arr_type == CLL_GGUF_STRING)) {
            fputs(" {", f);
            for (uint64_t i = 0; i < show; i++) {
                if (i) fputs(", ", f);
                if (es) put_scalar(f, kv->arr_type, kv->raw + i * es);
                else put_str(f, cll_gguf_arr_str(g, kv, i), 24);
            }
            fputs(kv->arr_n > show ? ", ...}" : "}", f);
        }
    } else {
        put_scalar(f, kv->type, kv->raw);
    }
}

static json_t *json_scalar(uint32_t t, const uint8_t *p) {
    switch (t) {
    case CLL_GGUF_BOOL: return json_boolean(p[0]);
    case CLL_GGUF_F32: { float v; memcpy(&v, p, 4); return json_real(v); }
    case CLL_GGUF_F64: { double v; memcpy(&v, p, 8); return json_real(v); }
    case CLL_GGUF_U64: { uint64_t v; memcpy(&v, p, 8); return v > INT64_MAX ? json_real((double)v) : json_integer((json_int_t)v); }
    default: break;
    }
    int64_t v = 0;
    switch (t) {
    case CLL_GGUF_U8: v = p[0]; break;
    case CLL_GGUF_I8: v = (int8_t)p[0]; break;
    case CLL_GGUF_U16: { uint16_t x; memcpy(&x, p, 2); v = x; break; }
    case CLL_GGUF_I16: { int16_t x; memcpy(&x, p, 2); v = x; break; }
    case CLL_GGUF_U32: { uint32_t x; memcpy(&x, p, 4); v = x; break; }
    case CLL_GGUF_I32: { int32_t x; memcpy(&x, p, 4); v = x; break; }
    case CLL_GGUF_I64: memcpy(&v, p, 8); break;
    default: return json_null();
    }
    return json_integer((json_int_t)v);
}

static json_t *json_str(cll_str s) {
    /* jansson takes only UTF-8; hostile bytes fall back to a marker */
    json_t *j = s.ptr ? json_stringn(s.ptr, (size_t)s.len) : NULL;
    return j ? j : json_string("<invalid utf-8>");
}

static json_t *json_value(const cll_gguf *g, const cll_gguf_kv *kv) {
    if (kv->type == CLL_GGUF_STRING) return json_str(kv->str);
    if (kv->type != CLL_GGUF_ARRAY) return json_scalar(kv->type, kv->raw);
    /* small arrays in full; large ones (vocabularies) as type and length only */
    uint32_t es = scalar_bytes(kv->arr_type);
    if (kv->arr_n <= 64 && (es || kv->arr_type == CLL_GGUF_STRING)) {
        json_t *a = json_array();
        for (uint64_t i = 0; i < kv->arr_n; i++)
            json_array_append_new(a, es ? json_scalar(kv->arr_type, kv->raw + i * es)
                                        : json_str(cll_gguf_arr_str(g, kv, i)));
        return a;
    }
    return json_pack("{s:s, s:I}", "array_of", cll_gguf_vtype_name(kv->arr_type), "n", (json_int_t)kv->arr_n);
}

/* ---- the report ------------------------------------------------------------------ */

typedef struct {
    char arch[64], name[128], tok_model[64], tok_pre[64];
    uint64_t params, tensor_bytes, vocab;
    uint64_t type_n[CLL_TYPE_COUNT], type_bytes[CLL_TYPE_COUNT];
    bool has_ftype;
    uint32_t ftype;
} facts;

static void gather(const cll_gguf *g, facts *fx) {
    memset(fx, 0, sizeof *fx);
    if (!cll_gguf_get_cstr(g, "general.architecture", fx->arch, sizeof fx->arch)) snprintf(fx->arch, sizeof fx->arch, "?");
    if (!cll_gguf_get_cstr(g, "general.name", fx->name, sizeof fx->name)) snprintf(fx->name, sizeof fx->name, "?");
    if (!cll_gguf_get_cstr(g, "tokenizer.ggml.model", fx->tok_model, sizeof fx->tok_model))
        snprintf(fx->tok_model, sizeof fx->tok_model, "none");
    if (!cll_gguf_get_cstr(g, "tokenizer.ggml.pre", fx->tok_pre, sizeof fx->tok_pre))
        snprintf(fx->tok_pre, sizeof fx->tok_pre, "-");
    const cll_gguf_kv *tok;
    if (cll_gguf_get_arr(g, "tokenizer.ggml.tokens", &tok)) fx->vocab = tok->arr_n;
    fx->has_ftype = cll_gguf_get_u32(g, "general.file_type", &fx->ftype);
    for (uint64_t i = 0; i < cll_gguf_n_tensors(g); i++) {
        const cll_gguf_tensor *t = cll_gguf_tensor_at(g, i);
        fx->params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; /* each product was checked at load */
        fx->tensor_bytes += t->nbytes;
        fx->type_n[t->type]++;
        fx->type_bytes[t->type] += t->nbytes;
    }
}

static bool arch_key(const facts *fx, cll_str key) {
    size_t n = strlen(fx->arch);
    return key.len > n + 1 && memcmp(key.ptr, fx->arch, n) == 0 && key.ptr[n] == '.';
}

/* 1234567 -> "1.23 M" (base 1000) or "1.18 MiB" (base 1024, bytes) */
static void human(char *buf, size_t cap, double v, bool bytes) {
    static const char *pre[] = {"", "K", "M", "G", "T"};
    double base = bytes ? 1024 : 1000;
    int i = 0;
    while (v >= base && i < 4) {
        v /= base;
        i++;
    }
    if (i == 0) snprintf(buf, cap, "%.0f%s", v, bytes ? " B" : "");
    else snprintf(buf, cap, "%.2f %s%s", v, pre[i], bytes ? "iB" : "");
}

static void print_text(const char *path, const cll_gguf *g, const facts *fx, bool all_tensors) {
    char h1[32], h2[32];
    printf("file:          %s\n", path);
    printf("format:        GGUF v%u, %" PRIu64 " bytes, alignment %u, %" PRIu64 " metadata keys\n",
           cll_gguf_version(g), cll_gguf_file_size(g), cll_gguf_alignment(g), cll_gguf_n_kv(g));
    printf("architecture:  %s\n", fx->arch);
    printf("name:          %s\n", fx->name);
    if (fx->has_ftype) printf("file type:     %u (%s)\n", fx->ftype, ftype_name(fx->ftype));
    human(h1, sizeof h1, (double)fx->params, false);
    printf("parameters:    %s (%" PRIu64 ")\n", h1, fx->params);
    printf("hparams:\n");
    char key[256];
    for (size_t i = 0; i < sizeof k_hparams / sizeof k_hparams[0]; i++) {
        snprintf(key, sizeof key, "%s.%s", fx->arch, k_hparams[i].suffix);
        const cll_gguf_kv *kv = cll_gguf_find(g, key);
        if (!kv) continue;
        printf("  %-22s ", k_hparams[i].label);
        put_value(stdout, g, kv);
        putchar('\n');
    }
    /* head dim is implicit when key_length is absent: embedding length / head count */
    uint32_t n_embd, n_head;
    char k2[256];
    snprintf(key, sizeof key, "%s.attention.key_length", fx->arch);
    snprintf(k2, sizeof k2, "%s.embedding_length", fx->arch);
    if (!cll_gguf_find(g, key) && cll_gguf_get_u32(g, k2, &n_embd) &&
        (snprintf(key, sizeof key, "%s.attention.head_count", fx->arch), cll_gguf_get_u32(g, key, &n_head)) && n_head)
        printf("  %-22s %u (embedding length / head count)\n", "head dim", n_embd / n_head);
    printf("tokenizer:     %s (pre: %s), vocab %" PRIu64 "\n", fx->tok_model, fx->tok_pre, fx->vocab);
    human(h2, sizeof h2, (double)fx->tensor_bytes, true);
    printf("tensors:       %" PRIu64 " (%s) at data offset %" PRIu64 "\n", cll_gguf_n_tensors(g), h2,
           cll_gguf_data_offset(g));
    for (uint32_t t = 0; t < CLL_TYPE_COUNT; t++) {
        if (!fx->type_n[t]) continue;
        human(h1, sizeof h1, (double)fx->type_bytes[t], true);
        printf("  %-8s %5" PRIu64 " tensors %12" PRIu64 " bytes (%s)\n", cll_type_name(t), fx->type_n[t],
               fx->type_bytes[t], h1);
    }
    printf("metadata (%s.*):\n", fx->arch);
    for (uint64_t i = 0; i < cll_gguf_n_kv(g); i++) {
        const cll_gguf_kv *kv = cll_gguf_kv_at(g, i);
        if (!arch_key(fx, kv->key)) continue;
        fputs("  ", stdout);
        put_plain(stdout, kv->key, 200);
        fputs(" = ", stdout);
        put_value(stdout, g, kv);
        putchar('\n');
    }
    if (all_tensors) {
        printf("tensor list:\n");
        for (uint64_t i = 0; i < cll_gguf_n_tensors(g); i++) {
            const cll_gguf_tensor *t = cll_gguf_tensor_at(g, i);
            fputs("  ", stdout);
            put_plain(stdout, t->name, 200);
            printf("%*s %-8s [", t->name.len < 40 ? (int)(40 - t->name.len) : 0, "", cll_type_name(t->type));
            for (uint32_t d = 0; d < t->n_dims; d++) printf(d ? ", %" PRIu64 : "%" PRIu64, t->ne[d]);
            printf("] offset %" PRIu64 " bytes %" PRIu64 "\n", t->offset, t->nbytes);
        }
    }
}

/* with no FILE: which model each command takes when it is given no -m (text lines, or a JSON object
 * {"chat": {...}, "text": {...}} with the path, the model, its commands, whether it is installed) */
static const struct {
    cll_cli_job job;
    const char *key;
} k_jobs[] = {{CLL_CLI_JOB_CHAT, "chat"}, {CLL_CLI_JOB_TEXT, "text"}};

static void print_defaults_text(void) {
    printf("default models (used without -m; $CLLAMA_MODEL overrides both):\n");
    for (size_t i = 0; i < sizeof k_jobs / sizeof k_jobs[0]; i++) {
        char path[4096];
        const bool env = cll_cli_default_path(k_jobs[i].job, path, sizeof path);
        const bool here = access(path, R_OK) == 0;
        printf("  %s: %s\n      %s%s\n", cll_cli_default_cmds(k_jobs[i].job), path,
               env ? "from $CLLAMA_MODEL" : cll_cli_default_name(k_jobs[i].job),
               here ? "" : "; not installed: bash scripts/setup.sh installs it");
    }
    printf("\n");
}

static json_t *defaults_json(void) {
    json_t *o = json_object();
    for (size_t i = 0; i < sizeof k_jobs / sizeof k_jobs[0]; i++) {
        char path[4096];
        const bool env = cll_cli_default_path(k_jobs[i].job, path, sizeof path);
        json_object_set_new(o, k_jobs[i].key,
                            json_pack("{s:s, s:s, s:s, s:b, s:b}", "path", path, "model",
                                      cll_cli_default_name(k_jobs[i].job), "commands", cll_cli_default_cmds(k_jobs[i].job),
                                      "from_env", env, "installed", access(path, R_OK) == 0));
    }
    return o;
}

static int print_json(const char *path, const cll_gguf *g, const facts *fx, bool all_tensors, bool defaults) {
    json_t *o = json_object();
    if (defaults) json_object_set_new(o, "defaults", defaults_json());
    json_object_set_new(o, "file", json_string(path));
    json_object_set_new(o, "gguf_version", json_integer(cll_gguf_version(g)));
    json_object_set_new(o, "file_size", json_integer((json_int_t)cll_gguf_file_size(g)));
    json_object_set_new(o, "alignment", json_integer(cll_gguf_alignment(g)));
    json_object_set_new(o, "architecture", json_str((cll_str){fx->arch, strlen(fx->arch)}));
    json_object_set_new(o, "name", json_str((cll_str){fx->name, strlen(fx->name)}));
    if (fx->has_ftype) {
        json_object_set_new(o, "file_type", json_integer(fx->ftype));
        json_object_set_new(o, "file_type_name", json_string(ftype_name(fx->ftype)));
    }
    json_object_set_new(o, "parameters", json_integer((json_int_t)fx->params));
    json_t *tk = json_object();
    json_object_set_new(tk, "model", json_str((cll_str){fx->tok_model, strlen(fx->tok_model)}));
    json_object_set_new(tk, "pre", json_str((cll_str){fx->tok_pre, strlen(fx->tok_pre)}));
    json_object_set_new(tk, "vocab_size", json_integer((json_int_t)fx->vocab));
    json_object_set_new(o, "tokenizer", tk);
    json_object_set_new(o, "n_tensors", json_integer((json_int_t)cll_gguf_n_tensors(g)));
    json_object_set_new(o, "tensor_bytes", json_integer((json_int_t)fx->tensor_bytes));
    json_t *types = json_object();
    for (uint32_t t = 0; t < CLL_TYPE_COUNT; t++)
        if (fx->type_n[t])
            json_object_set_new(types, cll_type_name(t), json_pack("{s:I, s:I}", "tensors", (json_int_t)fx->type_n[t],
                                                                   "bytes", (json_int_t)fx->type_bytes[t]));
    json_object_set_new(o, "tensor_types", types);
    json_t *md = json_object();
    for (uint64_t i = 0; i < cll_gguf_n_kv(g); i++) {
        const cll_gguf_kv *kv = cll_gguf_kv_at(g, i);
        char k[512];
        snprintf(k, sizeof k, "%.*s", (int)(kv->key.len > 500 ? 500 : kv->key.len), kv->key.ptr);
        json_t *v = json_value(g, kv);
        if (json_object_set_new(md, k, v) != 0) { /* key not UTF-8: keep it out rather than fail */ }
    }
    json_object_set_new(o, "metadata", md);
    if (all_tensors) {
        json_t *ta = json_array();
        for (uint64_t i = 0; i < cll_gguf_n_tensors(g); i++) {
            const cll_gguf_tensor *t = cll_gguf_tensor_at(g, i);
            json_t *ne = json_array();
            for (uint32_t d = 0; d < t->n_dims; d++) json_array_append_new(ne, json_integer((json_int_t)t->ne[d]));
            json_array_append_new(ta, json_pack("{s:o, s:s, s:o, s:I, s:I}", "name", json_str(t->name), "type",
                                                cll_type_name(t->type), "ne", ne, "offset", (json_int_t)t->offset,
                                                "bytes", (json_int_t)t->nbytes));
        }
        json_object_set_new(o, "tensors", ta);
    }
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
    json_decref(o);
    if (!s) {
        fprintf(stderr, "cllama: error: %s: cannot render JSON\n", path);
        return 1;
    }
    puts(s);
    free(s);
    return 0;
}

static void usage(FILE *f) {
    fprintf(f, "usage: cllama info [--json] [--tensors] [FILE.gguf]\n"
               "       cllama info --tune [--backend cpu|cuda]\n"
               "  prints a GGUF file's facts; with no FILE, which default model each command uses and\n"
               "  the facts of the one `run` uses\n"
               "  --json      machine-readable output\n"
               "  --tensors   also list every tensor\n"
               "  --tune      the tune sidecar this box would apply: path, sha256, whether it applies\n"
               "              (`cllama tune doctor` explains every site)\n");
}

/* `cllama info --tune`: the tune file a run on this box picks up (cll_tune_choose: $CLLAMA_TUNE, else
 * the box's own sidecar, else its class defaults, else none) */
static int info_tune(const char *backend) {
    cll_tune_box here;
    if (cll_tune_box_probe(backend, &here) != CLL_OK) {
        fprintf(stderr, "cllama: error: info --tune: %s\n", cll_last_error());
        return 1;
    }
    cll_tune_choice ch;
    if (cll_tune_choose(backend, &here, NULL, &ch) != CLL_OK) {
        fprintf(stderr, "cllama: error: info --tune: %s\n", cll_last_error());
        return 1;
    }
    printf("tune: %s\n", ch.why);
    if (ch.from == CLL_TUNE_FROM_NONE) {
        printf("  none: this box runs on its built-in defaults (sha256 none)\n");
        return 0;
    }
    char sha[65];
    cll_tune_sidecar *sc = NULL;
    if (!cll_bench_sha256_file(ch.path, sha)) snprintf(sha, sizeof sha, "unreadable");
    if (cll_tune_read(ch.path, &sc) != CLL_OK) {
        printf("  unreadable: %s (runs use the defaults)\n", cll_last_error());
        return 1;
    }
    if (sc->cls[0]) printf("  sha256: class:%s:%s\n", sc->cls, sha);
    else printf("  sha256: %s\n", sha);
    cll_tune_report rep;
    const cll_kernel_table *t = !strcmp(backend, "cuda") ? cll_cuda_kernel_table() : cll_cpu_kernel_table();
    if (!t || cll_tune_apply(sc, &here, t, false, true, &rep) != CLL_OK) {
        printf("  not applied: this build has no %s kernel table\n", backend);
    } else {
        if (!rep.applies) printf("  not applied: %s\n", rep.why);
        else if (sc->cls[0])
            printf("  applies: class defaults %s, %d of %d site(s) and %d knob(s) (engine %s, %s)\n", sc->cls, rep.n_applied,
                   sc->n_sites, sc->n_runtime, sc->engine_sha, sc->mode);
        else
            printf("  applies: %d of %d site(s), minted %s (%s, noise %s, floor %.2f%%)\n", rep.n_applied, sc->n_sites,
                   sc->date, sc->mode, sc->noise, 100.0 * sc->noise_floor);
        cll_tune_report_free(&rep);
    }
    cll_tune_free(sc);
    return 0;
}

int cll_cmd_info(int argc, char **argv) {
    bool json = false, tensors = false, tune = false;
    const char *path = NULL, *backend = "cpu";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = true;
        else if (!strcmp(argv[i], "--tune")) tune = true;
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc) backend = argv[++i];
        else if (!strcmp(argv[i], "--tensors")) tensors = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "-m") && i + 1 < argc) path = argv[++i];
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "cllama: error: info: unknown option '%s'\n", argv[i]);
            return 2;
        } else if (!path) path = argv[i];
        else {
            fprintf(stderr, "cllama: error: info: more than one file given ('%s')\n", argv[i]);
            return 2;
        }
    }
    if (tune) {
        if (strcmp(backend, "cpu") && strcmp(backend, "cuda")) {
            fprintf(stderr, "cllama: error: info: --backend cpu or cuda, not '%s'\n", backend);
            return 2;
        }
        return info_tune(backend);
    }
    char buf[4096];
    const bool defaults = !path;
    if (!path) {
        if (!json) print_defaults_text();
        if (cll_cli_default_model_for("info", CLL_CLI_JOB_TEXT, buf, sizeof buf) != 0) return 1;
        path = buf;
    }
    cll_gguf *g;
    if (cll_gguf_open(path, &g) != CLL_OK) {
        fprintf(stderr, "cllama: error: %s\n", cll_last_error());
        return 1;
    }
    facts fx;
    gather(g, &fx);
    int rc = 0;
    if (json) rc = print_json(path, g, &fx, tensors, defaults);
    else print_text(path, g, &fx, tensors);
    cll_gguf_free(g);
    return rc;
}
