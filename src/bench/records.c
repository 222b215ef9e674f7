/* bench/records: load, upsert and save records files; import llama-bench JSONL rows as
 * pinned reference rows. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/board.h"

void cll_bench_records_path(const char *dir, const char *box, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/%s.json", dir, box);
}

void cll_bench_records_dir(char *buf, size_t cap) {
    const char *env = getenv("CLLAMA_RECORDS");
    if (env && *env) snprintf(buf, cap, "%s", env);
    else snprintf(buf, cap, "%s/bench/records", CLLAMA_SOURCE_DIR);
}

const char *cll_bench_basename(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

void cll_bench_test_name_d(json_int_t p, json_int_t g, json_int_t d, char *buf, size_t cap) {
    cll_bench_test_name(p, g, buf, cap);
    const size_t len = strlen(buf);
    if (d > 0 && len < cap) snprintf(buf + len, cap - len, " @ d%lld", (long long)d);
}

void cll_bench_test_name(json_int_t p, json_int_t g, char *buf, size_t cap) {
    if (p > 0 && g > 0) snprintf(buf, cap, "pp%lld+tg%lld", (long long)p, (long long)g);
    else if (p > 0) snprintf(buf, cap, "pp%lld", (long long)p);
    else snprintf(buf, cap, "tg%lld", (long long)g);
}

json_t *cll_bench_records_load(const char *path, const char *box) {
    struct stat st;
    if (stat(path, &st) != 0) return json_pack("{s:s, s:[]}", "box", box, "rows");
    json_error_t e;
    json_t *doc = json_load_file(path, 0, &e);
    if (!doc) {
        cll_err(CLL_ERR_FORMAT, "%s:%d: %s", path, e.line, e.text);
        return NULL;
    }
    if (!json_is_object(doc) || !json_is_array(json_object_get(doc, "rows"))) {
        json_decref(doc);
        cll_err(CLL_ERR_FORMAT, "%s: not a records file (no \"rows\" array)", path);
        return NULL;
    }
    return doc;
}

cll_status cll_bench_records_save(const char *path, json_t *doc) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    /* write then rename: a crash never leaves a half-written records file */
    if (json_dump_file(doc, tmp, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0)
        return cll_err(CLL_ERR_IO, "%s: cannot write", tmp);
    if (rename(tmp, path) != 0) return cll_err(CLL_ERR_IO, "%s: %s", path, strerror(errno));
    return CLL_OK;
}

static const char *sget(json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* the tensor-parallel degree of a row: rows from before the field ran on one device */
static json_int_t row_tp(json_t *o) {
    json_t *t = json_object_get(o, "tp");
    return json_is_integer(t) ? json_integer_value(t) : 1;
}

static bool same_identity(json_t *a, json_t *b) {
    const char *sa = sget(a, "model_sha256"), *sb = sget(b, "model_sha256");
    bool model = (*sa && *sb) ? !strcmp(sa, sb)
                              : !strcmp(cll_bench_basename(sget(a, "model_filename")),
                                        cll_bench_basename(sget(b, "model_filename")));
    return model && !strcmp(sget(a, "engine"), sget(b, "engine")) && !strcmp(sget(a, "backend"), sget(b, "backend")) &&
           !strcmp(sget(a, "test"), sget(b, "test")) && row_tp(a) == row_tp(b);
}

void cll_bench_records_upsert(json_t *doc, json_t *row) {
    json_t *rows = json_object_get(doc, "rows");
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        if (same_identity(r, row)) {
            json_array_set_new(rows, i, row);
            return;
        }
    }
    json_array_append_new(rows, row);
}

cll_status cll_bench_import_ref(const char *jsonl, const char *records_file, const char *box, double bw,
                                const char *note, const char *model, int *n_out) {
    *n_out = 0;
    FILE *f = fopen(jsonl, "r");
    if (!f) return cll_err(CLL_ERR_IO, "%s: %s", jsonl, strerror(errno));
    json_t *doc = cll_bench_records_load(records_file, box);
    if (!doc) {
        fclose(f);
        return CLL_ERR_FORMAT;
    }
    if (bw > 0) json_object_set_new(doc, "bandwidth_GBps", json_real(bw));
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0;
    cll_status st = CLL_OK;
    while (getline(&line, &cap, f) > 0) {
        lineno++;
        if (line[strspn(line, " \t\r\n")] == 0) continue;
        json_error_t e;
        json_t *in = json_loads(line, 0, &e);
        const bool batched = in && json_is_object(in) && json_is_number(json_object_get(in, "speed_tg")) &&
                             json_is_integer(json_object_get(in, "pl"));
        if (!in || !json_is_object(in) || (!batched && !json_is_number(json_object_get(in, "avg_ts")))) {
            json_decref(in);
            st = cll_err(CLL_ERR_FORMAT, "%s:%d: not a llama-bench or llama-batched-bench JSON row", jsonl, lineno);
            break;
        }
        if (batched && !(model && *model) && !json_object_get(in, "model_filename")) {
            json_decref(in);
            st = cll_err(CLL_ERR_FORMAT, "%s:%d: llama-batched-bench rows name no model: pass --model FILE (the file "
                                         "they ran on)", jsonl, lineno);
            break;
        }
        json_t *row = json_deep_copy(in);
        json_decref(in);
        const char *eng = sget(row, "engine");
        if (!*eng) json_object_set_new(row, "engine", json_string("llama.cpp"));
        const char *backends = sget(row, "backends");
        bool cuda = strstr(backends, "CUDA") || json_integer_value(json_object_get(row, "n_gpu_layers")) > 0;
        if (!json_object_get(row, "backend")) json_object_set_new(row, "backend", json_string(cuda ? "cuda" : "cpu"));
        char tn[64];
        if (batched) { /* one record per (pp, tg, pl) cell, named as cllama's batched rows */
            if (model && *model) json_object_set_new(row, "model_filename", json_string(cll_bench_basename(model)));
            snprintf(tn, sizeof tn, "batched-pp%lld-tg%lld-pl%lld", (long long)json_integer_value(json_object_get(row, "pp")),
                     (long long)json_integer_value(json_object_get(row, "tg")),
                     (long long)json_integer_value(json_object_get(row, "pl")));
        } else
            cll_bench_test_name_d(json_integer_value(json_object_get(row, "n_prompt")),
                                  json_integer_value(json_object_get(row, "n_gen")),
                                  json_integer_value(json_object_get(row, "n_depth")), tn, sizeof tn);
        json_object_set_new(row, "test", json_string(tn));
        json_object_set_new(row, "box", json_string(box));
        json_object_set_new(row, "pinned", json_true());
        if (batched) json_object_set_new(row, "noise", json_string("single run"));
        else if (!json_object_get(row, "noise")) {
            double m = json_number_value(json_object_get(row, "avg_ts"));
            double sd = json_number_value(json_object_get(row, "stddev_ts"));
            json_object_set_new(row, "cv", json_real(m > 0 ? sd / m : 0));
            /* reference rows are taken as measured: the noise is shown, not re-run */
            json_object_set_new(row, "noise", json_string(m > 0 && sd / m > 0.03 ? "noisy" : "ok"));
        }
        if (!json_object_get(row, "parity")) json_object_set_new(row, "parity", json_string("reference"));
        json_t *prov = json_object_get(row, "provenance");
        if (!prov) {
            prov = json_object();
            json_object_set_new(row, "provenance", prov);
        }
        json_object_set_new(prov, "imported_from", json_string(cll_bench_basename(jsonl)));
        if (note && *note) json_object_set_new(prov, "note", json_string(note));
        cll_bench_records_upsert(doc, row);
        (*n_out)++;
    }
    free(line);
    fclose(f);
    if (st == CLL_OK) st = cll_bench_records_save(records_file, doc);
    json_decref(doc);
    return st;
}
