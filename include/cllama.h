/* cllama.h — the public C API of the cllama inference engine.
 *
 * Opaque handles, status codes, a per-thread last-error string. Every function that can
 * fail returns a cllama_status; on failure cllama_last_error() says what and where.
 * Free functions accept NULL. Nothing here exits or aborts on bad input.
 *
 * Typical use:
 *   cllama_model *m; cllama_context *c;
 *   cllama_model_load("model.gguf", NULL, &m);
 *   cllama_context_params cp = cllama_context_default_params();
 *   cllama_context_create(m, &cp, &c);
 *   cllama_generate(c, "Once upon a time", &gp, on_token, user, &stats);
 */
#ifndef CLLAMA_H
#define CLLAMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    CLLAMA_OK = 0,
    CLLAMA_ERR_IO = 1,
    CLLAMA_ERR_FORMAT = 2,
    CLLAMA_ERR_UNSUPPORTED = 3,
    CLLAMA_ERR_NOMEM = 4,
    CLLAMA_ERR_ARG = 5,
    CLLAMA_ERR_RANGE = 6,
    CLLAMA_ERR_DEVICE = 7,
    CLLAMA_ERR_INTERNAL = 8,
    CLLAMA_ERR_KV_FULL = 9, /* the context's paged KV pool has no room for a sequence's next cells: retry later */
} cllama_status;

typedef int32_t cllama_token;
typedef struct cllama_model cllama_model;
typedef struct cllama_context cllama_context;
typedef struct cllama_sampler cllama_sampler;

/* Where the forward runs. DEFAULT: for a model, env CLLAMA_BACKEND ("cpu" or "cuda"), else
 * the CPU; for a context, the backend its model was loaded for. CUDA keeps the whole model
 * resident on one GPU (cllama_model_params.device). */
typedef enum { CLLAMA_BACKEND_DEFAULT = -1, CLLAMA_BACKEND_CPU = 0, CLLAMA_BACKEND_CUDA = 1 } cllama_backend;

const char *cllama_last_error(void);
const char *cllama_status_str(cllama_status st);
const char *cllama_version(void);

/* ---- models ------------------------------------------------------------------------ */
/* Numerics of the CPU forward.
 * DEFAULT: the engine's own kernels (repacked weight layouts, batched prefill); logits agree
 *   with llama.cpp within rounding, which a sensitive model can turn into other greedy tokens.
 * GGML: reproduce llama.cpp's CPU numerics bit for bit, for token-exact greedy output. The
 *   reference is llama.cpp (x86 AVX2 build) with weight repacking off (llama_model_params.
 *   use_extra_bufts = false), flash attention on, F16 KV cache, 1 thread, one token per
 *   llama_decode. Weights stay in the file layout and run rows that follow ggml-cpu's AVX2
 *   vec_dot order (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, IQ4_NL, IQ4_XS; F32, F16, BF16 and
 *   the IQ2/IQ3 types keep their usual rows, with one warning line); every decode runs its
 *   tokens one at a time; attention with an F16 cache is llama.cpp's single-thread flash
 *   attention; SiLU is ggml-cpu's vectorised swiglu. Needs AVX2; prefill is slower (no
 *   batching). Token-exact on Gemma-3-270M Q4_K_M and SmolLM2-135M-Instruct Q4_1 (tests/golden/).
 * Env CLLAMA_NUMERICS=ggml selects GGML when the field is DEFAULT. */
typedef enum { CLLAMA_NUMERICS_DEFAULT = 0, CLLAMA_NUMERICS_GGML = 1 } cllama_numerics;

typedef struct {
    int n_threads;          /* threads for load-time work (repacking); 0 = default */
    bool vocab_only;        /* load the tokenizer only (vocab GGUF files with no tensors) */
    cllama_numerics numerics; /* default CLLAMA_NUMERICS_DEFAULT (see above); CPU only */
    cllama_backend backend; /* default CLLAMA_BACKEND_DEFAULT (env CLLAMA_BACKEND, else cpu) */
    int device;             /* CUDA device ordinal (default 0) */
    bool progress;          /* print load progress on stderr (the CLI sets it on a TTY) */
    /* Tensor parallel: the model split over tp ranks (attention by KV-head groups, the FFN by
     * features, MoE experts by rank, the output head by vocab rows; one all-reduce after the
     * attention output and one after the FFN). On CUDA a rank is a GPU: devices[r] (NULL: 0..tp-1),
     * joined through NCCL; on the CPU a rank is a host thread group (the split-math proof; the
     * cores are shared). 0: no split (the device above); 1: the same path with one rank. A count
     * that does not split the model fails at load naming the counts that do. */
    int32_t tp;
    const int32_t *devices;
    uint64_t gpu_mem_limit;  /* CUDA: bytes of device memory per GPU the model and its contexts may use
                              * (0: what is free); the load fails, with the sizes, past it */
} cllama_model_params;

cllama_model_params cllama_model_default_params(void);
cllama_status cllama_model_load(const char *path, const cllama_model_params *p, cllama_model **out);
void cllama_model_free(cllama_model *m);

const char *cllama_model_arch(const cllama_model *m);      /* general.architecture */
const char *cllama_model_desc(const cllama_model *m);      /* e.g. "gemma3 268M Q4_K_M" */
uint64_t cllama_model_n_params(const cllama_model *m);
uint64_t cllama_model_size_bytes(const cllama_model *m);   /* bytes of tensor data */
/* weight bytes one decode token reads (every matmul weight and the output head; MoE: the
 * router and only the used experts' share): the numerator of "% of bandwidth roofline" */
uint64_t cllama_model_decode_bytes(const cllama_model *m);
/* K and V cache bytes one decode token reads when its sequence holds n_cells cells (a sliding-window
 * layer reads at most its window), elem_bytes per cache element (2: CLLAMA_KV_F16, 4: F32): beside
 * cllama_model_decode_bytes, the traffic of a decode step at depth */
uint64_t cllama_model_kv_read_bytes(const cllama_model *m, int64_t n_cells, int32_t elem_bytes);
int32_t cllama_model_n_vocab(const cllama_model *m);
int32_t cllama_model_n_ctx_train(const cllama_model *m);
int32_t cllama_model_n_embd(const cllama_model *m);
int32_t cllama_model_n_layer(const cllama_model *m);
cllama_numerics cllama_model_numerics(const cllama_model *m); /* what the load resolved (params or env) */
cllama_backend cllama_model_backend(const cllama_model *m);   /* what the load resolved (params or env) */
int32_t cllama_model_tp(const cllama_model *m);               /* tensor-parallel ranks (1: unsplit) */
const char *cllama_backend_name(cllama_backend b);            /* "cpu", "cuda" */
/* one line from the driver: device, resident bytes, the kernel of a typical site */
const char *cllama_model_driver_desc(const cllama_model *m);
/* copy a metadata string value; returns false if absent or not a string */
bool cllama_model_meta_str(const cllama_model *m, const char *key, char *buf, size_t cap);

/* ---- tokenizer --------------------------------------------------------------------- */
cllama_token cllama_token_bos(const cllama_model *m);   /* -1 if none */
cllama_token cllama_token_eos(const cllama_model *m);   /* -1 if none */
bool cllama_token_is_eog(const cllama_model *m, cllama_token t); /* eos, eot, ... */
bool cllama_add_bos(const cllama_model *m);

/* Encode text (len bytes). add_special: add BOS/EOS as the model's metadata says.
 * parse_special: recognise special/control token text in the input.
 * Writes up to cap ids; *n_out = number of ids the text needs. If cap is too small
 * the status is CLLAMA_ERR_RANGE and nothing useful is in out beyond cap. */
cllama_status cllama_tokenize(const cllama_model *m, const char *text, size_t len, bool add_special,
                              bool parse_special, cllama_token *out, int32_t cap, int32_t *n_out);
/* The bytes of one token's piece (may be a partial UTF-8 sequence). special: render
 * control tokens' text instead of nothing. Returns bytes needed; writes up to cap. */
int32_t cllama_token_to_piece(const cllama_model *m, cllama_token t, char *buf, int32_t cap, bool special);
/* Whole-sequence detokenize (handles the SPM leading space). Returns bytes needed
 * (excluding NUL); writes up to cap-1 bytes plus a NUL when cap > 0. */
int64_t cllama_detokenize(const cllama_model *m, const cllama_token *toks, int32_t n, char *buf, int64_t cap,
                          bool special);

/* ---- chat templates -------------------------------------------------------------------- */
typedef struct {
    const char *role;     /* "system", "user", "assistant" */
    const char *content;
} cllama_chat_message;

/* Render messages with the model's chat template (recognised family; fallback chatml
 * with a warning). Returns bytes needed (excluding NUL), or -1 on error. */
int64_t cllama_chat_apply(const cllama_model *m, const cllama_chat_message *msgs, size_t n, bool add_generation_prompt,
                          char *buf, int64_t cap);
/* The template family name the model's template was recognised as ("gemma", "chatml", ...). */
const char *cllama_chat_template_name(const cllama_model *m);

/* ---- contexts (KV cache + activations) ---------------------------------------------------- */
/* KV cache element type: F16 is llama.cpp's default; F32 is what the oracle goldens used */
typedef enum { CLLAMA_KV_F16 = 0, CLLAMA_KV_F32 = 1 } cllama_kv_type;

typedef struct {
    uint32_t n_ctx;        /* tokens of KV per sequence; 0 = min(model n_ctx_train, 4096) */
    uint32_t n_seq_max;    /* independent sequences (each has its own KV region); default 1 */
    uint32_t n_batch;      /* max tokens per cllama_decode call; default 512 */
    int n_threads;         /* 0 = physical cores */
    cllama_backend backend; /* DEFAULT (the model's); anything else must equal the model's */
    cllama_kv_type kv_type; /* default CLLAMA_KV_F16 */
    /* > 0: a paged KV cache, one pool of this many cells (rounded up to whole blocks of
     * CLLAMA_KV_BLOCK) shared by every sequence, each still limited to n_ctx; a sequence takes
     * blocks as it grows and gives them back on cllama_seq_truncate, so n_seq_max sequences of
     * different lengths fit without n_ctx cells each. A decode that finds no free block fails
     * with CLLAMA_ERR_KV_FULL and changes nothing. Both backends allocate only the pool and read
     * keys through the sequences' block tables (logits equal the unpaged cache's bit for bit).
     * 0 (default): every sequence owns n_ctx cells. */
    uint32_t n_kv_cells;
} cllama_context_params;
#define CLLAMA_KV_BLOCK 64 /* cells per block of a paged KV cache */

cllama_context_params cllama_context_default_params(void);
cllama_status cllama_context_create(cllama_model *m, const cllama_context_params *p, cllama_context **out);
void cllama_context_free(cllama_context *c);
uint32_t cllama_n_ctx(const cllama_context *c);
uint32_t cllama_n_seq_max(const cllama_context *c);
uint32_t cllama_n_batch(const cllama_context *c); /* the most tokens one cllama_decode takes */
const cllama_model *cllama_context_model(const cllama_context *c);

/* A batch: n_tokens tokens, each with its position and sequence id; logits[i] != 0 asks
 * for the logits after token i. Tokens of one sequence must be in increasing position
 * order and continue that sequence's cache (pos == current length of the sequence). */
typedef struct {
    int32_t n_tokens;
    const cllama_token *tokens;
    const int32_t *pos;
    const int32_t *seq_id;
    const int8_t *logits;
} cllama_batch;

cllama_status cllama_decode(cllama_context *c, const cllama_batch *b);
/* The same, but the tokens that ask for output get their greedy id (argmax of the logits,
 * lowest id on ties) in ids (batch order, one per asking token) instead of logits: on the
 * GPU only the ids cross the bus. cllama_get_logits then returns NULL for this decode. */
cllama_status cllama_decode_greedy(cllama_context *c, const cllama_batch *b, cllama_token *ids);
/* The same, but each token that asks for output gets its k best candidates (k <= CLLAMA_TOPK_MAX):
 * ids (n_asking x k) and their logits (n_asking x k), descending logit, ties to the lower id — what
 * cllama_sampler_sample_topk draws from. On the GPU only the candidates cross the bus (a sampling
 * step of 64 sequences copies 64 x k pairs instead of 64 x n_vocab floats); elsewhere they are taken
 * from the logits. cllama_get_logits then returns NULL for this decode. */
#define CLLAMA_TOPK_MAX 256
cllama_status cllama_decode_topk(cllama_context *c, const cllama_batch *b, int32_t k, cllama_token *ids, float *logits);
/* logits after batch token i of the last decode (n_vocab floats); NULL if not requested */
const float *cllama_get_logits(cllama_context *c, int32_t i);
/* forget a sequence's cache from position p0 on (p0 = 0 clears it) */
cllama_status cllama_seq_truncate(cllama_context *c, int32_t seq_id, int32_t p0);
int32_t cllama_seq_len(const cllama_context *c, int32_t seq_id);
/* Prefix sharing across sequences (a paged context; 0 elsewhere). Every decoded token is recorded
 * with its cell; a block of CLLAMA_KV_BLOCK cells that fills up becomes findable by its tokens and
 * every token before it, and stays cached (evictable) after its sequence lets it go.
 * cllama_kv_prefix_cached: how many leading tokens of t[0, n) an empty sequence could take over
 * (whole blocks, at most n - 1 so the last token is always decoded). cllama_seq_adopt: an empty
 * sequence takes them over (the blocks are shared, never written again; the sequence continues
 * in blocks of its own) and its length becomes that count, which it returns. */
int32_t cllama_kv_prefix_cached(const cllama_context *c, const cllama_token *t, int32_t n);
int32_t cllama_seq_adopt(cllama_context *c, int32_t seq_id, const cllama_token *t, int32_t n);
/* The KV cache's cells: paged, the pool's total and those in no sequence's blocks (block_cells
 * per block); unpaged, n_seq_max x n_ctx and those past every sequence's length. */
typedef struct {
    bool paged;
    uint32_t total_cells, free_cells, block_cells;
} cllama_kv_info;
cllama_status cllama_kv_info_get(const cllama_context *c, cllama_kv_info *out);

/* What the context's driver did: proof of where the work ran (a silent fallback shows). */
typedef struct {
    uint64_t forwards;      /* driver forward calls */
    uint64_t tokens;        /* tokens run through them */
    uint64_t device_steps;  /* forwards that ran wholly on the backend's device */
    uint64_t graph_replays; /* CUDA: decode steps replayed from a captured graph */
    uint64_t launches;      /* CUDA: kernels in one captured decode step */
    double device_seconds;  /* CUDA: device time of the forwards, from the first copy in to the last copy
                             * out (a decode's wall time minus this is the host's share); 0 elsewhere */
    uint64_t graph_captures; /* CUDA: step graphs captured (the decode step's, and each batched step shape's
                              * on its second consecutive sight) */
    double capture_seconds;  /* CUDA: host time those captures took, inside the decodes that made them */
    uint64_t x_conversions;  /* CUDA: f32-to-f16 input conversions the batch products launched (a captured
                              * graph's counted once, at its capture): a norm or activation kernel that
                              * writes a product's f16 rows itself spares one */
    int32_t tp;             /* tensor-parallel degree (1: one device) */
    uint64_t allreduces;    /* tensor parallel: all-reduces run (a graph replay counts its captured ones) */
    double allreduce_seconds; /* tensor parallel, CPU: host time inside them (waits included); 0 elsewhere */
} cllama_counters;
cllama_status cllama_context_counters(const cllama_context *c, cllama_counters *out);
/* Make ready now what a server's steps need to run at full speed from the first one. On CUDA: the step
 * graphs of batched decode steps of 2..n_seq sequences (one token each, every token asking for output),
 * captured here (~10 ms a batch size for a 7B model on an H200) instead of inside the first steps of
 * each size; and, with n_tokens > 32, one untimed pass at each size class from 33 to n_tokens tokens
 * (steps of 16), so the first prompt-carrying step of a size does not pay for loading its kernels
 * (~13 ms each on the H200). Those passes go through sequence 0, which must be empty, and leave it
 * empty. A no-op on the CPU. A server calls it once at start (its slots, its step budget). */
cllama_status cllama_context_prepare(cllama_context *c, int32_t n_seq, int32_t n_tokens);
cllama_backend cllama_context_backend(const cllama_context *c);

/* ---- samplers ------------------------------------------------------------------------------------ */
typedef struct {
    float temperature;      /* <= 0: greedy (argmax, lowest id wins ties) */
    int32_t top_k;          /* <= 0: off */
    float top_p;            /* >= 1: off */
    float min_p;            /* <= 0: off */
    float repeat_penalty;   /* 1: off */
    int32_t repeat_last_n;  /* window for the penalties */
    float presence_penalty; /* 0: off */
    float frequency_penalty;/* 0: off */
    uint64_t seed;
} cllama_sampler_params;

cllama_sampler_params cllama_sampler_default_params(void); /* temp 0.8, top_k 40, top_p 0.95, min_p 0.05 */
cllama_status cllama_sampler_create(const cllama_sampler_params *p, int32_t n_vocab, cllama_sampler **out);
void cllama_sampler_free(cllama_sampler *s);
void cllama_sampler_reset(cllama_sampler *s);               /* clears history, reseeds */
void cllama_sampler_accept(cllama_sampler *s, cllama_token t); /* feed history (prompt + generated) */
cllama_token cllama_sampler_sample(cllama_sampler *s, const float *logits);
/* How many best candidates (cllama_decode_topk) this sampler needs to draw exactly the token
 * cllama_sampler_sample would: 1 for greedy, top_k when sampling without penalties, 0 when it needs
 * every logit (penalties on, top_k off or over CLLAMA_TOPK_MAX). */
int32_t cllama_sampler_topk_need(const cllama_sampler *s);
/* the draw from one row's k candidates (k >= the need; -1 when short): the same token and RNG
 * stream as cllama_sampler_sample on the full logits */
cllama_token cllama_sampler_sample_topk(cllama_sampler *s, const cllama_token *ids, const float *logits, int32_t k);

/* ---- generation --------------------------------------------------------------------------------- */
/* Called for each generated token with its piece (bytes of text, possibly partial UTF-8).
 * Return false to stop. */
typedef bool (*cllama_token_cb)(cllama_token t, const char *piece, size_t len, void *user);

typedef struct {
    int32_t n_prompt;
    int32_t n_gen;
    double prefill_s;
    double decode_s;
    bool stopped_eog;
} cllama_generate_stats;

/* Tokenize prompt (adding BOS when the model does), prefill it into sequence 0 after
 * clearing it, then sample up to n_predict tokens, stopping at end-of-generation. */
cllama_status cllama_generate(cllama_context *c, const char *prompt, int32_t n_predict, cllama_sampler *s,
                              cllama_token_cb cb, void *user, cllama_generate_stats *stats);
/* Same, from token ids (no tokenization) and continuing sequence seq_id's cache when keep_cache. */
cllama_status cllama_generate_tokens(cllama_context *c, int32_t seq_id, const cllama_token *prompt, int32_t n_prompt,
                                     bool keep_cache, int32_t n_predict, cllama_sampler *s, cllama_token_cb cb,
                                     void *user, cllama_generate_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
