/* cuda/driver_internal: the structs behind the CUDA driver's model (resident weights) and
 * state (KV cache, activations, the captured decode graph), shared by driver_model.cu (upload)
 * and driver.cu (state + forward).
 * Owns nothing beyond the declarations. Rule: only cuda/driver*.cu include this. */
#ifndef CLL_CUDA_DRIVER_INTERNAL_CUH
#define CLL_CUDA_DRIVER_INTERNAL_CUH

#include "cuda/common.cuh"
#include "cuda/matmul/matmul.cuh"
#include "cuda/ops/ops.cuh"

extern "C" {
#include "model/driver.h"
}

/* a resident product: one weight (or the parts of a fused product that could not be fused)
 * and the gemv row that serves it */
typedef struct {
    cll_cu_weight w;
    const cll_cu_gemv_impl *gemv;
    const cll_cu_gemv_impl *few; /* dense: the few-token gemv row for 2..8 tokens (a batched decode step; NULL: none) */
    const cll_cu_gemv_impl *mma; /* dense: the int8 tensor-core few-token row the pick takes from
                                  * cll_cu_mma_min_tokens on (NULL: none, a pin, or CLLAMA_CUDA_FEW_MMA=0) */
    bool mma_tile;                   /* a pin of the n9-64 class names mma: it serves 9..64 tokens */
    bool mma_tile_only;              /* ... and only those (2..8 stay on the few row) */
    const cll_cu_gemv_impl *fused; /* dense: the fused dequant-in-tile GEMM row (gemm_fused.cu) the pick
                                    * gives a batch of fused_min..fused_max tokens (NULL: none) */
    int32_t fused_min, fused_max;  /* cll_cu_fused_min_tokens(type)..CLL_CU_FUSED_MAX, or CLLAMA_CUDA_FUSED_MIN /
                                    * _MAX as they were at the load (fused_max 0: never) */
    const cll_cu_gemv_impl *moe; /* expert weights: the grouped prefill row (NULL: none) */
    cll_cu_weight w16;           /* the resident f16 prefill panel of a quantized weight (an F16
                                  * weight over the model's panel arena; d NULL: none) */
    const cll_cu_gemv_impl *moe16; /* the grouped row over w16 (experts) */
    int64_t y_off; /* output column offset of this part inside the product's output row */
} cll_cu_part;

typedef struct {
    cll_cu_part qkv[3];   /* q|k|v as one weight when the types match (n_qkv 1), else 3 */
    int n_qkv;
    cll_cu_part wo;
    cll_cu_part gu[2];    /* gate|up (dense, or per expert for MoE) as one, else 2 */
    int n_gu;
    cll_cu_part down;
    cll_cu_part router;   /* MoE: (n_expert x n_embd) */
    /* f32 device vectors; NULL when absent */
    float *attn_norm, *ffn_norm, *post_attn_norm, *post_ffn_norm; /* (n_embd) */
    float *q_norm, *k_norm;                                       /* (head_dim_k) */
    float *bq, *bk, *bv;                                          /* (n_head*hd_k), (n_kv*hd_k), (n_kv*hd_v) */
} cll_cu_layer;

struct cll_driver_model {
    const cll_model *m;
    int device;
    char dev_name[256];
    cll_cu_layer *layers; /* (n_layer) */
    cll_cu_weight tok_embd;
    cll_cu_part output;   /* shares tok_embd's bytes when tied */
    float *output_norm;   /* (n_embd) */
    float *rope_ff;       /* (n_rot/2) or NULL */
    void *arena;          /* every weight and vector, one allocation */
    size_t arena_bytes;
    uint64_t mem_limit;   /* device bytes the model and its states may take (0: what is free) */
    void *panels;         /* resident f16 prefill panels (CLLAMA_CUDA_PANELS), one allocation */
    size_t panel_bytes;
    size_t max_mat_elems; /* largest single matrix (rows*cols): gemm panel sizing */
    int64_t max_cols;     /* widest product input */
    char desc[512];
};

/* decode attention: keys per chunk of the split-K pass (grid sized for n_ctx / this) */
#define CLL_CU_ATTN_CHUNK 128
/* a run of at least this many consecutive positions of one sequence inside a batch (a prompt
 * chunk a server step carries beside decode tokens) takes the tensor-core prefill attention, which
 * reads each key tile once per 64 queries, instead of the decode kernel, which reads a token's
 * whole history per token */
#define CLL_CU_RUN_MIN 16
#define CLL_CU_MAX_SEGS 16

/* CLLAMA_CUDA_PROFILE=1: decode steps run eagerly with events around each launch, timed per
 * kind, and batch passes (prefill) are timed the same way (two tables on stderr at state free);
 * =graph: normal graph runs, the captured graph's node and
 * edge counts (programmatic edges = PDL applied) on stderr at state free. */
enum {
    CLL_PK_EMBD, CLL_PK_QKV, CLL_PK_ROPE, CLL_PK_ATTN, CLL_PK_O, CLL_PK_NORM, CLL_PK_GATE_UP, CLL_PK_ACT,
    CLL_PK_DOWN, CLL_PK_ROUTER, CLL_PK_MOE_ROUTE, CLL_PK_EXPERTS, CLL_PK_OUTPUT, CLL_PK_SOFTCAP, CLL_PK_ARGMAX,
    CLL_PK_ALLREDUCE, /* tensor parallel: the NCCL sum after o and after the FFN */
    CLL_PK_N
};
#define CLL_PROF_EVENTS 8192

typedef struct {
    int mode;             /* 0 off, 1 eager timing, 2 graph info */
    bool on;              /* timing this pass */
    cudaEvent_t *ev;      /* (CLL_PROF_EVENTS) pairs */
    uint8_t *kind;        /* (CLL_PROF_EVENTS / 2) */
    int n;                /* events recorded this pass */
    int which;            /* the pass being timed: 0 decode step, 1 batch (prefill) */
    double ms[2][CLL_PK_N];
    uint64_t calls[2][CLL_PK_N];
    uint64_t steps[2], tokens[2];
    bool warm[2];         /* the first pass of the form was seen (and dropped) */
    uint64_t last_n;      /* tokens of the pass being timed */
    size_t g_nodes, g_kernels, g_edges, g_prog; /* the captured graph */
} cll_cu_prof;

struct cll_driver_state {
    cll_driver_model *dm;
    cll_driver_state_params p;
    cudaStream_t st;
    cublasHandle_t blas;
    cll_cu_gemm_ctx gemm;
    void *arena;          /* every buffer below, one allocation */
    size_t bytes;
    int64_t kv_k, kv_v;   /* cache elements per cell: n_kv*hd_k, n_kv*hd_v */
    cll_cu_kvmap kvmap;   /* paged KV: the device block tables (blk NULL: not paged) */
    int32_t *kvblk;       /* (n_seq x kvmap.stride) the block tables, copied in when a batch's change */
    int32_t *tk_ids;      /* (n_out_max x CLL_CU_TOPK_MAX) a sampling step's candidates */
    float *tk_vals;
    /* this step's attention segments (n_seg 0: one launch over the batch): runs of >= CLL_CU_RUN_MIN
     * consecutive positions of one sequence (run: the prefill kernel) and the rows between them */
    int32_t n_seg;
    struct {
        int32_t start, n, p0, seq;
        bool run;
    } seg[CLL_CU_MAX_SEGS];
    int64_t nq, nqkv, nao, ff, ffe;
    void **kc, **vc;      /* (n_layer) host array of device pointers: (n_seq*n_ctx, kv_k|kv_v) */
    void *tmaps;          /* (n_layer x 2) the caches' K and V tensor maps (cll_cu_attn_tmaps), or NULL */
    float *x;             /* (n_batch, n_embd) residual stream */
    float *xn;            /* (n_batch, n_embd) normed block input */
    void *xq;             /* (n_batch, q8_blocks(n_embd)) its q8_1 form */
    float *qkv;           /* (n_batch, nqkv) q | k | v (q roped in place) */
    float *ao;            /* (n_batch, nao) attention output */
    void *aoq;            /* (n_batch, q8_blocks(nao)) */
    float *part;          /* (n_part) attention chunk partials */
    int64_t part_cap;     /* (token, head, chunk) partials that fit */
    int *count;           /* (n_batch, n_head) attention chunk counts (self-resetting, zeroed once) */
    float *t;             /* (n_batch, n_embd) block output */
    double *rpart;        /* (CLL_CU_EPI_MAX_BLOCKS) the fused residual tail's block partials (cll_cu_resid_epi) */
    int *rticket;         /* its last-block ticket (self-resetting, zeroed once) */
    uint32_t *rslot;      /* (n_embd) words: the polled residual tail's row slots (cll_cu_resid_epi.slot; all
                           * 0xffffffff between launches, set once) */
    cll_cu_splitk sk;     /* the split-K products' partials and tickets (self-resetting, zeroed once) */
    float *gu;            /* (max(n_batch, n_used), 2*ff_max) gate | up */
    float *act;           /* (max(n_batch, n_used), ff_max) act(gate) * up */
    void *actq;           /* its q8_1 form */
    void *actslot;        /* (ff_max) words: a one-token gate|up launch's polled activation slots
                           * (act_out.yq; all 0xffffffff between launches, set once) */
    float *router;        /* (n_batch, n_expert) */
    int32_t *sel;         /* (n_batch, n_used) */
    int32_t *lsel;        /* expert parallel: (n_batch, n_used) the slots' local expert ids (NULL: every expert here) */
    float *selw;          /* (n_batch, n_used) */
    float *moe;           /* (n_batch, n_used, n_embd) expert outputs per slot */
    int32_t *mids;        /* (n_batch * n_used) slots sorted by expert (grouped prefill) */
    int32_t *moff, *mtoff;/* (n_expert + 1) each: per-expert slot and tile offsets */
    void *mxh;            /* (n_batch * n_used, max(n_embd, n_ff_exp)) f16: the slots' rows, sorted */
    size_t mxh_bytes;
    float *xo;            /* (n_out_max, n_embd) rows that want logits */
    void *xoq;            /* (n_out_max, q8_blocks(n_embd)) their q8_1 form (gathered from xq) */
    float *logits;        /* (n_out_max, n_vocab) */
    unsigned long long *keys; /* (n_out_max) argmax keys */
    unsigned long long *amax_part; /* (n_out_max, argmax blocks) per-block keys */
    int *amax_count;      /* (n_out_max) argmax blocks landed (self-resetting, zeroed once) */
    int32_t *io;          /* (3*n_batch + n_out_max) tokens | pos | seq | want rows, per forward */
    int32_t *hio;         /* pinned staging of io */
    unsigned long long *hkeys; /* pinned (n_out_max) */
    cudaGraph_t graph;
    cudaGraphExec_t exec; /* the decode step, captured when the state is created (not for a profiled state
                           * or a simulated-split rank: they run eagerly) */
    /* batched decode steps (2..CLL_CU_GRAPH_MAX_TOKENS tokens of several sequences, no contiguous prefill):
     * one graph per token count, captured when a (count, n_want, rows_distinct) repeats; failed: run eagerly */
    struct {
        cudaGraphExec_t exec;
        int32_t key;         /* 2 x the output rows + rows_distinct exec was captured with */
        int32_t pending_key; /* the key of the last eager step of this count (captured if it repeats) */
        bool failed;
    } batch_graph[CLL_CU_GRAPH_MAX_TOKENS + 1];
    bool pf_contig;       /* this forward's rows: positions pf_p0.. of sequence pf_seq */
    bool fused_xh;        /* the norm / activation kernels write the fused rows' f16 X (CLLAMA_CUDA_FUSED_XH) */
    int32_t gemm_pad;     /* a cuBLAS product's token count rounds up to a multiple of this (CLLAMA_CUDA_GEMM_PAD) */
    bool rows_distinct;   /* this forward's rows (2..CLL_CU_GRAPH_MAX_TOKENS) each in a sequence of its own:
                           * the attention ropes and stores them itself (cll_cu_attn_args.distinct_rows) */
    int32_t pf_p0, pf_seq;
    cudaEvent_t fwd_ev[2]; /* around each forward's device work (cll_driver_counters.device_seconds) */
    cll_driver_counters c;
    cll_cu_prof prof;
};

/* model upload (driver_model.cu) */
cll_status cll_cu_model_create(const cll_model *m, const cll_driver_model_params *p, cll_driver_model **out);
void cll_cu_model_free(cll_driver_model *dm);

#endif
