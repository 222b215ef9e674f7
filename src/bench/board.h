/* bench/board: benchmark records (bench/records/<box>.json: {"box", "bandwidth_GBps",
 * "rows": [...]}) and the board (BOARD.md + a self-contained board.html) rendered from them.
 * Owns the records file format; a row is identified by model sha256 (else file name) + box
 * + engine + backend + test. Rule: ratios are computed here at render time, never stored. */
#ifndef CLL_BENCH_BOARD_H
#define CLL_BENCH_BOARD_H

#include <jansson.h>

#include "bench/bench.h"

/* records file of a box: loads it, or returns a fresh {"box": box, "rows": []} when absent.
 * NULL (with last error) when the file exists but is not a records file. */
json_t *cll_bench_records_load(const char *path, const char *box);
cll_status cll_bench_records_save(const char *path, json_t *doc);
/* insert row (reference stolen), replacing the row with the same identity */
void cll_bench_records_upsert(json_t *doc, json_t *row);
/* "<dir>/<box>.json" */
void cll_bench_records_path(const char *dir, const char *box, char *buf, size_t cap);
/* the default records dir: $CLLAMA_RECORDS, else <source dir>/bench/records */
void cll_bench_records_dir(char *buf, size_t cap);

/* "pp512" / "tg128" / "pp512+tg128" from a row's n_prompt / n_gen; with a depth (llama-bench's
 * -d, the cache filled with n_depth tokens first) llama-bench's " @ d8192" follows */
void cll_bench_test_name(json_int_t n_prompt, json_int_t n_gen, char *buf, size_t cap);
void cll_bench_test_name_d(json_int_t n_prompt, json_int_t n_gen, json_int_t n_depth, char *buf, size_t cap);
/* basename of a path (pointer into it) */
const char *cll_bench_basename(const char *path);

/* Import llama-bench JSONL rows as pinned reference rows (engine "llama.cpp") into the
 * records file of box. bandwidth_GBps > 0 sets the box's read bandwidth (for rooflines);
 * note (or NULL) is stored in each row's provenance (e.g. how the reference was built).
 * llama-batched-bench JSONL rows (pl, speed_tg, ...) name no model: model (the file they ran
 * on, or NULL for llama-bench rows) becomes their model_filename, and each (pp, tg, pl) cell
 * its own record "batched-pp<pp>-tg<tg>-pl<pl>". */
cll_status cll_bench_import_ref(const char *jsonl, const char *records_file, const char *box,
                                double bandwidth_GBps, const char *note, const char *model, int *n_imported);

/* Render every records file of dir into md_path and html_path (either may be NULL). */
cll_status cll_bench_board_render(const char *dir, const char *md_path, const char *html_path);

#endif
