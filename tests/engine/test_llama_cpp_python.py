"""The load generator and `gate probe` against a real CPU engine: llama-cpp-python's
OpenAI server (`python -m llama_cpp.server`) with Gemma 3 270M (Q4_K_M) on CPU.

Marked `engine` and left out of the default run: the engine has no wheel on PyPI and
builds from its sdist (~13 min on 2 cores). Set it up once with ./scripts/engine-env.sh
(.engine-venv/ with the server and the model), then
`.venv/bin/python -m pytest tests/engine -m engine`. Without that venv the tests fail
and say how to make it (an explicit run of these tests wants the engine).
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from engine.llama_server import MODEL, VENV, gate

from harness.loadgen import client
from harness.loadgen.failures import explain
from harness.loadgen.records import RequestRecord, RequestSpec
from harness.store.db import Store
from harness.store.runs import runs
from harness.store.writer import benchmarks

pytestmark = pytest.mark.engine


def post(url: str, request_id: str) -> tuple[int, bytes]:
    body = json.dumps({"model": MODEL, "prompt": "Hi", "max_tokens": 1}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body, method="POST",
                                 headers={"Content-Type": "application/json",
                                          "X-Request-ID": request_id})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_the_server_refuses_a_request_id_that_is_not_a_uuid(engine_url: str) -> None:
    # what broke the first real-engine bench: gate used to send "gate-r1-0"
    assert post(engine_url, "gate-r1-0") == (400, b"")
    status, body = post(engine_url, str(uuid.uuid4()))
    assert status == 200 and json.loads(body)["choices"]


def test_a_refused_header_is_explained_in_the_servers_words(engine_url: str) -> None:
    """The load generator's own client, sending the old header: the failure report says
    what the server said (nothing) and names the likely cause."""
    async def one() -> RequestRecord:
        rec = RequestRecord(idx=0, instance=0, doc_id=0, warmup=False, scheduled=0.0)
        body = client.build_body(RequestSpec("Hi", 1, 0), MODEL, "completions")
        headers = {**client.base_headers(), "X-Request-ID": "gate-r1-0"}
        async with client.new_session(60, 1) as session:
            await client.stream(session, engine_url + "/v1/completions", body, headers,
                                rec, time.monotonic(), False, None)
        return rec

    rec = asyncio.run(one())
    report = explain([rec], api="completions", model=MODEL)
    assert report is not None and report.samples[0].line() == "HTTP 400: (empty body)"
    assert report.hint.startswith("a rejected header or body")


def test_probe_names_the_engine_and_what_g3_cannot_prove(engine_url: str,
                                                         tmp_path: Path) -> None:
    out = gate(tmp_path / "g.db", "probe", engine_url, "--json")
    assert out.returncode == 2, out.stderr
    (a,) = json.loads(out.stdout)
    assert a["engine"] == "llama-cpp-python" and a["models"] == [MODEL]
    routes = {r["route"]: r for r in a["routes"]}
    assert routes["tokenize"]["ok"] and "llama-cpp-python route" in routes["tokenize"]["detail"]
    assert routes["/v1/completions"]["ok"], routes["/v1/completions"]
    assert not routes["/metrics"]["ok"]
    assert any("does not honour ignore_eos" in g for g in a["g3"])
    assert any("reports no usage" in g for g in a["g3"])  # llama-cpp-python's stream
    assert not a["g3_can_decide"]


def test_bench_completes_every_request_and_records_the_engine(engine_url: str,
                                                              tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    out = gate(db, "bench", "--url", engine_url, "--model", MODEL, "--docs", "4",
               "--doc-tokens", "120", "--question-tokens", "8", "--concurrency", "2",
               "--max-tokens", "8", "--no-progress", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["summary"]["completed"] == 4 and doc["summary"]["failed"] == 0
    assert doc["calibrated"] is True  # /extras/tokenize: exact prompt lengths
    assert "failures" not in doc["summary"]
    (run,) = runs(Store(f"sqlite:///{db}"), kind="bench")
    (b,) = benchmarks(Store(f"sqlite:///{db}"), run.id)
    assert b.params["engine"] == "llama-cpp-python"
    assert b.params["servers"][0]["why"] == ["/v1/models owned_by 'me'"]


def test_the_engine_was_built_for_any_cpu_not_only_this_one() -> None:
    """GGML_NATIVE compiles for the build machine's own CPU: a server built so on an
    AVX-512 / AMX machine segfaulted on its first request. scripts/engine-env.sh builds with
    it off and keeps the CMake build directory, whose cache says what was built."""
    if not (VENV / "bin" / "python").exists():
        pytest.fail(f"no engine venv at {VENV}: run ./scripts/engine-env.sh first")
    caches = sorted((VENV / "llama-build").glob("**/CMakeCache.txt"))
    if not caches:
        pytest.skip(f"no CMake build directory under {VENV}/llama-build: the engine came "
                    "from a wheel (GATE_WHEEL_CACHE or pip's cache), built elsewhere")
    for cache in caches:
        native = [line for line in cache.read_text(errors="replace").splitlines()
                  if line.startswith("GGML_NATIVE:")]
        assert native == ["GGML_NATIVE:BOOL=OFF"], (cache, native)
