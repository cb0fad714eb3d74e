"""The load generator knows its own error (issue 24), against the real no-op streaming
server on loopback: an open-loop rate no client on this machine reaches is flagged with
the achieved and the target rate, `gate bench` shows its error and verdict in the table
and in --json, and a client measuring an engine-like TTFT is not flagged by the relative
rules. Bounded in requests and time; what must appear is a flag when the client is
overloaded on purpose, never a speed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from loadgen_support.server import ServerConfig, running_server

from harness.loadgen.phase import InProcessExecutor, PhaseSpec
from harness.loadgen.records import Endpoint, RequestSpec

MODEL = "test-model"
ABSURD = 50_000.0  # req/s: far past what one Python client sends on any machine


def specs(n: int) -> tuple[RequestSpec, ...]:
    return tuple(RequestSpec(f"question {i}", 4, i) for i in range(n))


def test_an_open_loop_rate_the_client_cannot_reach_is_flagged_with_both_rates() -> None:
    with running_server(ServerConfig()) as (url, _srv):
        out = InProcessExecutor(progress=False).run(PhaseSpec(
            endpoints=(Endpoint(url, MODEL, 0),), requests=specs(1500), concurrency=32,
            rate=ABSURD, arrival="constant", phase_timeout=120.0))
    h = out.health
    assert out.status == "FINISHED" and out.result.summary.completed == 1500
    assert h.open_loop and h.target_rate is not None and h.achieved_rate is not None
    assert abs(h.target_rate - ABSURD) < 1.0
    assert h.achieved_rate < 0.95 * h.target_rate
    shortfall = next(r for r in h.reasons if r.startswith("open loop sent "))
    assert f"of the target {ABSURD:.0f} req/s" in shortfall
    assert f"sent {h.achieved_rate:.0f} req/s" in shortfall
    # held against their schedule, whatever held them (here: all 32 slots busy)
    assert h.late_sends > 0 and h.held_by_cap > 0 and h.saturated


def test_a_client_measuring_an_engine_like_ttft_is_not_flagged_by_its_delay() -> None:
    """TTFT 0.3 s, as an engine with a long prompt: the client's delay would have to
    average 30 ms to count."""
    with running_server(ServerConfig(ttft=0.3, itl=0.005)) as (url, _srv):
        out = InProcessExecutor(progress=False).run(PhaseSpec(
            endpoints=(Endpoint(url, MODEL, 0),), requests=specs(8), concurrency=2,
            phase_timeout=60.0))
    h = out.health
    assert h.ttft_p50_ms is not None and h.ttft_p50_ms >= 300
    assert h.client_delay_share is not None and h.client_tail_share is not None
    assert not [r for r in h.reasons if r.startswith("client delay")]
    assert not h.open_loop and h.target_rate is None


def gate_bench(url: str, db: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", "bench", "--url", url, "--model", MODEL,
         "--docs", "4", "--doc-tokens", "2", "--question-tokens", "0", "--max-tokens", "4",
         "--concurrency", "16", "--requests", "600", "--rate", f"{ABSURD:.0f}",
         "--arrival", "constant", "--no-progress", "--no-metrics", *extra],
        capture_output=True, text=True, timeout=180, check=False,
        env={**os.environ, "GATE_DB": f"sqlite:///{db}"})


def test_bench_shows_its_own_error_and_verdict_in_the_table_and_in_json(
        tmp_path: Path) -> None:
    with running_server(ServerConfig()) as (url, _srv):
        as_json = gate_bench(url, tmp_path / "g.db", "--json")
        table = gate_bench(url, tmp_path / "g.db")
    assert as_json.returncode == 0, as_json.stderr
    client = json.loads(as_json.stdout)["client"]
    assert client["saturated"] is True and client["open_loop"] is True
    assert client["target_rate"] == ABSURD and client["achieved_rate"] < 0.95 * ABSURD
    assert any(r.startswith("open loop sent ") for r in client["reasons"])
    assert client["ttft_p50_ms"] > 0 and client["delay_p99_ms"] is not None
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert "------------ load generator (client) -------------" in lines
    assert "Client saturated:                        YES       " in lines
    rates = next(line for line in lines if line.startswith("Achieved / target send rate"))
    assert rates.rstrip().endswith(f"/ {ABSURD:.1f}")
    assert any(line.startswith("  - open loop sent ") for line in lines)
    assert any(line.startswith("Client delay, mean / p99 (ms):") for line in lines)
    assert "gate: warning: client saturated: " in table.stderr


def test_rate_inf_has_no_schedule_to_fall_behind() -> None:
    """--rate inf sends everything at once, capped: the cap holding requests is the
    phase's design, not a client falling behind (late counts from the slot it got)."""
    with running_server(ServerConfig(ttft=0.05)) as (url, _srv):
        out = InProcessExecutor(progress=False).run(PhaseSpec(
            endpoints=(Endpoint(url, MODEL, 0),), requests=specs(40), concurrency=4,
            rate=float("inf"), phase_timeout=60.0))
    h = out.health
    assert out.result.summary.completed == 40 and h.sends == 40
    assert not h.open_loop and h.target_rate is None and h.held_by_cap == 0
    assert not [r for r in h.reasons if "late" in r or "open loop" in r]
