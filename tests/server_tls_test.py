#!/usr/bin/env python3
"""server_tls_test: `cllama serve --ssl-cert-file --ssl-key-file` (libmicrohttpd's GnuTLS) on stories260K.

A throwaway self-signed certificate is made with openssl at test time. Over https, with an API
key on as well: curl -k and curl --cacert (a verified handshake) get real completions, no key
is still a 401, /health is open; the `openai` package gets completions through an httpx client
with verify=<the certificate> and with verify=False; plain http to the TLS port gets no HTTP
answer and leaves the server serving. Start-up refuses a certificate without its key, an
unreadable file, a key that is not the certificate's, files swapped, an encrypted key.
SKIPs visibly without openssl, or when this cllama's libmicrohttpd has no TLS (the server
says so). Env: CLLAMA_BIN, CLLAMA_SHARED. Exit 77 = SKIP."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_api_test import BIN, STORIES, FAILS, Server, check, import_openai, skip  # noqa: E402

KEY = "tls-test-key-5d1e"
CHAT = {"messages": [{"role": "user", "content": "Tell me a story"}], "max_tokens": 8, "temperature": 0}


def openssl(*args):
    return subprocess.run(["openssl"] + list(args), capture_output=True, text=True, timeout=60)


def make_cert(d, name):
    cert, key = os.path.join(d, name + ".crt"), os.path.join(d, name + ".key")
    r = openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key, "-out", cert)
    if r.returncode != 0:  # an openssl without -addext: CN only (curl -k / verify=False still test TLS)
        r = openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-keyout", key, "-out", cert)
    if r.returncode != 0:
        skip("openssl cannot make a self-signed certificate: " + r.stderr.strip()[-200:])
    return cert, key


def start_fails(args, want):
    try:
        r = subprocess.run([BIN, "serve", "-m", STORIES, "--port", "0", "-t", "1"] + args, capture_output=True,
                           text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return False, "still running after 120 s"
    ok = r.returncode != 0 and want in r.stderr and "listening" not in r.stderr
    return ok, "rc %d: %s" % (r.returncode, r.stderr.strip().splitlines()[-1][-220:] if r.stderr.strip() else "")


def curl(args):
    return subprocess.run(["curl", "-sS", "-m", "60"] + args, capture_output=True, text=True)


def main():
    if not BIN or not os.path.exists(BIN):
        skip("CLLAMA_BIN not built")
    if not os.path.exists(STORIES):
        skip("stories260K.gguf missing")
    probe = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True)
    if probe.returncode != 0:
        skip("this cllama has no serve command")
    if not shutil.which("openssl"):
        skip("openssl is not installed: cannot make a test certificate, HTTPS not tested")
    if not shutil.which("curl"):
        skip("curl is not installed")
    check("--ssl-cert-file" in probe.stdout and "--ssl-key-file" in probe.stdout, "serve --help lists the TLS flags")
    tmp = tempfile.mkdtemp(prefix="cllama-tls-")
    try:
        run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % len(FAILS))
    sys.exit(1 if FAILS else 0)


def run(tmp):
    cert, key = make_cert(tmp, "a")
    cert_b, key_b = make_cert(tmp, "b")
    env = os.environ.copy()
    env.pop("CLLAMA_API_KEY", None)
    try:
        s = Server(STORIES, "--parallel", "2", "--ctx", "256", "-t", "1", "--api-key", KEY, "--ssl-cert-file", cert,
                   "--ssl-key-file", key, env=env, headers={"Authorization": "Bearer " + KEY}, cafile=cert)
    except RuntimeError as e:
        if "without TLS support" in str(e):
            skip("this cllama's libmicrohttpd has no TLS: " + str(e)[-300:])
        raise
    try:
        check(s.scheme == "https" and s.base.startswith("https://"), "the log says listening on https://")
        # curl -k: TLS without verification
        out = curl(["-k", s.base + "/health", "-w", "\n%{http_code}"])
        check(out.stdout.endswith("\n200") and '"ok"' in out.stdout, "curl -k https /health: 200 without a key")
        out = curl(["-k", s.base + "/v1/models", "-w", "\n%{http_code}"])
        body, _, code = out.stdout.rpartition("\n")
        check(code == "401" and json.loads(body)["error"]["code"] == "invalid_api_key",
              "curl -k https /v1/models without a key: 401 invalid_api_key")
        out = curl(["-k", s.base + "/v1/chat/completions", "-H", "Content-Type: application/json",
                    "-H", "Authorization: Bearer " + KEY, "-d", json.dumps(CHAT), "-w", "\n%{http_code}"])
        body, _, code = out.stdout.rpartition("\n")
        j = json.loads(body) if code == "200" else {}
        text = j["choices"][0]["message"]["content"] if j else None
        check(code == "200" and text and j["usage"]["completion_tokens"] > 0,
              "curl -k https chat completion with the key: 200 with text (%r)" % (text or out.stdout[:120]))
        # curl --cacert: the handshake verified against the certificate itself
        out = curl(["--cacert", cert, s.base + "/v1/models", "-H", "Authorization: Bearer " + KEY,
                    "-w", "\n%{http_code}"])
        body, _, code = out.stdout.rpartition("\n")
        check(code == "200" and json.loads(body)["data"][0]["id"] == "stories260K",
              "curl --cacert (verified TLS) /v1/models with the key: 200 (%s)" % out.stderr.strip()[:120])
        out = curl(["--cacert", cert_b, s.base + "/health"])
        check(out.returncode != 0, "curl --cacert with another certificate: the handshake fails (rc %d)" % out.returncode)
        # Python's ssl, verified
        st, _, data = s.request("GET", "/v1/models")
        check(st == 200 and json.loads(data)["data"][0]["id"] == "stories260K", "http.client over verified TLS: 200")
        # openai package over https (its wrong-key request is the second refusal, when it runs)
        refusals = 1 + test_openai(s, cert, text)
        # plain http to the TLS port: no HTTP answer, and the server goes on
        out = curl(["-m", "10", "http://127.0.0.1:%d/health" % s.port, "-w", "%{http_code}"])
        check(out.returncode != 0 and "200" not in out.stdout,
              "plain http to the TLS port gets no HTTP answer (curl rc %d, %r)" % (out.returncode, out.stdout[:40]))
        import http.client
        try:
            c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
            c.request("GET", "/health")
            r = c.getresponse()
            plain = r.status
        except (OSError, http.client.HTTPException) as e:
            plain = type(e).__name__
        check(plain != 200, "plain http.client to the TLS port: no 200 (%s)" % plain)
        out = curl(["-k", s.base + "/health", "-w", "\n%{http_code}"])
        check(out.stdout.endswith("\n200") and s.alive(), "https still served after the plain-http attempts")
        m = s.metrics()
        check(m.get("cllama_auth_refused_total") == refusals, "metrics over https: the %d refusal(s) counted (%s)"
              % (refusals, m.get("cllama_auth_refused_total")))
    finally:
        rc = s.stop()
        check(rc == 0, "TLS server exits 0 on SIGTERM")

    # start-up errors
    enc = os.path.join(tmp, "enc.key")
    r = openssl("pkey", "-in", key, "-out", enc, "-aes256", "-passout", "pass:pw")
    cases = [
        (["--ssl-cert-file", cert], "needs both", "a certificate without a key"),
        (["--ssl-key-file", key], "needs both", "a key without a certificate"),
        (["--ssl-cert-file", os.path.join(tmp, "nope.crt"), "--ssl-key-file", key], "cannot read --ssl-cert-file",
         "a missing certificate file"),
        (["--ssl-cert-file", cert, "--ssl-key-file", os.path.join(tmp, "nope.key")], "cannot read --ssl-key-file",
         "a missing key file"),
        (["--ssl-cert-file", key, "--ssl-key-file", cert], "not a PEM certificate", "certificate and key swapped"),
        (["--ssl-cert-file", cert, "--ssl-key-file", key_b], "cannot start HTTPS", "a key of another certificate"),
    ]
    if r.returncode == 0:
        cases.append((["--ssl-cert-file", cert, "--ssl-key-file", enc], "encrypted", "an encrypted key"))
    for args, want, what in cases:
        ok, why = start_fails(args, want)
        check(ok, "start-up error for %s (%s)" % (what, why))


def test_openai(s, cert, want_text):
    """the openai client over https; returns the refusals it caused (0 when the package is missing)"""
    openai = import_openai("openai over TLS skipped")
    if openai is None:
        return 0
    for verify, what in ((cert, "verify=<the certificate>"), (False, "verify=False")):
        hc = openai.DefaultHttpxClient(verify=verify)
        client = openai.OpenAI(base_url=s.base + "/v1", api_key=KEY, http_client=hc, max_retries=0)
        r = client.chat.completions.create(model="stories260K", **CHAT)
        text = r.choices[0].message.content
        check(text and text == want_text and r.usage.completion_tokens > 0,
              "openai over https (%s): chat completion == curl's greedy text (%r)" % (what, text))
        check([m.id for m in client.models.list().data] == ["stories260K"], "openai over https (%s): models.list" % what)
        parts = [c.choices[0].delta.content or "" for c in
                 client.chat.completions.create(model="stories260K", stream=True, **CHAT) if c.choices]
        check("".join(parts) == want_text, "openai over https (%s): stream=True gives the same text" % what)
        client.close()
    bad = openai.OpenAI(base_url=s.base + "/v1", api_key=KEY + "x", http_client=openai.DefaultHttpxClient(verify=cert),
                        max_retries=0)
    try:
        bad.models.list()
        check(False, "openai over https with a wrong key is refused")
    except openai.AuthenticationError as e:
        check(e.status_code == 401, "openai over https with a wrong key: AuthenticationError 401")
    bad.close()
    return 1  # the refused request


if __name__ == "__main__":
    main()
