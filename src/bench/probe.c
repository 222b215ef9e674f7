/* bench/probe: who measured, on what, with which build — the provenance of a record.
 * Reads /proc/cpuinfo and /proc/meminfo, asks nvidia-smi when it exists, and asks git
 * about the source tree the binary was built from (CLLAMA_SOURCE_DIR) at run time. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/bench.h"

/* first line of a command's stdout, trimmed; false if it printed nothing or failed */
static bool run_line(const char *cmd, char *buf, size_t cap) {
    FILE *p = popen(cmd, "r");
    if (!p) return false;
    bool ok = fgets(buf, (int)cap, p) != NULL;
    if (pclose(p) != 0) ok = false;
    if (ok) buf[strcspn(buf, "\r\n")] = 0;
    return ok && *buf;
}

char *cll_bench_git_sha(void) {
    char sha[128], cmd[4200], dirty[16];
    /* a binary built on one machine and run on another (the lent GPU box) carries the sha it was
     * built from: the checkout beside it there is not the one it was built in */
    const char *env = getenv("CLLAMA_GIT_SHA");
    if (env && *env) return strdup(env);
    snprintf(cmd, sizeof cmd, "git -C '%s' rev-parse HEAD 2>/dev/null", CLLAMA_SOURCE_DIR);
    if (!run_line(cmd, sha, sizeof sha)) return strdup("unknown");
    /* a measurement of uncommitted code says so; the records and board this very run rewrites
     * (bench/) are outputs, not code, and do not count */
    snprintf(cmd, sizeof cmd, "git -C '%s' status --porcelain -uno -- . ':(exclude)bench' 2>/dev/null | head -1 | wc -l",
             CLLAMA_SOURCE_DIR);
    if (run_line(cmd, dirty, sizeof dirty) && atoi(dirty) > 0) strncat(sha, "+dirty", sizeof sha - strlen(sha) - 1);
    return strdup(sha);
}

void cll_bench_default_box(char *buf, size_t cap) {
    const char *env = getenv("CLLAMA_BOX");
    if (env && *env) {
        snprintf(buf, cap, "%s", env);
        return;
    }
    char h[256] = "unknown";
    gethostname(h, sizeof h - 1);
    /* a box name is a file name: keep [A-Za-z0-9._-] */
    size_t j = 0;
    for (size_t i = 0; h[i] && j + 1 < cap; i++) {
        char c = h[i];
        buf[j++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' ? c : '-';
    }
    buf[j] = 0;
}

static bool cpuinfo_field(const char *field, char *buf, size_t cap) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return false;
    char line[8192];
    bool ok = false;
    size_t fl = strlen(field);
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, field, fl) && (line[fl] == ' ' || line[fl] == '\t' || line[fl] == ':')) {
            char *v = strchr(line, ':');
            if (!v) continue;
            v++;
            while (*v == ' ') v++;
            v[strcspn(v, "\n")] = 0;
            snprintf(buf, cap, "%s", v);
            ok = true;
            break;
        }
    }
    fclose(f);
    return ok;
}

void cll_bench_cpu_model(char *buf, size_t cap) {
    if (!cpuinfo_field("model name", buf, cap)) snprintf(buf, cap, "unknown");
}

void cll_bench_gpu_name(char *buf, size_t cap) {
    if (!run_line("nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null", buf, cap)) buf[0] = 0;
}

void cll_bench_utc_now(char *buf, size_t cap) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

char *cll_bench_hw_probe_json(void) {
    json_t *o = json_object();
    char buf[8192];
    cll_bench_cpu_model(buf, sizeof buf);
    json_object_set_new(o, "cpu", json_string(buf));
    json_object_set_new(o, "cpus_online", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
    if (cpuinfo_field("cpu cores", buf, sizeof buf)) json_object_set_new(o, "cores_per_socket", json_integer(atoi(buf)));
    if (cpuinfo_field("cpu MHz", buf, sizeof buf)) json_object_set_new(o, "cpu_mhz_now", json_real(atof(buf)));
    /* only the flags that decide which kernels run */
    if (cpuinfo_field("flags", buf, sizeof buf)) {
        static const char *want[] = {"avx", "avx2", "fma", "f16c", "bmi2", "avx512f", "avx512bw", "avx512vl",
                                     "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "sha_ni"};
        json_t *fl = json_array();
        char pad[8200];
        snprintf(pad, sizeof pad, " %s ", buf);
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
            char w[64];
            snprintf(w, sizeof w, " %s ", want[i]);
            if (strstr(pad, w)) json_array_append_new(fl, json_string(want[i]));
        }
        json_object_set_new(o, "cpu_flags", fl);
    }
    FILE *m = fopen("/proc/meminfo", "r");
    if (m) {
        long kb = 0;
        if (fscanf(m, "MemTotal: %ld kB", &kb) == 1) json_object_set_new(o, "mem_total_gib", json_real(kb / 1048576.0));
        fclose(m);
    }
    FILE *g = popen("nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm,clocks.max.mem,"
                    "power.limit --format=csv,noheader 2>/dev/null",
                    "r");
    if (g) {
        json_t *gpus = json_array();
        char line[1024];
        while (fgets(line, sizeof line, g)) {
            line[strcspn(line, "\r\n")] = 0;
            static const char *keys[] = {"name", "memory", "driver", "sm_clock_now", "sm_clock_max", "mem_clock_max",
                                         "power_limit"};
            json_t *one = json_object();
            char *save = NULL, *tok = strtok_r(line, ",", &save);
            for (int k = 0; tok && k < 7; k++, tok = strtok_r(NULL, ",", &save)) {
                while (*tok == ' ') tok++;
                json_object_set_new(one, keys[k], json_string(tok));
            }
            json_array_append_new(gpus, one);
        }
        pclose(g);
        if (json_array_size(gpus)) json_object_set_new(o, "gpus", gpus);
        else json_decref(gpus);
    }
    if (run_line("uname -sr 2>/dev/null", buf, sizeof buf)) json_object_set_new(o, "kernel", json_string(buf));
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

double cll_bench_roofline_gbs(const char *gpu_name) {
    const char *env = getenv("CLLAMA_ROOFLINE_GBS");
    if (env && *env) return atof(env);
    /* device-to-device copies (read + write counted): the H200 of the anchors 4.3 TB/s
     * (shared/anchors/h200/ceilings.json); the SXM H100 ("NVIDIA H100 80GB HBM3") 3028 GB/s (2 GiB,
     * best of 10, 2026-12-05: scripts/h200.sh measure_roofline). Other cards (an H100 PCIe or NVL reads
     * at other rates) have no figure: 0, no roofline column, unless CLLAMA_ROOFLINE_GBS gives one. */
    if (gpu_name && strstr(gpu_name, "H200")) return 4300.0;
    if (gpu_name && strstr(gpu_name, "H100 80GB HBM3")) return 3028.0;
    return 0.0;
}

/* ---- read bandwidth (a STREAM-like sum) --------------------------------------------------------- */

typedef struct {
    const uint64_t *p;
    size_t n;     /* words, a multiple of 16 */
    int form;     /* 0: scalar loads, four chains; 1: 16-byte loads, every line prefetched ahead */
    uint64_t sum; /* kept so the loads are not dead */
} bw_slice;

/* how far ahead the streamed form asks for lines: a plain sequential sum leaves a core short of
 * lines in flight (the hardware prefetcher alone reached 24-26 GB/s on the 2-core Xeon box where
 * the decode read 25-27 and this form 30-31), so the roofline would sit below what kernels reach */
#define BW_PREFETCH_BYTES 4096

/* 16-byte vectors: native in every x86-64 build (wider generic vectors spill without -mavx2) */
typedef uint64_t bw_v2 __attribute__((vector_size(16), aligned(8)));

static void *bw_sum(void *arg) {
    bw_slice *s = arg;
    if (s->form == 0) {
        uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0; /* four chains: loads, not adds, bound the loop */
        for (size_t i = 0; i + 4 <= s->n; i += 4) {
            a0 += s->p[i];
            a1 += s->p[i + 1];
            a2 += s->p[i + 2];
            a3 += s->p[i + 3];
        }
        s->sum = a0 ^ a1 ^ a2 ^ a3;
        return NULL;
    }
    bw_v2 v0 = {0}, v1 = {0}, v2 = {0}, v3 = {0}, v4 = {0}, v5 = {0}, v6 = {0}, v7 = {0};
    const char *base = (const char *)s->p;
    const char *end = base + s->n * sizeof(uint64_t);
    for (size_t i = 0; i + 16 <= s->n; i += 16) { /* 128 bytes: two lines */
        const char *q = (const char *)(s->p + i);
        if ((size_t)(end - q) > BW_PREFETCH_BYTES + 64) {
            __builtin_prefetch(q + BW_PREFETCH_BYTES, 0, 3);
            __builtin_prefetch(q + BW_PREFETCH_BYTES + 64, 0, 3);
        }
        const bw_v2 *w = (const bw_v2 *)q;
        v0 += w[0];
        v1 += w[1];
        v2 += w[2];
        v3 += w[3];
        v4 += w[4];
        v5 += w[5];
        v6 += w[6];
        v7 += w[7];
    }
    v0 ^= v1 ^ v2 ^ v3 ^ v4 ^ v5 ^ v6 ^ v7;
    s->sum = v0[0] ^ v0[1];
    return NULL;
}

/* one pass of form `form` over the buffer split among n threads: GB/s, or 0 */
static double bw_pass(const uint64_t *buf, size_t words, int n_threads, int form, uint64_t *sink) {
    bw_slice sl[256];
    pthread_t th[256];
    const size_t per = words / (size_t)n_threads / 16 * 16;
    const double t0 = cll_now();
    for (int t = 0; t < n_threads; t++) {
        sl[t] = (bw_slice){.p = buf + (size_t)t * per, .n = per, .form = form, .sum = 0};
        if (t > 0 && pthread_create(&th[t], NULL, bw_sum, &sl[t]) != 0) sl[t].n = 0;
    }
    bw_sum(&sl[0]);
    for (int t = 1; t < n_threads; t++)
        if (sl[t].n) pthread_join(th[t], NULL);
    const double dt = cll_now() - t0;
    size_t done = 0;
    for (int t = 0; t < n_threads; t++) done += sl[t].n, *sink ^= sl[t].sum;
    return dt > 0 ? (double)done * sizeof(uint64_t) / dt / 1e9 : 0.0;
}

double cll_bench_read_bandwidth_passes(int n_threads, size_t bytes, int form, double *gbs_out, int *form_out) {
    if (n_threads < 1) n_threads = 1;
    if (n_threads > 256) n_threads = 256;
    if (bytes < ((size_t)64 << 20)) bytes = (size_t)64 << 20;
    const size_t words = bytes / sizeof(uint64_t);
    uint64_t *buf = malloc(words * sizeof *buf);
    if (!buf) return 0.0;
    for (size_t i = 0; i < words; i++) buf[i] = i * 0x9E3779B97F4A7C15ull; /* touch every page, nonzero data */
    double best = 0.0;
    uint64_t sink = 0;
    /* the first pass warms the TLB and the pages; then the forms alternate (a slow phase of a shared
     * box lands on both), and the best pass of the asked forms is the box's read bandwidth */
    bw_pass(buf, words, n_threads, form < 0 ? 1 : form, &sink);
    for (int pass = 0; pass < CLL_BENCH_BW_PASSES; pass++) {
        const int f = form < 0 ? (pass & 1) : form;
        const double gbs = bw_pass(buf, words, n_threads, f, &sink);
        if (gbs_out) gbs_out[pass] = gbs;
        if (form_out) form_out[pass] = f;
        if (gbs > best) best = gbs;
    }
    free(buf);
    return sink == 0x5eedull ? best + 0.0 : best; /* uses sink */
}

double cll_bench_read_bandwidth(int n_threads, size_t bytes) { return cll_bench_read_bandwidth_passes(n_threads, bytes, -1, NULL, NULL); }
