#!/usr/bin/env bash
# session 45 call 1: the owed H200 board cells (F16 first), the depth cells, then Q4_0 / Q8_0 / q3moe
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $name" | tee $OUT/call.log
case "$name" in *H200*) ;; *) echo "not an H200: nothing owed here"; exit 0 ;; esac
t0=$SECONDS
bash scripts/h200.sh bench 'l2-7b-f16$' 2>&1 | tee -a $OUT/call.log
echo "== f16 done at $((SECONDS-t0)) s" | tee -a $OUT/call.log
bash scripts/h200.sh long 2>&1 | tee -a $OUT/call.log
echo "== long done at $((SECONDS-t0)) s" | tee -a $OUT/call.log
[ $((SECONDS-t0)) -lt 380 ] && bash scripts/h200.sh bench 'l2-7b-Q4_0$|l2-7b-Q8_0' 2>&1 | tee -a $OUT/call.log
echo "== q4_0/q8_0 done at $((SECONDS-t0)) s" | tee -a $OUT/call.log
[ $((SECONDS-t0)) -lt 480 ] && bash scripts/h200.sh bench 'q3moe-L24-Q4_K_M' 2>&1 | tee -a $OUT/call.log
echo "== end at $((SECONDS-t0)) s" | tee -a $OUT/call.log
grep -h -E 'tg128|pp512|pp4096|d8192' $OUT/call.log | grep -v '^{' | tail -30
