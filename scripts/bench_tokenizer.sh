#!/usr/bin/env bash
# Tokenizer benchmark (not a test): encode ~1 MB of English text on one core with
# the default Gemma 3 model's SPM vocab (262144 tokens) and BPE vocabs from
# shared/models/vocab (llama-bpe style: deepseek-llm; gpt-2). Prints tokens/s.
# usage: scripts/bench_tokenizer.sh [BUILD_DIR] [reps]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$here/build}"
reps="${2:-5}"
shared="${CLLAMA_SHARED:-$here/../shared}"
lib="$build/libcllama_static.a"
[ -f "$lib" ] || { echo "no $lib: build first (cmake --build $build)"; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cc -O2 -std=c11 -D_GNU_SOURCE -I"$here/src" -I"$here/include" "$here/tests/bench_tokenizer.c" "$lib" \
   $(pkg-config --libs libpcre2-8) -lm -lpthread -o "$tmp/bench"
# ~1 MB of English prose: the license texts shipped with every Debian system, repeated
src=$(ls /usr/share/common-licenses/* 2>/dev/null | grep -v -e GPL-1 | head -20)
: > "$tmp/text.txt"
while [ "$(stat -c %s "$tmp/text.txt")" -lt 1000000 ]; do cat $src >> "$tmp/text.txt"; done
head -c 1048576 "$tmp/text.txt" > "$tmp/en.txt"
# keep the cut on a UTF-8 boundary: drop a trailing partial line
sed -i '$ d' "$tmp/en.txt"
gemma="${XDG_CACHE_HOME:-$HOME/.cache}/cllama/models/gemma-3-270m-q4_k_m.gguf"
models=()
[ -f "$gemma" ] && models+=("$gemma") || echo "note: $gemma missing (scripts/setup.sh installs it)"
for v in llama-spm deepseek-llm gpt-2 starcoder; do
  f="$shared/models/vocab/ggml-vocab-$v.gguf"
  [ -f "$f" ] && models+=("$f")
done
for m in "${models[@]}"; do taskset -c 0 "$tmp/bench" "$m" "$tmp/en.txt" "$reps" 2>/dev/null || "$tmp/bench" "$m" "$tmp/en.txt" "$reps"; done
