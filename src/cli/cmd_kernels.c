/* cli/cmd_kernels: `cllama kernels` lists every CPU kernel row: name, op, weight type,
 * ISA, whether this CPU can run it, whether it is a default, and its parameters. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cpu/matmul.h"
#include "formats/formats.h"
#include "kernels/registry.h"

int cll_cmd_kernels(int argc, char **argv) {
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) only = argv[++i];
        else {
            fprintf(stderr, "usage: cllama kernels [-t TYPE]\n");
            return 2;
        }
    }
    const cll_kernel_table *t = cll_cpu_kernel_table();
    const uint32_t feat = cll_kernels_cpu_features();
    char isa[48], here[48];
    printf("cpu features: %s\n", cll_kernels_isa_str(feat, here, sizeof here));
    printf("%-32s %-6s %-8s %-11s %-9s %-7s %-10s %s\n", "name", "op", "type", "isa", "supported", "default",
           "bit-exact", "params");
    for (size_t i = 0; i < t->n; i++) {
        const cll_kernel_row *r = &t->rows[i];
        if (only && strcmp(only, cll_type_name(r->wtype))) continue;
        /* "supported here" = ISA present (shape rules are printed in params) */
        const bool sup = (r->isa & feat) == r->isa;
        const char *op = r->op == CLL_KOP_MATMUL ? "matmul" : r->op == CLL_KOP_GEMV ? "gemv" : "gemm";
        printf("%-32s %-6s %-8s %-11s %-9s %-7s %-10s %s%s\n", r->name, op, cll_type_name(r->wtype),
               cll_kernels_isa_str(r->isa, isa, sizeof isa), sup ? "yes" : "no", r->is_default ? "yes" : "no",
               r->bit_exact ? "yes" : "no", r->params, r->interleave > 1 ? " (rows % 8 == 0)" : "");
    }
    return 0;
}
