#!/usr/bin/env python3
"""server_step_test: `cllama serve --step-tokens N`, the most tokens one engine step carries.

Four requests with ~60-token prompts arrive together at a server with 4 slots and --chunk 16: with the
default step (slots + chunk = 20 tokens) their prompts need ~12 steps; with --step-tokens 68 each step
carries four chunks, ~4 steps. The greedy replies are the same either way, and a --step-tokens below
slots + chunk is accepted (the server raises it to slots + chunk) and gives the same replies. Steps last >= 20 ms
(CLLAMA_SERVER_STEP_MS) so the four requests reach the first step together. The servers run with
CLLAMA_SERVER_STEP_LOG=1: its lines parse, their rows add up, and the CPU reports no device time.
Env: CLLAMA_BIN, CLLAMA_SHARED. Exit 77 = SKIP."""
import os
import re
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_api_test import BIN, STORIES, Server, check, skip, FAILS  # noqa: E402

SENT = "Once upon a time there was a little girl named Lily who liked to play in the park. "


def burst(srv):
    """four prompts at once; returns (their greedy token ids, decode steps the burst took)"""
    prompts = [SENT * 2 + "Then %s" % w for w in ("she", "he", "they", "it")]
    out = [None] * 4
    d0 = srv.metrics().get("cllama_decode_steps_total", 0)

    def one(i):
        st, _, j = srv.post_json("/v1/completions", {"prompt": prompts[i], "max_tokens": 2, "temperature": 0,
                                                     "return_tokens": True})
        out[i] = j["choices"][0]["tokens"] if st == 200 else None

    th = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in th:
        t.start()
    for t in th:
        t.join(120)
    return out, srv.metrics().get("cllama_decode_steps_total", 0) - d0


STEP_RX = re.compile(r"cllama serve: step (\d+) at ([0-9.]+) s: (\d+) rows, (\d+) generating \+ (\d+) prompt tokens "
                     r"in (\d+) run\(s\), ([0-9.]+) ms \(device ([0-9.]+) ms, (graph|eager|captured), "
                     r"(greedy|top-k|logits)\)$")


def step_log(lines, burst_steps):
    """CLLAMA_SERVER_STEP_LOG=1: a line per engine step, its rows adding up, on the CPU no device time
    and no graph, the temperature-0 burst's sampling steps greedy"""
    steps = [m for m in map(STEP_RX.match, lines) if m]
    check(len(steps) >= burst_steps > 0, "step log: %d lines for a burst of %d steps" % (len(steps), burst_steps))
    check(all(int(m.group(3)) == int(m.group(4)) + int(m.group(5)) for m in steps), "step log: rows = generating + prompt")
    check(all(float(m.group(8)) == 0.0 and m.group(9) == "eager" for m in steps), "step log: the CPU has no device time")
    check(any(m.group(10) == "greedy" for m in steps), "step log: the temperature-0 steps sample greedily")
    check([int(m.group(1)) for m in steps] == list(range(1, len(steps) + 1)), "step log: steps counted from 1")


def main():
    if not BIN or not os.path.exists(BIN):
        skip("no cllama binary (CLLAMA_BIN)")
    if not os.path.exists(STORIES):
        skip("no stories260K.gguf under CLLAMA_SHARED")
    env = dict(os.environ, CLLAMA_SERVER_STEP_MS="20", CLLAMA_SERVER_STEP_LOG="1")
    res = {}
    for label, extra in (("default", []), ("wide", ["--step-tokens", 68]), ("tiny", ["--step-tokens", 1])):
        srv = Server(STORIES, "--parallel", 4, "--chunk", 16, "--threads", 2, *extra, env=env)
        try:
            res[label] = burst(srv)
        finally:
            rc = srv.stop()
        check(rc == 0, "%s: clean exit (rc %s)" % (label, rc))
        if label == "wide":
            step_log(srv.log, res[label][1])
    (t_def, s_def), (t_wide, s_wide), (t_tiny, s_tiny) = res["default"], res["wide"], res["tiny"]
    check(all(t_def) and t_def == t_wide == t_tiny, "the same greedy replies with any step size")
    check(s_wide + 4 <= s_def, "--step-tokens 68 reads the burst in fewer steps (%d vs %d)" % (s_wide, s_def))
    print("%d failure(s)" % len(FAILS))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
