"""The real CPU engine of the engine tests: llama-cpp-python's OpenAI server with Gemma 3
270M (Q4_K_M) from ./scripts/engine-env.sh's venv, started on a free port, and `gate`
run against a store of the test's own. Shared by tests/engine's modules (one server a
module: tests/engine/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from loadgen_support.server import free_port

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("GATE_ENGINE_VENV", ROOT / ".engine-venv"))
MODEL = "gemma-3-270m"
GATE = [sys.executable, "-m", "harness"]


@contextmanager
def serve(log: Path, n_ctx: int = 2048) -> Iterator[str]:
    """The server's base URL once /v1/models answers; stopped on exit."""
    python, gguf = VENV / "bin" / "python", VENV / "model.gguf"
    if not (python.exists() and gguf.exists()):
        pytest.fail(f"no engine venv at {VENV}: run ./scripts/engine-env.sh first")
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(python), "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias",
             MODEL, "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
             "--n_threads", "2"], stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(url + "/v1/models", timeout=5):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"llama_cpp.server did not come up: {log.read_text()[-2000:]}")
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def gate(db: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GATE_DB": f"sqlite:///{db}", "GATE_CONFIG": str(db.parent / "none")}
    return subprocess.run([*GATE, *args], capture_output=True, text=True, timeout=timeout,
                          env=env, check=False)
