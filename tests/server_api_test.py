#!/usr/bin/env python3
"""server_api_test: `cllama serve` on stories260K over real HTTP with real clients.

curl (whole and streamed), the official `openai` package (stream=True unchanged), greedy
output equal to `cllama run --temp 0`, stop strings, max_tokens, concurrent streams, the
prefix cache, a client vanishing mid-stream, 503 on a full queue, /v1/models, /health,
/metrics. Other server tests import the Server helper from here.
Env: CLLAMA_BIN, CLLAMA_SHARED. Exit 77 = SKIP."""
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

BIN = os.environ.get("CLLAMA_BIN", "")
SHARED = os.environ.get("CLLAMA_SHARED", "/work/shared")
STORIES = os.path.join(SHARED, "models", "stories260K.gguf")


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def need_serve_model(model, what):
    """SKIP (exit 77) unless CLLAMA_BIN is built, has a serve command, and the model file exists"""
    if not BIN or not os.path.exists(BIN):
        skip("CLLAMA_BIN not built")
    if not os.path.exists(model):
        skip("%s is not installed (%s; `bash scripts/setup.sh` installs it)" % (what, model))
    if subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True).returncode != 0:
        skip("this cllama has no serve command")


class Server:
    """A `cllama serve` child on a free loopback port (--port 0, read back from its log); model None:
    no -m, the server's own default.
    headers: sent with every request() (e.g. the API key); an https server (--ssl-cert-file)
    is spoken to over TLS, verified against cafile when given, else unverified."""

    def __init__(self, model, *args, bin_path=None, env=None, startup_s=120, headers=None, cafile=None):
        self.bin = bin_path or BIN
        self.headers = dict(headers or {})
        self.cafile = cafile
        self.scheme = "http"
        cmd = [self.bin, "serve"] + (["-m", model] if model is not None else []) + ["--port", "0"] + [str(a) for a in args]
        self.log = []
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     env=env or os.environ.copy())
        self.port = None
        ready = threading.Event()

        def pump():
            for line in self.proc.stderr:
                self.log.append(line.rstrip("\n"))
                m = re.search(r"listening on (https?)://[^:]+:(\d+)", line)
                if m:
                    self.scheme = m.group(1)
                    self.port = int(m.group(2))
                    ready.set()
            ready.set()

        self.pump = threading.Thread(target=pump, daemon=True)
        self.pump.start()
        ready.wait(startup_s)
        if self.port is None:
            self.stop()
            raise RuntimeError("server did not start: " + " | ".join(self.log[-10:]))
        self.base = "%s://127.0.0.1:%d" % (self.scheme, self.port)

    def conn(self, timeout=120):
        if self.scheme == "https":
            import ssl
            ctx = ssl.create_default_context(cafile=self.cafile) if self.cafile else ssl._create_unverified_context()
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, context=ctx)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=120):
        c = self.conn(timeout)
        h = {"Content-Type": "application/json"}
        h.update(self.headers)
        h.update(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, dict(r.getheaders()), data

    def post_json(self, path, obj, timeout=120):
        st, h, data = self.request("POST", path, obj, timeout=timeout)
        return st, h, json.loads(data) if data else None

    def stream(self, path, obj, timeout=120):
        """POST with stream true; returns (status, list of parsed chunks, saw_done)."""
        c = self.conn(timeout)
        h = {"Content-Type": "application/json"}
        h.update(self.headers)
        c.request("POST", path, body=json.dumps(obj), headers=h)
        r = c.getresponse()
        if r.status != 200:
            data = r.read()
            c.close()
            return r.status, [json.loads(data)], False
        chunks, done, buf = [], False, b""
        while True:
            piece = r.read1(65536) if hasattr(r, "read1") else r.read(1)
            if not piece:
                break
            buf += piece
            while b"\n\n" in buf:
                rec, buf = buf.split(b"\n\n", 1)
                for line in rec.split(b"\n"):
                    if line.startswith(b"data: "):
                        d = line[6:]
                        if d == b"[DONE]":
                            done = True
                        else:
                            chunks.append(json.loads(d))
        c.close()
        return 200, chunks, done

    def metrics(self):
        st, _, data = self.request("GET", "/metrics")
        assert st == 200, st
        out = {}
        for line in data.decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.pump.join(5)
        return self.proc.returncode


FAILS = []
CHAT = {"ok": None}


def chat_ok(s):
    """whether /v1/chat/completions answers (checked once: a route that does not is a failure, and the
    chat-only checks after it are left out rather than piling up errors)"""
    if CHAT["ok"] is None:
        st, _, data = s.request("POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                                                                  "max_tokens": 1})
        CHAT["ok"] = st == 200
        check(CHAT["ok"], "chat completions answer 200 (%d %s)" % (st, data[:120]))
    return CHAT["ok"]


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def text_of(chunks, chat=True):
    out = ""
    for ch in chunks:
        for c in ch.get("choices", []):
            out += (c.get("delta", {}).get("content") or "") if chat else (c.get("text") or "")
    return out


def test_basics(s):
    st, _, data = s.request("GET", "/health")
    check(st == 200 and json.loads(data)["status"] == "ok", "/health 200 ok")
    st, _, j = s.post_json("/v1/models", {}) if False else (None, None, None)
    st, _, data = s.request("GET", "/v1/models")
    j = json.loads(data)
    check(st == 200 and j["object"] == "list" and j["data"][0]["id"] == "stories260K", "/v1/models lists the model")
    st, h, data = s.request("GET", "/")
    check(st == 200 and b"<html" in data and "text/html" in h.get("Content-Type", ""), "GET / serves the chat page")


def test_curl(s):
    body = json.dumps({"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 16, "temperature": 0})
    out = subprocess.run(["curl", "-sS", "-m", "60", s.base + "/v1/completions", "-H", "Content-Type: application/json",
                          "-d", body], capture_output=True, text=True)
    j = json.loads(out.stdout)
    ch = j["choices"][0]
    check(j["object"] == "text_completion" and j["id"].startswith("cmpl-") and j["model"] == "stories260K"
          and isinstance(j["created"], int), "curl: completion envelope (id, object, created, model)")
    check(ch["finish_reason"] in ("length", "stop") and len(ch["text"]) > 0, "curl: completion text + finish_reason")
    check(j["usage"]["completion_tokens"] <= 16 and j["usage"]["total_tokens"] ==
          j["usage"]["prompt_tokens"] + j["usage"]["completion_tokens"], "curl: usage adds up")
    if chat_ok(s):
        body = json.dumps({"messages": [{"role": "user", "content": "Tell me a story"}], "max_tokens": 12,
                           "stream": True, "temperature": 0})
        path = "/v1/chat/completions"
    else:
        body = json.dumps({"prompt": "Tell me a story", "max_tokens": 12, "stream": True, "temperature": 0})
        path = "/v1/completions"
    chat = path.startswith("/v1/chat")
    out = subprocess.run(["curl", "-sS", "-N", "-m", "60", s.base + path, "-H",
                          "Content-Type: application/json", "-d", body], capture_output=True, text=True)
    recs = [r for r in out.stdout.split("\n\n") if r.strip()]
    check(len(recs) >= 3 and all(r.startswith("data: ") for r in recs), "curl -N: every SSE record is 'data: ...'")
    check(recs[-1] == "data: [DONE]", "curl -N: stream ends with data: [DONE]")
    chunks = [json.loads(r[6:]) for r in recs[:-1]]
    if chat:
        check(chunks[0]["choices"][0]["delta"].get("role") == "assistant", "stream: first chunk carries the role")
    obj = "chat.completion.chunk" if chat else "text_completion"
    check(all(c["object"] == obj and c["id"] == chunks[0]["id"] for c in chunks), "stream: chunks share one id")
    last = chunks[-1]
    check(last["choices"][0]["finish_reason"] in ("stop", "length") and "usage" in last,
          "stream: last chunk has finish_reason and usage")


def run_cli(prompt, n, ids=False):
    """`cllama run --temp 0` for the same prompt"""
    cmd = [BIN, "run", "-m", STORIES, "-p", prompt, "-n", str(n), "--temp", "0"] + (["--print-ids"] if ids else [])
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_greedy_matches_run(s):
    prompt, n = "Once upon a time, there was a little", 32
    st, _, j = s.post_json("/v1/completions", {"prompt": prompt, "max_tokens": n, "temperature": 0,
                                               "return_tokens": True})
    check(st == 200, "greedy completion 200")
    text = j["choices"][0]["text"]
    toks = j["choices"][0].get("tokens", [])
    out = run_cli(prompt, n)
    if out.returncode != 0:
        check(False, "`cllama run --temp 0` exits 0 (rc %d: %s)" % (out.returncode, out.stderr.strip()[-200:]))
        return
    # run prints the continuation (and maybe the prompt before it); the server gives the continuation
    check(text != "" and out.stdout.rstrip("\n").endswith(text.rstrip("\n")),
          "greedy /v1/completions text == `cllama run --temp 0` (%r)" % text[:40])
    out = run_cli(prompt, n, ids=True)
    m = re.search(r"^generated:([ \d-]*)$", out.stdout, re.M)
    check(out.returncode == 0 and m is not None,
          "`cllama run --print-ids` prints a 'generated:' line (rc %d: %s)" % (out.returncode, out.stderr.strip()[-200:]))
    if m:
        check([int(x) for x in m.group(1).split()] == toks, "greedy token ids == `cllama run --print-ids`")
    # the same prompt streamed gives the same text
    st, chunks, done = s.stream("/v1/completions", {"prompt": prompt, "max_tokens": n, "temperature": 0,
                                                    "stream": True})
    check(done and text_of(chunks, chat=False) == text, "streamed greedy text == whole greedy text")


def test_stop_and_length(s):
    prompt = "Once upon a time"
    st, _, j = s.post_json("/v1/completions", {"prompt": prompt, "max_tokens": 40, "temperature": 0})
    full = j["choices"][0]["text"]
    check(j["choices"][0]["finish_reason"] == "length" or j["usage"]["completion_tokens"] < 40,
          "max_tokens: finish_reason length when the budget runs out")
    # a stop string from the middle of the greedy text (likely spanning tokens): the first 3 characters
    # without a space from the middle on (the greedy text is fixed, so this always runs)
    stop = next((full[i:i + 3] for i in range(len(full) // 2, len(full) - 2) if " " not in full[i:i + 3]
                 and "\n" not in full[i:i + 3]), "")
    check(len(stop) == 3, "stop string: the greedy text has 3 characters without a space to stop at (%r)" % full[-40:])
    if stop:
        st, _, j = s.post_json("/v1/completions", {"prompt": prompt, "max_tokens": 40, "temperature": 0,
                                                   "stop": [stop, "zzzz"]})
        t = j["choices"][0]["text"]
        check(j["choices"][0]["finish_reason"] == "stop" and t == full[:full.find(stop)] and stop not in t,
              "stop string: text ends before it, finish_reason stop")
        st, chunks, done = s.stream("/v1/completions", {"prompt": prompt, "max_tokens": 40, "temperature": 0,
                                                        "stop": stop, "stream": True})
        check(text_of(chunks, chat=False) == full[:full.find(stop)], "stop string honoured in a stream too")


def openai_from_wheels():
    """openai from $CLLAMA_WHEELS (the wheels scripts/h200.sh pack stages for an offline box) in a
    private dir put first on sys.path (the system site-packages are left alone): pip install
    --no-index --target, else (no pip there) the wheels unzipped, a wheel being a zip laid out for
    site-packages. None when the variable is unset or the package still does not import."""
    wheels = os.environ.get("CLLAMA_WHEELS", "")
    if not wheels or not os.path.isdir(wheels):
        return None
    import atexit
    import glob
    import importlib
    import shutil
    import tempfile
    import zipfile
    target = tempfile.mkdtemp(prefix="cllama-openai-")
    atexit.register(shutil.rmtree, target, True)
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index",
                        "--find-links", wheels, "--target", target, "openai"], capture_output=True, text=True)
    how = "pip install --no-index --target"
    if r.returncode != 0:
        errs = [ln for ln in r.stderr.splitlines() if ln.startswith("ERROR")] or ["exit %d" % r.returncode]
        how = "unzipped (pip: %s)" % errs[0][:160]
        shutil.rmtree(target, True)
        os.makedirs(target)
        for w in sorted(glob.glob(os.path.join(wheels, "*.whl"))):
            with zipfile.ZipFile(w) as z:
                z.extractall(target)
    sys.path.insert(0, target)
    importlib.invalidate_caches()
    try:
        import openai
    except ImportError as e:  # e.g. wheels for another python: forget what loaded from them
        sys.path.remove(target)
        for name, mod in list(sys.modules.items()):
            if (getattr(mod, "__file__", None) or "").startswith(target + os.sep):
                del sys.modules[name]
        print("note: openai from the wheels in %s did not import (%s; %s)" % (wheels, e, how))
        return None
    print("note: openai %s from the wheels in %s (%s)" % (openai.__version__, wheels, how))
    return openai


def import_openai(skipped="openai client part skipped"):
    """the openai module: installed, else from $CLLAMA_WHEELS, else pip-installed from the index;
    None after a visible SKIP line naming what is skipped"""
    try:
        import openai
        return openai
    except ImportError:
        pass
    openai = openai_from_wheels()
    if openai is not None:
        return openai
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "openai"], capture_output=True)
    if r.returncode == 0:
        try:
            import importlib
            importlib.invalidate_caches()
            import openai  # noqa: F811
            return openai
        except ImportError:
            pass
    print("SKIP: the openai package is not installed and could not be installed: " + skipped)
    return None


def test_openai_package(s):
    openai = import_openai()
    if openai is None:
        return
    client = openai.OpenAI(base_url=s.base + "/v1", api_key="none")
    st = client.completions.create(model="stories260K", prompt="Once upon", max_tokens=10, temperature=0, stream=True)
    parts = [ev.choices[0].text for ev in st if ev.choices]
    c = client.completions.create(model="stories260K", prompt="Once upon", max_tokens=10, temperature=0)
    check(len(c.choices[0].text) > 0 and c.choices[0].text == "".join(parts),
          "openai: completions.create, streamed == whole (greedy)")
    if chat_ok(s):
        stream = client.chat.completions.create(model="stories260K", messages=[{"role": "user", "content": "Hi"}],
                                                max_tokens=10, temperature=0, stream=True,
                                                stream_options={"include_usage": True})
        parts, finish, usage = [], None, None
        for ev in stream:
            if ev.choices:
                parts.append(ev.choices[0].delta.content or "")
                finish = ev.choices[0].finish_reason or finish
            if ev.usage:
                usage = ev.usage
        check(finish in ("stop", "length") and len("".join(parts)) > 0, "openai: chat stream=True yields text + finish")
        check(usage is not None and usage.completion_tokens >= 1, "openai: include_usage gives a usage chunk")
        r = client.chat.completions.create(model="stories260K", messages=[{"role": "user", "content": "Hi"}],
                                           max_tokens=10, temperature=0)
        check(r.choices[0].message.content == "".join(parts), "openai: whole reply == streamed reply (greedy)")
    try:
        client.completions.create(model="gpt-4", prompt="Hi")
        check(False, "openai: unknown model is refused")
    except openai.NotFoundError as e:
        check(e.status_code == 404, "openai: unknown model -> NotFoundError 404")
    models = client.models.list()
    check([m.id for m in models.data] == ["stories260K"], "openai: models.list")


def test_concurrent(s, n=6):
    results = [None] * n
    chat = chat_ok(s)

    def one(i):
        try:
            if chat and i % 2:
                results[i] = s.stream("/v1/chat/completions", {
                    "messages": [{"role": "user", "content": "Story number %d" % i}],
                    "max_tokens": 24 + i, "temperature": 0.7, "seed": i, "stream": True})
            else:
                results[i] = s.stream("/v1/completions", {
                    "prompt": "Story number %d: once upon a time" % i, "ignore_eos": True,
                    "max_tokens": 24 + i, "temperature": 0.7, "seed": i, "stream": True})
        except Exception as e:  # noqa: BLE001
            results[i] = (0, [str(e)], False)

    th = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    t0 = time.time()
    for t in th:
        t.start()
    for t in th:
        t.join(300)
    ok = all(r and r[0] == 200 and r[2] and r[1][-1]["choices"][0]["finish_reason"] in ("stop", "length")
             for r in results)
    lens = [(24 + i, r[1][-1]["usage"]["completion_tokens"]) for i, r in enumerate(results)
            if ok and not (chat and i % 2)]
    check(ok and all(want == got for want, got in lens),
          "ignore_eos streams run to exactly max_tokens (%s)" % lens)
    check(ok, "%d concurrent streams all complete with [DONE] (%.1f s)" % (n, time.time() - t0))
    # [DONE] reaches the client before the engine thread's next step retires the sequence, so
    # give the scheduler a moment (bounded) instead of racing it
    deadline = time.time() + 5.0
    m = s.metrics()
    while m.get("cllama_active_sequences", -1) != 0 and time.time() < deadline:
        time.sleep(0.05)
        m = s.metrics()
    check(m.get("cllama_active_sequences", -1) == 0, "metrics: no active sequences after the streams")


def test_batched_equals_alone(s):
    """continuous batching must not change what a sequence says: greedy replies decoded
    together (with prompts of different lengths joining mid-flight) equal those decoded alone"""
    prompts = ["Once upon a time, there was a big dog", "Tom had a red ball. He", "The sun",
               "Lily went to the park with her mom and dad. They saw a duck in the pond and"]
    alone = []
    for p in prompts:
        st, _, j = s.post_json("/v1/completions", {"prompt": p, "max_tokens": 20, "temperature": 0,
                                                   "return_tokens": True})
        alone.append(j["choices"][0]["tokens"])
    # break the prefix cache's exact-match advantage: fill every slot with something else first
    for k in range(4):
        s.post_json("/v1/completions", {"prompt": "Zzz %d" % k, "max_tokens": 2})
    together = [None] * len(prompts)

    def one(i):
        time.sleep(0.05 * i)  # staggered: later prompts prefill while earlier ones decode
        st, _, j = s.post_json("/v1/completions", {"prompt": prompts[i], "max_tokens": 20, "temperature": 0,
                                                   "return_tokens": True})
        together[i] = j["choices"][0]["tokens"] if st == 200 else None

    th = [threading.Thread(target=one, args=(i,)) for i in range(len(prompts))]
    for t in th:
        t.start()
    for t in th:
        t.join(300)
    check(together == alone, "greedy token ids decoded in one batch == decoded alone (%d prompts)" % len(prompts))


def test_greedy_among_sampled(s):
    """a greedy reply decoded in steps shared with sampled (temperature 0.8) requests, whose steps copy
    the logits out, equals it decoded in all-greedy steps, which take the driver's argmax (ids only)"""
    p = "Once upon a time, there was a little cat who"
    st, _, j = s.post_json("/v1/completions", {"prompt": p, "max_tokens": 24, "temperature": 0, "return_tokens": True})
    alone = j["choices"][0]["tokens"] if st == 200 else None
    m0 = s.metrics().get("cllama_greedy_steps_total", 0)
    out = [None] * 3

    def one(i):
        body = {"prompt": p if i == 0 else "The dog ran %d times around the" % i, "max_tokens": 24,
                "return_tokens": True, "temperature": 0 if i == 0 else 0.8, "seed": i}
        st, _, j = s.post_json("/v1/completions", body)
        out[i] = j["choices"][0]["tokens"] if st == 200 else None

    th = [threading.Thread(target=one, args=(i,)) for i in range(3)]
    for t in th:
        t.start()
    for t in th:
        t.join(300)
    check(alone is not None and out[0] == alone, "greedy token ids among sampled requests == in all-greedy steps")
    check(all(o for o in out[1:]), "the sampled requests beside it complete")
    check(m0 > 0, "metrics: all-greedy steps took the driver's argmax (cllama_greedy_steps_total %s)" % m0)


def test_sampled_topk_equals_logits(s):
    """sampled requests (no penalties, top_k 40) take steps that return each slot's best candidates only
    (cllama_decode_topk, cllama_topk_steps_total); the draw is the one the full logits give: the same
    seeded request decoded beside a penalized one (whose steps must copy every logit) gets the same
    tokens (on the CPU, where a batch's logits equal each sequence's; the GPU's batched products may
    round differently, so there only the counter is checked)"""
    p = "Once upon a time, there was a little cat who"
    body = {"prompt": p, "max_tokens": 24, "return_tokens": True, "temperature": 0.9, "top_k": 40, "seed": 7}
    t0 = s.metrics().get("cllama_topk_steps_total", 0)
    st, _, j = s.post_json("/v1/completions", body)
    alone = j["choices"][0]["tokens"] if st == 200 else None
    t1 = s.metrics().get("cllama_topk_steps_total", 0)
    check(t1 > t0, "metrics: sampled steps took the best candidates only (cllama_topk_steps_total %s -> %s)" % (t0, t1))
    out = [None, None]

    def one(i):
        b = dict(body) if i == 0 else {"prompt": "The dog ran around the", "max_tokens": 40, "temperature": 0.8,
                                       "presence_penalty": 0.5, "seed": 3, "return_tokens": True}
        st, _, j = s.post_json("/v1/completions", b)
        out[i] = j["choices"][0]["tokens"] if st == 200 else None

    th = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    th[1].start()
    time.sleep(0.02)
    th[0].start()
    for t in th:
        t.join(300)
    check(all(o for o in out), "a sampled request beside a penalized one completes")
    if (os.environ.get("CLLAMA_BACKEND") or "cpu") == "cpu":
        check(alone is not None and out[0] == alone,
              "seeded sampling: the same tokens from the candidates as from the full logits")


def test_prefix_cache(s):
    p1 = "Lily and Ben were friends. They liked to play in the park with a big red ball."
    st, _, j1 = s.post_json("/v1/completions", {"prompt": p1, "max_tokens": 8, "temperature": 0})
    p2 = p1 + j1["choices"][0]["text"] + " Then they went home."
    st, _, j2 = s.post_json("/v1/completions", {"prompt": p2, "max_tokens": 8, "temperature": 0})
    cached = j2["usage"]["prompt_tokens_details"]["cached_tokens"]
    check(st == 200 and cached >= j1["usage"]["prompt_tokens"] - 2,
          "prefix cache: a longer prompt reuses the earlier KV (%d cached of %d)" % (cached,
                                                                                  j2["usage"]["prompt_tokens"]))
    st, _, j3 = s.post_json("/v1/completions", {"prompt": p2, "max_tokens": 8, "temperature": 0})
    check(j3["choices"][0]["text"] == j2["choices"][0]["text"] and
          j3["usage"]["prompt_tokens_details"]["cached_tokens"] == j3["usage"]["prompt_tokens"] - 1,
          "prefix cache: a fully cached prompt gives the same greedy reply")
    if not chat_ok(s):
        return
    msgs = [{"role": "system", "content": "You are a storyteller who tells short stories about animals."},
            {"role": "user", "content": "Tell me about a cat"}]
    st, _, j1 = s.post_json("/v1/chat/completions", {"messages": msgs, "max_tokens": 8, "temperature": 0})
    msgs2 = msgs + [{"role": "assistant", "content": j1["choices"][0]["message"]["content"]},
                    {"role": "user", "content": "And a dog?"}]
    st, _, j2 = s.post_json("/v1/chat/completions", {"messages": msgs2, "max_tokens": 8, "temperature": 0})
    cached = j2["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0)
    check(st == 200 and cached >= j1["usage"]["prompt_tokens"] - 1,
          "prefix cache: second chat turn reuses the first turn's KV (%d cached of %d)"
          % (cached, j2["usage"]["prompt_tokens"]))


def wait_active(s, want, limit_s=10):
    """wait until the engine reports `want` active sequences; returns the seconds it took or None"""
    t0 = time.time()
    while time.time() - t0 < limit_s:
        if s.metrics().get("cllama_active_sequences", -1) == want:
            return time.time() - t0
        time.sleep(0.05)
    return None


def test_disconnect_and_busy(model):
    s = Server(model, "--parallel", "1", "--queue", "0", "--ctx", "256")
    try:
        # a long stream, then vanish after the first bytes
        sk = socket.create_connection(("127.0.0.1", s.port))
        body = json.dumps({"prompt": "Once", "max_tokens": 100000, "stream": True})
        sk.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    "Content-Length: %d\r\n\r\n%s" % (len(body), body)).encode())
        got = sk.recv(4096)
        check(got.startswith(b"HTTP/1.1 200"), "long stream started")
        # while it runs, the only slot is taken and the queue is 0: the next request gets 503
        st, h, data = s.request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 2})
        err = json.loads(data)
        check(st == 503 and "Retry-After" in h and err["error"]["type"] == "server_error",
              "full queue -> 503 with Retry-After and an error object")
        # the response headers go out when the job is queued: on a loaded machine the engine may
        # not have admitted it yet (the active gauge would still read its initial 0). A data
        # record means a token was decoded, so the job holds the slot (or has finished).
        deadline = time.time() + 30
        while b"\ndata: " not in got and time.time() < deadline:
            more = sk.recv(4096)
            if not more:
                break
            got += more
        check(b"\ndata: " in got, "the long stream sends data")
        sk.close()
        took = wait_active(s, 0)
        check(took is not None, "client gone mid-stream frees its sequence (%s s)" % took)
        st, _, j = s.post_json("/v1/completions", {"prompt": "Once", "max_tokens": 4})
        check(st == 200, "the freed slot serves the next request" + ("" if st == 200 else " (got %s %s)" % (st, j)))
        # the same for a whole (non-stream) request whose client leaves
        sk = socket.create_connection(("127.0.0.1", s.port))
        body = json.dumps({"prompt": "Once", "max_tokens": 100000})
        sk.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                    % (len(body), body)).encode())
        time.sleep(0.3)
        sk.close()
        check(wait_active(s, 0) is not None, "client gone during a whole reply frees its sequence")
        # context end: generation stops with finish_reason length
        st, _, j = s.post_json("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 100000,
                                                   "temperature": 0, "seed": 1})
        ch = j["choices"][0]
        check(st == 200 and (ch["finish_reason"] == "stop" or (ch["finish_reason"] == "length" and
                                                                 j["usage"]["total_tokens"] == 256)),
              "generation ends at the context end with finish_reason length (%s, %d tokens)"
              % (ch["finish_reason"], j["usage"]["total_tokens"]))
        check(s.alive(), "server alive")
    finally:
        rc = s.stop()
        check(rc == 0, "server exits 0 on SIGTERM (rc %s)" % rc)


def test_driver_counters(s):
    """/metrics names the backend the model runs on (CLLAMA_BACKEND picks it, as for every load),
    and the driver's counters show every forward ran on that backend's device: on the GPU the
    one-stream decode steps come from the captured graph, so a silent CPU fallback fails here"""
    backend = os.environ.get("CLLAMA_BACKEND") or "cpu"
    m = s.metrics()
    check(m.get('cllama_backend_info{backend="%s"}' % backend) == 1, "metrics: backend %s" % backend)
    fw = m.get("cllama_driver_forwards_total", 0)
    check(fw > 0 and m.get("cllama_driver_device_steps_total") == fw, "metrics: every forward ran on the device")
    steps = m.get('cllama_step_seconds_count{kind="decode"}', 0) + m.get('cllama_step_seconds_count{kind="prefill"}', 0)
    check(steps == m.get("cllama_decode_steps_total") and steps > 0,
          "metrics: the step histogram counts every step (%s vs %s)" % (steps, m.get("cllama_decode_steps_total")))
    check(m.get('cllama_step_seconds_bucket{kind="prefill",le="+Inf"}') == m.get('cllama_step_seconds_count{kind="prefill"}'),
          "metrics: the +Inf bucket holds every prefill step")
    caps = m.get("cllama_driver_graph_captures_total")
    check(caps is not None and (caps > 0) == (backend == "cuda"), "metrics: graph captures %s on %s" % (caps, backend))
    dev, wall = m.get("cllama_driver_device_seconds_total"), m.get("cllama_decode_seconds_total", 0)
    check(dev is not None, "metrics: cllama_driver_device_seconds_total is there")
    if backend == "cuda":
        check(m.get("cllama_driver_graph_replays_total", 0) > 0, "metrics: decode steps replayed the CUDA graph")
        # the device's time is part of the decode calls' wall time, and not nothing
        check(dev is not None and 0 < dev <= wall * 1.01 + 1e-3, "metrics: device seconds %s within decode seconds %s" % (dev, wall))
        # the start-up preparation (step graphs, prompt passes) is its own gauge, not in the served device time
        prep = m.get("cllama_server_prepare_seconds")
        check(prep is not None and prep > 0, "metrics: start-up preparation %s s on cuda" % prep)
    else:
        check(dev == 0, "metrics: no device time on the CPU (%s)" % dev)
        check(m.get("cllama_server_prepare_seconds") is not None, "metrics: the start-up preparation gauge is there")


def main():
    if not BIN or not os.path.exists(BIN):
        skip("CLLAMA_BIN not built")
    if not os.path.exists(STORIES):
        skip("stories260K.gguf missing")
    probe = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True)
    if probe.returncode != 0:
        skip("this cllama has no serve command: " + probe.stderr.strip()[:200])
    s = Server(STORIES, "--parallel", "4", "--ctx", "256", "--model-alias", "stories260K")
    try:
        test_basics(s)
        test_curl(s)
        test_greedy_matches_run(s)
        test_stop_and_length(s)
        test_openai_package(s)
        test_concurrent(s)
        test_greedy_among_sampled(s)
        test_sampled_topk_equals_logits(s)
        test_batched_equals_alone(s)
        test_prefix_cache(s)
        test_driver_counters(s)
        check(s.alive(), "server alive after the API tests")
    finally:
        rc = s.stop()
        check(rc == 0, "server exits 0 on SIGTERM")
    test_disconnect_and_busy(STORIES)
    print("%d failure(s)" % len(FAILS))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
