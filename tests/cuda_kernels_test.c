/* cuda_kernels_test: every row of the CUDA kernel table through the one gate (cuda/gate.h):
 * fresh random weights of the row's type, NaN-poisoned strided outputs, every output against
 * the CPU reference, a poison control per shape. GEMV: rows that are not a multiple of the 4
 * warps of a block (13, 4097, 37), cols of 1-3 blocks and big cols (4096, 11008, 14336),
 * nb = 1, 3 (MoE: 4 experts, router ids on the device, one shared input) and 8 (tokens);
 * float rows also ragged cols (37, 1003: the per-element tail). GEMM: n = 1, 7, 100, 513
 * tokens, the panel cut into slabs. MOE (grouped expert prefill): 1, 7, 100 tokens over 9 experts,
 * one expert past a 64-slot tile, one empty, cols with a half K step. get_rows of every served type (bit-exact), the q8_1
 * activation quantizer (byte-exact), the device codebooks (bit-identical with the C tables).
 * The device decoders also run on the host (same source) against the C reference, so a build box
 * without a GPU still checks every format's decoding. SKIPs (exit 77, a visible line) without the
 * CUDA driver; without a GPU only the host part runs (a visible SKIP line for the rest). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "cuda/cuda.h"
#include "cuda/gate.h"
#include "cuda/pick.h"
#include "formats/formats.h"
#include "kernels/registry.h"

#ifdef CLLAMA_HAVE_CUDA
static int g_fail;

static void report(const cll_cuda_gate_report *r, cll_status st) {
    printf("%-28s %-9s %6lldx%-6lld nb=%-3d mats=%lld  max_err %.2e bar %.0e  bad %lld unwritten %lld clobbered %lld  "
           "control %s  %s%s%s%s%s%s\n",
           r->row, st == CLL_OK ? "PASS" : "FAIL", (long long)r->rows, (long long)r->cols, r->nb, (long long)r->n_mat,
           r->max_err, r->tol, (long long)r->n_bad, (long long)r->n_unwritten, (long long)r->n_clobbered,
           r->control_failed ? "failed(ok)" : "PASSED(bad)", r->ref,
           !r->tail_checked ? "" : r->tail_ok ? "  +resid tail ok" : "  +resid tail FAILED",
           r->tail_poll == 1 ? "  +poll ok" : r->tail_poll == 2 ? "  +poll refused" : "",
           r->act_out_checked ? "  +act_out ok" : "",
           !r->exact_checked ? "" : r->n_exact_diff ? "  +bits DIFFER from " : "  +same bits as ", r->exact_checked ? r->exact_ref : "");
    if (st != CLL_OK) {
        printf("    -> %s\n", cll_last_error());
        g_fail++;
    }
}

static const cll_kernel_table *table(void) {
    const cll_kernel_table *t = cll_cuda_kernel_table();
    assert_non_null(t);
    assert_string_equal(t->backend, "cuda");
    return t;
}

static void test_tables_and_quantize(void **state) {
    (void)state;
    g_fail = 0;
    assert_int_equal(cll_cuda_gate_tables(), CLL_OK);
    cll_cuda_gate_report r;
    report(&r, cll_cuda_gate_quantize(5, 4096 + 32, 1, &r));
    report(&r, cll_cuda_gate_quantize(3, 32, 2, &r));
    /* the activation's rows-at-once form against its one-row form: a 7B's and an 8B's ff, a small gelu row,
     * a width of no whole q8_1 blocks (100: no f16 rows) */
    report(&r, cll_cuda_gate_act(3, 11008, false, 1, &r));
    report(&r, cll_cuda_gate_act(4, 14336, true, 2, &r));
    report(&r, cll_cuda_gate_act(5, 256, true, 3, &r));
    report(&r, cll_cuda_gate_act(2, 100, false, 4, &r));
    /* the one-GPU tensor-parallel split's all-reduce: 2 ranks of a 7B row, 3 of a ragged count, 4 of one
     * 70B prefill step's worth of rows */
    report(&r, cll_cuda_gate_comm_local(2, 4096, 1, &r));
    report(&r, cll_cuda_gate_comm_local(3, 1001, 2, &r));
    report(&r, cll_cuda_gate_comm_local(4, 64 * 8192, 3, &r));
    assert_int_equal(g_fail, 0);
}

static void test_gemv_rows(void **state) {
    (void)state;
    g_fail = 0;
    const cll_kernel_table *t = table();
    int n_rows = 0;
    /* CLL_GATE_ONLY=part[,part..]: only the gemv rows whose names hold one of them (a device run
     * that re-gates new rows; the row count is then not checked) */
    const char *only = getenv("CLL_GATE_ONLY");
    for (size_t i = 0; i < t->n; i++) {
        const cll_kernel_row *row = &t->rows[i];
        if (!(row->op & CLL_KOP_GEMV)) continue;
        n_rows++;
        if (only && *only) {
            bool hit = false;
            for (const char *p = only; *p && !hit;) {
                const size_t len = strcspn(p, ",");
                char part[64];
                snprintf(part, sizeof part, "%.*s", (int)(len < 63 ? len : 63), p);
                hit = len && strstr(row->name, part);
                p += len + (p[len] == ',');
            }
            if (!hit) continue;
        }
        const int64_t qk = cll_type_traits_get(row->wtype)->blck;
        const int64_t u = qk > 1 ? qk : 32; /* one "block" of the shape grid */
        const struct { int64_t rows, cols; int nb; } shapes[] = {
            {13, u, 1}, {4097, 2 * u, 1}, {64, 3 * u, 3}, {37, 3 * u, 8}, {4096, 4096, 1}, {256, 11008, 1}, {33, 14336, 1},
            {7, 14336, 3}, {37, 37, 1}, {4097, 1003, 8},
            /* the polled residual tail's other replays of the norm kernel: 512 threads of one float4, and 384
             * of two (4096 above: 512 of two; 256: 64 of one) */
            {2048, 2 * u, 1}, {3072, u, 1},
        };
        /* the few-token rows (nb tokens of one matrix) at the token counts they serve; the rows of
         * the smem bound depend on cols and nb only, so few rows each (the IQ3_S weights of a big
         * shape take minutes to quantize on the host) */
        const struct { int64_t rows, cols; int nb; } few_shapes[] = {
            {200, 4096, 2}, {67, 11008, 5}, {40, 14336, 8},
            {64, 4096, 8},  /* dp4a few rows: 8 x 4096 of records is 48 KB, past the default smem limit with red[] */
            {100, 4096, 17}, {48, 11008, 33}, {16, 14336, 64}, /* more than 8 tokens: balanced launches */
            {1003, 768, 3}, /* ragged rows, one chunk per warp short */
            /* the mma tile (9..64 tokens): ragged last row tile and split-K over blocks (300 x 4096: 3 tiles x
             * 5 splits), 2 splits, an unsplit K of 4 chunks with one token in its second tile, a ragged tile */
            {300, 4096, 64}, {1000, 2048, 40}, {129, 1024, 9}, {256, 3072, 23},
            {512, 512, 8}, {256, 256, 2}, {128, 512, 5}, {1024, 256, 4}, /* the tiny golden files' shapes */
        };
        const bool few = strstr(row->name, "_few") || strstr(row->name, "_mma");
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            if (shapes[s].cols % qk) continue; /* ragged cols: float rows only */
            cll_cuda_gate_report r;
            report(&r, cll_cuda_gate_row(row, shapes[s].rows, shapes[s].cols, shapes[s].nb, 100 + s, &r));
        }
        for (size_t s = 0; few && s < sizeof few_shapes / sizeof few_shapes[0]; s++) {
            if (few_shapes[s].cols % qk) continue;
            cll_cuda_gate_report r;
            report(&r, cll_cuda_gate_row(row, few_shapes[s].rows, few_shapes[s].cols, few_shapes[s].nb, 150 + s, &r));
        }
    }
    /* 20 layout-0 rows + 13 x 6 split rows (w4u4, r2, r4, r4_pt, tma, few) + 4 mma + 13 variants
     * (w4u2, w4u2b8, w4u1b8, w4u4b6 of IQ4_XS; r4b6_pt of Q4_0, Q5_1, IQ3_S; r2u1b7_pt of the r4_pt
     * types and Q6_K) + 13 w4r2u2 + 13 w4r2u1b7 + 13 w4r2pre + 13 w4r2pre1w + 13 w4r2ks4 (every split type) */
    assert_int_equal(n_rows, 180);
    if (only && *only) printf("CLL_GATE_ONLY=%s: only those gemv rows were gated\n", only);
    assert_int_equal(g_fail, 0);
}

/* two one-token products in one launch (cll_cu_gemv_pair): the q|k|v products of llama.cpp's mixes (a 7B's
 * Q4_K q|k with a Q6_K v, an 8B's with its GQA v, IQ3_S q|k with a Q4_K v, Q5_K_M's), ragged rows and a short
 * row, each bit for bit against the two rows launched apart; then pairs the form must decline (a type pair it
 * has no kernel for, rows too long to be whole in flight), with nothing written */
static void test_gemv_pair(void **state) {
    (void)state;
    g_fail = 0;
    cll_cuda_gate_report r;
    report(&r, cll_cuda_gate_gemv_pair(CLL_TYPE_Q4_K, CLL_TYPE_Q6_K, 8192, 4096, 4096, true, 1, &r));
    report(&r, cll_cuda_gate_gemv_pair(CLL_TYPE_Q4_K, CLL_TYPE_Q6_K, 5120, 1024, 4096, true, 2, &r));
    report(&r, cll_cuda_gate_gemv_pair(CLL_TYPE_IQ3_S, CLL_TYPE_Q4_K, 5120, 1024, 4096, true, 3, &r));
    report(&r, cll_cuda_gate_gemv_pair(CLL_TYPE_Q5_K, CLL_TYPE_Q6_K, 1001, 37, 2048, true, 4, &r));
    report(&r, cll_cuda_gate_gemv_pair(CLL_TYPE_Q4_K, CLL_TYPE_Q5_K, 13, 4097, 256, true, 5, &r));
    report(&r, cll_cuda_gate_gemv_pair(CLL_TYPE_Q4_0, CLL_TYPE_Q4_K, 4096, 1024, 4096, false, 6, &r));
    report(&r, cll_cuda_gate_gemv_pair(CLL_TYPE_Q4_K, CLL_TYPE_Q6_K, 4096, 1024, 11008, false, 7, &r));
    assert_int_equal(g_fail, 0);
}

/* the gate checks a bit-exact claim against the type's default row: a row that sums in another
 * order (r4_pt, r4's split-K 2 at 4096 x 4096, against Q8_0's default w4r2pre1w: w4u4's sums) made
 * to claim it must fail, and the same row without the claim passes; every true claim passed in
 * test_gemv_rows */
static void test_false_bit_exact_claim(void **state) {
    (void)state;
    const cll_kernel_table *t = table();
    const cll_kernel_row *r = cll_kernels_find(t, "gemv_q8_0_split_r4_smx_ks_pt");
    assert_non_null(r);
    assert_false(r->bit_exact);
    cll_cuda_gate_report rep;
    assert_int_equal(cll_cuda_gate_row(r, 4096, 4096, 1, 77, &rep), CLL_OK);
    assert_false(rep.exact_checked);
    cll_kernel_row liar = *r;
    liar.bit_exact = true;
    const cll_status st = cll_cuda_gate_row(&liar, 4096, 4096, 1, 77, &rep);
    printf("false claim: %s, %lld of %lld outputs differ from %s (control %s)\n", st == CLL_OK ? "PASSED (bad)" : "failed (ok)",
           (long long)rep.n_exact_diff, (long long)rep.n_out, rep.exact_ref, rep.exact_control_failed ? "ok" : "BAD");
    assert_int_not_equal(st, CLL_OK);
    assert_true(rep.exact_checked);
    assert_true(rep.exact_control_failed);
    assert_true(rep.n_exact_diff > 0);
    assert_string_equal(rep.exact_ref, "gemv_q8_0_split_w4r2pre1w_dp4a");
    /* a true claim at the same shape: w4u4, the default's sums launched one row a warp */
    const cll_kernel_row *u2 = cll_kernels_find(t, "gemv_q8_0_split_w4u4_dp4a");
    assert_non_null(u2);
    assert_true(u2->bit_exact);
    assert_int_equal(cll_cuda_gate_row(u2, 4096, 4096, 1, 77, &rep), CLL_OK);
    assert_true(rep.exact_checked);
    assert_int_equal(rep.n_exact_diff, 0);
}

static void test_gemm_rows(void **state) {
    (void)state;
    g_fail = 0;
    const cll_kernel_table *t = table();
    int n_rows = 0;
    for (size_t i = 0; i < t->n; i++) {
        const cll_kernel_row *row = &t->rows[i];
        if (!(row->op & CLL_KOP_GEMM)) continue;
        n_rows++;
        const struct { int64_t rows, cols; int n; } shapes[] = {{300, 512, 1}, {300, 512, 7}, {129, 768, 100}, {130, 256, 513}};
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            cll_cuda_gate_report r;
            report(&r, cll_cuda_gate_row(row, shapes[s].rows, shapes[s].cols, shapes[s].n, 200 + s, &r));
        }
        /* the fused rows at the batched-decode counts: split-K over blocks (300 x 4096: 3 row tiles x 5
         * splits), a ragged last row tile, one token in a tile, two balanced launches of a split product;
         * the one-tile kernel (<= 8 tokens): 2 tokens split over blocks, 5 over ragged rows and 3 chunks, 8;
         * a full 32-token launch (the batched step's largest fused count) */
        const struct { int64_t rows, cols; int n; } fused_shapes[] = {
            {300, 4096, 64}, {1000, 2048, 40}, {129, 1024, 9}, {256, 3072, 23}, {4100, 512, 16}, {200, 2048, 65},
            {520, 4096, 2},  {1003, 768, 5},   {128, 256, 8},   {384, 4096, 32}};
        for (size_t s = 0; strstr(row->name, "_fused") && s < sizeof fused_shapes / sizeof fused_shapes[0]; s++) {
            cll_cuda_gate_report r;
            report(&r, cll_cuda_gate_row(row, fused_shapes[s].rows, fused_shapes[s].cols, fused_shapes[s].n, 250 + s, &r));
        }
    }
    assert_int_equal(n_rows, 24); /* 20 panel / direct rows + 4 fused (Q4_0, Q8_0, Q4_K, Q6_K split) */
    assert_int_equal(g_fail, 0);
}

static void test_moe_rows(void **state) {
    (void)state;
    g_fail = 0;
    const cll_kernel_table *t = table();
    int n_rows = 0;
    for (size_t i = 0; i < t->n; i++) {
        const cll_kernel_row *row = &t->rows[i];
        if (!(row->op & CLL_KOP_MOE)) continue;
        n_rows++;
        const int64_t qk = cll_type_traits_get(row->wtype)->blck;
        const int64_t u = qk > 1 ? qk : 32; /* the rows stage whole 32-element groups (f16: cols % 32) */
        const struct { int64_t rows, cols; int n; } shapes[] = {{130, 3 * u, 100}, {64, 2 * u, 7}, {257, 4 * u, 1}};
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            cll_cuda_gate_report r;
            report(&r, cll_cuda_gate_row(row, shapes[s].rows, shapes[s].cols, shapes[s].n, 400 + s, &r));
        }
    }
    assert_int_equal(n_rows, 31); /* f16 + 17 block types in layout 0 + 13 split */
    assert_int_equal(g_fail, 0);
}

static void test_attn_prefill(void **state) {
    (void)state;
    g_fail = 0;
    /* splits: split-K over the keys (1: none); 4 over a 100-row prompt from 0 leaves the early rows with
     * splits that hold none of their keys; 12 over a 128-token chunk 3968 deep (a server's long prompt),
     * 3 more splits than some blocks have tiles */
    const struct { int hd, n_head, n_kv, n, p0, n_swa, splits; } shapes[] = {
        {128, 32, 8, 100, 0, 0, 1}, {128, 8, 8, 513, 37, 0, 1}, {64, 4, 2, 70, 5, 32, 1}, {64, 2, 1, 2, 300, 0, 1},
        {128, 4, 1, 129, 64, 100, 1}, {128, 32, 8, 100, 0, 0, 4}, {128, 8, 2, 128, 3968, 0, 12}, {64, 4, 2, 70, 5, 32, 3},
        {64, 2, 1, 2, 300, 0, 5}, {128, 4, 1, 129, 64, 100, 3}, {128, 4, 4, 64, 200, 0, 7},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        cll_cuda_gate_report r;
        report(&r, cll_cuda_gate_attn_prefill(shapes[s].hd, shapes[s].n_head, shapes[s].n_kv, shapes[s].n, shapes[s].p0,
                                              shapes[s].n_swa, shapes[s].splits, 500 + s, &r));
    }
    assert_int_equal(g_fail, 0);
}

/* one decode-attention shape through every form: the split kernel at every block width it has (one
 * that does not fit the shape runs another), a batched step of 3 (and 7, up to max_rows) rows in
 * sequences of their own with the fused rope per row, the streaming kernel (one tile to 66 a chunk,
 * the newest cell patched into its tile, partials merged) and its tensor-core body (head dim 256:
 * the CUDA-core body again); seeds seed, +80, +50, +60 */
static void decode_forms(int hd, int n_head, int n_kv, int len, int n_chunks, bool paged, int act, int n_swa, int max_rows,
                         uint64_t seed) {
    const int widths[] = {4, 8, 16};
    cll_cuda_gate_report r;
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
        report(&r, cll_cuda_gate_attn_decode(hd, n_head, n_kv, len, n_chunks, paged, widths[w], act, CLL_CU_ATTN_SPLIT, 1,
                                             n_swa, seed, &r));
    for (int rows = 3; rows <= max_rows && len >= 3 * rows - 2; rows += 4)
        report(&r, cll_cuda_gate_attn_decode(hd, n_head, n_kv, len, n_chunks, paged, 0, act, CLL_CU_ATTN_SPLIT, rows, n_swa,
                                             seed + 80, &r));
    report(&r, cll_cuda_gate_attn_decode(hd, n_head, n_kv, len, n_chunks, paged, 0, act, CLL_CU_ATTN_STREAM, 1, n_swa,
                                         seed + 50, &r));
    report(&r, cll_cuda_gate_attn_decode(hd, n_head, n_kv, len, n_chunks, paged, 0, act, CLL_CU_ATTN_STREAM_TC, 1, n_swa,
                                         seed + 60, &r));
    /* the TMA pipeline (unpaged, head dims 64 / 128; elsewhere it runs the cp.async one): also held to
     * the cp.async pipeline's bits */
    report(&r, cll_cuda_gate_attn_decode(hd, n_head, n_kv, len, n_chunks, paged, 0, act, CLL_CU_ATTN_STREAM_TMA, 1, n_swa,
                                         seed + 70, &r));
    /* and with its stages refilled by tickets (no block barrier a tile): the same bits again */
    report(&r, cll_cuda_gate_attn_decode(hd, n_head, n_kv, len, n_chunks, paged, 0, act, CLL_CU_ATTN_STREAM_TMA_TK, 1, n_swa,
                                         seed + 75, &r));
}

/* decode attention: one sub-chunk staged before the wait (len <= 128), the newest key in a later
 * sub-chunk (130), chunks merged (300 / 4, 2100 / 8), GQA groups split over blocks (32/8, 32/4),
 * head dims 64/128/256 (256: 64-key tiles), a paged cache, grids of chunks no key reaches */
static void test_attn_decode(void **state) {
    (void)state;
    g_fail = 0;
    /* act: most live chunks (0: the kernel's default); 2 and 1 run blocks of many sub-chunks, each
     * asking L2 for the next while it scores (the long-context form) */
    const struct { int hd, n_head, n_kv, len, n_chunks; bool paged; int act; } shapes[] = {
        {128, 32, 32, 100, 1, false, 0}, {128, 32, 32, 130, 1, false, 0}, {128, 32, 32, 300, 4, true, 0},
        {128, 32, 8, 1, 1, false, 0},    {128, 32, 8, 600, 2, false, 0},  {64, 8, 2, 77, 1, true, 0},
        {256, 8, 4, 200, 1, false, 0},   {128, 32, 4, 2100, 8, true, 0},  {128, 32, 32, 2100, 17, false, 2},
        {128, 32, 8, 1000, 8, true, 1},  {64, 8, 2, 700, 6, false, 3},   {128, 32, 8, 2100, 17, true, 0},
        /* GQA 7 (qwen2-7b: 28 / 4, heads split unevenly over blocks), MHA of head dim 64, GQA 8 over
         * many chunks (q3moe at depth) */
        {128, 28, 4, 3000, 24, false, 0}, {64, 16, 16, 900, 8, false, 0}, {128, 32, 4, 4100, 33, false, 0},
        /* grids of many chunks for few keys (a step early in a large context: one live chunk, the others'
         * blocks leave before the wait) and many more chunks than the live cap (the grid is the live ones) */
        {128, 32, 32, 90, 5, false, 0},   {128, 32, 8, 40, 40, true, 0},   {128, 32, 32, 1000, 97, false, 0},
        {128, 32, 8, 1500, 60, false, 3},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        decode_forms(shapes[s].hd, shapes[s].n_head, shapes[s].n_kv, shapes[s].len, shapes[s].n_chunks, shapes[s].paged,
                     shapes[s].act, 0, 7, 600 + s);
    assert_int_equal(g_fail, 0);
}

/* decode attention over a sliding window (gemma3's local layers): every form attends to the newest
 * n_swa keys only; the cells before the window hold NaN, so a read past it fails. Windows wider
 * than the context (no effect), of one key (the new one alone), across chunk and 16-cell page
 * borders, and gemma3-270m's shape (head dim 256, 4 q heads of one kv head, window 512) */
static void test_attn_decode_window(void **state) {
    (void)state;
    g_fail = 0;
    const struct { int hd, n_head, n_kv, len, n_chunks; bool paged; int n_swa; } shapes[] = {
        {256, 4, 1, 700, 6, false, 512}, {256, 4, 1, 2100, 17, true, 512}, {128, 32, 8, 2100, 17, false, 1000},
        {128, 32, 32, 300, 4, true, 100},  {64, 8, 2, 77, 1, false, 1000},  {128, 32, 8, 600, 2, false, 1},
        {64, 8, 2, 700, 6, true, 37},      {128, 32, 4, 4100, 33, false, 4096},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        decode_forms(shapes[s].hd, shapes[s].n_head, shapes[s].n_kv, shapes[s].len, shapes[s].n_chunks, shapes[s].paged, 0,
                     shapes[s].n_swa, 3, 720 + s);
    assert_int_equal(g_fail, 0);
}

/* MoE routing: the synthetic Q5_1 MoE file's NaN router logits once routed to expert id E */
static void test_moe_route(void **state) {
    (void)state;
    g_fail = 0;
    const struct { int32_t e, k; } shapes[] = {{128, 8}, {8, 2}, {60, 4}, {256, 8}, {33, 33}, {1, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int rn = 0; rn < 2; rn++) {
            cll_cuda_gate_report r;
            report(&r, cll_cuda_gate_moe_route(shapes[s].e, shapes[s].k, rn, 700 + s, &r));
        }
    assert_int_equal(g_fail, 0);
}

static void test_get_rows(void **state) {
    (void)state;
    g_fail = 0;
    const cll_kernel_table *t = table();
    for (size_t i = 0; i < t->n; i++) {
        const cll_kernel_row *row = &t->rows[i];
        if (!(row->op & CLL_KOP_GEMV)) continue;
        const int64_t qk = cll_type_traits_get(row->wtype)->blck;
        cll_cuda_gate_report r;
        report(&r, cll_cuda_gate_get_rows(row->wtype, 50, 3 * (qk > 1 ? qk : 11), 7, 300, &r));
        report(&r, cll_cuda_gate_get_rows(row->wtype, 1000, 4096, 3, 301, &r));
    }
    assert_int_equal(g_fail, 0);
}

/* the device decoders, run on the host: needs no GPU */
static void test_decoders_host(void **state) {
    (void)state;
    const cll_status st = cll_cuda_gate_decoders();
    if (st != CLL_OK) printf("decoders: %s\n", cll_last_error());
    assert_int_equal(st, CLL_OK);
}

/* the form pick (cuda/matmul/pick.cu): pure, so it runs without a GPU */
static cll_cu_form pick(uint32_t t, int64_t n_mat, int64_t n, bool resident, bool row, bool off, int32_t dev) {
    const cll_cu_form_query q = {.wtype = t, .rows = 4096, .cols = 4096, .n_mat = n_mat, .n_tokens = n, .resident = resident,
                                 .grouped_row = row, .grouped_off = off, .device = dev};
    return cll_cu_pick_form(&q);
}

/* the attention kernel's q heads per block (pure): the group capped at 8, spread while the grid is
 * under the floor */
static void test_attn_heads_per_block(void **state) {
    (void)state;
    assert_int_equal(cll_cu_attn_heads_per_block(32, 32, 1, 1, 64), 1);  /* l2-7b: no GQA */
    assert_int_equal(cll_cu_attn_heads_per_block(32, 8, 1, 1, 64), 1);   /* l3-8b tg128: 8 -> 32 blocks */
    assert_int_equal(cll_cu_attn_heads_per_block(32, 8, 32, 1, 64), 4);  /* n_ctx 4096: 256 blocks already */
    assert_int_equal(cll_cu_attn_heads_per_block(32, 4, 1, 1, 64), 1);   /* q3moe tg128: 4 -> 32 blocks */
    assert_int_equal(cll_cu_attn_heads_per_block(32, 4, 2, 1, 64), 1);   /* 2 chunks: 32 blocks at HG 2, 64 at 1 */
    assert_int_equal(cll_cu_attn_heads_per_block(32, 4, 1, 16, 64), 8);  /* 16 rows: 64 blocks at HG 8 */
    assert_int_equal(cll_cu_attn_heads_per_block(48, 4, 8, 1, 64), 8);   /* group 12: HG 8, 2 sub-groups: 64 blocks */
    assert_int_equal(cll_cu_attn_heads_per_block(6, 2, 1, 1, 64), 1);    /* group 3: HG 4, then spread */
    assert_int_equal(cll_cu_attn_heads_per_block(6, 2, 1, 1, 1), 4);     /* no floor: group 3 in one block (HG 4) */
    assert_int_equal(cll_cu_attn_heads_per_block(8, 0, 1, 1, 64), 1);    /* no kv heads: defined */
}

static void test_attn_warps(void **state) {
    (void)state;
    assert_int_equal(cll_cu_attn_warps(0, 64, 132, 128, 1, true), 16);   /* l2-7b tg128: 64 blocks, an SM each */
    assert_int_equal(cll_cu_attn_warps(0, 264, 132, 128, 1, true), 8);   /* two blocks an SM */
    assert_int_equal(cll_cu_attn_warps(0, 2080, 132, 128, 1, true), 4);  /* depth 8192: 65 chunks a head */
    assert_int_equal(cll_cu_attn_warps(0, 64, 132, 128, 8, true), 8);    /* 16 x 8 x 128 floats do not fit: 8 */
    assert_int_equal(cll_cu_attn_warps(0, 64, 132, 256, 8, true), 4);    /* neither does 8 x 8 x 256 */
    assert_int_equal(cll_cu_attn_warps(0, 64, 132, 128, 1, false), 4);   /* f32 cache: the 4-warp kernel only */
    assert_int_equal(cll_cu_attn_warps(4, 64, 132, 128, 1, true), 4);    /* the knob wins where it fits */
    assert_int_equal(cll_cu_attn_warps(8, 2080, 132, 64, 2, true), 8);
    assert_int_equal(cll_cu_attn_warps(16, 64, 132, 256, 4, true), 8);   /* 16 does not fit: the grid's choice */
    assert_int_equal(cll_cu_attn_warps(5, 64, 0, 64, 1, true), 4);       /* not a width, no SM count: defined */
}

/* the attention's live chunk cap (pure): about per_sm blocks an SM, at least one chunk, never past
 * the grid's; off at per_sm 0 */
/* the split attention's chunk floor (wider when the grid's blocks of one chunk fill the SMs twice)
 * and its keys in flight a warp (8 only where the q registers of hg <= 2 heads leave room) */
static void test_attn_min_chunk_loads(void **state) {
    (void)state;
    assert_int_equal(cll_cu_attn_min_chunk(0, 32, 132), CLL_CU_ATTN_MIN_CHUNK);       /* l2-7b decode */
    assert_int_equal(cll_cu_attn_min_chunk(0, 4 * 32, 132), CLL_CU_ATTN_MIN_CHUNK);   /* 4 sequences */
    assert_int_equal(cll_cu_attn_min_chunk(0, 263, 132), CLL_CU_ATTN_MIN_CHUNK);
    assert_int_equal(cll_cu_attn_min_chunk(0, 264, 132), CLL_CU_ATTN_MIN_CHUNK_WIDE); /* twice the SMs */
    assert_int_equal(cll_cu_attn_min_chunk(0, 32 * 32, 132), CLL_CU_ATTN_MIN_CHUNK_WIDE);
    assert_int_equal(cll_cu_attn_min_chunk(64, 32 * 32, 132), 64); /* the knob wins */
    assert_int_equal(cll_cu_attn_min_chunk(0, 4096, 0), CLL_CU_ATTN_MIN_CHUNK); /* no SM count: narrow */
    assert_true(CLL_CU_ATTN_MIN_CHUNK_WIDE > CLL_CU_ATTN_MIN_CHUNK);
    assert_int_equal(cll_cu_attn_loads(8, 1), 8);
    assert_int_equal(cll_cu_attn_loads(8, 2), 8);
    assert_int_equal(cll_cu_attn_loads(8, 4), 4); /* q of 4 heads + 8 keys: the registers */
    assert_int_equal(cll_cu_attn_loads(4, 1), 4);
    /* the register-capped one-head block: only where the uncapped one needs a second wave */
    assert_false(cll_cu_attn_capped(-1, 32 * 16, 132));      /* 16 sequences, one chunk: 512 blocks, one wave */
    assert_false(cll_cu_attn_capped(-1, 6 * 132, 132));      /* exactly one wave of 6 an SM */
    assert_true(cll_cu_attn_capped(-1, 6 * 132 + 1, 132));
    assert_true(cll_cu_attn_capped(-1, 32 * 32, 132));       /* 32 sequences: 1024 blocks */
    assert_false(cll_cu_attn_capped(-1, 1 << 20, 0));        /* no SM count: never */
    assert_true(cll_cu_attn_capped(1, 32, 132));             /* the knob wins both ways */
    assert_false(cll_cu_attn_capped(0, 32 * 64, 132));
    /* the first sub-chunk's L2 prefetch: whole in narrow grids, CLL_CU_ATTN_KV_PF_WIDE keys in wide ones */
    assert_int_equal(cll_cu_attn_kv_pf_keys(32, 132, 128), 128);          /* one sequence, MHA */
    assert_int_equal(cll_cu_attn_kv_pf_keys(32 * 16, 132, 128), 128);     /* 16 sequences */
    assert_int_equal(cll_cu_attn_kv_pf_keys(32 * 32, 132, 128), CLL_CU_ATTN_KV_PF_WIDE);
    assert_int_equal(cll_cu_attn_kv_pf_keys(32 * 32, 132, 32), 32);       /* never more than the sub-chunk */
    assert_int_equal(cll_cu_attn_kv_pf_keys(1 << 20, 0, 128), 128);       /* no SM count: whole */
    /* prefill key splits: a 128-token chunk 4k deep on l2-7b's 32 heads (64 blocks) -> 7 splits (about 3
     * blocks an SM), a whole 512-token prompt (256 blocks) 2, pp4096 none; at least 4 tiles a split, within
     * the partials, never without an SM count */
    assert_int_equal(cll_cu_attn_prefill_splits(128, 32, 4096, 1 << 20, 132), 7);
    assert_int_equal(cll_cu_attn_prefill_splits(512, 32, 512, 1 << 20, 132), 2);
    assert_int_equal(cll_cu_attn_prefill_splits(4096, 32, 4096, 1 << 20, 132), 1);
    assert_int_equal(cll_cu_attn_prefill_splits(128, 32, 512, 1 << 20, 132), 2);   /* 8 tiles: 2 splits of 4 */
    assert_int_equal(cll_cu_attn_prefill_splits(128, 32, 200, 1 << 20, 132), 1);   /* 4 tiles: one split */
    assert_int_equal(cll_cu_attn_prefill_splits(128, 32, 4096, 128 * 32 * 3, 132), 3); /* partials for 3 */
    assert_int_equal(cll_cu_attn_prefill_splits(128, 32, 4096, 1 << 20, 0), 1);
    assert_int_equal(cll_cu_attn_loads(0, 1), 4);
}

static void test_attn_active_chunks(void **state) {
    (void)state;
    assert_int_equal(cll_cu_attn_active_chunks(65, 32, 132, 0), 65);   /* off: every chunk of the grid */
    assert_int_equal(cll_cu_attn_active_chunks(65, 32, 132, 4), 16);   /* l2-7b at depth 8192: 512 keys a chunk */
    assert_int_equal(cll_cu_attn_active_chunks(65, 8, 132, 4), 65);    /* l3-8b: 66 would fit, the grid has 65 */
    assert_int_equal(cll_cu_attn_active_chunks(65, 8, 132, 2), 33);
    assert_int_equal(cll_cu_attn_active_chunks(2, 32, 132, 4), 2);     /* short context: the grid's 2 */
    assert_int_equal(cll_cu_attn_active_chunks(65, 1024, 132, 1), 1);  /* a wide batch: one chunk, not zero */
    assert_int_equal(cll_cu_attn_active_chunks(0, 32, 132, 4), 1);     /* no chunks: defined */
    assert_int_equal(cll_cu_attn_active_chunks(65, 32, 0, 4), 65);     /* no SM count: off */
}

/* the chunks a decode attention grid launches: the live cap where it caps the context's chunks, else
 * every chunk; the window's spread (cll_cu_attn_chunk_span's nch) is the same count */
static void test_attn_live_chunks(void **state) {
    (void)state;
    assert_int_equal(cll_cu_attn_live_chunks(8, 97), 8);   /* tg128 @ d8192 in a 12296-cell context: 8 of 97 */
    assert_int_equal(cll_cu_attn_live_chunks(0, 5), 5);    /* no cap (the split kernel's default): the grid's */
    assert_int_equal(cll_cu_attn_live_chunks(16, 5), 5);   /* a cap above the context's chunks */
    assert_int_equal(cll_cu_attn_live_chunks(5, 5), 5);
    assert_int_equal(cll_cu_attn_live_chunks(-1, 3), 3);
    assert_int_equal(cll_cu_attn_live_chunks(1, 65), 1);
    /* every key of a window lands in a chunk below the count, at any depth the context allows */
    for (int32_t hi = 1; hi <= 12296; hi += 97) {
        const int32_t nch = cll_cu_attn_live_chunks(8, 97);
        int32_t covered = 0, c0, c1;
        const int32_t nc = cll_cu_attn_chunk_span(0, hi, nch, 128, 64, 0, &c0, &c1);
        assert_true(nc >= 1 && nc <= nch);
        for (int32_t c = 0; c < nch; c++) {
            cll_cu_attn_chunk_span(0, hi, nch, 128, 64, c, &c0, &c1);
            covered += c1 - c0;
        }
        assert_int_equal(covered, hi);
    }
}

/* the decode attention's chunk spans (pure): every key of the window in exactly one live chunk, in order;
 * key spans (gran 1) as the split kernel always cut them; whole tiles (gran 64, the streaming kernels)
 * leave only the window's last tile partial and deal the tiles evenly */
static void check_spans(int32_t lo, int32_t hi, int32_t nch, int32_t min_chunk, int32_t gran, int32_t *nc_out,
                        int32_t *max_tiles, int32_t *boxes) {
    int32_t c0 = 0, c1 = 0, next = lo, mx = 0, bx = 0;
    const int32_t nc = cll_cu_attn_chunk_span(lo, hi, nch, min_chunk, gran, 0, &c0, &c1);
    assert_true(nc >= 1 && nc <= (nch < 1 ? 1 : nch));
    for (int32_t c = 0; c < nch + 2; c++) {
        assert_int_equal(cll_cu_attn_chunk_span(lo, hi, nch, min_chunk, gran, c, &c0, &c1), nc);
        if (c >= nc) { /* empty, past the window */
            assert_int_equal(c0, hi);
            assert_int_equal(c1, hi);
            continue;
        }
        assert_int_equal(c0, next); /* contiguous, in order, none empty */
        assert_true(c1 > c0 && c1 <= hi);
        if (gran > 1) {
            assert_int_equal((c0 - lo) % gran, 0);
            if (c1 < hi) assert_int_equal((c1 - lo) % gran, 0); /* only the window's end is off a tile */
        }
        const int32_t g = gran > 1 ? gran : 64, t = (c1 - c0 + g - 1) / g;
        mx = t > mx ? t : mx;
        bx += t;
        next = c1;
    }
    assert_int_equal(next, hi); /* every key */
    *nc_out = nc;
    *max_tiles = mx;
    *boxes = bx;
}

static void test_attn_chunk_span(void **state) {
    (void)state;
    int32_t nc, mx, bx;
    /* l2-7b at depth 8192 (8193 keys, 8 live chunks a head): key spans of 1025 end in a 1-key tile (the
     * last one 1018 keys), 135 boxes for the window's 129 tiles; whole tiles: 129, one chunk of 17, seven of 16 */
    check_spans(0, 8193, 8, 128, 1, &nc, &mx, &bx);
    assert_int_equal(nc, 8);
    assert_int_equal(mx, 17);
    assert_int_equal(bx, 135);
    check_spans(0, 8193, 8, 128, 64, &nc, &mx, &bx);
    assert_int_equal(nc, 8);
    assert_int_equal(mx, 17);
    assert_int_equal(bx, 129);
    int32_t c0, c1;
    cll_cu_attn_chunk_span(0, 8193, 8, 128, 64, 0, &c0, &c1);
    assert_int_equal(c1 - c0, 17 * 64);
    cll_cu_attn_chunk_span(0, 8193, 8, 128, 64, 7, &c0, &c1);
    assert_int_equal(c0, 17 * 64 + 6 * 16 * 64);
    assert_int_equal(c1, 8193);
    /* 1025 keys: 23 boxes for 17 tiles before */
    check_spans(0, 1025, 8, 128, 1, &nc, &mx, &bx);
    assert_int_equal(bx, 23);
    check_spans(0, 1025, 8, 128, 64, &nc, &mx, &bx);
    assert_int_equal(bx, 17);
    assert_int_equal(mx, 3);
    /* min_chunk bounds the chunks: 300 keys at 128 a chunk -> 3 key spans; whole tiles: 5 tiles, 2 a chunk */
    check_spans(0, 300, 16, 128, 1, &nc, &mx, &bx);
    assert_int_equal(nc, 3);
    check_spans(0, 300, 16, 128, 64, &nc, &mx, &bx);
    assert_int_equal(nc, 3);
    assert_int_equal(mx, 2);
    /* a sliding window's start off a tile boundary (lo = 1000): tiles count from lo */
    check_spans(1000, 5097, 4, 0, 64, &nc, &mx, &bx);
    assert_int_equal(nc, 4);
    /* one key, fewer keys than chunks, more chunks than tiles */
    check_spans(0, 1, 8, 128, 64, &nc, &mx, &bx);
    assert_int_equal(nc, 1);
    check_spans(5, 70, 66, 0, 64, &nc, &mx, &bx);
    assert_int_equal(nc, 2);
    check_spans(0, 70, 66, 0, 1, &nc, &mx, &bx); /* key spans of cdiv(70, 66) = 2 */
    assert_int_equal(nc, 35);
    check_spans(0, 70, 0, 0, 64, &nc, &mx, &bx); /* no chunk count: one */
    assert_int_equal(nc, 1);
    /* the key spans are the split kernel's old cut, bit for bit: eff = max(min_chunk, cdiv(len, nch)) */
    for (int32_t len = 1; len < 3000; len += 37)
        for (int32_t nch = 1; nch < 70; nch += 7) {
            const int32_t eff = (len + nch - 1) / nch > 128 ? (len + nch - 1) / nch : 128;
            for (int32_t c = 0; c < (len + eff - 1) / eff; c++) {
                cll_cu_attn_chunk_span(3, 3 + len, nch, 128, 1, c, &c0, &c1);
                assert_int_equal(c0, 3 + c * eff);
                assert_int_equal(c1, 3 + c * eff + eff < 3 + len ? 3 + c * eff + eff : 3 + len);
            }
            check_spans(3, 3 + len, nch, 128, 64, &nc, &mx, &bx);
            assert_int_equal(bx, (len + 63) / 64); /* whole tiles: no box twice */
        }
    /* an empty window (not asked for by the kernels): defined */
    assert_int_equal(cll_cu_attn_chunk_span(5, 5, 8, 0, 64, 0, &c0, &c1), 0);
    assert_int_equal(c0, 5);
}

/* the decode attention's form (pure): knob or caller first, else streaming for one row from 4096
 * cells; batches of rows and F32 caches split */
/* the quantized gate|up pair's own activation (act_out.yq): every type but Q8_0 (its measured loss), forced
 * either way by CLLAMA_CUDA_GU_ACTQ's 0 / 1 */
/* the polled residual tail (cll_cu_resid_epi.slot) is served by the default one-token rows of the split types on
 * the o and down products of the 7B / 8B / q3moe shapes (so CLLAMA_CUDA_FUSE_RESID=2 takes it there), and refused
 * and by the float rows' k_gemv_f (l2-7b F16), and refused where the consumer block cannot replay the norm
 * kernel (rows past 4096 or not a multiple of 4) */
static void test_resid_poll_rows(void **state) {
    (void)state;
    const uint32_t types[] = {CLL_TYPE_Q4_0, CLL_TYPE_Q4_K, CLL_TYPE_Q6_K, CLL_TYPE_Q8_0,
                              CLL_TYPE_IQ4_XS, CLL_TYPE_Q5_1, CLL_TYPE_IQ3_S};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const uint32_t t = types[i];
        assert_true(cll_cuda_resid_poll_served(t, 4096, 4096));  /* o */
        assert_true(cll_cuda_resid_poll_served(t, 4096, 11008)); /* l2-7b down */
        assert_true(cll_cuda_resid_poll_served(t, 4096, 14336)); /* l3-8b down */
        assert_true(cll_cuda_resid_poll_served(t, 2048, 4096));  /* q3moe o */
        assert_false(cll_cuda_resid_poll_served(t, 5120, 5120));
        assert_false(cll_cuda_resid_poll_served(t, 8192, 8192));
        assert_false(cll_cuda_resid_poll_served(t, 4097, 4096));
        assert_false(cll_cuda_resid_poll_served(t, 4094, 4096));
    }
    const uint32_t floats[] = {CLL_TYPE_F16, CLL_TYPE_BF16, CLL_TYPE_F32};
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) {
        assert_true(cll_cuda_resid_poll_served(floats[i], 4096, 4096));
        assert_true(cll_cuda_resid_poll_served(floats[i], 4096, 11008));
        assert_false(cll_cuda_resid_poll_served(floats[i], 5120, 5120));
        assert_false(cll_cuda_resid_poll_served(floats[i], 4097, 4096));
    }
}

static void test_gu_actq(void **state) {
    (void)state;
    assert_true(cll_cu_gu_actq(-1, CLL_TYPE_Q4_0));
    assert_true(cll_cu_gu_actq(-1, CLL_TYPE_Q4_K));
    assert_true(cll_cu_gu_actq(-1, CLL_TYPE_Q6_K));
    assert_true(cll_cu_gu_actq(-1, CLL_TYPE_IQ4_XS));
    assert_false(cll_cu_gu_actq(-1, CLL_TYPE_Q8_0));
    assert_true(cll_cu_gu_actq(1, CLL_TYPE_Q8_0));
    assert_false(cll_cu_gu_actq(0, CLL_TYPE_Q4_K));
}

static void test_attn_form(void **state) {
    (void)state;
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_AUTO, true, 640, 1, 128, 1), CLL_CU_ATTN_SPLIT);     /* tg128 */
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_AUTO, true, 4095, 1, 128, 1), CLL_CU_ATTN_SPLIT);
    /* over a long context: the ticketed TMA pipeline for an MHA cache (group 1), the tensor-core body for GQA */
    const int auto_gqa = CLL_CU_ATTN_TC_AUTO ? CLL_CU_ATTN_STREAM_TC : CLL_CU_ATTN_STREAM;
    const int auto_long = CLL_CU_ATTN_TMA_AUTO ? CLL_CU_ATTN_STREAM_TMA_TK : auto_gqa;
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_AUTO, true, 4096, 1, 128, 1), auto_long);
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_AUTO, true, 8320, 1, 128, 1), auto_long); /* tg128 @ d8192 */
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_AUTO, true, 8320, 1, 128, 4), auto_gqa); /* l3-8b @ d8192 */
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_AUTO, true, 8320, 1, 64, 8), auto_gqa);
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_AUTO, true, 4095, 1, 128, 4), CLL_CU_ATTN_SPLIT);
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_STREAM_TMA_TK, true, 8320, 1, 128, 4), CLL_CU_ATTN_STREAM_TMA_TK); /* asked for */
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_AUTO, true, 8320, 1, 256, 1), CLL_CU_ATTN_STREAM); /* no TC body */
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_AUTO, true, 8192, 64, 128, 1), CLL_CU_ATTN_SPLIT);   /* a server's batch */
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_SPLIT, true, 8320, 1, 128, 1), CLL_CU_ATTN_SPLIT);   /* the knob wins */
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_STREAM, true, 256, 8, 128, 1), CLL_CU_ATTN_STREAM);
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_STREAM_TC, true, 256, 1, 64, 1), CLL_CU_ATTN_STREAM_TC);
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_STREAM_TC, true, 8320, 1, 256, 1), CLL_CU_ATTN_STREAM);
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_STREAM_TMA, true, 256, 1, 128, 1), CLL_CU_ATTN_STREAM_TMA);
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_STREAM_TMA, true, 8320, 1, 256, 1), CLL_CU_ATTN_STREAM); /* no TC body */
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_STREAM_TMA, false, 8320, 1, 128, 1), CLL_CU_ATTN_SPLIT);
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_STREAM_TMA_TK, true, 256, 1, 64, 1), CLL_CU_ATTN_STREAM_TMA_TK);
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_STREAM_TMA_TK, true, 8320, 1, 256, 1), CLL_CU_ATTN_STREAM);
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_STREAM_TMA_TK, false, 8320, 1, 128, 1), CLL_CU_ATTN_SPLIT);
    assert_true(cll_cu_attn_form_tma(CLL_CU_ATTN_STREAM_TMA) && cll_cu_attn_form_tma(CLL_CU_ATTN_STREAM_TMA_TK));
    assert_false(cll_cu_attn_form_tma(CLL_CU_ATTN_STREAM_TC) || cll_cu_attn_form_tma(CLL_CU_ATTN_AUTO));
    /* the streaming kernel's forms, whatever their body or pipeline; the split kernel and AUTO are not */
    assert_true(cll_cu_attn_form_stream(CLL_CU_ATTN_STREAM) && cll_cu_attn_form_stream(CLL_CU_ATTN_STREAM_TC) &&
                cll_cu_attn_form_stream(CLL_CU_ATTN_STREAM_TMA) && cll_cu_attn_form_stream(CLL_CU_ATTN_STREAM_TMA_TK));
    assert_false(cll_cu_attn_form_stream(CLL_CU_ATTN_SPLIT) || cll_cu_attn_form_stream(CLL_CU_ATTN_AUTO));
    /* the TMA pipeline: unpaged caches with tensor maps, head dims 64 / 128 (else the cp.async one) */
    assert_true(cll_cu_attn_tma_serves(false, true, 128));
    assert_true(cll_cu_attn_tma_serves(false, true, 64));
    assert_false(cll_cu_attn_tma_serves(true, true, 128));  /* paged: a tile's keys are not one box */
    assert_false(cll_cu_attn_tma_serves(false, false, 128)); /* no maps (no driver entry point) */
    assert_false(cll_cu_attn_tma_serves(false, true, 256));
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_STREAM, false, 8320, 1, 128, 1), CLL_CU_ATTN_SPLIT); /* F32 cache */
    assert_int_equal(cll_cu_attn_form(CLL_CU_ATTN_STREAM_TC, false, 8320, 1, 128, 1), CLL_CU_ATTN_SPLIT);
    assert_int_equal(cll_cu_attn_form(7, true, 256, 1, 128, 1), CLL_CU_ATTN_SPLIT);                    /* not a form: auto */
    /* the tensor-core body's stages: deep for a GQA group of head dim 128, the knob wins there only */
    const int h200 = 232448, a100 = 166912; /* opt-in shared memory a block */
    assert_int_equal(cll_cu_attn_stream_ns(-1, 128, 4, h200), CLL_CU_ATTN_NS_DEEP); /* l3-8b */
    assert_int_equal(cll_cu_attn_stream_ns(-1, 128, 8, h200), CLL_CU_ATTN_NS_DEEP); /* q3moe */
    assert_int_equal(cll_cu_attn_stream_ns(-1, 128, 1, h200), 0);                   /* l2-7b (MHA) */
    assert_int_equal(cll_cu_attn_stream_ns(-1, 64, 4, h200), 0);
    assert_int_equal(cll_cu_attn_stream_ns(0, 128, 4, h200), 0);
    assert_int_equal(cll_cu_attn_stream_ns(CLL_CU_ATTN_NS_DEEP, 128, 1, h200), CLL_CU_ATTN_NS_DEEP);
    assert_int_equal(cll_cu_attn_stream_ns(CLL_CU_ATTN_NS_DEEP, 256, 1, h200), 0);
    assert_int_equal(cll_cu_attn_stream_ns(6, 128, 1, h200), 0); /* not a depth: the pick */
    assert_int_equal(cll_cu_attn_stream_ns(-1, 128, 4, a100), 0);  /* 160 KB + statics do not fit */
    assert_int_equal(cll_cu_attn_stream_ns(CLL_CU_ATTN_NS_DEEP, 128, 4, a100), 0);
    /* the tensor-core body's pipeline: forced either way, else the default */
    assert_true(cll_cu_attn_stream_pw(1));
    assert_false(cll_cu_attn_stream_pw(0));
    assert_true(cll_cu_attn_stream_pw(-1) == (bool)CLL_CU_ATTN_PW_AUTO);
    assert_true(cll_cu_attn_stream_pw(2) == (bool)CLL_CU_ATTN_PW_AUTO);
    assert_int_equal(cll_cu_attn_stream_ns(-1, 128, 4, 0), 0);     /* unread: the default depth */
}

/* a cuBLAS product's token count: rounded up to the pad within the buffers' rows, never below n */
static void test_gemm_tokens(void **state) {
    (void)state;
    assert_int_equal(cll_cu_gemm_tokens(100, 200, 16), 112);  /* a server's prompt step: a warmed class */
    assert_int_equal(cll_cu_gemm_tokens(112, 200, 16), 112);  /* a multiple stays */
    assert_int_equal(cll_cu_gemm_tokens(33, 512, 16), 48);
    assert_int_equal(cll_cu_gemm_tokens(199, 200, 16), 200);  /* the class past the buffers: their rows */
    assert_int_equal(cll_cu_gemm_tokens(200, 200, 16), 200);
    assert_int_equal(cll_cu_gemm_tokens(150, 140, 16), 150);  /* a cap below n (not a caller's case): n */
    assert_int_equal(cll_cu_gemm_tokens(100, 200, 1), 100);   /* off */
    assert_int_equal(cll_cu_gemm_tokens(100, 200, 0), 100);
    assert_int_equal(cll_cu_gemm_tokens(1, 512, 16), 1);      /* one token is never a gemm */
    assert_int_equal(cll_cu_gemm_tokens(513, 4096, 16), 528);
}

/* the streaming attention's tile body: warp-independent for one head a block, else block-phased */
static void test_attn_stream_wi(void **state) {
    (void)state;
    assert_true(cll_cu_attn_stream_wi(-1, 1));   /* l2-7b (MHA) */
    assert_false(cll_cu_attn_stream_wi(-1, 4));  /* l3-8b (GQA 4) */
    assert_false(cll_cu_attn_stream_wi(-1, 8));
    assert_false(cll_cu_attn_stream_wi(0, 1));   /* the variable wins both ways */
    assert_true(cll_cu_attn_stream_wi(1, 8));
    assert_true(cll_cu_attn_stream_wi(7, 1));    /* not 0 / 1: by the heads */
}

static void test_gemv_f_pre(void **state) {
    (void)state;
    assert_true(cll_cu_gemv_f_pre(512, 32, 132, 16, 1));     /* q3moe router: 128 x 2048 f32, 32 blocks */
    assert_true(cll_cu_gemv_f_pre(24, 16, 132, 16, 1));      /* a short ragged row */
    assert_false(cll_cu_gemv_f_pre(513, 32, 132, 16, 1));    /* longer than the hold */
    assert_false(cll_cu_gemv_f_pre(512, 1024, 132, 16, 1));  /* l2-7b F16 4096 x 4096: a stream */
    assert_false(cll_cu_gemv_f_pre(512, 133, 132, 16, 1));   /* past one block per SM */
    assert_false(cll_cu_gemv_f_pre(0, 1, 132, 16, 1));       /* no vectors: the scalar tail alone */
    assert_false(cll_cu_gemv_f_pre(8, 1, 0, 16, 1));         /* no SM count: defined */
    /* mode 0: never; mode 2: whenever the row fits, whatever the grid */
    assert_false(cll_cu_gemv_f_pre(512, 32, 132, 16, 0));
    assert_true(cll_cu_gemv_f_pre(512, 1024, 132, 16, 2));   /* l2-7b F16 4096 x 4096 */
    assert_false(cll_cu_gemv_f_pre(1376, 1024, 132, 16, 2)); /* its down (11008 columns): past the hold */
    assert_false(cll_cu_gemv_f_pre(0, 1, 132, 16, 2));
}

/* the staging-free split rows' launch choices (H200: 132 SMs): w4r2pre runs its whole-row kernel on
 * rows of <= 128 groups, w4r2pre1w only where the grid is also one wave, w4r2ks4 splits the long rows */
static void test_sp_launch_choices(void **state) {
    (void)state;
    /* w4r2pre (u 4, 5 blocks an SM): l2-7b q|k|v, o, gate|up yes; down (344 groups) no; experts no */
    assert_true(cll_cu_sp_pre(1, 128, 12288, 1, 4, 5, 132, false));
    assert_true(cll_cu_sp_pre(1, 128, 4096, 1, 4, 5, 132, false));
    assert_false(cll_cu_sp_pre(1, 344, 4096, 1, 4, 5, 132, false));
    assert_false(cll_cu_sp_pre(1, 64, 768, 8, 4, 5, 132, true));
    assert_false(cll_cu_sp_pre(0, 128, 4096, 1, 4, 5, 132, false));
    /* w4r2pre1w: o (512 blocks) is one wave at 5 and at 4 (Q8_0) blocks an SM, q|k|v (1536) is not */
    assert_true(cll_cu_sp_pre(2, 128, 4096, 1, 4, 5, 132, false));
    assert_true(cll_cu_sp_pre(2, 128, 4096, 1, 4, 4, 132, false));
    assert_false(cll_cu_sp_pre(2, 128, 12288, 1, 4, 5, 132, false));
    assert_false(cll_cu_sp_pre(2, 128, 4096, 2, 4, 4, 132, false)); /* two tokens: 1024 blocks */
    assert_false(cll_cu_sp_pre(2, 128, 4096, 1, 4, 5, 0, false));   /* no SM count: the fallback */
    /* w4r2ks4 (4 warps x 4 chunks): l2-7b / l3-8b down yes, 4096-column rows and a 70B down (28672
     * columns, 896 groups) no, nor expert products (a fused tail is its own kernel: the gate checks it) */
    assert_true(cll_cu_sp_ks(344, 4, 4, false));
    assert_true(cll_cu_sp_ks(448, 4, 4, false));
    assert_true(cll_cu_sp_ks(512, 4, 4, false));
    assert_false(cll_cu_sp_ks(513, 4, 4, false));
    assert_false(cll_cu_sp_ks(128, 4, 4, false));
    assert_false(cll_cu_sp_ks(896, 4, 4, false));
    assert_false(cll_cu_sp_ks(344, 4, 4, true));
}

static void test_pick_form(void **state) {
    (void)state;
    const int32_t h = CLL_KDEVICE_CUDA_SM(9, 0);
    const int64_t counts[] = {2, 7, 100, 513, 4097}; /* ragged batches pick as 512 does */
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        const int64_t n = counts[i];
        assert_int_equal(pick(CLL_TYPE_Q4_K, 1, n, true, false, false, h), CLL_CU_FORM_GEMM_RESIDENT);
        assert_int_equal(pick(CLL_TYPE_Q4_K, 1, n, false, false, false, h), CLL_CU_FORM_GEMM_PANEL);
        assert_int_equal(pick(CLL_TYPE_F16, 1, n, false, false, false, h), CLL_CU_FORM_GEMM_DIRECT);
        assert_int_equal(pick(CLL_TYPE_F32, 1, n, false, false, false, h), CLL_CU_FORM_GEMM_DIRECT);
        assert_int_equal(pick(CLL_TYPE_Q4_K, 128, n, false, true, false, h), CLL_CU_FORM_MOE_GROUPED);
        assert_int_equal(pick(CLL_TYPE_Q4_K, 128, n, true, true, false, h), CLL_CU_FORM_MOE_GROUPED_F16);
        assert_int_equal(pick(CLL_TYPE_F16, 8, n, false, true, false, h), CLL_CU_FORM_MOE_GROUPED_F16);
        assert_int_equal(pick(CLL_TYPE_BF16, 8, n, false, false, false, h), CLL_CU_FORM_MOE_TOKENS); /* no row */
        assert_int_equal(pick(CLL_TYPE_Q5_1, 128, n, false, true, true, h), CLL_CU_FORM_MOE_TOKENS);  /* knob off */
        assert_int_equal(pick(CLL_TYPE_Q5_1, 128, n, false, true, false, CLL_KDEVICE_CUDA_SM(7, 5)), CLL_CU_FORM_MOE_TOKENS);
        assert_int_equal(pick(CLL_TYPE_Q5_1, 128, n, false, true, false, 0), CLL_CU_FORM_MOE_GROUPED); /* device unknown */
    }
    /* a few sequences' decode: the few-token gemv where a row serves the weight at that count (the
     * dp4a rows 2..8, the mma rows 2..64) and the knob allows; experts, weights without a row, and
     * larger batches keep their forms */
    for (int64_t n = 2; n <= 70; n++) {
        cll_cu_form_query q = {.wtype = CLL_TYPE_Q4_K, .rows = 4096, .cols = 4096, .n_mat = 1, .n_tokens = n,
                               .resident = true, .few_tokens = 8, .device = h};
        assert_int_equal(cll_cu_pick_form(&q), n <= 8 ? CLL_CU_FORM_GEMV_FEW : CLL_CU_FORM_GEMM_RESIDENT);
        q.few_tokens = 64;
        assert_int_equal(cll_cu_pick_form(&q), n <= 64 ? CLL_CU_FORM_GEMV_FEW : CLL_CU_FORM_GEMM_RESIDENT);
        q.few_max = 4; /* CLLAMA_CUDA_FEW_MAX=4 */
        assert_int_equal(cll_cu_pick_form(&q), n <= 4 ? CLL_CU_FORM_GEMV_FEW : CLL_CU_FORM_GEMM_RESIDENT);
        q.few_max = 100; /* above what the row serves: the row's bound */
        assert_int_equal(cll_cu_pick_form(&q), n <= 64 ? CLL_CU_FORM_GEMV_FEW : CLL_CU_FORM_GEMM_RESIDENT);
        q.few_max = 0;
        q.few_tokens = 0;
        assert_int_equal(cll_cu_pick_form(&q), CLL_CU_FORM_GEMM_RESIDENT);
        q.few_tokens = 64;
        q.n_mat = 128;
        q.grouped_row = true;
        assert_int_equal(cll_cu_pick_form(&q), CLL_CU_FORM_MOE_GROUPED_F16);
        q.n_mat = 1;
        q.device = CLL_KDEVICE_CUDA_SM(7, 5);
        assert_int_equal(cll_cu_pick_form(&q), CLL_CU_FORM_GEMM_RESIDENT);
    }
    /* the fused dequant-in-tile GEMM (a dense weight with a fused row): fused_min..fused_max tokens, before
     * the few-token forms where fused_min reaches into their range; experts, pre-sm_80 devices, a
     * weight without the row and fused_max 0 keep their forms */
    for (int64_t n = 1; n <= 80; n++) {
        cll_cu_form_query q = {.wtype = CLL_TYPE_Q4_0, .rows = 4096, .cols = 4096, .n_mat = 1, .n_tokens = n,
                               .resident = true, .few_tokens = 8, .mma_min = 6, .fused = true,
                               .fused_min = CLL_CU_FUSED_MIN, .fused_max = CLL_CU_FUSED_MAX, .device = h};
        const cll_cu_form few = n >= 6 ? CLL_CU_FORM_GEMV_FEW_MMA : CLL_CU_FORM_GEMV_FEW;
        const cll_cu_form want = n == 1 ? CLL_CU_FORM_GEMV : n <= 8 ? few : n <= 32 ? CLL_CU_FORM_GEMM_FUSED
                                                                                   : CLL_CU_FORM_GEMM_RESIDENT;
        assert_int_equal(cll_cu_pick_form(&q), want);
        q.fused_min = 4; /* CLLAMA_CUDA_FUSED_MIN=4: ahead of the few-token rows from 4 tokens */
        assert_int_equal(cll_cu_pick_form(&q), n >= 4 && n <= 32 ? CLL_CU_FORM_GEMM_FUSED : want);
        q.fused_min = CLL_CU_FUSED_MIN;
        q.fused_max = 0; /* CLLAMA_CUDA_FUSED_MAX=0: the panels */
        assert_int_equal(cll_cu_pick_form(&q), n > 8 ? CLL_CU_FORM_GEMM_RESIDENT : want);
        q.fused_max = 64; /* CLLAMA_CUDA_FUSED_MAX=64 */
        assert_int_equal(cll_cu_pick_form(&q), n > 8 && n <= 64 ? CLL_CU_FORM_GEMM_FUSED : want);
        q.fused_max = 16;
        assert_int_equal(cll_cu_pick_form(&q), n > 16 ? CLL_CU_FORM_GEMM_RESIDENT : want);
        q.fused_max = CLL_CU_FUSED_MAX;
        q.fused = false;
        assert_int_equal(cll_cu_pick_form(&q), n > 8 ? CLL_CU_FORM_GEMM_RESIDENT : want);
        q.fused = true;
        q.device = CLL_KDEVICE_CUDA_SM(7, 5);
        assert_true(cll_cu_pick_form(&q) != CLL_CU_FORM_GEMM_FUSED);
        q.device = h;
        q.n_mat = 8;
        q.grouped_row = true;
        assert_true(cll_cu_pick_form(&q) != CLL_CU_FORM_GEMM_FUSED);
    }
    /* the int8 tensor-core row from the measured crossover on (Q4_0 6, Q4_K 4), the dp4a row below it */
    assert_int_equal(cll_cu_mma_min_tokens(CLL_TYPE_Q4_0), 6);
    assert_int_equal(cll_cu_mma_min_tokens(CLL_TYPE_Q4_K), 4);
    assert_int_equal(cll_cu_mma_min_tokens(CLL_TYPE_Q6_K), 9); /* the tile beyond the dp4a rows */
    assert_int_equal(cll_cu_mma_min_tokens(CLL_TYPE_Q8_0), 9);
    assert_int_equal(cll_cu_mma_min_tokens(CLL_TYPE_Q5_1), 0);
    assert_int_equal(cll_cu_fused_min_tokens(CLL_TYPE_Q4_K), 4); /* the K-quants' fused rows from 4 tokens */
    assert_int_equal(cll_cu_fused_min_tokens(CLL_TYPE_Q6_K), 4);
    assert_int_equal(cll_cu_fused_min_tokens(CLL_TYPE_Q4_0), CLL_CU_FUSED_MIN);
    assert_int_equal(cll_cu_fused_min_tokens(CLL_TYPE_Q8_0), CLL_CU_FUSED_MIN);
    /* with the tile (mma_max 64): the int8 rows from mma_min to 64 tokens, the panels above */
    for (int64_t n = 2; n <= 80; n++) {
        cll_cu_form_query q = {.wtype = CLL_TYPE_Q6_K, .rows = 4096, .cols = 4096, .n_mat = 1, .n_tokens = n,
                               .resident = true, .few_tokens = 8, .mma_min = 9, .mma_max = 64, .device = h};
        const cll_cu_form want = n <= 8 ? CLL_CU_FORM_GEMV_FEW : n <= 64 ? CLL_CU_FORM_GEMV_FEW_MMA
                                                                        : CLL_CU_FORM_GEMM_RESIDENT;
        assert_int_equal(cll_cu_pick_form(&q), want);
        q.few_max = 8; /* CLLAMA_CUDA_FEW_MAX=8: the dp4a rows only */
        assert_int_equal(cll_cu_pick_form(&q), n <= 8 ? CLL_CU_FORM_GEMV_FEW : CLL_CU_FORM_GEMM_RESIDENT);
        q.few_max = 32;
        assert_int_equal(cll_cu_pick_form(&q), n <= 32 ? want : CLL_CU_FORM_GEMM_RESIDENT);
        q.few_max = 0;
        q.n_mat = 8; /* experts keep their forms */
        assert_true(cll_cu_pick_form(&q) != CLL_CU_FORM_GEMV_FEW_MMA);
    }
    /* a pin of the n9-64 class naming the type's mma row hands the tile 9..64 tokens (the driver reads
     * it at load); a pin of another row, of the plain site's class, or none does not */
    assert_false(cll_cuda_gemv_tile_pinned(CLL_TYPE_Q4_K, 1, 4096, 4096));
    assert_int_equal(cll_kernels_set_override("cuda/gemv/q4_K/n9-64", "gemv_q4_K_split_mma"), CLL_OK);
    assert_true(cll_cuda_gemv_tile_pinned(CLL_TYPE_Q4_K, 1, 4096, 4096));
    assert_false(cll_cuda_gemv_tile_pinned(CLL_TYPE_Q4_0, 1, 4096, 4096));
    assert_false(cll_cuda_gemv_tile_pinned(CLL_TYPE_Q4_K, 1, 4096, 4000)); /* cols % 256: the row refuses */
    assert_int_equal(cll_kernels_set_override("cuda/gemv/q4_K/n9-64", "gemv_q4_K_split_r4"), CLL_OK);
    assert_false(cll_cuda_gemv_tile_pinned(CLL_TYPE_Q4_K, 1, 4096, 4096));
    cll_kernels_clear_overrides();
    /* the tile's split-K: the 7B o/down products (32 row tiles of 128) split 4 ways on 132 slots; qkv
     * (96 tiles) and gate|up (172) fill the slots unsplit; no scratch, too few tickets, too few chunks
     * per split, or partials past the scratch cap it */
    const int64_t wsf = CLL_CU_SPLITK_FLOATS(132);
    assert_int_equal(cll_cu_mma_tile_ks(32, 16, 132, 64, 4096, wsf, 1024), 4);
    assert_int_equal(cll_cu_mma_tile_ks(32, 43, 132, 64, 4096, wsf, 1024), 4);
    assert_int_equal(cll_cu_mma_tile_ks(96, 16, 132, 64, 12288, wsf, 1024), 1);
    assert_int_equal(cll_cu_mma_tile_ks(172, 16, 132, 64, 22016, wsf, 1024), 1);
    assert_int_equal(cll_cu_mma_tile_ks(32, 16, 132, 64, 4096, 0, 1024), 1);
    assert_int_equal(cll_cu_mma_tile_ks(32, 16, 132, 64, 4096, wsf, 16), 1);
    assert_int_equal(cll_cu_mma_tile_ks(32, 5, 132, 64, 4096, wsf, 1024), 1);   /* 5 chunks: one split of >= 3 */
    assert_int_equal(cll_cu_mma_tile_ks(2, 64, 132, 64, 256, 3 * 64 * 256, 1024), 3);
    /* the fused GEMM's split-K (2 blocks an SM, 264 slots, 16 tokens): the 7B gate|up (172 tiles of 128 rows, 16
     * chunks) 3 ways (516 blocks: 98% of two waves, not 65% of one), q|k|v (96) and o / down (32) 8 ways;
     * a tile count that fills its waves stays whole; no scratch or too many partials: unsplit */
    assert_int_equal(cll_cu_fused_ks(172, 16, 264, 16, 22016, wsf, 1024), 3);
    assert_int_equal(cll_cu_fused_ks(96, 16, 264, 16, 12288, wsf, 1024), 8); /* 768 blocks: 97% of 3 waves */
    assert_int_equal(cll_cu_fused_ks(32, 16, 264, 16, 4096, wsf, 1024), 8);
    assert_int_equal(cll_cu_fused_ks(32, 43, 264, 16, 4096, wsf, 1024), 8);
    assert_int_equal(cll_cu_fused_ks(264, 16, 264, 16, 33792, wsf, 1024), 1);
    assert_int_equal(cll_cu_fused_ks(32, 16, 264, 16, 4096, 0, 1024), 1);
    assert_int_equal(cll_cu_fused_ks(172, 16, 264, 64, 22016, wsf, 1024), 1); /* 2 x 64 x 22016 floats: past the scratch */
    assert_int_equal(cll_cu_fused_ks(32, 3, 264, 16, 4096, wsf, 1024), 1);     /* 3 chunks: no split of >= 2 twice */
    for (int64_t tiles = 1; tiles <= 300; tiles += 7)
        for (int nt = 9; nt <= 64; nt += 11) {
            const int ks = cll_cu_fused_ks(tiles, 43, 264, nt, tiles * 128, wsf, 1024);
            assert_true(ks >= 1 && ks <= 16 && (ks == 1 || (int64_t)ks * nt * tiles * 128 <= wsf));
        }
    for (int64_t tiles = 1; tiles <= 300; tiles += 7)
        for (int nt = 9; nt <= 64; nt += 11) {
            const int ks = cll_cu_mma_tile_ks(tiles, 43, 264, nt, tiles * 128, wsf, 1024);
            assert_true(ks >= 1 && ks <= 14 && (ks == 1 || ks * tiles <= 264));
            assert_true(ks == 1 || (int64_t)ks * nt * tiles * 128 <= wsf);
        }
    for (int64_t n = 1; n <= 10; n++) {
        cll_cu_form_query q = {.wtype = CLL_TYPE_Q4_0, .rows = 4096, .cols = 4096, .n_mat = 1, .n_tokens = n,
                               .resident = true, .few_tokens = 8, .mma_min = 6, .device = h};
        const cll_cu_form want = n == 1   ? CLL_CU_FORM_GEMV
                                 : n > 8  ? CLL_CU_FORM_GEMM_RESIDENT
                                 : n >= 6 ? CLL_CU_FORM_GEMV_FEW_MMA
                                          : CLL_CU_FORM_GEMV_FEW;
        assert_int_equal(cll_cu_pick_form(&q), want);
        q.few_max = 7; /* the knob caps both few-token forms */
        assert_int_equal(cll_cu_pick_form(&q), n > 7 && n > 1 ? CLL_CU_FORM_GEMM_RESIDENT : want);
        q.few_max = 0;
        q.mma_min = 0; /* no mma row (a pin, CLLAMA_CUDA_FEW_MMA=0, a type without one) */
        assert_int_equal(cll_cu_pick_form(&q),
                         want == CLL_CU_FORM_GEMV_FEW_MMA ? CLL_CU_FORM_GEMV_FEW : want);
    }
    /* its launch geometry: tokens per launch (records <= CLL_CU_FEW_SMEM_MAX, balanced) and split-K */
    assert_int_equal(cll_cu_few_tokens_per_launch(128, 8), 8);   /* 4096 cols: 8 x 6 KB */
    assert_int_equal(cll_cu_few_tokens_per_launch(128, 3), 3);
    assert_int_equal(cll_cu_few_tokens_per_launch(344, 8), 4);   /* 11008: 6 fit -> 4 + 4 */
    assert_int_equal(cll_cu_few_tokens_per_launch(448, 8), 4);   /* 14336: 4 fit */
    assert_int_equal(cll_cu_few_tokens_per_launch(448, 5), 3);   /* 3 + 2 */
    assert_int_equal(cll_cu_few_tokens_per_launch(4096, 2), 0);  /* 131072 cols: not even 2 */
    for (int64_t n = 2; n <= 8; n++)
        for (int64_t ng = 32; ng <= 1024; ng += 67) {
            const int per = cll_cu_few_tokens_per_launch(ng, (int)n);
            if (!per) continue;
            assert_true(per >= 2 && per <= 8 && per <= n);
            assert_true((int64_t)per * ng * CLL_CU_FEW_XW * 4 <= CLL_CU_FEW_SMEM_MAX);
        }
    assert_int_equal(cll_cu_few_pick_ks_log2(4096, 128, 4, 264), 1);   /* 128 tiles at ks 1, 256 at 2, 512 at 4: 256 fills best */
    assert_int_equal(cll_cu_few_pick_ks_log2(12288, 128, 4, 264), 1);  /* 384 -> 768 tiles: 2.9 waves */
    assert_int_equal(cll_cu_few_pick_ks_log2(4096, 64, 4, 264), 0);    /* 2048 cols: no K slices */
    assert_int_equal(cll_cu_few_pick_ks_log2(32, 448, 2, 264), 2);     /* a tiny product takes every warp */
    /* one token: the gemv, dense or expert, resident or not */
    assert_int_equal(pick(CLL_TYPE_Q4_K, 1, 1, true, false, false, h), CLL_CU_FORM_GEMV);
    assert_int_equal(pick(CLL_TYPE_Q4_K, 128, 1, true, true, false, h), CLL_CU_FORM_GEMV);
    for (int f = CLL_CU_FORM_GEMV; f <= CLL_CU_FORM_MOE_GROUPED_F16; f++) assert_string_not_equal(cll_cu_form_name((cll_cu_form)f), "?");
    /* the weights of a product: all of one type, one; mixed, one per run of a type (with runs) or one
     * per tensor (without) */
    {
        int st[4];
        const uint32_t k4 = CLL_TYPE_Q4_K, k6 = CLL_TYPE_Q6_K;
        const uint32_t qkv_same[3] = {k4, k4, k4}, qkv_v6[3] = {k4, k4, k6}, qkv_q6[3] = {k6, k4, k4}, alt[3] = {k4, k6, k4};
        const int64_t c[3] = {4096, 4096, 4096}, cw[3] = {4096, 4096, 2048};
        assert_int_equal(cll_cu_product_parts(qkv_same, c, 3, true, st), 1);
        assert_int_equal(st[0], 0);
        assert_int_equal(cll_cu_product_parts(qkv_same, c, 3, false, st), 1);
        assert_int_equal(cll_cu_product_parts(qkv_v6, c, 3, true, st), 2); /* q|k, then v */
        assert_int_equal(st[0], 0);
        assert_int_equal(st[1], 2);
        assert_int_equal(cll_cu_product_parts(qkv_v6, c, 3, false, st), 3);
        assert_int_equal(st[2], 2);
        assert_int_equal(cll_cu_product_parts(qkv_q6, c, 3, true, st), 2); /* q, then k|v */
        assert_int_equal(st[1], 1);
        assert_int_equal(cll_cu_product_parts(alt, c, 3, true, st), 3);    /* no two neighbours alike */
        assert_int_equal(cll_cu_product_parts(qkv_same, cw, 3, true, st), 2); /* v of another width */
        assert_int_equal(st[1], 2);
        assert_int_equal(cll_cu_product_parts(qkv_v6, c, 2, true, st), 1);    /* gate|up alike */
        assert_int_equal(cll_cu_product_parts(qkv_v6, c, 1, false, st), 1);
    }
    /* the resident-panel policy */
    const size_t gib = (size_t)1 << 30;
    assert_true(13 * gib <= cll_cu_panels_budget(130 * gib, 1, 0));   /* l2-7b on an H200: auto keeps them */
    assert_false(70 * gib <= cll_cu_panels_budget(130 * gib, 1, 0));  /* more than half: not all */
    assert_true(28 * gib <= cll_cu_panels_budget(70 * gib, 1, 0));   /* q3moe-L24 Q4_K_M on an H100: all */
    assert_true(40 * gib <= cll_cu_panels_budget(130 * gib, 2, 0));   /* on: whenever they fit */
    assert_false(130 * gib <= cll_cu_panels_budget(130 * gib, 2, 0)); /* ... with 1 GiB left */
    assert_true(cll_cu_panels_budget(130 * gib, 0, 0) == 0);          /* off */
    {
        const size_t none[1] = {0};
        bool k1[1];
        assert_true(cll_cu_panels_keep(none, 1, 130 * gib, k1) == 0); /* nothing to keep */
        assert_false(k1[0]);
    }
    /* ... the budgets, and the weights kept when not all fit: in order, each that still fits, never over */
    assert_true(cll_cu_panels_budget(40 * gib, 1, 0) == 20 * gib);
    assert_true(cll_cu_panels_budget(40 * gib, 2, 0) == 39 * gib);
    assert_true(cll_cu_panels_budget(40 * gib, 3, 5 * gib) == 5 * gib);  /* a cap */
    assert_true(cll_cu_panels_budget(4 * gib, 3, 5 * gib) == 3 * gib);   /* ... within what on allows */
    assert_true(cll_cu_panels_budget(gib / 2, 2, 0) == 0);
    assert_true(cll_cu_panels_budget(40 * gib, 0, 5 * gib) == 0);        /* off */
    const size_t b[6] = {2 * gib, 6 * gib, 6 * gib, 1 * gib, 0, 6 * gib};
    bool keep[6];
    assert_true(cll_cu_panels_keep(b, 6, 10 * gib, keep) == 9 * gib);
    const bool want[6] = {true, true, false, true, false, false};
    for (int i = 0; i < 6; i++) assert_int_equal(keep[i], want[i]);
    assert_true(cll_cu_panels_keep(b, 6, 50 * gib, keep) == 21 * gib); /* all (the empty one never) */
    assert_false(keep[4]);
    assert_true(cll_cu_panels_keep(b, 6, 0, keep) == 0);
    for (int i = 0; i < 6; i++) assert_false(keep[i]);
    assert_true(cll_cu_panels_keep(b, 6, 7 * gib, keep) == 3 * gib); /* 2, then 1 */
}

/* the default gemv row of a type (at its token class) is the table's default and carries its impl */
static void test_table_shape(void **state) {
    (void)state;
    const cll_kernel_table *t = table();
    for (size_t i = 0; i < t->n; i++) {
        const cll_kernel_row *row = &t->rows[i];
        assert_non_null(row->impl);
        assert_true(strstr(row->name, cll_type_name(row->wtype)) != NULL);
        /* the few-token rows serve batches of 2..8 tokens, the others any count */
        const bool few = strstr(row->name, "_few") != NULL || strstr(row->name, "_mma") != NULL;
        const cll_kernel_shape s = {.wtype = row->wtype, .rows = 4096, .cols = 4096, .n_tokens = few ? 4 : 1,
                                    .device = CLL_KDEVICE_CUDA_SM(9, 0)};
        assert_true(cll_kernel_row_supported(row, &s));
        /* MoE rows: one default per layout (the expert weight's layout is its gemv row's) */
        const bool per_layout = row->op == CLL_KOP_MOE;
        const cll_kernel_row *sel = cll_kernels_select(t, row->op, &s, per_layout ? row->layout : -1, NULL);
        assert_non_null(sel);
        assert_true(sel->is_default); /* the selection is the (op, type) default */
        assert_int_equal(sel->wtype, row->wtype);
        if (row->is_default) assert_ptr_equal(sel, row); /* one default per (op, type) */
        int n_def = 0;
        for (size_t k = 0; k < t->n; k++)
            n_def += t->rows[k].op == row->op && t->rows[k].wtype == row->wtype && t->rows[k].is_default &&
                     (!per_layout || t->rows[k].layout == row->layout) && cll_kernel_row_supported(&t->rows[k], &s);
        assert_int_equal(n_def, 1);
    }
}

/* every kernel that opens its dynamic shared memory past 48 KB (a per-device attribute) runs on each
 * visible device in turn: with the attribute set once per process, the second GPU's launch failed
 * (the streaming decode attention, the prefill attention, the mma / few-token / bulk-copy gemvs,
 * the fused GEMM). One device: SKIP (issue 13's machines have several) */
static void test_every_device(void **state) {
    (void)state;
    int n = 0;
    assert_int_equal(cll_cuda_device_count(&n), CLL_OK);
    if (n < 2) {
        printf("SKIP: test_every_device: %d CUDA device: the per-device kernel attributes need two\n", n);
        return;
    }
    g_fail = 0;
    const cll_kernel_table *t = table();
    const struct { const char *row; int64_t rows, cols; int nb; } rows[] = {
        {"gemv_q4_0_split_mma", 300, 4096, 64}, {"gemv_q4_0_split_mma", 256, 4096, 8},
        {"gemv_q4_0_split_few", 64, 4096, 8},   {"gemv_q8_0_split_tma", 4096, 4096, 1},
        {"gemm_q4_0_split_fused_f16", 384, 4096, 32},
    };
    for (int d = 0; d < n; d++) {
        assert_int_equal(cll_cuda_use_device(d), CLL_OK);
        printf("device %d:\n", d);
        cll_cuda_gate_report r;
        report(&r, cll_cuda_gate_attn_decode(128, 32, 4, 4100, 33, false, 0, 0, CLL_CU_ATTN_STREAM_TC, 1, 0, 900 + d, &r));
        report(&r, cll_cuda_gate_attn_decode(128, 32, 32, 2100, 17, false, 0, 2, CLL_CU_ATTN_STREAM, 1, 0, 910 + d, &r));
        report(&r, cll_cuda_gate_attn_prefill(128, 32, 8, 100, 37, 0, 1, 920 + d, &r));
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
            const cll_kernel_row *row = cll_kernels_find(t, rows[i].row);
            assert_non_null(row);
            report(&r, cll_cuda_gate_row(row, rows[i].rows, rows[i].cols, rows[i].nb, 930 + 10 * d + i, &r));
        }
    }
    assert_int_equal(cll_cuda_use_device(0), CLL_OK);
    assert_int_equal(g_fail, 0);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* a log file shows each gate as it finishes */
    /* CLL_TEST_FILTER=pattern: only the tests whose names match (cmocka's * and ? wildcards), for a device
     * call that re-gates what one change touched */
    const char *filter = getenv("CLL_TEST_FILTER");
    if (filter && *filter) cmocka_set_test_filter(filter);
    if (!cll_cuda_built()) tu_skip("cuda_kernels_test: built without the CUDA driver");
    const struct CMUnitTest host[] = {
        cmocka_unit_test(test_decoders_host),
        cmocka_unit_test(test_table_shape),
        cmocka_unit_test(test_pick_form),
        cmocka_unit_test(test_attn_heads_per_block),
        cmocka_unit_test(test_attn_warps),
        cmocka_unit_test(test_gemv_f_pre),
        cmocka_unit_test(test_sp_launch_choices),
        cmocka_unit_test(test_attn_active_chunks),
        cmocka_unit_test(test_attn_live_chunks),
        cmocka_unit_test(test_attn_chunk_span),
        cmocka_unit_test(test_attn_min_chunk_loads),
        cmocka_unit_test(test_attn_form),
        cmocka_unit_test(test_gu_actq),
        cmocka_unit_test(test_resid_poll_rows),
        cmocka_unit_test(test_gemm_tokens),
        cmocka_unit_test(test_attn_stream_wi),
    };
    int n = 0;
    if (cll_cuda_device_count(&n) != CLL_OK || n == 0) {
        printf("SKIP: cuda_kernels_test: no CUDA device: the device gates did not run (the host decoder check did)\n");
        return cmocka_run_group_tests(host, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decoders_host),
        cmocka_unit_test(test_table_shape),
        cmocka_unit_test(test_pick_form),
        cmocka_unit_test(test_attn_heads_per_block),
        cmocka_unit_test(test_attn_warps),
        cmocka_unit_test(test_gemv_f_pre),
        cmocka_unit_test(test_sp_launch_choices),
        cmocka_unit_test(test_attn_active_chunks),
        cmocka_unit_test(test_attn_live_chunks),
        cmocka_unit_test(test_attn_chunk_span),
        cmocka_unit_test(test_attn_min_chunk_loads),
        cmocka_unit_test(test_attn_form),
        cmocka_unit_test(test_gu_actq),
        cmocka_unit_test(test_resid_poll_rows),
        cmocka_unit_test(test_gemm_tokens),
        cmocka_unit_test(test_attn_stream_wi),
        cmocka_unit_test(test_tables_and_quantize),
        cmocka_unit_test(test_get_rows),
        cmocka_unit_test(test_gemv_rows),
        cmocka_unit_test(test_false_bit_exact_claim),
        cmocka_unit_test(test_gemv_pair),
        cmocka_unit_test(test_gemm_rows),
        cmocka_unit_test(test_moe_rows),
        cmocka_unit_test(test_attn_prefill),
        cmocka_unit_test(test_attn_decode),
        cmocka_unit_test(test_attn_decode_window),
        cmocka_unit_test(test_moe_route),
        cmocka_unit_test(test_every_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) {
    tu_skip("cuda_kernels_test: built without the CUDA driver");
    return 77;
}
#endif
