#!/usr/bin/env python3
"""server_gemma_test: `cllama serve` on the default Gemma-3-270M (a real chat template).

One streamed chat through the openai package (or raw HTTP when it is missing), a second turn
that must reuse the first turn's KV, and no template control text leaking into replies.
SKIPs visibly when the model is not installed. Env: CLLAMA_BIN, CLLAMA_MODEL (optional)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_api_test import BIN, Server, check, skip, FAILS, text_of, need_serve_model  # noqa: E402


def default_model():
    env = os.environ.get("CLLAMA_MODEL")
    if env:
        return env
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "cllama", "models", "gemma-3-270m-q4_k_m.gguf")


# Gemma's turn format (system text merged into the first user turn); BOS comes from add_special
GEMMA_TURNS = "<start_of_turn>user\n%s<end_of_turn>\n<start_of_turn>model\n"


def raw_completion(s, prompt, n):
    st, _, j = s.post_json("/v1/completions", {"model": "gemma", "prompt": prompt, "max_tokens": n,
                                                "temperature": 0}, timeout=600)
    if st != 200:
        return "<completion failed: %d>" % st
    return j["choices"][0]["text"]


def main():
    model = default_model()
    need_serve_model(model, "the default Gemma model")
    s = Server(model, "--parallel", "2", "--ctx", "1024", "--model-alias", "gemma", startup_s=300)
    try:
        st, _, data = s.request("POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                                                                  "max_tokens": 1}, timeout=600)
        if st != 200:  # the route is built: a refusal here is a failure, not a skip
            print("FAIL chat completions answer 200 on gemma (%d %s)" % (st, data[:120]))
            s.stop()
            sys.exit(1)
        check(any("template gemma" in line for line in s.log), "the model's chat template is recognised as gemma")
        msgs = [{"role": "system", "content": "You are a helpful assistant. Answer briefly."},
                {"role": "user", "content": "What is the capital of France?"}]
        st, chunks, done = s.stream("/v1/chat/completions", {"model": "gemma", "messages": msgs, "max_tokens": 24,
                                                              "temperature": 0, "stream": True}, timeout=600)
        reply = text_of(chunks)
        check(st == 200 and done, "streamed chat completes with [DONE]")
        # This GGUF is the base model (llama.cpp's greedy reply to this chat also echoes the user turn),
        # so the check is not "says Paris" but: the chat route renders Gemma's turn format and
        # decodes exactly what a raw completion of that hand-written prompt decodes.
        want = raw_completion(s, GEMMA_TURNS % (msgs[0]["content"] + "\n\n" + msgs[1]["content"]), 24)
        check(reply == want, "greedy chat reply equals the completion of the hand-rendered Gemma prompt (%r vs %r)"
              % (reply[:60], want[:60]))
        check("<start_of_turn>" not in reply and "<end_of_turn>" not in reply, "no template control text in the reply")
        check(chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length"), "finish_reason set")
        msgs2 = msgs + [{"role": "assistant", "content": reply}, {"role": "user", "content": "And of Italy?"}]
        st, _, j = s.post_json("/v1/chat/completions", {"model": "gemma", "messages": msgs2, "max_tokens": 16,
                                                         "temperature": 0}, timeout=600)
        cached = j["usage"]["prompt_tokens_details"]["cached_tokens"]
        check(st == 200 and cached > 10, "second turn reuses the cached prefix (%d of %d prompt tokens)"
              % (cached, j["usage"]["prompt_tokens"]))
        turn2 = (GEMMA_TURNS % (msgs[0]["content"] + "\n\n" + msgs[1]["content"]) + reply
                 + "<end_of_turn>\n<start_of_turn>user\nAnd of Italy?<end_of_turn>\n<start_of_turn>model\n")
        want2 = raw_completion(s, turn2, 16)
        got2 = j["choices"][0]["message"]["content"]
        check(got2 == want2, "second turn equals the completion of the hand-rendered two-turn prompt (%r vs %r)"
              % (got2[:60], want2[:60]))
    finally:
        rc = s.stop()
        check(rc == 0, "server exits 0")
    print("%d failure(s)" % len(FAILS))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
