#!/usr/bin/env python3
"""server_page_test: the chat page at GET / in headless Chromium.

The page is opened with ?q=...&autorun=1&temp=0&max_tokens=N, sends the message itself and
streams the reply through fetch + ReadableStream; the dumped DOM must hold the user bubble,
the assistant bubble with exactly the greedy reply the API gives for the same message, and
the "done" status. A screenshot is written to $CLLAMA_BUILD/server_page.png.
Then the same against a server started with --api-key: the page given the key in its URL
fragment (#key=...) streams the same reply; without the key it shows the 401 as an error
bubble that says to type the key, and the header says the server needs one.
SKIPs visibly when chromium is missing. Env: CLLAMA_BIN, CLLAMA_SHARED, CLLAMA_BUILD."""
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_api_test import BIN, STORIES, Server, check, skip, FAILS  # noqa: E402


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "headless_shell"):
        p = shutil.which(name)
        if p:
            return p
    return None


def run_chromium(exe, args, url, timeout=90):
    prof = tempfile.mkdtemp(prefix="cllama-chromium-")
    try:
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
               "--user-data-dir=" + prof, "--virtual-time-budget=30000"] + args + [url]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    finally:
        shutil.rmtree(prof, ignore_errors=True)


def page_after_stream(exe, url, shot, timeout=180):
    """Open url in headless Chromium and drive it over the DevTools protocol: wait until the
    page's status line says the stream is done (a real wait, so a slow, loaded machine cannot
    make the DOM dump race the stream), then return the DOM and write a screenshot.
    Returns None when the DevTools route is unavailable (no websockets module)."""
    try:
        import asyncio
        import base64
        import json
        import urllib.request
        import websockets
    except ImportError:
        return None
    prof = tempfile.mkdtemp(prefix="cllama-chromium-")
    proc = subprocess.Popen([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                             "--no-first-run", "--user-data-dir=" + prof, "--remote-debugging-port=0",
                             "--window-size=1000,640", "--hide-scrollbars", url],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        port = None
        deadline = time.time() + 60
        while port is None and time.time() < deadline:
            line = proc.stderr.readline()
            m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line or "")
            if m:
                port = int(m.group(1))
        if port is None:
            return None
        pages = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json" % port, timeout=10))
        ws_url = [p for p in pages if p.get("type") == "page"][0]["webSocketDebuggerUrl"]

        async def drive():
            async with websockets.connect(ws_url, max_size=None) as ws:
                seq = [0]

                async def call(method, **params):
                    seq[0] += 1
                    await ws.send(json.dumps({"id": seq[0], "method": method, "params": params}))
                    while True:
                        msg = json.loads(await ws.recv())
                        if msg.get("id") == seq[0]:
                            return msg.get("result", {})

                async def js(expr):
                    r = await call("Runtime.evaluate", expression=expr, returnByValue=True)
                    return r.get("result", {}).get("value")

                end = time.time() + timeout
                while time.time() < end:
                    st = await js("(document.getElementById('status')||{}).textContent || ''")
                    if st and (st.startswith("done") or st.startswith("error")):
                        break
                    await asyncio.sleep(0.25)
                dom = await js("document.documentElement.outerHTML")
                png = await call("Page.captureScreenshot", format="png")
                with open(shot, "wb") as f:
                    f.write(base64.b64decode(png.get("data", "")))
                return dom

        return asyncio.run(drive())
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(prof, ignore_errors=True)


def page_reply(exe, s, q, n, want, frag, shot_name, label):
    """the page, opened with ?q=...&autorun=1 (+ frag), streams exactly `want`"""
    url = "%s/?q=%s&autorun=1&temp=0&max_tokens=%d%s" % (s.base, q.replace(" ", "%20"), n, frag)
    shot = os.path.join(os.environ.get("CLLAMA_BUILD", tempfile.gettempdir()), shot_name)
    dom = page_after_stream(exe, url, shot)
    if dom is None:  # no DevTools route: a one-shot dump (may race a slow stream)
        r = run_chromium(exe, ["--dump-dom"], url)
        dom = r.stdout if r.returncode == 0 else ""
        run_chromium(exe, ["--screenshot=" + shot, "--window-size=1000,640", "--hide-scrollbars"], url)
    check("<html" in dom, label + "chromium gave the page DOM")
    user = re.search(r'<div class="msg user">(.*?)</div>', dom, re.S)
    reply = re.search(r'<div class="msg assistant" id="reply-1">(.*?)</div>', dom, re.S)
    status = re.search(r'<div id="status">(.*?)</div>', dom, re.S)
    check(user is not None and html.unescape(user.group(1)) == q, label + "the user bubble shows the question")
    got = html.unescape(reply.group(1)) if reply else None
    check(got is not None and got == want and len(want) > 0,
          label + "the streamed reply in the page equals the API's greedy reply (%r)" % (got or "")[:60])
    check(status is not None and status.group(1).startswith("done"), label + "status says done (%s)"
          % (status.group(1) if status else None))
    check('class="msg error"' not in dom, label + "no error bubble")
    check(os.path.exists(shot) and os.path.getsize(shot) > 5000, label + "screenshot written: " + shot)
    return dom


def main():
    if not BIN or not os.path.exists(BIN):
        skip("CLLAMA_BIN not built")
    if not os.path.exists(STORIES):
        skip("stories260K.gguf missing")
    exe = chromium()
    if not exe:
        skip("chromium is not installed (apt-get install -y chromium): chat page not tested")
    probe = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True)
    if probe.returncode != 0:
        skip("this cllama has no serve command")
    q, n = "Tell me a story about a dog", 24
    s = Server(STORIES, "--parallel", "2", "--ctx", "256")
    try:
        st, _, j = s.post_json("/v1/chat/completions", {"messages": [{"role": "user", "content": q}],
                                                         "max_tokens": n, "temperature": 0})
        if st != 200:  # the route is built: a refusal here is a failure, not a skip
            print("FAIL chat completions answer 200 (%d %s): the page needs them" % (st, j))
            s.stop()
            sys.exit(1)
        want = j["choices"][0]["message"]["content"]
        page_reply(exe, s, q, n, want, "", "server_page.png", "")
    finally:
        rc = s.stop()
        check(rc == 0, "server exits 0")

    key = "page-key-7c2b"
    env = os.environ.copy()
    env.pop("CLLAMA_API_KEY", None)
    s = Server(STORIES, "--parallel", "2", "--ctx", "256", "--api-key", key, env=env,
               headers={"Authorization": "Bearer " + key})
    try:
        page_reply(exe, s, q, n, want, "#key=" + key, "server_page_key.png", "with --api-key, key in #key: ")
        # no key: the page says what is wrong instead of failing silently
        url = "%s/?q=%s&autorun=1&temp=0&max_tokens=%d" % (s.base, q.replace(" ", "%20"), n)
        shot = os.path.join(os.environ.get("CLLAMA_BUILD", tempfile.gettempdir()), "server_page_nokey.png")
        dom = page_after_stream(exe, url, shot)
        if dom is None:
            r = run_chromium(exe, ["--dump-dom"], url)
            dom = r.stdout if r.returncode == 0 else ""
        err = re.search(r'<div class="msg error" id="reply-1">(.*?)</div>', dom, re.S)
        check(err is not None and "API key" in html.unescape(err.group(1)),
              "with --api-key, no key: an error bubble names the API key (%r)"
              % (html.unescape(err.group(1))[:90] if err else dom[-200:]))
        model = re.search(r'<span id="model">(.*?)</span>', dom, re.S)
        check(model is not None and "API key" in model.group(1), "with --api-key, no key: the header asks for the key")
        m = s.metrics()
        # (chromium may also ask for /favicon.ico, which is refused too)
        check(m.get("cllama_auth_refused_total", 0) >= 2, "the page's keyless calls were refused and counted (%s)"
              % m.get("cllama_auth_refused_total"))
    finally:
        rc = s.stop()
        check(rc == 0, "keyed server exits 0")
    print("%d failure(s)" % len(FAILS))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
