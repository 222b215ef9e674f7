/* cuda/gate: the correctness gate and timing harness of the CUDA kernel rows (see gate.h).
 * Host code (C++ for the CUDA runtime and cuBLAS; the C reference through extern "C").
 * Owns nothing past a call: every device buffer is released before return (struct Dev).
 * Rule: the expectation never comes from the device; every output is compared. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utility>
#include <vector>

#define CLL_CU_WANT_IQ 1 /* the decoders' host pass (cll_cuda_gate_decoders) reads the C codebooks */
#include <pthread.h>

#include "cuda/comm.cuh"
#include "cuda/formats.cuh"
#include "cuda/matmul/matmul.cuh"
#include "cuda/matmul/matmul_internal.cuh"
#include "cuda/matmul/split.cuh"
#include "cuda/ops/ops.cuh"
#include "cuda/pick.h"

extern "C" {
#include "cuda/gate.h"
}

/* ---- small helpers ---- */
namespace {

struct Rng {
    uint64_t s;
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    float uni() { return (float)((next() >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f; } /* [-1, 1) */
};

/* device buffers freed at scope exit */
struct Dev {
    std::vector<void *> p;
    cudaError_t alloc(void **out, size_t n) {
        cudaError_t e = cudaMalloc(out, n ? n : 16);
        if (e == cudaSuccess) p.push_back(*out);
        return e;
    }
    ~Dev() {
        for (void *q : p) cudaFree(q);
    }
};

/* the split-K scratch a decode step gives the few-token rows (cll_cu_splitk): partials and zeroed
 * tickets, owned by dev */
static cudaError_t splitk_scratch(Dev &dev, cll_cu_splitk *sk) {
    sk->ws_floats = CLL_CU_SPLITK_FLOATS(cll_cu_sm_count());
    sk->n_tickets = CLL_CU_SPLITK_TICKETS;
    cudaError_t e = dev.alloc((void **)&sk->ws, (size_t)sk->ws_floats * sizeof(float));
    if (e == cudaSuccess) e = dev.alloc((void **)&sk->tickets, CLL_CU_SPLITK_TICKETS * sizeof(int));
    return e == cudaSuccess ? cudaMemset(sk->tickets, 0, CLL_CU_SPLITK_TICKETS * sizeof(int)) : e;
}

#define GATE_CU(call)                                                                                       \
    do {                                                                                                    \
        cudaError_t e_ = (call);                                                                            \
        if (e_ != cudaSuccess) {                                                                            \
            cudaGetLastError();                                                                             \
            return cll_err(CLL_ERR_DEVICE, "%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
        }                                                                                                   \
    } while (0)

/* fp16 scale fields of the block types that have no reference quantizer: random blocks get
 * sane scales there (byte offsets in formats/blocks.h); -1 = none */
struct ScaleFields {
    uint32_t type;
    int d, dmin;
};
const ScaleFields k_scale_fields[] = {
    {CLL_TYPE_Q2_K, 80, 82}, {CLL_TYPE_Q3_K, 108, -1},  {CLL_TYPE_IQ2_XXS, 0, -1}, {CLL_TYPE_IQ2_XS, 0, -1},
    {CLL_TYPE_IQ2_S, 0, -1}, {CLL_TYPE_IQ3_XXS, 0, -1}, {CLL_TYPE_IQ3_S, 0, -1},   {CLL_TYPE_IQ4_NL, 0, -1},
    {CLL_TYPE_IQ4_XS, 0, -1},
};

/* n_rows rows of cols values of type t (GGUF bytes, unpadded): the reference quantizer of
 * random floats where one exists, else random blocks with fp16 scales in [2^-9, 3*2^-9) */
bool make_weights(uint32_t t, int64_t n_rows, int64_t cols, Rng &rng, std::vector<uint8_t> &out) {
    const cll_type_traits *tr = cll_type_traits_get(t);
    if (!tr) return false;
    const size_t rb = (size_t)cll_row_bytes(t, (uint64_t)cols);
    out.assign(rb * (size_t)n_rows, 0);
    if (tr->from_f32) {
        std::vector<float> f((size_t)cols);
        for (int64_t r = 0; r < n_rows; r++) {
            const float amp = 0.25f + 0.75f * (rng.uni() + 1.0f); /* rows of different magnitude */
            for (auto &v : f) v = amp * rng.uni();
            tr->from_f32(f.data(), out.data() + rb * (size_t)r, cols);
        }
        return true;
    }
    const ScaleFields *sf = NULL;
    for (const auto &s : k_scale_fields)
        if (s.type == t) sf = &s;
    if (!sf) return false;
    for (size_t i = 0; i < out.size(); i += 8) {
        const uint64_t v = rng.next();
        memcpy(out.data() + i, &v, out.size() - i < 8 ? out.size() - i : 8);
    }
    const int64_t nblk = (int64_t)(out.size() / tr->type_size);
    for (int64_t b = 0; b < nblk; b++) {
        uint8_t *blk = out.data() + (size_t)b * tr->type_size;
        const uint16_t d = cll_f32_to_fp16((2.0f + rng.uni()) / 512.0f);
        memcpy(blk + sf->d, &d, 2);
        if (sf->dmin >= 0) {
            const uint16_t m = cll_f32_to_fp16((2.0f + rng.uni()) / 512.0f);
            memcpy(blk + sf->dmin, &m, 2);
        }
    }
    return true;
}

struct Cmp {
    int64_t n = 0, bad = 0, unwritten = 0, worst = -1;
    double max_err = 0.0;
};

/* got vs want with the bar |got - want| <= tol * scale (scale 0: exact) */
Cmp compare(const float *got, const double *want, const double *scale, int64_t n, double tol) {
    Cmp c;
    c.n = n;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(got[i])) {
            c.unwritten++;
            c.bad++;
            if (c.worst < 0) c.worst = i;
            continue;
        }
        const double diff = fabs((double)got[i] - want[i]);
        const double err = scale[i] > 0 ? diff / scale[i] : (diff > 0 ? INFINITY : 0.0);
        if (!(err <= tol)) c.bad++;
        if (err > c.max_err || c.worst < 0) {
            if (err > c.max_err) c.max_err = err;
            c.worst = i;
        }
    }
    return c;
}

/* poison control: one expectation moved by 4x the bar (or one ulp-ish step when the bar is 0) */
bool control_fails(const float *got, const double *want, const double *scale, int64_t n, double tol) {
    if (n == 0) return false;
    std::vector<double> w2(want, want + n);
    const int64_t k = n / 2;
    w2[k] += tol > 0 ? 4.0 * tol * scale[k] + 1e-30 : fabs(w2[k]) * 1e-6 + 1e-30;
    return compare(got, w2.data(), scale, n, tol).bad > 0;
}

void fill_report(cll_cuda_gate_report *rep, const Cmp &c, double tol) {
    rep->n_out = c.n;
    rep->n_bad = c.bad;
    rep->n_unwritten = c.unwritten;
    rep->max_err = c.max_err;
    rep->tol = tol;
}

cll_status verdict(cll_cuda_gate_report *rep, const char *what) {
    rep->passed = rep->n_bad == 0 && rep->n_clobbered == 0 && rep->q8_exact && rep->tables_exact &&
                  (!rep->tail_checked || rep->tail_ok);
    if (rep->tail_checked && !rep->tail_ok)
        return cll_err(CLL_ERR_INTERNAL, "gate %s (%s, %lldx%lld): fused residual tail: %s", rep->row, what,
                       (long long)rep->rows, (long long)rep->cols, rep->tail_why);
    if (rep->passed && rep->control_failed) return CLL_OK;
    if (rep->passed)
        return cll_err(CLL_ERR_INTERNAL, "gate %s: the poison control passed (the bar cannot fail)", rep->row);
    return cll_err(CLL_ERR_INTERNAL,
                   "gate %s (%s, %lldx%lld nb=%d): %lld/%lld outputs off (%lld unwritten), max err %.3g (bar %.3g), "
                   "%lld padding clobbered%s%s%s%s%s",
                   rep->row, what, (long long)rep->rows, (long long)rep->cols, rep->nb, (long long)rep->n_bad,
                   (long long)rep->n_out, (long long)rep->n_unwritten, rep->max_err, rep->tol,
                   (long long)rep->n_clobbered, rep->q8_exact ? "" : ", q8_1 bytes differ from the CPU's",
                   rep->tables_exact ? "" : ", device codebooks differ from the C tables",
                   rep->n_exact_diff ? ", claims bit-exact but differs from " : "",
                   rep->n_exact_diff ? rep->exact_ref : "", rep->n_exact_diff ? " in some of them" : "");
}

void init_report(cll_cuda_gate_report *rep, const char *name, uint32_t op, uint32_t t, int64_t rows, int64_t cols, int nb) {
    memset(rep, 0, sizeof *rep);
    snprintf(rep->row, sizeof rep->row, "%s", name);
    rep->op = op;
    rep->wtype = t;
    rep->rows = rows;
    rep->cols = cols;
    rep->nb = nb;
    rep->n_mat = 1;
    rep->q8_exact = true;
    rep->tables_exact = true;
}

bool is_iq(uint32_t t) {
    switch (t) {
    case CLL_TYPE_IQ2_XXS: case CLL_TYPE_IQ2_XS: case CLL_TYPE_IQ2_S: case CLL_TYPE_IQ3_XXS: case CLL_TYPE_IQ3_S:
    case CLL_TYPE_IQ4_NL: case CLL_TYPE_IQ4_XS:
        return true;
    default:
        return false;
    }
}

/* an f32 buffer of n floats, NaN-poisoned (0xFF bytes are a NaN) */
cudaError_t poisoned(Dev &dev, float **p, size_t n) {
    CLL_CU_RET(dev.alloc((void **)p, n * sizeof(float)));
    return cudaMemset(*p, 0xFF, n * sizeof(float));
}

/* outputs (nrow rows of width, ld apart) whose bits differ between a and b */
/* a copy of v with element `at`'s low bit flipped (a bit-for-bit check's control) */
std::vector<float> low_bit_flipped(const std::vector<float> &v, size_t at) {
    std::vector<float> c = v;
    uint32_t u;
    memcpy(&u, &c[at], 4);
    u ^= 1u;
    memcpy(&c[at], &u, 4);
    return c;
}

int64_t count_bit_diffs(const std::vector<float> &a, const std::vector<float> &b, int64_t nrow, int64_t width, int64_t ld) {
    int64_t n = 0;
    for (int64_t r = 0; r < nrow; r++)
        for (int64_t i = 0; i < width; i++) n += memcmp(&a[(size_t)(r * ld + i)], &b[(size_t)(r * ld + i)], 4) != 0;
    return n;
}

int64_t count_clobbered(const std::vector<float> &y, int64_t nrow, int64_t width, int64_t ld) {
    int64_t c = 0;
    for (int64_t b = 0; b < nrow; b++)
        for (int64_t i = width; i < ld; i++)
            if (!isnan(y[(size_t)(b * ld + i)])) c++;
    return c;
}

cll_status gate_tables_into(cll_cuda_gate_report *rep) {
    bool same = false;
    GATE_CU(cll_cu_iq_tables_check(&same));
    rep->tables_exact = same;
    return CLL_OK;
}

/* ---- the fused residual tail of a one-product gemv (cll_cu_resid_epi) ---- */
static bool ulp_close(float got, double want, int ulps) {
    if (isnan(got)) return false;
    const double u = ldexp(1.0, ilogb(want == 0.0 ? 1e-30 : want) - 23); /* one f32 ulp at want */
    return fabs((double)got - want) <= ulps * u;
}

/* a residual tail's inputs: the residual x0 and the next norm's weights g */
static void resid_inputs(int64_t rows, Rng &rng, std::vector<float> &x0, std::vector<float> &g) {
    x0.resize((size_t)rows);
    g.resize((size_t)rows);
    for (int64_t i = 0; i < rows; i++) {
        x0[(size_t)i] = 2.0f * rng.uni();
        g[(size_t)i] = 0.5f + rng.uni();
    }
}

/* a residual tail's host expectation: x = x0 + y in f32 bit for bit, xn within 2 ulp of the host norm
 * (x * 1 / rms(x)) * g with the squares summed in double, q the bytes of cll_quantize_q8_1(xn) over
 * cdiv(rows, 32) blocks; false with the first mismatch in why. ref (may be NULL): the host norm */
static bool resid_host_ok(const std::vector<float> &x0, const std::vector<float> &y, const std::vector<float> &g,
                          const std::vector<float> &x, const std::vector<float> &xn, const void *q, int64_t rows,
                          float eps, std::vector<double> *ref, char *why, size_t cap) {
    double sum = 0.0;
    for (int64_t i = 0; i < rows; i++) {
        const float want = x0[(size_t)i] + y[(size_t)i];
        if (memcmp(&want, &x[(size_t)i], sizeof want)) {
            snprintf(why, cap, "x[%lld] = %.9g, want x0 + y = %.9g", (long long)i, x[(size_t)i], want);
            return false;
        }
        sum += (double)(want * want);
    }
    const float sc = 1.0f / sqrtf((float)(sum / (double)rows) + eps);
    std::vector<double> r((size_t)rows);
    for (int64_t i = 0; i < rows; i++) r[(size_t)i] = (double)((x[(size_t)i] * sc) * g[(size_t)i]);
    for (int64_t i = 0; i < rows; i++)
        if (!ulp_close(xn[(size_t)i], r[(size_t)i], 2)) {
            snprintf(why, cap, "xn[%lld] = %.9g, want %.9g", (long long)i, xn[(size_t)i], r[(size_t)i]);
            return false;
        }
    const int64_t nq = (rows + 31) / 32;
    std::vector<float> xnp((size_t)nq * 32, 0.0f);
    std::vector<cll_block_q8_1> qref((size_t)nq);
    memcpy(xnp.data(), xn.data(), (size_t)rows * sizeof(float));
    cll_quantize_q8_1(xnp.data(), qref.data(), nq * 32);
    if (memcmp(q, qref.data(), qref.size() * sizeof(cll_block_q8_1))) {
        snprintf(why, cap, "xq bytes differ from cll_quantize_q8_1(xn)");
        return false;
    }
    if (ref) *ref = std::move(r);
    return true;
}

cll_status gate_tail(const cll_cu_gemv_impl *impl, const cll_cu_weight *w, cll_cu_gemv_args a,
                     const std::vector<float> &y1, int64_t rows, Rng &rng, Dev &dev, cll_cuda_gate_report *rep) {
    rep->tail_checked = true;
    rep->tail_ok = false;
    const float eps = 1e-5f;
    std::vector<float> x0, g;
    resid_inputs(rows, rng, x0, g);
    const int64_t nq = (rows + 31) / 32;
    float *dx0 = NULL, *dg = NULL, *dxn = NULL, *dy = NULL;
    double *dpart = NULL;
    int *dt = NULL;
    void *dq = NULL;
    GATE_CU(dev.alloc((void **)&dx0, (size_t)rows * sizeof(float)));
    GATE_CU(cudaMemcpy(dx0, x0.data(), (size_t)rows * sizeof(float), cudaMemcpyHostToDevice));
    GATE_CU(dev.alloc((void **)&dg, (size_t)rows * sizeof(float)));
    GATE_CU(cudaMemcpy(dg, g.data(), (size_t)rows * sizeof(float), cudaMemcpyHostToDevice));
    GATE_CU(poisoned(dev, &dxn, (size_t)rows));
    GATE_CU(poisoned(dev, &dy, (size_t)rows));
    GATE_CU(dev.alloc((void **)&dpart, (size_t)CLL_CU_EPI_MAX_BLOCKS * sizeof(double)));
    GATE_CU(dev.alloc((void **)&dt, sizeof(int)));
    GATE_CU(cudaMemset(dt, 0, sizeof(int)));
    GATE_CU(dev.alloc(&dq, (size_t)nq * sizeof(cll_block_q8_1)));
    GATE_CU(cudaMemset(dq, 0xA5, (size_t)nq * sizeof(cll_block_q8_1)));
    a.y = dy;
    a.epi.on = 1;
    a.epi.x = dx0;
    a.epi.part = dpart;
    a.epi.ticket = dt;
    a.epi.norm = dg;
    a.epi.eps = eps;
    a.epi.xn = dxn;
    a.epi.xq = dq;
    for (int run = 0; run < 2; run++) { /* twice: the ticket must have reset itself */
        if (run == 1) {
            GATE_CU(cudaMemcpy(dx0, x0.data(), (size_t)rows * sizeof(float), cudaMemcpyHostToDevice));
            GATE_CU(cudaMemset(dxn, 0xFF, (size_t)rows * sizeof(float)));
        }
        GATE_CU(impl->gemv(w, &a, 0));
        GATE_CU(cudaDeviceSynchronize());
    }
    std::vector<float> y((size_t)rows), x((size_t)rows), xn((size_t)rows);
    std::vector<cll_block_q8_1> q((size_t)nq);
    int ticket = -1;
    GATE_CU(cudaMemcpy(y.data(), dy, (size_t)rows * sizeof(float), cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(x.data(), dx0, (size_t)rows * sizeof(float), cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(xn.data(), dxn, (size_t)rows * sizeof(float), cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(q.data(), dq, q.size() * sizeof(cll_block_q8_1), cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(&ticket, dt, sizeof(int), cudaMemcpyDeviceToHost));
    char *why = rep->tail_why;
    const size_t cap = sizeof rep->tail_why;
    if (memcmp(y.data(), y1.data(), (size_t)rows * sizeof(float))) {
        snprintf(why, cap, "y differs from the plain run");
        return CLL_OK;
    }
    std::vector<double> ref;
    if (!resid_host_ok(x0, y, g, x, xn, q.data(), rows, eps, &ref, why, cap)) return CLL_OK;
    /* poison control: the same comparison against one element moved by 8 ulp must fail */
    const int64_t k = rows / 2;
    const double moved = ref[(size_t)k] + 8.0 * ldexp(1.0, ilogb(ref[(size_t)k] == 0.0 ? 1e-30 : ref[(size_t)k]) - 23);
    if (ulp_close(xn[(size_t)k], moved, 2)) {
        snprintf(why, cap, "poison control passed (the xn bar cannot fail)");
        return CLL_OK;
    }
    if (ticket != 0) {
        snprintf(why, cap, "ticket left at %d", ticket);
        return CLL_OK;
    }
    rep->tail_ok = true;
    return CLL_OK;
}

/* The decode MoE self-routing (cll_cu_route) of a row that serves it: the nb == k slots of one
 * token routed by the launch itself from random router logits over the n_mat experts must give
 * what the routing kernel (cll_cu_moe_route) followed by the mat_ids launch gives: the same ids
 * and weights, and bit-identical outputs. */
/* The polled residual tail (cll_cu_resid_epi.slot): where cll_cu_resid_poll_ok holds, the launch must give y as
 * the plain launch did (y1) and x, xn and the q8_1 blocks of the residual kernel run on y1
 * (cll_cu_resid_norm_q8, the step's own kernel: the tail replays its sums), bit for bit and byte for byte,
 * twice in a row on the same slots (a launch leaves every slot empty), touching neither the ticket nor the
 * partials (NULL here); the residual kernel's own output is first held to the host (x0 + y1 bit for bit, the
 * norm within 2 ulp of the f64 host norm, cll_quantize_q8_1's bytes); where it does not hold, the launch must refuse (cudaErrorNotSupported) with nothing launched.
 * Control: one flipped bit of the reference xn is counted. rep->tail_poll: 1 served, 2 refused. */
static cll_status gate_tail_poll(const cll_kernel_row *row, const cll_cu_gemv_impl *impl, const cll_cu_weight *w,
                                 cll_cu_gemv_args a, const std::vector<float> &y1, int64_t rows, Rng &rng, Dev &dev,
                                 cll_cuda_gate_report *rep) {
    const float eps = 1e-5f;
    const int64_t nq = (rows + 31) / 32;
    float *dy = NULL, *dx = NULL, *dxn = NULL, *dg = NULL, *dslot = NULL, *dy1 = NULL, *drx = NULL, *drxn = NULL;
    void *dq = NULL, *drq = NULL;
    GATE_CU(poisoned(dev, &dslot, (size_t)rows)); /* every slot empty (0xffffffff) */
    a.epi = cll_cu_resid_epi{};
    a.epi.on = 1;
    a.epi.slot = (uint32_t *)dslot;
    if (!cll_cu_resid_poll_ok(impl->gemv, w)) {
        a.epi.x = (float *)w->d; /* never written: the launch refuses first */
        const cudaError_t e = impl->gemv(w, &a, 0);
        cudaGetLastError();
        if (e != cudaErrorNotSupported)
            return cll_err(CLL_ERR_INTERNAL, "gate %s (%lldx%lld): the polled residual tail was not refused (%s)",
                           row->name, (long long)rows, (long long)w->cols, cudaGetErrorString(e));
        rep->tail_poll = 2;
        return CLL_OK;
    }
    std::vector<float> x0, g;
    resid_inputs(rows, rng, x0, g);
    const size_t fb = (size_t)rows * sizeof(float), qb = (size_t)nq * sizeof(cll_block_q8_1);
    GATE_CU(dev.alloc((void **)&dg, fb));
    GATE_CU(cudaMemcpy(dg, g.data(), fb, cudaMemcpyHostToDevice));
    GATE_CU(dev.alloc((void **)&dy1, fb));
    GATE_CU(cudaMemcpy(dy1, y1.data(), fb, cudaMemcpyHostToDevice));
    GATE_CU(dev.alloc((void **)&drx, fb));
    GATE_CU(cudaMemcpy(drx, x0.data(), fb, cudaMemcpyHostToDevice));
    GATE_CU(poisoned(dev, &drxn, (size_t)rows));
    GATE_CU(dev.alloc(&drq, qb));
    GATE_CU(cudaMemset(drq, 0xA5, qb));
    /* the reference: the step's residual kernel on the plain launch's rows */
    cll_cu_resid_args ra;
    memset(&ra, 0, sizeof ra);
    ra.x = drx;
    ra.t = dy1;
    ra.next_norm = true;
    ra.next = dg;
    ra.xn = drxn;
    ra.xq = drq;
    GATE_CU(cll_cu_resid_norm_q8(&ra, 1, rows, eps, 0));
    GATE_CU(cudaDeviceSynchronize());
    std::vector<float> rx((size_t)rows), rxn((size_t)rows);
    std::vector<uint8_t> rq(qb);
    GATE_CU(cudaMemcpy(rx.data(), drx, fb, cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(rxn.data(), drxn, fb, cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(rq.data(), drq, qb, cudaMemcpyDeviceToHost));
    /* the reference against the host: x0 + y1 in f32, the norm within 2 ulp of the f64-summed host norm, its
     * q8_1 bytes cll_quantize_q8_1's (so the bits the tail must repeat are the right ones) */
    char why[96];
    if (!resid_host_ok(x0, y1, g, rx, rxn, rq.data(), rows, eps, NULL, why, sizeof why))
        return cll_err(CLL_ERR_INTERNAL, "gate %s: the residual kernel: %s", row->name, why);
    if (count_bit_diffs(rxn, low_bit_flipped(rxn, (size_t)(rows / 2)), 1, rows, rows) != 1)
        return cll_err(CLL_ERR_INTERNAL, "gate %s: the polled tail's control did not see a flipped bit", row->name);
    GATE_CU(poisoned(dev, &dy, (size_t)rows));
    GATE_CU(dev.alloc((void **)&dx, fb));
    GATE_CU(poisoned(dev, &dxn, (size_t)rows));
    GATE_CU(dev.alloc(&dq, qb));
    a.y = dy;
    a.epi.x = dx;
    a.epi.norm = dg;
    a.epi.eps = eps;
    a.epi.xn = dxn;
    a.epi.xq = dq;
    for (int run = 0; run < 2; run++) { /* twice on the same slots: the first launch must have emptied them */
        GATE_CU(cudaMemcpy(dx, x0.data(), fb, cudaMemcpyHostToDevice));
        GATE_CU(cudaMemset(dxn, 0xFF, fb));
        GATE_CU(cudaMemset(dq, 0xFF, qb));
        GATE_CU(cudaMemset(dy, 0xFF, fb));
        GATE_CU(impl->gemv(w, &a, 0));
        GATE_CU(cudaDeviceSynchronize());
        std::vector<float> y((size_t)rows), x((size_t)rows), xn((size_t)rows);
        std::vector<uint8_t> q(qb);
        std::vector<uint32_t> slots((size_t)rows);
        GATE_CU(cudaMemcpy(y.data(), dy, fb, cudaMemcpyDeviceToHost));
        GATE_CU(cudaMemcpy(x.data(), dx, fb, cudaMemcpyDeviceToHost));
        GATE_CU(cudaMemcpy(xn.data(), dxn, fb, cudaMemcpyDeviceToHost));
        GATE_CU(cudaMemcpy(q.data(), dq, qb, cudaMemcpyDeviceToHost));
        GATE_CU(cudaMemcpy(slots.data(), dslot, fb, cudaMemcpyDeviceToHost));
        int64_t left = 0;
        for (uint32_t v : slots) left += v != 0xffffffffu;
        const int64_t dyd = count_bit_diffs(y1, y, 1, rows, rows), dxd = count_bit_diffs(rx, x, 1, rows, rows),
                      dnd = count_bit_diffs(rxn, xn, 1, rows, rows);
        const bool qd = memcmp(q.data(), rq.data(), qb) != 0;
        if (dyd || dxd || dnd || qd || left)
            return cll_err(CLL_ERR_INTERNAL,
                           "gate %s (%lldx%lld): the polled residual tail (launch %d) differs from the plain launch + "
                           "residual kernel: y %lld, x %lld, xn %lld of %lld values%s, %lld slots left set",
                           row->name, (long long)rows, (long long)w->cols, run + 1, (long long)dyd, (long long)dxd,
                           (long long)dnd, (long long)rows, qd ? ", q8_1 bytes differ" : "", (long long)left);
    }
    rep->tail_poll = 1;
    return CLL_OK;
}

static cll_status gate_self_route(const cll_kernel_row *row, const cll_cu_gemv_impl *impl, const cll_cu_weight *w,
                                  cll_cu_gemv_args a, int64_t rows, Rng &rng, Dev &dev) {
    const int32_t E = (int32_t)w->n_mat, K = a.nb;
    const bool renorm = rng.next() & 1;
    std::vector<float> lg((size_t)E);
    for (auto &v : lg) v = 3.0f * rng.uni();
    float *dlg = NULL, *dyA = NULL, *dyB = NULL, *dwA = NULL, *dwB = NULL;
    int32_t *dsA = NULL, *dsB = NULL;
    const size_t ny = (size_t)(a.nb * a.y_stride);
    GATE_CU(dev.alloc((void **)&dlg, lg.size() * sizeof(float)));
    GATE_CU(cudaMemcpy(dlg, lg.data(), lg.size() * sizeof(float), cudaMemcpyHostToDevice));
    GATE_CU(poisoned(dev, &dyA, ny));
    GATE_CU(poisoned(dev, &dyB, ny));
    GATE_CU(poisoned(dev, &dwA, (size_t)K));
    GATE_CU(poisoned(dev, &dwB, (size_t)K));
    GATE_CU(dev.alloc((void **)&dsA, (size_t)K * sizeof(int32_t)));
    GATE_CU(dev.alloc((void **)&dsB, (size_t)K * sizeof(int32_t)));
    GATE_CU(cudaMemset(dsB, 0xFF, (size_t)K * sizeof(int32_t)));
    GATE_CU(cll_cu_moe_route(dlg, 1, E, K, renorm, dsA, dwA, 0));
    cll_cu_gemv_args b = a;
    a.mat_ids = dsA;
    a.y = dyA;
    GATE_CU(impl->gemv(w, &a, 0));
    b.mat_ids = NULL;
    b.y = dyB;
    b.route.logits = dlg;
    b.route.n_expert = E;
    b.route.k = K;
    b.route.renorm = renorm;
    b.route.sel = dsB;
    b.route.selw = dwB;
    GATE_CU(impl->gemv(w, &b, 0));
    GATE_CU(cudaDeviceSynchronize());
    std::vector<float> yA(ny), yB(ny), wA((size_t)K), wB((size_t)K);
    std::vector<int32_t> sA((size_t)K), sB((size_t)K);
    GATE_CU(cudaMemcpy(yA.data(), dyA, ny * sizeof(float), cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(yB.data(), dyB, ny * sizeof(float), cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(wA.data(), dwA, (size_t)K * sizeof(float), cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(wB.data(), dwB, (size_t)K * sizeof(float), cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(sA.data(), dsA, (size_t)K * sizeof(int32_t), cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(sB.data(), dsB, (size_t)K * sizeof(int32_t), cudaMemcpyDeviceToHost));
    if (sA != sB || memcmp(wA.data(), wB.data(), (size_t)K * sizeof(float)))
        return cll_err(CLL_ERR_INTERNAL, "gate %s: self-routing chose experts %d.. (w %.6g) where the routing kernel chose %d.. (w %.6g)",
                       row->name, sB[0], wB[0], sA[0], wA[0]);
    int64_t differ = 0;
    for (int k = 0; k < K; k++)
        for (int64_t r = 0; r < rows; r++)
            differ += memcmp(&yA[(size_t)(k * a.y_stride + r)], &yB[(size_t)(k * a.y_stride + r)], sizeof(float)) != 0;
    if (differ)
        return cll_err(CLL_ERR_INTERNAL, "gate %s: self-routing launch differs from route + mat_ids in %lld of %lld outputs",
                       row->name, (long long)differ, (long long)(K * rows));
    return CLL_OK;
}

/* The activation computed in a row's staging (act_in): per slot b a random gate|up row (f = cols
 * gate values, f up values; SiLU or GELU by the seed) must give what the act kernel
 * (cll_cu_act_q8) followed by the q8_1 launch gives, bit for bit. */
static cll_status gate_fused_act(const cll_kernel_row *row, const cll_cu_gemv_impl *impl, const cll_cu_weight *w,
                                 cll_cu_gemv_args a, int64_t rows, int64_t cols, Rng &rng, Dev &dev) {
    const int64_t f = cols, qf = cols / 32;
    const bool gelu = rng.next() & 1;
    std::vector<float> gu((size_t)(a.nb * 2 * f));
    for (size_t i = 0; i < gu.size(); i++) gu[i] = 4.0f * rng.uni() * (i % 41 == 0 ? 3.0f : 1.0f);
    float *dgu = NULL, *dact = NULL, *dyA = NULL, *dyB = NULL;
    void *dactq = NULL;
    const size_t ny = (size_t)(a.nb * a.y_stride);
    GATE_CU(dev.alloc((void **)&dgu, gu.size() * sizeof(float)));
    GATE_CU(cudaMemcpy(dgu, gu.data(), gu.size() * sizeof(float), cudaMemcpyHostToDevice));
    GATE_CU(dev.alloc((void **)&dact, (size_t)(a.nb * f) * sizeof(float)));
    GATE_CU(dev.alloc(&dactq, (size_t)(a.nb * qf) * sizeof(cll_block_q8_1)));
    GATE_CU(poisoned(dev, &dyA, ny));
    GATE_CU(poisoned(dev, &dyB, ny));
    /* the gap prefetch of the weight runs too (a hint: the bits must not change) */
    GATE_CU(cll_cu_act_q8(dgu, 2 * f, a.nb, f, gelu, dact, dactq, 0, w->d, (size_t)w->mat_stride & ~(size_t)15));
    cll_cu_gemv_args b = a;
    a.x = dact;
    a.x_stride = f;
    a.xq = dactq;
    a.xq_stride = qf;
    a.y = dyA;
    GATE_CU(impl->gemv(w, &a, 0));
    b.x = NULL;
    b.xq = NULL;
    b.act_in.gu = dgu;
    b.act_in.ld = 2 * f;
    b.act_in.gelu = gelu;
    b.y = dyB;
    GATE_CU(impl->gemv(w, &b, 0));
    GATE_CU(cudaDeviceSynchronize());
    std::vector<float> yA(ny), yB(ny);
    GATE_CU(cudaMemcpy(yA.data(), dyA, ny * sizeof(float), cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(yB.data(), dyB, ny * sizeof(float), cudaMemcpyDeviceToHost));
    int64_t differ = 0;
    for (int k = 0; k < a.nb; k++)
        for (int64_t r = 0; r < rows; r++)
            differ += memcmp(&yA[(size_t)(k * a.y_stride + r)], &yB[(size_t)(k * a.y_stride + r)], sizeof(float)) != 0;
    if (differ)
        return cll_err(CLL_ERR_INTERNAL, "gate %s: the activation staged by the launch (%s) differs from act kernel + "
                       "q8_1 launch in %lld of %lld outputs", row->name, gelu ? "gelu" : "silu", (long long)differ,
                       (long long)(a.nb * rows));
    return CLL_OK;
}

/* A quantized gate|up pair activated by the launch with its q8_1 blocks (act_out.yq, polled slots): for SiLU and
 * GELU, the poisoned f floats and f / 32 q8_1 blocks must be the act kernel's (cll_cu_act_q8 on the plain
 * launch's rows dy1) bit for bit and byte for byte, twice in a row on the same slots (each launch leaves every
 * slot empty: checked), with no row written at y; a shape of ragged q8_1 blocks (f % 32) is refused
 * (cudaErrorNotSupported), never half done. Control: one flipped byte of the reference blocks is seen. */
static cll_status gate_act_out_q8(const cll_kernel_row *row, const cll_cu_gemv_impl *impl, const cll_cu_weight *w,
                                  cll_cu_gemv_args a, const float *dy1, int64_t f, Dev &dev) {
    const int64_t nq = f / 32;
    const size_t qbytes = (size_t)(nq > 0 ? nq : 1) * sizeof(cll_block_q8_1);
    float *dref = NULL, *dact = NULL;
    void *dq = NULL, *drefq = NULL;
    GATE_CU(poisoned(dev, &dref, (size_t)f));
    GATE_CU(poisoned(dev, &dact, (size_t)f));
    GATE_CU(dev.alloc(&dq, qbytes));
    GATE_CU(dev.alloc(&drefq, qbytes));
    float *dy = NULL, *dslot = NULL;
    GATE_CU(poisoned(dev, &dy, (size_t)(2 * f)));
    GATE_CU(poisoned(dev, &dslot, (size_t)f)); /* the slots, every one empty (0xffffffff) */
    a.act_out.slot = dslot;
    a.y = dy;
    a.act_out.y = dact;
    a.act_out.f = f;
    a.act_out.yq = dq;
    if (f % 32) {
        const cudaError_t e = impl->gemv(w, &a, 0);
        cudaGetLastError();
        if (e != cudaErrorNotSupported)
            return cll_err(CLL_ERR_INTERNAL, "gate %s: q8_1 rows of a ragged activation (f %lld) were not refused (%s)",
                           row->name, (long long)f, cudaGetErrorString(e));
        return CLL_OK;
    }
    /* the q8_1 blocks that differ between two copies of the f / 32 */
    auto blocks_differ = [nq](const std::vector<uint8_t> &x, const std::vector<uint8_t> &z) {
        int64_t n = 0;
        for (int64_t k = 0; k < nq; k++)
            n += memcmp(&x[(size_t)k * sizeof(cll_block_q8_1)], &z[(size_t)k * sizeof(cll_block_q8_1)],
                        sizeof(cll_block_q8_1)) != 0;
        return n;
    };
    for (int gelu = 0; gelu < 2; gelu++) {
        GATE_CU(cll_cu_act_q8(dy1, 2 * f, 1, f, gelu != 0, dref, drefq, 0, NULL, 0));
        std::vector<float> ref((size_t)f);
        std::vector<uint8_t> refq(qbytes);
        GATE_CU(cudaMemcpy(ref.data(), dref, (size_t)f * sizeof(float), cudaMemcpyDeviceToHost));
        GATE_CU(cudaMemcpy(refq.data(), drefq, qbytes, cudaMemcpyDeviceToHost));
        std::vector<uint8_t> flip = refq; /* the control: one flipped byte of the reference must be seen */
        flip[qbytes / 2] ^= 0x10;
        if (blocks_differ(refq, flip) != 1)
            return cll_err(CLL_ERR_INTERNAL, "gate %s: the q8_1 blocks' control did not see a flipped byte", row->name);
        for (int rep = 0; rep < 2; rep++) {
            GATE_CU(cudaMemset(dact, 0xFF, (size_t)f * sizeof(float)));
            GATE_CU(cudaMemset(dq, 0xFF, qbytes));
            a.act_out.gelu = gelu != 0;
            GATE_CU(impl->gemv(w, &a, 0));
            GATE_CU(cudaDeviceSynchronize());
            std::vector<float> got((size_t)f), y((size_t)(2 * f));
            std::vector<uint8_t> gotq(qbytes);
            int64_t left = 0;
            GATE_CU(cudaMemcpy(got.data(), dact, (size_t)f * sizeof(float), cudaMemcpyDeviceToHost));
            GATE_CU(cudaMemcpy(gotq.data(), dq, qbytes, cudaMemcpyDeviceToHost));
            GATE_CU(cudaMemcpy(y.data(), dy, y.size() * sizeof(float), cudaMemcpyDeviceToHost));
            std::vector<uint32_t> slots((size_t)f);
            GATE_CU(cudaMemcpy(slots.data(), dslot, slots.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost));
            for (uint32_t v : slots) left += v != 0xffffffffu; /* a launch leaves every slot empty */
            const int64_t differ = count_bit_diffs(ref, got, 1, f, f), qdiffer = blocks_differ(refq, gotq);
            const int64_t clobbered = count_clobbered(y, 1, 0, 2 * f);
            if (differ || qdiffer || left || clobbered)
                return cll_err(CLL_ERR_INTERNAL,
                               "gate %s: the quantized gate|up pair activated by the launch (%s, launch %d) "
                               "differs from the plain launch + act kernel in %lld of %lld values and %lld of %lld "
                               "q8_1 blocks, left %lld slots set, wrote %lld rows at y",
                               row->name, gelu ? "gelu" : "silu", rep + 1, (long long)differ, (long long)f,
                               (long long)qdiffer, (long long)nq, (long long)left, (long long)clobbered);
        }
    }
    return CLL_OK;
}

/* The gate|up pair activated by the launch (act_out): the row's weight read as f gate rows then f up
 * rows (f = rows / 2; an odd last row is left out) must give, in a poisoned f-float buffer, what the
 * act kernel (cll_cu_act_q8) gives on the plain launch's rows y1, bit for bit (SiLU and GELU both), and
 * write nothing at y. Control: the same count over a copy with one value's low bit flipped sees it. */
static cll_status gate_act_out(const cll_kernel_row *row, const cll_cu_gemv_impl *impl, const cll_cu_weight *w,
                               cll_cu_gemv_args a, const std::vector<float> &y1, int64_t rows, Dev &dev) {
    const int64_t f = rows / 2;
    if (!cll_cu_acts_out_ok(impl->gemv, w)) { /* a shape the row sums in another order: it must refuse, cleanly */
        a.act_out.y = (float *)w->d; /* never written: the launch refuses first */
        a.act_out.f = f;
        const cudaError_t e = impl->gemv(w, &a, 0);
        cudaGetLastError();
        if (e != cudaErrorNotSupported)
            return cll_err(CLL_ERR_INTERNAL, "gate %s: act_out on rows it splits was not refused (%s)", row->name,
                           cudaGetErrorString(e));
        return CLL_OK;
    }
    float *dy1 = NULL, *dref = NULL, *dact = NULL, *dy = NULL;
    GATE_CU(dev.alloc((void **)&dy1, (size_t)rows * sizeof(float)));
    GATE_CU(cudaMemcpy(dy1, y1.data(), (size_t)rows * sizeof(float), cudaMemcpyHostToDevice));
    GATE_CU(poisoned(dev, &dy, (size_t)rows));
    for (int gelu = 0; gelu < 2; gelu++) {
        GATE_CU(poisoned(dev, &dref, (size_t)f));
        GATE_CU(poisoned(dev, &dact, (size_t)f));
        GATE_CU(cll_cu_act_q8(dy1, 2 * f, 1, f, gelu != 0, dref, NULL, 0, NULL, 0));
        cll_cu_gemv_args b = a;
        b.y = dy;
        b.act_out.y = dact;
        b.act_out.f = f;
        b.act_out.gelu = gelu != 0;
        GATE_CU(impl->gemv(w, &b, 0));
        GATE_CU(cudaDeviceSynchronize());
        std::vector<float> ref((size_t)f), got((size_t)f), y((size_t)rows);
        GATE_CU(cudaMemcpy(ref.data(), dref, (size_t)f * sizeof(float), cudaMemcpyDeviceToHost));
        GATE_CU(cudaMemcpy(got.data(), dact, (size_t)f * sizeof(float), cudaMemcpyDeviceToHost));
        GATE_CU(cudaMemcpy(y.data(), dy, (size_t)rows * sizeof(float), cudaMemcpyDeviceToHost));
        const int64_t differ = count_bit_diffs(ref, got, 1, f, f);
        if (count_bit_diffs(ref, low_bit_flipped(ref, (size_t)(f / 2)), 1, f, f) != 1)
            return cll_err(CLL_ERR_INTERNAL, "gate %s: the activation's control did not see a flipped bit", row->name);
        if (differ)
            return cll_err(CLL_ERR_INTERNAL, "gate %s: the gate|up pair activated by the launch (%s) differs from the "
                           "plain launch + act kernel in %lld of %lld values", row->name, gelu ? "gelu" : "silu",
                           (long long)differ, (long long)f);
        if (count_clobbered(y, 1, 0, rows))
            return cll_err(CLL_ERR_INTERNAL, "gate %s: the activated launch wrote rows at y", row->name);
    }
    if (impl->needs_q8) {
        cll_status st = gate_act_out_q8(row, impl, w, a, dy1, f, dev);
        if (st != CLL_OK) return st;
    }
    return CLL_OK;
}

/* ---- gemv ---- */
cll_status gate_gemv(const cll_kernel_row *row, int64_t rows, int64_t cols, int nb, uint64_t seed, cll_cuda_gate_report *rep) {
    const uint32_t t = row->wtype;
    const cll_cu_gemv_impl *impl = (const cll_cu_gemv_impl *)row->impl;
    const cll_type_traits *tr = cll_type_traits_get(t);
    if (!impl || !impl->gemv || !tr || !tr->to_f32) return cll_err(CLL_ERR_ARG, "gate %s: not a gemv row", row->name);
    if (nb < 1 || rows < 1 || cols % tr->blck) return cll_err(CLL_ERR_ARG, "gate %s: bad shape", row->name);
    if (is_iq(t)) {
        cll_status st = gate_tables_into(rep);
        if (st != CLL_OK) return st;
    }
    Rng rng{seed * 0x2545F4914F6CDD1Dull + 1};
    const bool moe = nb > 1 && (nb & 1) && !impl->few; /* few-token rows: nb tokens of one matrix */
    const int64_t n_mat = moe ? nb + 1 : 1;
    rep->n_mat = n_mat;
    const int64_t nx = moe ? 1 : nb;       /* input rows */
    const int64_t x_stride = (cols + 7) & ~(int64_t)3;  /* strided inputs, 16-byte aligned rows */
    const int64_t y_stride = rows + 5;
    std::vector<uint8_t> W;
    if (!make_weights(t, rows * n_mat, cols, rng, W)) return cll_err(CLL_ERR_UNSUPPORTED, "gate: no generator for %s", tr->name);
    std::vector<float> x((size_t)(nx * x_stride), 0.0f);
    for (int64_t b = 0; b < nx; b++)
        for (int64_t k = 0; k < cols; k++) x[(size_t)(b * x_stride + k)] = rng.uni() * (k % 97 == 0 ? 4.0f : 1.0f);
    std::vector<int32_t> ids((size_t)nb, 0);
    for (int b = 0; b < nb; b++) ids[(size_t)b] = moe ? (int32_t)(rng.next() % (uint64_t)n_mat) : 0;
    /* a slot another tensor-parallel rank owns (cuda/driver.cu moe_ffn gives it id -1): its row must be a
     * defined 0.0f (the expectation below: exactly zero) */
    if (moe && nb >= 3) ids[1] = -1;

    Dev dev;
    void *dw = NULL, *dxq = NULL;
    float *dx = NULL, *dy = NULL;
    int32_t *dids = NULL;
    GATE_CU(dev.alloc(&dw, cll_cu_weight_bytes(t, impl->layout, rows, cols, n_mat)));
    cll_cu_weight w;
    GATE_CU(cll_cu_weight_upload_l(&w, W.data(), t, impl->layout, rows, cols, n_mat, dw));
    GATE_CU(dev.alloc((void **)&dx, x.size() * sizeof(float)));
    GATE_CU(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
    GATE_CU(poisoned(dev, &dy, (size_t)(nb * y_stride)));
    if (moe) {
        GATE_CU(dev.alloc((void **)&dids, ids.size() * sizeof(int32_t)));
        GATE_CU(cudaMemcpy(dids, ids.data(), ids.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    }
    /* the activation as the row reads it: q8_1 quantized on the device, checked byte for byte */
    const int64_t nqb = cols / 32;
    std::vector<cll_block_q8_1> q8;
    if (impl->needs_q8) {
        if (cols % 32) return cll_err(CLL_ERR_ARG, "gate %s: cols %% 32", row->name);
        GATE_CU(dev.alloc(&dxq, (size_t)(nx * nqb) * sizeof(cll_block_q8_1)));
        GATE_CU(cll_cu_quantize_q8_1(dx, x_stride, nx, cols, dxq, 0));
        q8.resize((size_t)(nx * nqb));
        GATE_CU(cudaMemcpy(q8.data(), dxq, q8.size() * sizeof(cll_block_q8_1), cudaMemcpyDeviceToHost));
        std::vector<cll_block_q8_1> ref((size_t)nqb);
        for (int64_t b = 0; b < nx; b++) {
            cll_quantize_q8_1(x.data() + b * x_stride, ref.data(), cols);
            if (memcmp(ref.data(), q8.data() + b * nqb, (size_t)nqb * sizeof(cll_block_q8_1))) rep->q8_exact = false;
        }
    }
    cll_cu_gemv_args a;
    memset(&a, 0, sizeof a);
    a.pf_next = w.d; /* the next-weight L2 prefetch runs too (a hint: results must not change) */
    a.pf_bytes = w.mat_stride;
    a.nb = nb;
    a.mat_ids = dids;
    a.x = dx;
    a.x_stride = moe ? 0 : x_stride;
    a.xq = dxq;
    a.xq_stride = moe ? 0 : nqb;
    a.y = dy;
    a.y_stride = y_stride;
    if (impl->few) GATE_CU(splitk_scratch(dev, &a.sk)); /* what a step gives the few-token rows */
    GATE_CU(impl->gemv(&w, &a, 0));
    GATE_CU(cudaDeviceSynchronize());
    std::vector<float> y((size_t)(nb * y_stride));
    GATE_CU(cudaMemcpy(y.data(), dy, y.size() * sizeof(float), cudaMemcpyDeviceToHost));
    int64_t n_unstable = 0;
    if (impl->few) {
        /* a second launch on the same scratch gives the same bits: the split-K tickets were left at
         * zero and the partials meet in a fixed order */
        GATE_CU(cudaMemset(dy, 0xFF, (size_t)(nb * y_stride) * sizeof(float)));
        GATE_CU(impl->gemv(&w, &a, 0));
        GATE_CU(cudaDeviceSynchronize());
        std::vector<float> y2((size_t)(nb * y_stride));
        GATE_CU(cudaMemcpy(y2.data(), dy, y2.size() * sizeof(float), cudaMemcpyDeviceToHost));
        for (int b = 0; b < nb; b++)
            for (int64_t r = 0; r < rows; r++)
                n_unstable += memcmp(&y[(size_t)(b * y_stride + r)], &y2[(size_t)(b * y_stride + r)], sizeof(float)) != 0;
    }

    /* a bit-exact claim is checked, not believed: the type's default row of the same layout on the
     * same weight and activation must give the same bits (padding aside) */
    int64_t n_exact_diff = 0;
    if (row->bit_exact) {
        cll_kernel_shape sh;
        memset(&sh, 0, sizeof sh);
        sh.wtype = t;
        sh.rows = rows;
        sh.cols = cols;
        sh.n_tokens = 1;
        const cll_kernel_row *def = cll_kernels_default(cll_cu_kernel_table(), CLL_KOP_GEMV, &sh, row->layout);
        const cll_cu_gemv_impl *di = def ? (const cll_cu_gemv_impl *)def->impl : NULL;
        if (def && def != row && di && di->gemv && di->layout == impl->layout && !impl->few) {
            float *dy2 = NULL;
            GATE_CU(poisoned(dev, &dy2, (size_t)(nb * y_stride)));
            cll_cu_gemv_args a2 = a;
            a2.y = dy2;
            GATE_CU(di->gemv(&w, &a2, 0));
            GATE_CU(cudaDeviceSynchronize());
            std::vector<float> y2((size_t)(nb * y_stride));
            GATE_CU(cudaMemcpy(y2.data(), dy2, y2.size() * sizeof(float), cudaMemcpyDeviceToHost));
            n_exact_diff = count_bit_diffs(y, y2, nb, rows, y_stride);
            /* control: the same count over a copy with one output's low bit flipped must see it */
            rep->exact_checked = true;
            rep->exact_control_failed = count_bit_diffs(y2, low_bit_flipped(y2, (size_t)(rows / 2)), nb, rows, y_stride) == 1;
            snprintf(rep->exact_ref, sizeof rep->exact_ref, "%s", def->name);
            rep->n_exact_diff = n_exact_diff;
            if (n_exact_diff)
                fprintf(stderr, "gate %s (%lldx%lld nb=%d): claims bit-exact with %s, %lld outputs differ\n", row->name,
                        (long long)rows, (long long)cols, nb, def->name, (long long)n_exact_diff);
        }
    }

    /* expectation */
    const size_t rb = (size_t)cll_row_bytes(t, (uint64_t)cols);
    std::vector<double> want((size_t)(nb * rows)), scale((size_t)(nb * rows));
    std::vector<float> got((size_t)(nb * rows)), wf((size_t)cols), xa((size_t)cols);
    std::vector<cll_block_q8_0> q80((size_t)nqb);
    const uint32_t vdt = tr->vec_dot_type;
    const bool exact_ref = impl->needs_q8 && (vdt == CLL_TYPE_Q8_0 || vdt == CLL_TYPE_Q8_1);
    snprintf(rep->ref, sizeof rep->ref, "%s",
             exact_ref ? (vdt == CLL_TYPE_Q8_0 ? "cll_vec_dot_ref (q8_0 = the q8_1 d,qs)" : "cll_vec_dot_ref (q8_1)")
             : impl->needs_q8 ? "f64 to_f32(w) . deq(q8_1 x)"
             : t == CLL_TYPE_BF16 ? "f64 to_f32(w) . bf16(x)" : "f64 to_f32(w) . x");
    for (int b = 0; b < nb; b++) {
        const int64_t xb = moe ? 0 : b;
        const cll_block_q8_1 *qa = impl->needs_q8 ? q8.data() + xb * nqb : NULL;
        if (qa) {
            for (int64_t i = 0; i < nqb; i++) {
                const float d = cll_fp16_to_f32(qa[i].d);
                q80[(size_t)i].d = qa[i].d;
                memcpy(q80[(size_t)i].qs, qa[i].qs, 32);
                for (int k = 0; k < 32; k++) xa[(size_t)(32 * i + k)] = d * (float)qa[i].qs[k];
            }
        } else {
            for (int64_t k = 0; k < cols; k++) {
                const float v = x[(size_t)(xb * x_stride + k)];
                xa[(size_t)k] = t == CLL_TYPE_BF16 ? cll_bf16_to_f32(cll_f32_to_bf16(v)) : v;
            }
        }
        if (ids[(size_t)b] < 0) { /* a foreign slot: exactly zero (scale 0: any other value fails) */
            for (int64_t r = 0; r < rows; r++) {
                const size_t o = (size_t)(b * rows + r);
                want[o] = 0.0;
                scale[o] = 0.0;
                got[o] = y[(size_t)(b * y_stride + r)];
            }
            continue;
        }
        for (int64_t r = 0; r < rows; r++) {
            const uint8_t *wr = W.data() + rb * (size_t)(ids[(size_t)b] * rows + r);
            tr->to_f32(wr, wf.data(), cols);
            double s = 0.0, m = 0.0;
            for (int64_t k = 0; k < cols; k++) {
                const double p = (double)wf[(size_t)k] * (double)xa[(size_t)k];
                s += p;
                m += fabs(p);
            }
            const size_t o = (size_t)(b * rows + r);
            if (exact_ref)
                s = cll_vec_dot_ref(t, wr, vdt == CLL_TYPE_Q8_0 ? (const void *)q80.data() : (const void *)qa, cols);
            want[o] = s;
            scale[o] = m;
            got[o] = y[(size_t)(b * y_stride + r)];
        }
    }
    const double tol = 1e-5;
    const Cmp c = compare(got.data(), want.data(), scale.data(), (int64_t)got.size(), tol);
    fill_report(rep, c, tol);
    rep->n_clobbered = count_clobbered(y, nb, rows, y_stride);
    rep->control_failed = control_fails(got.data(), want.data(), scale.data(), (int64_t)got.size(), tol);
    if (n_unstable) {
        fprintf(stderr, "gate %s (%lldx%lld nb=%d): a second launch changed %lld outputs\n", row->name, (long long)rows,
                (long long)cols, nb, (long long)n_unstable);
        rep->n_bad += n_unstable;
    }
    rep->n_bad += n_exact_diff;
    if (rep->exact_checked && !rep->exact_control_failed) rep->control_failed = false;
    if (nb == 1) {
        cll_status st = gate_tail(impl, &w, a, y, rows, rng, dev, rep);
        if (st != CLL_OK) return st;
        st = gate_tail_poll(row, impl, &w, a, y, rows, rng, dev, rep);
        if (st != CLL_OK) return st;
    }
    if (moe && impl->routes) {
        cll_status st = gate_self_route(row, impl, &w, a, rows, rng, dev);
        if (st != CLL_OK) return st;
    }
    if (moe && impl->acts) {
        cll_status st = gate_fused_act(row, impl, &w, a, rows, cols, rng, dev);
        if (st != CLL_OK) return st;
    }
    if (nb == 1 && impl->acts_out && rows >= 2) {
        cll_status st = gate_act_out(row, impl, &w, a, y, rows, dev);
        if (st != CLL_OK) return st;
        rep->act_out_checked = true;
    }
    return verdict(rep, moe ? "gemv moe" : "gemv");
}

/* ---- gemm ---- */
cll_status gate_gemm(const cll_kernel_row *row, int64_t rows, int64_t cols, int n, uint64_t seed, int layout,
                     cll_cuda_gate_report *rep) {
    const uint32_t t = row->wtype;
    const cll_type_traits *tr = cll_type_traits_get(t);
    if (!tr || !tr->to_f32 || n < 1 || rows < 1 || cols % tr->blck) return cll_err(CLL_ERR_ARG, "gate %s: bad shape", row->name);
    if (is_iq(t)) {
        cll_status st = gate_tables_into(rep);
        if (st != CLL_OK) return st;
    }
    Rng rng{seed * 0x9E3779B97F4A7C15ull + 7};
    const int64_t n_mat = 2, mat = 1, ldx = cols + 8, ldy = rows + 3;
    rep->n_mat = n_mat;
    std::vector<uint8_t> W;
    if (!make_weights(t, rows * n_mat, cols, rng, W)) return cll_err(CLL_ERR_UNSUPPORTED, "gate: no generator for %s", tr->name);
    std::vector<float> x((size_t)(n * ldx), 0.0f);
    for (auto &v : x) v = rng.uni();
    Dev dev;
    void *dw = NULL, *panel = NULL, *xh = NULL;
    float *dx = NULL, *dy = NULL;
    GATE_CU(dev.alloc(&dw, cll_cu_weight_bytes(t, layout, rows, cols, n_mat)));
    cll_cu_weight w;
    GATE_CU(cll_cu_weight_upload_l(&w, W.data(), t, layout, rows, cols, n_mat, dw));
    GATE_CU(dev.alloc((void **)&dx, x.size() * sizeof(float)));
    GATE_CU(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
    GATE_CU(poisoned(dev, &dy, (size_t)(n * ldy)));
    cll_cu_gemm_ctx g;
    g.panel_bytes = (size_t)cols * 2 * (size_t)(rows / 3 > 0 ? rows / 3 : 1); /* ~3 slabs */
    g.xh_bytes = (size_t)(n * cols) * 2;
    GATE_CU(dev.alloc(&panel, g.panel_bytes));
    GATE_CU(dev.alloc(&xh, g.xh_bytes));
    g.panel = panel;
    g.xh = xh;
    const cll_cu_gemv_impl *impl = (const cll_cu_gemv_impl *)row->impl;
    cudaError_t e;
    if (impl && impl->fgemm) { /* a fused row: matrix mat of the upload as a dense weight, split-K scratch */
        cll_cu_splitk sk;
        GATE_CU(splitk_scratch(dev, &sk));
        cll_cu_weight wm = w;
        wm.d += mat * w.mat_stride;
        wm.n_mat = 1;
        e = cll_cu_gemm_fused(&g, impl->fgemm, &wm, dx, ldx, n, dy, ldy, &sk, 0);
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        if (e == cudaSuccess) { /* the tickets are back at zero for the next launch */
            std::vector<int> tk(CLL_CU_SPLITK_TICKETS);
            e = cudaMemcpy(tk.data(), sk.tickets, tk.size() * sizeof(int), cudaMemcpyDeviceToHost);
            for (int v : tk)
                if (e == cudaSuccess && v != 0) return cll_err(CLL_ERR_INTERNAL, "gate %s: a split-K ticket left at %d", row->name, v);
        }
    } else {
        if (cublasCreate(&g.blas) != CUBLAS_STATUS_SUCCESS)
            return cll_err(CLL_ERR_DEVICE, "gate %s: cublasCreate failed", row->name);
        e = cll_cu_gemm(&g, &w, mat, dx, ldx, n, dy, ldy, 0);
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        cublasDestroy(g.blas);
    }
    GATE_CU(e);
    std::vector<float> y((size_t)(n * ldy));
    GATE_CU(cudaMemcpy(y.data(), dy, y.size() * sizeof(float), cudaMemcpyDeviceToHost));
    const size_t rb = (size_t)cll_row_bytes(t, (uint64_t)cols);
    std::vector<float> wf((size_t)(rows * cols)), got((size_t)(n * rows));
    for (int64_t r = 0; r < rows; r++) tr->to_f32(W.data() + rb * (size_t)(mat * rows + r), wf.data() + r * cols, cols);
    std::vector<double> want(got.size()), scale(got.size());
    for (int64_t i = 0; i < n; i++)
        for (int64_t r = 0; r < rows; r++) {
            double s = 0.0, m = 0.0;
            const float *wr = wf.data() + r * cols, *xr = x.data() + i * ldx;
            for (int64_t k = 0; k < cols; k++) {
                const double p = (double)wr[k] * (double)xr[k];
                s += p;
                m += fabs(p);
            }
            want[(size_t)(i * rows + r)] = s;
            scale[(size_t)(i * rows + r)] = m;
            got[(size_t)(i * rows + r)] = y[(size_t)(i * ldy + r)];
        }
    const double tol = t == CLL_TYPE_F32 ? 1e-5 : t == CLL_TYPE_BF16 ? 8e-3 : 2e-3;
    snprintf(rep->ref, sizeof rep->ref, "f64 to_f32(w) . x (bar: %s)",
             t == CLL_TYPE_F32 ? "f32" : t == CLL_TYPE_BF16 ? "bf16 x rounding" : "f16 panel + f16 x rounding");
    const Cmp c = compare(got.data(), want.data(), scale.data(), (int64_t)got.size(), tol);
    fill_report(rep, c, tol);
    rep->n_clobbered = count_clobbered(y, n, rows, ldy);
    rep->control_failed = control_fails(got.data(), want.data(), scale.data(), (int64_t)got.size(), tol);
    return verdict(rep, layout ? "gemm, split layout" : "gemm");
}

/* ---- grouped MoE product ---- */
/* n tokens choose k_used distinct experts of n_mat = 9 (expert 2 first for every token, so it
 * holds n slots, more than one tile when n > 64; expert 8 never); cll_cu_moe_sort buckets the
 * slots (checked: offsets = the host histogram, each expert's slots ascending, tile offsets),
 * then the row runs twice: gate/up form (x_div = k_used: the token's row) and down form
 * (x_div = 1: the slot's own row). Expectation f64 to_f32(w_e) . x; bar 2e-3 of sum |w x|
 * (f16 weight and f16 activation roundings, as the gemm's). */
cll_status gate_moe(const cll_kernel_row *row, int64_t rows, int64_t cols, int n, uint64_t seed, cll_cuda_gate_report *rep) {
    const uint32_t t = row->wtype;
    const cll_type_traits *tr = cll_type_traits_get(t);
    const cll_cu_gemv_impl *impl = (const cll_cu_gemv_impl *)row->impl;
    const int E = 9, K = 3;
    if (!tr || !tr->to_f32 || !impl || !impl->moe || n < 1 || rows < 1 || cols % tr->blck)
        return cll_err(CLL_ERR_ARG, "gate %s: bad shape or row", row->name);
    if (is_iq(t)) {
        cll_status st = gate_tables_into(rep);
        if (st != CLL_OK) return st;
    }
    Rng rng{seed * 0x9E3779B97F4A7C15ull + 11};
    rep->n_mat = E;
    const int64_t nk = (int64_t)n * K, ldy = rows + 3;
    std::vector<uint8_t> W;
    if (!make_weights(t, rows * E, cols, rng, W)) return cll_err(CLL_ERR_UNSUPPORTED, "gate: no generator for %s", tr->name);
    std::vector<int32_t> sel((size_t)nk);
    for (int i = 0; i < n; i++) {
        sel[(size_t)i * K] = 2;
        for (int k = 1; k < K; k++) {
            int32_t e;
            bool dup;
            do {
                e = (int32_t)(rng.next() % 8); /* 0..7: expert 8 stays empty */
                dup = false;
                for (int j = 0; j < k; j++) dup |= sel[(size_t)i * K + j] == e;
            } while (dup);
            sel[(size_t)i * K + k] = e;
        }
    }
    const int64_t ldx = cols + 8;
    std::vector<float> xt((size_t)(n * ldx)), xs((size_t)(nk * ldx));
    for (auto &v : xt) v = rng.uni();
    for (auto &v : xs) v = rng.uni();
    Dev dev;
    void *dw = NULL;
    float *dxt = NULL, *dxs = NULL, *dy = NULL;
    int32_t *dsel = NULL, *dids = NULL, *doff = NULL, *dtoff = NULL;
    void *dxh = NULL;
    GATE_CU(dev.alloc(&dxh, (size_t)(nk * cols) * 2));
    GATE_CU(dev.alloc(&dw, cll_cu_weight_bytes(t, impl->layout, rows, cols, E)));
    cll_cu_weight w;
    GATE_CU(cll_cu_weight_upload_l(&w, W.data(), t, impl->layout, rows, cols, E, dw));
    GATE_CU(dev.alloc((void **)&dxt, xt.size() * sizeof(float)));
    GATE_CU(dev.alloc((void **)&dxs, xs.size() * sizeof(float)));
    GATE_CU(cudaMemcpy(dxt, xt.data(), xt.size() * sizeof(float), cudaMemcpyHostToDevice));
    GATE_CU(cudaMemcpy(dxs, xs.data(), xs.size() * sizeof(float), cudaMemcpyHostToDevice));
    GATE_CU(dev.alloc((void **)&dsel, sel.size() * sizeof(int32_t)));
    GATE_CU(cudaMemcpy(dsel, sel.data(), sel.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    GATE_CU(dev.alloc((void **)&dids, sel.size() * sizeof(int32_t)));
    GATE_CU(dev.alloc((void **)&doff, (E + 1) * sizeof(int32_t)));
    GATE_CU(dev.alloc((void **)&dtoff, (E + 1) * sizeof(int32_t)));
    GATE_CU(cll_cu_moe_sort(dsel, nk, E, CLL_CU_MOE_BN, dids, doff, dtoff, 0));
    std::vector<int32_t> ids((size_t)nk), off(E + 1), toff(E + 1);
    GATE_CU(cudaMemcpy(ids.data(), dids, ids.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(off.data(), doff, off.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(toff.data(), dtoff, toff.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
    { /* the sort against the host */
        std::vector<int32_t> cnt(E, 0);
        for (int32_t e : sel) cnt[(size_t)e]++;
        int32_t o = 0, tt = 0;
        for (int e = 0; e <= E; e++) {
            if (off[(size_t)e] != o || toff[(size_t)e] != tt)
                return cll_err(CLL_ERR_INTERNAL, "gate %s: moe sort: expert %d offset %d tile %d, want %d %d", row->name, e,
                               off[(size_t)e], toff[(size_t)e], o, tt);
            if (e == E) break;
            int32_t prev = -1;
            for (int32_t j = o; j < o + cnt[(size_t)e]; j++) {
                const int32_t id = ids[(size_t)j];
                if (id <= prev || id >= nk || sel[(size_t)id] != e)
                    return cll_err(CLL_ERR_INTERNAL, "gate %s: moe sort: position %d holds slot %d (expert %d)", row->name,
                                   j, id, e);
                prev = id;
            }
            o += cnt[(size_t)e];
            tt += (cnt[(size_t)e] + CLL_CU_MOE_BN - 1) / CLL_CU_MOE_BN;
        }
    }
    const size_t rb = (size_t)cll_row_bytes(t, (uint64_t)cols);
    std::vector<float> wf((size_t)(rows * cols * E));
    for (int64_t r = 0; r < rows * E; r++) tr->to_f32(W.data() + rb * (size_t)r, wf.data() + r * cols, cols);
    std::vector<float> got((size_t)(2 * nk * rows));
    std::vector<double> want(got.size()), scale(got.size());
    /* the row over the sorted slots: x_div K reads the token's row (gate/up), 1 the slot's (down) */
    auto launch = [&](const float *x, int x_div) {
        cll_cu_moe_args a;
        memset(&a, 0, sizeof a);
        a.x = x;
        a.ldx = ldx;
        a.x_div = x_div;
        a.ids = dids;
        a.off = doff;
        a.toff = dtoff;
        a.n_expert = E;
        a.max_tiles = cll_cu_moe_max_tiles(nk, E);
        a.y = dy;
        a.ldy = ldy;
        a.n_slots = nk;
        a.xh = dxh;
        a.xh_bytes = (size_t)(nk * cols) * 2;
        return impl->moe(&w, &a, 0);
    };
    /* f64 w_e . x of every row of expert e's matrix (and sum |w x|, the bar's scale) */
    auto expect = [&](int32_t e, const float *xr, int64_t r, double *sm, double *m) {
        const float *we = wf.data() + (size_t)e * (size_t)(rows * cols) + r * cols;
        *sm = 0.0, *m = 0.0;
        for (int64_t k = 0; k < cols; k++) {
            const double p = (double)we[k] * (double)xr[k];
            *sm += p;
            *m += fabs(p);
        }
    };
    int64_t clobbered = 0;
    for (int form = 0; form < 2; form++) { /* 0: gate/up (x_div K), 1: down (x_div 1) */
        GATE_CU(poisoned(dev, &dy, (size_t)(nk * ldy)));
        cudaError_t e = launch(form ? dxs : dxt, form ? 1 : K);
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        GATE_CU(e);
        std::vector<float> y((size_t)(nk * ldy));
        GATE_CU(cudaMemcpy(y.data(), dy, y.size() * sizeof(float), cudaMemcpyDeviceToHost));
        clobbered += count_clobbered(y, nk, rows, ldy);
        for (int64_t j = 0; j < nk; j++) {
            const float *xr = form ? xs.data() + j * ldx : xt.data() + (j / K) * ldx;
            for (int64_t r = 0; r < rows; r++) {
                const size_t o = (size_t)((form * nk + j) * rows + r);
                expect(sel[(size_t)j], xr, r, &want[o], &scale[o]);
                got[o] = y[(size_t)(j * ldy + r)];
            }
        }
    }
    /* expert parallel (a tensor-parallel rank, cuda/driver.cu moe_ffn): the slots routed anew in a space of
     * E + 6 experts of which this rank holds [3, 3 + E): about half land on the others (ids 0..2 and
     * E+3..E+5). cll_cu_moe_localize gives them -1, the sort leaves them out (its total counts only this
     * rank's), the down form writes only this rank's rows, cll_cu_moe_zero_foreign zeroes the others'
     * (exactly 0.0f); this rank's rows join the comparison with the down form's expectation */
    {
        const int32_t e0 = 3;
        std::vector<int32_t> gsel(sel.size());
        for (size_t i = 0; i < sel.size(); i++) {
            const uint64_t u = rng.next() % 4;
            gsel[i] = u == 0 ? (int32_t)(rng.next() % 3) : u == 1 ? E + e0 + (int32_t)(rng.next() % 3) : sel[i] + e0;
        }
        int32_t *dgsel = NULL, *dlsel = NULL;
        GATE_CU(dev.alloc((void **)&dgsel, gsel.size() * sizeof(int32_t)));
        GATE_CU(dev.alloc((void **)&dlsel, gsel.size() * sizeof(int32_t)));
        GATE_CU(cudaMemcpy(dgsel, gsel.data(), gsel.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
        GATE_CU(cll_cu_moe_localize(dgsel, nk, e0, E, -1, dlsel, 0));
        std::vector<int32_t> lsel((size_t)nk);
        GATE_CU(cudaMemcpy(lsel.data(), dlsel, lsel.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
        int32_t mine = 0;
        for (int64_t j = 0; j < nk; j++) {
            const int32_t g = gsel[(size_t)j], want_l = g >= e0 && g < e0 + E ? g - e0 : -1;
            if (lsel[(size_t)j] != want_l)
                return cll_err(CLL_ERR_INTERNAL, "gate %s: moe localize: slot %lld (expert %d) -> %d, want %d", row->name,
                               (long long)j, g, lsel[(size_t)j], want_l);
            mine += want_l >= 0;
        }
        GATE_CU(cll_cu_moe_sort(dlsel, nk, E, CLL_CU_MOE_BN, dids, doff, dtoff, 0));
        int32_t placed = -1;
        GATE_CU(cudaMemcpy(&placed, doff + E, sizeof placed, cudaMemcpyDeviceToHost));
        if (placed != mine)
            return cll_err(CLL_ERR_INTERNAL, "gate %s: moe sort with foreign slots: %d placed, this rank's are %d", row->name,
                           placed, mine);
        GATE_CU(poisoned(dev, &dy, (size_t)(nk * ldy)));
        cudaError_t e = launch(dxs, 1);
        if (e == cudaSuccess) e = cll_cu_moe_zero_foreign(dgsel, nk, e0, E, dy, ldy, 0);
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        GATE_CU(e);
        std::vector<float> y((size_t)(nk * ldy));
        GATE_CU(cudaMemcpy(y.data(), dy, y.size() * sizeof(float), cudaMemcpyDeviceToHost));
        for (int64_t j = 0; j < nk; j++) {
            const int32_t l = lsel[(size_t)j];
            if (l < 0) {
                for (int64_t r = 0; r < rows; r++)
                    if (y[(size_t)(j * ldy + r)] != 0.0f)
                        return cll_err(CLL_ERR_INTERNAL, "gate %s: moe foreign slot %lld row %lld holds %g, not 0", row->name,
                                       (long long)j, (long long)r, (double)y[(size_t)(j * ldy + r)]);
                continue;
            }
            for (int64_t r = 0; r < rows; r++) {
                double sm, m;
                expect(l, xs.data() + j * ldx, r, &sm, &m);
                want.push_back(sm);
                scale.push_back(m);
                got.push_back(y[(size_t)(j * ldy + r)]);
            }
        }
        /* the rank's weighted sum of its slots (cll_cu_moe_combine, what it all-reduces) over these rows: the
         * f64 sum of the device's own rows, each token's K slots (foreign ones zero) */
        std::vector<float> w((size_t)nk);
        for (auto &v : w) v = 0.25f + 0.5f * std::fabs(rng.uni());
        float *dw = NULL, *dt = NULL;
        GATE_CU(dev.alloc((void **)&dw, w.size() * sizeof(float)));
        GATE_CU(poisoned(dev, &dt, (size_t)(n * rows)));
        GATE_CU(cudaMemcpy(dw, w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice));
        GATE_CU(cll_cu_moe_combine(dy, ldy, dw, n, K, rows, dt, 0));
        GATE_CU(cudaDeviceSynchronize());
        std::vector<float> t((size_t)(n * rows));
        GATE_CU(cudaMemcpy(t.data(), dt, t.size() * sizeof(float), cudaMemcpyDeviceToHost));
        for (int64_t i = 0; i < n; i++)
            for (int64_t r = 0; r < rows; r++) {
                double sm = 0.0, m = 0.0;
                for (int k = 0; k < K; k++) {
                    const double v = (double)y[(size_t)((i * K + k) * ldy + r)] * (double)w[(size_t)(i * K + k)];
                    sm += v;
                    m += std::fabs(v);
                }
                want.push_back(sm);
                scale.push_back(m);
                got.push_back(t[(size_t)(i * rows + r)]);
            }
    }
    const double tol = 2e-3;
    snprintf(rep->ref, sizeof rep->ref, "f64 to_f32(w_e) . x: gate/up, down, a rank's experts, its slot sum (bar: f16 w, x rounding)");
    const Cmp c = compare(got.data(), want.data(), scale.data(), (int64_t)got.size(), tol);
    fill_report(rep, c, tol);
    rep->n_clobbered = clobbered;
    rep->control_failed = control_fails(got.data(), want.data(), scale.data(), (int64_t)got.size(), tol);
    return verdict(rep, "moe grouped");
}

/* ---- tensor-core prefill attention ---- */
cll_status gate_attn_prefill(int hd, int n_head, int n_kv, int n, int p0, int n_swa, int splits, uint64_t seed,
                             cll_cuda_gate_report *rep) {
    if (hd <= 0 || n_head <= 0 || n_kv <= 0 || n_head % n_kv || n < 2 || p0 < 0)
        return cll_err(CLL_ERR_ARG, "gate attn prefill: bad shape");
    Rng rng{seed * 0x9E3779B97F4A7C15ull + 13};
    const int n_ctx = p0 + n + 40, seq = 1, n_seq = 2; /* the batch's sequence is not the first */
    const int64_t ldq = (int64_t)n_head * hd + 2 * (int64_t)n_kv * hd, kvw = (int64_t)n_kv * hd, row = (int64_t)n_head * hd;
    std::vector<float> q((size_t)(n * ldq));
    for (auto &v : q) v = cll_fp16_to_f32(cll_f32_to_fp16(rng.uni())); /* fp16-rounded, as upstream */
    std::vector<uint16_t> kc((size_t)n_seq * n_ctx * kvw), vc(kc.size());
    for (size_t i = 0; i < kc.size(); i++) {
        kc[i] = cll_f32_to_fp16(rng.uni());
        vc[i] = cll_f32_to_fp16(rng.uni());
    }
    /* cells past the batch's last position hold NaN: a read of them would show */
    for (int p = p0 + n; p < n_ctx; p++)
        for (int64_t e = 0; e < kvw; e++) kc[((size_t)seq * n_ctx + p) * kvw + e] = vc[((size_t)seq * n_ctx + p) * kvw + e] = 0x7E00;
    const float scale = 1.0f / sqrtf((float)hd);
    Dev dev;
    float *dq = NULL, *dout = NULL;
    void *dk = NULL, *dv = NULL;
    GATE_CU(dev.alloc((void **)&dq, q.size() * sizeof(float)));
    GATE_CU(cudaMemcpy(dq, q.data(), q.size() * sizeof(float), cudaMemcpyHostToDevice));
    GATE_CU(dev.alloc(&dk, kc.size() * 2));
    GATE_CU(dev.alloc(&dv, vc.size() * 2));
    GATE_CU(cudaMemcpy(dk, kc.data(), kc.size() * 2, cudaMemcpyHostToDevice));
    GATE_CU(cudaMemcpy(dv, vc.data(), vc.size() * 2, cudaMemcpyHostToDevice));
    GATE_CU(poisoned(dev, &dout, (size_t)(n * row)));
    cll_cu_attn_args a;
    memset(&a, 0, sizeof a);
    a.q = dq;
    a.ld_q = ldq;
    a.kc = dk;
    a.vc = dv;
    a.kv_f16 = true;
    a.n_head = n_head;
    a.n_kv = n_kv;
    a.hd_k = a.hd_v = hd;
    a.n_ctx = n_ctx;
    a.n_swa = n_swa;
    a.scale = scale;
    a.out = dout;
    a.prefill_contig = true;
    a.prefill_p0 = p0;
    a.prefill_seq = seq;
    a.pf_splits = splits > 0 ? splits : 1;
    if (splits > 1) { /* split-K over the keys: partials poisoned too (a split that wrote none would show) */
        a.part_cap = (int64_t)n * n_head * splits;
        GATE_CU(poisoned(dev, &a.part, (size_t)a.part_cap * (size_t)(hd + 2)));
    }
    if (!cll_cu_attention_prefill_ok(&a, n))
        return cll_err(CLL_ERR_UNSUPPORTED, "gate attn prefill: hd %d not served by the tensor-core kernel", hd);
    cudaError_t e = cll_cu_attention_prefill(&a, n, 0);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    GATE_CU(e);
    std::vector<float> got((size_t)(n * row));
    GATE_CU(cudaMemcpy(got.data(), dout, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    std::vector<double> want(got.size()), sc(got.size());
    std::vector<double> p((size_t)(p0 + n));
    for (int r = 0; r < n; r++) {
        const int qp = p0 + r, lo = n_swa > 0 && qp - n_swa + 1 > 0 ? qp - n_swa + 1 : 0;
        for (int h = 0; h < n_head; h++) {
            const int kvh = h / (n_head / n_kv);
            const float *qr = q.data() + (size_t)r * ldq + (size_t)h * hd;
            double mx = -INFINITY;
            for (int kp = lo; kp <= qp; kp++) {
                const uint16_t *kr = kc.data() + ((size_t)seq * n_ctx + kp) * kvw + (size_t)kvh * hd;
                double s = 0.0;
                for (int d = 0; d < hd; d++) s += (double)qr[d] * (double)cll_fp16_to_f32(kr[d]);
                p[(size_t)kp] = s * scale;
                if (p[(size_t)kp] > mx) mx = p[(size_t)kp];
            }
            double sum = 0.0;
            for (int kp = lo; kp <= qp; kp++) sum += (p[(size_t)kp] = exp(p[(size_t)kp] - mx));
            for (int d = 0; d < hd; d++) {
                double o = 0.0, m = 0.0;
                for (int kp = lo; kp <= qp; kp++) {
                    const double v = cll_fp16_to_f32(vc[((size_t)seq * n_ctx + kp) * kvw + (size_t)kvh * hd + d]);
                    o += p[(size_t)kp] * v;
                    m += p[(size_t)kp] * fabs(v);
                }
                want[(size_t)r * row + (size_t)h * hd + d] = o / sum;
                sc[(size_t)r * row + (size_t)h * hd + d] = m / sum; /* the weighted |v|: the bar's scale */
            }
        }
    }
    const double tol = 4e-3; /* P rounded to f16 (2^-11 relative) before P.V, f32 sums */
    snprintf(rep->ref, sizeof rep->ref, "f64 softmax(q.k * scale) . v (bar: f16 P rounding)");
    const Cmp c = compare(got.data(), want.data(), sc.data(), (int64_t)got.size(), tol);
    fill_report(rep, c, tol);
    rep->control_failed = control_fails(got.data(), want.data(), sc.data(), (int64_t)got.size(), tol);
    return verdict(rep, "attention prefill");
}

/* the rope and attention args of a one-token decode step over one layer's F16 cache (rope over the
 * whole head, base 10000; the gate and the bench); fuse_rope is left to the caller */
static void decode_attn_args(float *qkv, int64_t ldq, void *kc, void *vc, const int32_t *pos, const int32_t *seq, int hd,
                             int n_head, int n_kv, int n_ctx, cll_cu_kvmap map, int n_chunks, float *part, int *count,
                             float *out, cll_cu_rope_args *R, cll_cu_attn_args *a) {
    memset(R, 0, sizeof *R);
    R->qkv = qkv;
    R->ld = ldq;
    R->pos = pos;
    R->seq = seq;
    R->kc = kc;
    R->vc = vc;
    R->kv_f16 = true;
    R->n_head = n_head;
    R->n_kv = n_kv;
    R->hd_k = R->hd_v = hd;
    R->n_rot = hd;
    R->n_ctx = n_ctx;
    R->map = map;
    R->rp = cll_rope_make(10000.0f, 1.0f, 0.0f, 1.0f, hd, 0, 32.0f, 1.0f);
    R->q_scale = 1.0f;
    R->eps = 1e-6f;
    memset(a, 0, sizeof *a);
    a->q = qkv;
    a->ld_q = ldq;
    a->kc = kc;
    a->vc = vc;
    a->kv_f16 = true;
    a->pos = pos;
    a->seq = seq;
    a->n_head = n_head;
    a->n_kv = n_kv;
    a->hd_k = a->hd_v = hd;
    a->n_ctx = n_ctx;
    a->map = map;
    a->scale = 1.0f / sqrtf((float)hd);
    a->n_chunks = n_chunks;
    a->chunk = (n_ctx + n_chunks - 1) / n_chunks;
    a->part = part;
    a->count = count;
    a->out = out;
}

/* ---- MoE routing (cll_cu_moe_route) ----
 * Rows of router logits: random (3), all equal (ties: the lowest ids), all NaN, one NaN, one +inf
 * (the softmax of the last three is NaN everywhere: the lowest free ids, NaN weights, as the CPU's
 * moe_route). Bars: ids equal the host's (every id in [0, E), none twice); weights within 1e-6 of
 * the host's float softmax, NaN where the host's is NaN. sel / selw are poisoned (-7 / 12345). */
cll_status gate_moe_route(int32_t E, int32_t K, bool renorm, uint64_t seed, cll_cuda_gate_report *rep) {
    if (E < 1 || K < 1 || K > E) return cll_err(CLL_ERR_ARG, "gate moe route: bad shape");
    Rng rng{seed * 0x9E3779B97F4A7C15ull + 31};
    const int n = 7;
    std::vector<float> lg((size_t)n * E);
    for (int r = 0; r < n; r++) { /* distinct logits 3/E apart (no near-ties for expf's ulps to flip) */
        std::vector<int> perm((size_t)E);
        for (int x = 0; x < E; x++) perm[(size_t)x] = x;
        for (int x = E - 1; x > 0; x--) std::swap(perm[(size_t)x], perm[(size_t)(rng.next() % (uint64_t)(x + 1))]);
        for (int x = 0; x < E; x++) lg[(size_t)r * E + x] = r == 3 ? 0.25f : 3.0f * (float)perm[(size_t)x] / (float)E - 1.5f;
    }
    for (int x = 0; x < E; x++) lg[(size_t)4 * E + x] = NAN;
    lg[(size_t)5 * E + (size_t)(rng.next() % (uint64_t)E)] = NAN;
    lg[(size_t)6 * E + (size_t)(rng.next() % (uint64_t)E)] = INFINITY;
    /* the host: cpu/forward.c moe_route's steps */
    std::vector<int32_t> ws((size_t)n * K);
    std::vector<double> ww((size_t)n * K);
    for (int r = 0; r < n; r++) {
        std::vector<float> p(lg.begin() + (ptrdiff_t)r * E, lg.begin() + (ptrdiff_t)(r + 1) * E);
        float mx = -INFINITY;
        for (float v : p) mx = v > mx ? v : mx;
        double sum = 0.0;
        for (float &v : p) sum += (double)(v = expf(v - mx));
        const float inv = (float)(1.0 / sum);
        for (float &v : p) v *= inv;
        float wsum = 0.0f;
        for (int k = 0; k < K; k++) {
            int best = -1;
            for (int x = 0; x < E; x++) {
                bool taken = false;
                for (int j = 0; j < k; j++) taken |= ws[(size_t)r * K + j] == x;
                if (!taken && (best < 0 || (!isnan(p[(size_t)x]) && (isnan(p[(size_t)best]) || p[(size_t)x] > p[(size_t)best]))))
                    best = x;
            }
            ws[(size_t)r * K + k] = best;
            wsum += p[(size_t)best];
            ww[(size_t)r * K + k] = p[(size_t)best];
        }
        if (renorm) {
            if (wsum < 6.103515625e-5f) wsum = 6.103515625e-5f;
            for (int k = 0; k < K; k++) ww[(size_t)r * K + k] = (double)((float)ww[(size_t)r * K + k] / wsum);
        }
    }
    Dev dev;
    float *dlg = NULL, *dw = NULL;
    int32_t *ds = NULL;
    GATE_CU(dev.alloc((void **)&dlg, lg.size() * sizeof(float)));
    GATE_CU(cudaMemcpy(dlg, lg.data(), lg.size() * sizeof(float), cudaMemcpyHostToDevice));
    std::vector<int32_t> gs((size_t)n * K, -7);
    std::vector<float> gw((size_t)n * K, 12345.0f);
    GATE_CU(dev.alloc((void **)&ds, gs.size() * sizeof(int32_t)));
    GATE_CU(dev.alloc((void **)&dw, gw.size() * sizeof(float)));
    GATE_CU(cudaMemcpy(ds, gs.data(), gs.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    GATE_CU(cudaMemcpy(dw, gw.data(), gw.size() * sizeof(float), cudaMemcpyHostToDevice));
    GATE_CU(cll_cu_moe_route(dlg, n, E, K, renorm, ds, dw, 0));
    GATE_CU(cudaDeviceSynchronize());
    GATE_CU(cudaMemcpy(gs.data(), ds, gs.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(gw.data(), dw, gw.size() * sizeof(float), cudaMemcpyDeviceToHost));
    snprintf(rep->ref, sizeof rep->ref, "host softmax top-%d (NaN below numbers, ties to the lower id)%s", K,
             renorm ? ", renormalized" : "");
    int64_t ids_off = 0, nan_off = 0, unwritten = 0;
    std::vector<float> fg;
    std::vector<double> fw, fs;
    for (size_t i = 0; i < gs.size(); i++) {
        ids_off += gs[i] != ws[i];
        unwritten += gw[i] == 12345.0f;
        if (isnan(ww[i])) nan_off += !isnan(gw[i]);
        else {
            fg.push_back(gw[i]);
            fw.push_back(ww[i]);
            fs.push_back(1.0);
        }
    }
    const double tol = 1e-6;
    const Cmp c = compare(fg.data(), fw.data(), fs.data(), (int64_t)fg.size(), tol);
    fill_report(rep, c, tol);
    rep->n_out = (int64_t)gs.size();
    rep->n_bad += ids_off + nan_off + unwritten;
    rep->n_unwritten += unwritten;
    rep->control_failed = control_fails(fg.data(), fw.data(), fs.data(), (int64_t)fg.size(), tol);
    if (ids_off)
        for (int r = 0; r < n; r++)
            for (int k = 0; k < K; k++)
                if (gs[(size_t)r * K + k] != ws[(size_t)r * K + k])
                    return cll_err(CLL_ERR_INTERNAL, "gate moe route E %d K %d: row %d slot %d chose expert %d, the host %d "
                                   "(%lld ids off)", E, K, r, k, gs[(size_t)r * K + k], ws[(size_t)r * K + k],
                                   (long long)ids_off);
    return verdict(rep, "moe route");
}

/* ---- decode attention (the split GQA kernel: one token, or a batched step of rows in distinct sequences) ----
 * Two device runs on the same inputs: A = the rope kernel, then attention on the roped q; B = the
 * attention blocks doing the rope themselves (fuse_rope: the first K/V tile is staged before the
 * PDL wait and the newest row comes from the rope buffer; rows > 1: distinct_rows, row i in
 * sequence rows - i at position len - 1 - 3i, so the rows' lengths and cells differ). B must equal A
 * bit for bit (output and the stored cells); A is held to an f64 softmax over A's own roped q and
 * cache. */
cll_status gate_attn_decode(int hd, int n_head, int n_kv, int len, int n_chunks, bool paged, int warps, int act_chunks,
                            int form, int rows, int n_swa, uint64_t seed, cll_cuda_gate_report *rep) {
    if (hd <= 0 || n_head <= 0 || n_kv <= 0 || n_head % n_kv || rows < 1 || len < 3 * rows - 2 || n_chunks < 1 || n_swa < 0)
        return cll_err(CLL_ERR_ARG, "gate attn decode: bad shape");
    Rng rng{seed * 0x9E3779B97F4A7C15ull + 29};
    const int shift = 4, bs = 1 << shift;                     /* paged: 16-cell blocks */
    const int n_ctx = (len + 40 + bs - 1) / bs * bs, n_seq = rows + 1, R = rows;
    std::vector<int32_t> hpos((size_t)R), hseq((size_t)R);
    for (int i = 0; i < R; i++) {
        hpos[(size_t)i] = len - 1 - 3 * i;
        hseq[(size_t)i] = R - i;
    }
    const int nblk = n_ctx / bs;
    const int64_t ldq = (int64_t)n_head * hd + 2 * (int64_t)n_kv * hd, kvw = (int64_t)n_kv * hd, row = (int64_t)n_head * hd;
    std::vector<float> qkv((size_t)(ldq * R));
    for (auto &v : qkv) v = rng.uni();
    /* block table: sequence s's block b at cell block (n_seq*nblk - 1 - (s*nblk + b)) (reversed) */
    std::vector<int32_t> tab((size_t)n_seq * nblk);
    for (int i = 0; i < n_seq * nblk; i++) tab[(size_t)i] = n_seq * nblk - 1 - i;
    auto cell = [&](int sq, int p) -> int64_t {
        return paged ? (int64_t)tab[(size_t)sq * nblk + p / bs] * bs + p % bs : (int64_t)sq * n_ctx + p;
    };
    /* the first key of row i's window (n_swa: the newest n_swa keys); the cells before it stay NaN too,
     * so a kernel that reads past its window fails */
    auto lo_of = [&](int i) -> int { return n_swa > 0 && hpos[(size_t)i] - n_swa + 1 > 0 ? hpos[(size_t)i] - n_swa + 1 : 0; };
    std::vector<uint16_t> kc((size_t)n_seq * n_ctx * kvw, 0x7E00), vc(kc.size(), 0x7E00); /* NaN: unread cells */
    for (int i = 0; i < R; i++)
        for (int p = lo_of(i); p < hpos[(size_t)i]; p++)
            for (int64_t e = 0; e < kvw; e++) {
                kc[(size_t)(cell(hseq[(size_t)i], p) * kvw + e)] = cll_f32_to_fp16(rng.uni());
                vc[(size_t)(cell(hseq[(size_t)i], p) * kvw + e)] = cll_f32_to_fp16(rng.uni());
            }
    Dev dev;
    float *dqkv[2], *dout[2], *dpart;
    void *dk[2], *dv[2];
    int32_t *dpos, *dseq, *dtab, *dcount;
    const int64_t n_part = (int64_t)R * n_head * n_chunks * (hd + 2);
    for (int k = 0; k < 2; k++) {
        GATE_CU(dev.alloc((void **)&dqkv[k], qkv.size() * sizeof(float)));
        GATE_CU(cudaMemcpy(dqkv[k], qkv.data(), qkv.size() * sizeof(float), cudaMemcpyHostToDevice));
        GATE_CU(dev.alloc(&dk[k], kc.size() * 2));
        GATE_CU(dev.alloc(&dv[k], vc.size() * 2));
        GATE_CU(cudaMemcpy(dk[k], kc.data(), kc.size() * 2, cudaMemcpyHostToDevice));
        GATE_CU(cudaMemcpy(dv[k], vc.data(), vc.size() * 2, cudaMemcpyHostToDevice));
        GATE_CU(poisoned(dev, &dout[k], (size_t)(row * R)));
    }
    GATE_CU(dev.alloc((void **)&dpart, (size_t)n_part * sizeof(float)));
    GATE_CU(dev.alloc((void **)&dcount, (size_t)R * n_head * sizeof(int)));
    GATE_CU(cudaMemset(dcount, 0, (size_t)R * n_head * sizeof(int)));
    GATE_CU(dev.alloc((void **)&dtab, tab.size() * sizeof(int32_t)));
    GATE_CU(cudaMemcpy(dtab, tab.data(), tab.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    GATE_CU(dev.alloc((void **)&dpos, (size_t)R * sizeof(int32_t)));
    GATE_CU(dev.alloc((void **)&dseq, (size_t)R * sizeof(int32_t)));
    GATE_CU(cudaMemcpy(dpos, hpos.data(), (size_t)R * sizeof(int32_t), cudaMemcpyHostToDevice));
    GATE_CU(cudaMemcpy(dseq, hseq.data(), (size_t)R * sizeof(int32_t), cudaMemcpyHostToDevice));
    cll_cu_kvmap map = {paged ? dtab : NULL, nblk, shift};
    /* the TMA pipeline (STREAM_TMA over an unpaged cache): each pass's caches get their tensor maps; a
     * device that cannot make them fails the gate (the form would silently run STREAM_TC) */
    const bool tma = cll_cu_attn_form_tma(form) && cll_cu_attn_tma_serves(paged, true, hd);
    void *dmaps[2] = {NULL, NULL};
    for (int k = 0; tma && k < 2; k++) {
        GATE_CU(dev.alloc(&dmaps[k], 2 * CLL_CU_TMAP_BYTES));
        GATE_CU(cll_cu_attn_tmaps(dmaps[k], dk[k], dv[k], n_kv, hd, (int64_t)n_seq * n_ctx));
    }
    auto set_args = [&](int k, float *out, cll_cu_rope_args *Ra, cll_cu_attn_args *a) {
        decode_attn_args(dqkv[k], ldq, dk[k], dv[k], dpos, dseq, hd, n_head, n_kv, n_ctx, map, n_chunks, dpart, dcount,
                         out, Ra, a);
        a->warps = warps;
        a->act_chunks = act_chunks;
        a->form = form;
        a->distinct_rows = R > 1;
        a->n_swa = n_swa;
        if (dmaps[k]) {
            a->tmk = dmaps[k];
            a->tmv = (const uint8_t *)dmaps[k] + CLL_CU_TMAP_BYTES;
        }
    };
    for (int k = 0; k < 2; k++) {
        cll_cu_rope_args Ra;
        cll_cu_attn_args a;
        set_args(k, dout[k], &Ra, &a);
        cudaError_t e = cudaSuccess;
        if (k == 0) {
            e = cll_cu_qkv_rope_store(&Ra, R, 0);
        } else {
            a.fuse_rope = true;
            a.rope = Ra;
            /* the gap prefetch runs too (a hint: the results must not change) */
            a.pf = dk[0];
            a.pf_bytes = (kc.size() * 2) & ~(size_t)15;
            a.pf_kv_max = INT64_MAX;
            if (!cll_cu_attention_fuses_rope(&a, R))
                return cll_err(CLL_ERR_UNSUPPORTED, "gate attn decode: hd %d rows %d: no fused rope", hd, R);
        }
        if (e == cudaSuccess) e = cll_cu_attention(&a, R, 0);
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        GATE_CU(e);
    }
    std::vector<float> got[2];
    for (int k = 0; k < 2; k++) {
        got[k].resize((size_t)(row * R));
        GATE_CU(cudaMemcpy(got[k].data(), dout[k], (size_t)(row * R) * sizeof(float), cudaMemcpyDeviceToHost));
    }
    /* TMA: the same tile body fed by cp.async copies (STREAM_TC, fused, on pass B's buffers: its rope
     * stores the same cells again) must give the same bits */
    int64_t differ_tc = 0;
    if (tma) {
        float *dtc = NULL;
        GATE_CU(poisoned(dev, &dtc, (size_t)(row * R)));
        cll_cu_rope_args Ra;
        cll_cu_attn_args a;
        set_args(1, dtc, &Ra, &a);
        a.form = CLL_CU_ATTN_STREAM_TC;
        a.tmk = a.tmv = NULL;
        a.fuse_rope = true;
        a.rope = Ra;
        GATE_CU(cll_cu_attention(&a, R, 0));
        GATE_CU(cudaDeviceSynchronize());
        std::vector<float> tc((size_t)(row * R));
        GATE_CU(cudaMemcpy(tc.data(), dtc, tc.size() * sizeof(float), cudaMemcpyDeviceToHost));
        for (int64_t i = 0; i < row * R; i++)
            if (memcmp(&tc[(size_t)i], &got[1][(size_t)i], sizeof(float)) != 0) differ_tc++;
    }
    /* A's roped q (in place) and its cache (the new cells included) feed the reference */
    std::vector<float> q(qkv.size());
    GATE_CU(cudaMemcpy(q.data(), dqkv[0], q.size() * sizeof(float), cudaMemcpyDeviceToHost));
    std::vector<uint16_t> ka(kc.size()), va(vc.size()), kb(kc.size()), vb(vc.size());
    GATE_CU(cudaMemcpy(ka.data(), dk[0], ka.size() * 2, cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(va.data(), dv[0], va.size() * 2, cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(kb.data(), dk[1], kb.size() * 2, cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(vb.data(), dv[1], vb.size() * 2, cudaMemcpyDeviceToHost));
    if (ka != kb || va != vb)
        return cll_err(CLL_ERR_INTERNAL, "gate attn decode hd %d len %d rows %d: the fused rope stored another cache", hd,
                       len, R);
    int64_t differ = 0;
    for (int64_t i = 0; i < row * R; i++)
        if (memcmp(&got[0][(size_t)i], &got[1][(size_t)i], sizeof(float)) != 0) differ++;
    std::vector<double> want((size_t)(row * R)), sc((size_t)(row * R)), p((size_t)len);
    for (int i = 0; i < R; i++) {
        const int seq = hseq[(size_t)i], pos = hpos[(size_t)i], lo = lo_of(i);
        for (int h = 0; h < n_head; h++) {
            const int kvh = h / (n_head / n_kv);
            const float *qr = q.data() + (size_t)(i * ldq) + (size_t)h * hd;
            double mx = -INFINITY;
            for (int kp = lo; kp <= pos; kp++) {
                const uint16_t *kr = ka.data() + (size_t)(cell(seq, kp) * kvw) + (size_t)kvh * hd;
                double d = 0.0;
                for (int e = 0; e < hd; e++) d += (double)qr[e] * (double)cll_fp16_to_f32(kr[e]);
                p[(size_t)kp] = d / sqrt((double)hd);
                if (p[(size_t)kp] > mx) mx = p[(size_t)kp];
            }
            double sum = 0.0;
            for (int kp = lo; kp <= pos; kp++) sum += (p[(size_t)kp] = exp(p[(size_t)kp] - mx));
            for (int e = 0; e < hd; e++) {
                double o = 0.0, m = 0.0;
                for (int kp = lo; kp <= pos; kp++) {
                    const double v = cll_fp16_to_f32(va[(size_t)(cell(seq, kp) * kvw) + (size_t)kvh * hd + e]);
                    o += p[(size_t)kp] * v;
                    m += p[(size_t)kp] * fabs(v);
                }
                want[(size_t)(i * row + h * hd + e)] = o / sum;
                sc[(size_t)(i * row + h * hd + e)] = m / sum;
            }
        }
    }
    const double tol = 1e-5; /* f32 dots, softmax and sums over <= a few thousand keys (seen: <= 7.5e-8) */
    snprintf(rep->ref, sizeof rep->ref, "f64 softmax . v on the rope kernel's q and cache; fused == unfused bitwise%s",
             tma ? "; TMA == cp.async" : "");
    const Cmp c = compare(got[0].data(), want.data(), sc.data(), row * R, tol);
    fill_report(rep, c, tol);
    rep->control_failed = control_fails(got[0].data(), want.data(), sc.data(), row * R, tol);
    if (differ)
        return cll_err(CLL_ERR_INTERNAL, "gate attn decode hd %d heads %d/%d len %d chunks %d rows %d window %d: fused rope "
                       "differs from rope + attention in %lld of %lld outputs", hd, n_head, n_kv, len, n_chunks, R, n_swa,
                       (long long)differ, (long long)(row * R));
    if (differ_tc)
        return cll_err(CLL_ERR_INTERNAL, "gate attn decode hd %d heads %d/%d len %d chunks %d window %d: the TMA pipeline "
                       "differs from the cp.async one in %lld of %lld outputs", hd, n_head, n_kv, len, n_chunks, n_swa,
                       (long long)differ_tc, (long long)(row * R));
    return verdict(rep, "attention decode");
}

/* the layout the type's default gemv row uploads in (get_rows and the gemm read that too) */
int served_layout(uint32_t t) {
    const cll_cu_gemv_impl *g = cll_cu_gemv_default(t, 4096, 4096);
    return g ? g->layout : 0;
}

__global__ void k_fill_random(uint32_t *p, size_t n, uint32_t seed) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 0x9E3779B1u ^ seed;
        h ^= h >> 16;
        h *= 0x85EBCA6Bu;
        h ^= h >> 13;
        h *= 0xC2B2AE35u;
        h ^= h >> 16;
        p[i] = h & 0x3BFF3BFFu; /* keeps fp16 / bf16 / f32 fields finite and small */
    }
}

/* ---- the device decoders, run on the host (same source, __host__ __device__) ---- */
template <int T> bool check_decoder(uint64_t seed, char *why, size_t cap) {
    typedef CuFmt<T> F;
    const cll_type_traits *tr = cll_type_traits_get(T);
    Rng rng{seed};
    const int64_t nblk = 24, cols = nblk * F::QK;
    std::vector<uint8_t> W;
    if (!make_weights(T, 3, cols, rng, W)) {
        snprintf(why, cap, "%s: no generator", tr->name);
        return false;
    }
    const size_t rb = (size_t)cll_row_bytes(T, (uint64_t)cols);
    std::vector<float> wf((size_t)cols), x((size_t)cols), xa((size_t)cols);
    std::vector<cll_block_q8_1> q8((size_t)(cols / 32));
    std::vector<cll_block_q8_0> q80((size_t)(cols / 32));
    for (int r = 0; r < 3; r++) {
        const uint8_t *wr = W.data() + rb * (size_t)r;
        tr->to_f32(wr, wf.data(), cols);
        for (int64_t e = 0; e < cols; e++) { /* element decoder: bit-exact with to_f32 */
            const float v = F::deq(wr + (e / F::QK) * F::BB, (int)(e % F::QK));
            if (memcmp(&v, &wf[(size_t)e], 4)) {
                snprintf(why, cap, "%s deq: row %d element %lld: %.9g, to_f32 %.9g", tr->name, r, (long long)e, (double)v,
                         (double)wf[(size_t)e]);
                return false;
            }
        }
        for (auto &v : x) v = rng.uni();
        cll_quantize_q8_1(x.data(), q8.data(), cols);
        double want = 0.0, mag = 0.0;
        for (int64_t i = 0; i < cols / 32; i++) {
            q80[(size_t)i].d = q8[(size_t)i].d;
            memcpy(q80[(size_t)i].qs, q8[(size_t)i].qs, 32);
            for (int k = 0; k < 32; k++) xa[(size_t)(32 * i + k)] = cll_fp16_to_f32(q8[(size_t)i].d) * (float)q8[(size_t)i].qs[k];
        }
        for (int64_t e = 0; e < cols; e++) {
            want += (double)wf[(size_t)e] * xa[(size_t)e];
            mag += fabs((double)wf[(size_t)e] * xa[(size_t)e]);
        }
        if (tr->vec_dot_type == CLL_TYPE_Q8_0) want = cll_vec_dot_ref(T, wr, q80.data(), cols);
        if (tr->vec_dot_type == CLL_TYPE_Q8_1) want = cll_vec_dot_ref(T, wr, q8.data(), cols);
        double got = 0.0; /* the lanes' shares, in lane order */
        for (int64_t gi = 0; gi < cols / 32; gi++) {
            const cll_block_q8_1 &xb = q8[(size_t)gi];
            const int *xq = (const int *)xb.qs;
            for (int j = 0; j < 4; j++)
                got += F::dot(wr + (gi / F::GPB) * F::BB, (int)(gi % F::GPB), j, xq[j], xq[4 + j], cll_fp16_to_f32(xb.d),
                              cll_fp16_to_f32(xb.s));
        }
        if (!(fabs(got - want) <= 1e-5 * mag)) {
            snprintf(why, cap, "%s dot: row %d: %.9g, reference %.9g (sum|w x| %.3g)", tr->name, r, got, want, mag);
            return false;
        }
    }
    return true;
}

/* the split layout (cuda/matmul/split.cuh) on the host: the upload's repack of random rows,
 * element decoders bit-exact with to_f32, group dots summed per row within 1e-5 of the reference */
template <int T> bool check_split(uint64_t seed, char *why, size_t cap) {
    typedef CuSp<T> S;
    const cll_type_traits *tr = cll_type_traits_get(T);
    Rng rng{seed};
    const int64_t cols = 24 * 256, ng = cols / 32;
    std::vector<uint8_t> W;
    if (!make_weights(T, 3, cols, rng, W)) {
        snprintf(why, cap, "%s split: no generator", tr->name);
        return false;
    }
    const size_t rb = (size_t)cll_row_bytes(T, (uint64_t)cols), rs = cll_cu_row_stride(T, CLL_CU_LAYOUT_SPLIT, cols);
    const cll_cu_sp_ops *ops = cll_cu_sp_ops_get(T);
    /* the strides by layout: layout 0 the file's row bytes, the split form its own (IQ3_S: 17 B a
     * group, the others the file's), rounded to 16; no stride for a layout the type lacks or a ragged
     * row; a weight's bytes are its rows' strides */
    const size_t db = ops->row_bytes(cols), a16 = ~(size_t)15;
    const bool wider = SpBytes<S>::wider; /* the form says its rows are wider than the file's */
    if (cll_cu_row_stride(T, 0, cols) != ((rb + 15) & a16) || rs != ((db + 15) & a16) ||
        (wider ? db <= rb : db != rb) || (T == CLL_TYPE_IQ3_S && (!wider || db != (size_t)(cols / 32) * 17)) ||
        cll_cu_row_stride(T, 2, cols) != 0 ||
        (S::QK > 32 && cll_cu_row_stride(T, CLL_CU_LAYOUT_SPLIT, cols + 32) != 0) ||
        cll_cu_weight_bytes(T, CLL_CU_LAYOUT_SPLIT, 5, cols, 3) != rs * 15 ||
        cll_cu_row_stride(CLL_TYPE_IQ2_XXS, CLL_CU_LAYOUT_SPLIT, cols) != 0) {
        snprintf(why, cap, "%s split: strides: layout 0 %zu, split %zu (row bytes %zu, file %zu)", tr->name,
                 cll_cu_row_stride(T, 0, cols), rs, db, rb);
        return false;
    }
    /* the device row bytes the stride is sized from hold everything the repack writes (one row
     * into a guarded buffer first: a short stride would overrun P below) */
    std::vector<uint8_t> G(2 * rs + 64, 0xA5);
    ops->pack(W.data(), G.data(), 1, cols, rb, rs);
    for (size_t i = db; i < G.size(); i++)
        if (G[i] != 0xA5) {
            snprintf(why, cap, "%s split: the repack wrote byte %zu of a row of %zu device bytes (stride %zu)", tr->name, i, db, rs);
            return false;
        }
    std::vector<uint8_t> P(rs * 3, 0);
    ops->pack(W.data(), P.data(), 3, cols, rb, rs);
    std::vector<float> wf((size_t)cols), x((size_t)cols), xa((size_t)cols);
    std::vector<cll_block_q8_1> q8((size_t)ng);
    std::vector<cll_block_q8_0> q80((size_t)ng);
    for (int r = 0; r < 3; r++) {
        const uint8_t *wr = W.data() + rb * (size_t)r, *pr = P.data() + rs * (size_t)r;
        tr->to_f32(wr, wf.data(), cols);
        for (int64_t e = 0; e < cols; e++) {
            const float v = S::deq(pr, ng, e);
            if (memcmp(&v, &wf[(size_t)e], 4)) {
                snprintf(why, cap, "%s split deq: row %d element %lld: %.9g, to_f32 %.9g", tr->name, r, (long long)e,
                         (double)v, (double)wf[(size_t)e]);
                return false;
            }
        }
        for (int64_t g = 0; g < ng; g++) { /* the group decoder (panels, grouped MoE tiles) gives deq's floats */
            float v[32];
            S::deq32(pr, ng, g, v);
            for (int l = 0; l < 32; l++)
                if (memcmp(&v[l], &wf[(size_t)(32 * g + l)], 4)) {
                    snprintf(why, cap, "%s split deq32: row %d element %lld: %.9g, to_f32 %.9g", tr->name, r,
                             (long long)(32 * g + l), (double)v[l], (double)wf[(size_t)(32 * g + l)]);
                    return false;
                }
        }
        for (auto &v : x) v = rng.uni();
        cll_quantize_q8_1(x.data(), q8.data(), cols);
        double want = 0.0, mag = 0.0;
        for (int64_t i = 0; i < ng; i++) {
            q80[(size_t)i].d = q8[(size_t)i].d;
            memcpy(q80[(size_t)i].qs, q8[(size_t)i].qs, 32);
            for (int k = 0; k < 32; k++) xa[(size_t)(32 * i + k)] = cll_fp16_to_f32(q8[(size_t)i].d) * (float)q8[(size_t)i].qs[k];
        }
        for (int64_t e = 0; e < cols; e++) {
            want += (double)wf[(size_t)e] * xa[(size_t)e];
            mag += fabs((double)wf[(size_t)e] * xa[(size_t)e]);
        }
        if (tr->vec_dot_type == CLL_TYPE_Q8_0) want = cll_vec_dot_ref(T, wr, q80.data(), cols);
        if (tr->vec_dot_type == CLL_TYPE_Q8_1) want = cll_vec_dot_ref(T, wr, q8.data(), cols);
        double got = 0.0;
        for (int64_t g = 0; g < ng; g++) got += S::dot(S::load(pr, ng, g), g, sp_ldx(&q8[(size_t)g]));
        if (!(fabs(got - want) <= 1e-5 * mag)) {
            snprintf(why, cap, "%s split dot: row %d: %.9g, reference %.9g (sum|w x| %.3g)", tr->name, r, got, want, mag);
            return false;
        }
    }
    return true;
}

} // namespace

extern "C" bool cll_cuda_resid_poll_served(uint32_t type, int64_t rows, int64_t cols) {
    const cll_cu_gemv_impl *g = cll_cu_gemv_default(type, rows, cols);
    if (!g || !g->gemv) return false;
    cll_cu_weight w;
    memset(&w, 0, sizeof w);
    w.type = type;
    w.layout = g->layout;
    w.rows = rows;
    w.cols = cols;
    w.n_mat = 1;
    return cll_cu_resid_poll_ok(g->gemv, &w);
}

/* ---- public ---- */
extern "C" cll_status cll_cuda_gate_decoders(void) {
    char why[256] = "";
    const bool ok = check_decoder<CLL_TYPE_Q4_0>(1, why, sizeof why) && check_decoder<CLL_TYPE_Q4_1>(2, why, sizeof why) &&
                    check_decoder<CLL_TYPE_Q5_0>(3, why, sizeof why) && check_decoder<CLL_TYPE_Q5_1>(4, why, sizeof why) &&
                    check_decoder<CLL_TYPE_Q8_0>(5, why, sizeof why) && check_decoder<CLL_TYPE_IQ4_NL>(6, why, sizeof why) &&
                    check_decoder<CLL_TYPE_Q2_K>(7, why, sizeof why) && check_decoder<CLL_TYPE_Q3_K>(8, why, sizeof why) &&
                    check_decoder<CLL_TYPE_Q4_K>(9, why, sizeof why) && check_decoder<CLL_TYPE_Q5_K>(10, why, sizeof why) &&
                    check_decoder<CLL_TYPE_Q6_K>(11, why, sizeof why) && check_decoder<CLL_TYPE_IQ2_XXS>(12, why, sizeof why) &&
                    check_decoder<CLL_TYPE_IQ2_XS>(13, why, sizeof why) && check_decoder<CLL_TYPE_IQ2_S>(14, why, sizeof why) &&
                    check_decoder<CLL_TYPE_IQ3_XXS>(15, why, sizeof why) && check_decoder<CLL_TYPE_IQ3_S>(16, why, sizeof why) &&
                    check_decoder<CLL_TYPE_IQ4_XS>(17, why, sizeof why) && check_split<CLL_TYPE_Q4_0>(21, why, sizeof why) &&
                    check_split<CLL_TYPE_Q8_0>(22, why, sizeof why) && check_split<CLL_TYPE_Q5_1>(23, why, sizeof why) &&
                    check_split<CLL_TYPE_Q4_K>(24, why, sizeof why) && check_split<CLL_TYPE_Q6_K>(25, why, sizeof why) &&
                    check_split<CLL_TYPE_IQ4_XS>(26, why, sizeof why) && check_split<CLL_TYPE_IQ3_S>(27, why, sizeof why) &&
                    check_split<CLL_TYPE_Q5_K>(28, why, sizeof why) &&
                    check_split<CLL_TYPE_Q3_K>(29, why, sizeof why) &&
                    check_split<CLL_TYPE_Q4_1>(30, why, sizeof why) && check_split<CLL_TYPE_Q5_0>(31, why, sizeof why) &&
                    check_split<CLL_TYPE_IQ4_NL>(32, why, sizeof why) && check_split<CLL_TYPE_Q2_K>(33, why, sizeof why);
    return ok ? CLL_OK : cll_err(CLL_ERR_INTERNAL, "decoder host check: %s", why);
}

extern "C" cll_status cll_cuda_gate_row(const cll_kernel_row *row, int64_t rows, int64_t cols, int nb, uint64_t seed,
                                        cll_cuda_gate_report *rep) {
    init_report(rep, row ? row->name : "(null)", row ? row->op : 0, row ? row->wtype : 0, rows, cols, nb);
    if (!row) return cll_err(CLL_ERR_ARG, "gate: no row");
    if (row->op & CLL_KOP_GEMV) return gate_gemv(row, rows, cols, nb, seed, rep);
    if (row->op & CLL_KOP_MOE) return gate_moe(row, rows, cols, nb, seed, rep);
    if (row->op & CLL_KOP_GEMM) { /* layout 0, and the layout the default gemv row serves the type in */
        const cll_cu_gemv_impl *impl = (const cll_cu_gemv_impl *)row->impl;
        if (impl && impl->fgemm) return gate_gemm(row, rows, cols, nb, seed, impl->layout, rep); /* its own layout */
        cll_status st = gate_gemm(row, rows, cols, nb, seed, 0, rep);
        const int l = served_layout(row->wtype);
        if (st == CLL_OK && l != 0) {
            init_report(rep, row->name, row->op, row->wtype, rows, cols, nb);
            st = gate_gemm(row, rows, cols, nb, seed, l, rep);
        }
        return st;
    }
    return cll_err(CLL_ERR_ARG, "gate %s: op %u", row->name, row->op);
}

static cll_status gate_get_rows_l(uint32_t t, int64_t rows, int64_t cols, int n_ids, uint64_t seed, int layout,
                                  cll_cuda_gate_report *rep) {
    char name[64];
    snprintf(name, sizeof name, "get_rows_%s", cll_type_name(t));
    init_report(rep, name, 0, t, rows, cols, n_ids);
    const cll_type_traits *tr = cll_type_traits_get(t);
    if (!tr || !tr->to_f32 || !cll_cu_type_served(t) || n_ids < 1 || rows < 1 || cols % tr->blck)
        return cll_err(CLL_ERR_ARG, "gate %s: bad type or shape", name);
    if (is_iq(t)) {
        cll_status st = gate_tables_into(rep);
        if (st != CLL_OK) return st;
    }
    Rng rng{seed * 0xD1B54A32D192ED03ull + 3};
    std::vector<uint8_t> W;
    if (!make_weights(t, rows, cols, rng, W)) return cll_err(CLL_ERR_UNSUPPORTED, "gate: no generator for %s", tr->name);
    std::vector<int32_t> ids((size_t)n_ids);
    for (auto &v : ids) v = (int32_t)(rng.next() % (uint64_t)rows);
    ids[0] = (int32_t)(rows - 1);
    if (n_ids > 1) ids[(size_t)n_ids - 1] = ids[0]; /* a repeat */
    const int64_t ld = cols + 1;
    const float sc2 = 1.7320508f;
    Dev dev;
    void *dw = NULL;
    int32_t *dids = NULL;
    float *d1 = NULL, *d2 = NULL;
    GATE_CU(dev.alloc(&dw, cll_cu_weight_bytes(t, layout, rows, cols, 1)));
    cll_cu_weight w;
    GATE_CU(cll_cu_weight_upload_l(&w, W.data(), t, layout, rows, cols, 1, dw));
    GATE_CU(dev.alloc((void **)&dids, ids.size() * sizeof(int32_t)));
    GATE_CU(cudaMemcpy(dids, ids.data(), ids.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    GATE_CU(poisoned(dev, &d1, (size_t)(n_ids * ld)));
    GATE_CU(poisoned(dev, &d2, (size_t)(n_ids * ld)));
    GATE_CU(cll_cu_get_rows(&w, dids, n_ids, d1, ld, 1.0f, 0));
    GATE_CU(cll_cu_get_rows(&w, dids, n_ids, d2, ld, sc2, 0));
    GATE_CU(cudaDeviceSynchronize());
    std::vector<float> y1((size_t)(n_ids * ld)), y2(y1.size());
    GATE_CU(cudaMemcpy(y1.data(), d1, y1.size() * sizeof(float), cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(y2.data(), d2, y2.size() * sizeof(float), cudaMemcpyDeviceToHost));
    const size_t rb = (size_t)cll_row_bytes(t, (uint64_t)cols);
    std::vector<float> wf((size_t)cols), got;
    std::vector<double> want, scale;
    for (int i = 0; i < n_ids; i++) {
        tr->to_f32(W.data() + rb * (size_t)ids[(size_t)i], wf.data(), cols);
        for (int64_t k = 0; k < cols; k++) {
            got.push_back(y1[(size_t)(i * ld + k)]);
            want.push_back(wf[(size_t)k]);
            got.push_back(y2[(size_t)(i * ld + k)]);
            want.push_back((double)(wf[(size_t)k] * sc2));
        }
    }
    scale.assign(want.size(), 0.0); /* exact */
    snprintf(rep->ref, sizeof rep->ref, "to_f32 (bit-exact), and to_f32 * %.7g in f32", (double)sc2);
    const Cmp c = compare(got.data(), want.data(), scale.data(), (int64_t)got.size(), 0.0);
    fill_report(rep, c, 0.0);
    rep->n_clobbered = count_clobbered(y1, n_ids, cols, ld) + count_clobbered(y2, n_ids, cols, ld);
    rep->control_failed = control_fails(got.data(), want.data(), scale.data(), (int64_t)got.size(), 0.0);
    return verdict(rep, layout ? "get_rows, split layout" : "get_rows");
}

/* both layouts the type can be resident in */
extern "C" cll_status cll_cuda_gate_get_rows(uint32_t t, int64_t rows, int64_t cols, int n_ids, uint64_t seed,
                                             cll_cuda_gate_report *rep) {
    cll_status st = gate_get_rows_l(t, rows, cols, n_ids, seed, 0, rep);
    const int l = served_layout(t);
    if (st == CLL_OK && l != 0) st = gate_get_rows_l(t, rows, cols, n_ids, seed, l, rep);
    return st;
}

extern "C" cll_status cll_cuda_gate_quantize(int64_t n, int64_t cols, uint64_t seed, cll_cuda_gate_report *rep) {
    init_report(rep, "quantize_q8_1", 0, CLL_TYPE_Q8_1, n, cols, (int)n);
    if (n < 1 || cols < 32 || cols % 32) return cll_err(CLL_ERR_ARG, "gate quantize: bad shape");
    Rng rng{seed + 11};
    const int64_t ld = cols + 4, nqb = cols / 32;
    std::vector<float> x((size_t)(n * ld));
    for (size_t i = 0; i < x.size(); i++) x[i] = rng.uni() * (i % 5 == 0 ? 8.0f : 1.0f);
    for (int64_t k = 0; k < 32 && k < cols; k++) x[(size_t)k] = 0.0f; /* an all-zero block */
    x[(size_t)(32 + 3)] = 0.5f * 127.0f / 63.5f; /* a few exact halves (round-half-even) */
    Dev dev;
    float *dx = NULL;
    void *dq = NULL;
    GATE_CU(dev.alloc((void **)&dx, x.size() * sizeof(float)));
    GATE_CU(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
    GATE_CU(dev.alloc(&dq, (size_t)(n * nqb) * sizeof(cll_block_q8_1)));
    GATE_CU(cll_cu_quantize_q8_1(dx, ld, n, cols, dq, 0));
    std::vector<cll_block_q8_1> got((size_t)(n * nqb)), ref((size_t)nqb);
    GATE_CU(cudaMemcpy(got.data(), dq, got.size() * sizeof(cll_block_q8_1), cudaMemcpyDeviceToHost));
    int64_t bad = 0;
    for (int64_t r = 0; r < n; r++) {
        cll_quantize_q8_1(x.data() + r * ld, ref.data(), cols);
        for (int64_t i = 0; i < nqb; i++)
            if (memcmp(&ref[(size_t)i], &got[(size_t)(r * nqb + i)], sizeof(cll_block_q8_1))) bad++;
    }
    rep->n_out = n * nqb;
    rep->n_bad = bad;
    rep->q8_exact = bad == 0;
    snprintf(rep->ref, sizeof rep->ref, "cll_quantize_q8_1 bytes");
    /* control: a flipped byte in the expectation must be seen */
    cll_quantize_q8_1(x.data(), ref.data(), cols);
    ref[0].qs[5] ^= 1;
    rep->control_failed = memcmp(&ref[0], &got[0], sizeof(cll_block_q8_1)) != 0;
    return verdict(rep, "quantize");
}

/* The one-GPU split's all-reduce (cuda/comm.cu, every rank on GPU 0): n ranks, each a host thread with its
 * own stream and rows, all-reduce `rounds` times (fresh rows each round: the events are reused); every
 * rank's rows must equal the host's sum in rank order ((r0 + r1) + r2 ...) bit for bit, on every rank.
 * Control: one flipped bit of the expectation must be counted. Report: rows = n ranks, cols = count. */
namespace {
struct comm_rank {
    cll_driver_comm *c;
    int32_t r, rounds;
    int64_t count;
    float *d;                   /* (rounds x count) this rank's rows, one slab a round */
    cudaStream_t st;
    cll_status status;
    char err[160];
};
void *comm_rank_main(void *p) {
    comm_rank *a = (comm_rank *)p;
    a->status = CLL_OK;
    if (cudaSetDevice(0) != cudaSuccess) a->status = CLL_ERR_DEVICE;
    for (int32_t k = 0; k < a->rounds && a->status == CLL_OK; k++)
        a->status = cll_cu_comm_allreduce(a->c, a->r, a->d + (size_t)k * (size_t)a->count, a->count, a->st);
    if (a->status == CLL_OK && cudaStreamSynchronize(a->st) != cudaSuccess) a->status = CLL_ERR_DEVICE;
    if (a->status != CLL_OK) snprintf(a->err, sizeof a->err, "%s", cll_last_error());
    return NULL;
}
} // namespace

extern "C" cll_status cll_cuda_gate_comm_local(int32_t n, int64_t count, uint64_t seed, cll_cuda_gate_report *rep) {
    init_report(rep, "allreduce_local", 0, CLL_TYPE_F32, n, count, n);
    const int32_t rounds = 3;
    if (n < 2 || n > 8 || count < 1) return cll_err(CLL_ERR_ARG, "gate comm: bad shape");
    Rng rng{seed * 0x9E3779B97F4A7C15ull + 31};
    std::vector<std::vector<float>> h((size_t)n, std::vector<float>((size_t)(rounds * count)));
    for (auto &v : h)
        for (auto &x : v) x = 8.0f * rng.uni() * (rng.next() % 13 == 0 ? 64.0f : 1.0f);
    int32_t devs[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    GATE_CU(cudaSetDevice(0));
    cll_driver_comm *c = NULL;
    cll_status st = cll_cu_comm_create(n, devs, &c);
    if (st != CLL_OK) return st;
    Dev dev;
    comm_rank ranks[8] = {}; /* a rank never set up has no stream to destroy */
    for (int32_t r = 0; r < n && st == CLL_OK; r++) {
        ranks[r] = comm_rank{c, r, rounds, count, NULL, NULL, CLL_OK, ""};
        if (dev.alloc((void **)&ranks[r].d, h[(size_t)r].size() * sizeof(float)) != cudaSuccess ||
            cudaMemcpy(ranks[r].d, h[(size_t)r].data(), h[(size_t)r].size() * sizeof(float), cudaMemcpyHostToDevice) !=
                cudaSuccess ||
            cudaStreamCreateWithFlags(&ranks[r].st, cudaStreamNonBlocking) != cudaSuccess)
            st = cll_err(CLL_ERR_DEVICE, "gate comm: device buffers or streams");
    }
    /* the copies above may return before they land; the rank streams do not wait for the default stream */
    if (st == CLL_OK && cudaDeviceSynchronize() != cudaSuccess) st = cll_err(CLL_ERR_DEVICE, "gate comm: setup copies");
    pthread_t th[8];
    int32_t started = 0;
    for (int32_t r = 0; r < n && st == CLL_OK; r++) {
        if (pthread_create(&th[r], NULL, comm_rank_main, &ranks[r])) {
            st = cll_err(CLL_ERR_INTERNAL, "gate comm: thread");
            cll_cu_comm_abort(c, true);
            break;
        }
        started++;
    }
    for (int32_t r = 0; r < started; r++) pthread_join(th[r], NULL);
    for (int32_t r = 0; r < started && st == CLL_OK; r++)
        if (ranks[r].status != CLL_OK) st = cll_err(ranks[r].status, "gate comm: rank %d: %s", r, ranks[r].err);
    std::vector<float> got((size_t)(n * rounds * count));
    for (int32_t r = 0; r < n && st == CLL_OK; r++)
        if (cudaMemcpy(got.data() + (size_t)r * (size_t)(rounds * count), ranks[r].d,
                       (size_t)(rounds * count) * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess)
            st = cll_err(CLL_ERR_DEVICE, "gate comm: copy back");
    for (int32_t r = 0; r < n; r++)
        if (ranks[r].st) cudaStreamDestroy(ranks[r].st);
    cll_cu_comm_free(c);
    if (st != CLL_OK) return st;
    /* the expectation: the rank-order sum, on every rank */
    std::vector<float> want((size_t)(rounds * count));
    for (size_t j = 0; j < want.size(); j++) {
        float v = h[0][j];
        for (int32_t r = 1; r < n; r++) v += h[(size_t)r][j];
        want[j] = v;
    }
    int64_t bad = 0;
    for (int32_t r = 0; r < n; r++)
        bad += memcmp(got.data() + (size_t)r * want.size(), want.data(), want.size() * sizeof(float)) != 0;
    const std::vector<float> moved = low_bit_flipped(want, want.size() / 2);
    rep->control_failed = memcmp(got.data(), moved.data(), moved.size() * sizeof(float)) != 0;
    rep->n_out = (int64_t)got.size();
    rep->n_bad = bad;
    rep->tol = 0.0;
    snprintf(rep->ref, sizeof rep->ref, "host f32 sum in rank order, bit for bit on every rank");
    return verdict(rep, "all-reduce, every rank on one GPU");
}

/* The activation kernel's two forms (cuda/ops/norm.cu): n rows at once (four values a thread, the prompt's
 * and a batched step's form) against the same rows launched one at a time (a value a thread, the decode
 * step's form): y, its q8_1 bytes and its f16 rows in both orders (the fused rows' and plain; f % 32 == 0)
 * bit for bit; y alone skipped (NULL) leaves the others unchanged. SiLU rows also within 1e-6 of the host's
 * g u / (1 + e^-g) in double. Control: one flipped bit of the expectation must be counted. */
extern "C" cll_status cll_cuda_gate_act(int64_t n, int64_t f, bool gelu, uint64_t seed, cll_cuda_gate_report *rep) {
    init_report(rep, gelu ? "act_gelu_q8" : "act_silu_q8", 0, CLL_TYPE_Q8_1, n, f, (int)n);
    if (n < 2 || f < 4 || f % 4) return cll_err(CLL_ERR_ARG, "gate act: bad shape");
    Rng rng{seed * 0x9E3779B97F4A7C15ull + 29};
    const int64_t ld = 2 * f + 4, nqb = (f + 31) / 32; /* a padded row stride, as a gate|up slice of a wider buffer */
    const bool h = f % 32 == 0;
    std::vector<float> gu((size_t)(n * ld));
    for (size_t i = 0; i < gu.size(); i++) gu[i] = 6.0f * rng.uni() * (i % 37 == 0 ? 4.0f : 1.0f);
    Dev dev;
    float *dgu = NULL, *dy[2] = {NULL, NULL};
    void *dq[2] = {NULL, NULL}, *dh[2][2] = {{NULL, NULL}, {NULL, NULL}};
    GATE_CU(dev.alloc((void **)&dgu, gu.size() * sizeof(float)));
    GATE_CU(cudaMemcpy(dgu, gu.data(), gu.size() * sizeof(float), cudaMemcpyHostToDevice));
    for (int k = 0; k < 2; k++) {
        GATE_CU(poisoned(dev, &dy[k], (size_t)(n * f)));
        GATE_CU(dev.alloc(&dq[k], (size_t)(n * nqb) * sizeof(cll_block_q8_1)));
        GATE_CU(cudaMemset(dq[k], 0xA5, (size_t)(n * nqb) * sizeof(cll_block_q8_1)));
        for (int o = 0; o < 2; o++) {
            GATE_CU(dev.alloc(&dh[k][o], (size_t)(n * f) * 2));
            GATE_CU(cudaMemset(dh[k][o], 0xA5, (size_t)(n * f) * 2));
        }
    }
    /* k = 0: one row a launch (the reference); k = 1: the n rows at once */
    for (int64_t r = 0; r < n; r++) {
        GATE_CU(cll_cu_act_q8(dgu + r * ld, ld, 1, f, gelu, dy[0] + r * f, (cll_block_q8_1 *)dq[0] + r * nqb, 0, NULL, 0,
                              h ? (uint16_t *)dh[0][0] + r * f : NULL, false));
        if (h) GATE_CU(cll_cu_act_q8(dgu + r * ld, ld, 1, f, gelu, dy[0] + r * f, NULL, 0, NULL, 0,
                                     (uint16_t *)dh[0][1] + r * f, true));
    }
    GATE_CU(cll_cu_act_q8(dgu, ld, n, f, gelu, dy[1], dq[1], 0, NULL, 0, h ? dh[1][0] : NULL, false));
    if (h) GATE_CU(cll_cu_act_q8(dgu, ld, n, f, gelu, NULL, NULL, 0, NULL, 0, dh[1][1], true)); /* y skipped */
    GATE_CU(cudaDeviceSynchronize());
    std::vector<uint8_t> a[2][4];
    const size_t sz[4] = {(size_t)(n * f) * 4, (size_t)(n * nqb) * sizeof(cll_block_q8_1), (size_t)(n * f) * 2,
                          (size_t)(n * f) * 2};
    for (int k = 0; k < 2; k++) {
        const void *src[4] = {dy[k], dq[k], dh[k][0], dh[k][1]};
        for (int o = 0; o < 4; o++) {
            a[k][o].resize(sz[o]);
            GATE_CU(cudaMemcpy(a[k][o].data(), src[o], sz[o], cudaMemcpyDeviceToHost));
        }
    }
    int64_t bad = 0, outs = 0;
    for (int o = 0; o < (h ? 4 : 2); o++) { /* per 4-byte word (y, q8_1) or f16 value */
        const size_t w = o < 2 ? 4 : 2;
        for (size_t i = 0; i + w <= sz[o]; i += w, outs++) bad += memcmp(&a[0][o][i], &a[1][o][i], w) != 0;
    }
    double max_err = 0.0;
    if (!gelu) {
        const float *y = (const float *)a[1][0].data();
        for (int64_t r = 0; r < n; r++)
            for (int64_t j = 0; j < f; j++) {
                const double g = gu[(size_t)(r * ld + j)], u = gu[(size_t)(r * ld + f + j)], want = g * u / (1.0 + exp(-g));
                const double e = fabs((double)y[r * f + j] - want) / (fabs(want) + 1e-3);
                max_err = e > max_err ? e : max_err;
                bad += !(e <= 1e-6);
            }
    }
    rep->n_out = outs;
    rep->n_bad = bad;
    rep->max_err = max_err;
    rep->tol = gelu ? 0.0 : 1e-6;
    snprintf(rep->ref, sizeof rep->ref, "one-row launches, bitwise (y, q8_1, f16 both orders)%s",
             gelu ? "" : "; host SiLU in double");
    a[0][1][5] ^= 1; /* control: a flipped q8_1 bit */
    rep->control_failed = memcmp(a[0][1].data(), a[1][1].data(), sz[1]) != 0;
    return verdict(rep, "act");
}

/* Two one-token products in one launch (cll_cu_gemv_pair) against the two launches of the same rows (each
 * type's one-token default at its shape, what an untuned step runs): y1 and y2 sit in one NaN-poisoned
 * buffer with a gap of 3 between them and 5 past the end; every output must have the launches' bits, the
 * gaps must stay poison, and a one-bit flip of the launches' output must be counted (the control).
 * want_served false: the pair must be declined (cudaErrorNotSupported, nothing written). */
extern "C" cll_status cll_cuda_gate_gemv_pair(uint32_t t1, uint32_t t2, int64_t rows1, int64_t rows2, int64_t cols,
                                              bool want_served, uint64_t seed, cll_cuda_gate_report *rep) {
    char name[64];
    snprintf(name, sizeof name, "gemv_pair_%s_%s", cll_type_name(t1), cll_type_name(t2));
    init_report(rep, name, CLL_KOP_GEMV, t1, rows1 + rows2, cols, 1);
    const cll_cu_gemv_impl *i1 = cll_cu_gemv_default(t1, rows1, cols), *i2 = cll_cu_gemv_default(t2, rows2, cols);
    if (!i1 || !i2 || !i1->gemv || !i2->gemv || i1->layout != CLL_CU_LAYOUT_SPLIT || i2->layout != CLL_CU_LAYOUT_SPLIT)
        return cll_err(CLL_ERR_UNSUPPORTED, "gate %s: no split one-token row for a type", name);
    if (is_iq(t1) || is_iq(t2)) {
        cll_status st = gate_tables_into(rep);
        if (st != CLL_OK) return st;
    }
    Rng rng{seed * 0xD1B54A32D192ED03ull + 11};
    std::vector<uint8_t> W1, W2;
    if (!make_weights(t1, rows1, cols, rng, W1) || !make_weights(t2, rows2, cols, rng, W2))
        return cll_err(CLL_ERR_UNSUPPORTED, "gate %s: no weight generator", name);
    std::vector<float> x((size_t)cols);
    for (int64_t k = 0; k < cols; k++) x[(size_t)k] = rng.uni() * (k % 89 == 0 ? 4.0f : 1.0f);
    Dev dev;
    void *dw1 = NULL, *dw2 = NULL, *dxq = NULL;
    float *dx = NULL, *dy[2] = {NULL, NULL};
    cll_cu_weight w1, w2;
    GATE_CU(dev.alloc(&dw1, cll_cu_weight_bytes(t1, CLL_CU_LAYOUT_SPLIT, rows1, cols, 1)));
    GATE_CU(dev.alloc(&dw2, cll_cu_weight_bytes(t2, CLL_CU_LAYOUT_SPLIT, rows2, cols, 1)));
    GATE_CU(cll_cu_weight_upload_l(&w1, W1.data(), t1, CLL_CU_LAYOUT_SPLIT, rows1, cols, 1, dw1));
    GATE_CU(cll_cu_weight_upload_l(&w2, W2.data(), t2, CLL_CU_LAYOUT_SPLIT, rows2, cols, 1, dw2));
    GATE_CU(dev.alloc((void **)&dx, x.size() * sizeof(float)));
    GATE_CU(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
    GATE_CU(dev.alloc(&dxq, (size_t)(cols / 32) * sizeof(cll_block_q8_1)));
    GATE_CU(cll_cu_quantize_q8_1(dx, cols, 1, cols, dxq, 0));
    const int64_t off2 = rows1 + 3, ny = off2 + rows2 + 5;
    for (int k = 0; k < 2; k++) GATE_CU(poisoned(dev, &dy[k], (size_t)ny));
    cll_cu_gemv_args a;
    memset(&a, 0, sizeof a);
    a.nb = 1;
    a.xq = dxq;
    a.pf_next = w1.d; /* the next-weight L2 prefetch runs too (a hint: the bits must not change) */
    a.pf_bytes = w1.mat_stride;
    a.y = dy[0];
    GATE_CU(i1->gemv(&w1, &a, 0));
    a.y = dy[0] + off2;
    GATE_CU(i2->gemv(&w2, &a, 0));
    a.y = NULL;
    const cudaError_t e = cll_cu_gemv_pair(i1->gemv, &w1, dy[1], i2->gemv, &w2, dy[1] + off2, &a, 0);
    if (e != cudaSuccess && e != cudaErrorNotSupported) GATE_CU(e);
    GATE_CU(cudaDeviceSynchronize());
    std::vector<float> y0((size_t)ny), y1((size_t)ny);
    GATE_CU(cudaMemcpy(y0.data(), dy[0], (size_t)ny * sizeof(float), cudaMemcpyDeviceToHost));
    GATE_CU(cudaMemcpy(y1.data(), dy[1], (size_t)ny * sizeof(float), cudaMemcpyDeviceToHost));
    snprintf(rep->ref, sizeof rep->ref, "the two rows' own launches, bitwise");
    int64_t written = 0;
    for (int64_t i = 0; i < ny; i++) written += !isnan(y1[(size_t)i]);
    if (!want_served) { /* declined: nothing launched, every element still poison */
        rep->n_out = ny;
        rep->n_bad = written + (e != cudaErrorNotSupported);
        rep->control_failed = true; /* nothing to perturb: the check is the poison itself */
        snprintf(rep->ref, sizeof rep->ref, "declined: every element still poison");
        rep->passed = rep->n_bad == 0;
        if (!rep->passed)
            return cll_err(CLL_ERR_INTERNAL, "gate %s (%lld+%lld x %lld): a pair the one-launch form must decline was %s",
                           name, (long long)rows1, (long long)rows2, (long long)cols,
                           e == cudaSuccess ? "launched" : "declined but wrote outputs");
        return CLL_OK;
    }
    if (e == cudaErrorNotSupported)
        return cll_err(CLL_ERR_INTERNAL, "gate %s (%lld+%lld x %lld): the one-launch form declined the pair (rows %s / %s)", name,
                       (long long)rows1, (long long)rows2, (long long)cols, cll_type_name(t1), cll_type_name(t2));
    snprintf(rep->exact_ref, sizeof rep->exact_ref, "two launches");
    rep->exact_checked = true;
    /* the two output ranges against the launches' bits; the gaps after each must stay poison */
    int64_t diff = 0, unwritten = 0, clobbered = 0;
    for (int64_t i = 0; i < ny; i++) {
        if (i < rows1 || (i >= off2 && i < off2 + rows2)) {
            diff += memcmp(&y0[(size_t)i], &y1[(size_t)i], 4) != 0;
            unwritten += isnan(y1[(size_t)i]) || isnan(y0[(size_t)i]);
        } else
            clobbered += !isnan(y1[(size_t)i]);
    }
    rep->n_out = rows1 + rows2;
    rep->n_exact_diff = diff;
    rep->n_unwritten = unwritten;
    rep->n_bad = diff + unwritten;
    rep->n_clobbered = clobbered;
    /* control: one flipped low bit in part 2 must be counted */
    rep->exact_control_failed = count_bit_diffs(y0, low_bit_flipped(y0, (size_t)(off2 + rows2 / 2)), 1, ny, ny) == 1;
    rep->control_failed = rep->exact_control_failed;
    return verdict(rep, "gemv pair");
}

extern "C" cll_status cll_cuda_gate_tables(void) {
    bool same = false;
    GATE_CU(cll_cu_iq_tables_check(&same));
    return same ? CLL_OK : cll_err(CLL_ERR_INTERNAL, "gate: device i-quant codebooks (or the IQ4_XS sign-mode lookup, cu_kv8d) differ "
                                                  "from formats/iq_tables.c");
}

extern "C" cll_status cll_cuda_bench_row_us(const cll_kernel_row *row, int64_t rows, int64_t cols, int nb, int reps,
                                            double *gbps, double *us) {
    if (!row || !(row->op & CLL_KOP_GEMV) || !row->impl) return cll_err(CLL_ERR_ARG, "bench: not a gemv row");
    const cll_cu_gemv_impl *impl = (const cll_cu_gemv_impl *)row->impl;
    const uint32_t t = row->wtype;
    const size_t wbytes = cll_cu_weight_bytes(t, impl->layout, rows, cols, 1);
    if (!wbytes || !impl->gemv || nb < 1 || reps < 1) return cll_err(CLL_ERR_ARG, "bench %s: bad shape", row->name);
    const size_t ring_min = (size_t)256 << 20;
    int64_t copies = (int64_t)((ring_min + wbytes - 1) / wbytes);
    if (copies < 1) copies = 1;
    Dev dev;
    uint8_t *dw = NULL;
    float *dx = NULL, *dy = NULL;
    void *dq = NULL;
    GATE_CU(dev.alloc((void **)&dw, wbytes * (size_t)copies));
    const size_t nwords = wbytes * (size_t)copies / 4;
    k_fill_random<<<1024, 256>>>((uint32_t *)dw, nwords, 0x1234567u);
    GATE_CU(cudaGetLastError());
    const int64_t x_stride = (cols + 3) & ~(int64_t)3;
    GATE_CU(dev.alloc((void **)&dx, (size_t)(nb * x_stride) * sizeof(float)));
    k_fill_random<<<64, 256>>>((uint32_t *)dx, (size_t)(nb * x_stride), 0x89abcdu);
    GATE_CU(cudaGetLastError());
    GATE_CU(dev.alloc((void **)&dy, (size_t)(nb * rows) * sizeof(float)));
    if (impl->needs_q8) {
        GATE_CU(dev.alloc(&dq, (size_t)(nb * (cols / 32)) * sizeof(cll_block_q8_1)));
        GATE_CU(cll_cu_quantize_q8_1(dx, x_stride, nb, cols, dq, 0));
    }
    std::vector<cll_cu_weight> ws((size_t)copies);
    for (int64_t c = 0; c < copies; c++) {
        cll_cu_weight_desc(&ws[(size_t)c], t, impl->layout, rows, cols, 1, dw + (size_t)c * wbytes);
    }
    cll_cu_gemv_args a;
    memset(&a, 0, sizeof a);
    a.nb = nb;
    a.mat_ids = NULL;
    a.x = dx;
    a.x_stride = x_stride;
    a.xq = dq;
    a.xq_stride = cols / 32;
    a.y = dy;
    a.y_stride = rows;
    if (impl->few) GATE_CU(splitk_scratch(dev, &a.sk)); /* what a step gives the few-token rows */
    cudaEvent_t e0, e1;
    GATE_CU(cudaEventCreate(&e0));
    GATE_CU(cudaEventCreate(&e1));
    float ms = 0.0f;
    cudaError_t err = cudaSuccess;
    /* warm-up: >= 150 ms of launches */
    int64_t launches = 0;
    for (int round = 0; round < 1000 && err == cudaSuccess; round++) {
        cudaEventRecord(e0, 0);
        for (int64_t c = 0; c < copies && err == cudaSuccess; c++) err = impl->gemv(&ws[(size_t)c], &a, 0);
        cudaEventRecord(e1, 0);
        cudaEventSynchronize(e1);
        float m = 0.0f;
        cudaEventElapsedTime(&m, e0, e1);
        ms += m;
        if (ms >= 150.0f) break;
    }
    if (err == cudaSuccess) {
        cudaEventRecord(e0, 0);
        for (int r = 0; r < reps && err == cudaSuccess; r++)
            for (int64_t c = 0; c < copies && err == cudaSuccess; c++, launches++) err = impl->gemv(&ws[(size_t)c], &a, 0);
        cudaEventRecord(e1, 0);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&ms, e0, e1);
    }
    if (err == cudaSuccess) err = cudaDeviceSynchronize();
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    GATE_CU(err);
    const double sec = (double)ms / 1e3 / (double)launches;
    *gbps = (double)wbytes / sec / 1e9;
    if (us) *us = sec * 1e6;
    return CLL_OK;
}

/* the decode attention as a step runs it (fused rope, F16 cache, one token at position len - 1,
 * n_ctx / CLL_CU_ATTN_CHUNK-style chunks given as n_chunks), over `layers` separate caches and
 * q|k|v rows so the K/V rows stream as a step's layers do; one CUDA graph of the layers' launches
 * (programmatic dependent launch as in a step), replayed: microseconds per launch */
extern "C" cll_status cll_cuda_bench_attn_us(int hd, int n_head, int n_kv, int len, int n_ctx, int n_chunks, int act_chunks,
                                             int form, int layers, int reps, double *us) {
    if (hd <= 0 || n_head <= 0 || n_kv <= 0 || n_head % n_kv || len < 1 || len > n_ctx || n_chunks < 1 || layers < 1 ||
        reps < 1)
        return cll_err(CLL_ERR_ARG, "bench attn: bad shape");
    const int64_t ldq = (int64_t)n_head * hd + 2 * (int64_t)n_kv * hd, kvw = (int64_t)n_kv * hd;
    const size_t cache = (size_t)n_ctx * (size_t)kvw; /* halves per layer and K or V */
    Dev dev;
    uint16_t *dk = NULL, *dv = NULL;
    float *dqkv = NULL, *dout = NULL, *dpart = NULL;
    int32_t *dpos = NULL, *dseq = NULL, *dcount = NULL;
    GATE_CU(dev.alloc((void **)&dk, cache * (size_t)layers * 2));
    GATE_CU(dev.alloc((void **)&dv, cache * (size_t)layers * 2));
    k_fill_random<<<1024, 256>>>((uint32_t *)dk, cache * (size_t)layers / 2, 0x51u);
    k_fill_random<<<1024, 256>>>((uint32_t *)dv, cache * (size_t)layers / 2, 0x52u);
    GATE_CU(cudaGetLastError());
    GATE_CU(dev.alloc((void **)&dqkv, (size_t)(ldq * layers) * sizeof(float)));
    k_fill_random<<<64, 256>>>((uint32_t *)dqkv, (size_t)(ldq * layers), 0x53u);
    GATE_CU(cudaGetLastError());
    GATE_CU(dev.alloc((void **)&dout, (size_t)n_head * hd * sizeof(float)));
    GATE_CU(dev.alloc((void **)&dpart, (size_t)n_head * n_chunks * (hd + 2) * sizeof(float)));
    GATE_CU(dev.alloc((void **)&dcount, (size_t)n_head * sizeof(int)));
    GATE_CU(cudaMemset(dcount, 0, (size_t)n_head * sizeof(int)));
    const int32_t hpos = len - 1, hseq = 0;
    GATE_CU(dev.alloc((void **)&dpos, sizeof(int32_t)));
    GATE_CU(dev.alloc((void **)&dseq, sizeof(int32_t)));
    GATE_CU(cudaMemcpy(dpos, &hpos, sizeof hpos, cudaMemcpyHostToDevice));
    GATE_CU(cudaMemcpy(dseq, &hseq, sizeof hseq, cudaMemcpyHostToDevice));
    /* where the form may run a TMA pipeline (asked for, or AUTO's): each layer's tensor maps, as a state makes them */
    uint8_t *dmaps = NULL;
    if (cll_cu_attn_tma_wanted(form, n_head / n_kv) && cll_cu_attn_tma_serves(false, true, hd)) {
        GATE_CU(dev.alloc((void **)&dmaps, (size_t)layers * 2 * CLL_CU_TMAP_BYTES));
        for (int l = 0; l < layers; l++)
            GATE_CU(cll_cu_attn_tmaps(dmaps + (size_t)l * 2 * CLL_CU_TMAP_BYTES, dk + cache * (size_t)l,
                                      dv + cache * (size_t)l, n_kv, hd, n_ctx));
    }
    cudaStream_t st;
    GATE_CU(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cudaError_t err = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    for (int l = 0; l < layers && err == cudaSuccess; l++) {
        cll_cu_rope_args R;
        cll_cu_attn_args a;
        const cll_cu_kvmap flat = {NULL, 0, 0};
        decode_attn_args(dqkv + (int64_t)l * ldq, ldq, dk + cache * (size_t)l, dv + cache * (size_t)l, dpos, dseq, hd,
                         n_head, n_kv, n_ctx, flat, n_chunks, dpart, dcount, dout, &R, &a);
        a.fuse_rope = true;
        a.rope = R;
        a.act_chunks = act_chunks;
        a.form = form;
        if (dmaps) {
            a.tmk = dmaps + (size_t)l * 2 * CLL_CU_TMAP_BYTES;
            a.tmv = dmaps + (size_t)l * 2 * CLL_CU_TMAP_BYTES + CLL_CU_TMAP_BYTES;
        }
        err = cll_cu_attention(&a, 1, st);
    }
    cudaError_t e2 = cudaStreamEndCapture(st, &graph);
    if (err == cudaSuccess) err = e2;
    if (err == cudaSuccess) err = cudaGraphInstantiate(&exec, graph, 0);
    cudaEvent_t e0 = NULL, e1 = NULL;
    if (err == cudaSuccess) err = cudaEventCreate(&e0);
    if (err == cudaSuccess) err = cudaEventCreate(&e1);
    float ms = 0.0f;
    for (int w = 0; w < 20 && err == cudaSuccess; w++) err = cudaGraphLaunch(exec, st); /* warm-up */
    if (err == cudaSuccess) err = cudaEventRecord(e0, st);
    for (int r = 0; r < reps && err == cudaSuccess; r++) err = cudaGraphLaunch(exec, st);
    if (err == cudaSuccess) err = cudaEventRecord(e1, st);
    if (err == cudaSuccess) err = cudaEventSynchronize(e1);
    if (err == cudaSuccess) err = cudaEventElapsedTime(&ms, e0, e1);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    cudaStreamDestroy(st);
    GATE_CU(err);
    *us = (double)ms * 1e3 / ((double)reps * layers);
    return CLL_OK;
}

extern "C" cll_status cll_cuda_bench_row(const cll_kernel_row *row, int64_t rows, int64_t cols, int nb, int reps, double *gbps) {
    return cll_cuda_bench_row_us(row, rows, cols, nb, reps, gbps, NULL);
}

extern "C" cll_status cll_cuda_gate_moe_route(int32_t n_expert, int32_t k, bool renorm, uint64_t seed,
                                              cll_cuda_gate_report *rep) {
    char name[64];
    snprintf(name, sizeof name, "moe_route_e%d_k%d%s", n_expert, k, renorm ? "_renorm" : "");
    init_report(rep, name, 0, CLL_TYPE_F32, 7, n_expert, k);
    return gate_moe_route(n_expert, k, renorm, seed, rep);
}

extern "C" cll_status cll_cuda_gate_attn_decode(int hd, int n_head, int n_kv, int len, int n_chunks, bool paged,
                                                int warps, int act_chunks, int form, int rows, int n_swa, uint64_t seed,
                                                cll_cuda_gate_report *rep) {
    char name[64];
    const int G = n_kv > 0 ? n_head / n_kv : 1;
    const int hg = cll_cu_attn_heads_per_block(n_head, n_kv, n_chunks, rows, CLL_CU_ATTN_MIN_BLOCKS), n_sub = (G + hg - 1) / hg;
    const int live = cll_cu_attn_live_chunks(act_chunks, n_chunks);
    const bool stream = cll_cu_attn_form_stream(form);
    const int w = stream ? 8 : cll_cu_attn_warps(warps, (int64_t)n_kv * n_sub * live * rows, cll_cu_sm_count(), hd, hg, true);
    char cap[16] = "", rw[32] = "";
    if (act_chunks > 0) snprintf(cap, sizeof cap, "_c%d", act_chunks);
    if (rows > 1) snprintf(rw, sizeof rw, "_r%d", rows);
    if (n_swa > 0) snprintf(rw + strlen(rw), sizeof rw - strlen(rw), "_swa%d", n_swa);
    /* the form that runs (a tensor-core request above head dim 128 runs the CUDA-core body) */
    int runs = stream ? cll_cu_attn_form(form, true, len, rows, hd, G) : form;
    if (cll_cu_attn_form_tma(runs) && !cll_cu_attn_tma_serves(paged, true, hd)) runs = CLL_CU_ATTN_STREAM_TC;
    snprintf(name, sizeof name, "attn_decode%s_hd%d_w%d%s%s%s",
             runs == CLL_CU_ATTN_STREAM_TMA_TK ? "_stream_tma_tk"
             : runs == CLL_CU_ATTN_STREAM_TMA ? "_stream_tma"
             : runs == CLL_CU_ATTN_STREAM_TC ? "_stream_tc"
             : stream                       ? "_stream"
                                            : "",
             hd, w, cap, rw,
             paged ? "_paged" : "");
    init_report(rep, name, 0, CLL_TYPE_F16, len, hd, n_head);
    return gate_attn_decode(hd, n_head, n_kv, len, n_chunks, paged, warps, act_chunks, form, rows, n_swa, seed, rep);
}

extern "C" cll_status cll_cuda_gate_attn_prefill(int hd, int n_head, int n_kv, int n, int p0, int n_swa, int splits,
                                                 uint64_t seed, cll_cuda_gate_report *rep) {
    char name[64];
    snprintf(name, sizeof name, "attn_prefill_tc_hd%d_split%d", hd, splits > 1 ? splits : 1);
    init_report(rep, name, 0, CLL_TYPE_F16, n, hd, n_head);
    return gate_attn_prefill(hd, n_head, n_kv, n, p0, n_swa, splits, seed, rep);
}
