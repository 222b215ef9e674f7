#!/usr/bin/env bash
# `cllama bench -npp/-ntg/-npl`: llama-batched-bench's protocol and fields. On stories260K: the
# JSONL rows (one per pl, in order) carry every field with n_kv = pl*(pp+tg), t = t_pp + t_tg,
# speed_pp = pl*pp/t_pp, speed_tg = pl*tg/t_tg, speed = n_kv/t; a prefill longer than -b runs in
# chunks; the markdown table has a row per cell; --record stores one row per cell and the board
# still renders (batched rows are not pp/tg cells); bad input is refused with a reason.
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

# -b 5: the 3 x 8 prompt tokens go in 5 decodes
"$BIN" bench -m "$M" -npp 8 -ntg 4 -npl 1,2,3 -b 5 -t 2 -o jsonl >"$tmp/rows.jsonl" 2>"$tmp/err" ||
  fail "jsonl run failed: $(cat "$tmp/err")"
python3 - "$tmp/rows.jsonl" <<'PY' || fails=$((fails + 1))
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
need = ["n_kv_max", "n_batch", "n_ubatch", "flash_attn", "is_pp_shared", "n_gpu_layers", "n_threads",
        "n_threads_batch", "pp", "tg", "pl", "n_kv", "t_pp", "speed_pp", "t_tg", "speed_tg", "t", "speed",
        "engine", "backend", "model_filename", "build_commit"]
assert [r["pl"] for r in rows] == [1, 2, 3], [r["pl"] for r in rows]
for r in rows:
    miss = [k for k in need if k not in r]
    assert not miss, miss
    pp, tg, pl = r["pp"], r["tg"], r["pl"]
    assert (pp, tg, r["n_batch"]) == (8, 4, 5), r
    assert r["n_kv"] == pl * (pp + tg), r
    assert r["t_pp"] > 0 and r["t_tg"] > 0 and abs(r["t"] - r["t_pp"] - r["t_tg"]) < 1e-6 * max(1, r["t"]), r
    for got, want in ((r["speed_pp"], pl * pp / r["t_pp"]), (r["speed_tg"], pl * tg / r["t_tg"]), (r["speed"], r["n_kv"] / r["t"])):
        assert abs(got - want) <= 1e-6 * want, (got, want)
    assert r["engine"] == "cllama" and r["backend"] == "cpu" and r["model_filename"] == "stories260K.gguf", r
    assert r["test"] == "batched-pp8-tg4-pl%d" % pl, r
print("ok   jsonl rows: %d, fields and identities hold" % len(rows))
PY
out=$("$BIN" bench -m "$M" -npp 4 -ntg 2 -npl 1,4 -t 2 2>/dev/null)
echo "$out" | grep -q '^main: n_kv_max = 64, n_batch = 2048' || fail "md header: $out"
[ "$(echo "$out" | grep -cE '^\| +4 \| +2 \| +(1|4) \|')" = 2 ] || fail "md rows: $out"
# --record: one row per cell, the board still renders
"$BIN" bench -m "$M" -npp 4 -ntg 2 -npl 1,2 -t 2 --record --box bb-test --records "$tmp" -o jsonl >/dev/null 2>&1 ||
  fail "--record failed"
"$BIN" bench -m "$M" -npp 4 -ntg 2 -npl 2 -t 2 --record --box bb-test --records "$tmp" -o jsonl >/dev/null 2>&1 ||
  fail "--record again failed"
n=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for r in d['rows'] if r.get('pl')))" "$tmp/bb-test.json" 2>&1)
[ "$n" = 2 ] || fail "records: want 2 batched rows (pl 1, 2; the re-run replaces pl 2), got $n"
"$BIN" board --records "$tmp" --md "$tmp/BOARD.md" --html "$tmp/board.html" >/dev/null 2>&1 ||
  fail "board does not render with batched rows"
# the server's configuration: a paged pool, greedy ids or top-k candidates back instead of logits
for o in "--kv-cells 256 --out topk:8" "--kv-cells 192 --out greedy" "--out topk:1"; do
  # shellcheck disable=SC2086
  r=$("$BIN" bench -m "$M" -npp 8 -ntg 4 -npl 1,3 -t 2 -o jsonl $o 2>"$tmp/err") || fail "$o: $(cat "$tmp/err")"
  [ "$(echo "$r" | grep -c '"speed_tg"')" = 2 ] || fail "$o: want 2 rows, got: $r"
done
# 3 sequences need 3 blocks of 64 cells: 128 cells say so up front, and the step fails with the pool full
if "$BIN" bench -m "$M" -npp 8 -ntg 4 -npl 3 -t 2 --kv-cells 128 >/dev/null 2>"$tmp/e"; then fail "small pool: accepted"; fi
grep -q "note: --kv-cells 128 holds fewer cells" "$tmp/e" || fail "small pool: no note: $(cat "$tmp/e")"
grep -q "kv pages full" "$tmp/e" || fail "small pool: no pool-full error: $(cat "$tmp/e")"
# refusals
expect_err() { # name pattern args...
  local name=$1 pat=$2
  shift 2
  if "$BIN" bench "$@" >/dev/null 2>"$tmp/e"; then fail "$name: accepted"; return; fi
  grep -q -- "$pat" "$tmp/e" || fail "$name: message '$(cat "$tmp/e")' lacks '$pat'"
}
expect_err "shared prompt" "-pps" -m "$M" -npp 4 -ntg 2 -npl 2 -pps
expect_err "bad list" "unknown or incomplete option" -m "$M" -npp 4,x -ntg 2 -npl 2
expect_err "pl zero" "must be >= 1" -m "$M" -npp 4 -ntg 2 -npl 0
# no -m and no default installed (an empty cache, no $CLLAMA_MODEL): the default's refusal
mkdir -p "$tmp/nocache"
XDG_CACHE_HOME="$tmp/nocache" CLLAMA_MODEL= expect_err "no model" "no model given" -npp 4 -ntg 2 -npl 2
expect_err "csv" "md or jsonl" -m "$M" -npp 4 -ntg 2 -npl 2 -o csv
expect_err "out" "--out takes logits, greedy or topk:K" -m "$M" -npp 4 -ntg 2 -npl 2 --out topk:0
expect_err "kv cells" "--kv-cells takes a cell count" -m "$M" -npp 4 -ntg 2 -npl 2 --kv-cells 12x
expect_err "record paged" "--record stores llama-batched-bench's protocol only" -m "$M" -npp 4 -ntg 2 -npl 2 --kv-cells 256 \
  --record --records "$tmp"
[ $fails = 0 ] && echo "bench_batched_test: ok"
exit $((fails > 0))
