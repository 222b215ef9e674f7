#!/usr/bin/env python3
"""load_test: N concurrent streaming clients against a cllama (or any OpenAI-compatible) server.

A benchmark first: it prints numbers. With --check it also exits 1 when a stream does not complete,
or (with --long-prompt) when the long prompt's arrival lifts the other streams' inter-token p99 above
3x their median inter-token gap (issue 11's serving bar).

  scripts/load_test.py --url http://127.0.0.1:8080 -n 8
  scripts/load_test.py --spawn build/bin/cllama -m model.gguf --parallel 8 -n 8
  scripts/load_test.py --spawn build/bin/cllama -m 7b.gguf --serve-args "--backend cuda" --parallel 64 \
      --ctx 8192 -n 64 --max-tokens 128 --mixed --long-prompt 4096 --long-at 1 --check --json out.json

Runs a 1-client round first, then the N-client round, each stream a /v1/completions request with
stream=true, a fixed max_tokens and ignore_eos (so every stream is the same length). --mixed gives the
streams prompts of ~16, 64, 256 and 1024 tokens in turn (at most a quarter of --ctx); --long-prompt T
adds one more stream, a prompt of ~T tokens sent --long-at seconds into the round (prompt lengths are
sized from the server's own count of a probe prompt). Prints per-stream decode tokens/s, aggregate
tokens/s, time-to-first-token p50/p99, inter-token latency p50/p99 (the gaps between a stream's text
chunks), the p99 of the gaps that overlap the long prompt's prefill (from its send to its first token)
over that median, and the ratio of the N-stream aggregate rate
to the 1-stream rate."""
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

UNIT = ("The quick brown fox jumps over the lazy dog while the farmer counts his sheep in the field. "
        "Every morning the baker opens the shop, and the children run to school along the river. ")

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


def one_stream(host, port, prompt, max_tokens, out, i, model, delay=0.0):
    if delay > 0:
        time.sleep(delay)
    t0 = time.perf_counter()
    res = {"ok": False, "ttft": None, "tokens": 0, "t0": t0, "t_end": None, "t_first": None, "times": [],
           "prompt_tokens": None}
    try:
        c = http.client.HTTPConnection(host, port, timeout=600)
        body = {"prompt": prompt, "max_tokens": max_tokens, "stream": True, "temperature": 0.8, "seed": i,
                "ignore_eos": True, "stream_options": {"include_usage": True}}
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
            now = time.perf_counter()
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
                    res["times"].append(now)
                    if res["t_first"] is None:
                        res["t_first"] = now
                if j.get("usage"):
                    res["tokens"] = j["usage"]["completion_tokens"]
                    res["prompt_tokens"] = j["usage"].get("prompt_tokens")
        res["t_end"] = time.perf_counter()
        if not res["tokens"]:
            res["tokens"] = chunks
        if res["t_first"] is not None:
            res["ttft"] = res["t_first"] - t0
        c.close()
    except Exception as e:  # noqa: BLE001
        res["error"] = str(e)
    out[i] = res


def probe_tokens_per_unit(host, port, model):
    """the server's prompt-token count of UNIT (a non-streamed completion of one token)"""
    c = http.client.HTTPConnection(host, port, timeout=600)
    body = {"prompt": UNIT * 4, "max_tokens": 1}
    if model:
        body["model"] = model
    c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status != 200:
        sys.exit("probe: HTTP %d %s" % (r.status, data[:200]))
    return max(1.0, json.loads(data)["usage"]["prompt_tokens"] / 4.0)


def http_get(host, port, path):
    """(status, body bytes) of GET path"""
    c = http.client.HTTPConnection(host, port, timeout=30)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def server_n_ctx(host, port):
    """the server's per-sequence context (/v1/models meta.n_ctx), or None"""
    try:
        st, data = http_get(host, port, "/v1/models")
        return int(json.loads(data)["data"][0]["meta"]["n_ctx"]) if st == 200 else None
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


def sized_prompt(tokens, per_unit):
    """a prompt of about this many tokens (UNIT repeated, then cut by words)"""
    words = (UNIT * (int(tokens / per_unit) + 2)).split()
    n = max(1, int(len(UNIT.split()) * tokens / per_unit))
    return " ".join(words[:n])


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def round_(host, port, n, max_tokens, model, label, prompts=None, long_prompt=None, long_at=0.0, summary=None):
    out = [None] * (n + (1 if long_prompt else 0))
    prompts = prompts or [PROMPTS[i % len(PROMPTS)] for i in range(n)]
    th = [threading.Thread(target=one_stream, args=(host, port, prompts[i], max_tokens, out, i, model)) for i in range(n)]
    if long_prompt:
        th.append(threading.Thread(target=one_stream, args=(host, port, long_prompt, 16, out, n, model, long_at)))
    t0 = time.perf_counter()
    for t in th:
        t.start()
    for t in th:
        t.join()
    wall = time.perf_counter() - t0
    good = [r for r in out[:n] if r and r["ok"]]
    print("\n== %s: %d stream(s)%s, max_tokens %d, %d/%d ok, wall %.2f s" %
          (label, n, " + a long prompt" if long_prompt else "", max_tokens, len(good), n, wall))
    for i, r in enumerate(out):
        what = "long" if i == n else "stream %d" % i
        if not r or not r["ok"]:
            print("  %s FAILED: %s" % (what, (r or {}).get("error")))
            continue
        dec = r["t_end"] - r["t_first"] if r["t_first"] else float("nan")
        rate = (r["tokens"] - 1) / dec if dec and dec > 0 else float("nan")
        # a stream whose text never came (every token held back, e.g. bytes of no valid UTF-8) has no ttft
        ttft = r["ttft"] if r["ttft"] is not None else float("nan")
        print("  %s: %5s prompt tokens, %4d tokens, ttft %6.3f s, decode %7.2f tok/s" %
              (what, r["prompt_tokens"], r["tokens"], ttft, rate))
    res = {"streams": n, "ok": len(good), "long_ok": None}
    if summary is not None:
        summary[label] = res
    if not good:
        return None
    total = sum(r["tokens"] for r in good)
    firsts = [r["t_first"] for r in good if r["t_first"]]
    first = min(firsts) if firsts else float("nan")
    last = max(r["t_end"] for r in good)
    agg = total / (last - min(r["t0"] for r in good))
    agg_dec = total / (last - first) if last > first else float("nan")
    ttfts = [r["ttft"] for r in good if r["ttft"] is not None]
    gaps = [(a, b) for r in good for a, b in zip(r["times"], r["times"][1:])]  # (start, end) of each gap
    itl = [b - a for a, b in gaps]
    print("  aggregate: %d tokens, %.2f tok/s end-to-end, %.2f tok/s from first token to last" % (total, agg, agg_dec))
    print("  time to first token: p50 %.3f s, p99 %.3f s" % (pct(ttfts, 50), pct(ttfts, 99)))
    print("  inter-token latency: p50 %.4f s, p99 %.4f s (%d gaps)" % (pct(itl, 50), pct(itl, 99), len(itl)))
    res.update({"aggregate_tps": agg, "aggregate_decode_tps": agg_dec, "ttft_p50": pct(ttfts, 50),
                "ttft_p99": pct(ttfts, 99), "itl_p50": pct(itl, 50), "itl_p99": pct(itl, 99), "tokens": total})
    if long_prompt:
        lr = out[n]
        res["long_ok"] = bool(lr and lr["ok"])
        if lr and lr["ok"] and lr["t_first"]:
            lo, hi = lr["t0"], lr["t_first"]
            during = [b - a for a, b in gaps if a < hi and b > lo]  # the gaps overlapping its prefill
            med = pct(itl, 50)
            p99d = pct(during, 99) if during else float("nan")
            # no gap overlaps its prefill: no other stream was between two tokens then (nothing to judge)
            ratio = (p99d / med if med > 0 else float("inf")) if during else None
            res.update({"long_prompt_tokens": lr["prompt_tokens"], "long_ttft": lr["ttft"], "itl_p99_during_long": p99d,
                        "itl_p99_during_long_over_median": ratio, "gaps_during_long": len(during)})
            print("  long prompt: %s tokens, ttft %.3f s; the other streams' gaps overlapping its prefill: %d, p99 %.4f s = "
                  "%s their median gap (bar: 3x)" % (lr["prompt_tokens"], lr["ttft"], len(during), p99d,
                                                     "%.2fx" % ratio if ratio is not None else "n/a:"))
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
    ap.add_argument("--ctx", type=int, help="--ctx for --spawn (default 512); --mixed sizes its prompts by the "
                    "server's own per-sequence context (/v1/models), this only where the server does not say")
    ap.add_argument("--serve-args", default="", help="more arguments for --spawn")
    ap.add_argument("--metrics-out", metavar="FILE", help="the server's /metrics after the rounds go here")
    ap.add_argument("--server-log", metavar="FILE", help="--spawn: the server's stderr after it listens goes here "
                    "(e.g. with CLLAMA_SERVER_STEP_LOG=1 in the environment); default: dropped")
    ap.add_argument("--mixed", action="store_true", help="prompts of ~16/64/256/1024 tokens in turn (those up to a "
                    "quarter of the server's context)")
    ap.add_argument("--mix", metavar="N,N,..", help="--mixed: these prompt sizes in turn instead")
    ap.add_argument("--long-prompt", type=int, default=0, metavar="T", help="one more stream: a ~T-token prompt")
    ap.add_argument("--long-at", type=float, default=1.0, metavar="S", help="seconds into the round it is sent")
    ap.add_argument("--check", action="store_true", help="exit 1 when a stream fails or the long prompt breaks the bar")
    ap.add_argument("--json", metavar="FILE", help="write the rounds' numbers here")
    a = ap.parse_args()
    proc = None
    if a.spawn:
        cmd = [a.spawn, "serve", "--port", "0", "--parallel", str(a.parallel), "--ctx", str(a.ctx or 512)]
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
        log = open(a.server_log, "w") if a.server_log else None

        def drain():
            for line in proc.stderr:
                if log:
                    log.write(line)
                    log.flush()

        threading.Thread(target=drain, daemon=True).start()
        host = "127.0.0.1"
    else:
        u = urllib.parse.urlparse(a.url)
        host, port = u.hostname, u.port or 80
    summary = {}
    bad = False
    try:
        round_(host, port, 1, 8, a.model, "warm-up")
        r1 = round_(host, port, 1, a.max_tokens, a.model, "baseline", summary=summary)
        prompts, long_prompt = None, None
        if a.mixed or a.long_prompt:
            per = probe_tokens_per_unit(host, port, a.model)
            if a.mixed:
                # the mix is sized by the server's per-sequence context (a quarter of it at most), not by a
                # flag of this script: a run against --url once got 16/64 only while the server held 8192
                n_ctx = server_n_ctx(host, port) or a.ctx or 512
                sizes = [int(t) for t in a.mix.split(",")] if a.mix else \
                    [t for t in (16, 64, 256, 1024) if t <= max(16, n_ctx // 4)]
                prompts = [sized_prompt(sizes[i % len(sizes)], per) for i in range(a.clients)]
                summary["mix"] = sizes
                print("\nmixed prompts of %s tokens in turn (the server's context: %d per sequence)" %
                      ("/".join(map(str, sizes)), n_ctx))
            if a.long_prompt:
                long_prompt = sized_prompt(a.long_prompt, per)
        rn = round_(host, port, a.clients, a.max_tokens, a.model, "load", prompts, long_prompt, a.long_at, summary)
        if r1 and rn:
            print("\nratio: aggregate with %d streams / 1 stream = %.2fx" % (a.clients, rn / r1))
            summary["ratio"] = rn / r1
        ld = summary.get("load", {})
        bad = ld.get("ok") != a.clients or (a.long_prompt and not ld.get("long_ok"))
        ratio = ld.get("itl_p99_during_long_over_median")
        if a.long_prompt and ratio is not None and not (ratio <= 3.0):
            bad = True
        if a.check:
            print("check: %s" % ("FAILED" if bad else "ok"))
        if a.metrics_out:
            with open(a.metrics_out, "w") as f:
                f.write(http_get(host, port, "/metrics")[1].decode())
    finally:
        if proc:
            proc.terminate()
            proc.wait(30)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f, indent=1)
    if a.check and bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
