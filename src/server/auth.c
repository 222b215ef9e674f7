/* server/auth: API keys, their file format, and the constant-time Bearer check. */
#include "server/auth.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KEY_LEN 4096

static int key_valid(const char *s, size_t n) {
    if (n == 0 || n > MAX_KEY_LEN) return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e) return 0;
    return 1;
}

static int add_n(cll_server_keys *k, const char *key, size_t n, char *err, size_t errcap, const char *where) {
    if (!key_valid(key, n)) {
        snprintf(err, errcap,
                 "%s: an API key must be 1 to %d visible ASCII characters (no spaces, tabs or control bytes)", where,
                 MAX_KEY_LEN);
        return -1;
    }
    char *c = malloc(n + 1);
    char **grown = realloc(k->keys, (k->n + 1) * sizeof *grown);
    if (!c || !grown) {
        free(c);
        if (grown) k->keys = grown;
        snprintf(err, errcap, "%s: out of memory", where);
        return -1;
    }
    memcpy(c, key, n);
    c[n] = 0;
    k->keys = grown;
    k->keys[k->n++] = c;
    return 0;
}

int cll_server_keys_add(cll_server_keys *k, const char *key, char *err, size_t errcap) {
    return add_n(k, key ? key : "", key ? strlen(key) : 0, err, errcap, "--api-key");
}

int cll_server_keys_load_file(cll_server_keys *k, const char *path, char *err, size_t errcap) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errcap, "cannot read --api-key-file %s: %s", path, strerror(errno));
        return -1;
    }
    char line[MAX_KEY_LEN + 64];
    int lineno = 0, added = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t n = strlen(line);
        if (n == sizeof line - 1 && line[n - 1] != '\n' && !feof(f)) {
            snprintf(err, errcap, "--api-key-file %s: line %d is longer than %d characters", path, lineno,
                     MAX_KEY_LEN);
            rc = -1;
            break;
        }
        char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        n = strlen(s);
        while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
        if (n == 0 || s[0] == '#') continue;
        char where[512];
        snprintf(where, sizeof where, "--api-key-file %s, line %d", path, lineno);
        if (add_n(k, s, n, err, errcap, where)) {
            rc = -1;
            break;
        }
        added++;
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errcap, "cannot read --api-key-file %s: %s", path, strerror(errno));
        rc = -1;
    }
    fclose(f);
    /* the line buffer held a key: do not leave it on the stack */
    memset(line, 0, sizeof line);
    __asm__ __volatile__("" : : "r"(line) : "memory");
    if (rc == 0 && added == 0) {
        snprintf(err, errcap, "--api-key-file %s holds no key (blank lines and '#' comment lines do not count)", path);
        rc = -1;
    }
    return rc;
}

void cll_server_keys_free(cll_server_keys *k) {
    if (!k) return;
    for (size_t i = 0; i < k->n; i++) {
        memset(k->keys[i], 0, strlen(k->keys[i]));
        __asm__ __volatile__("" : : "r"(k->keys[i]) : "memory");
        free(k->keys[i]);
    }
    free(k->keys);
    k->keys = NULL;
    k->n = 0;
}

bool cll_server_ct_equal(const char *key, size_t klen, const char *cand, size_t clen) {
    const unsigned char *a = (const unsigned char *)key, *b = (const unsigned char *)cand;
    unsigned diff = 0;
    for (size_t i = 0; i < klen; i++) {
        /* in = all ones while i < clen, else zero; past its end cand[0] is read and masked
         * out, so the loop does the same work whatever the candidate's length */
        const size_t in = (size_t)0 - (size_t)(i < clen);
        const unsigned char c = (unsigned char)(b[i & in] & (unsigned char)in);
        diff |= (unsigned)(a[i] ^ c);
    }
    /* a length difference makes the answer false without a branch on where it differs */
    const size_t ld = klen ^ clen;
    diff |= (unsigned)((ld | ((size_t)0 - ld)) >> (sizeof(size_t) * 8 - 1));
    return diff == 0;
}

cll_server_auth_result cll_server_auth_check(const cll_server_keys *keys, const char *h) {
    if (!keys || keys->n == 0) return CLL_SERVER_AUTH_OK;
    if (!h) return CLL_SERVER_AUTH_MISSING;
    while (*h == ' ' || *h == '\t') h++;
    /* scheme: "Bearer", any case, then at least one space */
    static const char scheme[] = "bearer";
    for (size_t i = 0; i < sizeof scheme - 1; i++)
        if ((h[i] | 0x20) != scheme[i]) return CLL_SERVER_AUTH_SCHEME;
    h += sizeof scheme - 1;
    if (*h != ' ' && *h != '\t') return CLL_SERVER_AUTH_SCHEME;
    while (*h == ' ' || *h == '\t') h++;
    size_t n = strlen(h);
    while (n && (h[n - 1] == ' ' || h[n - 1] == '\t')) n--;
    if (n == 0) return CLL_SERVER_AUTH_SCHEME;
    /* every key in full, results OR-ed: no exit on the first match either */
    volatile unsigned ok = 0;
    for (size_t i = 0; i < keys->n; i++) ok |= (unsigned)cll_server_ct_equal(keys->keys[i], strlen(keys->keys[i]), h, n);
    return ok ? CLL_SERVER_AUTH_OK : CLL_SERVER_AUTH_WRONG_KEY;
}

const char *cll_server_auth_message(cll_server_auth_result r) {
    switch (r) {
    case CLL_SERVER_AUTH_MISSING:
        return "missing API key: this server needs the header 'Authorization: Bearer <key>'";
    case CLL_SERVER_AUTH_SCHEME:
        return "malformed Authorization header: expected 'Authorization: Bearer <key>'";
    case CLL_SERVER_AUTH_WRONG_KEY:
        return "invalid API key";
    default:
        return "ok";
    }
}
