/* server_fuzz: libFuzzer target for the server's request parser and stop-string gate.
 * Input: the first byte picks chat vs completion; the rest is the request body. A parsed
 * request's stop strings then gate the body bytes cut into pieces, checking that what is
 * released is always a prefix of the accumulated text. Built by `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/req.h"
#include "server/stop.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    cll_server_req_kind kind = (data[0] & 1) ? CLL_SERVER_REQ_CHAT : CLL_SERVER_REQ_COMPLETION;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    cllama_sampler_params d;
    memset(&d, 0, sizeof d);
    cll_server_req r;
    cll_server_err e;
    if (cll_server_req_parse(kind, body, len, &d, &r, &e) != 0) {
        if (e.http < 400 || e.http > 599) abort();
        char *j = cll_server_err_json(&e);
        if (!j) abort();
        free(j);
        return 0;
    }
    /* gate the body through the request's stop strings in 1..7-byte pieces */
    cll_server_stop g;
    cll_server_stop_init(&g, r.stop, r.n_stop);
    size_t out = 0;
    for (size_t i = 0; i < len;) {
        size_t n = 1 + (data[i % size] % 7);
        if (n > len - i) n = len - i;
        const char *o;
        size_t on;
        int rc = cll_server_stop_push(&g, body + i, n, &o, &on);
        if (rc < 0) break;
        if (on && o != g.buf + out) abort(); /* released bytes must continue the prefix */
        out += on;
        if (out > g.len) abort();
        i += n;
        if (rc == 1) break;
    }
    const char *o;
    size_t on;
    cll_server_stop_flush(&g, &o, &on);
    if (out + on != g.len) abort();
    for (size_t i = 0; i < r.n_stop; i++)
        if (memmem(g.buf ? g.buf : "", g.len, r.stop[i], strlen(r.stop[i]))) abort(); /* stop text never out */
    cll_server_stop_free(&g);
    cll_server_req_free(&r);
    return 0;
}
