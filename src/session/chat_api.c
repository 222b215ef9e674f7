/* session/chat_api: cllama_chat_apply / cllama_chat_template_name over tokenizer/chat.h.
 * Until the chat template module lands these report that they are not built. */
#include "session/session.h"

int64_t cllama_chat_apply(const cllama_model *m, const cllama_chat_message *msgs, size_t n, bool add_generation_prompt,
                          char *buf, int64_t cap) {
    (void)m, (void)msgs, (void)n, (void)add_generation_prompt, (void)buf, (void)cap;
    cll_err(CLL_ERR_UNSUPPORTED, "chat templates are not built yet");
    return -1;
}

const char *cllama_chat_template_name(const cllama_model *m) {
    (void)m;
    return "none";
}
