#!/usr/bin/env bash
# isa_cap_test: CLLAMA_CPU_ISA caps the CPU rows dispatch may take (the AVX2 board is measured on
# an AVX-512 box this way): `kernels` reports the capped features, the capped engine gives the
# same greedy ids on the trained model (its rows are all gated against one reference), a bad value
# warns once and is ignored, and a cap never adds an ISA the CPU lacks.
set -u
BIN=${CLLAMA_BIN:?CLLAMA_BIN not set}
SHARED=${CLLAMA_SHARED:-/work/shared}
M=$SHARED/models/stories260K.gguf
if [ ! -x "$BIN" ]; then echo "SKIP: $BIN not built"; exit 77; fi
if [ ! -f "$M" ]; then echo "SKIP: $M missing"; exit 77; fi
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
native=$("$BIN" kernels | head -1)
case $native in *avx*) ;; *) echo "SKIP: this CPU has no AVX2 ($native)"; exit 77 ;; esac
[ "$(CLLAMA_CPU_ISA=avx2 "$BIN" kernels | head -1)" = "cpu features: avx2" ] || fail "avx2 cap not reported"
[ "$(CLLAMA_CPU_ISA=scalar "$BIN" kernels | head -1)" = "cpu features: scalar" ] || fail "scalar cap not reported"
[ "$(CLLAMA_CPU_ISA=native "$BIN" kernels | head -1)" = "$native" ] || fail "native is not the CPU's own"
if [ "$native" = "cpu features: avx2" ]; then
  [ "$(CLLAMA_CPU_ISA=avx512 "$BIN" kernels | head -1)" = "cpu features: avx2" ] || fail "a cap added AVX-512"
fi
out=$(CLLAMA_CPU_ISA=bogus "$BIN" kernels 2>&1 >/dev/null | grep -c "CLLAMA_CPU_ISA=bogus")
[ "$out" = 1 ] || fail "a bad cap must warn once (got $out lines)"
ids() { CLLAMA_CPU_ISA=$1 "$BIN" run -m "$M" -p "Once upon a time" -n 24 --temp 0 --print-ids 2>/dev/null | grep '^generated:'; }
a=$(ids native) b=$(ids avx2)
[ -n "$a" ] && [ "$a" = "$b" ] || fail "greedy ids differ under the avx2 cap: '$a' vs '$b'"
[ $fails = 0 ] && echo "isa_cap_test: ok ($native; avx2 and scalar caps)"
exit $((fails > 0))
