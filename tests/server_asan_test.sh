#!/bin/bash
# server_asan_test: the server's bad-input and API suites against an ASan+UBSan build of
# cllama. Builds nothing itself: point CLLAMA_BUILD_ASAN at a build configured with
#   cmake -S . -B build-server-asan -DCLLAMA_SANITIZE=ON -DCLLAMA_CUDA=OFF -DCMAKE_BUILD_TYPE=Release
#   cmake --build build-server-asan -j2
# A leak, a memory error or UB in the server makes it exit non-zero on SIGTERM, which the
# suites check. SKIPs (exit 77) when CLLAMA_BUILD_ASAN is unset or holds no cllama.
set -u
if [ -z "${CLLAMA_BUILD_ASAN:-}" ]; then
    echo "SKIP: CLLAMA_BUILD_ASAN is not set (see the header of $0 for how to make an ASan build)"
    exit 77
fi
BIN="$CLLAMA_BUILD_ASAN/bin/cllama"
if [ ! -x "$BIN" ]; then
    echo "SKIP: no ASan cllama at $BIN"
    exit 77
fi
SRC="${CLLAMA_SRC:-$(cd "$(dirname "$0")/.." && pwd)}"
export ASAN_OPTIONS="detect_leaks=1:exitcode=23:abort_on_error=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
rc_all=0
ran=0
for t in server_badinput_test.py server_api_test.py server_auth_test.py server_tls_test.py; do
    echo "== $t under ASan ($BIN)"
    CLLAMA_BIN="$BIN" python3 "$SRC/tests/$t"
    rc=$?
    if [ $rc -eq 77 ]; then echo "SKIP: $t skipped itself"; continue; fi
    ran=$((ran + 1))
    [ $rc -ne 0 ] && rc_all=1
done
# every suite skipped itself: nothing ran under ASan, which is a skip, not a pass
if [ $ran -eq 0 ]; then echo "SKIP: every server suite skipped itself: nothing ran under ASan"; exit 77; fi
exit $rc_all
