/* bench/synth: writes a random-weight GGUF of a real model's shape (the benchmark shapes
 * and the tiny oracle shapes of shared/tools/synth_gguf.py) with llama.cpp's per-tensor
 * type mix. Blocks are random bytes with every fp16 scale set to a small finite value
 * (the cost of a format does not depend on its values); weights come out with an rms
 * near 0.02, norms near 1. Data streams through one 4 MB buffer: a 7B file never sits
 * in memory, and a fast PRNG keeps the writer at disk speed. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "formats/formats.h"

typedef struct {
    const char *name, *arch;
    int d, L, H, HKV, hd, ff, V, ctx;
    float rope, eps;
    bool tied, qkv_bias, qk_norm, post_norms;
    int swa, E, EU, ffe;
    float yarn;   /* YaRN rope scaling: this factor over a training context of yarn_orig tokens (0: none) */
    int yarn_orig;
} shape;

/* dims and rope bases as in synth_gguf.py's SHAPES (benchmark) and TINY (oracle) tables */
static const shape k_shapes[] = {
    {"llama2-7b", "llama", 4096, 32, 32, 32, 128, 11008, 32000, 4096, 10000.f, 1e-5f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"llama3-8b", "llama", 4096, 32, 32, 8, 128, 14336, 128256, 8192, 500000.f, 1e-5f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"llama32-1b", "llama", 2048, 16, 32, 8, 64, 8192, 128256, 8192, 500000.f, 1e-5f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    /* Llama-3-70B's dims: more than one GPU's memory budget when limited (issue 13's tensor-parallel bar) */
    {"llama3-70b", "llama", 8192, 80, 64, 8, 128, 28672, 128256, 8192, 500000.f, 1e-5f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"qwen3-moe-a3b", "qwen3moe", 2048, 48, 32, 4, 64, 6144, 151936, 40960, 1e6f, 1e-5f, 0, 0, 1, 0, 0, 128, 8, 768, 0, 0},
    {"tiny", "llama", 256, 4, 8, 4, 32, 768, 32000, 2048, 10000.f, 1e-5f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"tiny-moe", "qwen3moe", 256, 4, 8, 4, 32, 768, 32000, 2048, 10000.f, 1e-5f, 0, 0, 1, 0, 0, 8, 2, 128, 0, 0},
    {"tiny-llama", "llama", 256, 2, 4, 2, 64, 512, 512, 2048, 10000.f, 1e-5f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"tiny-qwen2", "qwen2", 256, 2, 4, 2, 64, 512, 512, 2048, 1e6f, 1e-6f, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {"tiny-qwen3", "qwen3", 256, 2, 8, 2, 64, 512, 512, 2048, 1e6f, 1e-6f, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"tiny-gemma3", "gemma3", 256, 6, 4, 1, 64, 256, 512, 2048, 1e6f, 1e-6f, 1, 0, 1, 1, 32, 0, 0, 0, 0, 0},
    {"tiny-qwen3moe", "qwen3moe", 256, 2, 4, 2, 64, 512, 512, 2048, 1e6f, 1e-6f, 0, 0, 1, 0, 0, 4, 2, 256, 0, 0},
    {"tiny-mixtral", "llama", 256, 2, 4, 2, 64, 256, 512, 2048, 10000.f, 1e-5f, 0, 0, 0, 0, 0, 4, 2, 256, 0, 0},
    /* a tensor-parallel test shape: 128-wide heads (O's 256 columns a rank: whole K-quant blocks) and an
     * FFN of 3 blocks of 256, which 2 ranks split unevenly (2 + 1) */
    {"tiny-uneven", "llama", 256, 2, 4, 2, 128, 768, 512, 2048, 10000.f, 1e-5f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    /* tiny-qwen3 stretched by YaRN 4x from 2048 tokens (a Qwen3 128K file's metadata, scaled down): the
     * ramp runs over pairs 5..14 of 32, so extrapolated, mixed and interpolated pairs all occur
     * (tests/golden/tiny-qwen3-yarn.json) */
    {"tiny-qwen3-yarn", "qwen3", 256, 2, 8, 2, 64, 512, 512, 8192, 1e6f, 1e-6f, 1, 0, 1, 0, 0, 0, 0, 0, 4.0f, 2048},
};
#define N_SHAPES (sizeof k_shapes / sizeof k_shapes[0])

const char *cll_bench_synth_shapes(void) {
    return "llama2-7b,llama3-8b,llama32-1b,llama3-70b,qwen3-moe-a3b,tiny,tiny-moe,tiny-llama,tiny-qwen2,tiny-qwen3,"
           "tiny-gemma3,tiny-qwen3moe,tiny-mixtral,tiny-uneven,tiny-qwen3-yarn";
}

/* ---- PRNG: xoshiro256** (seeded by splitmix64): ~1 ns per 8 bytes ---------------------- */
typedef struct { uint64_t s[4]; } rng_t;
static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static inline uint64_t next(rng_t *r) {
    uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45);
    return res;
}
static double unif(rng_t *r) { return ((next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
static double gauss(rng_t *r) { return sqrt(-2.0 * log(unif(r))) * cos(6.283185307179586 * unif(r)); }

/* ---- block scale fields: where the fp16 scales sit, and a size giving rms ~0.02 -------- */
typedef struct {
    uint8_t off[2], n;
    float base;
    float minv; /* != 0: off[1] is the block's minimum, set to minv * d so its weights centre on
                 * zero: Q4_1 / Q5_1 add m (w = d*q + m, minv -7.5 / -15.5), Q2_K / Q4_K / Q5_K
                 * subtract dmin * m_j (w = d*sc_j*q - dmin*m_j, sc_j and m_j uniform: minv = the
                 * mean q). Random minima made every weight of a block positive on average, and the
                 * activations of a deep stack overflowed (NaN router logits on a MoE file) */
} scale_spec;
static scale_spec scale_of(uint32_t t) {
    switch (t) {
    case CLL_TYPE_Q4_0: return (scale_spec){{0}, 1, 3e-3f, 0.0f};
    case CLL_TYPE_Q4_1: return (scale_spec){{0, 2}, 2, 3e-3f, -7.5f};
    case CLL_TYPE_Q5_0: return (scale_spec){{0}, 1, 1.5e-3f, 0.0f};
    case CLL_TYPE_Q5_1: return (scale_spec){{0, 2}, 2, 1.5e-3f, -15.5f};
    case CLL_TYPE_Q8_0: return (scale_spec){{0}, 1, 3e-4f, 0.0f};
    case CLL_TYPE_Q2_K: return (scale_spec){{80, 82}, 2, 2e-3f, 1.5f};
    case CLL_TYPE_Q3_K: return (scale_spec){{108}, 1, 5e-4f, 0.0f};
    case CLL_TYPE_Q4_K: return (scale_spec){{0, 2}, 2, 1e-4f, 7.5f};
    case CLL_TYPE_Q5_K: return (scale_spec){{0, 2}, 2, 6e-5f, 15.5f};
    case CLL_TYPE_Q6_K: return (scale_spec){{208}, 1, 2e-5f, 0.0f};
    case CLL_TYPE_IQ4_NL: return (scale_spec){{0}, 1, 3e-4f, 0.0f};
    case CLL_TYPE_IQ4_XS: return (scale_spec){{0}, 1, 2e-5f, 0.0f};
    default: return (scale_spec){{0}, 1, 5e-4f, 0.0f}; /* IQ2/IQ3 families: d first */
    }
}

typedef struct {
    FILE *f;
    rng_t rng;
    uint8_t *buf; /* CHUNK bytes */
    float gtab[4096];     /* N(0, 0.02) */
    uint16_t htab[4096];  /* the same as fp16 */
    uint16_t btab[4096];  /* and as bf16 */
    uint64_t written;
} writer;
enum { CHUNK = 4 << 20 };

static void fill_random(writer *w, size_t n) {
    uint64_t *p = (uint64_t *)w->buf;
    for (size_t i = 0; i < (n + 7) / 8; i++) p[i] = next(&w->rng);
}

typedef enum { K_WEIGHT, K_NORM, K_BIAS } tkind;

static cll_status emit(writer *w, size_t n) {
    if (fwrite(w->buf, 1, n, w->f) != n) return cll_err(CLL_ERR_IO, "write failed: %s", strerror(errno));
    w->written += n;
    return CLL_OK;
}

static cll_status write_tensor(writer *w, uint32_t type, uint64_t nel, uint64_t nbytes, tkind kind) {
    const cll_type_traits *tr = cll_type_traits_get(type);
    size_t per = tr->type_size;
    size_t chunk = CHUNK / per * per;
    scale_spec sc = scale_of(type);
    uint16_t stab[64];
    for (int i = 0; i < 64; i++) stab[i] = cll_f32_to_fp16(sc.base * (0.5f + i / 64.0f));
    for (uint64_t done = 0; done < nbytes;) {
        size_t n = nbytes - done < chunk ? (size_t)(nbytes - done) : chunk;
        fill_random(w, n);
        if (type == CLL_TYPE_F32) {
            float *x = (float *)w->buf;
            uint32_t *u = (uint32_t *)w->buf;
            for (size_t i = 0; i < n / 4; i++) {
                float g = w->gtab[u[i] & 4095];
                x[i] = kind == K_NORM ? 1.0f + g * 0.5f : g;
            }
        } else if (type == CLL_TYPE_F16 || type == CLL_TYPE_BF16) {
            uint16_t *u = (uint16_t *)w->buf;
            const uint16_t *tab = type == CLL_TYPE_F16 ? w->htab : w->btab;
            for (size_t i = 0; i < n / 2; i++) u[i] = tab[u[i] & 4095];
        } else {
            for (size_t b = 0; b < n; b += per)
                for (int k = 0; k < sc.n; k++) {
                    uint8_t *q = w->buf + b + sc.off[k];
                    uint16_t h = stab[q[0] & 63];
                    if (k == 1 && sc.minv != 0.0f) { /* the minimum: centre the block on zero */
                        uint16_t d;
                        memcpy(&d, w->buf + b + sc.off[0], 2);
                        h = cll_f32_to_fp16(sc.minv * cll_fp16_to_f32(d));
                    }
                    memcpy(q, &h, 2);
                }
        }
        cll_status st = emit(w, n);
        if (st != CLL_OK) return st;
        done += n;
    }
    (void)nel;
    return CLL_OK;
}

/* ---- the tensor list ------------------------------------------------------------------ */
typedef struct {
    char name[64];
    int n_dims;
    uint64_t ne[3];
    uint32_t type;
    tkind kind;
    uint64_t nbytes;
} tdesc;

typedef struct {
    tdesc *t;
    int n, cap;
} tlist;

static void add(tlist *l, const char *name, int n_dims, uint64_t ne0, uint64_t ne1, uint64_t ne2, tkind k) {
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->t = realloc(l->t, sizeof(tdesc) * (size_t)l->cap);
        if (!l->t) abort(); /* a few hundred small entries: OOM here is not recoverable anyway */
    }
    tdesc *d = &l->t[l->n++];
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    d->n_dims = n_dims;
    d->ne[0] = ne0; d->ne[1] = ne1; d->ne[2] = ne2;
    d->kind = k;
}

static void build_list(const shape *s, int L, tlist *l) {
    uint64_t d = (uint64_t)s->d, V = (uint64_t)s->V, hd = (uint64_t)s->hd;
    uint64_t qw = (uint64_t)s->H * hd, kvw = (uint64_t)s->HKV * hd;
    add(l, "token_embd.weight", 2, d, V, 1, K_WEIGHT);
    add(l, "output_norm.weight", 1, d, 1, 1, K_NORM);
    if (!s->tied) add(l, "output.weight", 2, d, V, 1, K_WEIGHT);
    char nm[64];
#define ADD(suffix, nd, a, b, c, k) (snprintf(nm, sizeof nm, "blk.%d.%s", i, suffix), add(l, nm, nd, a, b, c, k))
    for (int i = 0; i < L; i++) {
        ADD("attn_norm.weight", 1, d, 1, 1, K_NORM);
        ADD("attn_q.weight", 2, d, qw, 1, K_WEIGHT);
        ADD("attn_k.weight", 2, d, kvw, 1, K_WEIGHT);
        ADD("attn_v.weight", 2, d, kvw, 1, K_WEIGHT);
        if (s->qkv_bias) {
            ADD("attn_q.bias", 1, qw, 1, 1, K_BIAS);
            ADD("attn_k.bias", 1, kvw, 1, 1, K_BIAS);
            ADD("attn_v.bias", 1, kvw, 1, 1, K_BIAS);
        }
        if (s->qk_norm) {
            ADD("attn_q_norm.weight", 1, hd, 1, 1, K_NORM);
            ADD("attn_k_norm.weight", 1, hd, 1, 1, K_NORM);
        }
        ADD("attn_output.weight", 2, qw, d, 1, K_WEIGHT);
        if (s->post_norms) ADD("post_attention_norm.weight", 1, d, 1, 1, K_NORM);
        ADD("ffn_norm.weight", 1, d, 1, 1, K_NORM);
        if (s->E) {
            uint64_t E = (uint64_t)s->E, fe = (uint64_t)s->ffe;
            ADD("ffn_gate_inp.weight", 2, d, E, 1, K_BIAS); /* router: kept F32 like llama.cpp */
            ADD("ffn_gate_exps.weight", 3, d, fe, E, K_WEIGHT);
            ADD("ffn_up_exps.weight", 3, d, fe, E, K_WEIGHT);
            ADD("ffn_down_exps.weight", 3, fe, d, E, K_WEIGHT);
        } else {
            uint64_t ff = (uint64_t)s->ff;
            ADD("ffn_gate.weight", 2, d, ff, 1, K_WEIGHT);
            ADD("ffn_up.weight", 2, d, ff, 1, K_WEIGHT);
            ADD("ffn_down.weight", 2, ff, d, 1, K_WEIGHT);
        }
        if (s->post_norms) ADD("post_ffw_norm.weight", 1, d, 1, 1, K_NORM);
    }
#undef ADD
}

static int layer_of(const char *name) { return strncmp(name, "blk.", 4) ? 0 : atoi(name + 4); }

/* ---- metadata ---------------------------------------------------------------------------- */
static void put_meta(cll_gw *g, const shape *s, int L, const cll_synth_opts *o, int base_type) {
    char k[128];
    const char *a = s->arch;
    char name[96];
    snprintf(name, sizeof name, "synthetic-%s", s->name);
    cll_bench_gw_str(g, "general.architecture", a);
    cll_bench_gw_str(g, "general.name", name);
    cll_bench_gw_u32(g, "general.file_type", (uint32_t)cll_bench_mix_file_type(o->type));
    if (base_type != CLL_TYPE_F32 && base_type != CLL_TYPE_F16 && base_type != CLL_TYPE_BF16)
        cll_bench_gw_u32(g, "general.quantization_version", 2);
#define KEY(x) (snprintf(k, sizeof k, "%s.%s", a, x), k)
    cll_bench_gw_u32(g, KEY("context_length"), (uint32_t)s->ctx);
    cll_bench_gw_u32(g, KEY("embedding_length"), (uint32_t)s->d);
    cll_bench_gw_u32(g, KEY("block_count"), (uint32_t)L);
    cll_bench_gw_u32(g, KEY("feed_forward_length"), (uint32_t)s->ff);
    cll_bench_gw_u32(g, KEY("attention.head_count"), (uint32_t)s->H);
    cll_bench_gw_u32(g, KEY("attention.head_count_kv"), (uint32_t)s->HKV);
    cll_bench_gw_u32(g, KEY("attention.key_length"), (uint32_t)s->hd);
    cll_bench_gw_u32(g, KEY("attention.value_length"), (uint32_t)s->hd);
    cll_bench_gw_f32(g, KEY("attention.layer_norm_rms_epsilon"), s->eps);
    cll_bench_gw_f32(g, KEY("rope.freq_base"), s->rope);
    cll_bench_gw_u32(g, KEY("rope.dimension_count"), (uint32_t)s->hd);
    if (s->E) {
        cll_bench_gw_u32(g, KEY("expert_count"), (uint32_t)s->E);
        cll_bench_gw_u32(g, KEY("expert_used_count"), (uint32_t)s->EU);
        if (!strcmp(a, "qwen3moe")) cll_bench_gw_u32(g, KEY("expert_feed_forward_length"), (uint32_t)s->ffe);
    }
    if (s->swa) cll_bench_gw_u32(g, KEY("attention.sliding_window"), (uint32_t)s->swa);
    if (s->yarn > 0) {
        cll_bench_gw_str(g, KEY("rope.scaling.type"), "yarn");
        cll_bench_gw_f32(g, KEY("rope.scaling.factor"), s->yarn);
        cll_bench_gw_u32(g, KEY("rope.scaling.original_context_length"), (uint32_t)s->yarn_orig);
    }
#undef KEY
    /* SPM vocab of synthetic pieces, as synth_gguf.py's synth_vocab: <unk> <s> </s>, the 256
     * byte tokens (so any text encodes), then "▁t<i>" pieces with falling scores */
    int V = s->V;
    char **toks = malloc(sizeof(char *) * (size_t)V);
    float *scores = malloc(sizeof(float) * (size_t)V);
    int32_t *types = malloc(sizeof(int32_t) * (size_t)V);
    char *pool = malloc((size_t)V * 16);
    if (!toks || !scores || !types || !pool) abort();
    for (int i = 0; i < V; i++) {
        char *p = pool + (size_t)i * 16;
        if (i == 0) strcpy(p, "<unk>");
        else if (i == 1) strcpy(p, "<s>");
        else if (i == 2) strcpy(p, "</s>");
        else if (i < 259) snprintf(p, 16, "<0x%02X>", i - 3);
        else snprintf(p, 16, "\xe2\x96\x81t%d", i - 259);
        toks[i] = p;
        scores[i] = -(float)i;
        types[i] = i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1;
    }
    cll_bench_gw_str(g, "tokenizer.ggml.model", "llama");
    cll_bench_gw_arr_str(g, "tokenizer.ggml.tokens", (const char *const *)toks, (uint64_t)V);
    cll_bench_gw_arr_f32(g, "tokenizer.ggml.scores", scores, (uint64_t)V);
    cll_bench_gw_arr_i32(g, "tokenizer.ggml.token_type", types, (uint64_t)V);
    cll_bench_gw_u32(g, "tokenizer.ggml.bos_token_id", 1);
    cll_bench_gw_u32(g, "tokenizer.ggml.eos_token_id", 2);
    cll_bench_gw_u32(g, "tokenizer.ggml.unknown_token_id", 0);
    free(toks); free(scores); free(types); free(pool);
}

cll_status cll_bench_synth(const cll_synth_opts *o) {
    const shape *s = NULL;
    for (size_t i = 0; i < N_SHAPES; i++)
        if (!strcmp(k_shapes[i].name, o->shape)) s = &k_shapes[i];
    if (!s) return cll_err(CLL_ERR_ARG, "unknown shape '%s' (known: %s)", o->shape, cll_bench_synth_shapes());
    int base = cll_bench_mix_default(o->type);
    if (base < 0) return cll_err(CLL_ERR_ARG, "unknown type '%s' (known: %s)", o->type, cll_bench_synth_types());
    int L = o->layers > 0 ? o->layers : s->L;
    tlist l = {0};
    build_list(s, L, &l);
    cll_mix_ctx mc = {o->type, s->H / s->HKV, s->E, !s->tied};
    for (int i = 0; i < l.n; i++) {
        tdesc *t = &l.t[i];
        if (t->n_dims == 1 || t->kind != K_WEIGHT) t->type = CLL_TYPE_F32;
        else t->type = (uint32_t)cll_bench_mix_type(&mc, t->name, layer_of(t->name), L, t->ne[0]);
    }
    if (o->layout_only) {
        for (int i = 0; i < l.n; i++) printf("%s %s\n", l.t[i].name, cll_type_name(l.t[i].type));
        free(l.t);
        return CLL_OK;
    }
    cll_gw *g = cll_bench_gw_new();
    if (!g) {
        free(l.t);
        return cll_err(CLL_ERR_NOMEM, "synth: out of memory");
    }
    put_meta(g, s, L, o, base);
    uint64_t total = 0;
    for (int i = 0; i < l.n; i++) {
        tdesc *t = &l.t[i];
        t->nbytes = cll_bench_gw_tensor(g, t->name, t->type, t->n_dims, t->ne);
        total += t->nbytes;
    }
    writer w = {0};
    cll_status st = CLL_OK;
    w.f = fopen(o->out, "wb");
    w.buf = malloc(CHUNK + 8);
    if (!w.f) st = cll_err(CLL_ERR_IO, "%s: %s", o->out, strerror(errno));
    else if (!w.buf) st = cll_err(CLL_ERR_NOMEM, "synth: out of memory");
    if (st == CLL_OK) {
        uint64_t x = o->seed ^ 0x5eedull;
        for (int i = 0; i < 4; i++) w.rng.s[i] = splitmix(&x);
        for (int i = 0; i < 4096; i++) {
            w.gtab[i] = (float)(gauss(&w.rng) * 0.02);
            w.htab[i] = cll_f32_to_fp16(w.gtab[i]);
            w.btab[i] = cll_f32_to_bf16(w.gtab[i]);
        }
        double t0 = cll_now();
        st = cll_bench_gw_write_header(g, w.f);
        for (int i = 0; i < l.n && st == CLL_OK; i++) {
            tdesc *t = &l.t[i];
            st = write_tensor(&w, t->type, t->ne[0] * t->ne[1] * t->ne[2], t->nbytes, t->kind);
            if (st == CLL_OK) st = cll_bench_gw_pad(g, w.f, t->nbytes);
        }
        if (fclose(w.f) != 0 && st == CLL_OK) st = cll_err(CLL_ERR_IO, "%s: close failed", o->out);
        w.f = NULL;
        double dt = cll_now() - t0;
        if (st == CLL_OK && !o->quiet)
            fprintf(stderr, "synth: wrote %s (%s x%d layers, %s, %d tensors, %.2f GB) in %.1f s (%.2f GB/s)\n", o->out,
                    s->name, L, o->type, l.n, total / 1e9, dt, dt > 0 ? total / 1e9 / dt : 0.0);
    }
    if (w.f) fclose(w.f);
    if (st != CLL_OK && o->out) remove(o->out);
    free(w.buf);
    cll_bench_gw_free(g);
    free(l.t);
    return st;
}
