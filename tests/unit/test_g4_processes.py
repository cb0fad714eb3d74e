"""The restarts criterion holds the larger of two counts: the engine's own (its /metrics)
and the gate's (a new process on the port), never their sum; the gate's changes land in
the window they were read in."""

from __future__ import annotations

from harness.g4.criteria import Criteria, restarts
from harness.g4.processes import changes_per_window
from harness.g4.windows import Evidence, Window
from harness.verdict import Verdict


def _windows(metrics: list[int], processes: list[int]) -> list[Window]:
    return [Window(index=i, start_s=10.0 * i, length_s=10.0, requests=10,
                   evidence=Evidence(engine_restarts=m, engine_changes=p))
            for i, (m, p) in enumerate(zip(metrics, processes, strict=True))]


def test_a_restart_the_engines_metrics_hide_is_counted_from_its_new_process() -> None:
    j = restarts(_windows([0, 0, 0, 0], [0, 0, 1, 0]), Criteria())
    assert (j.verdict, j.window, j.text) == (
        Verdict.STOP_LOSS, 2, "window 3: the engine restarted (1 > 0)")


def test_one_restart_seen_both_ways_a_window_apart_counts_once() -> None:
    j = restarts(_windows([0, 1, 0, 0], [0, 0, 1, 0]), Criteria(max_restarts=1))
    assert (j.verdict, j.text) == (Verdict.PASS, "1 engine restarts")


def test_changes_are_placed_in_the_window_their_reading_fell_in() -> None:
    series = {"gpu1:8000": [(100.0, 0.0), (125.0, 1.0), (190.0, 1.0), (260.0, 2.0)],
              "gpu1:8001": [(100.0, 0.0), (131.0, 1.0)]}
    assert changes_per_window(series, started_at=100.0, window_s=10.0, windows=10) == [
        0, 0, 1, 1, 0, 0, 0, 0, 0, 1]  # 260 s is past the last window: counted in it
