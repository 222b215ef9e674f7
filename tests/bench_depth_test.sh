#!/usr/bin/env bash
# `cllama bench -d`: llama-bench's depth. On stories260K: -p 16 -n 4 -d 0,64 gives the four tests in
# llama-bench's order (every test at depth 0, then at 64) with n_depth in the rows and the names
# "pp16 @ d64" / "tg4 @ d64"; --record keeps depth and no-depth rows apart (one row each, a
# re-run replaces its own); decode rows carry the K/V bytes a token reads; bad input is refused with a
# reason.
set -u
BIN=${CLLAMA_BIN:?CLLAMA_BIN not set}
SHARED=${CLLAMA_SHARED:-/work/shared}
M=$SHARED/models/stories260K.gguf
[ -x "$BIN" ] || { echo "SKIP: $BIN not built"; exit 77; }
[ -f "$M" ] || { echo "SKIP: $M missing"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$BIN" bench -m "$M" -p 16 -n 4 -d 0,64 -r 2 -t 2 -o jsonl >"$tmp/rows.jsonl" 2>"$tmp/err" ||
  fail "jsonl run failed: $(cat "$tmp/err")"
python3 - "$tmp/rows.jsonl" <<'PY' || fails=$((fails + 1))
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
got = [(r["test"], r["n_prompt"], r["n_gen"], r["n_depth"]) for r in rows]
want = [("pp16", 16, 0, 0), ("tg4", 0, 4, 0), ("pp16 @ d64", 16, 0, 64), ("tg4 @ d64", 0, 4, 64)]
assert got == want, got
for r in rows:
    assert r["avg_ts"] > 0 and len(r["samples_ts"]) == 2, r
    assert r["n_batch"] == 512, r  # a depth fills in batches of >= 512
# decode rows count the K/V cache they read: stories260K 640 B a cell (F16), tg4 at depth d reads
# d+1 .. d+4 cells, so on average (d + 2.5) x 640
kv = {r["n_depth"]: r["decode_kv_bytes"] for r in rows if r["n_gen"]}
assert kv == {0: 1600, 64: 42560}, kv
print("ok   jsonl rows: %s; K/V bytes a token %s" % (", ".join(t for t, *_ in got), kv))
PY

"$BIN" bench -m "$M" -p 16 -n 0 -d 0,32 -r 1 -t 2 >"$tmp/md" 2>&1 || fail "md run failed: $(cat "$tmp/md")"
grep -q "pp16 @ d32" "$tmp/md" && echo "ok   markdown names the depth" || fail "markdown lacks 'pp16 @ d32': $(cat "$tmp/md")"

# records: depth rows beside the plain ones, a re-run replaces its own
mkdir -p "$tmp/rec"
for i in 1 2; do
  "$BIN" bench -m "$M" -p 16 -n 0 -d 0,32 -r 1 -t 2 --record --box depthbox --records "$tmp/rec" >/dev/null 2>"$tmp/rerr" ||
    fail "record run $i failed: $(cat "$tmp/rerr")"
done
python3 - "$tmp/rec/depthbox.json" <<'PY' || fails=$((fails + 1))
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
tests = sorted(r["test"] for r in rows if r["engine"] == "cllama")
assert tests == ["pp16", "pp16 @ d32"], tests
print("ok   records: %s" % tests)
PY
"$BIN" board --records "$tmp/rec" --md "$tmp/board.md" --html "$tmp/board.html" >"$tmp/berr" 2>&1 &&
  echo "ok   the board renders records with depth rows" || fail "board: $(cat "$tmp/berr")"

# bad input
"$BIN" bench -m "$M" -p 16 -d 1,x >"$tmp/bad" 2>&1 && fail "-d 1,x accepted"
grep -q "unknown or incomplete option '-d'" "$tmp/bad" && echo "ok   -d 1,x refused" || fail "-d 1,x: $(cat "$tmp/bad")"
"$BIN" bench -m "$M" -p 16 -d -5 >"$tmp/bad2" 2>&1 && fail "-d -5 accepted"
echo "ok   -d -5 refused"

[ $fails -eq 0 ] && echo "bench_depth_test: all ok" || { echo "bench_depth_test: $fails failure(s)"; exit 1; }
