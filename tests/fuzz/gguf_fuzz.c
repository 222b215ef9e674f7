/* gguf_fuzz: libFuzzer target for the GGUF reader. Parses the input with
 * cll_gguf_open_mem, then walks every accessor (each kv through every typed getter,
 * every array element, every tensor and the first/last byte of its data) so ASan sees
 * any view that points outside the input. Traps on broken invariants: a failed open
 * with an empty or multi-line message, a lookup that does not find its own entry. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

static volatile uint64_t g_sink; /* keeps the reads from being optimised away */

static void walk_kv(const cll_gguf *g, const cll_gguf_kv *kv) {
    char key[512];
    size_t n = kv->key.len < sizeof key - 1 ? (size_t)kv->key.len : sizeof key - 1;
    memcpy(key, kv->key.ptr, n);
    key[n] = 0;
    /* keys are unique, so a lookup by the whole key (without NULs inside) finds this one */
    if (n == kv->key.len && !memchr(key, 0, n)) CHECK(cll_gguf_find(g, key) == kv);
    uint32_t u32; int32_t i32; uint64_t u64; float f; bool b; cll_str s; char buf[16];
    g_sink += cll_gguf_get_u32(g, key, &u32) + cll_gguf_get_i32(g, key, &i32) + cll_gguf_get_u64(g, key, &u64) +
              cll_gguf_get_f32(g, key, &f) + cll_gguf_get_bool(g, key, &b) + cll_gguf_get_str(g, key, &s) +
              cll_gguf_get_cstr(g, key, buf, sizeof buf);
    if (kv->type == CLL_GGUF_STRING && kv->str.len) g_sink += (uint8_t)kv->str.ptr[kv->str.len - 1];
    if (kv->type != CLL_GGUF_ARRAY) return;
    for (uint64_t i = 0; i <= kv->arr_n; i++) { /* one past the end on purpose */
        cll_str e = cll_gguf_arr_str(g, kv, i);
        if (i == kv->arr_n) CHECK(e.ptr == NULL);
        if (e.ptr && e.len) g_sink += (uint8_t)e.ptr[0] + (uint8_t)e.ptr[e.len - 1];
        g_sink += (uint64_t)cll_gguf_arr_int(kv, i);
        float x = cll_gguf_arr_f32(kv, i);
        g_sink += x == x;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cll_gguf *g = NULL;
    cll_clear_error();
    if (cll_gguf_open_mem(data, size, &g) != CLL_OK) {
        const char *m = cll_last_error();
        CHECK(g == NULL && m[0] && !strchr(m, '\n'));
        return 0;
    }
    CHECK(cll_gguf_version(g) >= 1 && cll_gguf_version(g) <= 3);
    uint32_t a = cll_gguf_alignment(g);
    CHECK(a && !(a & (a - 1)));
    for (uint64_t i = 0; i < cll_gguf_n_kv(g); i++) walk_kv(g, cll_gguf_kv_at(g, i));
    CHECK(cll_gguf_kv_at(g, cll_gguf_n_kv(g)) == NULL);
    for (uint64_t i = 0; i < cll_gguf_n_tensors(g); i++) {
        const cll_gguf_tensor *t = cll_gguf_tensor_at(g, i);
        CHECK(t && t->n_dims >= 1 && t->n_dims <= CLL_GGUF_MAX_DIMS && t->nbytes > 0);
        const uint8_t *p = t->data;
        CHECK(p >= data && p + t->nbytes <= data + size);
        g_sink += p[0] + p[t->nbytes - 1];
        char name[512];
        size_t n = t->name.len < sizeof name - 1 ? (size_t)t->name.len : sizeof name - 1;
        memcpy(name, t->name.ptr, n);
        name[n] = 0;
        if (n == t->name.len && !memchr(name, 0, n)) CHECK(cll_gguf_find_tensor(g, name) == t);
    }
    CHECK(cll_gguf_tensor_at(g, cll_gguf_n_tensors(g)) == NULL);
    cll_gguf_free(g);
    return 0;
}
