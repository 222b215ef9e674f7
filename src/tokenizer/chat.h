/* chat: recognise a model's chat-template family from the text of
 * tokenizer.chat_template (by distinctive markers) and render messages the way that
 * Jinja template would, with a built-in renderer per family. Owns nothing but small
 * copies (BOS/EOS text, a default system prompt). Rule: templates are never
 * executed; a missing or unrecognised one renders as chatml, warned once a process at the first
 * render (loading only notes it at info level: most loads never chat).
 *
 * BOS rule: where the real template emits bos_token (llama-2, llama-3, gemma,
 * mistral, phi-3, deepseek), the rendered text starts with the BOS text ("<s>",
 * "<bos>", "<|begin_of_text|>"). Tokenize it with parse_special = true and
 * add_special = false, so the BOS text becomes the BOS id once. */
#ifndef CLL_CHAT_H
#define CLL_CHAT_H

#include "tokenizer/tokenizer.h"

typedef enum {
    CLL_CHAT_CHATML = 0,   /* <|im_start|>role\n...<|im_end|>\n (qwen, many others) */
    CLL_CHAT_LLAMA2,       /* <s>[INST] <<SYS>>\n..\n<</SYS>>\n\nuser [/INST] answer </s> */
    CLL_CHAT_LLAMA3,       /* <|begin_of_text|><|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> */
    CLL_CHAT_GEMMA,        /* <bos><start_of_turn>user\n...<end_of_turn>\n, assistant = model */
    CLL_CHAT_MISTRAL,      /* <s>[INST] user [/INST]answer</s> (v1/v2, no <<SYS>>) */
    CLL_CHAT_MISTRAL_V3,   /* <s>[INST] user[/INST] answer</s> */
    CLL_CHAT_MISTRAL_TEKKEN, /* <s>[INST]user[/INST]answer</s> (v3-tekken, nemo) */
    CLL_CHAT_MISTRAL_V7,   /* <s>[SYSTEM_PROMPT]..[/SYSTEM_PROMPT][INST]..[/INST]..</s> (tekken spacing) */
    CLL_CHAT_PHI3,         /* <|user|>\n...<|end|>\n<|assistant|>\n */
    CLL_CHAT_ZEPHYR,       /* <|user|>\n...</s>\n */
    CLL_CHAT_DEEPSEEK_CODER, /* ### Instruction:\n...\n### Response:\n...\n<|EOT|>\n */
    CLL_CHAT_DEEPSEEK_LLM, /* User: ...\n\nAssistant: ...<eos> */
    CLL_CHAT_DEEPSEEK3,    /* <｜User｜>...<｜Assistant｜>...<｜end▁of▁sentence｜> */
    CLL_CHAT_VICUNA,       /* USER: ...\nASSISTANT: ...</s>\n */
    CLL_CHAT_N_FAMILIES
} cll_chat_family;

typedef struct {
    const char *role;    /* "system", "user", "assistant" (other roles render like user where the family allows) */
    const char *content;
} cll_chat_msg;

typedef struct {
    cll_chat_family family;
    bool recognised;           /* false: fell back to chatml */
    char fallback[64];         /* why it fell back ("" when recognised) */
    char bos[64], eos[64];     /* token texts the template would print */
    char default_system[512];  /* system prompt the template inserts when none is given ("" = none) */
    uint32_t flags;            /* family variants (chat.c) */
} cll_chat_tmpl;

/* Recognise tmpl (NULL or "" -> chatml). bos/eos: the vocab's token texts (may be NULL). */
void cll_chat_init(cll_chat_tmpl *ct, const char *tmpl, const char *bos, const char *eos);
/* Same, reading tokenizer.chat_template from g and the BOS/EOS texts from t. */
void cll_chat_init_gguf(cll_chat_tmpl *ct, const cll_gguf *g, const cll_tokenizer *t);
const char *cll_chat_name(const cll_chat_tmpl *ct); /* "gemma", "chatml", "llama3", ... */
cll_chat_family cll_chat_family_by_name(const char *name); /* -1 cast if unknown */

/* Render; returns bytes needed (excluding NUL) and writes up to cap-1 bytes + NUL;
 * -1 on bad arguments (NULL message fields). */
int64_t cll_chat_render(const cll_chat_tmpl *ct, const cll_chat_msg *msgs, size_t n, bool add_generation_prompt,
                        char *buf, int64_t cap);

#endif
