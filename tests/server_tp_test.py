#!/usr/bin/env python3
"""server_tp_test: `cllama serve --tp 2` (issue 13's front end) on stories260K: the split server
answers greedy completions of two slots at once with the tokens of the unsplit engine (`cllama run
--temp 0`, stories260K splits within 7e-6 of its logits), reports tp in its log, and a count that
does not split the model (3 over 4 KV heads) stops the server at load with the valid counts.
Backend: $CLLAMA_BACKEND (cpu by default: the ranks are host thread groups). Env: CLLAMA_BIN,
CLLAMA_SHARED."""
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_api_test import BIN, Server, check, FAILS  # noqa: E402

SHARED = os.environ.get("CLLAMA_SHARED", "/work/shared")
MODEL = os.path.join(SHARED, "models", "stories260K.gguf")
PROMPTS = ["Once upon a time", "The little dog"]


def run_unsplit(prompt, n):
    r = subprocess.run([BIN, "run", "-m", MODEL, "-p", prompt, "-n", str(n), "--temp", "0"], capture_output=True,
                       text=True, timeout=120)
    return r.stdout[:-1] if r.stdout.endswith("\n") else r.stdout  # run ends its output with a newline


def main():
    want = {p: run_unsplit(p, 32) for p in PROMPTS}
    s = Server(MODEL, "--tp", "2", "--parallel", "2", "--ctx", "256", "--model-alias", "stories")
    try:
        check(s.port is not None, "the split server starts (%s)" % " | ".join(s.log[-3:]))
        got = {}

        def ask(p):
            st, _, j = s.post_json("/v1/completions", {"model": "stories", "prompt": p, "max_tokens": 32,
                                                        "temperature": 0}, timeout=120)
            got[p] = j["choices"][0]["text"] if st == 200 else "<%d>" % st

        ts = [threading.Thread(target=ask, args=(p,)) for p in PROMPTS]  # both slots in the same steps
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for p in PROMPTS:
            # `cllama run` prints the prompt's continuation; the completion route returns the same text
            check(got.get(p) == want[p], "tp 2 greedy completion of %r equals the unsplit run (%r vs %r)"
                  % (p, (got.get(p) or "")[:50], want[p][:50]))
        check(any("tp 2" in line for line in s.log), "the server's load line names the split (tp 2)")
    finally:
        s.stop()
    r = subprocess.run([BIN, "serve", "-m", MODEL, "--tp", "3", "--port", "0"], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode != 0 and "valid: 1, 2, 4" in r.stderr,
          "serve --tp 3 stops at load naming the valid counts (%s)" % r.stderr.strip()[-160:])
    print("%d failure(s)" % len(FAILS))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
