/* cuda_test: the CUDA boundary — probe and self-test on every visible device; SKIP
 * (visibly) when this build has no CUDA driver or the machine has no GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cllama.h"
#include "cuda/cuda.h"
#include "testutil.h"

static void test_devices(void **state) {
    (void)state;
    int n = -1;
    assert_int_equal(cll_cuda_device_count(&n), CLL_OK);
    assert_true(n >= 1);
    for (int d = 0; d < n; d++) {
        cll_cuda_device info;
        assert_int_equal(cll_cuda_device_info(d, &info), CLL_OK);
        printf("device %d: %s, %d SMs, cc %d.%d, %.1f GiB, driver %d\n", d, info.name, info.sm_count, info.cc_major,
               info.cc_minor, (double)info.mem_bytes / (1 << 30), info.driver_version);
        assert_true(info.sm_count > 0);
        assert_true(info.mem_bytes > 0);
        assert_int_equal(cll_cuda_selftest(d), CLL_OK);
    }
}

/* a model that does not fit fails at load with both sizes in the message, and the process goes
 * on (the same model then loads without the cap); a bad cap value is an argument error */
static void test_does_not_fit(void **state) {
    (void)state;
    const char *path = tu_shared("models/stories260K.gguf");
    cllama_model_params mp = cllama_model_default_params();
    mp.backend = CLLAMA_BACKEND_CUDA;
    cllama_model *m = NULL;
    setenv("CLLAMA_CUDA_MEM_LIMIT_MB", "0.25", 1);
    assert_int_equal(cllama_model_load(path, &mp, &m), CLLAMA_ERR_NOMEM);
    assert_null(m);
    printf("capped load: %s\n", cllama_last_error());
    assert_non_null(strstr(cllama_last_error(), "MiB are free"));
    setenv("CLLAMA_CUDA_MEM_LIMIT_MB", "lots", 1);
    assert_int_equal(cllama_model_load(path, &mp, &m), CLLAMA_ERR_ARG);
    unsetenv("CLLAMA_CUDA_MEM_LIMIT_MB");
    assert_int_equal(cllama_model_load(path, &mp, &m), CLLAMA_OK);
    assert_int_equal(cllama_model_backend(m), CLLAMA_BACKEND_CUDA);
    mp.device = 99; /* no such device: a clear error, not a crash */
    cllama_model *m2 = NULL;
    assert_int_not_equal(cllama_model_load(path, &mp, &m2), CLLAMA_OK);
    assert_null(m2);
    printf("device 99: %s\n", cllama_last_error());
    cllama_model_free(m);
}

/* a CUDA context hands its logits back in page-locked memory (the 32-sequence step's 4 MB copy is
 * one DMA, not the runtime's staged pageable copy), and they are the CPU driver's logits within
 * the GPU tolerance: every row of a 3-sequence step, next to the same step on the CPU */
static void decode_step_logits(cllama_backend be, float *out, int n_vocab, bool *pinned) {
    cllama_model_params mp = cllama_model_default_params();
    mp.backend = be;
    cllama_model *m = NULL;
    assert_int_equal(cllama_model_load(tu_shared("models/stories260K.gguf"), &mp, &m), CLLAMA_OK);
    assert_int_equal(cllama_model_n_vocab(m), n_vocab);
    cllama_context_params cp = cllama_context_default_params();
    cp.n_ctx = 64, cp.n_seq_max = 3, cp.n_threads = 1;
    cllama_context *c = NULL;
    assert_int_equal(cllama_context_create(m, &cp, &c), CLLAMA_OK);
    cllama_token tok[6] = {1, 403, 1, 81, 1, 35};
    int32_t pos[6] = {0, 1, 0, 1, 0, 1}, seq[6] = {0, 0, 1, 1, 2, 2};
    int8_t lg[6] = {0, 1, 0, 1, 0, 1};
    cllama_batch b = {6, tok, pos, seq, lg};
    assert_int_equal(cllama_decode(c, &b), CLLAMA_OK);
    for (int i = 0; i < 3; i++) {
        const float *l = cllama_get_logits(c, 2 * i + 1);
        assert_non_null(l);
        memcpy(out + (size_t)i * n_vocab, l, sizeof(float) * (size_t)n_vocab);
        if (i == 0) *pinned = cll_cuda_host_pinned(l);
    }
    cllama_context_free(c);
    cllama_model_free(m);
}

static void test_logits_pinned(void **state) {
    (void)state;
    const int V = 512; /* stories260K */
    float *gpu = malloc(sizeof(float) * 3 * V), *cpu = malloc(sizeof(float) * 3 * V);
    assert_non_null(gpu);
    assert_non_null(cpu);
    bool pg = false, pc = true;
    decode_step_logits(CLLAMA_BACKEND_CUDA, gpu, V, &pg);
    decode_step_logits(CLLAMA_BACKEND_CPU, cpu, V, &pc);
    assert_true(pg);  /* the CUDA context's rows: page-locked */
    assert_false(pc); /* the CPU context's: plain memory (the check tells them apart) */
    double worst = 0;
    for (int i = 0; i < 3 * V; i++) {
        const double d = fabs((double)gpu[i] - cpu[i]);
        worst = d > worst ? d : worst;
    }
    printf("logits: worst |gpu - cpu| %.3g over 3 rows\n", worst);
    assert_true(worst < 0.05);
    free(gpu), free(cpu);
}

/* cllama_context_prepare captures the step graphs of 2..n batched decode steps up front: a
 * server's first 3-sequence decode step then replays its graph (no capture, no eager run) and hands
 * back the same logits, bit for bit, as the same step run eagerly in a context that was not prepared
 * (the graph holds the same kernels); paged KV, as a server runs it. A second call captures nothing. */
static void batched_step(bool prepare, float *out, int n_vocab) {
    cllama_model_params mp = cllama_model_default_params();
    mp.backend = CLLAMA_BACKEND_CUDA;
    cllama_model *m = NULL;
    assert_int_equal(cllama_model_load(tu_shared("models/stories260K.gguf"), &mp, &m), CLLAMA_OK);
    cllama_context_params cp = cllama_context_default_params();
    cp.n_ctx = 64, cp.n_seq_max = 4, cp.n_threads = 1, cp.n_kv_cells = 256;
    cllama_context *c = NULL;
    assert_int_equal(cllama_context_create(m, &cp, &c), CLLAMA_OK);
    cllama_counters k0, k1, k2;
    assert_int_equal(cllama_context_counters(c, &k0), CLLAMA_OK);
    if (prepare) {
        assert_int_equal(cllama_context_prepare(c, 4, 48), CLLAMA_OK); /* and prompt passes of 33 and 48 */
        assert_int_equal(cllama_context_counters(c, &k1), CLLAMA_OK);
        assert_int_equal(k1.graph_captures - k0.graph_captures, 3); /* 2, 3 and 4 sequences */
        assert_true(k1.capture_seconds > k0.capture_seconds);
        assert_int_equal(cllama_context_prepare(c, 4, 0), CLLAMA_OK);
        assert_int_equal(cllama_context_counters(c, &k0), CLLAMA_OK);
        assert_int_equal(k0.graph_captures, k1.graph_captures); /* held: nothing captured again */
    }
    cllama_token tok[6] = {1, 403, 1, 81, 1, 35};
    int32_t pos[6] = {0, 1, 0, 1, 0, 1}, seq[6] = {0, 0, 1, 1, 2, 2};
    int8_t lg[6] = {0, 1, 0, 1, 0, 1};
    cllama_batch b = {6, tok, pos, seq, lg};
    assert_int_equal(cllama_decode(c, &b), CLLAMA_OK);
    cllama_token t2[3] = {17, 93, 250};
    int32_t p2[3] = {2, 2, 2}, s2[3] = {0, 1, 2};
    int8_t l2[3] = {1, 1, 1};
    cllama_batch b2 = {3, t2, p2, s2, l2};
    assert_int_equal(cllama_context_counters(c, &k1), CLLAMA_OK);
    assert_int_equal(cllama_decode(c, &b2), CLLAMA_OK);
    assert_int_equal(cllama_context_counters(c, &k2), CLLAMA_OK);
    assert_int_equal(k2.graph_captures, k1.graph_captures);                 /* no capture inside the step */
    assert_int_equal(k2.graph_replays - k1.graph_replays, prepare ? 1 : 0); /* prepared: its graph ran */
    for (int i = 0; i < 3; i++) {
        const float *l = cllama_get_logits(c, i);
        assert_non_null(l);
        memcpy(out + (size_t)i * n_vocab, l, sizeof(float) * (size_t)n_vocab);
    }
    cllama_context_free(c);
    cllama_model_free(m);
}

static void test_prepare_batches(void **state) {
    (void)state;
    const int V = 512;
    float *a = malloc(sizeof(float) * 3 * V), *e = malloc(sizeof(float) * 3 * V);
    assert_non_null(a);
    assert_non_null(e);
    batched_step(true, a, V);
    batched_step(false, e, V);
    assert_memory_equal(a, e, sizeof(float) * 3 * V);
    free(a), free(e);
}

/* a prompt pass whose token count is not a multiple of the pad (100 -> 112, the output head's 100 rows
 * -> 112 as well) runs its cuBLAS products over the padded columns: every real row's logits agree with
 * the same pass unpadded (CLLAMA_CUDA_GEMM_PAD=1, read at each context creation) within the GPU's
 * rounding (cuBLAS may pick another kernel per shape), and a second padded context gives the same bits.
 * A Q4_0 file: its products above the fused rows' 32 tokens run on the resident f16 panels. */
static void prompt_logits(cllama_model *m, const char *pad, int n, int V, float *out) {
    setenv("CLLAMA_CUDA_GEMM_PAD", pad, 1);
    cllama_context_params cp = cllama_context_default_params();
    cp.n_ctx = 256, cp.n_batch = 128, cp.n_threads = 1;
    cllama_context *c = NULL;
    assert_int_equal(cllama_context_create(m, &cp, &c), CLLAMA_OK);
    unsetenv("CLLAMA_CUDA_GEMM_PAD");
    cllama_token *tok = malloc(sizeof *tok * (size_t)n);
    int32_t *pos = malloc(sizeof *pos * (size_t)n), *seq = calloc((size_t)n, sizeof *seq);
    int8_t *lg = malloc((size_t)n);
    assert_non_null(tok), assert_non_null(pos), assert_non_null(seq), assert_non_null(lg);
    for (int i = 0; i < n; i++) tok[i] = (cllama_token)((i * 7919 + 13) % V), pos[i] = i, lg[i] = 1;
    cllama_batch b = {n, tok, pos, seq, lg};
    assert_int_equal(cllama_decode(c, &b), CLLAMA_OK);
    for (int i = 0; i < n; i++) {
        const float *l = cllama_get_logits(c, i);
        assert_non_null(l);
        memcpy(out + (size_t)i * V, l, sizeof(float) * (size_t)V);
    }
    free(tok), free(pos), free(seq), free(lg);
    cllama_context_free(c);
}

static void test_gemm_pad(void **state) {
    (void)state;
    cllama_model_params mp = cllama_model_default_params();
    mp.backend = CLLAMA_BACKEND_CUDA;
    cllama_model *m = NULL;
    assert_int_equal(cllama_model_load(tu_shared("oracle/models/tiny-llama-Q4_0.gguf"), &mp, &m), CLLAMA_OK);
    const int V = cllama_model_n_vocab(m), n = 100;
    float *a = malloc(sizeof(float) * (size_t)n * V), *b = malloc(sizeof(float) * (size_t)n * V),
          *c = malloc(sizeof(float) * (size_t)n * V);
    assert_non_null(a), assert_non_null(b), assert_non_null(c);
    prompt_logits(m, "1", n, V, a);
    prompt_logits(m, "16", n, V, b);
    prompt_logits(m, "16", n, V, c);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < (size_t)n * V; i++) {
        assert_true(isfinite(b[i]));
        const double d = fabs((double)a[i] - b[i]);
        worst = d > worst ? d : worst;
        scale = fabs(a[i]) > scale ? fabs(a[i]) : scale;
    }
    printf("padded prompt pass: worst |padded - unpadded| %.3g over %d rows (largest logit %.3g)\n", worst, n, scale);
    assert_true(worst <= 1e-3 * (1.0 + scale));
    assert_memory_equal(b, c, sizeof(float) * (size_t)n * V);
    free(a), free(b), free(c);
    cllama_model_free(m);
}

int main(void) {
    if (!cll_cuda_built()) tu_skip("cuda_test: built without the CUDA driver");
    int n = 0;
    if (cll_cuda_device_count(&n) != CLL_OK || n == 0) tu_skip("cuda_test: no CUDA device on this machine");
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_devices), cmocka_unit_test(test_does_not_fit),
                                       cmocka_unit_test(test_logits_pinned), cmocka_unit_test(test_prepare_batches),
                                       cmocka_unit_test(test_gemm_pad)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
