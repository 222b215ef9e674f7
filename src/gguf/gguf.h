/* gguf: maps a GGUF file (v1, v2, v3), parses header, metadata and tensor infos,
 * checking every count, length, dimension and offset against the file size.
 * Owns the mapping; every string/array/tensor view points into it and lives until
 * cll_gguf_free. Rule: nothing downstream re-reads the file, and no allocation is
 * sized by a count that has not been checked against the bytes that remain. */
#ifndef CLL_GGUF_H
#define CLL_GGUF_H

#include "core/core.h"

/* metadata value types (GGUF spec numbering) */
typedef enum {
    CLL_GGUF_U8 = 0, CLL_GGUF_I8 = 1, CLL_GGUF_U16 = 2, CLL_GGUF_I16 = 3,
    CLL_GGUF_U32 = 4, CLL_GGUF_I32 = 5, CLL_GGUF_F32 = 6, CLL_GGUF_BOOL = 7,
    CLL_GGUF_STRING = 8, CLL_GGUF_ARRAY = 9, CLL_GGUF_U64 = 10, CLL_GGUF_I64 = 11,
    CLL_GGUF_F64 = 12,
    CLL_GGUF_NTYPES
} cll_gguf_vtype;

/* a length-delimited string inside the map; NOT NUL-terminated */
typedef struct {
    const char *ptr;
    uint64_t len;
} cll_str;

typedef struct {
    cll_str key;
    uint32_t type;           /* cll_gguf_vtype */
    /* scalar: raw little-endian bytes of the value; string: the string */
    const uint8_t *raw;
    cll_str str;             /* valid when type == STRING */
    /* arrays (type == ARRAY): element type, count, raw element bytes. For arrays of
     * strings, use cll_gguf_arr_str(); for nested arrays, the elements are only
     * validated (raw points at the first nested array header). */
    uint32_t arr_type;
    uint64_t arr_n;
} cll_gguf_kv;

#define CLL_GGUF_MAX_DIMS 4
typedef struct {
    cll_str name;
    uint32_t n_dims;
    uint64_t ne[CLL_GGUF_MAX_DIMS]; /* ne[0] = contiguous (row length); unused dims = 1 */
    uint32_t type;                  /* ggml type id (formats/formats.h) */
    uint64_t offset;                /* relative to the data section */
    uint64_t nbytes;
    const void *data;               /* into the map */
} cll_gguf_tensor;

typedef struct cll_gguf cll_gguf;

/* Open and validate. On failure *out is NULL and the last error is one line naming
 * what is wrong and where (byte offset, key or tensor name). */
cll_status cll_gguf_open(const char *path, cll_gguf **out);
/* Parse a caller-owned buffer (fuzzing, tests); the buffer must outlive the handle. */
cll_status cll_gguf_open_mem(const void *data, size_t size, cll_gguf **out);
void cll_gguf_free(cll_gguf *g);

uint32_t cll_gguf_version(const cll_gguf *g);
uint64_t cll_gguf_file_size(const cll_gguf *g);
uint32_t cll_gguf_alignment(const cll_gguf *g);
uint64_t cll_gguf_data_offset(const cll_gguf *g); /* start of tensor data in the file */
const uint8_t *cll_gguf_base(const cll_gguf *g);  /* start of the file map */

/* metadata */
uint64_t cll_gguf_n_kv(const cll_gguf *g);
const cll_gguf_kv *cll_gguf_kv_at(const cll_gguf *g, uint64_t i);
const cll_gguf_kv *cll_gguf_find(const cll_gguf *g, const char *key); /* NULL if absent */

/* Typed getters: return false if absent or of an incompatible type. Integer getters
 * accept any integer type whose value fits; f32 accepts f32/f64. */
bool cll_gguf_get_u32(const cll_gguf *g, const char *key, uint32_t *out);
bool cll_gguf_get_i32(const cll_gguf *g, const char *key, int32_t *out);
bool cll_gguf_get_u64(const cll_gguf *g, const char *key, uint64_t *out);
bool cll_gguf_get_f32(const cll_gguf *g, const char *key, float *out);
bool cll_gguf_get_bool(const cll_gguf *g, const char *key, bool *out);
bool cll_gguf_get_str(const cll_gguf *g, const char *key, cll_str *out);
/* copy a string value into buf as a NUL-terminated string (truncating); false if absent */
bool cll_gguf_get_cstr(const cll_gguf *g, const char *key, char *buf, size_t cap);

/* arrays: the kv must be an ARRAY; element accessors bounds-check i < arr_n and the type */
bool cll_gguf_get_arr(const cll_gguf *g, const char *key, const cll_gguf_kv **out);
cll_str cll_gguf_arr_str(const cll_gguf *g, const cll_gguf_kv *kv, uint64_t i); /* {NULL,0} if bad */
int64_t cll_gguf_arr_int(const cll_gguf_kv *kv, uint64_t i);   /* any integer elem type */
float cll_gguf_arr_f32(const cll_gguf_kv *kv, uint64_t i);     /* f32/f64 elem */

/* tensors */
uint64_t cll_gguf_n_tensors(const cll_gguf *g);
const cll_gguf_tensor *cll_gguf_tensor_at(const cll_gguf *g, uint64_t i);
const cll_gguf_tensor *cll_gguf_find_tensor(const cll_gguf *g, const char *name);

/* helpers */
bool cll_str_eq(cll_str s, const char *c);
const char *cll_gguf_vtype_name(uint32_t t);

#endif
