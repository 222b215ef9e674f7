/* bench: the measurement rig — random-weight GGUF writer (synth), the llama-bench style
 * timing loop, benchmark records (bench/records/<box>.json) and the board renderer.
 * Owns nothing long-lived: every call opens, writes and closes its own files.
 * Rule: a record row is a measurement with its provenance; ratios between engines are
 * computed when the board is rendered and never stored. */
#ifndef CLL_BENCH_H
#define CLL_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cllama.h"
#include "core/core.h"

/* ---- sha256 (sha256.c) -------------------------------------------------------------- */
typedef struct {
    uint32_t h[8];
    uint64_t n;
    uint8_t buf[64];
    size_t fill;
} cll_sha256;
void cll_bench_sha256_init(cll_sha256 *s);
void cll_bench_sha256_update(cll_sha256 *s, const void *data, size_t len);
void cll_bench_sha256_hex(cll_sha256 *s, char out[65]); /* finalises */
/* sha256 of a file as 64 hex chars; false (and last error) if unreadable */
bool cll_bench_sha256_file(const char *path, char out[65]);

/* ---- GGUF v3 writer (gguf_write.c): metadata in memory, tensor data streamed -------- */
typedef struct cll_gw cll_gw;
cll_gw *cll_bench_gw_new(void);
void cll_bench_gw_free(cll_gw *w);
void cll_bench_gw_str(cll_gw *w, const char *key, const char *val);
void cll_bench_gw_u32(cll_gw *w, const char *key, uint32_t v);
void cll_bench_gw_f32(cll_gw *w, const char *key, float v);
void cll_bench_gw_bool(cll_gw *w, const char *key, bool v);
/* arrays; strings are copied as given (UTF-8) */
void cll_bench_gw_arr_str(cll_gw *w, const char *key, const char *const *v, uint64_t n);
void cll_bench_gw_arr_f32(cll_gw *w, const char *key, const float *v, uint64_t n);
void cll_bench_gw_arr_i32(cll_gw *w, const char *key, const int32_t *v, uint64_t n);
/* declare a tensor (ne[0] contiguous); returns its data size in bytes, 0 if the row
 * length is not a multiple of the type's block */
uint64_t cll_bench_gw_tensor(cll_gw *w, const char *name, uint32_t type, int n_dims, const uint64_t *ne);
/* header, metadata, tensor infos and the padding before the data section */
cll_status cll_bench_gw_write_header(cll_gw *w, FILE *f);
/* padding after a tensor's data so the next one starts aligned */
cll_status cll_bench_gw_pad(cll_gw *w, FILE *f, uint64_t nbytes);

/* ---- synth (synth.c, synth_mix.c) ---------------------------------------------------- */
typedef struct {
    const char *shape;  /* llama2-7b, llama3-8b, llama32-1b, qwen3-moe-a3b, tiny, ... */
    const char *type;   /* F16, Q4_0, Q4_K_M, ... (llama.cpp ftype names) */
    const char *out;    /* output path, or NULL with layout_only */
    int layers;         /* 0 = the shape's */
    uint64_t seed;
    bool layout_only;   /* print "name type" per tensor to stdout instead of writing */
    bool quiet;
} cll_synth_opts;
cll_status cll_bench_synth(const cll_synth_opts *o);
/* comma-separated lists for --help */
const char *cll_bench_synth_shapes(void);
const char *cll_bench_synth_types(void);

/* The per-tensor type llama.cpp's quantizer picks for file type `ftype` (a llama.cpp ftype
 * name such as "Q4_K_M"); tensor kind by name, i_layer of n_layer. Returns -1 for an
 * unknown ftype. */
typedef struct {
    const char *ftype;
    int n_gqa;       /* n_head / n_head_kv */
    int n_expert;
    bool has_output; /* false: tied embeddings (token_embd takes the output rule) */
} cll_mix_ctx;
int cll_bench_mix_default(const char *ftype); /* the ftype's base ggml type, -1 if unknown */
int cll_bench_mix_type(const cll_mix_ctx *c, const char *name, int i_layer, int n_layer, uint64_t ne0);
int cll_bench_mix_file_type(const char *ftype); /* general.file_type value */

/* ---- hardware + build probe (probe.c) ------------------------------------------------- */
char *cll_bench_git_sha(void);                   /* malloc'd; "unknown" if not readable */
void cll_bench_default_box(char *buf, size_t cap); /* $CLLAMA_BOX, else the hostname */
void cll_bench_cpu_model(char *buf, size_t cap);
/* the read-bandwidth roofline of the GPU in GB/s for "% of roofline": $CLLAMA_ROOFLINE_GBS, else
 * the measured value for a known device (H200: 4300, shared/anchors/h200/ceilings.json), else 0 */
double cll_bench_roofline_gbs(const char *gpu_name);
/* This box's read bandwidth in GB/s as n_threads threads see it: the best of CLL_BENCH_BW_PASSES sums over a
 * buffer of `bytes` (>= 64 MiB; use several times the last-level cache) after a warm-up pass, the
 * plain sum (scalar loads) and the streamed one (16-byte loads, every line prefetched 4 KB ahead)
 * alternating. The CPU decode roofline: weight bytes per token / this. 0 when the buffer cannot be
 * had. cll_bench_read_bandwidth_passes: the forms asked (0 plain, 1 streamed, -1 both), and each
 * timed pass's GB/s and form written out (arrays of
 * CLL_BENCH_BW_PASSES, either may be NULL), so a test can check which forms ran and that the best
 * pass is the answer without comparing two timings. */
#define CLL_BENCH_BW_PASSES 6
double cll_bench_read_bandwidth(int n_threads, size_t bytes);
double cll_bench_read_bandwidth_passes(int n_threads, size_t bytes, int form, double *gbs_out, int *form_out);
void cll_bench_gpu_name(char *buf, size_t cap);  /* "" when there is no nvidia-smi */
/* JSON text of the hardware probe object (malloc'd) */
char *cll_bench_hw_probe_json(void);
void cll_bench_utc_now(char *buf, size_t cap); /* 2026-11-29T18:30:52Z */

/* ---- the timing loop (runner.c), through the public API only ------------------------------ */
typedef struct cll_bench_model cll_bench_model;
/* load a model and make a context for tests of up to n_ctx tokens (prefill batch n_batch) */
cll_status cll_bench_open(const char *path, int backend, int n_threads, int n_ctx, int n_batch,
                          cll_bench_model **out);
/* the placement every later open (and the parity check) loads with: mp's tp, devices, device and
 * gpu_mem_limit (copied; the defaults: one device, 0); the CLI sets it once from --tp / --devices /
 * --gpu-mem-limit */
void cll_bench_set_split(const cllama_model_params *mp);
/* the tensor-parallel degree the model runs with (1: one device): the records' tp field */
int32_t cll_bench_model_tp(const cll_bench_model *bm);
/* the same with n_seq independent sequences of n_ctx tokens each (the batched bench); kv_cells > 0:
 * a paged KV pool of that many cells shared by the sequences (cllama_context_params.n_kv_cells, what
 * `cllama serve --kv-cells` makes) instead of n_ctx cells reserved per sequence */
cll_status cll_bench_open_seqs(const char *path, int backend, int n_threads, int n_ctx, int n_batch, int n_seq,
                               uint32_t kv_cells, cll_bench_model **out);
/* what the batched bench's decodes hand back for each asking token: every logit (llama-batched-bench's
 * protocol, the default), the greedy id (cllama_decode_greedy) or the k best candidates
 * (cllama_decode_topk: what the server's sampling steps ask for) */
typedef enum { CLL_BENCH_OUT_LOGITS = 0, CLL_BENCH_OUT_GREEDY, CLL_BENCH_OUT_TOPK } cll_bench_out;
cll_status cll_bench_set_output(cll_bench_model *bm, cll_bench_out out, int top_k);
/* untimed, once before the batched cells: what a server does at start (cllama_context_prepare): the
 * step graphs of 2..n_seq sequences and a prompt pass per size class up to n_batch (within n_ctx), so
 * no cell times a first call of a shape (H200: pl 1's one 128-token prompt took 68 ms, 1884 tok/s,
 * against 6 ms warmed); the CPU has nothing to prepare */
cll_status cll_bench_prepare(cll_bench_model *bm, int n_seq);
void cll_bench_close(cll_bench_model *bm);
const char *cll_bench_model_type(const cll_bench_model *bm); /* "llama 1B Q4_K - Medium"-like */
uint64_t cll_bench_model_size(const cll_bench_model *bm);    /* bytes of tensor data */
uint64_t cll_bench_model_n_params(const cll_bench_model *bm);
uint64_t cll_bench_model_decode_bytes(const cll_bench_model *bm); /* weight bytes per decode token */
/* K/V cache bytes a decode token reads, averaged over ng tokens decoded after depth nd (positions
 * nd .. nd + ng - 1; the bench's F16 cache) */
uint64_t cll_bench_model_kv_bytes(const cll_bench_model *bm, int nd, int ng);
/* kernels one decode step launches (CUDA graph nodes), 0 when the driver does not count them */
uint64_t cll_bench_model_kernels_per_token(const cll_bench_model *bm);

#define CLL_BENCH_MAX_REPS 100
typedef struct {
    int n;
    double samples_ns[CLL_BENCH_MAX_REPS], samples_ts[CLL_BENCH_MAX_REPS];
    double avg_ns, stddev_ns, avg_ts, stddev_ts; /* sample sd (n - 1) */
} cll_bench_result;
/* llama-bench's protocol: one untimed warm-up (the full prefill for pp; one step for tg),
 * then reps timed runs from an empty cache; pp = one decode of n_prompt random tokens,
 * tg = n_gen single-token decodes. progress: a status line on stderr. */
cll_status cll_bench_measure(cll_bench_model *bm, int n_prompt, int n_gen, int reps, bool progress,
                             cll_bench_result *res);
/* the same on top of a cache filled with n_depth tokens first (llama-bench's -d; untimed, once:
 * every repetition truncates back to the depth) */
cll_status cll_bench_measure_at(cll_bench_model *bm, int n_depth, int n_prompt, int n_gen, int reps, bool progress,
                                cll_bench_result *res);

/* llama-batched-bench's protocol (its defaults: prompts not shared): a 16-token warm-up; from an
 * empty cache, pl prompts of pp tokens decoded in n_batch chunks (t_pp), then tg steps of one
 * token for each of the pl sequences (t_tg); n_kv = pl * (pp + tg); speed_pp = pl*pp / t_pp,
 * speed_tg = pl*tg / t_tg, speed = n_kv / (t_pp + t_tg). The model must be opened with >= pl
 * sequences of >= pp + tg tokens. */
typedef struct {
    int n_kv;
    double t_pp, speed_pp, t_tg, speed_tg, t, speed;
} cll_bench_batched_result;
cll_status cll_bench_batched(cll_bench_model *bm, int pp, int tg, int pl, cll_bench_batched_result *r);

/* Did the served path pass its oracle on this box: stories260K greedy continuations vs
 * shared/oracle/golden/stories260K.json. Returns "pass", "fail" or "unchecked". */
const char *cll_bench_parity(int backend, int n_threads, char *why, size_t cap);

#endif
