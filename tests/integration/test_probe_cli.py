"""`gate probe URL` as a user runs it, against real HTTP servers (tests/loadgen_support);
the real CPU engine is in tests/engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from loadgen_support.server import ServerConfig, free_port, running_server

GATE = [sys.executable, "-m", "harness"]


def gate(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GATE_CONFIG": str(tmp / "none.yaml")}
    return subprocess.run([*GATE, "probe", *args], capture_output=True, text=True,
                          timeout=120, env=env, check=False, cwd=tmp)


def test_an_accelerated_vllm_like_server_lets_g3_decide(tmp_path: Path) -> None:
    with running_server(ServerConfig(external_tier=True)) as (url, srv):
        out = gate(tmp_path, url, "--json")
    assert out.returncode == 0, out.stderr
    (a,) = json.loads(out.stdout)
    assert (a["engine"], a["version"], a["g3_can_decide"]) == ("vllm", "0.0.0-test", True)
    assert [r["ok"] for r in a["routes"]] == [True] * 5
    assert "external KV tier: vllm:external_prefix_cache" in a["evidence"]
    assert "external KV tier: lmcache:*" in a["evidence"]
    # the probe's requests carry what a load's do: a UUID request id, standard headers
    assert srv.arrivals == 2


def test_no_tier_counter_and_a_failing_completion_say_why_exit_2(tmp_path: Path) -> None:
    with running_server(ServerConfig(faults={0: "http_500"})) as (url, _):
        out = gate(tmp_path, url)
    assert out.returncode == 2, out.stderr
    assert "no  /v1/completions" in out.stdout
    assert "HTTP 500: injected http_500" in out.stdout
    assert "ok  /v1/chat/completions" in out.stdout
    assert "only /v1/chat/completions answers" in out.stdout
    assert "nothing on this server proves a tier was read" in out.stdout


def test_engine_override_and_model_not_served(tmp_path: Path) -> None:
    with running_server(ServerConfig()) as (url, _):
        forced = gate(tmp_path, url, "--engine", "llama-cpp-python", "--json")
        wrong = gate(tmp_path, url, "--model", "nope")
    (a,) = json.loads(forced.stdout)
    assert a["engine"] == "llama-cpp-python" and not a["g3_can_decide"]
    assert "configured as llama-cpp-python (detected vllm)" in a["why"]
    assert wrong.returncode == 4 and "it serves: test-model" in wrong.stderr


def test_nothing_listening_is_one_line_exit_3(tmp_path: Path) -> None:
    out = gate(tmp_path, f"http://127.0.0.1:{free_port()}")
    assert out.returncode == 3
    errors = [x for x in out.stderr.splitlines() if not x.startswith("gate: probing")]
    assert len(errors) == 1 and "unreachable" in errors[0], out.stderr


def test_hosts_check_probes_the_arms_endpoints_that_are_up(tmp_path: Path) -> None:
    """`gate hosts check --engines` on a demo site (local hosts): both arms' TP8 endpoint is
    a vLLM-like server with a tier counter, TP4x2's second instance is not up."""
    import yaml

    from harness.demo import write_site

    made = write_site(tmp_path, "default")
    try:
        with running_server(ServerConfig(model="Qwen/Qwen2.5-32B-Instruct",
                                         external_tier=True)) as (url, srv):
            port, down = int(url.rsplit(":", 1)[1]), free_port()
            cfg = yaml.safe_load(made.config.read_text())
            cfg["layouts"] = [
                {"name": "TP8", "tp": 8, "instances": [{"host": "gpu1", "port": port}]},
                {"name": "TP4x2", "tp": 4, "instances": [{"host": "gpu1", "port": port},
                                                         {"host": "gpu1", "port": down}]}]
            made.config.write_text(yaml.safe_dump(cfg, sort_keys=False))
            env = {k: v for k, v in os.environ.items() if k != "GATE_CONFIG"}
            run = [*GATE, "hosts", "check", "--engines"]
            out = subprocess.run([*run, "--json"], capture_output=True, text=True,
                                 timeout=120, env=env, cwd=made.root)
            table = subprocess.run(run, capture_output=True, text=True, timeout=120,
                                   env=env, cwd=made.root)
    finally:
        made.ports.release()
    assert out.returncode == 0, out.stderr
    checks = json.loads(out.stdout)["engines"]
    assert [(c["arm"], c["layout"], c["instance"], c["up"]) for c in checks] == [
        ("baseline", "TP8", 0, True), ("accelerated", "TP8", 0, True),
        ("baseline", "TP4x2", 0, True), ("baseline", "TP4x2", 1, False),
        ("accelerated", "TP4x2", 0, True), ("accelerated", "TP4x2", 1, False)]
    up = checks[1]["assessment"]
    assert up["engine"] == "vllm" and up["g3_can_decide"]
    assert "(is the engine running on that port?)" in checks[3]["problem"]
    assert srv.arrivals == 4  # two runs; the endpoint the arms and layouts share: once each
    assert table.returncode == 0, table.stderr
    assert f"accelerated TP8#0 http://127.0.0.1:{port}: vllm 0.0.0-test; G3 could decide " \
           "here" in table.stdout
    assert f"baseline TP4x2#1 http://127.0.0.1:{down}: not up (" in table.stdout
