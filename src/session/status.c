/* session/status: the public status and error functions. */
#include "cllama.h"
#include "core/core.h"

_Static_assert((int)CLLAMA_ERR_INTERNAL == (int)CLL_ERR_INTERNAL, "public and internal status codes must agree");
_Static_assert((int)CLLAMA_ERR_KV_FULL == (int)CLL_ERR_KV_FULL, "public and internal status codes must agree");
_Static_assert((int)CLLAMA_ERR_FORMAT == (int)CLL_ERR_FORMAT, "public and internal status codes must agree");

const char *cllama_last_error(void) { return cll_last_error(); }
const char *cllama_status_str(cllama_status st) { return cll_status_str((cll_status)st); }
const char *cllama_version(void) { return "0.1.0"; }
