#!/usr/bin/env bash
# `cllama tokenize` against llama.cpp's vocab test vectors: a line of .out per text,
# with the text given as an argument and on stdin (newlines kept), plus --bos.
set -u
bin="${CLLAMA_BIN:?}"
shared="${CLLAMA_SHARED:?}"
[ -x "$bin" ] || { echo "SKIP: $bin not built"; exit 77; }
fail=0
check() { # name got want
  if [ "$2" != "$3" ]; then echo "FAIL $1: got '$2' want '$3'"; fail=1; else echo "ok   $1"; fi
}
spm="$shared/models/vocab/ggml-vocab-llama-spm.gguf"
bpe="$shared/models/vocab/ggml-vocab-gpt-2.gguf"
[ -f "$spm" ] && [ -f "$bpe" ] || { echo "SKIP: vocab files missing"; exit 77; }
# the .inp's 12th text is "Hello world"; its .out line may carry a leading space
want=$(sed -n 12p "$spm.out" | sed 's/^ *//')
check "spm arg" "$("$bin" tokenize -m "$spm" "Hello world")" "$want"
check "spm stdin" "$(printf 'Hello world' | "$bin" tokenize -m "$spm")" "$want"
check "spm --bos" "$("$bin" tokenize -m "$spm" --bos "Hello world")" "1 $want"
want=$(sed -n 12p "$bpe.out" | sed 's/^ *//')
check "bpe arg" "$("$bin" tokenize -m "$bpe" "Hello world")" "$want"
# a text with newlines read from stdin: "\n\n" is text 9 of the .inp
want=$(sed -n 9p "$bpe.out" | sed 's/^ *//')
check "bpe stdin newlines" "$(printf '\n\n' | "$bin" tokenize -m "$bpe")" "$want"
# control tokens only with --special
check "special off" "$("$bin" tokenize -m "$bpe" "<|endoftext|>")" "27 91 437 1659 5239 91 29"
check "special on" "$("$bin" tokenize -m "$bpe" --special '<|endoftext|>')" "50256"
"$bin" tokenize -m /nonexistent.gguf hi 2>/dev/null && { echo "FAIL missing model accepted"; fail=1; }
exit $fail
