#!/usr/bin/env python3
"""greedy_ref_test: greedy continuations of cllama vs llama.cpp on the real models of
scripts/gen_golden.py (Gemma-3-270M, the default model; SmolLM2-135M-Instruct, the chat model).

The reference is regenerated live with the PyPI package llama-cpp-py-sync (it bundles llama.cpp's
libllama; scripts/gen_golden.py drives it in the reference config: weight repacking off,
flash attention, F16 KV, 1 thread, one token per llama_decode) on each model's committed prompts
and compared with `$CLLAMA_BIN run --numerics ggml --temp 0 --print-ids`, which reproduces that
config's numerics bit for bit. A model that is not installed is skipped with a SKIP: line; SKIP
(exit 77) when the reference package or every model is missing.

Rule: prompt ids and every generated id exact, for every prompt (bit-exact numerics leave no
room for near-ties; a divergence is a numerics bug, and the report names llama.cpp's margin there).
"""
import os, subprocess, sys

src = os.environ.get("CLLAMA_SRC") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(src, "scripts"))
import gen_golden as gg  # noqa: E402


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def check(cbin, name, model):
    """(prompts token-exact, failures) of one model against a live reference"""
    try:
        import numpy  # noqa: F401
        info, ref = gg.reference(model, gg.MODELS[name][1])
    except ImportError as e:
        skip("reference llama-cpp-py-sync not installed (%s)" % e)
    print("%s: reference %s %s (llama.cpp %s)" % (name, info["package"], info["version"], info["llama_cpp_tag"]))
    bad, exact = 0, 0
    for i, r in enumerate(ref):
        out = subprocess.run([cbin, "run", "-m", model, "-p", r["prompt"], "-n", str(gg.N_GEN), "--temp", "0",
                              "--numerics", "ggml", "-t", "2", "-c", "1024", "--print-ids"],
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            print("%s prompt %d: cllama failed: %s" % (name, i, out.stderr.strip()))
            bad += 1
            continue
        lines = {l.split(":", 1)[0]: l.split(":", 1)[1].split() for l in out.stdout.splitlines() if ":" in l}
        ptoks = [int(x) for x in lines.get("prompt", [])]
        gen = [int(x) for x in lines.get("generated", [])]
        if ptoks != r["prompt_tokens"]:
            print("%s prompt %d: prompt ids differ: %s vs %s" % (name, i, ptoks[:12], r["prompt_tokens"][:12]))
            bad += 1
            continue
        want = r["generated_tokens"]
        k = 0
        while k < len(gen) and k < len(want) and gen[k] == want[k]:
            k += 1
        ok = gen == want
        exact += ok
        print("%s prompt %d (%d prompt tokens): %s  %d/%d ids exact%s" %
              (name, i, len(ptoks), "ok" if ok else "FAIL", k, len(want), "" if ok else
               ", then ours %s vs %s (llama.cpp margin there %.4f)" % (gen[k:k + 1], want[k:k + 1],
                                                                      r["margins"][k] if k < len(r["margins"]) else -1)))
        bad += not ok
    print("%s vs llama.cpp: %d/%d prompts fully token-exact, %d failures" % (name, exact, len(ref), bad))
    return exact, bad


def main():
    cbin = os.environ.get("CLLAMA_BIN")
    if not cbin or not os.path.exists(cbin):
        skip("CLLAMA_BIN not built")
    bad, ran = 0, 0
    for name in gg.MODELS:
        model = gg.default_model() if name == "gemma3-270m" else gg.model_path(name)
        if not os.path.exists(model):
            print("SKIP: %s: model %s not installed" % (name, model))
            continue
        ran += 1
        bad += check(cbin, name, model)[1]
    if not ran:
        skip("no model of scripts/gen_golden.py is installed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
