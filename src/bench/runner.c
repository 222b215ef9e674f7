/* bench/runner: the llama-bench timing loop over the public API (cllama.h), and the parity
 * probe that stamps "pass"/"fail"/"unchecked" on a record. Model load is never timed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/bench.h"
#include "cllama.h"

struct cll_bench_model {
    cllama_model *m;
    cllama_context *c;
    int n_vocab, n_batch, n_ctx;
    cllama_token *tok; /* (n_batch) */
    int32_t *pos, *seq;
    int8_t *logits;
    cll_bench_out out; /* the batched bench's decodes: logits, greedy ids or top-k candidates */
    int top_k;
    cllama_token *ids; /* (n_batch * top_k) greedy ids or candidates */
    float *vals;
    char type[128];
    uint64_t rng;
};

static cll_status from_api(cllama_status st, const char *what) {
    return cll_err((cll_status)st, "%s: %s", what, cllama_last_error());
}

static struct {
    int32_t tp;
    int32_t devices[16];
    bool has_devices;
    int device;
    uint64_t mem_limit;
} g_split;

void cll_bench_set_split(const cllama_model_params *mp) {
    g_split.tp = mp->tp > 0 ? mp->tp : 0;
    g_split.has_devices = mp->devices && mp->tp > 0 && mp->tp <= 16;
    for (int32_t r = 0; g_split.has_devices && r < mp->tp; r++) g_split.devices[r] = mp->devices[r];
    g_split.device = mp->device;
    g_split.mem_limit = mp->gpu_mem_limit;
}

static void apply_split(cllama_model_params *mp) {
    mp->tp = g_split.tp;
    mp->devices = g_split.has_devices ? g_split.devices : NULL;
    mp->device = g_split.device;
    mp->gpu_mem_limit = g_split.mem_limit;
}

int32_t cll_bench_model_tp(const cll_bench_model *bm) { return bm ? cllama_model_tp(bm->m) : 1; }

cll_status cll_bench_open(const char *path, int backend, int n_threads, int n_ctx, int n_batch, cll_bench_model **out) {
    return cll_bench_open_seqs(path, backend, n_threads, n_ctx, n_batch, 1, 0, out);
}

cll_status cll_bench_open_seqs(const char *path, int backend, int n_threads, int n_ctx, int n_batch, int n_seq,
                               uint32_t kv_cells, cll_bench_model **out) {
    *out = NULL;
    cll_bench_model *bm = calloc(1, sizeof *bm);
    if (!bm) return cll_err(CLL_ERR_NOMEM, "bench: out of memory");
    cllama_model_params mp = cllama_model_default_params();
    mp.n_threads = n_threads;
    mp.backend = backend ? CLLAMA_BACKEND_CUDA : CLLAMA_BACKEND_CPU;
    mp.progress = isatty(2);
    apply_split(&mp);
    cllama_status st = cllama_model_load(path, &mp, &bm->m);
    if (st != CLLAMA_OK) {
        free(bm);
        return from_api(st, path);
    }
    cllama_context_params cp = cllama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = (uint32_t)(n_batch > 0 ? n_batch : 1);
    cp.n_threads = n_threads;
    cp.n_seq_max = (uint32_t)(n_seq > 0 ? n_seq : 1);
    cp.n_kv_cells = kv_cells;
    cp.backend = backend ? CLLAMA_BACKEND_CUDA : CLLAMA_BACKEND_CPU;
    st = cllama_context_create(bm->m, &cp, &bm->c);
    if (st != CLLAMA_OK) {
        cll_status s = from_api(st, path);
        cllama_model_free(bm->m);
        free(bm);
        return s;
    }
    bm->n_vocab = cllama_model_n_vocab(bm->m);
    bm->n_batch = (int)cp.n_batch;
    bm->n_ctx = (int)cp.n_ctx;
    bm->tok = calloc((size_t)bm->n_batch, sizeof(cllama_token));
    bm->pos = calloc((size_t)bm->n_batch, sizeof(int32_t));
    bm->seq = calloc((size_t)bm->n_batch, sizeof(int32_t));
    bm->logits = calloc((size_t)bm->n_batch, 1);
    if (!bm->tok || !bm->pos || !bm->seq || !bm->logits) {
        cll_bench_close(bm);
        return cll_err(CLL_ERR_NOMEM, "bench: out of memory");
    }
    const char *desc = cllama_model_desc(bm->m);
    snprintf(bm->type, sizeof bm->type, "%s", desc ? desc : "?");
    bm->rng = 0x9e3779b97f4a7c15ull;
    *out = bm;
    return CLL_OK;
}

void cll_bench_close(cll_bench_model *bm) {
    if (!bm) return;
    cllama_context_free(bm->c);
    cllama_model_free(bm->m);
    free(bm->tok);
    free(bm->pos);
    free(bm->seq);
    free(bm->logits);
    free(bm->ids);
    free(bm->vals);
    free(bm);
}

cll_status cll_bench_set_output(cll_bench_model *bm, cll_bench_out out, int top_k) {
    if (out == CLL_BENCH_OUT_TOPK && (top_k < 1 || top_k > CLLAMA_TOPK_MAX || top_k > bm->n_vocab))
        return cll_err(CLL_ERR_ARG, "bench: top-k %d outside [1, %d]", top_k,
                       bm->n_vocab < CLLAMA_TOPK_MAX ? bm->n_vocab : CLLAMA_TOPK_MAX);
    const int k = out == CLL_BENCH_OUT_TOPK ? top_k : 1;
    free(bm->ids);
    free(bm->vals);
    bm->ids = NULL;
    bm->vals = NULL;
    bm->out = CLL_BENCH_OUT_LOGITS;
    if (out != CLL_BENCH_OUT_LOGITS) {
        bm->ids = malloc(sizeof *bm->ids * (size_t)bm->n_batch * (size_t)k);
        bm->vals = malloc(sizeof *bm->vals * (size_t)bm->n_batch * (size_t)k);
        if (!bm->ids || !bm->vals) return cll_err(CLL_ERR_NOMEM, "bench: out of memory");
    }
    bm->out = out;
    bm->top_k = k;
    return CLL_OK;
}

const char *cll_bench_model_type(const cll_bench_model *bm) { return bm->type; }
uint64_t cll_bench_model_size(const cll_bench_model *bm) { return cllama_model_size_bytes(bm->m); }
uint64_t cll_bench_model_n_params(const cll_bench_model *bm) { return cllama_model_n_params(bm->m); }
uint64_t cll_bench_model_decode_bytes(const cll_bench_model *bm) { return cllama_model_decode_bytes(bm->m); }
uint64_t cll_bench_model_kv_bytes(const cll_bench_model *bm, int nd, int ng) {
    if (ng <= 0 || nd < 0) return 0;
    uint64_t sum = 0; /* the token at position p reads cells 0..p */
    for (int i = 0; i < ng; i++) sum += cllama_model_kv_read_bytes(bm->m, (int64_t)nd + i + 1, 2);
    return (sum + (uint64_t)ng / 2) / (uint64_t)ng;
}
uint64_t cll_bench_model_kernels_per_token(const cll_bench_model *bm) {
    cllama_counters k;
    return cllama_context_counters(bm->c, &k) == CLLAMA_OK ? k.launches : 0;
}

static cllama_token rand_tok(cll_bench_model *bm) {
    bm->rng ^= bm->rng << 13;
    bm->rng ^= bm->rng >> 7;
    bm->rng ^= bm->rng << 17;
    return (cllama_token)(bm->rng % (uint64_t)bm->n_vocab);
}

/* one decode of n tokens of sequence 0 at positions p0.. (BOS at position 0, random ids
 * elsewhere, as llama-bench), logits for the last one; reading them is the synchronisation
 * point of a GPU step */
static cll_status decode_block(cll_bench_model *bm, int p0, int n, const char *what) {
    const cllama_token bos = cllama_token_bos(bm->m);
    for (int i = 0; i < n; i++) {
        bm->tok[i] = p0 + i == 0 && bos >= 0 ? bos : rand_tok(bm);
        bm->pos[i] = p0 + i;
        bm->seq[i] = 0;
        bm->logits[i] = i == n - 1;
    }
    cllama_batch b = {n, bm->tok, bm->pos, bm->seq, bm->logits};
    const cllama_status st = cllama_decode(bm->c, &b);
    if (st != CLLAMA_OK) return from_api(st, what);
    if (!cllama_get_logits(bm->c, n - 1)) return cll_err(CLL_ERR_INTERNAL, "%s produced no logits", what);
    return CLL_OK;
}

/* the cache of sequence 0 filled with d tokens in batches of n_batch: llama-bench's -d,
 * untimed; the tests then truncate back to d and run on top */
static cll_status fill_depth(cll_bench_model *bm, int d) {
    const cllama_status st = cllama_seq_truncate(bm->c, 0, 0);
    if (st != CLLAMA_OK) return from_api(st, "clear cache");
    for (int p0 = 0; p0 < d; p0 += bm->n_batch) {
        const cll_status s2 = decode_block(bm, p0, d - p0 < bm->n_batch ? d - p0 : bm->n_batch, "filling the depth");
        if (s2 != CLL_OK) return s2;
    }
    return CLL_OK;
}

/* one prefill of n tokens on top of the first d cells of the cache (d 0: an empty cache) */
static cll_status run_pp(cll_bench_model *bm, int n, int d) {
    const cllama_status st = cllama_seq_truncate(bm->c, 0, d);
    if (st != CLLAMA_OK) return from_api(st, "clear cache");
    return decode_block(bm, d, n, "prefill");
}

/* n single-token steps on top of the first d cells (d 0: an empty cache), logits every step (as
 * llama-bench's tg) */
static cll_status run_tg(cll_bench_model *bm, int n, int d) {
    cllama_status st = cllama_seq_truncate(bm->c, 0, d);
    if (st != CLLAMA_OK) return from_api(st, "clear cache");
    cllama_token bos = cllama_token_bos(bm->m);
    cllama_token t = bos >= 0 && d == 0 ? bos : rand_tok(bm);
    for (int i = 0; i < n; i++) {
        int32_t pos = d + i, seq = 0;
        int8_t lg = 1;
        cllama_batch b = {1, &t, &pos, &seq, &lg};
        st = cllama_decode(bm->c, &b);
        if (st != CLLAMA_OK) return from_api(st, "decode step");
        if (!cllama_get_logits(bm->c, 0)) return cll_err(CLL_ERR_INTERNAL, "decode step produced no logits");
        t = rand_tok(bm);
    }
    return CLL_OK;
}

cll_status cll_bench_measure(cll_bench_model *bm, int n_prompt, int n_gen, int reps, bool progress,
                             cll_bench_result *res) {
    return cll_bench_measure_at(bm, 0, n_prompt, n_gen, reps, progress, res);
}

cll_status cll_bench_measure_at(cll_bench_model *bm, int n_depth, int n_prompt, int n_gen, int reps, bool progress,
                                cll_bench_result *res) {
    memset(res, 0, sizeof *res);
    if (reps < 1 || reps > CLL_BENCH_MAX_REPS) return cll_err(CLL_ERR_ARG, "repetitions must be 1..%d", CLL_BENCH_MAX_REPS);
    if (n_prompt > bm->n_batch) return cll_err(CLL_ERR_ARG, "prompt of %d tokens exceeds n_batch %d", n_prompt, bm->n_batch);
    if (n_depth < 0 || (int64_t)n_depth + n_prompt + n_gen > bm->n_ctx)
        return cll_err(CLL_ERR_ARG, "depth %d + %d + %d tokens exceed the context of %d", n_depth, n_prompt, n_gen, bm->n_ctx);
    /* untimed: the depth, then a warm-up (first-touch of the weights, kernel selection, clocks) */
    cll_status st = n_depth > 0 ? fill_depth(bm, n_depth) : CLL_OK;
    if (st == CLL_OK && n_prompt > 0) st = run_pp(bm, n_prompt, n_depth);
    if (st == CLL_OK && n_gen > 0) st = run_tg(bm, 1, n_depth);
    if (st != CLL_OK) return st;
    for (int r = 0; r < reps; r++) {
        if (progress)
            fprintf(stderr, "\rbench: %s%d%s%d%s%.0d rep %d/%d   ", n_prompt ? "pp" : "", n_prompt ? n_prompt : 0,
                    n_gen ? " tg" : "", n_gen, n_depth ? " @ d" : "", n_depth, r + 1, reps);
        double t0 = cll_now();
        if (n_prompt > 0) st = run_pp(bm, n_prompt, n_depth);
        if (st == CLL_OK && n_gen > 0) {
            /* pp+tg in one test continues after the prompt; plain tg starts at the depth */
            if (n_prompt > 0) {
                cllama_token t = rand_tok(bm);
                for (int i = 0; i < n_gen && st == CLL_OK; i++) {
                    int32_t pos = n_depth + n_prompt + i, seq = 0;
                    int8_t lg = 1;
                    cllama_batch b = {1, &t, &pos, &seq, &lg};
                    cllama_status s2 = cllama_decode(bm->c, &b);
                    if (s2 != CLLAMA_OK) st = from_api(s2, "decode step");
                    t = rand_tok(bm);
                }
            } else st = run_tg(bm, n_gen, n_depth);
        }
        double dt = cll_now() - t0;
        if (st != CLL_OK) return st;
        res->samples_ns[r] = dt * 1e9;
        res->samples_ts[r] = (n_prompt + n_gen) / dt;
        res->n = r + 1;
    }
    if (progress) fprintf(stderr, "\r%60s\r", "");
    double sn = 0, st_ = 0;
    for (int i = 0; i < res->n; i++) {
        sn += res->samples_ns[i];
        st_ += res->samples_ts[i];
    }
    res->avg_ns = sn / res->n;
    res->avg_ts = st_ / res->n;
    double vn = 0, vt = 0;
    for (int i = 0; i < res->n; i++) {
        vn += (res->samples_ns[i] - res->avg_ns) * (res->samples_ns[i] - res->avg_ns);
        vt += (res->samples_ts[i] - res->avg_ts) * (res->samples_ts[i] - res->avg_ts);
    }
    res->stddev_ns = res->n > 1 ? sqrt(vn / (res->n - 1)) : 0;
    res->stddev_ts = res->n > 1 ? sqrt(vt / (res->n - 1)) : 0;
    return CLL_OK;
}

/* ---- llama-batched-bench's protocol ------------------------------------------------------------ */

/* clear every sequence's cache */
static cll_status clear_all(cll_bench_model *bm, int n_seq) {
    for (int i = 0; i < n_seq; i++) {
        const cllama_status st = cllama_seq_truncate(bm->c, i, 0);
        if (st != CLLAMA_OK) return from_api(st, "clear cache");
    }
    return CLL_OK;
}

/* decode the n queued tokens in batches of at most n_batch; the logits of the last batch's
 * asking tokens are read (the synchronisation point of a GPU step), or their greedy ids / top-k
 * candidates come back with the decode (cll_bench_set_output) */
static cll_status decode_chunks(cll_bench_model *bm, const cllama_token *tok, const int32_t *pos, const int32_t *seq,
                                const int8_t *lg, int n) {
    for (int i = 0; i < n; i += bm->n_batch) {
        const int k = n - i < bm->n_batch ? n - i : bm->n_batch;
        cllama_batch b = {k, (cllama_token *)tok + i, (int32_t *)pos + i, (int32_t *)seq + i, (int8_t *)lg + i};
        const cllama_status st = bm->out == CLL_BENCH_OUT_GREEDY ? cllama_decode_greedy(bm->c, &b, bm->ids)
                                 : bm->out == CLL_BENCH_OUT_TOPK ? cllama_decode_topk(bm->c, &b, bm->top_k, bm->ids, bm->vals)
                                                                 : cllama_decode(bm->c, &b);
        if (st != CLLAMA_OK) return from_api(st, "batched decode");
        if (bm->out != CLL_BENCH_OUT_LOGITS) continue; /* the ids came back with the decode */
        for (int j = k - 1; j >= 0; j--)
            if (lg[i + j]) {
                if (!cllama_get_logits(bm->c, j)) return cll_err(CLL_ERR_INTERNAL, "batched decode produced no logits");
                break;
            }
    }
    return CLL_OK;
}

cll_status cll_bench_prepare(cll_bench_model *bm, int n_seq) {
    const cllama_status st = cllama_context_prepare(bm->c, n_seq, bm->n_batch);
    return st == CLLAMA_OK ? CLL_OK : from_api(st, "preparing the batched steps");
}

cll_status cll_bench_batched(cll_bench_model *bm, int pp, int tg, int pl, cll_bench_batched_result *r) {
    memset(r, 0, sizeof *r);
    if (pp < 0 || tg < 0 || pl < 1 || (pp == 0 && tg == 0)) return cll_err(CLL_ERR_ARG, "batched bench: pp %d tg %d pl %d", pp, tg, pl);
    int n = pl * pp > pl ? pl * pp : pl; /* the prompts, or one step of every sequence */
    if (n < 16) n = 16;                  /* the warm-up */
    cllama_token *tok = malloc(sizeof *tok * (size_t)n);
    int32_t *pos = malloc(sizeof *pos * (size_t)n), *seq = malloc(sizeof *seq * (size_t)n);
    int8_t *lg = malloc((size_t)n);
    cll_status st = CLL_OK;
    if (!tok || !pos || !seq || !lg) {
        st = cll_err(CLL_ERR_NOMEM, "batched bench: out of memory");
        goto done;
    }
    /* warm-up as llama-batched-bench: 16 tokens into sequence 0, then an empty cache */
    for (int i = 0; i < 16; i++) tok[i] = 0, pos[i] = i, seq[i] = 0, lg[i] = i == 15;
    if ((st = decode_chunks(bm, tok, pos, seq, lg, 16)) != CLL_OK || (st = clear_all(bm, pl)) != CLL_OK) goto done;
    /* the prompts: pp tokens per sequence (token 0, as llama-batched-bench), sequence by sequence,
     * logits only after each sequence's last token */
    int k = 0;
    for (int s = 0; s < pl; s++)
        for (int i = 0; i < pp; i++, k++) tok[k] = 0, pos[k] = i, seq[k] = s, lg[k] = i == pp - 1;
    const double t0 = cll_now();
    if (k && (st = decode_chunks(bm, tok, pos, seq, lg, k)) != CLL_OK) goto done;
    const double t1 = cll_now();
    /* tg steps of one token per sequence, logits for all */
    for (int i = 0; i < tg; i++) {
        for (int s = 0; s < pl; s++) tok[s] = 0, pos[s] = pp + i, seq[s] = s, lg[s] = 1;
        if ((st = decode_chunks(bm, tok, pos, seq, lg, pl)) != CLL_OK) goto done;
    }
    const double t2 = cll_now();
    r->n_kv = pl * (pp + tg);
    r->t_pp = t1 - t0;
    r->t_tg = t2 - t1;
    r->t = t2 - t0;
    r->speed_pp = r->t_pp > 0 ? (double)pl * pp / r->t_pp : 0;
    r->speed_tg = r->t_tg > 0 ? (double)pl * tg / r->t_tg : 0;
    r->speed = r->t > 0 ? r->n_kv / r->t : 0;
    st = clear_all(bm, pl);
done:
    free(tok), free(pos), free(seq), free(lg);
    return st;
}

/* ---- parity --------------------------------------------------------------------------------- */
typedef struct {
    cllama_token *ids;
    int n, cap;
} collect;
static bool on_tok(cllama_token t, const char *piece, size_t len, void *user) {
    (void)piece;
    (void)len;
    collect *c = user;
    if (c->n < c->cap) c->ids[c->n++] = t;
    return c->n < c->cap;
}

static void shared_dir(char *buf, size_t cap) {
    const char *env = getenv("CLLAMA_SHARED");
    if (env && *env) snprintf(buf, cap, "%s", env);
    else {
        snprintf(buf, cap, "%s/../shared", CLLAMA_SOURCE_DIR);
        if (access(buf, R_OK) != 0) snprintf(buf, cap, "/work/shared");
    }
}

const char *cll_bench_parity(int backend, int n_threads, char *why, size_t cap) {
    char dir[4096], gpath[4200], mpath[4200];
    shared_dir(dir, sizeof dir);
    snprintf(gpath, sizeof gpath, "%s/oracle/golden/stories260K.json", dir);
    snprintf(mpath, sizeof mpath, "%s/models/stories260K.gguf", dir);
    json_error_t e;
    json_t *g = json_load_file(gpath, 0, &e);
    if (!g || access(mpath, R_OK) != 0) {
        snprintf(why, cap, "no oracle (%s)", gpath);
        json_decref(g);
        return "unchecked";
    }
    cllama_model *m = NULL;
    cllama_context *c = NULL;
    cllama_sampler *s = NULL;
    const char *verdict = "unchecked";
    cllama_model_params mp = cllama_model_default_params();
    mp.backend = backend ? CLLAMA_BACKEND_CUDA : CLLAMA_BACKEND_CPU;
    apply_split(&mp); /* the oracle through the same split the rows run */
    cllama_context_params cp = cllama_context_default_params();
    cp.n_ctx = 512;
    cp.n_threads = n_threads;
    cp.backend = backend ? CLLAMA_BACKEND_CUDA : CLLAMA_BACKEND_CPU;
    cllama_sampler_params sp = cllama_sampler_default_params();
    sp.temperature = 0;
    if (cllama_model_load(mpath, &mp, &m) != CLLAMA_OK || cllama_context_create(m, &cp, &c) != CLLAMA_OK ||
        cllama_sampler_create(&sp, cllama_model_n_vocab(m), &s) != CLLAMA_OK) {
        snprintf(why, cap, "stories260K does not load: %s", cllama_last_error());
        verdict = "fail";
        goto done;
    }
    json_t *prompts = json_object_get(g, "prompts"), *p;
    size_t i;
    int checked = 0;
    verdict = "pass";
    snprintf(why, cap, "stories260K greedy continuations match the llama.cpp golden ids");
    json_array_foreach(prompts, i, p) {
        json_t *pt = json_object_get(p, "prompt_tokens"), *gen = json_object_get(p, "generated_tokens");
        int np = (int)json_array_size(pt), ng = (int)json_array_size(gen);
        json_int_t eog = json_integer_value(json_object_get(p, "first_eog_step"));
        if (eog >= 0 && eog < ng) ng = (int)eog; /* we stop at end-of-generation; the golden ran on */
        if (np == 0 || ng == 0) continue;
        cllama_token *in = calloc((size_t)np, sizeof *in), *outv = calloc((size_t)ng, sizeof *outv);
        for (int k = 0; k < np; k++) in[k] = (cllama_token)json_integer_value(json_array_get(pt, (size_t)k));
        collect col = {outv, 0, ng};
        cllama_sampler_reset(s);
        cllama_status st = cllama_generate_tokens(c, 0, in, np, false, ng, s, on_tok, &col, NULL);
        bool ok = st == CLLAMA_OK && col.n == ng;
        for (int k = 0; ok && k < ng; k++)
            if (outv[k] != json_integer_value(json_array_get(gen, (size_t)k))) {
                ok = false;
                snprintf(why, cap, "stories260K prompt %zu: token %d differs from the golden", i, k);
            }
        if (!ok && st != CLLAMA_OK) snprintf(why, cap, "stories260K prompt %zu: %s", i, cllama_last_error());
        else if (!ok && col.n != ng) snprintf(why, cap, "stories260K prompt %zu: %d of %d tokens", i, col.n, ng);
        free(in);
        free(outv);
        checked++;
        if (!ok) {
            verdict = "fail";
            break;
        }
    }
    if (!checked) {
        verdict = "unchecked";
        snprintf(why, cap, "golden file has no prompts");
    }
done:
    cllama_sampler_free(s);
    cllama_context_free(c);
    cllama_model_free(m);
    json_decref(g);
    return verdict;
}
