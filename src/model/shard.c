/* model/shard: the tensor-parallel split (shard.h).
 * Owns nothing. Rule: the checks run in a fixed order (KV heads, experts, O columns, down
 * columns), so the first failing reason is the one reported. */
#include "model/shard.h"

#include <stdio.h>
#include <string.h>

#include "formats/formats.h"

/* why n does not split the model ("" when it does) */
static void check(const cll_plan *p, const cll_hparams *hp, int32_t n, char *why, size_t cap) {
    why[0] = 0;
    if (n < 1) {
        snprintf(why, cap, "%d ranks", n);
        return;
    }
    if (hp->n_head_kv % n) {
        snprintf(why, cap, "the %d KV heads do not split into %d equal groups", hp->n_head_kv, n);
        return;
    }
    if (hp->n_expert > 0 && hp->n_expert % n) {
        snprintf(why, cap, "the %d experts do not split into %d equal sets", hp->n_expert, n);
        return;
    }
    for (int64_t i = 0; i < p->n_sites; i++) {
        const cll_plan_site *s = &p->sites[i];
        if (s->kind != CLL_SITE_ATTN_O && s->kind != CLL_SITE_FFN_DOWN) continue; /* the column splits */
        const cll_type_traits *tr = cll_type_traits_get(s->wtype);
        const int64_t qk = tr && tr->blck ? (int64_t)tr->blck : 1;
        if (s->cols % n || (s->cols / n) % qk) {
            snprintf(why, cap, "layer %d %s (%s, %lld columns) splits into %s%lld-column shards, not whole %lld-element blocks",
                     s->layer, s->kind == CLL_SITE_ATTN_O ? "attn_output" : "ffn_down", cll_type_name(s->wtype),
                     (long long)s->cols, s->cols % n ? "uneven " : "", (long long)(s->cols / n), (long long)qk);
            return;
        }
    }
}

int cll_shard_valid(const cll_plan *p, const cll_hparams *hp, int32_t max_n, int32_t *out, int cap) {
    int k = 0;
    char why[256];
    for (int32_t n = 1; n <= max_n; n++) {
        check(p, hp, n, why, sizeof why);
        if (!why[0] && k < cap) out[k++] = n;
    }
    return k;
}

cll_status cll_shard_plan(const cll_plan *p, const cll_hparams *hp, int32_t n, int32_t rank, cll_shard *out) {
    memset(out, 0, sizeof *out);
    char why[256];
    check(p, hp, n, why, sizeof why);
    if (why[0]) {
        int32_t v[64];
        const int nv = cll_shard_valid(p, hp, 64, v, 64);
        char list[256] = "";
        size_t o = 0;
        for (int i = 0; i < nv && o + 8 < sizeof list; i++) o += (size_t)snprintf(list + o, sizeof list - o, "%s%d", i ? ", " : "", v[i]);
        return cll_err(CLL_ERR_UNSUPPORTED, "tensor parallel over %d GPUs: %s (valid: %s)", n, why, list);
    }
    if (rank < 0 || rank >= n) return cll_err(CLL_ERR_ARG, "tensor parallel: rank %d of %d", rank, n);
    out->n = n;
    out->rank = rank;
    const int32_t kvn = hp->n_head_kv / n, g = hp->n_head / hp->n_head_kv;
    out->kv0 = rank * kvn;
    out->kv1 = out->kv0 + kvn;
    out->q0 = out->kv0 * g;
    out->q1 = out->kv1 * g;
    const int64_t ff = hp->n_expert > 0 ? 0 : hp->n_ff;
    out->f0 = ff / n * rank;
    out->f1 = out->f0 + ff / n;
    if (hp->n_expert > 0) {
        out->e0 = hp->n_expert / n * rank;
        out->e1 = out->e0 + hp->n_expert / n;
    }
    const int64_t V = hp->n_vocab, per = (V + n - 1) / n; /* vocab rows: the last rank may hold fewer */
    out->v0 = per * rank < V ? per * rank : V;
    out->v1 = per * (rank + 1) < V ? per * (rank + 1) : V;
    return CLL_OK;
}
