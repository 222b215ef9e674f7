#!/usr/bin/env python3
"""server_chat_default_test: `cllama serve` with no -m answers a chat with the default chat model.

The server is started with no -m and no $CLLAMA_MODEL: it must serve the default chat model
(SmolLM2-135M-Instruct Q4_1, installed by scripts/setup.sh; /v1/models lists it, its ChatML template
is recognised), and the official `openai` client's greedy chat "What is the capital of France?" must
be answered with Paris, whole and streamed. The base model that was the default before
(Gemma-3-270M) fails this. SKIPs (exit 77) when the model or the openai package is missing.
Env: CLLAMA_BIN."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_api_test import BIN, Server, check, skip, FAILS, import_openai, need_serve_model  # noqa: E402
from chat_default_test import chat_default_path  # noqa: E402

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


def main():
    model = chat_default_path()
    need_serve_model(model, "the default chat model")
    openai = import_openai("the default chat model is not checked through serve")
    if openai is None:
        sys.exit(77)
    env = dict(os.environ)
    env.pop("CLLAMA_MODEL", None)  # the default itself is under test
    env.pop("CLLAMA_BACKEND", None)
    h = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True, env=env)
    check(model in h.stdout, "`cllama serve --help` names the default %s" % model)
    s = Server(None, "--parallel", "1", "--ctx", "512", env=env, startup_s=300)
    try:
        check(any("template chatml" in line for line in s.log),
              "the served model's chat template is ChatML (log: %s)" % " | ".join(s.log[-4:]))
        client = openai.OpenAI(base_url=s.base + "/v1", api_key="none")
        ids = [m.id for m in client.models.list().data]
        want_id = os.path.basename(model)[:-len(".gguf")]
        check(ids == [want_id], "/v1/models lists the default chat model (%s; got %s)" % (want_id, ids))
        name = ids[0] if ids else want_id
        r = client.chat.completions.create(model=name, messages=QUESTION, temperature=0, max_tokens=48)
        reply = r.choices[0].message.content or ""
        print("     %s -> %r" % (QUESTION[0]["content"], reply))
        check("Paris" in reply, "the greedy chat answers with Paris (reply %r)" % reply)
        st = client.chat.completions.create(model=name, messages=QUESTION, temperature=0, max_tokens=48, stream=True)
        streamed = "".join(ev.choices[0].delta.content or "" for ev in st if ev.choices)
        check(streamed == reply, "streamed, the same reply (%r)" % streamed)
    finally:
        rc = s.stop()
        check(rc == 0, "server exits 0")
    print("server_chat_default_test: %d failure(s)" % len(FAILS))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
