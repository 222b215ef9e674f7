#!/usr/bin/env bash
# cpu_board.sh — the CPU board of this box, end to end:
#   1. writes the three Llama-3.2-1B-shaped files (Q4_0, Q4_K_M, Q8_0) with `cllama synth` and
#      checks their per-tensor types against shared/anchors/cpu/mix-*.txt;
#   2. times llama.cpp (native build, scripts/ref_bench.py) and imports its rows as the pinned
#      reference of this box;
#   3. runs `cllama bench -t $THREADS --record` on the same files;
#   4. renders bench/BOARD.md and bench/board.html.
# Env: CLLAMA_BIN (default build/bin/cllama), MODELS (where the 3.5 GB of files go),
#      BOX (records name; default cpu-<cpu model>-<n>c), THREADS (2), REPS (5), SKIP_REF=1.
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
for T in Q4_0 Q4_K_M Q8_0; do
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
margs=(); for f in "${files[@]}"; do margs+=(-m "$f"); done

if [ "${SKIP_REF:-0}" != 1 ]; then
    ref="$MODELS/ref-$BOX.jsonl"
    if python3 "$SRC/scripts/ref_bench.py" "${margs[@]}" -p 512 -n 128 -r "$REPS" -t "$THREADS" >"$ref.tmp"; then
        mv "$ref.tmp" "$ref"
        "$BIN" board import-ref "$ref" --box "$BOX"
    else
        echo "cpu_board: reference not measured (llama_cpp missing? run scripts/ref_llamacpp.sh)" >&2
    fi
fi
"$BIN" bench "${margs[@]}" -p 512 -n 128 -r "$REPS" -t "$THREADS" --record --box "$BOX" -o md
"$BIN" board
echo "cpu_board: box $BOX -> bench/records/$BOX.json, bench/BOARD.md, bench/board.html" >&2
