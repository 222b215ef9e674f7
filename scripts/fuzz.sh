#!/usr/bin/env bash
# fuzz.sh: build the libFuzzer targets (clang, ASan+UBSan) into build-fuzz/fuzz/, prepare a
# seed corpus per target, replay it, and with --ci fuzz each target for a while.
#   scripts/fuzz.sh              build + replay every corpus (-runs=0): a regression check
#   scripts/fuzz.sh --ci         ... then fuzz: gguf_fuzz ~60 s, every other target ~30 s
#   scripts/fuzz.sh --time N     ... then fuzz every target N seconds
#   scripts/fuzz.sh --only NAME  only the target NAME (e.g. gguf_fuzz)
# Every tests/fuzz/<name>_fuzz.c is a target. Its seeds: tests/fuzz/corpus/<name without
# _fuzz>/ (small, committed) plus seeds made here from /work/shared (for gguf: the first
# 64 KiB of every shared model file; for tokenizer-like targets: the vocab test strings),
# plus the output of tests/fuzz/<name>_fuzz_seeds.sh DIR if that exists. New inputs the fuzzer
# finds accumulate in tests/fuzz/corpus-work/<name>/ (git-ignored); crashes go to
# tests/fuzz/corpus-work/artifacts/. Exits non-zero on any crash, leak, timeout or OOM.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${CLLAMA_SHARED:-$SRC/../shared}
[ -d "$SHARED/models" ] || SHARED=/work/shared
BUILD=$SRC/build-fuzz
WORK=$SRC/tests/fuzz/corpus-work
mode=replay secs_all="" only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --ci) mode=fuzz ;;
    --time) mode=fuzz; secs_all=${2:?--time needs seconds}; shift ;;
    --only) only=${2:?--only needs a target name}; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "fuzz.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
command -v clang >/dev/null || { echo "fuzz.sh: clang not found (apt-get install clang)" >&2; exit 2; }

targets=()
for f in "$SRC"/tests/fuzz/*_fuzz.c; do
  [ -f "$f" ] || continue
  t=$(basename "$f" .c)
  [ -z "$only" ] || [ "$t" = "$only" ] || continue
  targets+=("$t")
done
[ ${#targets[@]} -gt 0 ] || { echo "fuzz.sh: no fuzz targets found" >&2; exit 2; }

# -O1 keeps the fuzzer fast while ASan/UBSan reports stay readable
echo "fuzz.sh: configuring $BUILD" >&2
mkdir -p "$BUILD"
CC=clang cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" \
  -DCLLAMA_FUZZ=ON -DCLLAMA_SANITIZE=ON -DCLLAMA_CUDA=OFF -DCLLAMA_SERVER=OFF >"$BUILD/configure.log" 2>&1 \
  || { tail -30 "$BUILD/configure.log" >&2; echo "fuzz.sh: configure failed" >&2; exit 2; }
for t in "${targets[@]}"; do
  echo "fuzz.sh: building $t" >&2
  cmake --build "$BUILD" -j "$(nproc)" --target "$t" >"$BUILD/$t.build.log" 2>&1 \
    || { tail -30 "$BUILD/$t.build.log" >&2; echo "fuzz.sh: build of $t failed" >&2; exit 2; }
done

SEEDS=$(mktemp -d)
trap 'rm -rf "$SEEDS"' EXIT
mkdir -p "$WORK/artifacts"

gguf_seeds() { # DIR: the head of every shared model file (header + metadata + some data)
  local d=$1 i=0 f
  for f in "$SHARED"/models/*.gguf "$SHARED"/models/vocab/*.gguf "$SHARED"/oracle/models/*.gguf; do
    [ -f "$f" ] || continue
    head -c 65536 "$f" > "$d/shared-$(basename "$f" .gguf).bin"
    i=$((i + 1))
  done
  # a dictionary of the format's words helps the mutator build valid-looking entries
  cat > "$SEEDS/gguf.dict" <<'EOF'
"GGUF"
"\x03\x00\x00\x00"
"\x01\x00\x00\x00"
"general.architecture"
"general.alignment"
"general.name"
"tokenizer.ggml.tokens"
"tokenizer.ggml.merges"
"llama.block_count"
".weight"
"blk.0."
"\x09\x00\x00\x00\x08\x00\x00\x00"
"\x09\x00\x00\x00\x09\x00\x00\x00"
"\xff\xff\xff\xff\xff\xff\xff\xff"
"\x00\x00\x00\x00\x00\x00\x00\x80"
EOF
  echo "$i"
}

text_seeds() { # DIR: the vocab test strings, one file each
  local d=$1 i=0 f
  for f in "$SHARED"/models/vocab/*.inp; do
    [ -f "$f" ] || continue
    python3 - "$f" "$d" <<'EOF' 2>/dev/null || cp "$f" "$d/"
import sys, os
parts = open(sys.argv[1], "rb").read().split(b"\n__ggml_vocab_test__\n")
base = os.path.basename(sys.argv[1])
for j, p in enumerate(parts):
    if p: open(os.path.join(sys.argv[2], "%s-%02d" % (base, j)), "wb").write(p)
EOF
    i=$((i + 1))
  done
  echo "$i"
}

status=0
summary=()
for t in "${targets[@]}"; do
  short=${t%_fuzz}
  bin=$BUILD/fuzz/$t
  [ -x "$bin" ] || { echo "fuzz.sh: $bin missing after build" >&2; status=1; continue; }
  seeds=$SEEDS/$short
  mkdir -p "$seeds" "$WORK/$t"
  [ -d "$SRC/tests/fuzz/corpus/$short" ] && cp "$SRC/tests/fuzz/corpus/$short"/* "$seeds/" 2>/dev/null
  dict=()
  case "$short" in
    gguf) gguf_seeds "$seeds" >/dev/null; dict=(-dict="$SEEDS/gguf.dict") ;;
    *token*) text_seeds "$seeds" >/dev/null ;;
  esac
  [ -x "$SRC/tests/fuzz/${t}_seeds.sh" ] && "$SRC/tests/fuzz/${t}_seeds.sh" "$seeds"
  nseeds=$(find "$seeds" "$WORK/$t" -type f | wc -l)
  common=(-rss_limit_mb=2048 -timeout=20 -print_final_stats=1 -artifact_prefix="$WORK/artifacts/$t-")

  echo "fuzz.sh: $t: replaying $nseeds inputs" >&2
  log=$WORK/$t.replay.log
  "$bin" "${common[@]}" -runs=0 "$WORK/$t" "$seeds" >"$log" 2>&1
  rc=$?
  if [ $rc != 0 ]; then
    grep -E "ERROR|SUMMARY|==[0-9]+==|runtime error" "$log" | head -20 >&2
    echo "fuzz.sh: $t: replay FAILED (exit $rc), log $log" >&2
    status=1
    summary+=("$t: replay FAILED")
    continue
  fi
  line="$t: replay ok ($nseeds inputs)"

  if [ $mode = fuzz ]; then
    secs=${secs_all:-$([ "$short" = gguf ] && echo 60 || echo 30)}
    echo "fuzz.sh: $t: fuzzing for $secs s" >&2
    log=$WORK/$t.fuzz.log
    t0=$(date +%s.%N)
    "$bin" "${common[@]}" "${dict[@]}" -max_total_time="$secs" -max_len=262144 "$WORK/$t" "$seeds" >"$log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    dur=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1)
    line="$line; fuzzed $dur s: ${execs:-?} execs (${eps:-?}/s), ${cov:-cov ?}, corpus $(find "$WORK/$t" -type f | wc -l) files"
    if [ $rc != 0 ]; then
      grep -E "ERROR|SUMMARY|==[0-9]+==|runtime error|Test unit written" "$log" | head -20 >&2
      echo "fuzz.sh: $t: CRASH (exit $rc), log $log" >&2
      line="$line; CRASH (exit $rc)"
      status=1
    fi
  fi
  summary+=("$line")
done

echo "fuzz.sh summary:"
for s in "${summary[@]}"; do echo "  $s"; done
exit $status
