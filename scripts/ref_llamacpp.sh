#!/usr/bin/env bash
# ref_llamacpp.sh — install the reference engine for this box: llama.cpp built natively
# (GGML_NATIVE=ON: the ISA of this CPU) through llama-cpp-python from PyPI, so that
# scripts/ref_bench.py can time it the way llama-bench does. Takes 10-30 min on 2 cores;
# runs niced. Idempotent: does nothing when llama_cpp already imports.
#   scripts/ref_llamacpp.sh [--force]   (log in ${REF_LOG:-/tmp/ref_llamacpp.log})
set -euo pipefail
LOG=${REF_LOG:-/tmp/ref_llamacpp.log}
if [ "${1:-}" != "--force" ] && python3 -c "import llama_cpp" 2>/dev/null; then
    python3 -c "import llama_cpp as L; print('llama_cpp', L.__version__, 'already installed:', L.llama_print_system_info().decode().strip())"
    exit 0
fi
command -v cmake >/dev/null && command -v g++ >/dev/null || { echo "ref_llamacpp: needs cmake and g++ (apt-get install cmake g++)" >&2; exit 1; }
echo "ref_llamacpp: building llama-cpp-python from source with GGML_NATIVE=ON (log: $LOG)" >&2
# tests/examples/server are not needed for the reference and double the build time
CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF" \
CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-2} \
    nice -n 15 python3 -m pip install --no-binary llama-cpp-python --no-cache-dir -v ${1:+--force-reinstall} \
    llama-cpp-python >"$LOG" 2>&1 || { echo "ref_llamacpp: build failed, see $LOG" >&2; tail -20 "$LOG" >&2; exit 1; }
python3 -c "import llama_cpp as L; print('llama_cpp', L.__version__, L.llama_print_system_info().decode().strip())"
