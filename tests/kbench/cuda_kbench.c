/* cuda_kbench: the CUDA gemv rows on the decode shapes of 7B-class models (not a test).
 * Every row is gated first (cuda/gate.h, at 256 rows x the shape's cols); a row that fails its
 * gate is reported and never timed. Timing: cll_cuda_bench_row_us (CUDA events, a >= 256 MB ring
 * of weight copies so weights stream from HBM, >= 150 ms warm-up). Prints per row and shape:
 * microseconds per product, GB/s of weight bytes, % of the H200's 4300 GB/s (the target is 75%);
 * at the end one "summary" line per row: min and avg % of peak over the shapes it ran.
 * usage: cuda_kbench [-r reps] [-T type[,type..]] [-k part-of-row-name] [-s RxC] [-n nb] [-G (skip gates)]
 *        cuda_kbench -A [split|stream|tc|tma|tmatk] [-L layers] [-K keys,..] [-r reps]: the decode attention (in that form, tc the streaming kernel's
 *        tensor-core body, tma that body fed by the TMA engine; default by n_ctx) instead (cll_cuda_bench_attn_us: fused rope, F16
 *        cache, 32 layers' caches in one replayed graph) on the l2-7b / l3-8b / q3moe head shapes at
 *        128, 256, 1024, 8192 and 8193 keys (8193: the first step of tg128 @ d8192, whose window is not
 *        whole tiles), the grid chunked as a step of that context is: us per launch and
 *        the K/V bytes it reads per second
 *        cuda_kbench -P [-L layers] [-S stages] [-D flags] [-B blocks an SM] [-H tiles] [-r reps]: the persistent-chain
 *        probe (-D: cll_cuda_bench_chain_us's flags, cuda/gate.h: 1 no dots, 2 no barriers, 4 no products, 8 a copy a row,
 *        16 cp.async producer, 64 half tiles, 128 no norm / activation / staging; -H L2 prefetch tiles ahead) (cll_cuda_bench_chain_us:
 *        a 7B stack's four products a layer as one persistent kernel, Q4_0): checked against per-op kernels, then us a layer
 * Exit: 0 all gates passed, 1 a gate failed, 77 no CUDA build or device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda.h"
#include "cuda/gate.h"
#include "cuda/pick.h"
#include "formats/formats.h"
#include "kernels/registry.h"

#ifndef CLLAMA_HAVE_CUDA
int main(void) {
    printf("SKIP: cuda_kbench: built without the CUDA driver\n");
    return 77;
}
#else
#define PEAK_GBPS 4300.0

static const struct { int64_t rows, cols; const char *what; } k_shapes[] = {
    {4096, 4096, "7B attn_o / q"},   {12288, 4096, "7B q|k|v"},     {22016, 4096, "7B gate|up"},
    {4096, 11008, "7B ffn_down"},   {32000, 4096, "7B output"},   {14336, 4096, "l3-8B gate / up"},
    {4096, 14336, "l3-8B ffn_down"}, {128256, 4096, "l3-8B output"},
};

static int g_attn_form = CLL_CU_ATTN_AUTO; /* -A split|stream|tc: that form (cuda/pick.h cll_cu_attn_form) */
/* -A -L N: N layers' caches in the replayed graph (default 32: past L2; 1 at <= 2048 keys keeps one layer's
 * K/V in L2, so the kernel's own rate shows without DRAM's bound); -K a,b,..: these key counts only */
static int g_attn_layers = 32;
static int g_attn_lens[16], g_attn_n_lens;

/* -A: the decode attention on the anchor models' head shapes; per shape one row per live-chunk cap:
 * every chunk of the grid (the default), then about 2, 4 and 8 blocks an SM (cll_cu_attn_active_chunks,
 * CLLAMA_CUDA_ATTN_PER_SM) where that caps the chunks */
static int bench_attention(int reps) {
    static const struct { int hd, n_head, n_kv; const char *what; } heads[] = {
        {128, 32, 32, "l2-7b (MHA)"}, {128, 32, 8, "l3-8b (GQA 4)"}, {128, 32, 4, "q3moe (GQA 8)"}};
    /* 8193: a step at depth reads a window one key past a power of two (8193 .. 8320 keys in tg128 @ d8192);
     * whole-tile windows alone hid how its chunks' partial tiles were cut (cll_cu_attn_chunk_span) */
    static const int dflt_lens[] = {128, 256, 1024, 8192, 8193}, per_sm[] = {0, 2, 4, 8};
    const int *lens = g_attn_n_lens ? g_attn_lens : dflt_lens;
    const size_t n_lens = g_attn_n_lens ? (size_t)g_attn_n_lens : sizeof dflt_lens / sizeof dflt_lens[0];
    cll_cuda_device dv;
    const int n_sm = cll_cuda_device_info(0, &dv) == CLL_OK ? dv.sm_count : 0;
    int failed = 0;
    printf("%-16s %7s %7s %7s %6s %10s %9s\n", "heads", "keys", "n_ctx", "chunks", "live", "us", "KV GB/s");
    for (size_t h = 0; h < sizeof heads / sizeof heads[0]; h++)
        for (size_t l = 0; l < n_lens; l++) {
            const int len = lens[l], n_ctx = len + 128, chunks = (n_ctx + 127) / 128; /* a step's grid (CLL_CU_ATTN_CHUNK) */
            const int G = heads[h].n_head / heads[h].n_kv;
            const int hg = cll_cu_attn_heads_per_block(heads[h].n_head, heads[h].n_kv, chunks, 1, CLL_CU_ATTN_MIN_BLOCKS);
            const int64_t per_chunk = (int64_t)heads[h].n_kv * ((G + hg - 1) / hg);
            int last = -1;
            for (size_t p = 0; p < sizeof per_sm / sizeof per_sm[0]; p++) {
                /* 0: the kernel's own default (split: every chunk; stream: about 2 blocks an SM) */
                const int act = per_sm[p] ? cll_cu_attn_active_chunks(chunks, per_chunk, n_sm, per_sm[p]) : 0;
                if (act && act == last) continue; /* the same launch as the row above */
                last = act;
                double us = 0;
                if (cll_cuda_bench_attn_us(heads[h].hd, heads[h].n_head, heads[h].n_kv, len, n_ctx, chunks, act, g_attn_form,
                                           g_attn_layers, reps, &us) != CLL_OK) {
                    printf("%-16s %7d bench error: %s\n", heads[h].what, len, cll_last_error());
                    failed++;
                    continue;
                }
                const double kv = 2.0 * len * heads[h].n_kv * heads[h].hd * 2.0; /* K and V, f16 */
                char live[16] = "dflt";
                if (act) snprintf(live, sizeof live, "%d", act);
                printf("%-16s %7d %7d %7d %6s %10.2f %9.1f\n", heads[h].what, len, n_ctx, chunks, live, us, kv / (us * 1e3));
                fflush(stdout);
            }
        }
    return failed ? 1 : 0;
}

static bool type_listed(const char *list, uint32_t t) {
    if (!list) return true;
    const char *name = cll_type_name(t);
    const size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return true;
    return false;
}

int main(int argc, char **argv) {
    int reps = 20, nb = 1;
    bool gates = true, attn = false, chain = false;
    int stages = 6, parts = 0, bpsm = 1, l2ahead = 0;
    const char *types = NULL, *only = NULL;
    int64_t s_rows = 0, s_cols = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-T") && i + 1 < argc) types = argv[++i];
        else if (!strcmp(argv[i], "-k") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) nb = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-G")) gates = false;
        else if (!strcmp(argv[i], "-A")) {
            attn = true;
            if (i + 1 < argc && !strcmp(argv[i + 1], "split")) g_attn_form = CLL_CU_ATTN_SPLIT, i++;
            else if (i + 1 < argc && !strcmp(argv[i + 1], "stream")) g_attn_form = CLL_CU_ATTN_STREAM, i++;
            else if (i + 1 < argc && !strcmp(argv[i + 1], "tc")) g_attn_form = CLL_CU_ATTN_STREAM_TC, i++;
            else if (i + 1 < argc && !strcmp(argv[i + 1], "tma")) g_attn_form = CLL_CU_ATTN_STREAM_TMA, i++;
            else if (i + 1 < argc && !strcmp(argv[i + 1], "tmatk")) g_attn_form = CLL_CU_ATTN_STREAM_TMA_TK, i++;
        }
        else if (!strcmp(argv[i], "-L") && i + 1 < argc) g_attn_layers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-P")) chain = true;
        else if (!strcmp(argv[i], "-D") && i + 1 < argc) parts = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-S") && i + 1 < argc) stages = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-B") && i + 1 < argc) bpsm = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-H") && i + 1 < argc) l2ahead = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-K") && i + 1 < argc) {
            g_attn_n_lens = 0;
            for (char *p = argv[++i], *e; *p && g_attn_n_lens < 16; p = *e ? e + 1 : e) {
                const long v = strtol(p, &e, 10);
                if (e == p || v < 1 || v > 1 << 20 || (*e && *e != ',')) {
                    fprintf(stderr, "cuda_kbench: -K takes key counts like 1024,8192\n");
                    return 2;
                }
                g_attn_lens[g_attn_n_lens++] = (int)v;
            }
        } else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            long long r, c;
            if (sscanf(argv[++i], "%lldx%lld", &r, &c) == 2) s_rows = r, s_cols = c;
        } else {
            fprintf(stderr, "usage: %s [-r reps] [-T type[,type..]] [-k row] [-s RxC] [-n nb] [-G] | -A [form] [-L layers] [-K keys,..] [-r reps] | -P [-L layers] [-S stages] [-B blocks an SM] [-H tiles] [-D parts] [-r reps]\n", argv[0]);
            return 2;
        }
    }
    if (!cll_cuda_built()) {
        printf("SKIP: cuda_kbench: built without the CUDA driver\n");
        return 77;
    }
    int ndev = 0;
    if (cll_cuda_device_count(&ndev) != CLL_OK || ndev == 0) {
        printf("SKIP: cuda_kbench: no CUDA device\n");
        return 77;
    }
    cll_cuda_device dev;
    if (cll_cuda_device_info(0, &dev) == CLL_OK)
        printf("device: %s, %d SMs, cc %d.%d, mem clock %d kHz x %d bit\n", dev.name, dev.sm_count, dev.cc_major,
               dev.cc_minor, dev.mem_clock_khz, dev.mem_bus_bits);
    if (attn) return bench_attention(reps);
    if (chain) { /* -P: the persistent-chain probe (cll_cuda_bench_chain_us): -L layers (default 32), -S stages */
        double us = 0, gbps = 0, err = 0;
        const int layers = g_attn_layers;
        if (cll_cuda_bench_chain_us(layers, stages, parts, bpsm, l2ahead, reps, &us, &gbps, &err) != CLL_OK) {
            printf("chain probe error: %s\n", cll_last_error());
            return 1;
        }
        printf("chain probe: %d layers, %d stages, %d blocks an SM, L2 %d tiles ahead, parts %d%s: check %.2e (max |diff| / max |ref|, 2 layers) %s; %.2f us a layer, "
               "%.1f GB/s (%.1f%% of %.0f)\n",
               layers, stages, bpsm, l2ahead, parts, (parts & 7) == 4 ? " (barriers only)" : (parts & 7) == 3 ? " (stream only)" : (parts & 7) == 1 ? " (no dots)" : (parts & 7) == 2 ? " (no barriers)" : "", err, err < 1e-2 ? "ok" : "FAILED", us, gbps, 100.0 * gbps / PEAK_GBPS, PEAK_GBPS);
        return err < 1e-2 ? 0 : 1;
    }
    const cll_kernel_table *t = cll_cuda_kernel_table();
    if (!t) return 77;
    int failed = 0;
    /* per row: min / avg % of peak over the shapes it ran (the summary lines at the end) */
    enum { MAX_SUM = 128 };
    static struct { const char *name; double min, sum; int n, bad; } sum[MAX_SUM];
    int n_sum = 0;
    printf("%-26s %-16s %14s %10s %9s %7s\n", "row", "shape", "", "us", "GB/s", "%peak");
    for (size_t i = 0; i < t->n; i++) {
        const cll_kernel_row *row = &t->rows[i];
        if (!(row->op & CLL_KOP_GEMV) || !type_listed(types, row->wtype)) continue;
        if (only && !strstr(row->name, only)) continue; /* -k: a part of the row name */
        const size_t nsh = s_rows ? 1 : sizeof k_shapes / sizeof k_shapes[0];
        const int si = n_sum < MAX_SUM ? n_sum++ : MAX_SUM - 1;
        sum[si].name = row->name;
        sum[si].min = 1e30;
        sum[si].sum = 0;
        sum[si].n = sum[si].bad = 0;
        for (size_t s = 0; s < nsh; s++) {
            const int64_t rows = s_rows ? s_rows : k_shapes[s].rows, cols = s_rows ? s_cols : k_shapes[s].cols;
            const char *what = s_rows ? "" : k_shapes[s].what;
            const int64_t blck = cll_type_traits_get(row->wtype)->blck;
            if (cols % blck) continue;
            if (gates) {
                cll_cuda_gate_report rep;
                if (cll_cuda_gate_row(row, 256, cols, nb, 7 + s, &rep) != CLL_OK) {
                    printf("%-26s %6lldx%-9lld gate FAILED: %s\n", row->name, (long long)rows, (long long)cols,
                           cll_last_error());
                    failed++;
                    sum[si].bad++;
                    continue;
                }
            }
            double gbps = 0, us = 0;
            if (cll_cuda_bench_row_us(row, rows, cols, nb, reps, &gbps, &us) != CLL_OK) {
                printf("%-26s %6lldx%-9lld bench error: %s\n", row->name, (long long)rows, (long long)cols, cll_last_error());
                failed++;
                continue;
            }
            printf("%-26s %6lldx%-9lld %14s %10.2f %9.1f %6.1f%%\n", row->name, (long long)rows, (long long)cols, what, us,
                   gbps, 100.0 * gbps / PEAK_GBPS);
            fflush(stdout);
            const double pct = 100.0 * gbps / PEAK_GBPS;
            if (pct < sum[si].min) sum[si].min = pct;
            sum[si].sum += pct;
            sum[si].n++;
        }
    }
    printf("\nsummary (%% of %.0f GB/s over the shapes above, nb=%d)\n", PEAK_GBPS, nb);
    for (int i = 0; i < n_sum; i++) {
        if (!sum[i].n && !sum[i].bad) continue;
        if (sum[i].n)
            printf("summary %-30s min %5.1f%%  avg %5.1f%%  shapes %d%s\n", sum[i].name, sum[i].min, sum[i].sum / sum[i].n,
                   sum[i].n, sum[i].bad ? "  GATE FAILED on some" : "");
        else
            printf("summary %-30s GATE FAILED\n", sum[i].name);
    }
    return failed ? 1 : 0;
}
#endif
