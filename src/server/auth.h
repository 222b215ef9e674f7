/* server/auth: API keys for `cllama serve --api-key/--api-key-file` and the check of an
 * `Authorization: Bearer KEY` header against them. Pure: libc only, no HTTP, so the unit
 * tests drive it directly.
 * Owns: the key strings in a cll_server_keys (free with cll_server_keys_free).
 * Rule: the check's time depends only on the configured keys, never on how much of a
 * presented key is right — every configured key is compared in full, with no early exit. */
#ifndef CLL_SERVER_AUTH_H
#define CLL_SERVER_AUTH_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char **keys;
    size_t n;
} cll_server_keys;

/* Add one key (copied). A key must be 1..4096 visible ASCII characters (0x21..0x7e): no
 * spaces or control bytes, which a Bearer header cannot carry. Returns 0, or -1 with a
 * message in err that never quotes the key. */
int cll_server_keys_add(cll_server_keys *k, const char *key, char *err, size_t errcap);
/* Add every key of a file: one key per line; surrounding whitespace and CR are trimmed,
 * blank lines and lines starting with '#' are skipped. A missing or unreadable file, a bad
 * key or a file with no key at all is an error (-1, message in err). */
int cll_server_keys_load_file(cll_server_keys *k, const char *path, char *err, size_t errcap);
void cll_server_keys_free(cll_server_keys *k);

/* Constant-time equality of key[0..klen) and cand[0..clen). The time depends on klen only:
 * every byte of the key is compared whatever cand holds; a length difference is folded in
 * at the end. cand must have at least one readable byte (a C string always has). */
bool cll_server_ct_equal(const char *key, size_t klen, const char *cand, size_t clen);

typedef enum {
    CLL_SERVER_AUTH_OK = 0,
    CLL_SERVER_AUTH_MISSING,    /* no Authorization header */
    CLL_SERVER_AUTH_SCHEME,     /* a scheme other than Bearer, or no token after it */
    CLL_SERVER_AUTH_WRONG_KEY,  /* Bearer with a key that matches none */
} cll_server_auth_result;

/* Check an Authorization header value (NULL = absent) against keys->keys. The scheme name is
 * matched case-insensitively (RFC 7235); the key itself is case-sensitive. With no keys
 * configured everything is OK. */
cll_server_auth_result cll_server_auth_check(const cll_server_keys *keys, const char *authorization);
/* the message of a 401 for this result (no key text in it) */
const char *cll_server_auth_message(cll_server_auth_result r);

#endif
