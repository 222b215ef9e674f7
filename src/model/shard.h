/* model/shard: how a model splits over n GPUs in tensor parallel (issue 13), derived from its
 * shape plan alone, so every driver (and the CPU simulation in tests/shard_test.c) slices alike.
 * Megatron split, per rank r of n:
 *   attention: KV heads [kv0, kv1) (n_head_kv / n each) and their query heads [q0, q1); the rows of
 *              Q, K, V of those heads (column-parallel), the columns of O for those q heads
 *              (row-parallel: partial outputs, one all-reduce after O);
 *   dense FFN: rows [f0, f1) of gate and up, the same columns of down (partial outputs, one
 *              all-reduce after down): whole blocks of down's format, as evenly as they go (Llama-2-7B's
 *              11008 = 43 blocks of 256 gives 22 and 21 over 2 ranks);
 *   MoE:       experts [e0, e1) (expert parallel: every rank routes, computes its experts' slots,
 *              one all-reduce of the weighted slot sum);
 *   output:    vocab rows [v0, v1) (a final gather, or an all-reduce of (max, argmax) for greedy).
 * A column split cuts every row of a quantized weight, so it must fall on the format's block
 * boundaries: O's columns per rank (query heads x head_dim_v) must be whole blocks, and down needs a
 * whole block a rank. cll_shard_plan says which n work and why the others do not.
 * Owns nothing. Rule: a plan either splits every site on block boundaries (the heads and experts
 * evenly) or is an error naming the site, the numbers and the valid n. */
#ifndef CLL_MODEL_SHARD_H
#define CLL_MODEL_SHARD_H

#include "model/plan.h"

typedef struct {
    int32_t n, rank;
    int32_t kv0, kv1, q0, q1; /* heads */
    int64_t f0, f1;           /* dense FFN features (gate/up rows, down columns) */
    int32_t e0, e1;           /* experts */
    int64_t v0, v1;           /* output head rows (vocab) */
} cll_shard;

/* rank's slice of the model over n ranks; CLL_ERR_UNSUPPORTED (naming the site and the valid n)
 * when n does not split it */
cll_status cll_shard_plan(const cll_plan *p, const cll_hparams *hp, int32_t n, int32_t rank, cll_shard *out);
/* the n in [1, max_n] that split the model; returns their count */
int cll_shard_valid(const cll_plan *p, const cll_hparams *hp, int32_t max_n, int32_t *out, int cap);

/* The model rank sh->rank holds: a cll_model whose hparams are the rank's own (n_head, n_head_kv,
 * n_ff, n_logits, expert0 / n_expert_here; see model.h) and whose tensors are views of m's: the
 * row slices (Q, K, V and their biases, gate, up, the experts, the output head) point into m's
 * map; the column slices (O, down), which cut every row, are copies owned by the view (model.owned_data,
 * freed by cll_model_free or cll_model_shard_drop_copies). The embedding table and the norms stay whole. m must outlive the view. */
cll_status cll_model_shard(const cll_model *m, const cll_shard *sh, cll_model **out);
/* free the view's column copies once a driver holds its own copy of every weight (the CUDA upload);
 * those tensors' data becomes NULL (their shapes stay for the driver's plan) */
void cll_model_shard_drop_copies(cll_model *v);

#endif
