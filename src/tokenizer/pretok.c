/* tokenizer/pretok: the BPE pre-tokenizer. tokenizer.ggml.pre names a family; a
 * family is a list of split regexes (the ones llama.cpp uses, PCRE2 syntax) applied
 * one after the other: each regex cuts every current chunk into its matches and the
 * unmatched gaps between them, and a later regex only sees inside one chunk (so a
 * lookahead stops at the chunk's end, as with llama.cpp's per-chunk std::regex).
 *
 * Text is matched the way llama.cpp sees it: invalid UTF-8 becomes U+FFFD first,
 * and every non-ASCII whitespace code point is collapsed to \x0B (llama.cpp's
 * std::regex only knows ASCII \s), so the patterns are compiled with PCRE2_UTF but
 * not PCRE2_UCP: \s is ASCII, \p{L}/\p{N}/\p{P} are Unicode. */
#include "tokenizer/tok_internal.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>

#define MAX_RE 8

struct tok_pretok {
    int n;
    pcre2_code *re[MAX_RE];
};

/* ---- the split regexes, named by the families that use them ---- */

/* gpt-2, mpt, olmo, jais, trillion (and the middle step of several others) */
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
/* llama3 / llama-bpe, dbrx, smaug, chatglm4: (?i:'s|...) spelled out case by case */
#define RE_LLAMA3                                                                                                   \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "         \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* qwen2, stablelm2, hunyuan: llama3 with single digits */
#define RE_QWEN2                                                                                                    \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "              \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* poro, bloom, gpt3-finnish, viking */
#define RE_PORO " ?[^(\\s|.,!?…。，、।۔،)]+"
/* tekken: upper/lower-case runs via lookaheads, as llama.cpp adapted them */
#define RE_TEKKEN                                                                                                   \
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+(" \
    "(?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* gpt-4o, llama4 */
#define RE_GPT4O                                                                                                    \
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL]" \
    "[lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV]" \
    "[eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* seed-coder */
#define RE_SEED_CODER                                                                                               \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| "           \
    "?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* bailingmoe */
#define RE_BAILING                                                                                                  \
    "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "                             \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

static const char *const FAM_DEFAULT[] = {"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]", NULL};
static const char *const FAM_GPT2[] = {RE_GPT2, NULL};
static const char *const FAM_LLAMA3[] = {RE_LLAMA3, NULL};
static const char *const FAM_QWEN2[] = {RE_QWEN2, NULL};
static const char *const FAM_DEEPSEEK_LLM[] = {
    "[\r\n]",
    /* cased letters; written as code points because the literal characters (U+1F7D,
     * U+2126, U+212A, ...) do not survive Unicode normalisation by editors */
    "\\s?[\\x{41}-\\x{5A}\\x{61}-\\x{7A}\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}"
    "\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}-\\x{377}"
    "\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}"
    "\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}"
    "\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}"
    "\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}"
    "\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}"
    "\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}"
    "\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}"
    "\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}"
    "\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}-\\x{2184}"
    "\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}-\\x{2CF3}\\x{A640}-\\x{A66D}"
    "\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}"
    "\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}"
    "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}"
    "\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+",
    "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
    "\\s+$",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}+",
    NULL};
static const char *const FAM_DEEPSEEK_CODER[] = {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}", NULL};
static const char *const FAM_DEEPSEEK3[] = {
    "\\p{N}{1,3}",
    "[一-龥\u3040-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
    "?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const FAM_FALCON[] = {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2, "[0-9][0-9][0-9]", NULL};
/* starcoder, refact, command-r, smollm, codeshell, exaone, minerva: digits one by one */
static const char *const FAM_STARCODER[] = {"\\p{N}", RE_GPT2, NULL};
static const char *const FAM_PORO[] = {RE_PORO, NULL};
static const char *const FAM_VIKING[] = {RE_PORO, "\\p{N}", NULL};
static const char *const FAM_TEKKEN[] = {RE_TEKKEN, NULL};
static const char *const FAM_CHAMELEON[] = {
    "<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
    "[\\p{P}!-/:-@\\[-`{-~]", RE_GPT2, NULL};
static const char *const FAM_GPT4O[] = {RE_GPT4O, NULL};
static const char *const FAM_SUPERBPE[] = {"\\p{N}+", "(?=(\\d{3})+(?!\\d))", NULL};
static const char *const FAM_SEED_CODER[] = {RE_SEED_CODER, NULL};
static const char *const FAM_BAILING[] = {RE_BAILING, NULL};

enum { F_IGNORE_MERGES = 1, F_ADD_BOS = 2, F_KEEP_SPACES = 4 /* clean_spaces off */, F_NO_BOS = 8 };

typedef struct {
    const char *names; /* '|'-separated values of tokenizer.ggml.pre */
    const char *const *re;
    int flags;
} family;

static const family FAMILIES[] = {
    {"default", FAM_DEFAULT, 0},
    {"llama3|llama-v3|llama-bpe|falcon3|falcon-h1|pixtral|midm-2.0|lfm2", FAM_LLAMA3, F_IGNORE_MERGES | F_ADD_BOS},
    {"dbrx|smaug-bpe", FAM_LLAMA3, 0},
    {"deepseek-llm", FAM_DEEPSEEK_LLM, F_KEEP_SPACES},
    {"deepseek-coder", FAM_DEEPSEEK_CODER, F_KEEP_SPACES},
    {"deepseek-v3|hunyuan-dense", FAM_DEEPSEEK3, F_KEEP_SPACES},
    {"falcon", FAM_FALCON, 0},
    {"mpt|olmo|jais|gpt-2|phi-2|jina-es|jina-de|gigachat|jina-v1-en|jina-v2-es|jina-v2-de|jina-v2-code|roberta-bpe|"
     "a.x-4.0|mellum",
     FAM_GPT2, 0},
    {"trillion", FAM_GPT2, F_KEEP_SPACES},
    {"starcoder|refact|codeshell|exaone|minerva-7b", FAM_STARCODER, 0},
    {"command-r|smollm", FAM_STARCODER, F_KEEP_SPACES},
    {"qwen2|deepseek-r1-qwen|megrez|hunyuan", FAM_QWEN2, F_KEEP_SPACES},
    {"stablelm2", FAM_QWEN2, 0},
    {"poro-chat", FAM_PORO, F_KEEP_SPACES},
    {"bloom|gpt3-finnish", FAM_PORO, 0},
    {"viking", FAM_VIKING, F_KEEP_SPACES},
    {"glm4|chatglm-bpe", FAM_LLAMA3, F_NO_BOS},
    {"tekken", FAM_TEKKEN, F_IGNORE_MERGES | F_ADD_BOS | F_KEEP_SPACES},
    {"chameleon", FAM_CHAMELEON, F_ADD_BOS | F_KEEP_SPACES},
    {"gpt-4o|llama4", FAM_GPT4O, F_KEEP_SPACES},
    {"superbpe", FAM_SUPERBPE, F_KEEP_SPACES},
    {"seed-coder", FAM_SEED_CODER, F_KEEP_SPACES},
    {"bailingmoe|llada-moe", FAM_BAILING, F_KEEP_SPACES},
    {NULL, NULL, 0},
};

static bool name_in(const char *names, const char *pre) {
    size_t n = strlen(pre);
    for (const char *p = names; *p;) {
        const char *bar = strchr(p, '|');
        size_t k = bar ? (size_t)(bar - p) : strlen(p);
        if (k == n && !memcmp(p, pre, n)) return true;
        if (!bar) break;
        p = bar + 1;
    }
    return false;
}

void cll_tok_pretok_free(tok_pretok *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) pcre2_code_free(p->re[i]);
    free(p);
}

cll_status cll_tok_pretok_init(cll_tokenizer *t, const char *pre) {
    const family *f = NULL;
    if (!pre[0]) {
        cll_log(CLL_LOG_WARN, "tokenizer: BPE vocab without tokenizer.ggml.pre; using the default pre-tokenizer");
        f = &FAMILIES[0];
    }
    for (int i = 0; !f && FAMILIES[i].names; i++)
        if (name_in(FAMILIES[i].names, pre)) f = &FAMILIES[i];
    if (!f) return cll_err(CLL_ERR_UNSUPPORTED, "tokenizer: unknown pre-tokenizer type '%s'", pre);
    t->ignore_merges = f->flags & F_IGNORE_MERGES;
    if (f->flags & F_ADD_BOS) t->add_bos = true;
    if (f->flags & F_KEEP_SPACES) t->clean_spaces = false;
    t->pre_no_bos = f->flags & F_NO_BOS;

    tok_pretok *p = calloc(1, sizeof *p);
    if (!p) return cll_err(CLL_ERR_NOMEM, "tokenizer: pre-tokenizer");
    t->pre = p;
    for (int i = 0; f->re[i] && i < MAX_RE; i++) {
        int err;
        PCRE2_SIZE eoff;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)f->re[i], PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_DOLLAR_ENDONLY,
                                       &err, &eoff, NULL);
        if (!re) {
            char msg[256];
            pcre2_get_error_message(err, (PCRE2_UCHAR *)msg, sizeof msg);
            return cll_err(CLL_ERR_INTERNAL, "tokenizer: split regex %d of '%s' at %zu: %s", i, pre, (size_t)eoff, msg);
        }
        pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* falls back to the interpreter if JIT is unavailable */
        p->re[p->n++] = re;
    }
    return CLL_OK;
}

/* Unicode White_Space, the set llama.cpp's unicode tables flag as whitespace */
static bool is_ws(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

void cll_tok_words_free(tok_words *w) {
    free(w->norm);
    free(w->len);
    memset(w, 0, sizeof *w);
}

static bool push_len(size_t **v, size_t *n, size_t *cap, size_t x) {
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        size_t *nv = realloc(*v, nc * sizeof *nv);
        if (!nv) return false;
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = x;
    return true;
}

/* cut one chunk with one regex: matches and the gaps between them */
static bool split_chunk(const pcre2_code *re, pcre2_match_data *md, const char *subj, size_t clen, size_t **out,
                        size_t *n, size_t *cap) {
    size_t off = 0, prev = 0;
    uint32_t opts = PCRE2_NO_UTF_CHECK;
    while (off <= clen) {
        int rc = pcre2_match(re, (PCRE2_SPTR)subj, clen, off, opts, md, NULL);
        if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) return false;
        if (rc == PCRE2_ERROR_NOMATCH) {
            if (!(opts & PCRE2_ANCHORED)) break;
            /* no non-empty match right after an empty one: step one character on */
            opts = PCRE2_NO_UTF_CHECK;
            if (off >= clen) break;
            off += tok_utf8_len((uint8_t)subj[off]);
            continue;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t s = ov[0], e = ov[1];
        if (s > prev && !push_len(out, n, cap, s - prev)) return false;
        if (e > s && !push_len(out, n, cap, e - s)) return false;
        prev = e;
        off = e;
        /* after an empty match, std::regex_iterator first looks for a non-empty one at the same place */
        opts = e == s ? PCRE2_NO_UTF_CHECK | PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED : PCRE2_NO_UTF_CHECK;
    }
    if (prev < clen && !push_len(out, n, cap, clen - prev)) return false;
    return true;
}

cll_status cll_tok_pretok_split(const cll_tokenizer *t, const char *text, size_t len, tok_words *w) {
    memset(w, 0, sizeof *w);
    const tok_pretok *p = t->pre;
    /* normalise: lenient decode, invalid -> U+FFFD, out-of-range -> U+FFFD */
    w->norm = malloc(len * 3 + 1);
    if (!w->norm) return cll_err(CLL_ERR_NOMEM, "tokenize: %zu bytes", len);
    size_t nl = 0;
    bool need_map = false, has_sur = false;
    for (size_t i = 0; i < len;) {
        uint32_t c;
        cll_tok_utf8_next(text, len, &i, &c);
        if (c > 0x10FFFF) c = 0xFFFD;
        if (c >= 0xD800 && c <= 0xDFFF) has_sur = true;
        if (c >= 0x80 && is_ws(c)) need_map = true;
        nl += (size_t)tok_utf8_put(c, w->norm + nl);
    }
    w->norm_len = nl;

    /* the text the regexes see: non-ASCII whitespace -> \x0B, surrogates -> U+E000
     * (same length, also "other"); map[] takes match offsets back to norm offsets */
    char *mt = w->norm;
    size_t ml = nl, *map = NULL;
    if (need_map || has_sur) {
        mt = malloc(nl + 1);
        map = need_map ? malloc((nl + 1) * sizeof *map) : NULL;
        if (!mt || (need_map && !map)) {
            free(mt == w->norm ? NULL : mt);
            free(map);
            return cll_err(CLL_ERR_NOMEM, "tokenize: %zu bytes", len);
        }
        ml = 0;
        for (size_t i = 0; i < nl;) {
            size_t s0 = i;
            uint32_t c;
            cll_tok_utf8_next(w->norm, nl, &i, &c);
            if (map) map[ml] = s0;
            if (c >= 0x80 && is_ws(c)) {
                mt[ml++] = 0x0B;
            } else if (c >= 0xD800 && c <= 0xDFFF) {
                memcpy(mt + ml, "\xee\x80\x80", 3);
                if (map) { map[ml + 1] = s0 + 1; map[ml + 2] = s0 + 2; }
                ml += 3;
            } else {
                for (size_t k = s0; k < i; k++) {
                    if (map) map[ml] = k;
                    mt[ml++] = w->norm[k];
                }
            }
        }
        if (map) map[ml] = nl;
    }

    cll_status st = CLL_OK;
    size_t *cur = NULL, ncur = 0, ccur = 0, *nxt = NULL, nnxt = 0, cnxt = 0;
    pcre2_match_data *md = pcre2_match_data_create(16, NULL);
    if (!md || !push_len(&cur, &ncur, &ccur, ml)) { st = cll_err(CLL_ERR_NOMEM, "tokenize: split"); goto out; }
    if (ml == 0) ncur = 0;
    for (int r = 0; r < p->n; r++) {
        nnxt = 0;
        size_t start = 0;
        for (size_t c = 0; c < ncur; c++) {
            if (!split_chunk(p->re[r], md, mt + start, cur[c], &nxt, &nnxt, &cnxt)) {
                st = cll_err(CLL_ERR_NOMEM, "tokenize: split regex failed");
                goto out;
            }
            start += cur[c];
        }
        size_t *tv = cur; cur = nxt; nxt = tv;
        size_t tc = ccur; ccur = cnxt; cnxt = tc;
        ncur = nnxt;
    }
    /* back to norm coordinates */
    if (map) {
        size_t mpos = 0;
        for (size_t c = 0; c < ncur; c++) {
            size_t a = map[mpos], b = map[mpos + cur[c]];
            mpos += cur[c];
            cur[c] = b - a;
        }
    }
    w->len = cur;
    w->n = ncur;
    w->cap = ccur;
    cur = NULL;
out:
    pcre2_match_data_free(md);
    free(cur);
    free(nxt);
    if (mt != w->norm) free(mt);
    free(map);
    return st;
}
