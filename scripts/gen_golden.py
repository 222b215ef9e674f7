#!/usr/bin/env python3
"""Greedy reference continuations by llama.cpp, through the PyPI package `llama-cpp-py-sync`
(it bundles llama.cpp's libllama), for the models whose goldens live in tests/golden/:

  scripts/gen_golden.py [--model NAME] [--path FILE] [--out tests/golden/NAME.json]

NAME is one of MODELS (default gemma3-270m): it picks the model file under the cllama model
cache and the prompt set; --path overrides the file (the env CLLAMA_MODEL does the same for the
Gemma default). The reference config is the one cllama's reference-numerics mode
(CLLAMA_NUMERICS=ggml, `cllama run --numerics ggml`) reproduces bit for bit, so the ids are
comparable token for token:
  - CPU weight repacking off (llama_model_params.use_extra_bufts = false): every quantized
    matmul is ggml-cpu's plain vec_dot on the file layout;
  - one token per llama_decode, prompt included: every matmul is a single-row vec_dot (no
    tinyBLAS / gemm), attention sees one query (no tiled flash-attention prefill);
  - flash attention on, F16 KV cache (llama.cpp's default cache type), 1 thread (no split-KV).
These small models amplify any rounding difference (llama.cpp's own configs disagree on
Gemma-3-270M's greedy path), so only bit-exact numerics give exact tokens.
Each step takes the argmax of the raw logits (ties to the lowest id); generation stops at
end-of-generation (the EOG id is not recorded) or after n_gen tokens. margins[s] is the top-2
logit margin at step s. Prompts are plain text, BOS added as the model says, no chat template.
tests/greedy_ref_test.py imports reference() from here (live, every model); tests/golden_test.c reads the
goldens; scripts/gen_ggml_numerics.py borrows the library loader for its per-op goldens.
"""
import argparse, json, os, sys

N_GEN = 32

_LONG = " ".join(
    "Paragraph %d. The lighthouse keeper counted the ships that passed the rocks each night, wrote their names in "
    "a blue notebook, and wondered where each of them was going and who was waiting for them at home." % i
    for i in range(1, 16))

PROMPTS = [
    "Once upon a time",
    "The capital of France is",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Water boils at 100 degrees Celsius because",
    "Here is a list of three colors: red,",
    _LONG + " Summarize the story in one sentence:",
    "Question: What is the largest planet in the solar system?\nAnswer:",
]

# SmolLM2 reads byte-level BPE: the prompts add code, digit runs, accents and other non-ASCII
# text, leading and repeated spaces, so the pre-tokenizer's splits are part of the check
SMOLLM2_PROMPTS = [
    "Once upon a time, in a small village by the sea,",
    "The capital of France is",
    "def is_prime(n: int) -> bool:\n    if n < 2:\n        return False\n",
    "The year 1969 saw 3 astronauts travel 384,400 km; 12345 + 67890 =",
    " Leading spaces and   several   gaps: one, two,",
    "Le caf\u00e9 cr\u00e8me co\u00fbte 3,50 \u20ac \u00e0 Paris, na\u00efve Jos\u00e9 said: \u00bfQu\u00e9 tal? Stra\u00dfe,",
    "Question: What is the largest planet in the solar system?\nAnswer:",
    "Translate to English: \u4eca\u65e5\u306f\u826f\u3044\u5929\u6c17\u3067\u3059\u3002 \U0001f642\tTabs\tand\nnewlines ->",
    _LONG + " Summarize the story in one sentence:",
]

# name -> (file under <cache>/cllama/models, prompts)
MODELS = {
    "gemma3-270m": ("gemma-3-270m-q4_k_m.gguf", PROMPTS),
    "smollm2-135m-instruct": ("smollm2-135m-instruct-q4_1.gguf", SMOLLM2_PROMPTS),
}


def model_path(name):
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "cllama", "models", MODELS[name][0])


def default_model():
    return os.environ.get("CLLAMA_MODEL") or model_path("gemma3-270m")


_SHIM_C = r"""
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
long __isoc23_strtol(const char *s, char **e, int b) { return strtol(s, e, b); }
unsigned long __isoc23_strtoul(const char *s, char **e, int b) { return strtoul(s, e, b); }
unsigned long long __isoc23_strtoull(const char *s, char **e, int b) { return strtoull(s, e, b); }
int __isoc23_sscanf(const char *s, const char *f, ...) { va_list ap; va_start(ap, f); int r = vsscanf(s, f, ap); va_end(ap); return r; }
"""


def _weaken_glibc_238(path):
    """Mark the GLIBC_2.38 version needs of an ELF64 file weak (in place), so an older glibc loads it."""
    import struct
    b = bytearray(open(path, "rb").read())
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", b, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    for sec in secs:
        if sec[1] != 0x6FFFFFFE:  # SHT_GNU_verneed
            continue
        strtab = secs[sec[6]][4]
        off = sec[4]
        while True:
            _, cnt, _, aux, nxt = struct.unpack_from("<HHIII", b, off)
            a = off + aux
            for _ in range(cnt):
                _, flags, _, name, anext = struct.unpack_from("<IHHII", b, a)
                end = b.index(0, strtab + name)
                if bytes(b[strtab + name:end]) == b"GLIBC_2.38":
                    struct.pack_into("<H", b, a + 4, flags | 2)  # VER_FLG_WEAK
                a += anext
            if not nxt:
                break
            off += nxt
    open(path, "wb").write(bytes(b))


def _compat_libdir(pkg_dir):
    """The bundled libllama needs glibc 2.38 only for four C23 parsing functions: on an older
    glibc, copy the libraries to a cache folder, weaken those version needs and provide the
    functions from a tiny shim loaded first (RTLD_GLOBAL)."""
    import ctypes, glob, shutil, subprocess, tempfile
    d = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "cllama", "llamaref-compat")
    os.makedirs(d, exist_ok=True)
    shim = os.path.join(d, "libc23shim.so")
    if not os.path.exists(shim):
        with tempfile.TemporaryDirectory() as t:
            open(os.path.join(t, "s.c"), "w").write(_SHIM_C)
            open(os.path.join(t, "v.map"), "w").write("GLIBC_2.38 { global: __isoc23_*; local: *; };\n")
            subprocess.check_call(["cc", "-shared", "-fPIC", "-O1", "-o", shim, os.path.join(t, "s.c"),
                                   "-Wl,--version-script=" + os.path.join(t, "v.map")])
    for f in glob.glob(os.path.join(pkg_dir, "lib*.so*")):
        dst = os.path.join(d, os.path.basename(f))
        if not os.path.exists(dst) or os.path.getmtime(dst) < os.path.getmtime(f):
            shutil.copyfile(f, dst)
            _weaken_glibc_238(dst)
    ctypes.CDLL(shim, mode=ctypes.RTLD_GLOBAL)
    return d


def _import_reference():
    import llama_cpp_py_sync as lcp
    from llama_cpp_py_sync import _cffi_bindings as cb
    try:
        cb.get_lib()
    except RuntimeError as e:
        if "GLIBC_2.38" not in str(e):
            raise
        d = _compat_libdir(os.path.dirname(cb.__file__))
        cb._find_library = lambda: os.path.join(d, "libllama.so")
        if hasattr(cb, "_find_mtmd_library"):
            cb._find_mtmd_library = lambda: os.path.join(d, "libmtmd.so")
        cb._lib = None
        cb.get_lib()
    return lcp


class _NoRepackLib:
    """The bundled lib, except that model params come with CPU weight repacking off (the
    package's Llama() has no switch for llama_model_params.use_extra_bufts)."""

    def __init__(self, lib):
        self._lib = lib

    def __getattr__(self, name):
        return getattr(self._lib, name)

    def llama_model_default_params(self):
        p = self._lib.llama_model_default_params()
        p.use_extra_bufts = False
        return p


REF_SETTINGS = {"n_ctx": 1024, "n_threads": 1, "kv_cache": "f16", "flash_attn": "on", "weight_repack": False,
                "prompt_eval": "one token per llama_decode call, fresh KV per prompt",
                "tokenize": "add_special=true, parse_special=false",
                "sampling": "argmax of raw logits, ties to lowest id", "n_gen": N_GEN,
                "stop_at_eog": "yes; the EOG id is not recorded",
                "margins": "top-2 logit margin of llama.cpp's logits at each generated step"}


def reference(model_path, prompts=PROMPTS, n_gen=N_GEN):
    """Greedy ids per prompt from llama.cpp in the reference config (REF_SETTINGS).
    Raises ImportError when the package is missing."""
    lcp = _import_reference()
    from llama_cpp_py_sync import _version
    import llama_cpp_py_sync.llama as lcp_llama
    import numpy as np

    get_lib = lcp_llama.get_lib
    lcp_llama.get_lib = lambda: _NoRepackLib(get_lib())
    try:
        llm = lcp.Llama(model_path, n_ctx=REF_SETTINGS["n_ctx"], n_batch=512, n_threads=1, n_threads_batch=1,
                        flash_attn_type=1, type_k="f16", type_v="f16", verbose=False)
    finally:
        lcp_llama.get_lib = get_lib
    lib, ffi = llm._lib, llm._ffi
    n_vocab = llm.n_vocab
    out = []
    for text in prompts:
        llm._clear_context_state()
        toks = llm.tokenize(text, add_special=True, parse_special=False)
        n_past = 0
        for t in toks:
            n_past = llm._eval_tokens([t], n_past)
        gen, margins, stopped = [], [], False
        for _ in range(n_gen):
            lg = lib.llama_get_logits_ith(llm._ctx, -1)
            buf = np.frombuffer(ffi.buffer(lg, n_vocab * 4), dtype=np.float32).copy()
            best = int(np.argmax(buf))  # first maximum: ties to the lowest id
            top = float(buf[best])
            buf[best] = -np.inf
            margins.append(round(top - float(buf.max()), 5))
            if lib.llama_vocab_is_eog(llm._vocab, best):
                stopped = True
                break
            gen.append(best)
            if len(gen) == n_gen:
                break
            n_past = llm._eval_tokens([best], n_past)
        out.append({"prompt": text, "prompt_tokens": toks, "generated_tokens": gen, "margins": margins, "stopped_eog": stopped,
                    "generated_text": llm.detokenize(gen)})
    info = {"package": "llama-cpp-py-sync", "version": lcp.__version__ if hasattr(lcp, "__version__") else _version.__version__,
            "llama_cpp_tag": getattr(_version, "__llama_cpp_tag__", "?"),
            "llama_cpp_commit": getattr(_version, "__llama_cpp_commit__", "?"),
            "system_info": ffi.string(lib.llama_print_system_info()).decode()}
    llm.close()
    return info, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="gemma3-270m", choices=sorted(MODELS))
    ap.add_argument("--path", help="the model file (default: the cllama model cache's)")
    ap.add_argument("--out", help="default tests/golden/<model>.json")
    a = ap.parse_args()
    path = a.path or (default_model() if a.model == "gemma3-270m" else model_path(a.model))
    here = os.path.dirname(os.path.abspath(__file__))
    out = a.out or os.path.join(here, "..", "tests", "golden", a.model + ".json")
    info, prompts = reference(path, MODELS[a.model][1])
    doc = {"format": "cllama-greedy-ref/1", "generator": "scripts/gen_golden.py --model " + a.model, "reference": info,
           "model": os.path.basename(path),
           "settings": REF_SETTINGS,
           "prompts": prompts}
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")
    for p in prompts:
        print(len(p["prompt_tokens"]), p["generated_tokens"][:8], repr(p["generated_text"][:60]))
    print("wrote", out)


if __name__ == "__main__":
    sys.exit(main())
