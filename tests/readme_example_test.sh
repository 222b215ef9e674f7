#!/usr/bin/env bash
# The README's C example must compile against the built library and generate text.
set -euo pipefail
src="$CLLAMA_SRC" build="$CLLAMA_BUILD"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# the first ```c block of the README is the example program
awk '/^```c$/{on=1;next} /^```$/{if(on){exit}} on' "$src/README.md" > "$tmp/example.c"
[ -s "$tmp/example.c" ] || { echo "FAIL: no C example in README.md"; exit 1; }
cc -std=c11 -Wall -Wextra -Werror "$tmp/example.c" -I"$src/include" -L"$build" -lcllama -Wl,-rpath,"$build" -o "$tmp/example"
out=$("$tmp/example" "$CLLAMA_SHARED/models/stories260K.gguf")
echo "$out"
# stories260K's greedy continuation of this prompt (oracle/golden/stories260K.json, prompt 0)
echo "$out" | grep -q "there was a little girl" || { echo "FAIL: unexpected text"; exit 1; }
echo "$out" | grep -qE "^[0-9]+ tokens, [0-9.]+ tok/s$" || { echo "FAIL: no stats line"; exit 1; }
echo "PASS readme example"
