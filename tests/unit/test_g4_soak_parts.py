"""The soak's pure parts: the devices' reads attributed to windows from the gate's own
samples (interpolated, a gap spread evenly, an uncovered window unsampled), the engines'
counters at a window's edges (hits, RSS, a restart seen even across a failed scrape), the
GPU cache size from vLLM's cache_config_info, the spool's whole-file protocol, and a
drift whose interval reaches across the limit, which cannot PASS."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.g4.criteria import Criteria, drifts
from harness.g4.devices import at, per_window, summed
from harness.g4.spool import SoakSpec, SoakState, Spool
from harness.loadgen.records import Endpoint, RequestSpec
from harness.loadgen.soak_counters import gpu_cache_tokens, window_counters
from harness.loadgen.soak_windows import Window
from harness.probes.prometheus import parse_metrics
from harness.verdict import Verdict


def test_device_reads_are_the_counter_rise_between_a_windows_edges() -> None:
    samples = [(100.0, 0.0), (101.0, 10.0), (102.0, 30.0), (106.0, 70.0)]
    assert at(samples, 101.5) == pytest.approx(20.0)
    assert at(samples, 99.0) is None and at(samples, 107.0) is None
    # windows of 1 s from 100: the last three lie in a gap the viewer was away for, and
    # share its 40 bytes evenly; window 6 starts inside the samples but ends after them
    got = per_window(samples, 100.0, 1.0, 7)
    assert got[:2] == [10.0, 20.0]
    assert got[2:6] == pytest.approx([10.0, 10.0, 10.0, 10.0])
    assert got[6] is None
    # a counter that went down (the host rebooted) says nothing of its window
    assert per_window([(0.0, 50.0), (1.0, 5.0)], 0.0, 1.0, 1) == [None]
    # two hosts sum; a window one host did not cover is unsampled; nothing declared: None
    both = summed({"a": [(0.0, 0.0), (2.0, 20.0)], "b": [(0.0, 0.0), (1.0, 5.0)]}, 0.0, 1.0, 2)
    assert both == [15.0, None]
    assert summed({}, 0.0, 1.0, 2) is None


def _metrics(hits: float, rss: float, started: float) -> str:
    return ("# TYPE vllm:external_prefix_cache_hits counter\n"
            f"vllm:external_prefix_cache_hits_total {hits}\n"
            f"process_resident_memory_bytes {rss}\nprocess_start_time_seconds {started}\n")


def test_a_windows_engine_counters_and_a_restart_across_a_failed_scrape() -> None:
    a0, a1 = parse_metrics(_metrics(100, 5e9, 1000.0)), parse_metrics(_metrics(400, 6e9, 1000.0))
    got = window_counters([a0], [a1])
    assert (got["external_hit_tokens"], got["engine_rss_bytes"], got["engine_restarts"]) \
        == (300.0, 6e9, 0)
    # the engine restarted while /metrics was down at the window's start: its last good
    # scrape says so once it answers again
    again = parse_metrics(_metrics(50, 4e9, 2000.0))
    down = window_counters([None], [again], ["URLError"], last_good=[a1])
    assert down["engine_restarts"] == 1 and down["external_hit_tokens"] is None
    assert down["engines"][0]["sampled"] is False and down["engines"][0]["error"] == "URLError"
    # two instances: one unsampled leaves the window's evidence unsampled
    half = window_counters([a0, None], [a1, a1])
    assert half["external_hit_tokens"] is None and half["engine_rss_bytes"] is None


def test_the_gpu_cache_size_is_read_from_vllms_cache_config_info() -> None:
    line = 'vllm:cache_config_info{block_size="16",num_gpu_blocks="1000",%s} 1.0\n'
    assert gpu_cache_tokens(parse_metrics(line % 'kv_cache_size_tokens="16000"')) == 16000
    assert gpu_cache_tokens(parse_metrics(line % 'engine="0"')) == 16000
    assert gpu_cache_tokens(parse_metrics(_metrics(1, 1, 1))) is None


def test_the_spool_is_read_only_in_whole_files(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "soak")
    spec = SoakSpec(endpoints=(Endpoint("http://h:1", "m", 0),),
                    documents=(RequestSpec("doc", 8, 3, 100),), concurrency=2,
                    duration_s=10.0, window_s=3.0, run_uid="u1")
    spool.create(spec)
    assert spool.spec() == spec and spec.windows == 3 and spool.state() is None
    spool.write_window(1, {"index": 1})
    (tmp_path / "soak" / "windows" / ".000002.json.77.tmp").write_text("{")  # mid-write
    assert spool.window_indices() == [1] and spool.read_window(1) == {"index": 1}
    spool.set_state(SoakState("running", 42, 1.0, 2.0, windows_written=1))
    state = spool.state()
    assert state is not None and (state.pid, state.ended) == (42, False)
    assert spool.stop_requested() is None
    spool.request_stop("gate runs abort")
    assert spool.stop_requested() == "gate runs abort"


def test_a_drift_whose_interval_reaches_across_the_limit_cannot_pass() -> None:
    """A short, noisy soak: the point estimate within 10 %, the interval past it either
    way: INCONCLUSIVE, never PASS and never STOP-LOSS."""
    noise = [0.0, 0.3, -0.3, 0.25, -0.2, 0.3, -0.3, 0.2]
    windows = [Window(index=i, start_s=i * 600.0, length_s=600.0, requests=100,
                      ttft_p50_s=1.0 + n, output_tokens=6400) for i, n in enumerate(
                          [0.0] * 6 + noise)]
    ttft = drifts(windows, Criteria())[0]
    assert ttft.criterion == "ttft_drift" and ttft.verdict is Verdict.INCONCLUSIVE, ttft.text
    assert "cannot tell" in ttft.text and ttft.reason.code == "g4.drift_undecided"


def test_how_the_soak_ended_is_said_in_the_reports_language() -> None:
    from harness.reasons import Reason
    from harness.report.i18n import translator
    from harness.report.reasons import say

    why = Reason("g4.soak_measured", {"n": 12, "of": 12, "ended": "done"})
    assert say(translator("en"), why) == "12 of 12 windows measured; the soak ran to its end"
    assert say(translator("zh"), why).endswith("浸泡测试已运行至结束")
