/* model/kvpage: a paged KV cache's bookkeeping, shared by every sequence of a context: a pool of
 * n_blocks blocks of block_cells cells each, a block table per sequence, and prefix reuse by
 * whole blocks (what batched GPU serving needs so 64 sequences of different lengths fit without
 * reserving n_ctx cells each; issue 11).
 *   cell of (seq, pos) = table(seq)[pos / B] * B + pos % B   (B = block_cells)
 *   - a sequence's cells are reserved block by block (cll_kvpage_reserve); when the free list is
 *     empty, the least recently released cached block is evicted; when nothing can be evicted
 *     the reservation fails with CLL_ERR_KV_FULL and changes nothing (the server answers 503);
 *   - the tokens whose K/V a sequence has stored are committed (cll_kvpage_commit); every block
 *     that becomes full gets a chain hash (its tokens and every token before it) and is findable;
 *   - a new sequence adopts the longest chain of full cached or live blocks matching its prompt
 *     (cll_kvpage_adopt): those blocks are shared (reference counts), never written again (only
 *     full blocks are shared; a sequence writes only past its adopted prefix, into private blocks);
 *   - a released sequence's full blocks stay cached (LRU) until evicted; partial ones are freed.
 * Host-side only: the device copy of the tables is the driver's business.
 * Owns: the pool's tables (cll_kvpage_free). Rule: a block is written by at most one sequence
 * (its owner, refcount 1, not full); tokens are compared, not only hashed, before a block is
 * shared. */
#ifndef CLL_MODEL_KVPAGE_H
#define CLL_MODEL_KVPAGE_H

#include <stdint.h>

#include "core/core.h"

typedef struct cll_kvpage cll_kvpage;

typedef struct {
    int32_t n_blocks, block_cells;
    int32_t free_blocks;   /* on the free list */
    int32_t cached_blocks; /* full, unreferenced, findable (evictable) */
    int32_t live_blocks;   /* referenced by a sequence */
    int64_t evictions, reused_blocks;
} cll_kvpage_stats;

/* n_blocks x block_cells cells for up to max_seqs sequences of up to max_cells cells each */
cll_status cll_kvpage_create(int32_t n_blocks, int32_t block_cells, int32_t max_seqs, int32_t max_cells,
                             cll_kvpage **out);
void cll_kvpage_free(cll_kvpage *p);

/* make sequence seq hold at least n_cells cells; all or nothing (CLL_ERR_KV_FULL: pool full;
 * CLL_ERR_RANGE: over max_cells) */
cll_status cll_kvpage_reserve(cll_kvpage *p, int32_t seq, int32_t n_cells);
/* record the tokens of cells [committed, committed + n) of seq (their K/V are stored); returns
 * CLL_ERR_RANGE past the reserved cells */
cll_status cll_kvpage_commit(cll_kvpage *p, int32_t seq, const int32_t *tokens, int32_t n);
/* an empty sequence takes the longest run of full blocks matching tokens[0, n) (whole blocks,
 * at most n - 1 tokens so the last prompt token is always computed); returns the cells adopted
 * (their K/V are valid), committed already */
int32_t cll_kvpage_adopt(cll_kvpage *p, int32_t seq, const int32_t *tokens, int32_t n);
/* the sequence keeps its first n_cells cells (a server slot reusing its own prefix): blocks past
 * them are released; the block it goes on writing in loses its hash (it will be rewritten), and is
 * given up too when another sequence shares it. Returns the cells kept (n_cells, or the whole blocks
 * before a shared one; the current count when n_cells is not below it) */
int32_t cll_kvpage_truncate(cll_kvpage *p, int32_t seq, int32_t n_cells);
/* what cll_kvpage_adopt would give an empty sequence for tokens[0, n), changing nothing */
int32_t cll_kvpage_probe(const cll_kvpage *p, const int32_t *tokens, int32_t n);
/* the sequence ends: its blocks are released (full ones stay cached, others freed) */
void cll_kvpage_release(cll_kvpage *p, int32_t seq);

int32_t cll_kvpage_n_cells(const cll_kvpage *p, int32_t seq);     /* reserved */
int32_t cll_kvpage_committed(const cll_kvpage *p, int32_t seq);   /* cells with recorded tokens */
const int32_t *cll_kvpage_table(const cll_kvpage *p, int32_t seq, int32_t *n_blocks);
/* the cell of (seq, pos); -1 past the reserved cells */
int64_t cll_kvpage_cell(const cll_kvpage *p, int32_t seq, int32_t pos);
void cll_kvpage_get_stats(const cll_kvpage *p, cll_kvpage_stats *st);

#endif
