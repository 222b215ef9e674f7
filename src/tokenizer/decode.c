/* tokenizer/decode: token ids back to bytes, as llama.cpp's token_to_piece and
 * detokenize do: SPM pieces turn U+2581 into spaces and byte tokens into their
 * byte; BPE pieces map each code point back through the GPT-2 byte table;
 * control/unknown tokens print only when asked. The whole-sequence decode strips
 * the one space SPM put in front of the text and, for vocabularies that ask for
 * it (clean_spaces), undoes the tokenizer-side spacing of punctuation. */
#include "tokenizer/tok_internal.h"

#include <stdio.h>

bool cll_tok_utf8_next(const char *s, size_t n, size_t *i, uint32_t *cpt) {
    const uint8_t *u = (const uint8_t *)s;
    size_t o = *i;
    uint8_t c = u[o];
    if (!(c & 0x80)) { *cpt = c; *i = o + 1; return true; }
    if (!(c & 0x40)) goto bad;
    if (!(c & 0x20)) {
        if (o + 1 >= n || (u[o + 1] & 0xC0) != 0x80) goto bad;
        *cpt = ((uint32_t)(c & 0x1F) << 6) | (u[o + 1] & 0x3F);
        *i = o + 2;
        return true;
    }
    if (!(c & 0x10)) {
        if (o + 2 >= n || (u[o + 1] & 0xC0) != 0x80 || (u[o + 2] & 0xC0) != 0x80) goto bad;
        *cpt = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(u[o + 1] & 0x3F) << 6) | (u[o + 2] & 0x3F);
        *i = o + 3;
        return true;
    }
    if (!(c & 0x08)) {
        if (o + 3 >= n || (u[o + 1] & 0xC0) != 0x80 || (u[o + 2] & 0xC0) != 0x80 || (u[o + 3] & 0xC0) != 0x80) goto bad;
        *cpt = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(u[o + 1] & 0x3F) << 12) | ((uint32_t)(u[o + 2] & 0x3F) << 6) |
               (u[o + 3] & 0x3F);
        *i = o + 4;
        return true;
    }
bad:
    *cpt = 0xFFFD;
    *i = o + 1;
    return false;
}

/* bounded writer that can drop up to `strip` leading spaces of what it is given */
typedef struct {
    char *buf;
    size_t cap, n;
    int strip;
} emitter;

static void put(emitter *e, const char *s, size_t k) {
    for (size_t i = 0; i < k; i++) {
        if (e->strip > 0) {
            if (s[i] == ' ') { e->strip--; continue; }
            e->strip = 0;
        }
        if (e->n < e->cap) e->buf[e->n] = s[i];
        e->n++;
    }
    if (k) e->strip = 0;
}

static void piece(const cll_tokenizer *t, int32_t id, emitter *e, bool special) {
    if (id < 0 || id >= t->n_vocab) return;
    const tok_entry *te = &t->tok[id];
    uint16_t a = te->attr;
    if (!special && (a & (TOK_ATTR_UNKNOWN | TOK_ATTR_CONTROL))) return;
    if (a & (TOK_ATTR_UNKNOWN | TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED)) {
        put(e, te->text, te->len);
        return;
    }
    if (t->kind == CLL_TOK_SPM) {
        if (a & TOK_ATTR_NORMAL) {
            size_t st = 0;
            for (size_t i = 0; i < te->len; i++) {
                if (i + 2 < te->len && !memcmp(te->text + i, "\xe2\x96\x81", 3)) {
                    put(e, te->text + st, i - st);
                    put(e, " ", 1);
                    st = i + 3;
                    i += 2;
                }
            }
            put(e, te->text + st, te->len - st);
        } else if ((a & TOK_ATTR_BYTE) && te->len >= 5) {
            char hex[3] = {te->text[3], te->text[4], 0};
            char b = (char)strtol(hex, NULL, 16);
            put(e, &b, 1);
        }
        return;
    }
    if (a & TOK_ATTR_NORMAL) {
        for (size_t i = 0; i < te->len;) {
            uint32_t c;
            cll_tok_utf8_next(te->text, te->len, &i, &c);
            if (c < 512 && t->cpt2byte[c] >= 0) {
                char b = (char)t->cpt2byte[c];
                put(e, &b, 1);
            } else {
                /* llama.cpp's marker for a code point outside the byte table */
                char u8[4], tmp[16];
                int k = tok_utf8_put(c > 0x10FFFF ? 0xFFFD : c, u8);
                put(e, "[UNK_BYTE_0x", 12);
                for (int j = 0; j < k; j++) {
                    snprintf(tmp, sizeof tmp, "%02x", (uint8_t)u8[j]);
                    put(e, tmp, 2);
                }
                put(e, te->text, te->len);
                put(e, "]", 1);
            }
        }
    }
}

int32_t cll_tok_piece(const cll_tokenizer *t, int32_t id, char *buf, int32_t cap, bool special) {
    if (!t) return 0;
    emitter e = {buf, buf && cap > 0 ? (size_t)cap : 0, 0, 0};
    piece(t, id, &e, special);
    return e.n > INT32_MAX ? INT32_MAX : (int32_t)e.n;
}

/* llama.cpp's three clean-up passes (" ," -> ",", " ' " -> "'", " 's" -> "'s"...) */
static size_t clean_spaces(char *text, size_t total) {
    size_t t1 = total;
    total = total ? 1 : 0;
    for (size_t i = 1; i < t1; i++) {
        char x = text[i];
        if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) total--;
        text[total++] = x;
    }
    size_t t2 = total;
    total = total ? 1 : 0;
    for (size_t i = 1; i < t2; i++) {
        char x = text[i];
        if (x == '\'' && i + 1 < t2 && text[i - 1] == ' ' && text[i + 1] == ' ') {
            total--;
            text[++i] = '\0';
        }
        text[total++] = x;
    }
    size_t t3 = total;
    total = total ? 1 : 0;
    for (size_t i = 1; i < t3; i++) {
        char x = text[i];
        if (text[i - 1] == ' ' && x == '\'' && i + 1 < t3) {
            char x1 = text[i + 1];
            if (x1 == 't' || x1 == 'd') {
                /* " 't", " 'd" keep their space */
            } else if (x1 == 's' || x1 == 'm') {
                total--;
            } else if (i + 2 < t3) {
                char x2 = text[i + 2];
                if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) total--;
            }
        }
        text[total++] = x;
    }
    return total;
}

int64_t cll_tok_detokenize(const cll_tokenizer *t, const int32_t *ids, int32_t n, char *buf, int64_t cap,
                           bool remove_special, bool special) {
    if (!t || n < 0 || (!ids && n > 0) || cap < 0 || (!buf && cap > 0)) return -1;
    bool remove_space = t->add_space_prefix;
    if (remove_special && t->add_bos && n > 0 && ids[0] == t->bos) {
        remove_space = false;
        ids++;
        n--;
    }
    if (remove_special && t->add_eos && n > 0 && ids[n - 1] == t->eos) n--;
    /* measure, then render into a private buffer so the clean-up passes see it all */
    emitter m = {NULL, 0, 0, remove_space ? 1 : 0};
    for (int32_t i = 0; i < n; i++) {
        piece(t, ids[i], &m, special);
        m.strip = 0;
    }
    char *tmp = malloc(m.n + 1);
    if (!tmp) return -1;
    emitter e = {tmp, m.n, 0, remove_space ? 1 : 0};
    for (int32_t i = 0; i < n; i++) {
        piece(t, ids[i], &e, special);
        e.strip = 0;
    }
    size_t total = e.n;
    if (t->clean_spaces) total = clean_spaces(tmp, total);
    if (cap > 0) {
        size_t k = total < (size_t)cap - 1 ? total : (size_t)cap - 1;
        memcpy(buf, tmp, k);
        buf[k] = 0;
    }
    free(tmp);
    return (int64_t)total;
}

int64_t cll_tok_decode(const cll_tokenizer *t, const int32_t *ids, int32_t n, char *buf, int64_t cap, bool special) {
    return cll_tok_detokenize(t, ids, n, buf, cap, false, special);
}
