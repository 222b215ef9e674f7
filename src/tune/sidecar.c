/* tune/sidecar: the sidecar file (tune.h): the box fingerprint, row source hashes, JSON read /
 * atomic write, default path.
 * Owns the cll_tune_sidecar objects it allocates. Rule: a malformed file is an error naming the
 * field, never a crash or a half-filled sidecar. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench.h"
#include "cuda/cuda.h"
#include "formats/formats.h"
#include "tune/tune.h"

/* ---- the box ---- */

static void cpu_model(char *buf, size_t cap) {
    snprintf(buf, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        const char *p = strchr(line, ':');
        if (!p) break;
        p++;
        while (*p == ' ' || *p == '\t') p++;
        snprintf(buf, cap, "%s", p);
        size_t n = strlen(buf);
        while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = 0;
        break;
    }
    fclose(f);
}

cll_status cll_tune_box_probe(const char *backend, cll_tune_box *out) {
    if (!backend || !out) return cll_err(CLL_ERR_ARG, "tune: box probe: no backend");
    memset(out, 0, sizeof *out);
    if (strcmp(backend, "cpu") && strcmp(backend, "cuda"))
        return cll_err(CLL_ERR_ARG, "tune: unknown backend '%s' (cpu or cuda)", backend);
    snprintf(out->backend, sizeof out->backend, "%s", backend);
    cpu_model(out->cpu_model, sizeof out->cpu_model);
    cll_kernels_isa_str(cll_kernels_cpu_features(), out->cpu_isa, sizeof out->cpu_isa);
    out->cpu_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (!strcmp(backend, "cuda")) {
        int n = 0;
        if (!cll_cuda_built() || cll_cuda_device_count(&n) != CLL_OK || n < 1)
            return cll_err(CLL_ERR_DEVICE, "tune: no CUDA device for a cuda box fingerprint");
        cll_cuda_device d;
        cll_status st = cll_cuda_device_info(0, &d);
        if (st != CLL_OK) return st;
        snprintf(out->gpu_name, sizeof out->gpu_name, "%.127s", d.name);
        out->gpu_sms = d.sm_count;
        out->gpu_cc = d.cc_major * 10 + d.cc_minor;
        out->gpu_mem_mb = (long long)(d.mem_bytes >> 20);
        out->gpu_driver = d.driver_version;
        out->cuda_runtime = d.runtime_version;
    }
    return CLL_OK;
}

const char *cll_tune_box_diff(const cll_tune_box *a, const cll_tune_box *b, char *buf, size_t cap) {
#define DS(f)                                                                                                \
    if (strcmp(a->f, b->f)) {                                                                                \
        snprintf(buf, cap, #f ": '%s' vs '%s'", a->f, b->f);                                                 \
        return buf;                                                                                          \
    }
#define DI(f)                                                                                                \
    if (a->f != b->f) {                                                                                      \
        snprintf(buf, cap, #f ": %lld vs %lld", (long long)a->f, (long long)b->f);                           \
        return buf;                                                                                          \
    }
    DS(backend) DS(cpu_model) DS(cpu_isa) DI(cpu_threads) DS(gpu_name) DI(gpu_sms) DI(gpu_cc) DI(gpu_mem_mb)
    DI(gpu_driver) DI(cuda_runtime)
#undef DS
#undef DI
    return NULL;
}

static void slug(const char *s, char *out, size_t cap) {
    size_t o = 0;
    bool dash = false;
    for (; *s && o + 1 < cap; s++) {
        const unsigned char c = (unsigned char)*s;
        if (isalnum(c)) {
            out[o++] = (char)tolower(c);
            dash = false;
        } else if (!dash && o) {
            out[o++] = '-';
            dash = true;
        }
    }
    while (o && out[o - 1] == '-') o--;
    out[o] = 0;
}

const char *cll_tune_box_name(const cll_tune_box *b, char *buf, size_t cap) {
    char s[96];
    slug(b->gpu_name[0] ? b->gpu_name : b->cpu_model, s, sizeof s);
    snprintf(buf, cap, "%s-%s-%dc", b->backend, s, b->cpu_threads);
    return buf;
}

const char *cll_tune_default_path(const cll_tune_box *b, char *buf, size_t cap) {
    const char *env = getenv("CLLAMA_TUNE");
    if (env && *env) {
        snprintf(buf, cap, "%s", env);
        return buf;
    }
    return cll_tune_box_path(b, buf, cap);
}

const char *cll_tune_box_path(const cll_tune_box *b, char *buf, size_t cap) {
    char name[160];
    cll_tune_box_name(b, name, sizeof name);
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg) snprintf(buf, cap, "%s/cllama/tune/%s.json", xdg, name);
    else snprintf(buf, cap, "%s/.cache/cllama/tune/%s.json", home && *home ? home : ".", name);
    return buf;
}

const char *cll_tune_class(const cll_tune_box *b, char *buf, size_t cap) {
    if (cap) buf[0] = 0;
    char cls[96] = "";
    if (!strcmp(b->backend, "cuda")) { /* the GPU model: "NVIDIA H200" -> "h200" */
        char s[96];
        slug(b->gpu_name, s, sizeof s);
        const char *p = s;
        if (!strncmp(p, "nvidia-", 7)) p += 7;
        snprintf(cls, sizeof cls, "%.47s", p);
    } else if (!strcmp(b->backend, "cpu")) { /* the ISA the CPU kernels dispatch on */
        if (!strncmp(b->cpu_isa, "avx512vnni", 10)) snprintf(cls, sizeof cls, "x86-avx512-vnni");
        else if (!strncmp(b->cpu_isa, "avx512", 6)) snprintf(cls, sizeof cls, "x86-avx512");
        else if (!strncmp(b->cpu_isa, "avx2", 4)) snprintf(cls, sizeof cls, "x86-avx2");
    }
    while (strlen(cls) && cls[strlen(cls) - 1] == '-') cls[strlen(cls) - 1] = 0;
    if (!cls[0] || !cll_tune_class_name_ok(cls)) return NULL;
    snprintf(buf, cap, "%s", cls);
    return buf;
}

bool cll_tune_class_name_ok(const char *cls) {
    const size_t n = cls ? strlen(cls) : 0;
    if (n == 0 || n >= 48) return false;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)cls[i]) || isdigit((unsigned char)cls[i]) || cls[i] == '-')) return false;
    return true;
}

void cll_tune_row_hash(const cll_kernel_table *t, const cll_kernel_row *r, char out[65]) {
    cll_sha256 h;
    cll_bench_sha256_init(&h);
    char head[256];
    snprintf(head, sizeof head, "%s|%s|op=%u|type=%u|isa=%u|layout=%d|il=%d|bitexact=%d|", t ? t->backend : "?", r->name,
             r->op, r->wtype, r->isa, r->layout, r->interleave, r->bit_exact ? 1 : 0);
    cll_bench_sha256_update(&h, head, strlen(head));
    if (r->params) cll_bench_sha256_update(&h, r->params, strlen(r->params));
    cll_bench_sha256_hex(&h, out);
}

/* ---- the object ---- */

cll_tune_sidecar *cll_tune_new(void) {
    cll_tune_sidecar *sc = (cll_tune_sidecar *)calloc(1, sizeof *sc);
    if (sc) {
        sc->version = CLL_TUNE_VERSION;
        snprintf(sc->noise, sizeof sc->noise, "ok");
        snprintf(sc->mode, sizeof sc->mode, "default");
    }
    return sc;
}

void cll_tune_free(cll_tune_sidecar *sc) {
    if (!sc) return;
    free(sc->sites);
    free(sc->runtime);
    free(sc->race_json);
    free(sc);
}

cll_status cll_tune_set_site(cll_tune_sidecar *sc, const cll_tune_entry *e) {
    for (int i = 0; i < sc->n_sites; i++)
        if (!strcmp(sc->sites[i].site, e->site)) {
            sc->sites[i] = *e;
            return CLL_OK;
        }
    cll_tune_entry *n = (cll_tune_entry *)realloc(sc->sites, (size_t)(sc->n_sites + 1) * sizeof *n);
    if (!n) return cll_err(CLL_ERR_NOMEM, "tune: out of memory");
    sc->sites = n;
    sc->sites[sc->n_sites++] = *e;
    return CLL_OK;
}

cll_status cll_tune_set_knob(cll_tune_sidecar *sc, const char *name, double value) {
    if (!name || strlen(name) >= sizeof sc->runtime[0].name) return cll_err(CLL_ERR_ARG, "tune: bad knob name");
    for (int i = 0; i < sc->n_runtime; i++)
        if (!strcmp(sc->runtime[i].name, name)) {
            sc->runtime[i].value = value;
            return CLL_OK;
        }
    cll_tune_knob *n = (cll_tune_knob *)realloc(sc->runtime, (size_t)(sc->n_runtime + 1) * sizeof *n);
    if (!n) return cll_err(CLL_ERR_NOMEM, "tune: out of memory");
    sc->runtime = n;
    snprintf(sc->runtime[sc->n_runtime].name, sizeof n->name, "%s", name);
    sc->runtime[sc->n_runtime++].value = value;
    return CLL_OK;
}

/* ---- JSON ---- */

#define GET_STR(obj, key, dst, req)                                                                           \
    do {                                                                                                      \
        json_t *v_ = json_object_get((obj), (key));                                                           \
        if (json_is_string(v_)) {                                                                             \
            if (strlen(json_string_value(v_)) >= sizeof(dst)) {                                               \
                st = cll_err(CLL_ERR_FORMAT, "tune sidecar %s: field '%s' too long", path, (key));           \
                goto done;                                                                                    \
            }                                                                                                 \
            snprintf((dst), sizeof(dst), "%s", json_string_value(v_));                                       \
        } else if (req) {                                                                                     \
            st = cll_err(CLL_ERR_FORMAT, "tune sidecar %s: missing string field '%s'", path, (key));         \
            goto done;                                                                                        \
        }                                                                                                     \
    } while (0)
#define GET_NUM(obj, key, dst)                                                                                \
    do {                                                                                                      \
        json_t *v_ = json_object_get((obj), (key));                                                           \
        if (json_is_number(v_)) (dst) = json_number_value(v_);                                                \
    } while (0)

/* A whole number in [0, hi] (a count, an id, a version): anything else (1e12, -3, 2.5) is refused, never cast;
 * converting an out-of-range double to int is undefined behaviour (the fuzzer found one). */
#define GET_COUNT(obj, key, dst, hi)                                                                          \
    do {                                                                                                      \
        json_t *v_ = json_object_get((obj), (key));                                                           \
        if (!v_) break;                                                                                       \
        double d_ = json_is_number(v_) ? json_number_value(v_) : -1;                                         \
        if (!(d_ >= 0 && d_ <= (double)(hi)) || d_ != (double)(long long)d_) {                                \
            st = cll_err(CLL_ERR_FORMAT, "tune sidecar %s: field '%s' is not a whole number in [0, %lld]", path, \
                         (key), (long long)(hi));                                                             \
            goto done;                                                                                        \
        }                                                                                                     \
        (dst) = (long long)d_;                                                                                \
    } while (0)

cll_status cll_tune_read(const char *path, cll_tune_sidecar **out) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return cll_err(CLL_ERR_IO, "tune sidecar %s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = (char *)malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            if (cap >= ((size_t)64 << 20)) { /* no sidecar is this large */
                free(buf);
                fclose(f);
                return cll_err(CLL_ERR_FORMAT, "tune sidecar %s: over 64 MiB", path);
            }
            char *nb = (char *)realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) return cll_err(CLL_ERR_NOMEM, "tune sidecar %s: out of memory", path);
    cll_status st = cll_tune_parse(buf, n, path, out);
    free(buf);
    return st;
}

cll_status cll_tune_parse(const char *text, size_t len, const char *path, cll_tune_sidecar **out) {
    *out = NULL;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    if (!root) return cll_err(CLL_ERR_FORMAT, "tune sidecar %s: line %d: %s", path, jerr.line, jerr.text);
    cll_status st = CLL_OK;
    cll_tune_sidecar *sc = cll_tune_new();
    if (!sc) {
        json_decref(root);
        return cll_err(CLL_ERR_NOMEM, "tune: out of memory");
    }
    json_t *ver = json_object_get(root, "tune_version"), *kern = json_object_get(root, "kernels");
    json_t *prov = json_object_get(root, "provenance"), *box = prov ? json_object_get(prov, "box") : NULL;
    json_t *cls = json_object_get(root, "class"); /* class defaults: no box fingerprint */
    if (!json_is_object(root) || !json_is_integer(ver) || !json_is_object(kern) || !json_is_object(prov) ||
        (!cls && !json_is_object(box))) {
        st = cll_err(CLL_ERR_FORMAT,
                     "tune sidecar %s: not a sidecar (needs tune_version, kernels, provenance.box, or a class)", path);
        goto done;
    }
    if (cls && !(json_is_string(cls) && cll_tune_class_name_ok(json_string_value(cls)))) {
        st = cll_err(CLL_ERR_FORMAT, "tune sidecar %s: class: not a class name (1-47 of a-z, 0-9, -)", path);
        goto done;
    }
    if (json_integer_value(ver) < 0 || json_integer_value(ver) > INT_MAX) {
        st = cll_err(CLL_ERR_FORMAT, "tune sidecar %s: tune_version %lld is not a version", path,
                     (long long)json_integer_value(ver));
        goto done;
    }
    sc->version = (int)json_integer_value(ver);
    if (cls) {
        snprintf(sc->cls, sizeof sc->cls, "%s", json_string_value(cls));
        GET_STR(prov, "backend", sc->box.backend, true);
        GET_STR(prov, "generated_by", sc->generated_by, false);
    } else {
        cll_tune_box *b = &sc->box;
        long long n = 0;
        GET_STR(box, "backend", b->backend, true);
        GET_STR(box, "cpu_model", b->cpu_model, true);
        GET_STR(box, "cpu_isa", b->cpu_isa, true);
        GET_STR(box, "gpu_name", b->gpu_name, false);
        n = 0; GET_COUNT(box, "cpu_threads", n, INT_MAX); b->cpu_threads = (int)n;
        n = 0; GET_COUNT(box, "gpu_sms", n, INT_MAX); b->gpu_sms = (int)n;
        n = 0; GET_COUNT(box, "gpu_cc", n, INT_MAX); b->gpu_cc = (int)n;
        n = 0; GET_COUNT(box, "gpu_mem_mb", n, LLONG_MAX / 2); b->gpu_mem_mb = (long long)n;
        n = 0; GET_COUNT(box, "gpu_driver", n, INT_MAX); b->gpu_driver = (int)n;
        n = 0; GET_COUNT(box, "cuda_runtime", n, INT_MAX); b->cuda_runtime = (int)n;
    }
    GET_STR(prov, "engine_git_sha", sc->engine_sha, false);
    GET_STR(prov, "binary_sha256", sc->binary_sha256, false);
    GET_STR(prov, "mode", sc->mode, false);
    GET_STR(prov, "date", sc->date, false);
    GET_STR(prov, "noise", sc->noise, false);
    GET_NUM(prov, "noise_floor", sc->noise_floor);
    GET_NUM(prov, "mint_seconds", sc->mint_seconds);
    {
        json_t *pr = json_object_get(prov, "noise_probes");
        for (size_t i = 0; json_is_array(pr) && i < json_array_size(pr) && i < 3; i++)
            sc->noise_probes[i] = json_number_value(json_array_get(pr, i));
    }
    {
        const char *site;
        json_t *e;
        json_object_foreach(kern, site, e) {
            cll_tune_entry en;
            memset(&en, 0, sizeof en);
            if (!json_is_object(e) || strlen(site) >= sizeof en.site) {
                st = cll_err(CLL_ERR_FORMAT, "tune sidecar %s: kernels.%s: not an entry object", path, site);
                goto done;
            }
            snprintf(en.site, sizeof en.site, "%s", site);
            GET_STR(e, "variant", en.variant, true);
            GET_STR(e, "params", en.params, false);
            GET_STR(e, "source_hash", en.source_hash, true);
            GET_STR(e, "verdict", en.verdict, true);
            en.bit_exact = json_is_true(json_object_get(e, "bit_exact"));
            GET_NUM(e, "ratio", en.ratio);
            GET_NUM(e, "margin", en.margin);
            GET_STR(e, "confirm", en.confirm, false);
            GET_NUM(e, "confirm_gain", en.confirm_gain);
            json_t *ci = json_object_get(e, "ci");
            if (json_is_array(ci) && json_array_size(ci) == 2) {
                en.ci_lo = json_number_value(json_array_get(ci, 0));
                en.ci_hi = json_number_value(json_array_get(ci, 1));
            }
            if ((st = cll_tune_set_site(sc, &en)) != CLL_OK) goto done;
        }
    }
    {
        json_t *rt = json_object_get(root, "runtime");
        const char *k;
        json_t *v;
        if (rt && !json_is_object(rt)) {
            st = cll_err(CLL_ERR_FORMAT, "tune sidecar %s: runtime: not an object", path);
            goto done;
        }
        if (rt) json_object_foreach(rt, k, v) {
                if (!json_is_number(v)) {
                    st = cll_err(CLL_ERR_FORMAT, "tune sidecar %s: runtime.%s: not a number", path, k);
                    goto done;
                }
                if ((st = cll_tune_set_knob(sc, k, json_number_value(v))) != CLL_OK) goto done;
            }
    }
    {
        json_t *race = json_object_get(root, "race");
        if (race) sc->race_json = json_dumps(race, JSON_COMPACT | JSON_SORT_KEYS);
    }
done:
    json_decref(root);
    if (st != CLL_OK) {
        cll_tune_free(sc);
        return st;
    }
    *out = sc;
    return CLL_OK;
}

static json_t *to_json(const cll_tune_sidecar *sc) {
    json_t *root = json_object(), *kern = json_object(), *rt = json_object(), *prov = json_object();
    json_object_set_new(root, "tune_version", json_integer(sc->version));
    for (int i = 0; i < sc->n_sites; i++) {
        const cll_tune_entry *e = &sc->sites[i];
        json_t *o = json_object();
        json_object_set_new(o, "variant", json_string(e->variant));
        json_object_set_new(o, "params", json_string(e->params));
        json_object_set_new(o, "source_hash", json_string(e->source_hash));
        json_object_set_new(o, "bit_exact", json_boolean(e->bit_exact));
        json_object_set_new(o, "verdict", json_string(e->verdict));
        json_object_set_new(o, "ratio", json_real(e->ratio));
        json_t *ci = json_array();
        json_array_append_new(ci, json_real(e->ci_lo));
        json_array_append_new(ci, json_real(e->ci_hi));
        json_object_set_new(o, "ci", ci);
        json_object_set_new(o, "margin", json_real(e->margin));
        if (e->confirm[0]) {
            json_object_set_new(o, "confirm", json_string(e->confirm));
            json_object_set_new(o, "confirm_gain", json_real(e->confirm_gain));
        }
        json_object_set_new(kern, e->site, o);
    }
    for (int i = 0; i < sc->n_runtime; i++) json_object_set_new(rt, sc->runtime[i].name, json_real(sc->runtime[i].value));
    json_object_set_new(root, "kernels", kern);
    json_object_set_new(root, "runtime", rt);
    json_object_set_new(root, "provenance", prov);
    json_object_set_new(prov, "tune_version", json_integer(sc->version));
    json_object_set_new(prov, "engine_git_sha", json_string(sc->engine_sha));
    json_object_set_new(prov, "mode", json_string(sc->mode));
    json_object_set_new(prov, "noise", json_string(sc->noise));
    if (sc->cls[0]) { /* class defaults: what the class shares, nothing of the box it was minted on */
        json_object_set_new(root, "class", json_string(sc->cls));
        json_object_set_new(prov, "class", json_string(sc->cls));
        json_object_set_new(prov, "backend", json_string(sc->box.backend));
        json_object_set_new(prov, "generated_by", json_string(sc->generated_by));
        return root;
    }
    json_t *box = json_object();
    const cll_tune_box *b = &sc->box;
    json_object_set_new(box, "backend", json_string(b->backend));
    json_object_set_new(box, "cpu_model", json_string(b->cpu_model));
    json_object_set_new(box, "cpu_isa", json_string(b->cpu_isa));
    json_object_set_new(box, "cpu_threads", json_integer(b->cpu_threads));
    json_object_set_new(box, "gpu_name", json_string(b->gpu_name));
    json_object_set_new(box, "gpu_sms", json_integer(b->gpu_sms));
    json_object_set_new(box, "gpu_cc", json_integer(b->gpu_cc));
    json_object_set_new(box, "gpu_mem_mb", json_integer(b->gpu_mem_mb));
    json_object_set_new(box, "gpu_driver", json_integer(b->gpu_driver));
    json_object_set_new(box, "cuda_runtime", json_integer(b->cuda_runtime));
    json_object_set_new(prov, "box", box);
    json_object_set_new(prov, "binary_sha256", json_string(sc->binary_sha256));
    json_object_set_new(prov, "date", json_string(sc->date));
    json_object_set_new(prov, "noise_floor", json_real(sc->noise_floor));
    json_t *pr = json_array();
    for (int i = 0; i < 3; i++) json_array_append_new(pr, json_real(sc->noise_probes[i]));
    json_object_set_new(prov, "noise_probes", pr);
    json_object_set_new(prov, "mint_seconds", json_real(sc->mint_seconds));
    if (sc->race_json) {
        json_t *race = json_loads(sc->race_json, 0, NULL);
        if (race) json_object_set_new(root, "race", race);
    }
    return root;
}

static int mkdirs(const char *path) { /* the parent directories of a file path */
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) && errno != EEXIST) return -1;
        *p = '/';
    }
    return 0;
}

static cll_status write_file(const char *path, const cll_tune_sidecar *sc, bool keep_bak);

cll_status cll_tune_write(const char *path, const cll_tune_sidecar *sc) { return write_file(path, sc, true); }
cll_status cll_tune_rewrite(const char *path, const cll_tune_sidecar *sc) { return write_file(path, sc, false); }

const char *cll_tune_journal_path(const char *path, char *buf, size_t cap) {
    snprintf(buf, cap, "%s.journal", path);
    return buf;
}

cll_status cll_tune_journal(const char *path, const cll_tune_sidecar *sc) {
    char jp[1100];
    return write_file(cll_tune_journal_path(path, jp, sizeof jp), sc, false);
}

static cll_status write_file(const char *path, const cll_tune_sidecar *sc, bool keep_bak) {
    if (!path || !sc) return cll_err(CLL_ERR_ARG, "tune: write: no path");
    if (mkdirs(path)) return cll_err(CLL_ERR_IO, "tune sidecar %s: cannot create its directory: %s", path, strerror(errno));
    json_t *root = to_json(sc);
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    const int rc = json_dump_file(root, tmp, JSON_INDENT(1) | JSON_SORT_KEYS);
    json_decref(root);
    if (rc) {
        unlink(tmp);
        return cll_err(CLL_ERR_IO, "tune sidecar %s: cannot write %s", path, tmp);
    }
    struct stat sb;
    if (keep_bak && stat(path, &sb) == 0) {
        char bak[1100];
        snprintf(bak, sizeof bak, "%s.bak", path);
        if (rename(path, bak)) {
            unlink(tmp);
            return cll_err(CLL_ERR_IO, "tune sidecar %s: cannot keep the previous file as %s: %s", path, bak, strerror(errno));
        }
    }
    if (rename(tmp, path)) {
        unlink(tmp);
        return cll_err(CLL_ERR_IO, "tune sidecar %s: rename: %s", path, strerror(errno));
    }
    return CLL_OK;
}
