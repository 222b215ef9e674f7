/* cli/cmd_kernels: `cllama kernels [--backend cpu|cuda] [-t TYPE]` lists the kernel rows of a
 * backend's registry table: name, op, weight type, what it needs (CPU ISA; CUDA: the device),
 * whether this machine can run it, whether it is a default, bit-exactness and its parameters.
 * The CPU table is the default; the CUDA table exists only in a build with the CUDA driver. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cpu/matmul.h"
#include "cuda/cuda.h"
#include "formats/formats.h"
#include "kernels/registry.h"

static void usage(FILE *f) { fprintf(f, "usage: cllama kernels [--backend cpu|cuda] [-t TYPE]\n"); }

static const char *op_str(uint32_t op) {
    return op == CLL_KOP_MATMUL ? "matmul" : op == CLL_KOP_GEMV ? "gemv" : op == CLL_KOP_MOE ? "moe" : "gemm";
}

/* one line per row; `here` tells whether this machine can run it (ISA or device present) */
static void print_row(const cll_kernel_row *r, const char *needs, bool here) {
    printf("%-32s %-6s %-8s %-11s %-9s %-7s %-10s %s%s\n", r->name, op_str(r->op), cll_type_name(r->wtype), needs,
           here ? "yes" : "no", r->is_default ? "yes" : "no", r->bit_exact ? "yes" : "no", r->params ? r->params : "",
           r->interleave > 1 ? " (rows % 8 == 0)" : "");
}

/* needs: "isa" (CPU rows) or "device" (CUDA rows) */
static void print_header(const char *needs) {
    printf("%-32s %-6s %-8s %-11s %-9s %-7s %-10s %s\n", "name", "op", "type", needs, "supported", "default",
           "bit-exact", "params");
}

static bool type_matches(const char *only, const cll_kernel_row *r) {
    return !only || !strcmp(only, cll_type_name(r->wtype));
}

static int list_cpu(const char *only) {
    const cll_kernel_table *t = cll_cpu_kernel_table();
    const uint32_t feat = cll_kernels_cpu_features();
    char isa[48], here[48];
    printf("cpu features: %s\n", cll_kernels_isa_str(feat, here, sizeof here));
    print_header("isa");
    for (size_t i = 0; i < t->n; i++) {
        const cll_kernel_row *r = &t->rows[i];
        if (!type_matches(only, r)) continue;
        /* "supported here" = ISA present (shape rules are printed in params) */
        print_row(r, cll_kernels_isa_str(r->isa, isa, sizeof isa), (r->isa & feat) == r->isa);
    }
    return 0;
}

static int list_cuda(const char *only) {
    const cll_kernel_table *t = cll_cuda_kernel_table();
    if (!cll_cuda_built() || !t) {
        fprintf(stderr,
                "cllama kernels: this cllama was built without the CUDA driver (no nvcc at build time), so it has no "
                "CUDA kernel rows; rebuild with the CUDA toolkit installed, or list the CPU rows (--backend cpu)\n");
        return 1;
    }
    int n_dev = 0;
    cll_cuda_device d;
    const bool dev = cll_cuda_device_count(&n_dev) == CLL_OK && n_dev > 0 && cll_cuda_device_info(0, &d) == CLL_OK;
    if (dev)
        printf("cuda device 0: %s (sm_%d%d, %d SMs)\n", d.name, d.cc_major, d.cc_minor, d.sm_count);
    else
        printf("cuda device: none visible (rows listed, none runnable here)\n");
    print_header("device");
    for (size_t i = 0; i < t->n; i++) {
        const cll_kernel_row *r = &t->rows[i];
        if (!type_matches(only, r)) continue;
        /* "supported here" = a device is visible (shape and token-count rules live in the row) */
        print_row(r, "cuda", dev);
    }
    return 0;
}

int cll_cmd_kernels(int argc, char **argv) {
    const char *only = NULL;
    cllama_backend backend = CLLAMA_BACKEND_CPU;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
            if (cll_cli_parse_backend("kernels", argv[++i], &backend)) return 2;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    return backend == CLLAMA_BACKEND_CUDA ? list_cuda(only) : list_cpu(only);
}
