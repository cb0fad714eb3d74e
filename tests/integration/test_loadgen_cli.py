"""`gate bench` and `gate import vllm-bench` as a user runs them (subprocess, real server)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from loadgen_support.server import ServerConfig, free_port, running_server

from harness.store.db import Store
from harness.store.runs import runs
from harness.store.writer import benchmarks, requests

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "loadgen"
GATE = [sys.executable, "-m", "harness"]


def gate(db: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GATE_DB": f"sqlite:///{db}"}
    return subprocess.run([*GATE, *args], capture_output=True, text=True, timeout=timeout,
                          env=env, check=False)


def bench_args(url: str, *extra: str) -> list[str]:
    return ["bench", "--url", url, "--model", "test-model", "--docs", "6", "--doc-tokens",
            "200", "--question-tokens", "10", "--concurrency", "3", "--max-tokens", "8",
            "--metrics-interval", "0.2", *extra]


def test_bench_prints_vllm_block_and_stores_the_run(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    with running_server(ServerConfig(itl=0.001)) as (url, srv):
        out = gate(db, *bench_args(url, "--requests", "12", "--warmup", "2",
                                   "--save", str(tmp_path / "r.json")))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "============ Serving Benchmark Result ============"
    assert "Successful requests:                     12        " in lines
    for label in ("Mean TTFT (ms):", "Median TPOT (ms):", "P99 ITL (ms):", "Mean E2EL (ms):",
                  "Request throughput (req/s):", "Failed by kind:", "Prompt tokens:"):
        assert any(line.startswith(label) for line in lines), label
    assert "Prompt lengths:                          server tokenizer" in out.stdout
    assert "done 14/14" in out.stderr  # progress line on stderr
    assert srv.arrivals == 14
    store = Store(f"sqlite:///{db}")
    run = runs(store, kind="bench")[-1]
    # a bench is not a gate: no verdict, a reason saying what it did (never PASS)
    assert run.status == "FINISHED" and run.verdict is None
    assert run.reason == "12 requests completed"
    (b,) = benchmarks(store, run.id)
    assert b.tier == 3 and b.params["calibrated"] is True and b.params["requests"] == 12
    assert b.summary["completed"] == 12 and b.summary["stored_requests"] == 14
    assert b.summary["http_client"] == ["gate-http1"]  # gate's own client carried http://
    rows = requests(store, b.id)
    assert len(rows) == 14 and sum(r["warmup"] for r in rows) == 2
    assert all(r["chunks"] is not None and len(r["chunks"]) == 8 * 4 for r in rows)
    assert all(r["prompt_tokens"] == 210 for r in rows)
    with store.engine.connect() as conn:
        n_series = conn.exec_driver_sql("SELECT count(*) FROM series WHERE benchmark_id = ?",
                                        (b.id,)).scalar()
    assert n_series and n_series > 10
    assert b.summary["cache_evidence"][url]["prompt_tokens"] == 14 * 210
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["completed"] == 12 and len(saved["ttfts"]) == 12
    imported = gate(db, "import", "vllm-bench", str(tmp_path / "r.json"))
    assert imported.returncode == 0 and "warning" not in imported.stderr, imported.stderr


def test_bench_json_counts_failures_by_kind_and_exits_2(tmp_path: Path) -> None:
    faults = {3: "http_500", 5: "cut", 7: "bad_json", 9: "empty"}
    with running_server(ServerConfig(faults=faults)) as (url, _):
        out = gate(tmp_path / "g.db", *bench_args(url, "--requests", "12", "--json",
                                                  "--no-progress"))
    assert out.returncode == 2, out.stderr
    doc = json.loads(out.stdout)
    s = doc["summary"]
    assert s["completed"] == 8 and s["failed"] == 4
    assert s["failed_by_kind"] == {"http_500": 1, "cut": 1, "bad_chunk": 1, "no_text": 1}
    assert doc["verdict"] is None and s["stored_requests"] == 12
    assert doc["reason"] == "4 of 12 requests failed"
    (run,) = runs(Store(f"sqlite:///{tmp_path / 'g.db'}"), kind="bench")
    assert run.verdict is None and run.reason == "4 of 12 requests failed"


def test_two_urls_split_the_load(tmp_path: Path) -> None:
    with running_server() as (u0, s0), running_server() as (u1, s1):
        out = gate(tmp_path / "g.db", "bench", "--url", u0, "--url", u1, "--model",
                   "test-model", "--docs", "4", "--doc-tokens", "50", "--requests", "8",
                   "--concurrency", "4", "--max-tokens", "4", "--no-progress")
    assert out.returncode == 0, out.stderr
    assert (s0.arrivals, s1.arrivals) == (4, 4)
    assert "instance 0" in out.stdout and "instance 1" in out.stdout


def test_unreachable_endpoint_fails_before_load_exit_3(tmp_path: Path) -> None:
    out = gate(tmp_path / "g.db", *bench_args(f"http://127.0.0.1:{free_port()}"))
    assert out.returncode == 3
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("gate: error: host http://127.0.0.1:") and "unreachable" in line
    assert not (tmp_path / "g.db").exists() or not runs(Store(f"sqlite:///{tmp_path / 'g.db'}"))


def test_not_openai_compatible_exit_3(tmp_path: Path) -> None:
    with running_server(ServerConfig(openai=False)) as (url, srv):
        out = gate(tmp_path / "g.db", *bench_args(url))
    assert out.returncode == 3
    assert "not an OpenAI-compatible server" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert srv.arrivals == 0


def test_model_not_served_lists_models_exit_4(tmp_path: Path) -> None:
    with running_server(ServerConfig(model="Qwen/Qwen2.5-32B-Instruct")) as (url, srv):
        out = gate(tmp_path / "g.db", *bench_args(url))
    assert out.returncode == 4
    assert "it serves: Qwen/Qwen2.5-32B-Instruct" in out.stderr
    assert "Traceback" not in out.stderr and srv.arrivals == 0


def test_prompt_longer_than_max_model_len_exit_4(tmp_path: Path) -> None:
    with running_server(ServerConfig(max_model_len=128)) as (url, srv):
        out = gate(tmp_path / "g.db", *bench_args(url))
    assert out.returncode == 4 and "max_model_len 128" in out.stderr
    assert srv.arrivals == 0


@pytest.mark.parametrize("name, n", [
    ("vllm-bench-serve-result_er0080_v0.25.1_opt125m.json", 1),
    ("vllm-bench-sweep-run0_er0080_v0.25.1.json", 1),
    ("vllm-bench-sweep-summary_er0080_v0.25.1.json", 2),
])
def test_import_every_vllm_bench_variant(tmp_path: Path, name: str, n: int) -> None:
    db = tmp_path / "g.db"
    out = gate(db, "import", "vllm-bench", str(FIX / name), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert len(doc["benchmarks"]) == n
    store = Store(f"sqlite:///{db}")
    (run,) = runs(store, kind="import")
    assert run.verdict is None and run.args == ["vllm-bench", str(FIX / name)]
    assert run.reason == (f"{8 * n} requests completed; imported {n} vllm bench result(s) "
                          f"from {name}")
    assert doc["verdict"] is None and doc["reason"] == run.reason
    bs = benchmarks(store, run.id)
    assert [b.driver for b in bs] == ["vllm-bench"] * n
    assert bs[0].summary["completed"] == 8 and bs[0].tier == 2
    with store.engine.connect() as conn:
        digest = conn.exec_driver_sql("SELECT sha256 FROM artifact WHERE run_id = ?",
                                      (run.id,)).scalar()
    assert digest and len(digest) == 64


def test_import_unknown_shape_is_one_line_exit_4(tmp_path: Path) -> None:
    bad = tmp_path / "other.json"
    bad.write_text('{"results": []}')
    out = gate(tmp_path / "g.db", "import", "vllm-bench", str(bad))
    assert out.returncode == 4
    (line,) = out.stderr.strip().splitlines()
    assert str(bad) in line and "not a vllm bench serve result" in line


def test_import_warns_when_arrays_disagree(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    with running_server() as (url, _):
        out = gate(db, *bench_args(url, "--requests", "6", "--no-progress",
                                   "--save", str(tmp_path / "r.json")))
    assert out.returncode == 0, out.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    doc["median_ttft_ms"] *= 2
    (tmp_path / "t.json").write_text(json.dumps(doc))
    imported = gate(db, "import", "vllm-bench", str(tmp_path / "t.json"))
    assert imported.returncode == 0
    assert "gate: warning:" in imported.stderr and "median_ttft_ms" in imported.stderr
    store = Store(f"sqlite:///{db}")
    b = benchmarks(store, runs(store, kind="import")[-1].id)[0]
    assert b.summary["warnings"] and len(requests(store, b.id)) == 6


def test_bench_files_under_the_site_configs_campaign(site_dir: Path) -> None:
    db = site_dir / "g.db"
    with running_server() as (url, _):
        out = subprocess.run([*GATE, *bench_args(url, "--requests", "3", "--no-progress",
                                                 "--rate", "50", "--goodput", "ttft:5000",
                                                 "--json")],
                             cwd=site_dir, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "GATE_DB": f"sqlite:///{db}"}, check=False)
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout)["summary"]
    assert s["request_goodput"] > 0 and s["completed"] == 3
    store = Store(f"sqlite:///{db}")
    assert runs(store, campaign="test-campaign", kind="bench")
    (b,) = benchmarks(store, runs(store, kind="bench")[-1].id)
    assert b.params["rate"] == 50.0 and b.params["slo"] == {"ttft": 5000.0}


def test_bad_goodput_is_a_usage_error(tmp_path: Path) -> None:
    out = gate(tmp_path / "g.db", *bench_args("http://127.0.0.1:1", "--goodput", "itl:5"))
    assert out.returncode == 4 and "--goodput" in out.stderr


def test_trace_replay_keeps_the_traces_arrival_times(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": 10 + 0.1 * i, "prompt_tokens": 20,
                                         "max_tokens": 4}) + "\n" for i in range(5)))
    db = tmp_path / "g.db"
    with running_server() as (url, _):
        out = gate(db, "bench", "--url", url, "--model", "test-model", "--workload", "trace",
                   "--workload-file", str(trace), "--concurrency", "2", "--no-progress",
                   "--api", "chat")
    assert out.returncode == 0, out.stderr
    store = Store(f"sqlite:///{db}")
    (b,) = benchmarks(store, runs(store, kind="bench")[-1].id)
    assert b.params["arrival"] == "trace" and b.params["api"] == "chat"
    sched = [r["scheduled"] for r in requests(store, b.id)]
    gaps = [y - x for x, y in itertools.pairwise(sched)]
    assert len(sched) == 5 and all(abs(g - 0.1) < 0.03 for g in gaps)


def test_a_trace_without_timestamps_is_a_prompt_list_run_closed_loop(tmp_path: Path) -> None:
    trace = tmp_path / "prompts.jsonl"
    trace.write_text("".join(json.dumps({"prompt": f"hello {i}", "max_tokens": 4}) + "\n"
                             for i in range(3)))
    db = tmp_path / "g.db"
    with running_server() as (url, _):
        out = gate(db, "bench", "--url", url, "--model", "test-model", "--workload", "trace",
                   "--workload-file", str(trace), "--requests", "6", "--concurrency", "2",
                   "--no-progress")
        assert out.returncode == 0, out.stderr
        store = Store(f"sqlite:///{db}")
        (b,) = benchmarks(store, runs(store, kind="bench")[-1].id)
        assert b.params["arrival"] == "poisson" and b.params["rate"] is None  # closed loop
        assert len(requests(store, b.id)) == 6
        half = tmp_path / "half.jsonl"  # a timestamp on some lines only: which is meant?
        half.write_text(trace.read_text() + json.dumps({"timestamp": 1.0, "prompt": "x"}) + "\n")
        bad = gate(db, "bench", "--url", url, "--model", "test-model", "--workload", "trace",
                   "--workload-file", str(half), "--no-progress")
    assert bad.returncode == 4
    assert f"{half}: 1 of 4 trace lines have a timestamp" in bad.stderr, bad.stderr


def test_bench_where_every_request_failed_is_error_exit_3(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    with running_server(ServerConfig(faults=dict.fromkeys(range(6), "http_500"))) as (url, _):
        out = gate(db, *bench_args(url, "--requests", "6", "--json", "--no-progress"))
    assert out.returncode == 3, out.stderr
    doc = json.loads(out.stdout)
    reason = "all 6 requests failed (first: HTTP 500: injected http_500 x6)"
    assert doc["verdict"] == "ERROR" and doc["reason"] == reason
    # the server's own words, on stderr and in the stored summary
    assert "gate: 6 of 6 requests failed; first failures:" in out.stderr
    assert "gate:   HTTP 500: injected http_500 x6" in out.stderr
    assert doc["summary"]["failures"]["first"][0]["message"] == "injected http_500"
    (run,) = runs(Store(f"sqlite:///{db}"), kind="bench")
    assert (run.status, run.verdict, run.reason) == ("FINISHED", "ERROR", reason)


def all_failed_copy(tmp_path: Path) -> Path:
    """The real capture, edited the way vLLM writes a run whose every request failed:
    completed 0, failed = num_prompts, and the aggregates of no request (vLLM's
    calculate_metrics gives 0 for them)."""
    doc = json.loads((FIX / "vllm-bench-serve-result_er0080_v0.25.1_opt125m.json").read_text())
    doc.update(completed=0, failed=doc["num_prompts"], total_input_tokens=0,
               total_output_tokens=0)
    for key, value in doc.items():
        if key.endswith(("_ms", "_throughput")) or key in ("request_goodput",
                                                            "max_output_tokens_per_s"):
            doc[key] = 0.0 if isinstance(value, float) else value
    path = tmp_path / "all-failed.json"
    path.write_text(json.dumps(doc))
    return path


def test_import_where_every_request_failed_is_error_exit_3(tmp_path: Path) -> None:
    db, path = tmp_path / "g.db", all_failed_copy(tmp_path)
    out = gate(db, "import", "vllm-bench", str(path))
    assert out.returncode == 3, out.stderr
    errors = [x for x in out.stderr.splitlines() if x.startswith("gate: error:")]
    assert errors == [f"gate: error: {path}: every request failed (completed 0 of 8); "
                      "stored as run 1 (ERROR)"], out.stderr
    (run,) = runs(Store(f"sqlite:///{db}"), kind="import")
    assert (run.status, run.verdict) == ("FINISHED", "ERROR")
    assert run.reason.startswith("every request failed (completed 0 of 8); imported 1 vllm")
    listed = json.loads(gate(db, "runs", "list", "--json").stdout)
    assert listed[0]["effective_verdict"] == "ERROR"


def test_import_where_some_requests_failed_warns_and_has_no_verdict(tmp_path: Path) -> None:
    doc = json.loads((FIX / "vllm-bench-serve-result_er0080_v0.25.1_opt125m.json").read_text())
    doc.update(completed=6, failed=2)
    path = tmp_path / "some-failed.json"
    path.write_text(json.dumps(doc))
    db = tmp_path / "g.db"
    out = gate(db, "import", "vllm-bench", str(path), "--json")
    assert out.returncode == 0, out.stderr
    assert f"gate: warning: {path}: 2 of 8 requests failed; stored as run 1" in out.stderr
    assert json.loads(out.stdout)["verdict"] is None
    (run,) = runs(Store(f"sqlite:///{db}"), kind="import")
    assert run.verdict is None and run.reason.startswith("2 of 8 requests failed; imported")


def test_runs_list_shows_imports_and_benches_as_recorded_never_pass(site_dir: Path) -> None:
    """`gate runs list` says `recorded` for a finished bench / import, also for one an
    older harness stored as PASS; `gate status` counts only gate runs."""
    db = site_dir / "g.db"
    assert gate(db, "import", "vllm-bench", str(FIX / "vllm-bench-sweep-run0_er0080_v0.25.1.json"),
                "-c", str(site_dir / "gate.yaml")).returncode == 0
    store = Store(f"sqlite:///{db}")
    from harness.store.runs import NewRun, finish_run, start_run

    old = start_run(store, NewRun(campaign="test-campaign", site="test-site", customer="",
                                  kind="bench"))
    finish_run(store, old, verdict="PASS", reason="12 requests completed")  # an older harness
    store.close()
    table = gate(db, "runs", "list", "--wide")  # a table, one line a row: columns to read
    assert table.returncode == 0, table.stderr
    rows = [line for line in table.stdout.splitlines() if line.startswith("│ ")]
    assert [r.split("│")[3].strip() for r in rows if r.split("│")[1].strip()] == [
        "recorded", "recorded"], table.stdout
    assert "PASS" not in gate(db, "runs", "list").stdout
    assert "PASS" not in table.stdout
    listed = json.loads(gate(db, "runs", "list", "--json").stdout)
    assert [d["effective_verdict"] for d in listed] == ["RECORDED", "RECORDED"]
    shown = gate(db, "runs", "show", str(old))
    assert shown.stdout.startswith(f"run {old} bench : recorded - 12 requests completed")
    status = json.loads(gate(db, "status", "-c", str(site_dir / "gate.yaml"), "--json").stdout)
    assert [g["verdict"] for g in status["gates"]] == ["not run"] * 4


def test_bench_against_the_simulator_stores_the_phase_health(tmp_path: Path) -> None:
    from sim_support import engine

    from harness.sim.spec import EngineSpec

    model = "Qwen/Qwen2.5-32B-Instruct"
    db = tmp_path / "g.db"
    with engine(EngineSpec(port=0, speed=50.0), tmp_path / "state") as url:
        out = gate(db, "bench", "--url", url, "--model", model, "--docs", "6",
                   "--doc-tokens", "300", "--question-tokens", "10", "--concurrency", "3",
                   "--max-tokens", "8", "--requests", "12", "--no-progress", "--json")
        # the same phase again, judged by a site config's bound no loop can meet
        (tmp_path / "gate.yaml").write_text(
            "site: {name: s}\ncampaign: {name: c}\nmodel: {name: m}\n"
            "load: {health: {max_loop_lag_p99_ms: 0.000001}}\n")
        tight = gate(db, "bench", "--url", url, "--model", model, "--docs", "6",
                     "--doc-tokens", "300", "--question-tokens", "10", "--concurrency", "3",
                     "--max-tokens", "8", "--requests", "12", "--no-progress",
                     "--config", str(tmp_path / "gate.yaml"))
    assert out.returncode == 0, out.stderr
    health = json.loads(out.stdout)["summary"]["health"]
    assert health["loop_samples"] > 0 and health["loop_lag_p99_ms"] is not None
    assert health["sends"] == 12 - 3  # each of the 3 slots' first send had nothing to wait for
    assert health["sim_lag_mean_ms"] is not None  # the simulator's schedule was read
    assert health["bounds"]["max_loop_lag_p99_ms"] == 100.0
    store = Store(f"sqlite:///{db}")
    first, second = [b for r in runs(store, kind="bench") for b in benchmarks(store, r.id)]
    assert first.summary["health"] == health
    assert tight.returncode == 0, tight.stderr  # a bench decides nothing: a warning only
    assert "gate: warning: client saturated: event-loop lag p99 " in tight.stderr
    assert second.summary["health"]["saturated"] is True
    assert second.summary["health"]["reasons"][0].startswith("event-loop lag p99 ")


def test_bench_ends_with_a_percentile_table_and_writes_every_request(tmp_path: Path) -> None:
    """Issue 16: P50 / P90 / P99 of TTFT, TPOT, ITL, E2EL as vLLM prints them, and
    --requests-out as JSON lines or CSV."""
    import csv

    db = tmp_path / "g.db"
    with running_server(ServerConfig(itl=0.001)) as (url, _srv):
        out = gate(db, *bench_args(url, "--requests", "6", "--warmup", "1",
                                   "--requests-out", str(tmp_path / "req.jsonl")))
        assert out.returncode == 0, out.stderr
        csv_out = gate(db, *bench_args(url, "--requests", "4",
                                       "--requests-out", str(tmp_path / "req.csv")))
        refused = gate(db, *bench_args(url, "--requests-out", str(tmp_path / "req.txt")))
    lines = out.stdout.splitlines()
    head = lines.index("---------------- Percentiles (ms) ----------------")
    assert lines[head + 1].split() == ["Metric", "P50", "P90", "P99"]
    assert [line.split()[0] for line in lines[head + 2:head + 6]] == \
        ["TTFT", "TPOT", "ITL", "E2EL"]
    ttft_p50 = float(lines[head + 2].split()[1])
    assert 0 < ttft_p50 == pytest.approx(float(next(
        line.split()[-1] for line in lines if line.startswith("Median TTFT (ms):"))), abs=0.01)
    rows = [json.loads(line) for line in (tmp_path / "req.jsonl").read_text().splitlines()]
    assert len(rows) == 7 and sum(r["warmup"] for r in rows) == 1
    assert all(r["ttft"] > 0 and r["output_tokens"] and r["error"] is None for r in rows)
    assert csv_out.returncode == 0, csv_out.stderr
    with open(tmp_path / "req.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 4
    assert refused.returncode == 4 and "--requests-out" in refused.stderr
def test_no_tokenize_route_calibrates_from_usage_only_when_asked(tmp_path: Path) -> None:
    """A server with no tokenize route (SGLang, Ollama): estimates by default; with
    --calibrate-with-usage, exact lengths from one-token completions, flagged."""
    db = tmp_path / "g.db"
    with running_server(ServerConfig(tokenizer=False)) as (url, _):
        plain = gate(db, *bench_args(url, "--json", "--no-progress"))
        used = gate(db, *bench_args(url, "--json", "--no-progress", "--calibrate-with-usage"))
    assert plain.returncode == 0 and used.returncode == 0, used.stderr
    assert json.loads(plain.stdout)["calibrated"] is False
    doc = json.loads(used.stdout)
    assert doc["calibrated"] is True
    assert any("usage.prompt_tokens of one-token completions" in n for n in doc["notes"])
    assert "prefix cache may hold them" in used.stderr
    (b,) = benchmarks(Store(f"sqlite:///{db}"), doc["run_id"])
    assert b.params["workload_params"]["tokenizer"] == "usage"
    assert b.params["exact"] is True  # every prompt at doc + question tokens exactly
