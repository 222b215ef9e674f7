#!/usr/bin/env bash
# info_test: `cllama info` on every shared model file prints its architecture and exits 0
# (the architecture of the oracle models is checked against their MANIFEST); on hostile
# copies (truncated, bad magic, a newline in a tensor name, a huge count) it prints
# exactly one line "cllama: error: ..." and exits non-zero.
set -u
BIN=${CLLAMA_BIN:?CLLAMA_BIN not set}
SHARED=${CLLAMA_SHARED:-/work/shared}
if [ ! -x "$BIN" ]; then echo "SKIP: $BIN not built"; exit 77; fi
if [ ! -f "$SHARED/models/stories260K.gguf" ]; then echo "SKIP: shared models missing at $SHARED"; exit 77; fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0 n=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expected architecture per oracle model, from the MANIFEST (name<TAB>arch<TAB>...)
declare -A want
if [ -f "$SHARED/oracle/models/MANIFEST" ]; then
  while IFS=$'\t' read -r name arch _; do want[$name]=$arch; done < <(tail -n +2 "$SHARED/oracle/models/MANIFEST")
fi
want[stories260K.gguf]=llama; want[stories260K-ggufv1.gguf]=llama; want[llama-2-tiny-random.gguf]=llama
want[ggml-vocab-gpt-2.gguf]=gpt2; want[ggml-vocab-bert-bge.gguf]=bert; want[ggml-vocab-phi-3.gguf]=phi3

for f in "$SHARED"/models/*.gguf "$SHARED"/models/vocab/*.gguf "$SHARED"/oracle/models/*.gguf; do
  [ -f "$f" ] || continue
  n=$((n + 1))
  out=$("$BIN" info "$f" 2>&1); rc=$?
  b=$(basename "$f")
  [ $rc = 0 ] || { fail "$b: exit $rc: $(echo "$out" | head -2)"; continue; }
  arch=$(echo "$out" | sed -n 's/^architecture: *//p')
  [ -n "$arch" ] || { fail "$b: no architecture line"; continue; }
  if [ -n "${want[$b]:-}" ] && [ "$arch" != "${want[$b]}" ]; then fail "$b: architecture '$arch', expected '${want[$b]}'"; fi
  echo "$out" | grep -q '^tensors: ' || fail "$b: no tensors line"
done
[ $n -ge 40 ] || fail "only $n model files found"

# facts of stories260K (models/README.md): 5 layers, n_embd 64, 8/4 heads, ffn 172, 512 tokens, F32
out=$("$BIN" info "$SHARED/models/stories260K.gguf")
for pat in '^ *block count  *5$' '^ *embedding length  *64$' '^ *head count  *8$' '^ *head count (kv)  *4$' \
           '^ *feed-forward length  *172$' '^tokenizer: .*vocab 512$' '^ *f32  *48 tensors' '^format: *GGUF v3'; do
  echo "$out" | grep -q -- "$pat" || fail "stories260K: no line matching '$pat'"
done
"$BIN" info "$SHARED/models/stories260K-ggufv1.gguf" | grep -q '^format: *GGUF v1' || fail "v1 file not reported as v1"

# --json parses and carries the same facts
if command -v python3 >/dev/null; then
  "$BIN" info --json --tensors "$SHARED/models/stories260K.gguf" > "$TMP/s.json" || fail "--json exit status"
  python3 - "$TMP/s.json" <<'EOF' || fail "--json content"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["architecture"] == "llama" and j["gguf_version"] == 3, j
assert j["parameters"] == 292800 and j["n_tensors"] == 48 and len(j["tensors"]) == 48
assert j["metadata"]["llama.block_count"] == 5 and j["tokenizer"]["vocab_size"] == 512
assert j["tensor_types"]["f32"]["tensors"] == 48
EOF
fi

# hostile copies: exactly one output line, starting "cllama: error:", non-zero exit
one_line_error() { # name file
  local out rc lines
  out=$("$BIN" info "$2" 2>&1); rc=$?
  lines=$(printf '%s\n' "$out" | wc -l)
  [ $rc != 0 ] || fail "$1: exit 0"
  [ "$lines" = 1 ] || fail "$1: $lines lines of output: $out"
  case "$out" in "cllama: error: "*) ;; *) fail "$1: output does not start with 'cllama: error: ': $out" ;; esac
}
head -c 5000 "$SHARED/models/stories260K.gguf" > "$TMP/trunc.gguf"
one_line_error truncated "$TMP/trunc.gguf"
head -c 20 "$SHARED/models/stories260K.gguf" > "$TMP/trunc20.gguf"
one_line_error truncated-header "$TMP/trunc20.gguf"
head -c 500000 "$SHARED/models/vocab/ggml-vocab-llama-spm.gguf" > "$TMP/truncv.gguf"
one_line_error truncated-vocab "$TMP/truncv.gguf"
printf 'GGUX' > "$TMP/magic.gguf"; tail -c +5 "$SHARED/models/stories260K.gguf" >> "$TMP/magic.gguf"
one_line_error bad-magic "$TMP/magic.gguf"
: > "$TMP/empty.gguf"
one_line_error empty "$TMP/empty.gguf"
one_line_error missing "$TMP/does-not-exist.gguf"
if command -v python3 >/dev/null; then
  python3 - "$SHARED/models/stories260K.gguf" "$TMP" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
i = b.find(struct.pack("<Q", 19) + b"blk.0.attn_q.weight")
nl = bytearray(b); nl[i + 8 + 5] = 0x0a; nl[i + 8 + 18] = 0xff   # newline + bad byte in a name
nl[i + 8 + 19 + 4 + 16:i + 8 + 19 + 4 + 16 + 4] = struct.pack("<I", 99) # and an unknown type
open(sys.argv[2] + "/newline.gguf", "wb").write(nl)
h = bytearray(b); h[16:24] = struct.pack("<Q", 1 << 63)                   # n_kv = 2^63
open(sys.argv[2] + "/huge.gguf", "wb").write(h)
EOF
  one_line_error newline-in-name "$TMP/newline.gguf"
  "$BIN" info "$TMP/newline.gguf" 2>&1 | grep -q 'type id 99' || fail "newline-in-name: error does not name the type id"
  one_line_error huge-n_kv "$TMP/huge.gguf"
fi

# with no FILE: the default model of each command (issue 15: chat and serve take the instruction-tuned
# one, the rest Gemma); an empty cache names both as not installed and fails, $CLLAMA_MODEL replaces both
mkdir -p "$TMP/cache"
chat_default="$TMP/cache/cllama/models/smollm2-135m-instruct-q4_1.gguf"
text_default="$TMP/cache/cllama/models/gemma-3-270m-q4_k_m.gguf"
out=$(XDG_CACHE_HOME="$TMP/cache" CLLAMA_MODEL= "$BIN" info 2>&1) && fail "info, no file, nothing installed: exit 0"
echo "$out" | grep -qx "  chat, serve: $chat_default" || fail "info, no file: no chat default line: $out"
echo "$out" | grep -qx "  run, bench, perplexity, tokenize, info: $text_default" || fail "info, no file: no run default line: $out"
[ "$(echo "$out" | grep -c 'not installed: bash scripts/setup.sh')" = 2 ] || fail "info, no file: not both marked missing: $out"
out=$(XDG_CACHE_HOME="$TMP/cache" CLLAMA_MODEL= "$BIN" --help)
echo "$out" | grep -qx "    $chat_default" && echo "$out" | grep -qx "    $text_default" || fail "--help does not name both defaults: $out"
out=$(CLLAMA_MODEL="$SHARED/models/stories260K.gguf" "$BIN" info 2>&1) || fail "info with \$CLLAMA_MODEL: exit $?"
[ "$(echo "$out" | grep -c "^  .*: .*/models/stories260K.gguf\$")" = 2 ] || fail "info: \$CLLAMA_MODEL is not the default of both: $out"
echo "$out" | grep -q '^architecture: *llama$' || fail "info with \$CLLAMA_MODEL: not that file's facts"
if command -v python3 >/dev/null; then
  XDG_CACHE_HOME="$TMP/cache" CLLAMA_MODEL="$SHARED/models/stories260K.gguf" "$BIN" info --json > "$TMP/d.json" ||
    fail "info --json with \$CLLAMA_MODEL: exit status"
  python3 - "$TMP/d.json" <<'EOF' || fail "info --json, no file: defaults"
import json, sys
d = json.load(open(sys.argv[1]))["defaults"]
assert d["chat"]["commands"] == "chat, serve" and d["text"]["commands"].startswith("run, bench"), d
assert all(d[k]["from_env"] and d[k]["installed"] and d[k]["path"].endswith("stories260K.gguf") for k in d), d
EOF
fi

echo "info_test: $n model files, $fails failures"
[ $fails = 0 ]
