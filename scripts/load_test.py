#!/usr/bin/env python3
"""load_test: N concurrent streaming clients against a cllama (or any OpenAI-compatible) server.

A benchmark, not a test: it prints numbers and never fails on them.

  scripts/load_test.py --url http://127.0.0.1:8080 -n 8
  scripts/load_test.py --spawn build/bin/cllama -m model.gguf --parallel 8 -n 8

Runs a 1-client round first, then the N-client round, each stream a /v1/completions request
with stream=true, a fixed max_tokens and ignore_eos (so every stream is the same length).
Prints per-stream decode tokens/s, aggregate tokens/s, p50/p99 time-to-first-token, and the
ratio of the N-stream aggregate rate to the 1-stream rate."""
import argparse
import http.client
import json
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

PROMPTS = [
    "Once upon a time, there was a little girl named Lily. She loved to",
    "The old man walked to the market every morning because",
    "In a small village near the sea, a boy found a strange shell that",
    "Tom and his dog went to the park. The sun was shining and",
    "Write a short story about a robot who wants to learn how to paint.",
    "Explain why the sky is blue in simple words for a child.",
    "A cat sat on the window and watched the rain. Then suddenly",
    "The little bird could not fly yet, so every day it",
]


def one_stream(host, port, prompt, max_tokens, out, i, model):
    t0 = time.perf_counter()
    res = {"ok": False, "ttft": None, "tokens": 0, "t0": t0, "t_end": None, "t_first": None}
    try:
        c = http.client.HTTPConnection(host, port, timeout=600)
        body = {"prompt": prompt, "max_tokens": max_tokens, "stream": True, "temperature": 0.8, "seed": i,
                "ignore_eos": True}
        if model:
            body["model"] = model
        c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            res["error"] = "HTTP %d %s" % (r.status, r.read()[:200])
            out[i] = res
            return
        buf = b""
        chunks = 0
        while True:
            piece = r.read1(65536)
            if not piece:
                break
            buf += piece
            while b"\n\n" in buf:
                rec, buf = buf.split(b"\n\n", 1)
                if not rec.startswith(b"data: "):
                    continue
                d = rec[6:]
                if d == b"[DONE]":
                    res["ok"] = True
                    continue
                j = json.loads(d)
                ch = j.get("choices") or []
                if ch and ch[0].get("text"):
                    chunks += 1
                    if res["t_first"] is None:
                        res["t_first"] = time.perf_counter()
                if j.get("usage"):
                    res["tokens"] = j["usage"]["completion_tokens"]
        res["t_end"] = time.perf_counter()
        if not res["tokens"]:
            res["tokens"] = chunks
        if res["t_first"] is not None:
            res["ttft"] = res["t_first"] - t0
        c.close()
    except Exception as e:  # noqa: BLE001
        res["error"] = str(e)
    out[i] = res


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def round_(host, port, n, max_tokens, model, label):
    out = [None] * n
    th = [threading.Thread(target=one_stream, args=(host, port, PROMPTS[i % len(PROMPTS)], max_tokens, out, i, model))
          for i in range(n)]
    t0 = time.perf_counter()
    for t in th:
        t.start()
    for t in th:
        t.join()
    wall = time.perf_counter() - t0
    good = [r for r in out if r and r["ok"]]
    print("\n== %s: %d stream(s), max_tokens %d, %d ok, wall %.2f s" % (label, n, max_tokens, len(good), wall))
    for i, r in enumerate(out):
        if not r or not r["ok"]:
            print("  stream %d FAILED: %s" % (i, (r or {}).get("error")))
            continue
        dec = r["t_end"] - r["t_first"] if r["t_first"] else float("nan")
        rate = (r["tokens"] - 1) / dec if dec and dec > 0 else float("nan")
        print("  stream %d: %4d tokens, ttft %6.3f s, decode %7.2f tok/s" % (i, r["tokens"], r["ttft"], rate))
    if not good:
        return None
    total = sum(r["tokens"] for r in good)
    first = min(r["t_first"] for r in good if r["t_first"])
    last = max(r["t_end"] for r in good)
    agg = total / (last - min(r["t0"] for r in good))
    agg_dec = total / (last - first) if last > first else float("nan")
    ttfts = [r["ttft"] for r in good if r["ttft"] is not None]
    print("  aggregate: %d tokens, %.2f tok/s end-to-end, %.2f tok/s from first token to last" % (total, agg, agg_dec))
    print("  time to first token: p50 %.3f s, p99 %.3f s" % (pct(ttfts, 50), pct(ttfts, 99)))
    return agg


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("-n", "--clients", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--model", default=None, help="model name to send (default: none)")
    ap.add_argument("--spawn", metavar="CLLAMA", help="start `CLLAMA serve` on a free port for the run")
    ap.add_argument("-m", dest="model_path", help="model file for --spawn")
    ap.add_argument("--parallel", type=int, default=8, help="--parallel for --spawn")
    ap.add_argument("--ctx", type=int, default=512, help="--ctx for --spawn")
    ap.add_argument("--serve-args", default="", help="more arguments for --spawn")
    a = ap.parse_args()

    proc = None
    if a.spawn:
        cmd = [a.spawn, "serve", "--port", "0", "--parallel", str(a.parallel), "--ctx", str(a.ctx)]
        if a.model_path:
            cmd += ["-m", a.model_path]
        cmd += a.serve_args.split()
        proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        port = None
        for line in proc.stderr:
            sys.stderr.write(line)
            m = re.search(r"listening on http://[^:]+:(\d+)", line)
            if m:
                port = int(m.group(1))
                break
        if not port:
            sys.exit("server did not start")
        threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
        host = "127.0.0.1"
    else:
        u = urllib.parse.urlparse(a.url)
        host, port = u.hostname, u.port or 80
    try:
        round_(host, port, 1, 8, a.model, "warm-up")
        r1 = round_(host, port, 1, a.max_tokens, a.model, "baseline")
        rn = round_(host, port, a.clients, a.max_tokens, a.model, "load")
        if r1 and rn:
            print("\nratio: aggregate with %d streams / 1 stream = %.2fx" % (a.clients, rn / r1))
    finally:
        if proc:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
