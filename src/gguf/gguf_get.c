/* gguf/get: read-only accessors over a parsed file — header facts, metadata lookup,
 * typed getters with range checks, array elements, tensors. All reads of values go
 * through memcpy because values in the map are not aligned. */
#include "gguf/gguf_internal.h"

#include <string.h>

uint32_t cll_gguf_version(const cll_gguf *g) { return g ? g->version : 0; }
uint64_t cll_gguf_file_size(const cll_gguf *g) { return g ? g->size : 0; }
uint32_t cll_gguf_alignment(const cll_gguf *g) { return g ? g->alignment : 0; }
uint64_t cll_gguf_data_offset(const cll_gguf *g) { return g ? g->data_offset : 0; }
const uint8_t *cll_gguf_base(const cll_gguf *g) { return g ? g->base : NULL; }

uint64_t cll_gguf_n_kv(const cll_gguf *g) { return g ? g->n_kv : 0; }
const cll_gguf_kv *cll_gguf_kv_at(const cll_gguf *g, uint64_t i) {
    return g && i < g->n_kv ? &g->kv[i] : NULL;
}
const cll_gguf_kv *cll_gguf_find(const cll_gguf *g, const char *key) {
    if (!g) return NULL;
    uint64_t i = cll_gguf_index_find(&g->kv_index, g->kv, sizeof *g->kv, key);
    return i == UINT64_MAX ? NULL : &g->kv[i];
}

uint64_t cll_gguf_n_tensors(const cll_gguf *g) { return g ? g->n_tensors : 0; }
const cll_gguf_tensor *cll_gguf_tensor_at(const cll_gguf *g, uint64_t i) {
    return g && i < g->n_tensors ? &g->tensors[i] : NULL;
}
const cll_gguf_tensor *cll_gguf_find_tensor(const cll_gguf *g, const char *name) {
    if (!g) return NULL;
    uint64_t i = cll_gguf_index_find(&g->tensor_index, g->tensors, sizeof *g->tensors, name);
    return i == UINT64_MAX ? NULL : &g->tensors[i];
}

/* ---- scalar decoding ------------------------------------------------------------ */

/* integer value of an element of type t at p: *neg tells whether it is negative;
 * *uv holds it when non-negative (0 otherwise), *sv as int64 (clamped at INT64_MAX) */
static bool read_int(uint32_t t, const uint8_t *p, bool *neg, uint64_t *uv, int64_t *sv) {
    uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; uint64_t u64; int64_t i64;
    switch (t) {
    case CLL_GGUF_U8: memcpy(&u8, p, 1); *uv = u8; break;
    case CLL_GGUF_BOOL: memcpy(&u8, p, 1); *uv = u8 != 0; break;
    case CLL_GGUF_U16: memcpy(&u16, p, 2); *uv = u16; break;
    case CLL_GGUF_U32: memcpy(&u32, p, 4); *uv = u32; break;
    case CLL_GGUF_U64: memcpy(&u64, p, 8); *uv = u64; break;
    case CLL_GGUF_I8: memcpy(&i8, p, 1); *sv = i8; goto sgn;
    case CLL_GGUF_I16: memcpy(&i16, p, 2); *sv = i16; goto sgn;
    case CLL_GGUF_I32: memcpy(&i32, p, 4); *sv = i32; goto sgn;
    case CLL_GGUF_I64: memcpy(&i64, p, 8); *sv = i64; goto sgn;
    default: return false;
    }
    *neg = false;
    *sv = *uv > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)*uv;
    return true;
sgn:
    *neg = *sv < 0;
    *uv = *neg ? 0 : (uint64_t)*sv;
    return true;
}

static bool is_int_type(uint32_t t) {
    return t == CLL_GGUF_U8 || t == CLL_GGUF_I8 || t == CLL_GGUF_U16 || t == CLL_GGUF_I16 || t == CLL_GGUF_U32 ||
           t == CLL_GGUF_I32 || t == CLL_GGUF_U64 || t == CLL_GGUF_I64;
}

static bool kv_int(const cll_gguf *g, const char *key, bool *neg, uint64_t *uv, int64_t *sv) {
    const cll_gguf_kv *kv = cll_gguf_find(g, key);
    if (!kv || !is_int_type(kv->type)) return false;
    return read_int(kv->type, kv->raw, neg, uv, sv);
}

bool cll_gguf_get_u32(const cll_gguf *g, const char *key, uint32_t *out) {
    bool neg; uint64_t uv; int64_t sv;
    if (!kv_int(g, key, &neg, &uv, &sv) || neg || uv > UINT32_MAX) return false;
    *out = (uint32_t)uv;
    return true;
}

bool cll_gguf_get_i32(const cll_gguf *g, const char *key, int32_t *out) {
    bool neg; uint64_t uv; int64_t sv;
    if (!kv_int(g, key, &neg, &uv, &sv)) return false;
    if (neg ? sv < INT32_MIN : uv > INT32_MAX) return false;
    *out = (int32_t)sv;
    return true;
}

bool cll_gguf_get_u64(const cll_gguf *g, const char *key, uint64_t *out) {
    bool neg; uint64_t uv; int64_t sv;
    if (!kv_int(g, key, &neg, &uv, &sv) || neg) return false;
    *out = uv;
    return true;
}

bool cll_gguf_get_f32(const cll_gguf *g, const char *key, float *out) {
    const cll_gguf_kv *kv = cll_gguf_find(g, key);
    if (!kv) return false;
    if (kv->type == CLL_GGUF_F32) {
        memcpy(out, kv->raw, 4);
        return true;
    }
    if (kv->type == CLL_GGUF_F64) {
        double d;
        memcpy(&d, kv->raw, 8);
        *out = (float)d;
        return true;
    }
    return false;
}

bool cll_gguf_get_bool(const cll_gguf *g, const char *key, bool *out) {
    const cll_gguf_kv *kv = cll_gguf_find(g, key);
    if (!kv || kv->type != CLL_GGUF_BOOL) return false;
    *out = kv->raw[0] != 0;
    return true;
}

bool cll_gguf_get_str(const cll_gguf *g, const char *key, cll_str *out) {
    const cll_gguf_kv *kv = cll_gguf_find(g, key);
    if (!kv || kv->type != CLL_GGUF_STRING) return false;
    *out = kv->str;
    return true;
}

bool cll_gguf_get_cstr(const cll_gguf *g, const char *key, char *buf, size_t cap) {
    cll_str s;
    if (!cll_gguf_get_str(g, key, &s)) return false;
    if (cap == 0) return true;
    size_t n = s.len < cap - 1 ? (size_t)s.len : cap - 1;
    memcpy(buf, s.ptr, n);
    buf[n] = 0;
    return true;
}

/* ---- arrays ---------------------------------------------------------------------- */

bool cll_gguf_get_arr(const cll_gguf *g, const char *key, const cll_gguf_kv **out) {
    const cll_gguf_kv *kv = cll_gguf_find(g, key);
    if (!kv || kv->type != CLL_GGUF_ARRAY) return false;
    *out = kv;
    return true;
}

cll_str cll_gguf_arr_str(const cll_gguf *g, const cll_gguf_kv *kv, uint64_t i) {
    cll_str none = {NULL, 0};
    if (!g || !kv || kv < g->kv || kv >= g->kv + g->n_kv) return none; /* not one of ours */
    if (kv->type != CLL_GGUF_ARRAY || kv->arr_type != CLL_GGUF_STRING || i >= kv->arr_n) return none;
    const uint64_t *offs = g->str_offs[kv - g->kv];
    if (!offs) return none;
    uint64_t lw = cll_gguf_len_width(g);
    cll_str s = {(const char *)g->base + offs[i] + lw, offs[i + 1] - offs[i] - lw};
    return s;
}

static uint32_t elem_size(uint32_t t) {
    switch (t) {
    case CLL_GGUF_U8: case CLL_GGUF_I8: case CLL_GGUF_BOOL: return 1;
    case CLL_GGUF_U16: case CLL_GGUF_I16: return 2;
    case CLL_GGUF_U32: case CLL_GGUF_I32: case CLL_GGUF_F32: return 4;
    case CLL_GGUF_U64: case CLL_GGUF_I64: case CLL_GGUF_F64: return 8;
    default: return 0;
    }
}

int64_t cll_gguf_arr_int(const cll_gguf_kv *kv, uint64_t i) {
    if (!kv || kv->type != CLL_GGUF_ARRAY || i >= kv->arr_n) return 0;
    if (!is_int_type(kv->arr_type) && kv->arr_type != CLL_GGUF_BOOL) return 0;
    bool neg; uint64_t uv; int64_t sv;
    if (!read_int(kv->arr_type, kv->raw + i * elem_size(kv->arr_type), &neg, &uv, &sv)) return 0;
    return sv;
}

float cll_gguf_arr_f32(const cll_gguf_kv *kv, uint64_t i) {
    if (!kv || kv->type != CLL_GGUF_ARRAY || i >= kv->arr_n) return 0.0f;
    if (kv->arr_type == CLL_GGUF_F32) {
        float f;
        memcpy(&f, kv->raw + i * 4, 4);
        return f;
    }
    if (kv->arr_type == CLL_GGUF_F64) {
        double d;
        memcpy(&d, kv->raw + i * 8, 8);
        return (float)d;
    }
    return 0.0f;
}

/* ---- helpers ----------------------------------------------------------------------- */

bool cll_str_eq(cll_str s, const char *c) {
    if (!c) return false;
    size_t n = strlen(c);
    return s.len == n && (n == 0 || (s.ptr && memcmp(s.ptr, c, n) == 0));
}

const char *cll_gguf_vtype_name(uint32_t t) {
    static const char *k[CLL_GGUF_NTYPES] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32",
                                              "bool", "string", "array", "u64", "i64", "f64"};
    return t < CLL_GGUF_NTYPES ? k[t] : "invalid";
}
