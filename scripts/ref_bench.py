#!/usr/bin/env python3
"""Time llama.cpp the way llama-bench does, through llama-cpp-python's low-level API, and
print llama-bench JSONL rows (engine "llama.cpp") that `cllama board import-ref` pins as
the reference of this box.

  ref_bench.py -m FILE [-m FILE ...] [-p 512] [-n 128] [-r 5] [-t THREADS] [--note TEXT]

Protocol (llama-bench's): model load untimed; per test one untimed warm-up (the full prompt
for pp, one token for tg); then r repetitions, each from an empty KV cache: pp = prompt
tokens decoded in n_batch-sized llama_decode calls (one call for 512 with n_batch 2048,
n_ubatch 512), tg = n single-token llama_decode calls. BOS first, then random ids.
Needs `llama_cpp` (pip install llama-cpp-python, built natively: see scripts/ref_llamacpp.sh).
"""
import argparse, ctypes, datetime, hashlib, json, os, random, statistics, sys, time

try:
    import llama_cpp as L
except ImportError:
    print("SKIP: llama_cpp (llama-cpp-python) is not installed; run scripts/ref_llamacpp.sh", file=sys.stderr)
    sys.exit(77)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def fn(*names):
    for n in names:
        f = getattr(L, n, None)
        if f is not None:
            return f
    raise SystemExit("llama_cpp lacks all of " + ", ".join(names))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-m", action="append", required=True)
    ap.add_argument("-p", type=int, default=512)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-r", type=int, default=5)
    ap.add_argument("-t", type=int, default=os.cpu_count())
    ap.add_argument("-b", type=int, default=2048)
    ap.add_argument("-ub", type=int, default=512)
    ap.add_argument("--note", default="")
    a = ap.parse_args()

    L.llama_backend_init()
    global _quiet  # llama.cpp keeps calling the log callback: it must outlive this call
    _quiet = L.llama_log_callback(lambda lvl, txt, ud: None)
    L.llama_log_set(_quiet, None)
    load = fn("llama_model_load_from_file", "llama_load_model_from_file")
    new_ctx = fn("llama_init_from_model", "llama_new_context_with_model")
    sysinfo = L.llama_print_system_info().decode(errors="replace")
    version = getattr(L, "__version__", "?")
    note = a.note or ("llama-cpp-python %s (vendored llama.cpp), system_info: %s" % (version, sysinfo.strip()))
    rnd = random.Random(1)

    for path in a.m:
        mp = L.llama_model_default_params()
        model = load(path.encode(), mp)
        if not model:
            raise SystemExit("llama.cpp could not load " + path)
        vocab = L.llama_model_get_vocab(model)
        n_vocab = L.llama_vocab_n_tokens(vocab)
        bos = L.llama_vocab_bos(vocab)
        add_bos = L.llama_vocab_get_add_bos(vocab)
        desc = ctypes.create_string_buffer(256)
        L.llama_model_desc(model, desc, 256)
        size = L.llama_model_size(model)
        n_params = L.llama_model_n_params(model)
        msha = sha256(path)
        tests = ([(a.p, 0)] if a.p > 0 else []) + ([(0, a.n)] if a.n > 0 else [])
        for np_, ng in tests:
            cp = L.llama_context_default_params()
            cp.n_ctx = np_ + ng
            cp.n_batch = a.b
            cp.n_ubatch = a.ub
            cp.n_threads = a.t
            cp.n_threads_batch = a.t
            ctx = new_ctx(model, cp)
            if not ctx:
                raise SystemExit("llama.cpp could not create a context for " + path)
            mem = L.llama_get_memory(ctx) if hasattr(L, "llama_get_memory") else None

            def clear():
                if mem is not None:
                    L.llama_memory_clear(mem, True)
                else:
                    fn("llama_kv_self_clear", "llama_kv_cache_clear")(ctx)

            def decode(toks):
                arr = (L.llama_token * len(toks))(*toks)
                rc = L.llama_decode(ctx, L.llama_batch_get_one(arr, len(toks)))
                if rc != 0:
                    raise SystemExit("llama_decode failed (%d) on %s" % (rc, path))

            def pp(n):
                done = 0
                while done < n:
                    k = min(n - done, a.b)
                    toks = [rnd.randrange(n_vocab) for _ in range(k)]
                    if done == 0 and add_bos:
                        toks[0] = bos
                    decode(toks)
                    done += k
                L.llama_synchronize(ctx)

            def tg(n):
                t = bos if add_bos else rnd.randrange(n_vocab)
                for _ in range(n):
                    decode([t])
                    L.llama_synchronize(ctx)
                    t = rnd.randrange(n_vocab)

            # warm-up, untimed (as llama-bench: whole prompt, one generated token)
            if np_:
                pp(np_)
            if ng:
                tg(1)
            def measure():
                samples = []
                for _ in range(a.r):
                    clear()
                    t0 = time.perf_counter_ns()
                    if np_:
                        pp(np_)
                    if ng:
                        tg(ng)
                    samples.append(time.perf_counter_ns() - t0)
                ts = [(np_ + ng) * 1e9 / s for s in samples]
                cv = statistics.stdev(ts) / statistics.mean(ts) if len(ts) > 1 else 0.0
                return samples, ts, cv

            # the same noise rule as cllama bench --record: cv > 3% -> one re-run, still noisy -> marked
            samples, ts, cv = measure()
            noise = "ok"
            if cv > 0.03:
                samples, ts, cv = measure()
                noise = "noisy" if cv > 0.03 else "ok (re-run)"
            L.llama_free(ctx)
            row = {
                "build_commit": "llama-cpp-python-%s" % version, "build_number": 0, "cpu_info": cpu_name(),
                "gpu_info": "", "backends": "CPU", "model_filename": os.path.basename(path),
                "model_type": desc.value.decode(errors="replace"), "model_size": size, "model_n_params": n_params,
                "n_batch": a.b, "n_ubatch": a.ub, "n_threads": a.t, "cpu_mask": "0x0", "cpu_strict": False, "poll": 50,
                "type_k": "f16", "type_v": "f16", "n_gpu_layers": 0, "n_cpu_moe": 0, "split_mode": "layer",
                "main_gpu": 0, "no_kv_offload": False, "flash_attn": -1, "devices": "auto", "tensor_split": "0.00",
                "tensor_buft_overrides": "none", "load_mode": "mmap", "embeddings": False, "no_op_offload": 0,
                "no_host": False, "fit_target": 0, "fit_min_ctx": 0, "n_prompt": np_, "n_gen": ng, "n_depth": 0,
                "test_time": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "avg_ns": int(statistics.mean(samples)), "stddev_ns": int(statistics.stdev(samples)) if len(samples) > 1 else 0,
                "avg_ts": statistics.mean(ts), "stddev_ts": statistics.stdev(ts) if len(ts) > 1 else 0.0,
                "samples_ns": samples, "samples_ts": ts,
                "engine": "llama.cpp", "model_sha256": msha, "cv": cv, "noise": noise, "model_bytes": os.path.getsize(path),
                "provenance": {"command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]), "note": note},
            }
            print(json.dumps(row), flush=True)
        L.llama_model_free(model) if hasattr(L, "llama_model_free") else L.llama_free_model(model)


if __name__ == "__main__":
    main()
