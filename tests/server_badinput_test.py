#!/usr/bin/env python3
"""server_badinput_test: hostile and broken requests over real HTTP and raw sockets.

Each must get the right status with an OpenAI-style error object, or a clean close, and the
server must stay up, keep serving others, and exit 0 on SIGTERM (under ASan that also means
no leak and no memory error: run with CLLAMA_BIN pointing at an ASan build, as
server_asan_test.sh does). Env: CLLAMA_BIN, CLLAMA_SHARED. Exit 77 = SKIP."""
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_api_test import BIN, STORIES, Server, check, skip, FAILS  # noqa: E402

MAX_BODY = 8192


def raw(port, data, timeout=10, shut=False):
    """send bytes, read until close or timeout; returns the reply bytes"""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            try:
                b = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                break
            if not b:
                break
            out += b
            if b"\r\n\r\n" in out and not out.startswith(b"HTTP/1.1 200"):
                # error replies are small: stop once the whole body is in
                head, body = out.split(b"\r\n\r\n", 1)
                cl = [ln for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length:")]
                if cl and len(body) >= int(cl[0].split(b":")[1]):
                    break
        return out
    finally:
        s.close()


def status_of(reply):
    try:
        return int(reply.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0


def error_obj(reply):
    try:
        body = reply.split(b"\r\n\r\n", 1)[1]
        e = json.loads(body)["error"]
        return e if {"message", "type", "param", "code"} <= set(e) else None
    except Exception:  # noqa: BLE001
        return None


def post(port, path, body, ctype="application/json", extra=""):
    if isinstance(body, str):
        body = body.encode()
    req = ("POST %s HTTP/1.1\r\nHost: t\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n%s\r\n"
           % (path, ctype, len(body), extra)).encode() + body
    return raw(port, req)


def expect(port, path, body, want, code=None, what=""):
    r = post(port, path, body)
    e = error_obj(r)
    ok = status_of(r) == want and e is not None and (code is None or e["code"] == code)
    check(ok, "%s -> %d%s (got %d %s)" % (what or body[:60], want, " " + code if code else "", status_of(r),
                                          (e or {}).get("message", r[:80])))


def main():
    if not BIN or not os.path.exists(BIN):
        skip("CLLAMA_BIN not built")
    if not os.path.exists(STORIES):
        skip("stories260K.gguf missing")
    probe = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True)
    if probe.returncode != 0:
        skip("this cllama has no serve command")
    s = Server(STORIES, "--parallel", "2", "--ctx", "128", "--max-body", MAX_BODY, "--timeout", "2", "--queue", "4")
    p = s.port
    C, T = "/v1/chat/completions", "/v1/completions"
    try:
        # JSON and field errors
        expect(p, C, "{", 400, "invalid_json", "truncated JSON")
        expect(p, C, "", 400, None, "empty body")
        expect(p, C, "null", 400, None, "JSON null")
        expect(p, C, "[1,2]", 400, None, "JSON array")
        expect(p, C, '{"messages": "hi"}', 400, "invalid_type", "messages a string")
        expect(p, C, '{"model":"stories260K"}', 400, "missing_required_parameter", "messages missing")
        expect(p, C, '{"messages":[{"role":"user","content":"hi"}],"temperature":"x"}', 400, "invalid_type",
               "temperature a string")
        expect(p, C, '{"messages":[{"role":"user","content":"hi"}],"max_tokens":-5}', 400, "invalid_value",
               "max_tokens negative")
        expect(p, C, '{"messages":[{"role":"user","content":"hi"}],"stop":[1]}', 400, "invalid_type", "stop ints")
        expect(p, C, '{"messages":[{"role":"user","content":"hi"}],"n":3}', 400, "invalid_value", "n = 3")
        expect(p, T, '{"prompt": 42}', 400, "invalid_type", "prompt a number")
        expect(p, T, '{"prompt":"hi","model":"gpt-4"}', 404, "model_not_found", "unknown model")
        # non-UTF-8 bytes and a lone surrogate
        expect(p, T, b'{"prompt":"\xff\xfe bad"}', 400, "invalid_encoding", "non-UTF-8 body")
        expect(p, T, '{"prompt":"\\udc00"}', 400, None, "lone surrogate escape")
        # prompt longer than the context (128 tokens per sequence)
        expect(p, T, json.dumps({"prompt": "once upon a time " * 200}), 400, "context_length_exceeded",
               "prompt longer than the context")
        # size limits
        big = json.dumps({"prompt": "a" * (MAX_BODY * 2)})
        expect(p, T, big, 413, "request_too_large", "body over --max-body (Content-Length)")
        chunked = ("POST %s HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" % T).encode()
        piece = b"a" * 4000
        for _ in range(4):
            chunked += b"%x\r\n" % len(piece) + piece + b"\r\n"
        chunked += b"0\r\n\r\n"
        r = raw(p, chunked)
        check(status_of(r) == 413 and error_obj(r) is not None, "chunked body over --max-body -> 413")
        r = raw(p, ("POST %s HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999\r\n\r\n" % T).encode())
        check(status_of(r) == 413, "absurd Content-Length -> 413 (got %d)" % status_of(r))
        # routing
        r = raw(p, b"GET /nope HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        check(status_of(r) == 404 and error_obj(r) is not None, "unknown path -> 404 error object")
        r = raw(p, b"GET /v1/chat/completions HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        check(status_of(r) == 405, "GET on a POST route -> 405")
        r = raw(p, b"DELETE /v1/models HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        check(status_of(r) == 405, "DELETE /v1/models -> 405")
        # broken HTTP
        r = raw(p, b"GARBAGE\r\n\r\n")
        check(status_of(r) in (400, 0), "garbage request line -> 400 or close (got %d)" % status_of(r))
        r = raw(p, b"GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + b"x" * 200000 + b"\r\n\r\n")
        check(status_of(r) >= 400 or r == b"", "200 KB header -> 4xx or close (got %d)" % status_of(r))
        # wrong Content-Length: shorter than the body sent (the rest is garbage for the next request)
        body = b'{"prompt":"Once","max_tokens":2}'
        r = raw(p, ("POST %s HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n" % T).encode() + body, timeout=5)
        check(status_of(r) == 400, "Content-Length shorter than the body -> 400 (got %d)" % status_of(r))
        # truncated body: promised 1000 bytes, sent 20, then the client half-closes
        t0 = time.time()
        r = raw(p, ("POST %s HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n" % T).encode() + b'{"prompt":"abc"',
                timeout=10, shut=True)
        check(time.time() - t0 < 9, "truncated body: the connection ends without a hang (%.1f s)" % (time.time() - t0))
        # slowloris: a request dribbling in must not block others and is cut after --timeout
        slow = socket.create_connection(("127.0.0.1", p), timeout=15)
        slow.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: t\r\n")
        t0 = time.time()
        st, _, data = s.request("GET", "/health", timeout=5)
        check(st == 200, "another client is served while a slowloris connection is open")
        closed_at = None
        try:
            for i in range(12):
                time.sleep(0.5)
                slow.sendall(b"X-A: b\r\n") if i < 1 else None
                slow.settimeout(0.1)
                try:
                    if slow.recv(1) == b"":
                        closed_at = time.time() - t0
                        break
                except socket.timeout:
                    pass
        except (ConnectionResetError, BrokenPipeError):
            closed_at = time.time() - t0
        slow.close()
        check(closed_at is not None and closed_at < 6, "an idle half-sent request is dropped after --timeout (%s s)"
              % (None if closed_at is None else round(closed_at, 1)))
        # a flurry of connections that vanish at random points
        def vandal(i):
            try:
                sk = socket.create_connection(("127.0.0.1", p), timeout=5)
                body = json.dumps({"messages": [{"role": "user", "content": "x" * i}], "stream": i % 2 == 0,
                                   "max_tokens": 50})
                req = ("POST %s HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n%s" % (C, len(body), body)).encode()
                sk.sendall(req[: max(1, len(req) * (i % 5) // 4)])
                if i % 3 == 0:
                    sk.recv(100)
                sk.close()
            except OSError:
                pass
        th = [threading.Thread(target=vandal, args=(i,)) for i in range(40)]
        for t in th:
            t.start()
        for t in th:
            t.join(30)
        time.sleep(0.5)
        # valid requests still work, with odd but legal content
        st, _, j = s.post_json(T, {"prompt": "Once upon a time \u00e9\U0001F600", "max_tokens": 5})
        check(st == 200 and j["usage"]["completion_tokens"] >= 1, "a valid request after the abuse -> 200")
        st, _, j = s.post_json(T, {"prompt": "hi", "max_tokens": 3, "stop": ""})
        check(st == 200, "empty stop string is ignored, not an error")
        t0 = time.time()
        while time.time() - t0 < 10 and s.metrics().get("cllama_active_sequences", 1) != 0:
            time.sleep(0.1)
        m = s.metrics()
        check(m.get("cllama_active_sequences") == 0, "no sequence leaked by vanished clients")
        check(m.get('cllama_requests_total{code="400"}', 0) >= 10, "metrics count the 400s")
        check(s.alive(), "server still alive")
    finally:
        rc = s.stop()
        check(rc == 0, "server exits 0 on SIGTERM (rc %s; under ASan nonzero means a leak or error)" % rc)
        if rc != 0:
            print("\n".join(s.log[-40:]))
    print("%d failure(s)" % len(FAILS))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
