#!/usr/bin/env bash
# tune_race_test: `cllama tune` end to end on small shapes (a few seconds):
#  - a noisy machine (simulated: CLLAMA_TUNE_TEST_NOISE) writes nothing and exits 1;
#  - --force writes the sidecar stamped "noise: overridden", every raced site has an entry with a
#    verdict and the race record of its arms (the incumbent first), the doctor reads it;
#  - a second run over more sites keeps the sites already raced (resume) and keeps the previous
#    file as .bak; a journal left by an interrupted run is resumed from and removed;
#  - run/bench apply it (--tune) without changing greedy tokens;
#  - with -m, the serving confirm of a crown (forced by a test hook) and the runtime-knob races run;
#  - a serving race (the CUDA backend's protocol) on the CPU; a CUDA tune without a GPU fails cleanly;
#  - an arm that faults or hangs in its gate (test hook CLLAMA_TUNE_TEST_FAULT) is broken, the run goes on;
#  - class defaults: exported (decisive sites and knobs only), applied by the load order, greedy tokens
#    unchanged, bench records stamped class:<class>:<sha256>.
# CI machines are shared and noisy: the races here use --force; a quiet box mints without it.
set -u
BIN=${CLLAMA_BIN:?CLLAMA_BIN not set}
SHARED=${CLLAMA_SHARED:-/work/shared}
if [ ! -x "$BIN" ]; then echo "SKIP: $BIN not built"; exit 77; fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
Q=(--quick --shape 128x1024 -t 2)

# 1. noisy: nothing written
CLLAMA_TUNE_TEST_NOISE=0.5 "$BIN" tune --sites cpu/gemv/q4_0 "${Q[@]}" --tune "$TMP/a.json" >"$TMP/o1" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "noisy run: exit $rc, want 1"
grep -q "too noisy" "$TMP/o1" || fail "noisy run does not say why: $(cat "$TMP/o1")"
[ ! -e "$TMP/a.json" ] || fail "noisy run wrote a sidecar"
[ ! -e "$TMP/a.json.journal" ] || fail "noisy run left a journal"

# 2. forced: written and stamped
"$BIN" tune --sites cpu/gemv/q4_0 "${Q[@]}" --force --tune "$TMP/a.json" >"$TMP/o2" 2>&1 || fail "forced run failed: $(cat "$TMP/o2")"
[ -s "$TMP/a.json" ] || fail "forced run wrote nothing"
python3 - "$TMP/a.json" <<'EOF' || fails=$((fails + 1))
import json, sys
d = json.load(open(sys.argv[1]))
assert d["tune_version"] >= 1
assert d["provenance"]["noise"] == "overridden", d["provenance"]["noise"]
e = d["kernels"]["cpu/gemv/q4_0"]
assert e["verdict"] in ("crown", "tie", "broken"), e
assert len(e["source_hash"]) == 64
r = d["race"]["cpu/gemv/q4_0"]
assert r["rounds"] == 6 and len(r["arms"]) >= 1, r
assert abs(r["arms"][0]["ratio"] - 1.0) < 1e-9, "the incumbent is the first arm (ratio 1)"
print("sidecar ok:", e["variant"], e["verdict"])
EOF
"$BIN" tune doctor --tune "$TMP/a.json" >"$TMP/d1" 2>&1
grep -q "cpu/gemv/q4_0" "$TMP/d1" && grep -q "noise: overridden" "$TMP/d1" || fail "doctor: $(cat "$TMP/d1")"

# 3. more sites: the raced one is kept, the old file becomes .bak
"$BIN" tune --sites q4_0 "${Q[@]}" --force --tune "$TMP/a.json" >"$TMP/o3" 2>&1 || fail "second run failed: $(cat "$TMP/o3")"
grep -q "1 already tuned" "$TMP/o3" || fail "second run did not keep the raced site: $(cat "$TMP/o3")"
[ -s "$TMP/a.json.bak" ] || fail "no .bak after a re-mint"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert set(d['kernels'])=={'cpu/gemv/q4_0','cpu/gemm/q4_0'}, d['kernels'].keys()" "$TMP/a.json" ||
  fail "second run's sites"

# 4. an interrupted run's journal is resumed from, then removed
cp "$TMP/a.json" "$TMP/b.json.journal"
"$BIN" tune --sites q4_0 "${Q[@]}" --force --tune "$TMP/b.json" >"$TMP/o4" 2>&1 || fail "resume run failed: $(cat "$TMP/o4")"
grep -q "resuming from" "$TMP/o4" && grep -q "2 already tuned" "$TMP/o4" || fail "journal not resumed: $(cat "$TMP/o4")"
[ ! -e "$TMP/b.json.journal" ] || fail "journal left behind"

# 4b. child isolation: re-race cpu/gemv/q4_0 (made stale) with one challenger faulting (SIGSEGV) and
# another hanging in its child: the run finishes, both are broken with the reason, the healthy arms are
# timed, and the other site (cpu/gemm/q4_0, fresh) keeps its result; an arm whose source hash changed
# since the last race gets trial dispatches, the arms raced before only their gate
cp "$TMP/a.json" "$TMP/f.json"
read -r SEGV HANG < <(python3 - "$TMP/f.json" <<'EOF'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
d["kernels"]["cpu/gemv/q4_0"]["source_hash"] = "0" * 64          # the site is stale: re-raced
arms = d["race"]["cpu/gemv/q4_0"]["arms"]
assert len(arms) >= 3, arms
arms[-1]["source_hash"] = "1" * 64                                # this arm "changed" since: a trial
json.dump(d, open(p, "w"))
print(arms[1]["variant"], arms[2]["variant"])
EOF
)
t0=$(date +%s)
CLLAMA_TUNE_TEST_FAULT="$SEGV=segv,$HANG=hang" "$BIN" tune --sites q4_0 "${Q[@]}" --force --gate-timeout 2 \
  --tune "$TMP/f.json" >"$TMP/o4b" 2>&1 || fail "faulting arms ended the run: $(cat "$TMP/o4b")"
[ $(($(date +%s) - t0)) -lt 60 ] || fail "the hanging arm was not cut off by --gate-timeout 2"
grep -q "$SEGV is broken: killed by SIGSEGV" "$TMP/o4b" && grep -q "$HANG is broken: timed out after 2 s" "$TMP/o4b" ||
  fail "broken arms not reported: $(cat "$TMP/o4b")"
python3 - "$TMP/a.json" "$TMP/f.json" "$SEGV" "$HANG" <<'EOF' || fails=$((fails + 1))
import json, sys
a, f = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
segv, hang = sys.argv[3], sys.argv[4]
r = f["race"]["cpu/gemv/q4_0"]
by = {x["variant"]: x for x in r["arms"]}
assert by[segv]["broken"] and "SIGSEGV" in by[segv]["why"], by[segv]
assert by[hang]["broken"] and "timed out" in by[hang]["why"], by[hang]
healthy = [x for x in r["arms"] if x["variant"] not in (segv, hang)]
assert healthy and all(not x["broken"] and x["best_ms"] > 0 for x in healthy), healthy
assert all(x["isolated"] in ("gate", "gate+trial") for x in r["arms"]), r["arms"]
assert r["arms"][-1]["isolated"] == "gate+trial", r["arms"][-1]
assert r["arms"][0]["isolated"] == "gate", r["arms"][0]
e = f["kernels"]["cpu/gemv/q4_0"]
assert e["verdict"] in ("crown", "tie") and e["variant"] not in (segv, hang), e
assert f["kernels"]["cpu/gemm/q4_0"] == a["kernels"]["cpu/gemm/q4_0"], "the other site changed"
assert f["race"]["cpu/gemm/q4_0"] == a["race"]["cpu/gemm/q4_0"], "the other site's record changed"
print("isolation ok:", segv, "->", by[segv]["why"], "|", hang, "->", by[hang]["why"])
EOF
ls core core.* 2>/dev/null && fail "a faulting child left a core file"

# 5. applying it changes no greedy token (only bit-exact crowns apply by default)
if [ -f "$SHARED/models/stories260K.gguf" ]; then
  a=$("$BIN" run -m "$SHARED/models/stories260K.gguf" -p "Once upon a time" -n 24 --temp 0 --print-ids 2>/dev/null)
  b=$("$BIN" run -m "$SHARED/models/stories260K.gguf" -p "Once upon a time" -n 24 --temp 0 --print-ids --tune "$TMP/a.json" 2>/dev/null)
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "tokens differ with the sidecar: '$a' vs '$b'"
fi

# 6. the serving confirm: a crown (forced by the test hook) is judged end to end with the model
M="$SHARED/oracle/models/tiny-llama-Q4_0.gguf"
if [ -f "$M" ]; then
  CLLAMA_TUNE_TEST_CROWN=cpu/gemv/q4_0 "$BIN" tune -m "$M" --sites cpu/gemv/q4_0 --quick --force -t 2 \
    --tune "$TMP/c.json" >"$TMP/o6" 2>&1 || fail "confirm run failed: $(cat "$TMP/o6")"
  grep -q "confirm cpu/gemv/q4_0" "$TMP/o6" || fail "no serving confirm: $(cat "$TMP/o6")"
  python3 - "$TMP/c.json" <<'EOF2' || fails=$((fails + 1))
import json, sys
d = json.load(open(sys.argv[1]))
e = d["kernels"]["cpu/gemv/q4_0"]
assert e["confirm"] in ("pass", "fail"), e
assert e["confirm_gain"] > 0, e
assert (e["verdict"] == "crown") == (e["confirm"] == "pass"), e
assert d["race"]["cpu/gemv/q4_0"].get("test_crown") is True
print("confirm ok:", e["variant"], e["confirm"], round(e["confirm_gain"], 4))
# the runtime knobs raced end to end on the model: each knob's values, the default first
k = d["race"]["knobs"]
assert set(k) == {"cpu.chunks_per_thread", "cpu.pf_gemv", "cpu.par_min_work"}, k.keys()
for name, r in k.items():
    assert r["values"][0]["ratio"] == 1.0 and len(r["values"]) >= 3, r
    assert (name in d["runtime"]) == (r["crown"] != r["values"][0]["value"]), (name, r, d["runtime"])
print("knob races ok:", {n: r["crown"] for n, r in k.items()})
EOF2
  # 7. a serving race (the CUDA backend's protocol, here on the CPU): the arms pinned into their
  # own copies of the model, the served tg timed
  "$BIN" tune --serving -m "$M" --quick --force -t 2 --tune "$TMP/s.json" >"$TMP/o7" 2>&1 || fail "serving race: $(cat "$TMP/o7")"
  python3 - "$TMP/s.json" <<'EOF2' || fails=$((fails + 1))
import json, sys
d = json.load(open(sys.argv[1]))
r = d["race"]["cpu/gemv/q4_0"]
assert r["serving"] is True and len(r["arms"]) >= 2, r
assert d["kernels"]["cpu/gemv/q4_0"]["verdict"] in ("crown", "tie")
print("serving race ok:", [a["variant"] for a in r["arms"]])
EOF2
  # 8. the serving race gates each arm in a child (this binary exec'd with --gate-row: a fresh
  # process, as a CUDA context needs), then decodes 4 tokens of the model with the arm pinned (its
  # trial): a challenger that faults or hangs in its gate, or faults in its trial, is broken with
  # the reason, the incumbent keeps the site, the run goes on and exits 0
  # the challenger: the second arm part 7 raced (which row that is depends on the box's ISA)
  CH=$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["race"]["cpu/gemv/q4_0"]["arms"]; print(a[1]["variant"] if len(a) > 1 else "")' "$TMP/s.json")
  [ -n "$CH" ] || fail "part 7 raced no challenger on cpu/gemv/q4_0"
  "$BIN" tune --gate-row "$CH" --gate-cols 256 --backend cpu >"$TMP/g1" 2>&1 &&
    grep -q "^gate-row ok" "$TMP/g1" || fail "--gate-row on a sound row: $(cat "$TMP/g1")"
  "$BIN" tune --gate-row no_such_row --gate-cols 256 --backend cpu >"$TMP/g2" 2>&1 &&
    fail "--gate-row of an unknown row exited 0"
  grep -q "^gate-row broken: no cpu row 'no_such_row'" "$TMP/g2" || fail "--gate-row unknown row: $(cat "$TMP/g2")"
  for how in segv hang trial-segv; do
    CLLAMA_TUNE_TEST_FAULT="$CH=$how" "$BIN" tune --serving -m "$M" --quick --force -t 2 --no-knobs \
      --gate-timeout 3 --sites q4_0 --tune "$TMP/f-$how.json" >"$TMP/o8" 2>&1 || fail "serving race with a $how arm: $(cat "$TMP/o8")"
    python3 - "$TMP/f-$how.json" "$how" "$CH" <<'EOF2' || fails=$((fails + 1))
import json, sys
d, how, ch = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
r = d["race"]["cpu/gemv/q4_0"]
b = [a for a in r["arms"] if a.get("broken")]
assert [a["variant"] for a in b] == [ch], r
want = {"segv": "killed by SIGSEGV in its child", "hang": "timed out after 3 s in its child",
        "trial-segv": "killed by SIGSEGV in its child"}[how]
assert want in b[0]["why"], b[0]
assert d["kernels"]["cpu/gemv/q4_0"]["variant"] != ch, d["kernels"]
print("serving race, %s arm: broken (%s), site %s" % (how, b[0]["why"], d["kernels"]["cpu/gemv/q4_0"]["verdict"]))
EOF2
  done
else
  echo "SKIP (part): no $M for the serving confirm and race"
fi

# 9. class defaults (tune/defaults/<class>.json): exported from a full mint (here a.json with one site
# crowned and knobs set by hand, standing in for a mint's outcome), decisive sites and crowned knobs only,
# nothing of the box; applied when the box has no sidecar of its own (load order), greedy tokens
# unchanged, bench records stamped class:<class>:<sha256>, the doctor says which file applies and why
CLS=$("$BIN" tune doctor 2>/dev/null | sed -n 's/^box: .*, class \([a-z0-9-]*\)$/\1/p')
if [ -n "$CLS" ]; then
  python3 - "$TMP/a.json" "$TMP/m.json" <<'EOF' || fails=$((fails + 1))
import json, sys
d = json.load(open(sys.argv[1]))
arms = [a for a in d["race"]["cpu/gemv/q4_0"]["arms"] if a["bit_exact"] and not a["broken"]]
pick = (arms[1:] or arms)[0]  # a bit-exact challenger when there is one, else the incumbent
e = d["kernels"]["cpu/gemv/q4_0"]
e.update(verdict="crown", variant=pick["variant"], source_hash=pick["source_hash"], bit_exact=True)
d["kernels"]["cpu/gemm/q4_0"]["verdict"] = "tie"
d["kernels"]["cpu/gemv/q8_0"] = dict(e, verdict="crown", confirm="fail", confirm_gain=0.99)
d["runtime"] = {"cpu.chunks_per_thread": 8, "cpu.pf_gemv": 1024, "threads": 2}
json.dump(d, open(sys.argv[2], "w"))
EOF
  D="$TMP/defaults"
  "$BIN" tune --export-class "$CLS" --tune "$TMP/m.json" -o "$D/$CLS.json" >"$TMP/o9" 2>&1 &&
    fail "exported a mint stamped noise: overridden without --force"
  "$BIN" tune --export-class "$CLS" --tune "$TMP/m.json" -o "$D/$CLS.json" --force >"$TMP/o9" 2>&1 ||
    fail "export: $(cat "$TMP/o9")"
  python3 - "$D/$CLS.json" "$CLS" <<'EOF' || fails=$((fails + 1))
import json, sys
d = json.load(open(sys.argv[1]))
assert d["class"] == sys.argv[2] and d["tune_version"] >= 1, d
assert set(d["kernels"]) == {"cpu/gemv/q4_0"}, d["kernels"]      # the tie and the confirm-fail dropped
assert d["runtime"] == {"cpu.chunks_per_thread": 8, "cpu.pf_gemv": 1024}, d["runtime"]
p = d["provenance"]
assert "--export-class" in p["generated_by"] and p["engine_git_sha"] and p["noise"] == "overridden", p
assert not {"box", "binary_sha256", "date", "noise_probes", "noise_floor", "mint_seconds"} & set(p), p
assert "race" not in d and len(d["kernels"]["cpu/gemv/q4_0"]["source_hash"]) == 64
print("class file ok:", sys.argv[2], list(d["kernels"]), d["runtime"])
EOF
  ENV=(env -u CLLAMA_TUNE XDG_CACHE_HOME="$TMP/cache" CLLAMA_TUNE_DEFAULTS="$D")
  "${ENV[@]}" "$BIN" tune doctor >"$TMP/d9" 2>&1
  grep -q "applies: the class defaults $D/$CLS.json" "$TMP/d9" && grep -q "class default" "$TMP/d9" ||
    fail "doctor does not name the class defaults: $(cat "$TMP/d9")"
  CLLAMA_TUNE_DEFAULTS="$TMP/nowhere" XDG_CACHE_HOME="$TMP/cache" "$BIN" tune doctor 2>&1 | grep -q "applies: built-in defaults" ||
    fail "doctor without class defaults"
  for m in "$SHARED/models/stories260K.gguf" "$M"; do
    [ -f "$m" ] || continue
    a=$("$BIN" run -m "$m" -p "Once upon a time" -n 24 --temp 0 --print-ids --tune none 2>/dev/null)
    b=$("${ENV[@]}" "$BIN" run -m "$m" -p "Once upon a time" -n 24 --temp 0 --print-ids 2>"$TMP/e9")
    [ -n "$a" ] && [ "$a" = "$b" ] || fail "$(basename "$m"): tokens differ with the class defaults: '$a' vs '$b'"
    ! grep -q "tune" "$TMP/e9" || fail "class defaults warn: $(cat "$TMP/e9")"
  done
  if [ -f "$M" ]; then
    mkdir -p "$TMP/rec"
    "${ENV[@]}" "$BIN" bench -m "$M" -p 0 -n 4 -r 1 --record --records "$TMP/rec" --box tbox >"$TMP/b9" 2>&1 ||
      fail "bench: $(cat "$TMP/b9")"
    python3 - "$TMP/rec/tbox.json" "$CLS" "$D/$CLS.json" <<'EOF' || fails=$((fails + 1))
import hashlib, json, sys
r = json.load(open(sys.argv[1]))["rows"][0]
want = "class:%s:%s" % (sys.argv[2], hashlib.sha256(open(sys.argv[3], "rb").read()).hexdigest())
assert r["tune_sha256"] == want, (r["tune_sha256"], want)
assert r["provenance"]["tune_sidecar"].endswith(sys.argv[3].split("/")[-1]), r["provenance"]["tune_sidecar"]
print("bench stamp ok:", r["tune_sha256"][:40] + "...")
EOF
  fi
else
  echo "SKIP (part): this box has no class: no class-defaults checks"
fi

# 8. --backend cuda on a machine without a GPU: a clear error, no sidecar
if ! "$BIN" kernels --backend cuda >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  "$BIN" tune --backend cuda -m "${M:-x.gguf}" --tune "$TMP/g.json" >"$TMP/o8" 2>&1
  rc=$?
  [ $rc -ne 0 ] && grep -qi "cuda" "$TMP/o8" && [ ! -e "$TMP/g.json" ] || fail "cuda tune without a GPU: rc $rc: $(cat "$TMP/o8")"
fi

if [ $fails -eq 0 ]; then echo "tune_race_test: ok"; exit 0; fi
echo "tune_race_test: $fails failure(s)"
exit 1
