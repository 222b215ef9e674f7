/* kcheck: standalone cross-check of the kernel rows a CPU offers beyond the build box
 * (the AVX-512 VNNI rows): each row, run by name on random weights, must equal its AVX2 twin
 * bit for bit (the rows declare bit_exact) and stay within 2e-5 of the scalar row.
 * Built static (no cmocka) so it runs on a machine without the dev packages.
 * Exit 0 = all checked rows agree, 1 = a mismatch, 77 = nothing to check here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/threads.h"
#include "cpu/matmul.h"
#include "formats/formats.h"
#include "kernels/registry.h"

static uint64_t g_rng = 777;
static float rndn(void) {
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    double u = ((double)(z >> 11) + 0.5) / 9007199254740992.0, v = (double)((z * 2654435761u) & 0xffffff) / 16777216.0;
    return (float)(sqrt(-2 * log(u)) * cos(6.283185307179586 * v));
}

/* run the row called `row` by name (no dispatch: it runs or the program says why) */
static void run_named(const char *row, int64_t rows, int64_t cols, const void *w, const float *x, int64_t n, float *y,
                      cll_pool *pool, char *used, size_t cap) {
    const cll_kernel_row *r = cll_kernels_find(cll_cpu_kernel_table(), row);
    cll_cpu_weight *cw;
    if (!r || cll_cpu_weight_create_row(r, rows, cols, w, &cw)) {
        fprintf(stderr, "row %s: %s\n", row, r ? cll_last_error() : "no such CPU row");
        exit(1);
    }
    snprintf(used, cap, "%s", n == 1 ? cll_cpu_weight_gemv_kernel(cw) : cll_cpu_weight_kernel(cw));
    void *scratch = malloc(cll_cpu_matmul_scratch(cw, n));
    for (int64_t i = 0; i < n * rows; i++) y[i] = NAN;
    cll_cpu_matmul(pool, cw, x, cols, n, y, rows, scratch);
    free(scratch);
    cll_cpu_weight_free(cw);
}

int main(void) {
    const cll_kernel_table *t = cll_cpu_kernel_table();
    const uint32_t feat = cll_kernels_cpu_features();
    char isa[48];
    printf("cpu features: %s\n", cll_kernels_isa_str(feat, isa, sizeof isa));
    cll_pool *pool;
    cll_pool_create(2, &pool);
    int checked = 0, bad = 0;
    const int64_t rows = 24, cols = 1024;
    for (size_t i = 0; i < t->n; i++) {
        const cll_kernel_row *r = &t->rows[i];
        if (!(r->isa & CLL_ISA_AVX512)) continue;
        if ((r->isa & feat) != r->isa) {
            printf("SKIP %s: CPU lacks it\n", r->name);
            continue;
        }
        const cll_type_traits *tr = cll_type_traits_get(r->wtype);
        char twin[96], scal[96], u1[96], u2[96], u3[96];
        snprintf(twin, sizeof twin, "matmul_%s_avx2_r8x4", tr->name);
        snprintf(scal, sizeof scal, "matmul_%s_scalar", tr->name);
        /* only the r8 family has an AVX2 twin; types without a quantizer get no random weights here */
        if (!tr->from_f32 || !cll_kernels_find(t, twin) || !cll_kernels_find(t, scal)) {
            printf("SKIP %s: no %s twin or no quantizer for %s\n", r->name, twin, tr->name);
            continue;
        }
        const int bad0 = bad;
        const uint64_t rb = cll_row_bytes(r->wtype, cols);
        uint8_t *w = malloc(rb * rows);
        float *xr = malloc(cols * sizeof *xr);
        for (int64_t k = 0; k < rows; k++) {
            for (int64_t j = 0; j < cols; j++) xr[j] = rndn() * (float)(1 + k % 3) + (k % 4 == 0 ? 0.5f : 0.f);
            tr->from_f32(xr, w + k * rb, cols);
        }
        const int64_t ns[] = {1, 3, 8, 17, 64};
        for (int ni = 0; ni < 5; ni++) {
            const int64_t n = ns[ni];
            float *x = malloc(n * cols * sizeof *x), *y1 = malloc(n * rows * 4), *y2 = malloc(n * rows * 4),
                  *y3 = malloc(n * rows * 4);
            for (int64_t k = 0; k < n * cols; k++) x[k] = rndn();
            run_named(r->name, rows, cols, w, x, n, y1, pool, u1, sizeof u1);
            run_named(twin, rows, cols, w, x, n, y2, pool, u2, sizeof u2);
            run_named(scal, rows, cols, w, x, n, y3, pool, u3, sizeof u3);
            int e_twin = memcmp(y1, y2, n * rows * 4) != 0, e_scal = 0;
            for (int64_t k = 0; k < n * rows; k++)
                if (!(fabsf(y1[k] - y3[k]) <= 2e-5f * (fabsf(y3[k]) + 1.0f))) e_scal++;
            /* a row of one op serves the other with its pair (a GEMM-only row's GEMV, ...) */
            const bool own_op = (r->op & (n == 1 ? CLL_KOP_GEMV : CLL_KOP_GEMM)) != 0;
            if ((own_op && strcmp(u1, r->name)) || e_twin || e_scal) {
                printf("FAIL %s n=%lld: used %s, twin %s %s, scalar mismatches %d\n", r->name, (long long)n, u1, u2,
                       e_twin ? "differs" : "equal", e_scal);
                bad++;
            }
            checked++;
            free(x);
            free(y1);
            free(y2);
            free(y3);
        }
        printf("%s %s (vs %s bit-exact, vs %s)\n", bad > bad0 ? "??" : "ok", r->name, twin, scal);
        free(w);
        free(xr);
    }
    cll_pool_free(pool);
    printf("%d comparisons, %d failed\n", checked, bad);
    return bad ? 1 : checked ? 0 : 77;
}
