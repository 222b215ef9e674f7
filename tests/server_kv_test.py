#!/usr/bin/env python3
"""server_kv_test: `cllama serve --kv-cells N`, a paged KV pool shared by the slots.

A pool of 4 blocks (256 cells) and 2 slots: two requests whose prompt + reply need ~4 blocks each
run together until the pool is full; then one of them (the one admitted last) must end with a 503
(code server_busy, Retry-After) while the other completes all its tokens; the metrics count the
preemption; the server stays up and serves the next request; a prompt longer than the whole pool is
a 400 (context_length_exceeded). Both backends allocate only the pool: the scheduling and the
answers are the same.
Env: CLLAMA_BIN, CLLAMA_SHARED, CLLAMA_BACKEND (default cpu). Exit 77 = SKIP."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_api_test import BIN, STORIES, Server, check, skip, FAILS  # noqa: E402

SENT = "Once upon a time there was a little girl named Lily who liked to play in the park with her dog. "


def main():
    if not BIN or not os.path.exists(BIN):
        skip("no cllama binary (CLLAMA_BIN)")
    if not os.path.exists(STORIES):
        skip("no stories260K.gguf under CLLAMA_SHARED")
    backend = os.environ.get("CLLAMA_BACKEND", "cpu")
    # steps of >= 3 ms, so the two requests overlap however fast the backend is
    env = dict(os.environ, CLLAMA_SERVER_STEP_MS="3")
    srv = Server(STORIES, "--parallel", 2, "--ctx", 512, "--kv-cells", 256, "--chunk", 64, "--backend", backend,
                 "--threads", 2, env=env)
    try:
        check(any("paged KV: a pool of 256 cells" in ln for ln in srv.log), "the start-up log names the pool")
        prompt = SENT * 3  # ~90 tokens: prompt + 150 fit the pool alone, two of them do not
        st, _, one = srv.post_json("/v1/completions", {"prompt": prompt, "max_tokens": 4, "temperature": 0})
        check(st == 200, "a short request on the paged pool: 200 (got %d %s)" % (st, one))
        n_prompt = one["usage"]["prompt_tokens"] if st == 200 else 0
        check(60 <= n_prompt <= 100, "the prompt is ~90 tokens (%d)" % n_prompt)

        # two requests that cannot both finish within 256 cells: prompt + 150 tokens each
        res = [None, None]

        def go(i):
            res[i] = srv.request("POST", "/v1/completions",
                                 {"prompt": prompt, "max_tokens": 150, "temperature": 0, "ignore_eos": True})

        th = [threading.Thread(target=go, args=(i,)) for i in range(2)]
        for t in th:
            t.start()
        for t in th:
            t.join(300)
        codes = sorted(r[0] for r in res if r)
        check(codes == [200, 503], "two requests over the pool: one 200, one 503 (got %s)" % codes)
        import json
        for st, h, body in (r for r in res if r):
            d = json.loads(body)
            if st == 200:
                check(d["usage"]["completion_tokens"] == 150, "the survivor got all 150 tokens (%s)" % d["usage"])
            else:
                e = d.get("error", {})
                check(e.get("code") == "server_busy" and "KV cache is full" in e.get("message", ""),
                      "the 503 says the KV cache is full, code server_busy (%s)" % e)
                check(h.get("Retry-After") == "1", "the 503 carries Retry-After (%s)" % h.get("Retry-After"))
        m = srv.metrics()
        check(m.get("cllama_kv_preempted_total", 0) >= 1, "metrics count the preemption (%s)" % m.get(
            "cllama_kv_preempted_total"))
        check(m.get("cllama_kv_cells") == 256, "metrics show the pool (%s)" % m.get("cllama_kv_cells"))
        check(0 <= m.get("cllama_kv_cells_free", -1) <= 256, "metrics show the free cells")
        check(srv.alive(), "the server is still up")
        # alone, a reply that outgrows the pool ends with "length" (as at the end of --ctx), not a 503
        st, _, d = srv.post_json("/v1/completions", {"prompt": prompt, "max_tokens": 400, "temperature": 0,
                                                     "ignore_eos": True})
        check(st == 200 and d["choices"][0]["finish_reason"] == "length" and
              d["usage"]["prompt_tokens"] + d["usage"]["completion_tokens"] <= 257,  # the last id is not stored
              "a lone reply that fills the pool: 200, finish_reason length (%d %s)" % (st, d.get("usage")))
        st, _, d = srv.post_json("/v1/completions", {"prompt": prompt, "max_tokens": 8, "temperature": 0})
        check(st == 200 and d["usage"]["completion_tokens"] == 8, "the next request is served (%d)" % st)
        # a prompt the whole pool cannot hold
        st, _, d = srv.post_json("/v1/completions", {"prompt": SENT * 12, "max_tokens": 4})
        check(st == 400 and d["error"]["code"] == "context_length_exceeded" and "KV pool" in d["error"]["message"],
              "a prompt over the pool: 400 context_length_exceeded (%d %s)" % (st, d))
    finally:
        rc = srv.stop()
    check(rc == 0, "clean exit on SIGTERM (rc %s)" % rc)

    # the prefix cache across slots: B shares A's long opening while A still runs in the other slot,
    # takes its full blocks over (cached_tokens), and replies as B does alone on an unpaged server
    head = SENT * 4
    ref = Server(STORIES, "--parallel", 1, "--ctx", 512, "--backend", backend, "--threads", 2)
    try:
        st, _, alone = ref.post_json("/v1/completions", {"prompt": head + "Then he sang", "max_tokens": 12,
                                                         "temperature": 0, "ignore_eos": True, "return_tokens": True})
        alone = alone["choices"][0]["tokens"] if st == 200 else None
    finally:
        ref.stop()
    srv = Server(STORIES, "--parallel", 2, "--ctx", 512, "--kv-cells", 1024, "--backend", backend, "--threads", 2,
                 env=env)
    try:
        res = {}

        def go(key, prompt, n, delay):
            time.sleep(delay)
            res[key] = srv.post_json("/v1/completions", {"prompt": prompt, "max_tokens": n, "temperature": 0,
                                                         "ignore_eos": True, "return_tokens": True})

        th = [threading.Thread(target=go, args=("a", head + "Then she ran", 80, 0.0)),
              threading.Thread(target=go, args=("b", head + "Then he sang", 12, 0.15))]
        for t in th:
            t.start()
        for t in th:
            t.join(300)
        (sa, _, a), (sb, _, b) = res["a"], res["b"]
        check(sa == 200 and sb == 200, "two requests sharing an opening: 200, 200 (%d, %d)" % (sa, sb))
        cached = b["usage"]["prompt_tokens_details"]["cached_tokens"] if sb == 200 else 0
        check(cached >= 64, "the second took the first's full blocks over while it ran (cached_tokens %d)" % cached)
        if backend == "cpu":  # (the GPU's batched products may round differently from a lone request's)
            check(alone is not None and sb == 200 and b["choices"][0]["tokens"] == alone,
                  "its reply over the shared blocks == alone on an unpaged server")
    finally:
        rc = srv.stop()
    check(rc == 0, "clean exit on SIGTERM (rc %s)" % rc)
    print("%d failure(s)" % len(FAILS))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
