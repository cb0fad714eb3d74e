"""The restarts criterion holds the larger of two counts: the engine's own (its /metrics)
and the gate's (a new process on the port), never their sum; the gate's changes land in
the window they were read in."""

from __future__ import annotations

from harness.g4.criteria import Criteria, restarts
from harness.g4.processes import changes_per_window
from harness.loadgen.soak_windows import Evidence, Window
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


def test_a_sampling_gaps_windows_are_judged_engaged_together() -> None:
    """Reads spread evenly over a gap, hits the engine's own: window by window, a gap
    window with more hits than average would look not engaged; as one, it is."""
    from harness.g4.criteria import engaged
    from harness.g4.devices import spread

    samples = {"st1": [(100.0, 0.0), (102.5, 10.0), (105.0, 20.0), (160.0, 240.0),
                       (162.5, 250.0)]}
    gaps = spread(samples, started_at=100.0, window_s=5.0, windows=12, max_gap_s=10.0)
    assert gaps == [None] + [1] * 11  # 105 s to 160 s: windows 1 to 11 share its reads
    hits = [10.0, 5.0, 50.0, 5.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0]
    ws = [Window(index=i, start_s=5.0 * i, length_s=5.0, requests=10, evidence=Evidence(
        external_hit_tokens=h, device_read_bytes=20.0, spread_from=g))
        for i, (h, g) in enumerate(zip(hits, gaps, strict=True))]
    c = Criteria(baseline_h=5.0 / 3600, min_engaged_share=0.1)
    assert engaged(ws, c, kv_bytes_per_token=1.0).verdict is Verdict.PASS
    alone = [Window(index=w.index, start_s=w.start_s, length_s=w.length_s, requests=10,
                    evidence=Evidence(external_hit_tokens=w.evidence.external_hit_tokens,
                                      device_read_bytes=20.0)) for w in ws]
    j = engaged(alone, c, kv_bytes_per_token=1.0)  # the same data, window by window
    assert (j.verdict, j.window) == (Verdict.STOP_LOSS, 2)


def test_a_gap_that_did_not_read_enough_is_named_as_its_range() -> None:
    from harness.g4.criteria import engaged

    ws = [Window(index=i, start_s=5.0 * i, length_s=5.0, requests=10, evidence=Evidence(
        external_hit_tokens=10.0, device_read_bytes=20.0 if i < 2 else 2.0,
        spread_from=None if i < 2 else 2)) for i in range(6)]
    j = engaged(ws, Criteria(baseline_h=10.0 / 3600), kv_bytes_per_token=1.0)
    assert j.verdict is Verdict.STOP_LOSS and j.window == 2
    assert j.text.startswith("accelerator not engaged in window 3-6: the devices read ")


def test_a_failure_read_again_is_said_once_until_its_reason_changes() -> None:
    from harness.g4.said import SaidOnce

    said = SaidOnce()
    told = [said.new(k, why) for k, why in (("h2", "timeout"), ("h2", "timeout"),
                                            ("h1", "timeout"), ("h2", "refused"),
                                            ("h2", "refused"))]
    assert told == [True, False, True, True, False]
