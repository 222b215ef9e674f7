#!/usr/bin/env python3
"""server_auth_test: `cllama serve --api-key / --api-key-file / $CLLAMA_API_KEY` on stories260K.

Every refusal (no header, wrong scheme, wrong key, almost-right keys: a prefix, the key plus a
suffix, one character off, another case, an empty Bearer) must be a 401 with the OpenAI error
body (code invalid_api_key) and `WWW-Authenticate: Bearer`, on the generation endpoints, on
/v1/models and on /metrics; cllama_auth_refused_total must count exactly those refusals. The
right key gets real completions with curl and with the `openai` package; /health, the page and
CORS preflights stay open; a body over --max-body without a key is a 401 (not 413); a refused
request with a body leaves the keep-alive connection usable. A key file with two keys (plus
$CLLAMA_API_KEY) accepts all three; bad key files stop the server at start-up with a clear
message; a server without keys ignores Authorization headers as before.
Env: CLLAMA_BIN, CLLAMA_SHARED. Exit 77 = SKIP."""
import base64
import http.client
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_api_test import BIN, STORIES, FAILS, Server, check, import_openai, skip  # noqa: E402

KEY = "sk-cllama-Test-9f3a7c21e5"
ERR_TYPE, ERR_CODE = "invalid_request_error", "invalid_api_key"
CHAT = {"messages": [{"role": "user", "content": "Tell me a story"}], "max_tokens": 8, "temperature": 0}


def bearer(k):
    return {"Authorization": "Bearer " + k}


def one_off(k):
    i = len(k) // 2
    return k[:i] + ("x" if k[i] != "x" else "y") + k[i + 1:]


# (what, headers): each must be refused
BAD = [
    ("no Authorization header", {}),
    ("Basic scheme with the right key", {"Authorization": "Basic " + base64.b64encode(("u:" + KEY).encode()).decode()}),
    ("the bare key without a scheme", {"Authorization": KEY}),
    ("Bearer with nothing after it", {"Authorization": "Bearer "}),
    ("a wrong key", bearer("sk-not-the-key")),
    ("the key minus its last character (prefix)", bearer(KEY[:-1])),
    ("the key's first character only", bearer(KEY[:1])),
    ("the key plus a suffix", bearer(KEY + "0")),
    ("the key with one character off", bearer(one_off(KEY))),
    ("the key upper-cased", bearer(KEY.upper())),
    ("the key lower-cased", bearer(KEY.lower())),
    ("the key twice", bearer(KEY + KEY)),
]


def check_401(st, h, data, what):
    """the 401 must be the OpenAI error object, with WWW-Authenticate: Bearer, and never echo the key"""
    try:
        j = json.loads(data)
    except ValueError:
        j = None
    e = (j or {}).get("error") or {}
    ok = (st == 401 and isinstance(j, dict) and set(j) == {"error"}
          and set(e) == {"message", "type", "param", "code"} and isinstance(e["message"], str) and e["message"]
          and e["type"] == ERR_TYPE and e["param"] is None and e["code"] == ERR_CODE
          and h.get("WWW-Authenticate") == "Bearer" and KEY.encode() not in data
          and "application/json" in h.get("Content-Type", ""))
    check(ok, "401 + invalid_api_key body + WWW-Authenticate: Bearer: %s%s"
          % (what, "" if ok else " (got %s %s %s)" % (st, h.get("WWW-Authenticate"), data[:200])))


def metric(s, name):
    m = s.metrics()
    return m.get(name, 0)


def curl(args):
    return subprocess.run(["curl", "-sS", "-m", "60"] + args, capture_output=True, text=True)


def test_refusals(s):
    """every bad header on every guarded endpoint: 401; returns how many refusals were made"""
    n = 0
    for what, h in BAD:
        st, hh, data = s.request("POST", "/v1/chat/completions", CHAT, headers=h)
        check_401(st, hh, data, "POST /v1/chat/completions, " + what)
        n += 1
    for path, method, body in (("/v1/completions", "POST", {"prompt": "Once", "max_tokens": 4}),
                               ("/v1/models", "GET", None), ("/models", "GET", None),
                               ("/metrics", "GET", None), ("/no/such/path", "GET", None)):
        for what, h in (BAD[0], BAD[4], BAD[5], BAD[7]):
            st, hh, data = s.request(method, path, body, headers=h)
            check_401(st, hh, data, "%s %s, %s" % (method, path, what))
            n += 1
    # a body over --max-body without a key: refused for the key, before its size
    st, hh, data = s.request("POST", "/v1/completions", "x" * 10000, headers={})
    check_401(st, hh, data, "a body over --max-body without a key (401, not 413)")
    n += 1
    return n


def test_keepalive_after_refusal(s):
    """a refused POST's body is drained: the same connection then serves the right key"""
    c = s.conn(60)
    c.request("POST", "/v1/completions", body=json.dumps({"prompt": "Once", "max_tokens": 4}),
              headers={"Content-Type": "application/json", "Authorization": "Bearer wrong"})
    r = c.getresponse()
    d1 = r.read()
    c.request("POST", "/v1/completions", body=json.dumps({"prompt": "Once", "max_tokens": 4, "temperature": 0}),
              headers={"Content-Type": "application/json", "Authorization": "Bearer " + KEY})
    r2 = c.getresponse()
    d2 = json.loads(r2.read())
    c.close()
    check(r.status == 401 and b"invalid_api_key" in d1 and r2.status == 200 and d2["choices"][0]["text"],
          "keep-alive: a 401 then the right key on the same connection gets a completion")
    return 1


def test_open_paths(s):
    st, _, data = s.request("GET", "/health", headers={})
    check(st == 200 and json.loads(data)["status"] == "ok", "/health without a key: 200")
    st, _, data = s.request("GET", "/health", headers=bearer("wrong"))
    check(st == 200, "/health with a wrong key: still 200 (it is open)")
    st, h, data = s.request("GET", "/", headers={})
    check(st == 200 and b"<html" in data and b"Authorization" in data,
          "GET / (the chat page) without a key: 200, and the page sends Authorization")
    st, h, _ = s.request("OPTIONS", "/v1/chat/completions",
                         headers={"Origin": "http://x", "Access-Control-Request-Headers": "authorization"})
    check(st == 204 and "Authorization" in h.get("Access-Control-Allow-Headers", ""),
          "CORS preflight without a key: 204, allows the Authorization header")


def test_right_key_curl(s):
    out = curl([s.base + "/v1/chat/completions", "-H", "Content-Type: application/json",
                "-H", "Authorization: Bearer " + KEY, "-d", json.dumps(CHAT), "-w", "\n%{http_code}"])
    body, _, code = out.stdout.rpartition("\n")
    j = json.loads(body) if code == "200" else {}
    text = j.get("choices", [{}])[0].get("message", {}).get("content") if j else None
    check(code == "200" and text and j["usage"]["completion_tokens"] > 0,
          "curl with the right key: chat completion 200 with text (%r)" % (text or out.stdout[:120]))
    out = curl([s.base + "/v1/models", "-H", "Authorization: Bearer " + KEY, "-w", "\n%{http_code}"])
    body, _, code = out.stdout.rpartition("\n")
    check(code == "200" and json.loads(body)["data"][0]["id"] == "stories260K", "curl with the right key: /v1/models")
    out = curl([s.base + "/v1/models", "-H", "Authorization: bearer " + KEY, "-o", "/dev/null", "-w", "%{http_code}"])
    check(out.stdout == "200", "the scheme name is case-insensitive ('bearer KEY' passes)")
    return text


def test_right_key_openai(s, want_text):
    openai = import_openai()
    if openai is None:
        return 0
    client = openai.OpenAI(base_url=s.base + "/v1", api_key=KEY, max_retries=0)
    r = client.chat.completions.create(model="stories260K", **CHAT)
    text = r.choices[0].message.content
    check(text and r.usage.completion_tokens > 0 and text == want_text,
          "openai client with api_key=KEY: chat completion, same greedy text as curl (%r)" % text)
    r = client.completions.create(model="stories260K", prompt="Once upon a time", max_tokens=6, temperature=0)
    check(len(r.choices[0].text) > 0, "openai client with the key: completions.create")
    check([m.id for m in client.models.list().data] == ["stories260K"], "openai client with the key: models.list")
    n = 0
    for bad in (KEY[:-1], KEY + "x", one_off(KEY)):
        wrong = openai.OpenAI(base_url=s.base + "/v1", api_key=bad, max_retries=0)
        try:
            wrong.chat.completions.create(model="stories260K", **CHAT)
            check(False, "openai client with an almost-right key is refused")
        except openai.AuthenticationError as e:
            check(e.status_code == 401 and getattr(e, "code", None) == ERR_CODE,
                  "openai client with an almost-right key: AuthenticationError 401 code invalid_api_key")
        n += 1
    return n


def start_fails(args, env=None, want=""):
    """a server that must not start: exits non-zero, fast, saying why, never listening"""
    try:
        r = subprocess.run([BIN, "serve", "-m", STORIES, "--port", "0"] + args, capture_output=True, text=True,
                           timeout=60, env=env)
    except subprocess.TimeoutExpired:
        return False, "still running after 60 s"
    ok = r.returncode != 0 and want in r.stderr and "listening" not in r.stderr
    return ok, "rc %d: %s" % (r.returncode, r.stderr.strip()[-200:])


def main():
    if not BIN or not os.path.exists(BIN):
        skip("CLLAMA_BIN not built")
    if not os.path.exists(STORIES):
        skip("stories260K.gguf missing")
    probe = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True)
    if probe.returncode != 0:
        skip("this cllama has no serve command")
    check("--api-key" in probe.stdout and "--api-key-file" in probe.stdout, "serve --help lists --api-key(-file)")
    env = os.environ.copy()
    env.pop("CLLAMA_API_KEY", None)

    # 1. one key on the command line
    s = Server(STORIES, "--parallel", "2", "--ctx", "256", "-t", "1", "--max-body", "4096", "--api-key", KEY,
               env=env)
    try:
        check(any("1 API key" in ln for ln in s.log), "the start-up log says a key is configured")
        refused = test_refusals(s)
        refused += test_keepalive_after_refusal(s)
        test_open_paths(s)
        text = test_right_key_curl(s)
        refused += test_right_key_openai(s, text)
        s.headers = bearer(KEY)
        m = s.metrics()
        check(m.get("cllama_auth_refused_total") == refused,
              "/metrics: cllama_auth_refused_total == %d refusals (got %s)" % (refused, m.get("cllama_auth_refused_total")))
        check(m.get('cllama_requests_total{code="401"}') == refused, "/metrics: the 401s are counted by status too")
        check(m.get('cllama_requests_total{code="413"}', 0) == 0, "/metrics: no 413 went to a client without a key")
        s.headers = {}
        st, h, data = s.request("GET", "/metrics")
        check_401(st, h, data, "/metrics itself needs the key")
        s.headers = bearer(KEY)
        check(metric(s, "cllama_auth_refused_total") == refused + 1, "/metrics: that refusal was counted")
        check(s.alive(), "server alive after the auth tests")
    finally:
        rc = s.stop()
        check(rc == 0, "server exits 0 on SIGTERM")

    # 2. a key file with two keys (comments, blank lines, CRLF) plus $CLLAMA_API_KEY
    tmp = tempfile.mkdtemp(prefix="cllama-auth-")
    kf = os.path.join(tmp, "keys")
    k1, k2, k3 = "team-A-key-0001", "team-B-key-0002", "env-key-0003"
    with open(kf, "w") as f:
        f.write("# keys for the test\n\n  %s  \r\n# %s (a comment, not a key)\n%s\n\n" % (k1, "retired-key", k2))
    env2 = dict(env, CLLAMA_API_KEY=k3)
    s = Server(STORIES, "--parallel", "2", "--ctx", "256", "-t", "1", "--api-key-file", kf, env=env2)
    try:
        check(any("3 API keys" in ln for ln in s.log), "key file + env: 3 keys configured")
        for k in (k1, k2, k3):
            st, _, data = s.request("GET", "/v1/models", headers=bearer(k))
            check(st == 200 and json.loads(data)["data"][0]["id"] == "stories260K", "key %s... accepted" % k[:6])
        s.headers = bearer(k2)
        st, _, j = s.post_json("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 6, "temperature": 0})
        check(st == 200 and len(j["choices"][0]["text"]) > 0, "second file key: a real completion")
        s.headers = {}
        for bad in ("retired-key", k1[:-1], k1 + k2, "# keys for the test", ""):
            st, h, data = s.request("GET", "/v1/models", headers=bearer(bad) if bad else {})
            check_401(st, h, data, "key file server, %r" % bad[:20])
        s.headers = bearer(k3)
        check(metric(s, "cllama_auth_refused_total") == 5, "key file server: 5 refusals counted")
    finally:
        rc = s.stop()
        check(rc == 0, "key file server exits 0")

    # 3. bad key files and keys: a clear start-up error, no server
    empty = os.path.join(tmp, "empty")
    with open(empty, "w") as f:
        f.write("# only a comment\n\n   \n")
    spaced = os.path.join(tmp, "spaced")
    with open(spaced, "w") as f:
        f.write("ok-key\nsecret with space\n")
    for args, want, what in (
            (["--api-key-file", os.path.join(tmp, "missing")], "cannot read --api-key-file", "a missing key file"),
            (["--api-key-file", tmp], "--api-key-file", "a directory as key file"),
            (["--api-key-file", empty], "holds no key", "a key file with only comments"),
            (["--api-key-file", spaced], "line 2", "a key with a space in it"),
            (["--api-key", ""], "--api-key", "an empty --api-key")):
        ok, why = start_fails(args, env=env, want=want)
        check(ok, "start-up error for %s (%s)" % (what, why))
    ok, why = start_fails(["--api-key-file", spaced], env=env, want="")
    check("secret" not in why, "the error does not quote the key")
    os.chmod(kf, 0)
    if os.geteuid() != 0:
        ok, why = start_fails(["--api-key-file", kf], env=env, want="cannot read")
        check(ok, "start-up error for an unreadable key file (%s)" % why)
    else:
        print("SKIP: running as root, a mode-000 file is readable: the unreadable case is the directory one above")
    for p in (kf, empty, spaced):
        os.unlink(p)
    os.rmdir(tmp)

    # 4. no key configured: Authorization is ignored, nothing is refused
    s = Server(STORIES, "--parallel", "1", "--ctx", "128", "-t", "1", env=env)
    try:
        st1, _, _ = s.request("GET", "/v1/models")
        st2, _, _ = s.request("GET", "/v1/models", headers=bearer("anything"))
        st3, _, j = s.post_json("/v1/completions", {"prompt": "Once", "max_tokens": 3})
        check(st1 == 200 and st2 == 200 and st3 == 200, "without keys: no key / any key -> 200 as before")
        check(metric(s, "cllama_auth_refused_total") == 0, "without keys: cllama_auth_refused_total stays 0")
    finally:
        rc = s.stop()
        check(rc == 0, "keyless server exits 0")
    print("%d failure(s)" % len(FAILS))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
