"""G3's storage rates (harness/report/sections/g3_evidence.py) span at least a second of one
source's samples in one phase: a device, and the simulated tier flushing every 0.25 s,
count in bursts, and a sampler's last read can come milliseconds after the one before, so
rates between consecutive samples read 0 and 600 GB/s where the tier did 10. A simulated
run's rates are the model's (divided by the speed). Stored in a real SQLite store and read
back as the report reads it."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_support import fill

from harness.report.frames import load_run
from harness.report.sections.g3_evidence import MIN_RATE_S, storage_rates
from harness.store import writer
from harness.store.db import Store

GB = 1e9


def _flushed(start: float, gbps: float, seconds: float, every: float = 0.25,
             sampled: float = 0.1) -> list[tuple[float, float]]:
    """(at, cumulative bytes) of a counter that grows by `gbps` but is flushed every
    `every` s, read every `sampled` s, the last read 40 ms after the one before."""
    out, at = [], start
    while at <= start + seconds:
        flushed = int((at - start) / every) * every
        out.append((at, flushed * gbps * GB))
        at += sampled
    out.append((out[-1][0] + 0.04, (seconds // every) * every * gbps * GB))
    return out


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(f"sqlite:///{tmp_path / 'gate.db'}")


def _run(store: Store, samples: dict[str, list[tuple[float, float]]], *, simulated: bool,
         duration: float) -> int:
    rid = fill.new_run(store, "G3", simulated=simulated)
    bid = writer.start_benchmark(store, rid, arm="accelerated", layout="TP8", tier=16)
    writer.finish_benchmark(store, bid, status="FINISHED", duration=duration, summary={})
    writer.insert_series(store, rid, [
        {"source": source, "metric": "storage_read_bytes", "labels": {}, "at": at,
         "value": value} for source, points in samples.items() for at, value in points],
        benchmark_id=bid)
    return rid


def test_rates_span_a_second_and_read_the_bandwidth_not_the_flushes(store: Store) -> None:
    rid = _run(store, {"st1": _flushed(1000.0, 300.0, 3.3)}, simulated=False, duration=3.4)
    rates = storage_rates(load_run(store, rid))
    assert len(rates) == 3  # 3.34 s of samples: 1 s, 1 s, and the last 1.34 s
    assert (rates["seconds"] >= MIN_RATE_S - 1e-9).all()
    # every rate within a flush (0.25 s of 300 GB/s) of 300 GB/s: no 0, no 750
    assert rates["gbps"].between(300 * (1 - 0.25 / 1.0) - 1, 300 * (1 + 0.25 / 1.0) + 1).all()
    total = float((rates["gbps"] * rates["seconds"]).sum())
    assert total == pytest.approx(3.25 * 300, rel=1e-6)  # every flushed byte counted once


def test_a_phase_shorter_than_a_second_is_its_mean_and_a_reset_is_dropped(
        store: Store) -> None:
    short = [(10.0, 0.0), (10.3, 0.0), (10.6, 2 * GB)]
    reset = [(20.0, 5 * GB), (20.5, 6 * GB), (20.6, 0.0), (21.1, 1 * GB), (21.7, 2 * GB)]
    rid = _run(store, {"st1": short, "st2": reset}, simulated=False, duration=30.0)
    rates = storage_rates(load_run(store, rid)).set_index("source")
    assert rates.loc["st1", "seconds"] == pytest.approx(0.6)
    assert rates.loc["st1", "gbps"] == pytest.approx(2 / 0.6)
    # 20.5 -> 20.6 went down: that step counts neither bytes nor time
    assert rates.loc["st2", "seconds"] == pytest.approx(0.5 + 0.5 + 0.6)
    assert rates.loc["st2", "gbps"] == pytest.approx(3 / 1.6)


def test_a_simulated_runs_rates_are_the_models(store: Store) -> None:
    rid = _run(store, {"st1": _flushed(1000.0, 300.0, 2.2)}, simulated=True, duration=2.3)
    frames = load_run(store, rid)
    wall = storage_rates(frames)
    model = storage_rates(frames, 30.0)
    assert model["gbps"].to_numpy() == pytest.approx(wall["gbps"].to_numpy() / 30.0)
    assert model["gbps"].max() < 13.0  # 300 GB/s of wall time at x30: 10 modelled
