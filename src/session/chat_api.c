/* session/chat_api: cllama_chat_apply / cllama_chat_template_name over tokenizer/chat.h
 * (the template family is recognised once, at model load). */
#include <stdlib.h>

#include "session/session.h"

int64_t cllama_chat_apply(const cllama_model *m, const cllama_chat_message *msgs, size_t n, bool add_generation_prompt,
                          char *buf, int64_t cap) {
    if (!m || (!msgs && n) || (!buf && cap > 0)) {
        cll_err(CLL_ERR_ARG, "cllama_chat_apply: NULL argument");
        return -1;
    }
    cll_chat_msg *cm = malloc(sizeof *cm * (n ? n : 1));
    if (!cm) {
        cll_err(CLL_ERR_NOMEM, "cllama_chat_apply: out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) cm[i] = (cll_chat_msg){msgs[i].role, msgs[i].content};
    const int64_t r = cll_chat_render(&m->chat, cm, n, add_generation_prompt, buf, cap);
    free(cm);
    if (r < 0) cll_err(CLL_ERR_ARG, "cllama_chat_apply: a message has a NULL role or content");
    return r;
}

const char *cllama_chat_template_name(const cllama_model *m) { return m ? cll_chat_name(&m->chat) : ""; }
