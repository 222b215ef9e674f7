/* tokenizer/chat: chat-template families recognised by markers in the Jinja text and
 * rendered by hand, following each official template's semantics (where it trims,
 * where it prints bos_token/eos_token, how it places the system message). */
#include "tokenizer/chat.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    F_QWEN_DEFAULT_SYS = 1,   /* chatml: default system message when none is given */
    F_LLAMA31 = 2,            /* llama 3.1+: system header always, with knowledge/today dates */
    F_PHI3_INLINE = 4,        /* phi-3 (mini-4k): the user turn itself ends with <|assistant|>\n, system dropped */
    F_BOS = 8,                /* the template prints bos_token first */
    F_V7_SPACE = 16,          /* mistral v7 (not tekken): a space after [INST] / [SYSTEM_PROMPT] */
};

static const char *const NAMES[CLL_CHAT_N_FAMILIES] = {
    "chatml", "llama2", "llama3", "gemma", "mistral-v1", "mistral-v3", "mistral-v3-tekken", "mistral-v7",
    "phi3", "zephyr", "deepseek-coder", "deepseek-llm", "deepseek3", "vicuna",
};

const char *cll_chat_name(const cll_chat_tmpl *ct) {
    return ct && ct->family < CLL_CHAT_N_FAMILIES ? NAMES[ct->family] : "chatml";
}

cll_chat_family cll_chat_family_by_name(const char *name) {
    for (int i = 0; name && i < CLL_CHAT_N_FAMILIES; i++)
        if (!strcmp(name, NAMES[i])) return (cll_chat_family)i;
    return (cll_chat_family)-1;
}

static bool has(const char *t, const char *s) { return strstr(t, s) != NULL; }

/* copy a single-quoted Jinja string literal that contains `start`, decoding \n */
static void extract_literal(const char *tmpl, const char *start, char *out, size_t cap) {
    out[0] = 0;
    const char *p = strstr(tmpl, start);
    if (!p) return;
    size_t n = 0;
    for (; *p && *p != '\'' && n + 1 < cap; p++) {
        if (p[0] == '\\' && p[1] == 'n') { out[n++] = '\n'; p++; }
        else if (p[0] == '\\' && p[1]) { out[n++] = p[1]; p++; }
        else out[n++] = *p;
    }
    out[n] = 0;
}

void cll_chat_init(cll_chat_tmpl *ct, const char *tmpl, const char *bos, const char *eos) {
    memset(ct, 0, sizeof *ct);
    snprintf(ct->bos, sizeof ct->bos, "%s", bos ? bos : "");
    snprintf(ct->eos, sizeof ct->eos, "%s", eos ? eos : "");
    ct->family = CLL_CHAT_CHATML;
    if (!tmpl || !*tmpl) {
        /* said at the first render, not here: bench, tune and raw-prompt runs load models they never
         * chat with (a tune loads dozens of copies) */
        snprintf(ct->fallback, sizeof ct->fallback, "the model has no chat template");
        cll_log(CLL_LOG_INFO, "chat: %s; chats will render as chatml", ct->fallback);
        return;
    }
    const char *t = tmpl;
    ct->recognised = true;
    bool bos_tok = has(t, "bos_token");
    if (has(t, "<|im_start|>")) {
        ct->family = CLL_CHAT_CHATML;
        if (has(t, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."))
            snprintf(ct->default_system, sizeof ct->default_system,
                     "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
        else if (has(t, "messages[0]['role'] != 'system'") && has(t, "system\\nYou are a helpful assistant."))
            snprintf(ct->default_system, sizeof ct->default_system, "You are a helpful assistant.");
        if (ct->default_system[0]) ct->flags |= F_QWEN_DEFAULT_SYS;
    } else if (has(t, "[INST]")) {
        if (has(t, "<<SYS>>")) ct->family = CLL_CHAT_LLAMA2;
        else if (has(t, "[SYSTEM_PROMPT]")) {
            ct->family = CLL_CHAT_MISTRAL_V7;
            if (has(t, "[INST] ") || has(t, "[SYSTEM_PROMPT] ")) ct->flags |= F_V7_SPACE;
        } else if (has(t, "\"[INST]\"")) ct->family = CLL_CHAT_MISTRAL_TEKKEN;
        else if (has(t, "[AVAILABLE_TOOLS]") && !has(t, " [/INST]")) ct->family = CLL_CHAT_MISTRAL_V3;
        else if (has(t, "'[/INST]'") || has(t, "+ '[/INST]'")) ct->family = CLL_CHAT_MISTRAL_V3;
        else ct->family = CLL_CHAT_MISTRAL;
        ct->flags |= F_BOS;
    } else if (has(t, "<|start_header_id|>")) {
        ct->family = CLL_CHAT_LLAMA3;
        if (has(t, "Cutting Knowledge Date")) ct->flags |= F_LLAMA31;
        ct->flags |= F_BOS;
    } else if (has(t, "<start_of_turn>")) {
        ct->family = CLL_CHAT_GEMMA;
        ct->flags |= F_BOS;
    } else if (has(t, "<|assistant|>") && has(t, "<|end|>")) {
        ct->family = CLL_CHAT_PHI3;
        if (has(t, "+ '<|assistant|>'")) ct->flags |= F_PHI3_INLINE;
        if (bos_tok) ct->flags |= F_BOS;
    } else if (has(t, "<|user|>")) {
        ct->family = CLL_CHAT_ZEPHYR;
    } else if (has(t, "### Instruction:")) {
        ct->family = CLL_CHAT_DEEPSEEK_CODER;
        extract_literal(t, "You are an AI programming assistant", ct->default_system, sizeof ct->default_system);
        if (bos_tok) ct->flags |= F_BOS;
    } else if (has(t, "<\xef\xbd\x9cUser\xef\xbd\x9c>")) {
        ct->family = CLL_CHAT_DEEPSEEK3;
        if (bos_tok) ct->flags |= F_BOS;
    } else if (has(t, "'User: '") || (has(t, "User: ") && has(t, "Assistant:"))) {
        ct->family = CLL_CHAT_DEEPSEEK_LLM;
        if (bos_tok) ct->flags |= F_BOS;
    } else if (has(t, "USER: ") && has(t, "ASSISTANT:")) {
        ct->family = CLL_CHAT_VICUNA;
    } else {
        ct->recognised = false;
        snprintf(ct->fallback, sizeof ct->fallback, "the model's chat template is not recognised");
        cll_log(CLL_LOG_INFO, "chat: %s; chats will render as chatml", ct->fallback);
    }
}

void cll_chat_init_gguf(cll_chat_tmpl *ct, const cll_gguf *g, const cll_tokenizer *t) {
    char bos[64] = "", eos[64] = "";
    if (t) {
        cll_str b = cll_tok_text(t, cll_tok_bos(t)), e = cll_tok_text(t, cll_tok_eos(t));
        if (b.ptr && b.len < sizeof bos) { memcpy(bos, b.ptr, b.len); bos[b.len] = 0; }
        if (e.ptr && e.len < sizeof eos) { memcpy(eos, e.ptr, e.len); eos[e.len] = 0; }
    }
    cll_str s = {NULL, 0};
    char *tmpl = NULL;
    if (g && cll_gguf_get_str(g, "tokenizer.chat_template", &s) && s.len < (64u << 20)) {
        tmpl = malloc(s.len + 1);
        if (tmpl) { memcpy(tmpl, s.ptr, s.len); tmpl[s.len] = 0; }
    }
    cll_chat_init(ct, tmpl, bos, eos);
    free(tmpl);
}

/* ---- rendering ---- */

typedef struct {
    char *buf;
    int64_t cap, n;
} out_t;

static void put_n(out_t *o, const char *s, size_t k) {
    for (size_t i = 0; i < k; i++) {
        if (o->n < o->cap - 1) o->buf[o->n] = s[i];
        o->n++;
    }
}
static void put(out_t *o, const char *s) { put_n(o, s, strlen(s)); }

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
/* Jinja's | trim and Python's str.strip() */
static void put_trim(out_t *o, const char *s) {
    size_t a = 0, b = strlen(s);
    while (a < b && is_ws(s[a])) a++;
    while (b > a && is_ws(s[b - 1])) b--;
    put_n(o, s + a, b - a);
}

static bool role_is(const cll_chat_msg *m, const char *r) { return !strcmp(m->role, r); }

static void render_chatml(const cll_chat_tmpl *ct, const cll_chat_msg *m, size_t n, bool gen, out_t *o) {
    if ((ct->flags & F_QWEN_DEFAULT_SYS) && (n == 0 || !role_is(&m[0], "system"))) {
        put(o, "<|im_start|>system\n");
        put(o, ct->default_system);
        put(o, "<|im_end|>\n");
    }
    for (size_t i = 0; i < n; i++) {
        put(o, "<|im_start|>");
        put(o, m[i].role);
        put(o, "\n");
        put(o, m[i].content);
        put(o, "<|im_end|>\n");
    }
    if (gen) put(o, "<|im_start|>assistant\n");
}

/* Llama-2: system folded into the first user turn; every user turn opens with BOS;
 * contents are stripped; no generation prompt text (the model answers after [/INST]) */
static void render_llama2(const cll_chat_tmpl *ct, const cll_chat_msg *m, size_t n, out_t *o) {
    size_t i = 0;
    const char *sys = NULL;
    if (n && role_is(&m[0], "system")) { sys = m[0].content; i = 1; }
    for (size_t k = i; k < n; k++) {
        if (role_is(&m[k], "assistant")) {
            put(o, " ");
            put_trim(o, m[k].content);
            put(o, " ");
            put(o, ct->eos);
            continue;
        }
        put(o, ct->bos);
        put(o, "[INST] ");
        if (k == i && sys) {
            /* ('<<SYS>>\n' + sys + '\n<</SYS>>\n\n' + content).strip() */
            size_t len = strlen(sys) + strlen(m[k].content) + 32;
            char *c = malloc(len);
            if (c) {
                snprintf(c, len, "<<SYS>>\n%s\n<</SYS>>\n\n%s", sys, m[k].content);
                put_trim(o, c);
                free(c);
            }
        } else {
            put_trim(o, m[k].content);
        }
        put(o, " [/INST]");
    }
}

static void render_llama3(const cll_chat_tmpl *ct, const cll_chat_msg *m, size_t n, bool gen, out_t *o) {
    size_t i = 0;
    put(o, ct->bos);
    if (ct->flags & F_LLAMA31) {
        put(o, "<|start_header_id|>system<|end_header_id|>\n\n");
        put(o, "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n");
        if (n && role_is(&m[0], "system")) { put_trim(o, m[0].content); i = 1; }
        put(o, "<|eot_id|>");
    }
    for (; i < n; i++) {
        put(o, "<|start_header_id|>");
        put(o, m[i].role);
        put(o, "<|end_header_id|>\n\n");
        put_trim(o, m[i].content);
        put(o, "<|eot_id|>");
    }
    if (gen) put(o, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* Gemma: system text + "\n\n" prefixes the first turn; assistant is "model" */
static void render_gemma(const cll_chat_tmpl *ct, const cll_chat_msg *m, size_t n, bool gen, out_t *o) {
    size_t i = 0;
    const char *prefix = NULL;
    put(o, ct->bos);
    if (n && role_is(&m[0], "system")) { prefix = m[0].content; i = 1; }
    for (size_t k = i; k < n; k++) {
        put(o, "<start_of_turn>");
        put(o, role_is(&m[k], "assistant") ? "model" : m[k].role);
        put(o, "\n");
        if (k == i && prefix) { put(o, prefix); put(o, "\n\n"); }
        put_trim(o, m[k].content);
        put(o, "<end_of_turn>\n");
    }
    if (gen) put(o, "<start_of_turn>model\n");
}

/* Mistral families: the system text prefixes a user message (v7 has its own block) */
static void render_mistral(const cll_chat_tmpl *ct, const cll_chat_msg *m, size_t n, out_t *o) {
    const char *open, *close, *asp;
    switch (ct->family) {
    case CLL_CHAT_MISTRAL: open = "[INST] "; close = " [/INST]"; asp = ""; break;
    case CLL_CHAT_MISTRAL_V3: open = "[INST] "; close = "[/INST]"; asp = " "; break;
    default: open = "[INST]"; close = "[/INST]"; asp = ""; break;
    }
    put(o, ct->bos);
    /* v3 and v3-tekken put the system text into the LAST user turn, v1 into the first */
    const char *sys = NULL;
    size_t sys_at = SIZE_MAX;
    if (ct->family == CLL_CHAT_MISTRAL_V3 || ct->family == CLL_CHAT_MISTRAL_TEKKEN) {
        for (size_t k = 0; k < n; k++) {
            if (role_is(&m[k], "system")) sys = m[k].content;
            else if (!role_is(&m[k], "assistant")) sys_at = k;
        }
    }
    for (size_t k = 0; k < n; k++) {
        if (role_is(&m[k], "system")) {
            if (ct->family == CLL_CHAT_MISTRAL_V7) {
                const char *sp = (ct->flags & F_V7_SPACE) ? " " : "";
                put(o, "[SYSTEM_PROMPT]");
                put(o, sp);
                put(o, m[k].content);
                put(o, "[/SYSTEM_PROMPT]");
            } else if (sys_at == SIZE_MAX) {
                sys = m[k].content;
            }
        } else if (role_is(&m[k], "assistant")) {
            put(o, asp);
            put(o, m[k].content);
            put(o, ct->eos);
        } else {
            put(o, ct->family == CLL_CHAT_MISTRAL_V7 && (ct->flags & F_V7_SPACE) ? "[INST] " : open);
            if (sys && (sys_at == SIZE_MAX || sys_at == k)) { put(o, sys); put(o, "\n\n"); sys = NULL; }
            put(o, m[k].content);
            put(o, close);
        }
    }
}

static void render_phi3(const cll_chat_tmpl *ct, const cll_chat_msg *m, size_t n, bool gen, out_t *o) {
    if (ct->flags & F_BOS) put(o, ct->bos);
    if (ct->flags & F_PHI3_INLINE) {
        /* phi-3-mini-4k: system messages are dropped; every user turn ends with the assistant header */
        for (size_t k = 0; k < n; k++) {
            if (role_is(&m[k], "user")) {
                put(o, "<|user|>\n");
                put(o, m[k].content);
                put(o, "<|end|>\n<|assistant|>\n");
            } else if (role_is(&m[k], "assistant")) {
                put(o, m[k].content);
                put(o, "<|end|>\n");
            }
        }
        return;
    }
    for (size_t k = 0; k < n; k++) {
        put(o, "<|");
        put(o, m[k].role);
        put(o, "|>\n");
        put(o, m[k].content);
        put(o, "<|end|>\n");
    }
    if (gen) put(o, "<|assistant|>\n");
    else put(o, ct->eos);
}

static void render_zephyr(const cll_chat_tmpl *ct, const cll_chat_msg *m, size_t n, bool gen, out_t *o) {
    for (size_t k = 0; k < n; k++) {
        put(o, "<|");
        put(o, m[k].role);
        put(o, "|>\n");
        put(o, m[k].content);
        put(o, ct->eos);
        put(o, "\n");
    }
    if (gen) put(o, "<|assistant|>\n");
}

static void render_deepseek(const cll_chat_tmpl *ct, const cll_chat_msg *m, size_t n, bool gen, out_t *o) {
    if (ct->flags & F_BOS) put(o, ct->bos);
    bool has_sys = false;
    for (size_t k = 0; k < n; k++) has_sys |= role_is(&m[k], "system");
    if (ct->family == CLL_CHAT_DEEPSEEK_CODER) {
        if (!has_sys) put(o, ct->default_system);
        for (size_t k = 0; k < n; k++) {
            if (role_is(&m[k], "system")) put(o, m[k].content);
            else if (role_is(&m[k], "user")) { put(o, "### Instruction:\n"); put(o, m[k].content); put(o, "\n"); }
            else { put(o, "### Response:\n"); put(o, m[k].content); put(o, "\n<|EOT|>\n"); }
        }
        if (gen) put(o, "### Response:");
    } else if (ct->family == CLL_CHAT_DEEPSEEK_LLM) {
        for (size_t k = 0; k < n; k++) {
            if (role_is(&m[k], "system")) { put(o, m[k].content); put(o, "\n\n"); }
            else if (role_is(&m[k], "user")) { put(o, "User: "); put(o, m[k].content); put(o, "\n\n"); }
            else { put(o, "Assistant: "); put(o, m[k].content); put(o, ct->eos); }
        }
        if (gen) put(o, "Assistant:");
    } else { /* deepseek3: system prompts first (joined by blank lines), then the turns */
        bool first = true;
        for (size_t k = 0; k < n; k++) {
            if (!role_is(&m[k], "system")) continue;
            if (!first) put(o, "\n\n");
            put(o, m[k].content);
            first = false;
        }
        for (size_t k = 0; k < n; k++) {
            if (role_is(&m[k], "user")) { put(o, "<\xef\xbd\x9cUser\xef\xbd\x9c>"); put(o, m[k].content); }
            else if (role_is(&m[k], "assistant")) {
                put(o, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>");
                put(o, m[k].content);
                put(o, "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>");
            }
        }
        if (gen) put(o, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>");
    }
}

static void render_vicuna(const cll_chat_tmpl *ct, const cll_chat_msg *m, size_t n, bool gen, out_t *o) {
    for (size_t k = 0; k < n; k++) {
        if (role_is(&m[k], "system")) { put(o, m[k].content); put(o, "\n\n"); }
        else if (role_is(&m[k], "user")) { put(o, "USER: "); put(o, m[k].content); put(o, "\n"); }
        else { put(o, "ASSISTANT: "); put(o, m[k].content); put(o, ct->eos); put(o, "\n"); }
    }
    if (gen) put(o, "ASSISTANT:");
}

int64_t cll_chat_render(const cll_chat_tmpl *ct, const cll_chat_msg *msgs, size_t n, bool gen, char *buf, int64_t cap) {
    if (!ct || (n && !msgs) || cap < 0 || (cap > 0 && !buf)) return -1;
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content) return -1;
    static atomic_flag warned = ATOMIC_FLAG_INIT; /* once a process: a server renders every request */
    if (!ct->recognised && !atomic_flag_test_and_set(&warned))
        cll_log(CLL_LOG_WARN, "chat: %s; rendering chats as chatml", ct->fallback[0] ? ct->fallback : "no chat template");
    out_t o = {buf, cap, 0};
    switch (ct->family) {
    case CLL_CHAT_LLAMA2: render_llama2(ct, msgs, n, &o); break;
    case CLL_CHAT_LLAMA3: render_llama3(ct, msgs, n, gen, &o); break;
    case CLL_CHAT_GEMMA: render_gemma(ct, msgs, n, gen, &o); break;
    case CLL_CHAT_MISTRAL:
    case CLL_CHAT_MISTRAL_V3:
    case CLL_CHAT_MISTRAL_TEKKEN:
    case CLL_CHAT_MISTRAL_V7: render_mistral(ct, msgs, n, &o); break;
    case CLL_CHAT_PHI3: render_phi3(ct, msgs, n, gen, &o); break;
    case CLL_CHAT_ZEPHYR: render_zephyr(ct, msgs, n, gen, &o); break;
    case CLL_CHAT_DEEPSEEK_CODER:
    case CLL_CHAT_DEEPSEEK_LLM:
    case CLL_CHAT_DEEPSEEK3: render_deepseek(ct, msgs, n, gen, &o); break;
    case CLL_CHAT_VICUNA: render_vicuna(ct, msgs, n, gen, &o); break;
    default: render_chatml(ct, msgs, n, gen, &o); break;
    }
    if (cap > 0) buf[o.n < cap ? o.n : cap - 1] = 0;
    return o.n;
}
