/* server/stop: stop strings across token boundaries and UTF-8 hold-back. */
#include "server/stop.h"

#include <stdlib.h>
#include <string.h>

void cll_server_stop_init(cll_server_stop *s, char *const *stops, size_t n_stops) {
    memset(s, 0, sizeof *s);
    s->stops = stops;
    s->n_stops = n_stops;
    for (size_t i = 0; i < n_stops; i++) {
        size_t l = strlen(stops[i]);
        if (l > s->max_stop) s->max_stop = l;
    }
}

void cll_server_stop_free(cll_server_stop *s) {
    if (!s) return;
    free(s->buf);
    s->buf = NULL;
    s->len = s->cap = s->released = 0;
}

/* Start of a trailing UTF-8 sequence that is not complete yet, or len when the tail is whole.
 * Only a lead byte that announces more bytes than follow counts; stray bytes are released as
 * they are (the JSON writer replaces them). */
static size_t utf8_cut(const char *b, size_t from, size_t len) {
    for (size_t back = 1; back <= 3 && back <= len - from; back++) {
        unsigned char c = (unsigned char)b[len - back];
        if ((c & 0xC0) == 0x80) continue; /* continuation: keep looking for its lead */
        size_t need = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 1;
        return need > back ? len - back : len;
    }
    return len;
}

int cll_server_stop_push(cll_server_stop *s, const char *piece, size_t n, const char **out, size_t *out_n) {
    *out = NULL;
    *out_n = 0;
    if (s->stopped) return 1;
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 256;
        while (cap < s->len + n + 1) cap *= 2;
        char *nb = realloc(s->buf, cap);
        if (!nb) return -1;
        s->buf = nb;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, piece, n);
    s->len += n;
    s->buf[s->len] = 0;

    size_t start = s->released, safe = s->len;
    /* Earliest full match at or after the released point. A stop cannot begin before it:
     * any suffix that could grow into a stop string was held back. */
    size_t match = s->len + 1;
    for (size_t i = 0; i < s->n_stops; i++) {
        const char *hit = memmem(s->buf + start, s->len - start, s->stops[i], strlen(s->stops[i]));
        if (hit && (size_t)(hit - s->buf) < match) match = (size_t)(hit - s->buf);
    }
    if (match <= s->len) {
        s->stopped = true;
        s->len = match;
        s->buf[s->len] = 0;
        *out = s->buf + start;
        *out_n = match - start;
        s->released = match;
        return 1;
    }
    /* hold back the earliest tail that is a proper prefix of some stop string */
    if (s->max_stop > 1) {
        size_t from = s->len > s->max_stop - 1 ? s->len - (s->max_stop - 1) : 0;
        if (from < start) from = start;
        for (size_t p = from; p < s->len && safe == s->len; p++) {
            size_t tail = s->len - p;
            for (size_t i = 0; i < s->n_stops; i++) {
                size_t sl = strlen(s->stops[i]);
                if (sl > tail && !memcmp(s->buf + p, s->stops[i], tail)) {
                    safe = p;
                    break;
                }
            }
        }
    }
    safe = utf8_cut(s->buf, start, safe);
    *out = s->buf + start;
    *out_n = safe - start;
    s->released = safe;
    return 0;
}

void cll_server_stop_flush(cll_server_stop *s, const char **out, size_t *out_n) {
    *out = s->buf ? s->buf + s->released : "";
    *out_n = s->len - s->released;
    s->released = s->len;
}
