/* cpu/kern_lowq_tables: byte-plane copies of the IQ3_S grid for the VBMI decoder
 * (kern_lowq_avx512.c): plane j holds byte j of every one of the 512 grid entries, so 64
 * indices look up one byte each with vpermi2b. Built once at load from formats' grid (plain
 * C: this file gets no ISA flags, so it runs on every CPU). */
#include "cpu/kern_common.h"
#include "formats/iq_tables.h"

_Alignas(64) uint8_t cll_kern_iq3s_planes[4][512];

__attribute__((constructor)) static void build_planes(void) {
    for (int i = 0; i < 512; i++)
        for (int j = 0; j < 4; j++) cll_kern_iq3s_planes[j][i] = (uint8_t)(cll_iq3s_grid[i] >> (8 * j));
}
