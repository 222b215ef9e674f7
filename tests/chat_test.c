/* chat templates: family detection from template text and renders written out by
 * hand from the official templates' semantics. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/chat.h"

static const cll_chat_msg CONV[] = {
    {"system", "You are terse."},
    {"user", "Hi there "},
    {"assistant", " Hello!"},
    {"user", "Name a color."},
};
#define NCONV (sizeof CONV / sizeof *CONV)

static void expect(const char *tmpl, const char *bos, const char *eos, const char *family, const cll_chat_msg *m, size_t n,
                   bool gen, const char *want) {
    cll_chat_tmpl ct;
    cll_chat_init(&ct, tmpl, bos, eos);
    assert_string_equal(cll_chat_name(&ct), family);
    int64_t need = cll_chat_render(&ct, m, n, gen, NULL, 0);
    char *buf = malloc((size_t)need + 1);
    assert_int_equal(cll_chat_render(&ct, m, n, gen, buf, need + 1), need);
    if (strcmp(buf, want)) print_error("family %s\n got: [%s]\nwant: [%s]\n", family, buf, want);
    assert_string_equal(buf, want);
    assert_int_equal(need, (int64_t)strlen(want));
    /* truncation: still NUL-terminated, still the full length returned */
    char small[8];
    assert_int_equal(cll_chat_render(&ct, m, n, gen, small, sizeof small), need);
    assert_int_equal(strlen(small), need < 7 ? need : 7);
    free(buf);
}

static void test_chatml_qwen(void **s) {
    (void)s;
    const char *qwen25 = "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + "
                         "'<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. "
                         "You are a helpful assistant.<|im_end|>\\n' }}{%- endif %}...<|im_start|>";
    expect(qwen25, "", "<|im_end|>", "chatml", CONV, NCONV, true,
           "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi there <|im_end|>\n"
           "<|im_start|>assistant\n Hello!<|im_end|>\n<|im_start|>user\nName a color.<|im_end|>\n<|im_start|>assistant\n");
    /* no system message: Qwen 2.5's default one */
    expect(qwen25, "", "<|im_end|>", "chatml", CONV + 1, 1, true,
           "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
           "<|im_start|>user\nHi there <|im_end|>\n<|im_start|>assistant\n");
    /* plain chatml (qwen3 style) adds nothing */
    expect("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
           "'<|im_end|>' + '\\n'}}{% endfor %}",
           "", "", "chatml", CONV + 1, 1, false, "<|im_start|>user\nHi there <|im_end|>\n");
}

static void test_unknown_falls_back(void **s) {
    (void)s;
    expect("{{ something nobody knows }}", "<s>", "</s>", "chatml", CONV + 1, 1, true,
           "<|im_start|>user\nHi there <|im_end|>\n<|im_start|>assistant\n");
    expect(NULL, "<s>", "</s>", "chatml", CONV + 1, 1, false, "<|im_start|>user\nHi there <|im_end|>\n");
    cll_chat_tmpl ct;
    cll_chat_init(&ct, "{{ nothing }}", NULL, NULL);
    assert_false(ct.recognised);
}

/* stderr's lines that contain `needle` while fn runs */
static int stderr_lines_with(void (*fn)(void *), const char *needle) {
    char *err = tu_stderr_of(fn, NULL, NULL);
    int n = 0;
    for (char *l = err, *e; *l; l = e ? e + 1 : l + strlen(l)) {
        if ((e = strchr(l, '\n'))) *e = 0;
        if (strstr(l, needle)) n++;
    }
    free(err);
    return n;
}

static cll_chat_tmpl g_plain;
static void load_plain(void *u) {
    (void)u;
    cll_chat_init(&g_plain, NULL, "<s>", "</s>");
}
static void render_plain_twice(void *u) {
    (void)u;
    char buf[256];
    for (int i = 0; i < 2; i++) assert_true(cll_chat_render(&g_plain, CONV + 1, 1, true, buf, sizeof buf) > 0);
}

/* A model without a chat template loads without a warning (bench, tune and raw-prompt runs load
 * models they never chat with: a CUDA tune printed it for each of its dozens of loads); the first
 * render warns, once a process. Runs first in main: the once-flag is the process's. */
static void test_fallback_warned_at_first_render_only(void **s) {
    (void)s;
    assert_int_equal(stderr_lines_with(load_plain, "warning"), 0);
    assert_false(g_plain.recognised);
    assert_string_equal(g_plain.fallback, "the model has no chat template");
    assert_int_equal(stderr_lines_with(render_plain_twice, "warning: chat: the model has no chat template"), 1);
    assert_int_equal(stderr_lines_with(render_plain_twice, "warning"), 0);
}

static void test_llama2(void **s) {
    (void)s;
    const char *t = "{% if messages[0]['role'] == 'system' %}...{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
                    "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
                    "{{ ' '  + content.strip() + ' ' + eos_token }}";
    expect(t, "<s>", "</s>", "llama2", CONV, NCONV, true,
           "<s>[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi there [/INST] Hello! </s><s>[INST] Name a color. [/INST]");
}

static void test_llama3(void **s) {
    (void)s;
    const char *l3 = "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
                     "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
                     "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}";
    expect(l3, "<|begin_of_text|>", "<|eot_id|>", "llama3", CONV, NCONV, true,
           "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
           "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
           "<|start_header_id|>user<|end_header_id|>\n\nName a color.<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\n");
    const char *l31 = "{{- bos_token }}{{- \"Cutting Knowledge Date: December 2023\\n\" }}<|start_header_id|>";
    expect(l31, "<|begin_of_text|>", "<|eot_id|>", "llama3", CONV + 1, 1, true,
           "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
           "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>"
           "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

static void test_gemma(void **s) {
    (void)s;
    const char *g = "{{ bos_token }}{%- if messages[0]['role'] == 'system' -%}{%- set first_user_prefix = "
                    "messages[0]['content'] + '\\n\\n' -%}...{{ '<start_of_turn>' + role + '\\n' + (first_user_prefix "
                    "if loop.first else \"\") }}{{ message['content'] | trim }}{{ '<end_of_turn>\\n' }}";
    expect(g, "<bos>", "<eos>", "gemma", CONV, NCONV, true,
           "<bos><start_of_turn>user\nYou are terse.\n\nHi there<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n"
           "<start_of_turn>user\nName a color.<end_of_turn>\n<start_of_turn>model\n");
    expect(g, "<bos>", "<eos>", "gemma", CONV + 1, 1, false, "<bos><start_of_turn>user\nHi there<end_of_turn>\n");
}

static void test_mistral(void **s) {
    (void)s;
    const char *v1 = "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + "
                     "message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + "
                     "eos_token}}{% endif %}{% endfor %}";
    expect(v1, "<s>", "</s>", "mistral-v1", CONV + 1, 3, true, "<s>[INST] Hi there  [/INST] Hello!</s>[INST] Name a color. [/INST]");
    const char *v3 = "{{ bos_token }}[AVAILABLE_TOOLS]{{ '[INST] ' + system_message + '\\n\\n' + message['content'] + '[/INST]' }}";
    expect(v3, "<s>", "</s>", "mistral-v3", CONV, NCONV, true,
           "<s>[INST] Hi there [/INST]  Hello!</s>[INST] You are terse.\n\nName a color.[/INST]");
    const char *v7 = "{{- bos_token }}{{- '[SYSTEM_PROMPT]' + system_message + '[/SYSTEM_PROMPT]' }}{{- '[INST]' + "
                     "message['content'] + '[/INST]' }}";
    expect(v7, "<s>", "</s>", "mistral-v7", CONV, NCONV, true,
           "<s>[SYSTEM_PROMPT]You are terse.[/SYSTEM_PROMPT][INST]Hi there [/INST] Hello!</s>[INST]Name a color.[/INST]");
}

static void test_phi3(void **s) {
    (void)s;
    /* the template stored in shared/models/vocab/ggml-vocab-phi-3.gguf */
    cll_gguf *g = NULL;
    cll_tokenizer *t = NULL;
    if (cll_gguf_open(tu_shared("models/vocab/ggml-vocab-phi-3.gguf"), &g) != CLL_OK) tu_skip_test("phi-3 vocab missing");
    assert_int_equal(cll_tok_create(g, &t), CLL_OK);
    cll_chat_tmpl ct;
    cll_chat_init_gguf(&ct, g, t);
    assert_string_equal(cll_chat_name(&ct), "phi3");
    char buf[512];
    int64_t n = cll_chat_render(&ct, CONV, NCONV, true, buf, sizeof buf);
    const char *want = "<s><|user|>\nHi there <|end|>\n<|assistant|>\n Hello!<|end|>\n<|user|>\nName a color.<|end|>\n<|assistant|>\n";
    assert_int_equal(n, (int64_t)strlen(want));
    assert_string_equal(buf, want);
    /* the rendered text tokenizes with parse_special: <s> becomes the BOS id once */
    int32_t ids[256], k = 0;
    assert_int_equal(cll_tok_encode(t, buf, (size_t)n, false, true, ids, 256, &k), CLL_OK);
    assert_int_equal(ids[0], cll_tok_bos(t));
    assert_true(ids[1] != cll_tok_bos(t));
    assert_int_equal(ids[1], cll_tok_find(t, "<|user|>"));
    cll_tok_free(t);
    cll_gguf_free(g);
    /* phi-3.5 style: roles as tags, eos when no generation prompt */
    expect("{% for message in messages %}{{'<|' + message['role'] + '|>\\n' + message['content'] + '<|end|>\\n'}}"
           "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% endif %}",
           "<s>", "<|endoftext|>", "phi3", CONV, 2, false, "<|system|>\nYou are terse.<|end|>\n<|user|>\nHi there <|end|>\n<|endoftext|>");
}

static void test_deepseek_zephyr_vicuna(void **s) {
    (void)s;
    const char *dc = "{{bos_token}}{%- if not ns.found -%}{{'You are an AI programming assistant, utilizing the Deepseek "
                     "Coder model.\\n'}}{%- endif %}{{'### Instruction:\\n' + message['content'] + '\\n'}}";
    expect(dc, "<｜begin▁of▁sentence｜>", "<|EOT|>", "deepseek-coder", CONV + 1, 3, true,
           "<｜begin▁of▁sentence｜>You are an AI programming assistant, utilizing the Deepseek Coder model.\n"
           "### Instruction:\nHi there \n### Response:\n Hello!\n<|EOT|>\n### Instruction:\nName a color.\n### Response:");
    const char *dl = "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ 'User: ' + "
                     "message['content'] + '\\n\\n' }}{% elif message['role'] == 'assistant' %}{{ 'Assistant: ' + "
                     "message['content'] + eos_token }}";
    expect(dl, "<B>", "<E>", "deepseek-llm", CONV, 3, true, "<B>You are terse.\n\nUser: Hi there \n\nAssistant:  Hello!<E>Assistant:");
    expect("{{ '<|user|>\\n' + message['content'] + eos_token }}", "<s>", "</s>", "zephyr", CONV + 1, 1, true,
           "<|user|>\nHi there </s>\n<|assistant|>\n");
    expect("{{ 'USER: ' + content }}{{ 'ASSISTANT:' }}", "<s>", "</s>", "vicuna", CONV, 3, true,
           "You are terse.\n\nUSER: Hi there \nASSISTANT:  Hello!</s>\nASSISTANT:");
}

static void test_bad_args(void **s) {
    (void)s;
    cll_chat_tmpl ct;
    cll_chat_init(&ct, "<start_of_turn>", "<bos>", "<eos>");
    cll_chat_msg bad = {"user", NULL};
    assert_int_equal(cll_chat_render(&ct, &bad, 1, true, NULL, 0), -1);
    assert_int_equal(cll_chat_render(&ct, NULL, 1, true, NULL, 0), -1);
    assert_int_equal(cll_chat_render(&ct, NULL, 0, true, NULL, 0), (int64_t)strlen("<bos><start_of_turn>model\n"));
    assert_int_equal(cll_chat_family_by_name("gemma"), CLL_CHAT_GEMMA);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fallback_warned_at_first_render_only), /* first: see there */
        cmocka_unit_test(test_chatml_qwen), cmocka_unit_test(test_unknown_falls_back), cmocka_unit_test(test_llama2),
        cmocka_unit_test(test_llama3),      cmocka_unit_test(test_gemma),              cmocka_unit_test(test_mistral),
        cmocka_unit_test(test_phi3),        cmocka_unit_test(test_deepseek_zephyr_vicuna), cmocka_unit_test(test_bad_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
