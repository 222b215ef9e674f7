#!/usr/bin/env python3
"""chat_default_test: `cllama chat` with no -m answers a factual question (issue 15).

`cllama chat --temp 0` on a pseudo-terminal, as a person types at it, with no -m and no
$CLLAMA_MODEL: it must load the default chat model (SmolLM2-135M-Instruct Q4_1, ChatML, installed
by scripts/setup.sh), answer "What is the capital of France?" with Paris and, in the same chat,
"What is the capital of Germany?" with Berlin, and quit 0 on Ctrl-D. `cllama chat --help` must name
that file as its default. The base model that was the default before (Gemma-3-270M) fails this.
SKIPs (exit 77) when the model is not installed. Env: CLLAMA_BIN."""
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time

BIN = os.environ.get("CLLAMA_BIN", "")
CHAT_FILE = "smollm2-135m-instruct-q4_1.gguf"
FAILS = []


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def chat_default_path():
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "cllama", "models", CHAT_FILE)


class Pty:
    """a child on a pseudo-terminal: stdin, stdout and stderr all the terminal, as in a shell"""

    def __init__(self, argv, env):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            try:
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.out = b""

    def read_until(self, pattern, timeout, since=0):
        """read until the regex matches the output (bytes) past offset since; the match, or None on
        timeout / EOF"""
        pat = re.compile(pattern)
        end = time.time() + timeout
        while True:
            m = pat.search(self.out, since)
            if m:
                return m
            left = end - time.time()
            if left <= 0:
                return None
            r, _, _ = select.select([self.fd], [], [], left)
            if not r:
                continue
            try:
                data = os.read(self.fd, 4096)
            except OSError:  # EIO: the child closed the terminal
                data = b""
            if not data:
                return pat.search(self.out, since)
            self.out += data

    def send(self, text):
        os.write(self.fd, text)

    def wait(self, timeout):
        end = time.time() + timeout
        while time.time() < end:
            self.read_until(rb"(?!)", 0.2)  # matches nothing: drain so the child never blocks on a full terminal
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(st)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        return None


def ask(p, question, want, timeout):
    """type a question; the reply is what the chat prints between the echoed line and its stats line"""
    start = len(p.out)
    p.send(question.encode() + b"\n")
    m = p.read_until(rb"\[prefill \d+ tokens[^\n]*\]\r?\n> ", timeout, start)
    if m is None:
        check(False, "%r: a reply and the next prompt within %d s (output: %r)" % (question, timeout, p.out[start:][-400:]))
        return
    turn = p.out[start:m.start()].decode("utf-8", "replace")
    reply = turn.split(question, 1)[-1].strip()
    print("     %s -> %r" % (question, reply))
    check(want in reply, "%r is answered with %s (reply %r)" % (question, want, reply))


def main():
    if not BIN or not os.path.exists(BIN):
        skip("CLLAMA_BIN not built")
    model = chat_default_path()
    if not os.path.exists(model):
        skip("the default chat model is not installed (%s; `bash scripts/setup.sh` installs it)" % model)
    env = dict(os.environ)
    env.pop("CLLAMA_MODEL", None)  # the default itself is under test
    env.pop("CLLAMA_BACKEND", None)
    env["TERM"] = "dumb"

    h = subprocess.run([BIN, "chat", "--help"], capture_output=True, text=True, env=env)
    check(h.returncode == 0 and model in h.stdout, "`cllama chat --help` names the default %s" % model)

    # greedy; -n bounds a rambling reply; the first turn also pays for loading the model
    p = Pty([BIN, "chat", "--temp", "0", "-n", "48"], env)
    try:
        banner = p.read_until(rb"Ctrl-D quits\.\r?\n> ", 300)
        check(banner is not None, "the chat starts on a terminal with its banner and prompt (output: %r)" % p.out[-400:])
        if banner is None:
            return
        text = p.out.decode("utf-8", "replace")
        check("template chatml" in text, "the default chat model is the ChatML one (banner %r)" % text.strip()[:200])
        ask(p, "What is the capital of France?", "Paris", 300)
        ask(p, "What is the capital of Germany?", "Berlin", 300)
        p.send(b"\x04")  # Ctrl-D at the start of a line: end of input
        rc = p.wait(60)
        check(rc == 0, "Ctrl-D quits with status 0 (got %s)" % rc)
    finally:
        try:
            os.kill(p.pid, signal.SIGKILL)
            os.waitpid(p.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(p.fd)


if __name__ == "__main__":
    main()
    print("chat_default_test: %d failure(s)" % len(FAILS))
    sys.exit(1 if FAILS else 0)
