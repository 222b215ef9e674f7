/* kbench: kernel micro-benchmark (not a test). Times the chosen CPU matmul row per weight
 * type on Llama-3.2-1B shapes: GEMV (n = 1, a ring of weight copies larger than the L3 so
 * weights stream from DRAM, as in decode) and GEMM (n = 512, prefill). Prints GB/s of
 * weights streamed and GOP/s (2 ops per multiply-add, int8 for the quantized types).
 * usage: kbench [-t threads] [-r reps] [-T type[,type..]] [-k row[,row..]] [-c] [-H]
 * -k: run these rows by name (cll_cpu_weight_create_row) for their types; other types keep
 *     the dispatched row. A named row this CPU or shape cannot run is an error, not a fallback.
 * -c: with -t 1, time with the thread's CPU clock (meaningful on a box shared with
 *     other jobs: time the scheduler gives to others is not counted).
 * -H: GEMV on one weight copy (hot in L2/L3): the kernel's compute ceiling, not DRAM's.
 * -N n: the GEMM token count (default 512; 64 is a short prompt's prefill).
 * -S RxC[,RxC..]: weight shapes (rows x cols, up to 4) instead of the 1B FFN pair, e.g. a
 *     Llama-2-7B layer: -S 4096x4096,11008x4096,4096x11008. */
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/threads.h"
#include "cpu/matmul.h"
#include "formats/formats.h"
#include "kernels/registry.h"

static uint64_t g_rng = 12345;
static uint64_t rnd(void) {
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static float rndf(void) { return (float)((double)(rnd() >> 11) / 9007199254740992.0 * 2 - 1); }

/* byte offsets of the fp16 scales in a block (as bench/synth.c sets them): random bytes there
 * would be NaN, Inf or denormal scales, and denormal float math is not what a model runs */
static int scale_offsets(uint32_t t, int off[2]) {
    switch (t) {
    case CLL_TYPE_Q2_K: off[0] = 80, off[1] = 82; return 2;
    case CLL_TYPE_Q3_K: off[0] = 108; return 1;
    case CLL_TYPE_Q4_K: case CLL_TYPE_Q5_K: case CLL_TYPE_Q4_1: case CLL_TYPE_Q5_1: off[0] = 0, off[1] = 2; return 2;
    case CLL_TYPE_Q6_K: off[0] = 208; return 1;
    case CLL_TYPE_F32: case CLL_TYPE_F16: case CLL_TYPE_BF16: return 0;
    default: off[0] = 0; return 1; /* d first: legacy, IQ2/IQ3/IQ4 families */
    }
}

/* weights: the first row quantized from random floats, the rest copies with shuffled
 * blocks (fast, realistic scales, no NaN bit patterns) */
static void *make_weights(uint32_t type, int64_t rows, int64_t cols) {
    const cll_type_traits *tr = cll_type_traits_get(type);
    const uint64_t rb = cll_row_bytes(type, (uint64_t)cols), nb = (uint64_t)cols / tr->blck;
    uint8_t *w = cll_aalloc(rb * (uint64_t)rows);
    float *x = malloc((size_t)cols * 4);
    for (int pass = 0; pass < 4; pass++) {
        for (int64_t k = 0; k < cols; k++) x[k] = rndf() * 0.05f;
        if (tr->from_f32) tr->from_f32(x, w + pass * rb, cols);
        else { /* no quantizer: random bytes, then small finite fp16 scales */
            int off[2];
            const int ns = scale_offsets(type, off);
            for (uint64_t i = 0; i < rb; i++) w[pass * rb + i] = (uint8_t)rnd();
            for (uint64_t b = 0; b < nb; b++)
                for (int k = 0; k < ns; k++) {
                    const uint16_t h = cll_f32_to_fp16(5e-4f * (0.5f + (float)(rnd() % 64) / 64.0f));
                    memcpy(w + pass * rb + b * tr->type_size + off[k], &h, 2);
                }
        }
    }
    for (int64_t r = 4; r < rows; r++)
        for (uint64_t b = 0; b < nb; b++)
            memcpy(w + r * rb + b * tr->type_size, w + (rnd() % 4) * rb + (rnd() % nb) * tr->type_size, tr->type_size);
    free(x);
    return w;
}

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int type_by_name(const char *s) {
    for (uint32_t t = 0; t < CLL_TYPE_COUNT; t++) {
        const cll_type_traits *tr = cll_type_traits_get(t);
        if (tr && !strcasecmp(tr->name, s)) return (int)t;
    }
    return -1;
}

#define MAX_NAMED 16

int main(int argc, char **argv) {
    int threads = 2, reps = 3, cpu_clock = 0, hot = 0, n_named = 0, n_gemm = 512, n_shapes = 2;
    int64_t shapes[4][2] = {{8192, 2048}, {2048, 8192}}; /* rows x cols: ffn up/gate, ffn down */
    const cll_kernel_row *named[MAX_NAMED];
    const char *types = "q4_0,q8_0,q4_K,q6_K,q5_K,q2_K,q3_K,iq3_s,iq4_xs,q4_1,q5_0,iq4_nl,f16";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-T") && i + 1 < argc) types = argv[++i];
        else if (!strcmp(argv[i], "-c")) cpu_clock = 1;
        else if (!strcmp(argv[i], "-N") && i + 1 < argc) n_gemm = atoi(argv[++i]) > 1 ? atoi(argv[i]) : 512;
        else if (!strcmp(argv[i], "-H")) hot = 1;
        else if (!strcmp(argv[i], "-S") && i + 1 < argc) {
            char list[256];
            snprintf(list, sizeof list, "%s", argv[++i]);
            n_shapes = 0;
            for (char *sh = strtok(list, ","); sh && n_shapes < 4; sh = strtok(NULL, ",")) {
                long long r, c;
                if (sscanf(sh, "%lldx%lld", &r, &c) != 2 || r <= 0 || c <= 0) {
                    fprintf(stderr, "-S %s: want ROWSxCOLS\n", sh);
                    return 2;
                }
                shapes[n_shapes][0] = r, shapes[n_shapes][1] = c, n_shapes++;
            }
        }
        else if (!strcmp(argv[i], "-k") && i + 1 < argc) {
            char list[512];
            snprintf(list, sizeof list, "%s", argv[++i]);
            for (char *nm = strtok(list, ","); nm; nm = strtok(NULL, ",")) {
                const cll_kernel_row *r = cll_kernels_find(cll_cpu_kernel_table(), nm);
                if (!r || n_named == MAX_NAMED) {
                    fprintf(stderr, "-k %s: %s\n", nm, r ? "too many rows" : "no such CPU kernel row (cllama kernels)");
                    return 2;
                }
                named[n_named++] = r;
            }
        }
        else {
            fprintf(stderr, "usage: kbench [-t threads] [-r reps] [-T types] [-k row] [-c] [-H] [-N gemm_tokens] [-S RxC,..]\n");
            return 2;
        }
    }
    cll_pool *pool;
    if (cll_pool_create(threads, &pool)) return 1;
    printf("threads %d, reps %d (best of reps shown)%s\n", threads, reps, cpu_clock ? ", thread CPU time" : "");
    printf("%-8s %-26s %-11s %-5s %9s %9s %9s\n", "type", "kernel", "rows x cols", "n", "ms", "GB/s", "GOP/s");
    char buf[512];
    snprintf(buf, sizeof buf, "%s", types);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int type = type_by_name(tok);
        if (type < 0) {
            fprintf(stderr, "unknown type %s\n", tok);
            continue;
        }
        const cll_kernel_row *row = NULL; /* the -k row of this type, if any */
        for (int k = 0; k < n_named && !row; k++)
            if (named[k]->wtype == (uint32_t)type) row = named[k];
        for (int s = 0; s < n_shapes; s++) {
            const int64_t rows = shapes[s][0], cols = shapes[s][1];
            const uint64_t wbytes = cll_row_bytes((uint32_t)type, (uint64_t)cols) * (uint64_t)rows;
            /* ring of copies: >= 160 MB so GEMV streams from DRAM, not the 32 MB L3 */
            int ncopy = (int)(160e6 / (double)wbytes) + 1;
            if (ncopy > 64) ncopy = 64;
            if (hot) ncopy = 1;
            void *data[64];
            cll_cpu_weight *w[64];
            data[0] = make_weights((uint32_t)type, rows, cols);
            for (int c = 0; c < ncopy; c++) {
                if (c) {
                    data[c] = cll_aalloc(wbytes);
                    memcpy(data[c], data[0], wbytes);
                }
                if (row ? cll_cpu_weight_create_row(row, rows, cols, data[c], &w[c])
                        : cll_cpu_weight_create((uint32_t)type, rows, cols, data[c], &w[c])) {
                    fprintf(stderr, "%s\n", cll_last_error());
                    return 1;
                }
            }
            const int64_t n_list[2] = {1, n_gemm};
            for (int ni = 0; ni < 2; ni++) {
                const int64_t n = n_list[ni];
                float *x = malloc((size_t)(n * cols) * 4), *y = malloc((size_t)(n * rows) * 4);
                for (int64_t k = 0; k < n * cols; k++) x[k] = rndf();
                void *scratch = malloc(cll_cpu_matmul_scratch(w[0], n));
                const int iters = n == 1 ? 4 * ncopy : (n < 256 ? 8 : 1);
                double best = 1e30;
                for (int r = 0; r < reps + 1; r++) { /* first round warms up */
                    double t0 = cpu_clock ? cpu_now() : cll_now();
                    for (int it = 0; it < iters; it++)
                        cll_cpu_matmul(pool, w[it % ncopy], x, cols, n, y, rows, scratch);
                    double dt = ((cpu_clock ? cpu_now() : cll_now()) - t0) / iters;
                    if (r && dt < best) best = dt;
                }
                printf("%-8s %-26s %5lldx%-5lld %-5lld %9.3f %9.2f %9.1f\n", tok,
                       n == 1 ? cll_cpu_weight_gemv_kernel(w[0]) : cll_cpu_weight_kernel(w[0]), (long long)rows,
                       (long long)cols, (long long)n, best * 1e3, (double)wbytes / best / 1e9,
                       2.0 * (double)rows * (double)cols * (double)n / best / 1e9);
                fflush(stdout);
                free(x);
                free(y);
                free(scratch);
            }
            for (int c = 0; c < ncopy; c++) {
                cll_cpu_weight_free(w[c]);
                cll_afree(data[c]);
            }
        }
    }
    cll_pool_free(pool);
    return 0;
}
