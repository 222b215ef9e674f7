#!/usr/bin/env python3
"""llama.cpp's own outputs for the pieces of cllama's reference numerics (CLLAMA_NUMERICS=ggml),
computed by the ggml-cpu library that the PyPI package `llama-cpp-py-sync` bundles (the same
build scripts/gen_golden.py drives), written to tests/golden/ggml_numerics.json:

  scripts/gen_ggml_numerics.py [--shared DIR] [--out tests/golden/ggml_numerics.json]

- vec_dot: for every weight type with a file in shared/oracle/quant (ggml's own quantized
  rows, 8 x 1024; F32 takes F16.bin's source rows), ggml_get_type_traits_cpu(type)->vec_dot of
  each row against each of the 8 seeded source rows of act_Q8_0.bin, quantized by the
  from_float of the type's vec_dot_type: y[token][row] as float bits. The activation bytes
  are compared with the oracle's act_<type>.bin (another ggml build) and the verdict recorded.
- ops: one-op ggml graphs computed on 1 thread (ggml_graph_compute_with_ctx): swiglu_split
  (ggml_vec_swiglu_f32: ggml_v_silu on 8 lanes, libm expf on a row's tail), rms_norm, and rope
  (mode 0, llama's) at several positions. Inputs and outputs as float bits.
tests/ggml_numerics_test.c checks cllama's rows and ops against it bit for bit.
"""
import argparse, ctypes as C, json, os, struct, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_golden as gg  # noqa: E402

# ggml_type ids (ggml.h) of the weight types cllama reads, and the oracle file of each
WEIGHT_TYPES = [("f32", 0), ("f16", 1), ("q4_0", 2), ("q4_1", 3), ("q5_0", 6), ("q5_1", 7), ("q8_0", 8),
                ("q2_K", 10), ("q3_K", 11), ("q4_K", 12), ("q5_K", 13), ("q6_K", 14), ("iq2_xxs", 16),
                ("iq2_xs", 17), ("iq3_xxs", 18), ("iq4_nl", 20), ("iq3_s", 21), ("iq2_s", 22), ("iq4_xs", 23),
                ("bf16", 30)]
TYPE_NAME = {i: n for n, i in WEIGHT_TYPES}
TYPE_NAME.update({9: "q8_1", 15: "q8_K"})


class TraitsCPU(C.Structure):
    _fields_ = [("from_float", C.c_void_p), ("vec_dot", C.c_void_p), ("vec_dot_type", C.c_int),
                ("nrows", C.c_int64)]


FROM_FLOAT = C.CFUNCTYPE(None, C.c_void_p, C.c_void_p, C.c_int64)
VEC_DOT = C.CFUNCTYPE(None, C.c_int, C.POINTER(C.c_float), C.c_size_t, C.c_void_p, C.c_size_t, C.c_void_p,
                      C.c_size_t, C.c_int)


def libs():
    """libggml-base and libggml-cpu of the reference package (the glibc-compat copies where needed)."""
    gg._import_reference()
    from llama_cpp_py_sync import _cffi_bindings as cb
    d = os.path.dirname(str(cb._find_library()))
    base = C.CDLL(os.path.join(d, "libggml-base.so.0"), mode=C.RTLD_GLOBAL)
    cpu = C.CDLL(os.path.join(d, "libggml-cpu.so.0"), mode=C.RTLD_GLOBAL)
    cpu.ggml_cpu_init()
    cpu.ggml_get_type_traits_cpu.restype = C.POINTER(TraitsCPU)
    cpu.ggml_get_type_traits_cpu.argtypes = [C.c_int]
    return base, cpu


def read_oracle(path):
    b = open(path, "rb").read()
    assert b[:8] == b"GGMLQORC", path
    n_rows, n_per_row = struct.unpack_from("<II", b, 40)
    row_size, quant_bytes = struct.unpack_from("<QQ", b, 48)
    off_src, off_q = struct.unpack_from("<QQ", b, 80)
    src = list(struct.unpack_from("<%df" % (n_rows * n_per_row), b, off_src))
    return {"n_rows": n_rows, "n": n_per_row, "row_size": row_size, "q": b[off_q:off_q + quant_bytes], "src": src,
            "srcb": b[off_src:off_src + 4 * n_rows * n_per_row]}


def fbits(x):
    return "%08x" % struct.unpack("<I", struct.pack("<f", x))[0]


def fbits_buf(buf, n):
    return "".join("%08x" % v for v in struct.unpack("<%dI" % n, bytes(buf)[:4 * n]))


def fbits_all(xs):
    return "".join(fbits(v) for v in xs)


def vec_dot_section(cpu, shared):
    qdir = os.path.join(shared, "oracle", "quant")
    act = read_oracle(os.path.join(qdir, "act_Q8_0.bin"))
    n, ntok = act["n"], act["n_rows"]
    xs = (C.c_float * (n * ntok)).from_buffer_copy(act["srcb"])
    out = {}
    for name, tid in WEIGHT_TYPES:
        f = "F16.bin" if name == "f32" else name.upper() + ".bin"
        w = read_oracle(os.path.join(qdir, f))
        assert w["n"] == n
        if name == "f32":
            wq, rs = w["srcb"], 4 * n
        else:
            wq, rs = w["q"], w["row_size"]
        tr = cpu.ggml_get_type_traits_cpu(tid).contents
        vdt = tr.vec_dot_type
        vtr = cpu.ggml_get_type_traits_cpu(vdt).contents
        vdot = VEC_DOT(tr.vec_dot)
        # the activations as ggml-cpu's matmul quantizes them (F32: used as they are)
        abuf = C.create_string_buffer(4 * n + 64)
        acts, equal = [], None
        oracle_act = {8: "act_Q8_0.bin", 9: "act_Q8_1.bin", 15: "act_Q8_K.bin"}.get(vdt)
        ref = read_oracle(os.path.join(qdir, oracle_act)) if oracle_act else None
        for t in range(ntok):
            if vdt == 0:
                acts.append(bytes(act["srcb"][4 * n * t:4 * n * (t + 1)]))
                continue
            # zeroed first: ggml's Q8_K quantizer leaves an all-zero block's bsums unwritten
            C.memset(abuf, 0, len(abuf))
            FROM_FLOAT(vtr.from_float)(C.addressof(xs) + 4 * n * t, abuf, n)
            nb = ref["row_size"] if ref else 2 * n
            acts.append(abuf.raw[:nb])
            if ref:
                same = acts[-1] == ref["q"][nb * t:nb * (t + 1)]
                equal = same if equal is None else (equal and same)
        wbuf = C.create_string_buffer(bytes(wq))
        # rows of n and of n_short = n minus one block (32-element types: an odd block count;
        # f32/f16/bf16: 1000, a length off the SIMD step): the first n_short values of each
        # row, quantized again by from_float (a shorter row quantizes to the same blocks)
        blck = 256 if vdt == 15 else 32 if vdt in (8, 9) else 24
        n_short = n - blck
        y, ys = [], []
        for t in range(ntok):
            ab = C.create_string_buffer(acts[t])
            abs_ = C.create_string_buffer(4 * n + 64)
            if vdt == 0:
                C.memmove(abs_, acts[t], 4 * n_short)
            else:
                C.memset(abs_, 0, len(abs_))
                FROM_FLOAT(vtr.from_float)(C.addressof(xs) + 4 * n * t, abs_, n_short)
            row, rows_ = [], []
            for r in range(w["n_rows"]):
                s = C.c_float(0)
                vdot(n, C.byref(s), 0, C.addressof(wbuf) + r * rs, 0, ab, 0, 1)
                row.append(s.value)
                vdot(n_short, C.byref(s), 0, C.addressof(wbuf) + r * rs, 0, abs_, 0, 1)
                rows_.append(s.value)
            y.append(fbits_all(row))
            ys.append(fbits_all(rows_))
        out[name] = {"file": f, "ggml_type": tid, "vec_dot_type": TYPE_NAME.get(vdt, str(vdt)),
                     "act_from_float_equals_oracle": equal, "y": y, "n_short": n_short, "y_short": ys}
        print("vec_dot %-8s (%s): %d x %d%s" % (name, out[name]["vec_dot_type"], ntok, w["n_rows"],
                                                "" if equal in (None, True) else "  ACTIVATION BYTES DIFFER"))
    return {"n": n, "tokens": ntok, "rows": 8,
            "weights": "shared/oracle/quant/<file>: its 8 quantized rows (f32: F16.bin's 8 source rows)",
            "activations": "the 8 source rows of shared/oracle/quant/act_Q8_0.bin (seeded; the same rows in every file), "
                           "quantized by ggml-cpu's from_float of the weight type's vec_dot_type",
            "y": "y[token] = the 8 rows' vec_dot(row, token) as float32 bits, 8 hex digits each",
            "y_short": "the same over the first n_short elements of every row and token", "types": out}


# ---- one-op graphs ----------------------------------------------------------------------

class InitParams(C.Structure):
    _fields_ = [("mem_size", C.c_size_t), ("mem_buffer", C.c_void_p), ("no_alloc", C.c_bool)]


class Graph:
    def __init__(self, base, cpu):
        self.base, self.cpu = base, cpu
        base.ggml_init.restype = C.c_void_p
        base.ggml_init.argtypes = [InitParams]
        for fn in ("ggml_new_tensor_1d", "ggml_new_tensor_2d", "ggml_new_tensor_3d", "ggml_swiglu_split",
                   "ggml_rms_norm", "ggml_rope_ext", "ggml_new_graph", "ggml_get_data"):
            getattr(base, fn).restype = C.c_void_p
        base.ggml_new_tensor_1d.argtypes = [C.c_void_p, C.c_int, C.c_int64]
        base.ggml_new_tensor_2d.argtypes = [C.c_void_p, C.c_int, C.c_int64, C.c_int64]
        base.ggml_new_tensor_3d.argtypes = [C.c_void_p, C.c_int, C.c_int64, C.c_int64, C.c_int64]
        base.ggml_swiglu_split.argtypes = [C.c_void_p, C.c_void_p, C.c_void_p]
        base.ggml_rms_norm.argtypes = [C.c_void_p, C.c_void_p, C.c_float]
        base.ggml_rope_ext.argtypes = [C.c_void_p, C.c_void_p, C.c_void_p, C.c_void_p, C.c_int, C.c_int, C.c_int,
                                       C.c_float, C.c_float, C.c_float, C.c_float, C.c_float, C.c_float]
        base.ggml_new_graph.argtypes = [C.c_void_p]
        base.ggml_build_forward_expand.argtypes = [C.c_void_p, C.c_void_p]
        base.ggml_get_data.argtypes = [C.c_void_p]
        base.ggml_free.argtypes = [C.c_void_p]
        cpu.ggml_graph_compute_with_ctx.argtypes = [C.c_void_p, C.c_void_p, C.c_int]
        self.ctx = base.ggml_init(InitParams(64 << 20, None, False))

    def tensor(self, ttype, shape, values=None):
        b = self.base
        t = (b.ggml_new_tensor_1d(self.ctx, ttype, *shape) if len(shape) == 1 else
             b.ggml_new_tensor_2d(self.ctx, ttype, *shape) if len(shape) == 2 else
             b.ggml_new_tensor_3d(self.ctx, ttype, *shape))
        if values is not None:
            fmt = "<%d%s" % (len(values), "i" if ttype == 26 else "f")
            data = struct.pack(fmt, *values)
            C.memmove(b.ggml_get_data(t), data, len(data))
        return t

    def compute(self, t, n):
        gf = self.base.ggml_new_graph(self.ctx)
        self.base.ggml_build_forward_expand(gf, t)
        self.cpu.ggml_graph_compute_with_ctx(self.ctx, gf, 1)
        return fbits_buf(C.string_at(self.base.ggml_get_data(t), 4 * n), n)

    def free(self):
        self.base.ggml_free(self.ctx)


def _rng(seed):
    """splitmix64 uniforms in [0, 1) (the inputs are stored: no one needs to re-create them)"""
    s = seed
    while True:
        s = (s + 0x9E3779B97F4A7C15) & (2 ** 64 - 1)
        z = s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & (2 ** 64 - 1)
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & (2 ** 64 - 1)
        yield ((z ^ (z >> 31)) >> 11) / float(2 ** 53)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def ops_section(base, cpu):
    r = _rng(20260315)
    ops = {}
    # swiglu: rows of 203 (25 vectors of 8 and a 3-element tail), values across silu's range,
    # with ggml_v_expf's special paths (|x| > 126 ln2 ~ 87.3, and > 192 ln2) in the first row
    nc, nr = 203, 4
    x, g = [], []
    for i in range(nc * nr):
        if i < 24:
            x.append([-200.0, -150.0, -130.0, -100.0, -90.0, -88.0, -87.5, -87.0, -60.0, -30.0, -17.0, -10.0,
                      -1e-3, -0.0, 0.0, 1e-7, 0.5, 3.0, 10.0, 20.0, 60.0, 87.5, 90.0, 150.0][i])
        else:
            u = next(r)
            x.append(f32((u - 0.5) * (24.0 if i % 3 else 3.0)))
        g.append(f32((next(r) - 0.5) * 4.0))
    G = Graph(base, cpu)
    a, b = G.tensor(0, (nc, nr), x), G.tensor(0, (nc, nr), g)
    ops["swiglu"] = {"ne": [nc, nr], "x": fbits_all(x), "g": fbits_all(g),
                     "y": G.compute(base.ggml_swiglu_split(G.ctx, a, b), nc * nr)}
    G.free()
    # rms_norm: rows of 576 (SmolLM2's n_embd) and 640 (Gemma-3-270M's) at several magnitudes
    rows = []
    for n, scale, eps in ((576, 1.0, 1e-5), (576, 37.0, 1e-5), (576, 1e-3, 1e-5), (640, 5.0, 1e-6)):
        rows.append((n, eps, [f32((next(r) - 0.5) * scale * (8.0 if k % 97 == 13 else 1.0)) for k in range(n)]))
    ops["rms_norm"] = []
    for n, eps, v in rows:
        if True:
            G = Graph(base, cpu)
            t = G.tensor(0, (n,), v)
            ops["rms_norm"].append({"n": n, "eps": fbits(eps), "x": fbits_all(v),
                                    "y": G.compute(base.ggml_rms_norm(G.ctx, t, eps), n)})
            G.free()
    # rope, mode 0 (llama: adjacent pairs), SmolLM2's head dim 64 (3 of its heads), base 1e5
    hd, nh = 64, 3
    ops["rope"] = []
    for pos, base_f in ((0, 100000.0), (1, 100000.0), (17, 100000.0), (300, 100000.0), (1023, 100000.0),
                        (77, 10000.0)):
        v = [f32((next(r) - 0.5) * 6.0) for _ in range(hd * nh)]
        G = Graph(base, cpu)
        t = G.tensor(0, (hd, nh, 1), v)
        p = G.tensor(26, (1,), [pos])
        y = G.compute(base.ggml_rope_ext(G.ctx, t, p, None, hd, 0, 0, base_f, 1.0, 0.0, 1.0, 0.0, 0.0), hd * nh)
        ops["rope"].append({"head_dim": hd, "n_head": nh, "pos": pos, "base": fbits(base_f), "x": fbits_all(v),
                            "y": y})
        G.free()
    print("ops: swiglu %dx%d, rms_norm %d rows, rope %d positions" % (nc, nr, len(ops["rms_norm"]), len(ops["rope"])))
    return ops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.environ.get("CLLAMA_SHARED") or
                    os.path.normpath(os.path.join(HERE, "..", "..", "shared")))
    ap.add_argument("--out", default=os.path.join(HERE, "..", "tests", "golden", "ggml_numerics.json"))
    a = ap.parse_args()
    if not os.path.isdir(os.path.join(a.shared, "oracle", "quant")) and os.path.isdir("/work/shared/oracle/quant"):
        a.shared = "/work/shared"
    base, cpu = libs()
    from llama_cpp_py_sync import _version
    doc = {"format": "cllama-ggml-numerics/1", "generator": "scripts/gen_ggml_numerics.py",
           "reference": {"package": "llama-cpp-py-sync", "version": _version.__version__,
                         "llama_cpp_tag": getattr(_version, "__llama_cpp_tag__", "?"),
                         "llama_cpp_commit": getattr(_version, "__llama_cpp_commit__", "?"),
                         "ggml_cpu": "avx2=%d avx512=%d f16c=%d fma=%d" % (
                             cpu.ggml_cpu_has_avx2(), cpu.ggml_cpu_has_avx512(), cpu.ggml_cpu_has_f16c(),
                             cpu.ggml_cpu_has_fma())},
           "vec_dot": vec_dot_section(cpu, a.shared),
           "ops": ops_section(base, cpu)}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print("wrote", a.out, os.path.getsize(a.out), "bytes")


if __name__ == "__main__":
    sys.exit(main())
