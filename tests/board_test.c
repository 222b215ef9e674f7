/* board_test: the board renders the fixture records (tests/fixtures/board) into BOARD.md and
 * board.html with the right cells, ratios (computed at render time), rooflines and markers;
 * import-ref pins llama-bench rows and replaces them on re-import. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/board.h"
#include "testutil.h"

static char g_tmp[256];

static const char *src_dir(void) {
    const char *s = getenv("CLLAMA_SRC");
    return s && *s ? s : CLLAMA_SOURCE_DIR;
}

static void render(const char *recdir, char **md, char **html) {
    char mdp[512], htp[512];
    snprintf(mdp, sizeof mdp, "%s/BOARD.md", g_tmp);
    snprintf(htp, sizeof htp, "%s/board.html", g_tmp);
    assert_int_equal(cll_bench_board_render(recdir, mdp, htp), CLL_OK);
    *md = tu_read_file(mdp, NULL);
    *html = tu_read_file(htp, NULL);
    assert_non_null(*md);
    assert_non_null(*html);
}

static void test_md_cells(void **state) {
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/board", src_dir());
    char *md, *html;
    render(dir, &md, &html);
    /* means ± sd, ratio = cllama / llama.cpp, roofline = t/s x bytes / bandwidth */
    /* ·u marks a cllama cell that ran untuned (no tune_sha256); the pp512 row carries one */
    assert_non_null(strstr(md, "| l32-1b-Q4_0 | 1.00 | 100.0 ± 2.0 | 50.00 ± 1.00 | 2.00× | 30.00 ± 0.30 ·u | "
                               "40.00 ± 0.40 | 0.75× | 30% / 40% |"));
    /* matched by sha256 across names, shown under the cllama file name */
    assert_non_null(strstr(md, "| mine-Q8_0 | 2.00 | — | — | — | 12.00 ± 0.10 ·u | 10.00 ± 0.10 | 1.20× | 24% / 20% |"));
    assert_null(strstr(md, "theirs-Q8_0"));
    assert_non_null(strstr(md, "20.00 ± 2.00 ·u ⚠noisy"));
    assert_non_null(strstr(md, "80.00 ± 0.50 ·u ✗parity"));
    assert_non_null(strstr(md, "n/a (MoE) / n/a (MoE)"));
    /* second box, other backend, no bandwidth known */
    assert_non_null(strstr(md, "## gpubox — cuda"));
    assert_non_null(strstr(md, "| l2-7b-Q4_0 | 3.80 | 400.0 ± 4.0 ·u | 357.6 ± 4.4 | 1.12× | n/a / n/a |"));
    free(md);
    free(html);
}

static void test_html(void **state) {
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/board", src_dir());
    char *md, *html;
    render(dir, &md, &html);
    assert_non_null(strstr(html, "<!DOCTYPE html>"));
    assert_non_null(strstr(html, "<svg"));
    assert_non_null(strstr(html, "class=\"win\">2.00×"));
    assert_non_null(strstr(html, "class=\"loss\">0.75×"));
    assert_non_null(strstr(html, "<td>30% / 40%</td>"));
    assert_non_null(strstr(html, "⚠noisy"));
    /* self-contained: no scripts, no fetched assets */
    assert_null(strstr(html, "<script"));
    assert_null(strstr(html, "src=\""));
    assert_null(strstr(html, "href=\"http"));
    assert_null(strstr(html, "@import"));
    /* bars share a scale: the 100 t/s bar is twice the 50 t/s one (420 px full width) */
    assert_non_null(strstr(html, "width=\"420\" height=\"14\" class=\"ours\""));
    assert_non_null(strstr(html, "width=\"210\" height=\"14\" class=\"ref\""));
    free(md);
    free(html);
}

/* control: the same check fails on a changed reference (the bar can fail) */
static void test_poisoned_reference(void **state) {
    (void)state;
    char dir[512], path[600], cmd[600];
    snprintf(dir, sizeof dir, "%s/poison", g_tmp);
    snprintf(path, sizeof path, "%s/tests/fixtures/board/fixbox.json", src_dir());
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", g_tmp);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/poison'", g_tmp);
    assert_int_equal(system(cmd), 0);
    json_t *doc = cll_bench_records_load(path, "fixbox");
    assert_non_null(doc);
    json_t *rows = json_object_get(doc, "rows"), *r;
    size_t i;
    json_array_foreach(rows, i, r) if (!strcmp(json_string_value(json_object_get(r, "engine")), "llama.cpp") &&
                                       !strcmp(json_string_value(json_object_get(r, "test")), "pp512"))
        json_object_set_new(r, "avg_ts", json_real(25.0));
    char out[600];
    snprintf(out, sizeof out, "%s/fixbox.json", dir);
    assert_int_equal(cll_bench_records_save(out, doc), CLL_OK);
    json_decref(doc);
    char *md, *html;
    render(dir, &md, &html);
    assert_null(strstr(md, "| 50.00 ± 1.00 | 2.00× |"));
    assert_non_null(strstr(md, "| 25.00 ± 1.00 | 4.00× |"));
    free(md);
    free(html);
}

/* a decode test at depth: its roofline counts the K/V cache the token reads (the cllama row's
 * decode_kv_bytes, for both engines' cells); a cell without that figure is n/a, never the
 * weights-only fraction */
static json_t *depth_row(const char *engine, const char *file, double ts, double kv) {
    json_t *r = json_object();
    json_object_set_new(r, "engine", json_string(engine));
    json_object_set_new(r, "backend", json_string("cuda"));
    json_object_set_new(r, "test", json_string("tg128 @ d8192"));
    json_object_set_new(r, "model_filename", json_string(file));
    json_object_set_new(r, "model_sha256", json_string(""));
    json_object_set_new(r, "model_type", json_string("llama 7B Q4_0"));
    json_object_set_new(r, "model_size", json_integer(4000000000LL));
    json_object_set_new(r, "n_prompt", json_integer(0));
    json_object_set_new(r, "n_gen", json_integer(128));
    json_object_set_new(r, "n_depth", json_integer(8192));
    json_object_set_new(r, "avg_ts", json_real(ts));
    json_object_set_new(r, "stddev_ts", json_real(1.0));
    json_object_set_new(r, "noise", json_string("ok"));
    json_object_set_new(r, "parity", json_string("pass"));
    if (kv > 0) json_object_set_new(r, "decode_kv_bytes", json_integer((json_int_t)kv));
    return r;
}

/* rows (taken) as the records of box NAME (bandwidth 4000 GB/s) in a directory of their own, rendered */
static void render_box(const char *name, json_t *rows, char **md, char **html) {
    char dir[512], cmd[600], out[600];
    snprintf(dir, sizeof dir, "%s/%s", g_tmp, name);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    assert_int_equal(system(cmd), 0);
    json_t *doc = json_object();
    json_object_set_new(doc, "box", json_string(name));
    json_object_set_new(doc, "bandwidth_GBps", json_real(4000.0));
    json_object_set_new(doc, "rows", rows);
    snprintf(out, sizeof out, "%s/%s.json", dir, name);
    assert_int_equal(cll_bench_records_save(out, doc), CLL_OK);
    json_decref(doc);
    render(dir, md, html);
}

static void test_depth_roofline(void **state) {
    (void)state;
    json_t *rows = json_array();
    json_array_append_new(rows, depth_row("cllama", "d-Q4_0.gguf", 300.0, 4e9));
    json_array_append_new(rows, depth_row("llama.cpp", "d-Q4_0.gguf", 250.0, 0));
    json_array_append_new(rows, depth_row("cllama", "e-Q4_0.gguf", 300.0, 0)); /* no K/V figure */
    json_array_append_new(rows, depth_row("llama.cpp", "e-Q4_0.gguf", 250.0, 0));
    char *md, *html;
    render_box("deep", rows, &md, &html);
    /* 300 t/s x (4 GB weights + 4 GB K/V) / 4000 GB/s = 60%; llama.cpp 250 t/s: 50% (weights only: 30% / 25%) */
    assert_non_null(strstr(md, "| d-Q4_0 | 4.00 | 300.0 ± 1.0 ·u | 250.0 ± 1.0 | 1.20× | 60% / 50% |"));
    assert_non_null(strstr(md, "| e-Q4_0 | 4.00 | 300.0 ± 1.0 ·u | 250.0 ± 1.0 | 1.20× | n/a / n/a |"));
    assert_null(strstr(md, "30% / 25%"));
    free(md);
    free(html);
}

/* the weight bytes of a decode roofline are the bytes a token reads (the cllama row's
 * decode_weight_bytes, for both engines' cells), not the file's size, which counts the whole
 * embedding table; a cell whose cllama row lacks the figure falls back to the file size */
static void test_weight_bytes_roofline(void **state) {
    (void)state;
    json_t *rows = json_array();
    const char *files[2] = {"w-Q4_0.gguf", "x-Q4_0.gguf"};
    for (int i = 0; i < 2; i++) {
        json_t *c = depth_row("cllama", files[i], 500.0, 0), *r = depth_row("llama.cpp", files[i], 250.0, 0);
        json_object_set_new(c, "test", json_string("tg128"));
        json_object_set_new(r, "test", json_string("tg128"));
        json_object_set_new(c, "n_depth", json_integer(0));
        json_object_set_new(r, "n_depth", json_integer(0));
        if (i == 0) json_object_set_new(c, "decode_weight_bytes", json_integer(3200000000LL));
        json_array_append_new(rows, c);
        json_array_append_new(rows, r);
    }
    char *md, *html;
    render_box("wbytes", rows, &md, &html);
    /* 500 t/s x 3.2 GB / 4000 GB/s = 40%, llama.cpp 250 t/s: 20%; the file's 4 GB would say 50% / 25% */
    assert_non_null(strstr(md, "| w-Q4_0 | 4.00 | 500.0 ± 1.0 ·u | 250.0 ± 1.0 | 2.00× | 40% / 20% |"));
    assert_non_null(strstr(md, "| x-Q4_0 | 4.00 | 500.0 ± 1.0 ·u | 250.0 ± 1.0 | 2.00× | 50% / 25% |"));
    assert_non_null(strstr(html, "<td>40% / 20%</td>"));
    free(md);
    free(html);
}

static void test_import_ref(void **state) {
    (void)state;
    char rec[512];
    snprintf(rec, sizeof rec, "%s/import/h200.json", g_tmp);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/import'", g_tmp);
    assert_int_equal(system(cmd), 0);
    const char *jl = tu_shared("anchors/h200/bench-l2-7b-Q4_0.jsonl");
    int n = 0;
    assert_int_equal(cll_bench_import_ref(jl, rec, "h200", 4293.0, "anchor", NULL, &n), CLL_OK);
    assert_int_equal(n, 2);
    assert_int_equal(cll_bench_import_ref(jl, rec, "h200", 0, NULL, NULL, &n), CLL_OK); /* replaces, never duplicates */
    json_t *doc = cll_bench_records_load(rec, "h200");
    assert_non_null(doc);
    json_t *rows = json_object_get(doc, "rows");
    assert_int_equal(json_array_size(rows), 2);
    json_t *r0 = json_array_get(rows, 0), *r1 = json_array_get(rows, 1);
    assert_string_equal(json_string_value(json_object_get(r0, "engine")), "llama.cpp");
    assert_string_equal(json_string_value(json_object_get(r0, "backend")), "cuda");
    assert_string_equal(json_string_value(json_object_get(r0, "test")), "pp512");
    assert_string_equal(json_string_value(json_object_get(r1, "test")), "tg128");
    assert_true(json_is_true(json_object_get(r0, "pinned")));
    assert_float_equal(json_number_value(json_object_get(r1, "avg_ts")), 357.578739, 1e-6);
    assert_float_equal(json_number_value(json_object_get(doc, "bandwidth_GBps")), 4293.0, 1e-9);
    /* a cllama row of the same file: the board pairs them by file name */
    json_t *mine = json_deep_copy(r1);
    json_object_set_new(mine, "engine", json_string("cllama"));
    json_object_set_new(mine, "avg_ts", json_real(715.157478));
    cll_bench_records_upsert(doc, mine);
    assert_int_equal(json_array_size(rows), 3);
    /* the same cell over two GPUs (tp 2) is a row of its own, not a replacement, and a table of its own */
    json_t *split = json_deep_copy(mine);
    json_object_set_new(split, "tp", json_integer(2));
    json_object_set_new(split, "avg_ts", json_real(1111.5));
    cll_bench_records_upsert(doc, split);
    assert_int_equal(json_array_size(rows), 4);
    json_t *split2 = json_deep_copy(split);
    json_object_set_new(split2, "avg_ts", json_real(1212.5));
    cll_bench_records_upsert(doc, split2); /* replaces the tp 2 row only */
    assert_int_equal(json_array_size(rows), 4);
    assert_float_equal(json_number_value(json_object_get(json_array_get(rows, 2), "avg_ts")), 715.157478, 1e-6);
    assert_int_equal(cll_bench_records_save(rec, doc), CLL_OK);
    json_decref(doc);
    char dir[512], *md, *html;
    snprintf(dir, sizeof dir, "%s/import", g_tmp);
    render(dir, &md, &html);
    assert_non_null(strstr(md, "| 715.2 ± 4.4 ·u | 357.6 ± 4.4 | 2.00× |"));
    const char *tp2 = strstr(md, "— cuda, tp 2");
    assert_non_null(tp2);
    assert_non_null(strstr(tp2, "| 1212 ± 4 ·u | — | — | 54% / — |")); /* the roofline of both devices' bandwidth */
    assert_non_null(strstr(tp2, "8586 GB/s, the devices together"));
    assert_null(strstr(md, "1111"));
    const char *one = strstr(md, "— cuda\n");
    assert_non_null(one);
    assert_true(one < tp2);
    assert_null(strstr(tp2, "715.2")); /* the one-device value stays in its table */
    /* 715.16 t/s x 3.825 GB / 4293 GB/s = 64% of the roofline */
    assert_non_null(strstr(md, "| 64% / 32% |"));
    free(md);
    free(html);
}

/* llama-batched-bench JSONL rows: refused without --model, imported one record per (pp, tg, pl) cell,
 * paired with cllama's batched rows in their own table, and kept out of the pp/tg tables */
static void test_import_batched(void **state) {
    (void)state;
    char dir[512], jl[600], rec[600];
    snprintf(dir, sizeof dir, "%s/batched", g_tmp);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    assert_int_equal(system(cmd), 0);
    snprintf(jl, sizeof jl, "%s/bb.jsonl", g_tmp);
    snprintf(rec, sizeof rec, "%s/h200.json", dir);
    FILE *f = fopen(jl, "w");
    assert_non_null(f);
    fputs("{\"n_kv_max\": 20480, \"n_batch\": 2048, \"n_ubatch\": 512, \"flash_attn\": 1, \"is_pp_shared\": 0, "
          "\"n_gpu_layers\": 99, \"n_threads\": 16, \"n_threads_batch\": 16, \"pp\": 128, \"tg\": 128, \"pl\": 1, "
          "\"n_kv\": 256, \"t_pp\": 0.038, \"speed_pp\": 3352.0, \"t_tg\": 0.45, \"speed_tg\": 284.0, \"t\": 0.488, "
          "\"speed\": 524.6}\n",
          f);
    fputs("{\"n_kv_max\": 20480, \"n_batch\": 2048, \"n_ubatch\": 512, \"flash_attn\": 1, \"is_pp_shared\": 0, "
          "\"n_gpu_layers\": 99, \"n_threads\": 16, \"n_threads_batch\": 16, \"pp\": 128, \"tg\": 128, \"pl\": 64, "
          "\"n_kv\": 16384, \"t_pp\": 0.79, \"speed_pp\": 10331.0, \"t_tg\": 1.77, \"speed_tg\": 4640.0, \"t\": 2.56, "
          "\"speed\": 6400.0}\n",
          f);
    fclose(f);
    int n = 0;
    assert_int_equal(cll_bench_import_ref(jl, rec, "h200", 0, NULL, NULL, &n), CLL_ERR_FORMAT);
    assert_non_null(strstr(cll_last_error(), "--model"));
    assert_int_equal(cll_bench_import_ref(jl, rec, "h200", 0, "anchor", "/x/l2-7b-Q4_K_M.gguf", &n), CLL_OK);
    assert_int_equal(n, 2);
    assert_int_equal(cll_bench_import_ref(jl, rec, "h200", 0, "anchor", "/x/l2-7b-Q4_K_M.gguf", &n), CLL_OK);
    json_t *doc = cll_bench_records_load(rec, "h200");
    json_t *rows = json_object_get(doc, "rows");
    assert_int_equal(json_array_size(rows), 2); /* replaced, not duplicated */
    json_t *r1 = json_array_get(rows, 1);
    assert_string_equal(json_string_value(json_object_get(r1, "test")), "batched-pp128-tg128-pl64");
    assert_string_equal(json_string_value(json_object_get(r1, "model_filename")), "l2-7b-Q4_K_M.gguf");
    assert_string_equal(json_string_value(json_object_get(r1, "engine")), "llama.cpp");
    assert_string_equal(json_string_value(json_object_get(r1, "backend")), "cuda");
    json_t *mine = json_deep_copy(r1);
    json_object_set_new(mine, "engine", json_string("cllama"));
    json_object_set_new(mine, "speed_tg", json_real(9280.0));
    json_object_set_new(mine, "speed_pp", json_real(20662.0));
    cll_bench_records_upsert(doc, mine);
    assert_int_equal(cll_bench_records_save(rec, doc), CLL_OK);
    json_decref(doc);
    char *md, *html;
    render(dir, &md, &html);
    assert_non_null(strstr(md, "h200 — cuda, batched"));
    assert_non_null(strstr(md, "| l2-7b-Q4_K_M.gguf | 128 | 128 | 64 | 9280 | 4640 | 2.00× | 20662 | 10331 | 2.00× |"));
    assert_non_null(strstr(md, "| l2-7b-Q4_K_M.gguf | 128 | 128 | 1 | — | 284.0 | — |"));
    assert_null(strstr(md, "pp512")); /* no pp/tg table made of batched rows */
    assert_non_null(strstr(html, "<td>9280</td><td>4640</td><td>2.00×</td>"));
    free(md);
    free(html);
}

static void test_bad_input(void **state) {
    (void)state;
    char p[512];
    snprintf(p, sizeof p, "%s/bad.jsonl", g_tmp);
    FILE *f = fopen(p, "w");
    fputs("{\"not\": \"a bench row\"}\n", f);
    fclose(f);
    char rec[600];
    snprintf(rec, sizeof rec, "%s/bad.json", g_tmp);
    int n;
    assert_int_equal(cll_bench_import_ref(p, rec, "x", 0, NULL, NULL, &n), CLL_ERR_FORMAT);
    assert_non_null(strstr(cll_last_error(), "bad.jsonl:1"));
    f = fopen(rec, "w");
    fputs("[1,2]", f);
    fclose(f);
    assert_null(cll_bench_records_load(rec, "x"));
}

int main(void) {
    snprintf(g_tmp, sizeof g_tmp, "/tmp/board_test.XXXXXX");
    if (!mkdtemp(g_tmp)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_md_cells),   cmocka_unit_test(test_html),    cmocka_unit_test(test_poisoned_reference),
        cmocka_unit_test(test_import_ref), cmocka_unit_test(test_bad_input),  cmocka_unit_test(test_import_batched),
        cmocka_unit_test(test_depth_roofline), cmocka_unit_test(test_weight_bytes_roofline),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_tmp);
    return rc;
}
