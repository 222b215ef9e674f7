#!/usr/bin/env bash
# The project's shell scripts: each parses (bash -n), and none puts an array assignment before a command on
# the same line (`A=(x y) cmd`): bash runs cmd with A unset in its environment (an array cannot be
# exported), and a function sees the global A as it was. scripts/h200.sh profile did that for its removal runs
# (2026-12-07): each file's four tg128 runs were one run under a nonsense environment, found only on a GPU.
set -uo pipefail
src=${CLLAMA_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fail=0
n=0
for f in "$src"/scripts/*.sh "$src"/.ci/run; do
  [ -f "$f" ] || continue
  n=$((n + 1))
  if ! err=$(bash -n "$f" 2>&1); then
    echo "FAIL: $f does not parse: $(head -3 <<<"$err")"
    fail=1
  fi
done
# an array literal (it may span lines) closed by ")" and followed on that line by a word that is neither
# another assignment, a comment, nor a separator
python3 - "$src" <<'PY' || fail=1
import glob, re, sys
src = sys.argv[1]
pat = re.compile(r'(?<![\w$])([A-Za-z_]\w*)=\(((?:[^()\n]|\n)*?)\)[ \t]+(?![#|;&)\n]|[A-Za-z_]\w*=|\\\n)(\S+)')
bad = 0
def decl(text, at):
    """inside a declaration (local a=() b c): the words after it are names, not a command"""
    start = text.rfind('\n', 0, at) + 1
    return re.match(r'\s*(local|declare|typeset|readonly)\b', text[start:at]) is not None
def hits(text):
    return [m for m in pat.finditer(text) if not decl(text, m.start())]
for f in sorted(glob.glob(src + '/scripts/*.sh')) + [src + '/.ci/run']:
    try:
        text = open(f).read()
    except OSError:
        continue
    for m in hits(text):
        line = text.count('\n', 0, m.start()) + 1
        print(f"FAIL: {f}:{line}: array assignment {m.group(1)}=(...) before the command '{m.group(3)}' on one line")
        bad += 1
# the check itself on known cases (a check that cannot fail is no check)
must = ['AB_ENVS=(- X=1) ab "$f"\n', 'A=(a\n  b) run x\n']
ok = ['A=(a b)\nrun\n', 'local -a envs=() kept=()\n', 'A=(a b) # note\n', 'x=$(cmd) y\n', 'A=(a b); f\n',
      'local n=() a f\n', '  local names=("$@") f t=""\n']
for t in must:
    if not hits(t):
        print(f"FAIL: the pattern misses {t!r}"); bad += 1
for t in ok:
    if hits(t):
        print(f"FAIL: the pattern flags {t!r}"); bad += 1
# a build whose failure is thrown away: `cmake --build ...` (continued over lines) piped into a filter
# and then `; true` / `|| true`, so the pipeline's status is dropped. scripts/h200.sh pack did that
# (2026-12-07): a build that failed to compile staged the last good build's binaries under the new sha.
swallow = re.compile(r'cmake --build(?:[^\n]|\\\n)*?\|(?:[^\n]|\\\n)*?(?:;\s*true|\|\|\s*true)\b')
for f in sorted(glob.glob(src + '/scripts/*.sh')) + [src + '/.ci/run']:
    try:
        text = open(f).read()
    except OSError:
        continue
    for m in swallow.finditer(text):
        line = text.count('\n', 0, m.start()) + 1
        print(f"FAIL: {f}:{line}: a cmake build piped into a filter with its status dropped ('; true')")
        bad += 1
for t in ['cmake --build b -j 4 --target x \\\n    2>&1 | grep -E "error" ; true\n', 'cmake --build b | tail -3 || true\n']:
    if not swallow.search(t):
        print(f"FAIL: the build pattern misses {t!r}"); bad += 1
for t in ['cmake --build b >log 2>&1\nrc=$?\ngrep error log\n', 'cmake --build b || exit 1\n', 'cmake --build b 2>&1 | tail -3\n']:
    if swallow.search(t):
        print(f"FAIL: the build pattern flags {t!r}"); bad += 1
sys.exit(1 if bad else 0)
PY
[ $fail = 0 ] && echo "scripts_test: $n scripts parse, no array assignment before a command, no build status dropped: PASS"
exit $fail
