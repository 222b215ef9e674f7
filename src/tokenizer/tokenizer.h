/* tokenizer: SPM and byte-level BPE vocabularies loaded from GGUF metadata, encode,
 * piece/whole decode, special tokens; chat templates live in tokenizer/chat.h.
 * Owns copies of nothing it can view: token texts point into the GGUF map, so the
 * cll_gguf must outlive the tokenizer. Rule: integer-exact with llama.cpp's
 * tokenizer for every vocab test in shared/models/vocab. */
#ifndef CLL_TOKENIZER_H
#define CLL_TOKENIZER_H

#include "gguf/gguf.h"

typedef struct cll_tokenizer cll_tokenizer;

typedef enum { CLL_TOK_SPM = 1, CLL_TOK_BPE = 2, CLL_TOK_WPM = 3 } cll_tok_kind;

cll_status cll_tok_create(const cll_gguf *g, cll_tokenizer **out);
void cll_tok_free(cll_tokenizer *t);

cll_tok_kind cll_tok_kind_of(const cll_tokenizer *t);
const char *cll_tok_kind_name(const cll_tokenizer *t); /* "spm", "bpe (llama-bpe)", ... */
int32_t cll_tok_n_vocab(const cll_tokenizer *t);
int32_t cll_tok_bos(const cll_tokenizer *t); /* -1 if none */
int32_t cll_tok_eos(const cll_tokenizer *t);
int32_t cll_tok_eot(const cll_tokenizer *t);
bool cll_tok_add_bos(const cll_tokenizer *t);
bool cll_tok_add_eos(const cll_tokenizer *t);
bool cll_tok_is_eog(const cll_tokenizer *t, int32_t id);
bool cll_tok_is_control(const cll_tokenizer *t, int32_t id);
/* raw token text as stored in the vocab (not detokenized) */
cll_str cll_tok_text(const cll_tokenizer *t, int32_t id);
/* find a token id by its exact vocab text, -1 if none */
int32_t cll_tok_find(const cll_tokenizer *t, const char *text);

/* Encode len bytes of text. Same contract as cllama_tokenize (include/cllama.h):
 * writes at most cap ids, *n_out = ids needed, CLL_ERR_RANGE if cap was too small. */
cll_status cll_tok_encode(const cll_tokenizer *t, const char *text, size_t len, bool add_special, bool parse_special,
                          int32_t *out, int32_t cap, int32_t *n_out);
/* one token's bytes; returns bytes needed, writes up to cap */
int32_t cll_tok_piece(const cll_tokenizer *t, int32_t id, char *buf, int32_t cap, bool special);
/* whole-sequence decode; returns bytes needed (excl. NUL), writes up to cap-1 + NUL.
 * Same as llama_detokenize(remove_special = false, unparse_special = special):
 * the first piece loses one leading space when the vocab adds a space prefix
 * (SPM); a BOS in front hides nothing (its piece is empty unless special), so
 * decode(encode(s, add_special=false)) == s where the vocab can spell s. */
int64_t cll_tok_decode(const cll_tokenizer *t, const int32_t *ids, int32_t n, char *buf, int64_t cap, bool special);
/* the full llama_detokenize: remove_special drops a leading BOS (then keeps the
 * space after it) and a trailing EOS when the vocab adds them. -1 on bad args/OOM. */
int64_t cll_tok_detokenize(const cll_tokenizer *t, const int32_t *ids, int32_t n, char *buf, int64_t cap,
                           bool remove_special, bool special);

#endif
