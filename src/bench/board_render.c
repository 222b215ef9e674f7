/* bench/board_render: BOARD.md and board.html from every records file in bench/records. Per box and
 * backend, one line per model file and one column group per test: cllama, llama.cpp, their
 * ratio (computed here), and for decode tests the fraction of the memory roofline
 * (bandwidth / bytes of weights) where the box's bandwidth is known. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench/board.h"

typedef struct {
    char key[256];   /* model file name (after sha256 unification) */
    double size;     /* bytes of weights (llama-bench's model_size) */
    bool moe;
} model_t;

typedef struct {
    char name[32];
    long long np, ng, nd;
} test_t;

typedef struct {
    const char *box, *backend;
    char label[32]; /* the backend, and its tensor-parallel degree when split ("cuda, tp 2") */
    double bw; /* GB/s, 0 = unknown */
    model_t *m;
    int nm;
    test_t t[16];
    int nt;
    json_t **c, **r; /* [nm * nt]: cllama and llama.cpp rows */
} table_t;

static const char *sget(json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}
static double nget(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

static void model_key(json_t *rows, json_t *row, char *buf, size_t cap) {
    /* same bytes under another name: file under the name the cllama row uses */
    const char *sha = sget(row, "model_sha256");
    const char *name = cll_bench_basename(sget(row, "model_filename"));
    if (*sha) {
        size_t i;
        json_t *o;
        json_array_foreach(rows, i, o) if (!strcmp(sget(o, "model_sha256"), sha) && !strcmp(sget(o, "engine"), "cllama")) {
            name = cll_bench_basename(sget(o, "model_filename"));
            break;
        }
    }
    snprintf(buf, cap, "%s", name);
    size_t n = strlen(buf);
    if (n > 5 && !strcmp(buf + n - 5, ".gguf")) buf[n - 5] = 0;
}

static int cmp_model(const void *a, const void *b) { return strcmp(((const model_t *)a)->key, ((const model_t *)b)->key); }
static int cmp_test(const void *a, const void *b) {
    const test_t *x = a, *y = b;
    if ((x->np > 0) != (y->np > 0)) return x->np > 0 ? -1 : 1; /* prefill before decode */
    if (x->np != y->np) return x->np < y->np ? -1 : 1;
    return x->ng < y->ng ? -1 : x->ng > y->ng;
}

/* a row's tensor-parallel degree (rows from before the field: one device) */
static long long row_tp(json_t *o) {
    json_t *v = json_object_get(o, "tp");
    return json_is_integer(v) ? (long long)json_integer_value(v) : 1;
}

/* a row of this table: its backend and split, not a batched row (those have their own tables) */
static bool in_table(json_t *o, const char *backend, long long tp) {
    return !strcmp(sget(o, "backend"), backend) && !json_object_get(o, "pl") && row_tp(o) == tp;
}

/* build the table of one backend of one box, at one tensor-parallel degree (1: one device) */
static void build(json_t *doc, const char *backend, long long tp, table_t *t) {
    json_t *rows = json_object_get(doc, "rows");
    memset(t, 0, sizeof *t);
    t->box = sget(doc, "box");
    t->backend = backend;
    if (tp > 1) snprintf(t->label, sizeof t->label, "%s, tp %lld", backend, tp);
    else snprintf(t->label, sizeof t->label, "%s", backend);
    t->bw = nget(doc, "bandwidth_GBps") * (double)tp; /* a split reads its shards from tp devices at once */
    size_t i;
    json_t *o;
    t->m = calloc(json_array_size(rows) + 1, sizeof(model_t));
    json_array_foreach(rows, i, o) {
        if (!in_table(o, backend, tp)) continue; /* batched rows: their own table */
        char k[256];
        model_key(rows, o, k, sizeof k);
        int j;
        for (j = 0; j < t->nm && strcmp(t->m[j].key, k); j++) {}
        if (j == t->nm) {
            snprintf(t->m[j].key, sizeof t->m[j].key, "%s", k);
            t->nm++;
        }
        if (t->m[j].size == 0) t->m[j].size = nget(o, "model_size");
        if (strcasestr(sget(o, "model_type"), "moe") || strcasestr(k, "moe")) t->m[j].moe = true;
        const char *tn = sget(o, "test");
        int q;
        for (q = 0; q < t->nt && strcmp(t->t[q].name, tn); q++) {}
        if (q == t->nt && t->nt < 16) {
            snprintf(t->t[q].name, sizeof t->t[q].name, "%s", tn);
            t->t[q].np = json_integer_value(json_object_get(o, "n_prompt"));
            t->t[q].ng = json_integer_value(json_object_get(o, "n_gen"));
            t->t[q].nd = json_integer_value(json_object_get(o, "n_depth"));
            t->nt++;
        }
    }
    qsort(t->m, (size_t)t->nm, sizeof(model_t), cmp_model);
    qsort(t->t, (size_t)t->nt, sizeof(test_t), cmp_test);
    t->c = calloc((size_t)(t->nm * t->nt + 1), sizeof(json_t *));
    t->r = calloc((size_t)(t->nm * t->nt + 1), sizeof(json_t *));
    json_array_foreach(rows, i, o) {
        if (!in_table(o, backend, tp)) continue;
        char k[256];
        model_key(rows, o, k, sizeof k);
        int j, q;
        for (j = 0; j < t->nm && strcmp(t->m[j].key, k); j++) {}
        for (q = 0; q < t->nt && strcmp(t->t[q].name, sget(o, "test")); q++) {}
        if (j == t->nm || q == t->nt) continue;
        if (!strcmp(sget(o, "engine"), "cllama")) t->c[j * t->nt + q] = o;
        else if (!strcmp(sget(o, "engine"), "llama.cpp")) t->r[j * t->nt + q] = o;
    }
}

static void table_free(table_t *t) {
    free(t->m);
    free(t->c);
    free(t->r);
}

/* decimals follow the size of the mean, so "11480 ± 1025" and "15.83 ± 0.20" */
static int decimals(double v) { return v >= 1000 ? 0 : v >= 100 ? 1 : 2; }
static void fmt_ts(double v, char *buf, size_t cap) { snprintf(buf, cap, "%.*f", decimals(v), v); }

/* "123.4 ± 1.2" plus markers; "—" when missing */
static void cell_text(json_t *row, char *buf, size_t cap) {
    if (!row) {
        snprintf(buf, cap, "—");
        return;
    }
    char a[32], b[32];
    fmt_ts(nget(row, "avg_ts"), a, sizeof a);
    snprintf(b, sizeof b, "%.*f", decimals(nget(row, "avg_ts")), nget(row, "stddev_ts"));
    /* a cllama row that ran without a tune sidecar (tune_sha256 "none" or absent) is marked ·u, one
     * that ran on its box class's shipped defaults ("class:<class>:<sha256>") ·c */
    const char *ts = sget(row, "tune_sha256");
    const bool ours = !strcmp(sget(row, "engine"), "cllama");
    const bool untuned = ours && (!ts[0] || !strcmp(ts, "none")), cls = ours && !strncmp(ts, "class:", 6);
    snprintf(buf, cap, "%s ± %s%s%s%s", a, b, untuned ? " ·u" : cls ? " ·c" : "", !strcmp(sget(row, "noise"), "noisy") ? " ⚠noisy" : "",
             !strcmp(sget(row, "parity"), "fail") ? " ✗parity" : "");
}

static void ratio_text(json_t *c, json_t *r, char *buf, size_t cap) {
    double rv = r ? nget(r, "avg_ts") : 0;
    if (!c || !r || rv <= 0) snprintf(buf, cap, "—");
    else snprintf(buf, cap, "%.2f×", nget(c, "avg_ts") / rv);
}

/* fraction of the decode roofline: tok/s x bytes per token / bandwidth. The weight bytes a token
 * reads are the cllama row's decode_weight_bytes (the plan's matmul weights: the token embedding is
 * one row a token, not the whole table), the same for both engines' cells; a cell without that
 * figure falls back to the file's size (which counts the embedding table too: on a 1B-shaped file
 * ~17% more, so the cell reads high). A test at depth also reads the K/V cache: its bytes come from
 * the cllama row too (decode_kv_bytes, the same cache traffic for both engines: F16 K/V over the
 * same cells); without one the cell is n/a */
static void roof_text(const table_t *t, int j, int q, json_t *row, json_t *crow, char *buf, size_t cap) {
    const double kv = t->t[q].nd > 0 ? (crow ? nget(crow, "decode_kv_bytes") : 0) : 0;
    const double wb = crow && nget(crow, "decode_weight_bytes") > 0 ? nget(crow, "decode_weight_bytes") : t->m[j].size;
    if (!row) snprintf(buf, cap, "—");
    else if (t->m[j].moe) snprintf(buf, cap, "n/a (MoE)");
    else if (t->bw <= 0 || wb <= 0 || (t->t[q].nd > 0 && kv <= 0)) snprintf(buf, cap, "n/a");
    else snprintf(buf, cap, "%.0f%%", 100.0 * nget(row, "avg_ts") * (wb + kv) / (t->bw * 1e9));
}

static const char *first_str(const table_t *t, const char *engine, const char *key) {
    json_t **v = !strcmp(engine, "cllama") ? t->c : t->r;
    for (int i = 0; i < t->nm * t->nt; i++)
        if (v[i] && *sget(v[i], key)) return sget(v[i], key);
    return NULL;
}
static const char *first_prov(const table_t *t, const char *engine, const char *key) {
    json_t **v = !strcmp(engine, "cllama") ? t->c : t->r;
    for (int i = 0; i < t->nm * t->nt; i++)
        if (v[i] && *sget(json_object_get(v[i], "provenance"), key)) return sget(json_object_get(v[i], "provenance"), key);
    return NULL;
}

static void md_table(FILE *f, const table_t *t) {
    fprintf(f, "\n## %s — %s\n\n", t->box, t->label);
    const char *cpu = first_str(t, "cllama", "cpu_info"), *gpu = first_str(t, "cllama", "gpu_info");
    if (!cpu) cpu = first_str(t, "llama.cpp", "cpu_info");
    if (!gpu) gpu = first_str(t, "llama.cpp", "gpu_info");
    fprintf(f, "- hardware: %s%s%s\n", cpu ? cpu : "?", gpu && *gpu ? "; " : "", gpu ? gpu : "");
    if (t->bw > 0)
        fprintf(f, "- read bandwidth: %.0f GB/s%s (decode roofline = bandwidth / bytes of weights a token reads; at depth, of weights and the K/V cache)\n", t->bw,
                strchr(t->label, ',') ? ", the devices together" : "");
    const char *sha = first_prov(t, "cllama", "engine_git_sha"), *bc = first_str(t, "llama.cpp", "build_commit");
    const char *note = first_prov(t, "llama.cpp", "note");
    fprintf(f, "- cllama: git %s; llama.cpp: build %s%s%s\n\n", sha ? sha : "—", bc ? bc : "—", note ? " — " : "",
            note ? note : "");
    fprintf(f, "| model file | size GB |");
    for (int q = 0; q < t->nt; q++) {
        const char *n = t->t[q].name;
        fprintf(f, " %s cllama | %s llama.cpp | %s ratio |", n, n, n);
        if (t->t[q].np == 0) fprintf(f, " %s roofline cllama / llama.cpp |", n);
    }
    fprintf(f, "\n|---|---:|");
    for (int q = 0; q < t->nt; q++) fprintf(f, "---:|---:|---:|%s", t->t[q].np == 0 ? "---:|" : "");
    fprintf(f, "\n");
    for (int j = 0; j < t->nm; j++) {
        fprintf(f, "| %s | %.2f |", t->m[j].key, t->m[j].size / 1e9);
        for (int q = 0; q < t->nt; q++) {
            json_t *c = t->c[j * t->nt + q], *r = t->r[j * t->nt + q];
            char a[96], b[96], x[32], rc[32], rr[32];
            cell_text(c, a, sizeof a);
            cell_text(r, b, sizeof b);
            ratio_text(c, r, x, sizeof x);
            fprintf(f, " %s | %s | %s |", a, b, x);
            if (t->t[q].np == 0) {
                roof_text(t, j, q, c, c, rc, sizeof rc);
                roof_text(t, j, q, r, c, rr, sizeof rr);
                fprintf(f, " %s / %s |", rc, rr);
            }
        }
        fprintf(f, "\n");
    }
}

static void html_esc(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

/* one horizontal bar chart per test: a cllama and a llama.cpp bar per model, same scale */
static void html_chart(FILE *f, const table_t *t, int q) {
    double mx = 0;
    for (int j = 0; j < t->nm; j++) {
        json_t *c = t->c[j * t->nt + q], *r = t->r[j * t->nt + q];
        if (c && nget(c, "avg_ts") > mx) mx = nget(c, "avg_ts");
        if (r && nget(r, "avg_ts") > mx) mx = nget(r, "avg_ts");
    }
    if (mx <= 0) return;
    const int lw = 190, bw = 420, rh = 16, gap = 10, W = lw + bw + 220; /* room for "value engine ⚠noisy" + ratio */
    int H = 24 + t->nm * (2 * rh + gap);
    fprintf(f, "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" role=\"img\" "
               "aria-label=\"%s tokens per second\">\n", W, H, t->t[q].name);
    fprintf(f, "<text x=\"0\" y=\"14\" class=\"h\">%s — tokens/s (longer is faster)</text>\n", t->t[q].name);
    for (int j = 0; j < t->nm; j++) {
        int y = 24 + j * (2 * rh + gap);
        fprintf(f, "<text x=\"0\" y=\"%d\" class=\"l\">", y + rh + 4);
        html_esc(f, t->m[j].key);
        fprintf(f, "</text>\n");
        json_t *rows[2] = {t->c[j * t->nt + q], t->r[j * t->nt + q]};
        for (int e = 0; e < 2; e++) {
            if (!rows[e]) continue;
            double v = nget(rows[e], "avg_ts");
            int w = (int)(bw * v / mx + 0.5);
            char a[32];
            fmt_ts(v, a, sizeof a);
            bool noisy = !strcmp(sget(rows[e], "noise"), "noisy"), bad = !strcmp(sget(rows[e], "parity"), "fail");
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" class=\"%s%s\"/>", lw, y + e * rh, w < 1 ? 1 : w,
                    rh - 2, e ? "ref" : "ours", noisy || bad ? " warn" : "");
            fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"v\">%s %s%s%s</text>\n", lw + w + 4, y + e * rh + rh - 5, a,
                    e ? "llama.cpp" : "cllama", noisy ? " ⚠noisy" : "", bad ? " ✗parity" : "");
        }
        char x[32];
        ratio_text(rows[0], rows[1], x, sizeof x);
        if (rows[0] && rows[1])
            fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"x\">%s</text>\n", W - 4, y + rh + 4, x);
    }
    fprintf(f, "</svg></figure>\n");
}

static void html_table(FILE *f, const table_t *t) {
    fprintf(f, "<section><h2>");
    html_esc(f, t->box);
    fprintf(f, " — %s</h2>\n", t->label);
    const char *cpu = first_str(t, "cllama", "cpu_info"), *gpu = first_str(t, "cllama", "gpu_info");
    if (!cpu) cpu = first_str(t, "llama.cpp", "cpu_info");
    if (!gpu) gpu = first_str(t, "llama.cpp", "gpu_info");
    const char *sha = first_prov(t, "cllama", "engine_git_sha"), *bc = first_str(t, "llama.cpp", "build_commit");
    const char *note = first_prov(t, "llama.cpp", "note");
    fprintf(f, "<p>hardware: ");
    html_esc(f, cpu ? cpu : "?");
    if (gpu && *gpu) {
        fprintf(f, "; ");
        html_esc(f, gpu);
    }
    if (t->bw > 0)
        fprintf(f, "<br>read bandwidth %.0f GB/s; decode roofline = bandwidth / bytes of weights a token reads (at depth, of weights and the K/V cache)", t->bw);
    fprintf(f, "<br>cllama: git ");
    html_esc(f, sha ? sha : "—");
    fprintf(f, "; llama.cpp: build ");
    html_esc(f, bc ? bc : "—");
    if (note) {
        fprintf(f, " — ");
        html_esc(f, note);
    }
    fprintf(f, "</p>\n<table><thead><tr><th>model file</th><th>size GB</th>");
    for (int q = 0; q < t->nt; q++) {
        const char *n = t->t[q].name;
        fprintf(f, "<th>%s cllama</th><th>%s llama.cpp</th><th>%s ratio</th>", n, n, n);
        if (t->t[q].np == 0) fprintf(f, "<th>%s roofline cllama / llama.cpp</th>", n);
    }
    fprintf(f, "</tr></thead><tbody>\n");
    for (int j = 0; j < t->nm; j++) {
        fprintf(f, "<tr><td>");
        html_esc(f, t->m[j].key);
        fprintf(f, "</td><td>%.2f</td>", t->m[j].size / 1e9);
        for (int q = 0; q < t->nt; q++) {
            json_t *c = t->c[j * t->nt + q], *r = t->r[j * t->nt + q];
            char a[96], b[96], x[32], rc[32], rr[32];
            cell_text(c, a, sizeof a);
            cell_text(r, b, sizeof b);
            ratio_text(c, r, x, sizeof x);
            double ratio = c && r && nget(r, "avg_ts") > 0 ? nget(c, "avg_ts") / nget(r, "avg_ts") : 0;
            fprintf(f, "<td>%s</td><td>%s</td><td class=\"%s\">%s</td>", a, b,
                    ratio == 0 ? "" : ratio >= 1 ? "win" : "loss", x);
            if (t->t[q].np == 0) {
                roof_text(t, j, q, c, c, rc, sizeof rc);
                roof_text(t, j, q, r, c, rr, sizeof rr);
                fprintf(f, "<td>%s / %s</td>", rc, rr);
            }
        }
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</tbody></table>\n");
    for (int q = 0; q < t->nt; q++) html_chart(f, t, q);
    fprintf(f, "</section>\n");
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* ---- the batched table (llama-batched-bench protocol rows: they carry "pl") ---------------------- */

typedef struct {
    json_t *c, *r; /* cllama / llama.cpp row of one (model, pp, tg, pl) */
} bb_cell;

static int cmp_bb(const void *a, const void *b) {
    json_t *x = ((const bb_cell *)a)->c ? ((const bb_cell *)a)->c : ((const bb_cell *)a)->r;
    json_t *y = ((const bb_cell *)b)->c ? ((const bb_cell *)b)->c : ((const bb_cell *)b)->r;
    const int m = strcmp(cll_bench_basename(sget(x, "model_filename")), cll_bench_basename(sget(y, "model_filename")));
    if (m) return m;
    static const char *k[] = {"pp", "tg", "pl"};
    for (int i = 0; i < 3; i++) {
        const double d = nget(x, k[i]) - nget(y, k[i]);
        if (d) return d < 0 ? -1 : 1;
    }
    return 0;
}

static bool bb_same(json_t *a, json_t *b) {
    return !strcmp(cll_bench_basename(sget(a, "model_filename")), cll_bench_basename(sget(b, "model_filename"))) &&
           nget(a, "pp") == nget(b, "pp") && nget(a, "tg") == nget(b, "tg") && nget(a, "pl") == nget(b, "pl");
}

/* one table per (records file, backend): per model file and (pp, tg, pl) the aggregate rates of both engines */
static void batched_tables(FILE *md, FILE *html, json_t *doc, const char *backend) {
    json_t *rows = json_object_get(doc, "rows"), *o;
    size_t i, cap = json_array_size(rows);
    bb_cell *cells = calloc(cap + 1, sizeof *cells);
    int n = 0;
    json_array_foreach(rows, i, o) {
        if (!json_object_get(o, "pl") || strcmp(sget(o, "backend"), backend) || row_tp(o) != 1) continue;
        const bool ours = !strcmp(sget(o, "engine"), "cllama");
        int j;
        for (j = 0; j < n && !bb_same(cells[j].c ? cells[j].c : cells[j].r, o); j++) {}
        if (j == n) n++;
        if (ours) cells[j].c = o;
        else cells[j].r = o;
    }
    if (n == 0) {
        free(cells);
        return;
    }
    qsort(cells, (size_t)n, sizeof *cells, cmp_bb);
    const char *box = sget(doc, "box");
    if (md) {
        fprintf(md, "\n## %s — %s, batched (llama-batched-bench protocol)\n\n"
                    "speed_tg: tokens/s over all pl sequences; one run per cell (no repetitions).\n\n"
                    "| model file | pp | tg | pl | speed_tg cllama | speed_tg llama.cpp | ratio | speed_pp cllama | "
                    "speed_pp llama.cpp | ratio |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
                box, backend);
    }
    if (html) {
        fprintf(html, "<section><h2>");
        html_esc(html, box);
        fprintf(html, " — %s, batched (llama-batched-bench protocol)</h2><table><thead><tr><th>model file</th><th>pp</th>"
                      "<th>tg</th><th>pl</th><th>speed_tg cllama</th><th>speed_tg llama.cpp</th><th>ratio</th>"
                      "<th>speed_pp cllama</th><th>speed_pp llama.cpp</th><th>ratio</th></tr></thead><tbody>\n",
                backend);
    }
    for (int j = 0; j < n; j++) {
        json_t *x = cells[j].c ? cells[j].c : cells[j].r;
        char v[4][32], rt[2][32];
        static const char *key[2] = {"speed_tg", "speed_pp"};
        for (int q = 0; q < 2; q++) {
            json_t *e[2] = {cells[j].c, cells[j].r};
            for (int w = 0; w < 2; w++) {
                if (e[w]) fmt_ts(nget(e[w], key[q]), v[2 * q + w], sizeof v[0]);
                else snprintf(v[2 * q + w], sizeof v[0], "—");
            }
            if (e[0] && e[1] && nget(e[1], key[q]) > 0)
                snprintf(rt[q], sizeof rt[0], "%.2f×", nget(e[0], key[q]) / nget(e[1], key[q]));
            else snprintf(rt[q], sizeof rt[0], "—");
        }
        const char *mf = cll_bench_basename(sget(x, "model_filename"));
        if (md)
            fprintf(md, "| %s | %.0f | %.0f | %.0f | %s | %s | %s | %s | %s | %s |\n", mf, nget(x, "pp"), nget(x, "tg"),
                    nget(x, "pl"), v[0], v[1], rt[0], v[2], v[3], rt[1]);
        if (html) {
            fprintf(html, "<tr><td>");
            html_esc(html, mf);
            fprintf(html, "</td><td>%.0f</td><td>%.0f</td><td>%.0f</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
                          "<td>%s</td></tr>\n",
                    nget(x, "pp"), nget(x, "tg"), nget(x, "pl"), v[0], v[1], rt[0], v[2], v[3], rt[1]);
        }
    }
    if (html) fprintf(html, "</tbody></table></section>\n");
    free(cells);
}

cll_status cll_bench_board_render(const char *dir, const char *md_path, const char *html_path) {
    DIR *d = opendir(dir);
    if (!d) return cll_err(CLL_ERR_IO, "%s: cannot open records dir", dir);
    char *names[256];
    int nn = 0;
    struct dirent *e;
    while ((e = readdir(d)) && nn < 256) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".json")) names[nn++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)nn, sizeof(char *), cmp_str);
    FILE *md = md_path ? fopen(md_path, "w") : NULL, *html = html_path ? fopen(html_path, "w") : NULL;
    cll_status st = CLL_OK;
    if ((md_path && !md) || (html_path && !html)) st = cll_err(CLL_ERR_IO, "cannot write the board files");
    if (md)
        fprintf(md, "# cllama benchmark board\n\nGenerated by `cllama board` from `bench/records/*.json` — do not edit.\n"
                    "Cells: tokens/s, mean ± sample sd over the repetitions (llama-bench protocol: one untimed "
                    "warm-up, pp = one prefill from an empty cache, tg = single-token steps). Ratio = cllama / "
                    "llama.cpp on the same box, backend and model file, computed at render time. ·u: cllama ran untuned "
                    "(no tune sidecar applied; docs/tune.md); ·c: on its box class's shipped defaults. ⚠noisy: cv > 3%% "
                    "after one re-run; ✗parity: the served path failed its oracle check on that box.\n");
    if (html)
        fprintf(html,
                "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>cllama benchmark board</title>\n"
                "<style>body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}"
                "table{border-collapse:collapse;margin:8px 0 16px}th,td{border:1px solid #ccc;padding:3px 8px;"
                "text-align:right}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}"
                "td.win{color:#0a6b2b;font-weight:600}td.loss{color:#a3261b;font-weight:600}"
                "svg text{font:12px system-ui,sans-serif}svg .h{font-weight:600}svg .x{text-anchor:end;font-weight:600}"
                "rect.ours{fill:#2b7bb9}rect.ref{fill:#9a9a9a}rect.warn{fill-opacity:.45;stroke:#c80;stroke-width:1.5}"
                "figure{margin:4px 0 12px}</style></head><body>\n<h1>cllama benchmark board</h1>\n"
                "<p>Generated by <code>cllama board</code> from <code>bench/records/*.json</code>. Tokens/s, mean ± "
                "sd; ratio = cllama / llama.cpp on the same box, backend and model file (computed at render time). "
                "<span style=\"color:#2b7bb9\">■</span> cllama <span style=\"color:#9a9a9a\">■</span> llama.cpp; "
                "·u = cllama ran untuned (no tune sidecar applied); ·c = on its box class's shipped defaults; "
                "⚠noisy = cv &gt; 3%% after a re-run; ✗parity = failed its oracle check.</p>\n");
    for (int i = 0; i < nn && st == CLL_OK; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        json_t *doc = cll_bench_records_load(path, "?");
        if (!doc) {
            st = CLL_ERR_FORMAT;
            break;
        }
        static const char *backends[] = {"cpu", "cuda"};
        for (int b = 0; b < 2; b++) {
            /* one device first, then each split the rows hold (tp 2, 4, ...: cllama only; llama.cpp's
             * rows ran on one device) */
            for (long long tp = 1; tp <= 16; tp++) {
                table_t t;
                build(doc, backends[b], tp, &t);
                if (t.nm) {
                    if (md) md_table(md, &t);
                    if (html) html_table(html, &t);
                }
                table_free(&t);
            }
            batched_tables(md, html, doc, backends[b]);
        }
        json_decref(doc);
    }
    if (html) fprintf(html, "</body></html>\n");
    if (md && fclose(md) != 0 && st == CLL_OK) st = cll_err(CLL_ERR_IO, "%s: write failed", md_path);
    if (html && fclose(html) != 0 && st == CLL_OK) st = cll_err(CLL_ERR_IO, "%s: write failed", html_path);
    for (int i = 0; i < nn; i++) free(names[i]);
    return st;
}
