/* tune_fuzz: libFuzzer target for the tune sidecar reader (src/tune/sidecar.c): any bytes either
 * parse into a sidecar whose strings are terminated and whose counts match its arrays, which then
 * writes and re-reads to the same entries, or fail with a status; never a crash. Built by
 * `make fuzz`. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tune/tune.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cll_tune_sidecar *sc = NULL;
    if (cll_tune_parse((const char *)data, size, "fuzz", &sc) != CLL_OK) {
        if (sc) abort();
        return 0;
    }
    if (!sc || sc->n_sites < 0 || sc->n_runtime < 0) abort();
    for (int i = 0; i < sc->n_sites; i++) {
        const cll_tune_entry *e = &sc->sites[i];
        if (strnlen(e->site, sizeof e->site) == sizeof e->site || strnlen(e->variant, sizeof e->variant) == sizeof e->variant ||
            strnlen(e->source_hash, sizeof e->source_hash) == sizeof e->source_hash)
            abort();
    }
    /* a parsed sidecar writes and reads back to the same sites */
    char path[64];
    snprintf(path, sizeof path, "/tmp/tune_fuzz_%d.json", (int)getpid());
    if (cll_tune_write(path, sc) == CLL_OK) {
        cll_tune_sidecar *rd = NULL;
        if (cll_tune_read(path, &rd) != CLL_OK || rd->n_sites != sc->n_sites) abort();
        for (int i = 0; i < sc->n_sites; i++)
            if (strcmp(rd->sites[i].site, sc->sites[i].site) || strcmp(rd->sites[i].variant, sc->sites[i].variant)) abort();
        cll_tune_free(rd);
    }
    unlink(path);
    char bak[80];
    snprintf(bak, sizeof bak, "%s.bak", path);
    unlink(bak);
    cll_tune_free(sc);
    return 0;
}
