"""gates.g4, G4's typed section: the soak's length, windows, load and criteria with the
defaults a reviewer signs. Durations read "90s", "5m", "1.5h", "3d" or seconds; a soak
with too few windows after its baseline to fit a trend is refused naming the key; a
shorter soak or a looser criterion is allowed and makes a PASS need a sign-off, as G3's
weakened settings do; and the section maps onto the judgement's Criteria."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from harness.config.decision import g4_deviations
from harness.config.inventory import Inventory
from harness.config.loader import load_config, parse_config
from harness.config.models import G4, G4Criteria, SiteConfig, parse_duration, span
from harness.config.overrides import parse_overrides
from harness.errors import ConfigError, UsageError
from harness.g4 import criteria as g4_criteria
from harness.g4.plan import criteria, validate, weakened

BASE = """\
site: {name: s}
campaign: {name: c}
model: {name: m}
arms:
  baseline: {start: {command: [serve]}, stop: {command: [stop]}}
  accelerated: {start: {command: [serve, --tier]}, stop: {command: [stop]}}
layouts:
  - {name: TP8, tp: 8, instances: [{host: g, port: 80}]}
  - {name: TP4x2, tp: 4, instances: [{host: g, port: 81}, {host: g, port: 82}]}
"""
INV = Inventory(Path("hosts.ini"), {}, {})


def with_sets(*items: str, text: str = BASE) -> SiteConfig:
    return parse_config(text, "site/gate.yaml", parse_overrides(items))[0]


def g4(extra: str) -> SiteConfig:
    return parse_config(BASE + f"gates: {{g4: {{{extra}}}}}\n", "site/gate.yaml")[0]


def test_the_defaults_are_the_soak_g4_promises() -> None:
    d = parse_config(BASE, "site/gate.yaml")[0].gates.g4
    assert (d.duration, d.window, d.baseline) == (72 * 3600.0, 60.0, 3600.0)
    assert (d.concurrency, d.layout, d.stop_early, d.optional) == (16, None, True, [])
    assert d.criteria == G4Criteria(max_error_rate=0.01, max_ttft_drift_per_24h=0.10,
                                    max_throughput_drift_per_24h=0.10,
                                    max_memory_growth_per_24h=0.02, max_restarts=0,
                                    min_engaged_share=0.5, min_device_share=0.5,
                                    confidence=0.95)
    assert (d.windows, d.windows_after_baseline) == (4320, 4260)
    assert weakened(parse_config(BASE, "site/gate.yaml")[0]) == []


def test_the_criteria_match_the_judgements_defaults() -> None:
    """Same names and meanings as harness/g4/criteria.py: defaults equal, one per field."""
    judged = {f.name: f.default for f in dataclasses.fields(g4_criteria.Criteria)}
    assert judged.pop("baseline_h") == G4().baseline / 3600
    assert judged.pop("duration_h") == G4().duration / 3600
    assert judged == G4Criteria().model_dump()


@pytest.mark.parametrize(("text", "seconds"), [
    ("90s", 90.0), ("5m", 300.0), ("1.5h", 5400.0), ("3d", 259200.0), ("72h", 259200.0),
    (" 2 m ", 120.0), ("45", 45.0), (".5h", 1800.0), (90, 90.0), (2.5, 2.5),
])
def test_durations_take_seconds_or_one_unit(text: str | float, seconds: float) -> None:
    assert parse_duration(text) == seconds
    shown = repr(text) if isinstance(text, str) else text
    cfg = g4(f"duration: {shown}, window: 0.1, baseline: 0.2")
    assert cfg.gates.g4.duration == seconds


@pytest.mark.parametrize("seconds", [90.0, 300.0, 5400.0, 259200.0, 255600.0, 2.5, 3661.0])
def test_span_reads_back(seconds: float) -> None:
    assert parse_duration(span(seconds)) == seconds
    assert span(259200.0) == "72h" and span(5400.0) == "90m" and span(90.0) == "90s"


@pytest.mark.parametrize("bad", ["5 minutes", "1h30m", "-5m", "3w", "5M", "h", "", "yes",
                                 "1e3s"])
def test_a_bad_duration_names_the_key_and_the_accepted_forms(bad: str) -> None:
    with pytest.raises(ConfigError) as err:
        g4(f"window: {bad!r}" if bad != "yes" else "window: yes")
    line = err.value.one_line()
    assert err.value.key == "gates.g4.window", line
    assert line.startswith("site/gate.yaml: gates.g4.window: expected a duration"), line
    assert "90s, 5m, 1.5h, 3d" in line and "\n" not in line and err.value.exit_code == 4


@pytest.mark.parametrize(("extra", "key", "words"), [
    ("window: 0", "gates.g4.window", "outside the allowed range (> 0; default 60s)"),
    ("window: 0s", "gates.g4.window", "outside the allowed range"),
    ("duration: -1", "gates.g4.duration", "outside the allowed range (> 0; default 72h)"),
    ("concurrency: 0", "gates.g4.concurrency", "greater than or equal to 1"),
    ("layout: ''", "gates.g4.layout", "at least 1 character"),
    ("criteria: {confidence: 0.8}", "gates.g4.criteria.confidence", ">= 0.9"),
    ("criteria: {max_error_rate: 2}", "gates.g4.criteria.max_error_rate", "<= 1"),
    ("criteria: {max_restarts: -1}", "gates.g4.criteria.max_restarts", ">= 0"),
    ("criteria: {max_erorr_rate: 0.1}", "gates.g4.criteria.max_erorr_rate",
     "did you mean `max_error_rate`"),
    # the soak must outlast its baseline ...
    ("duration: 1h", "gates.g4.duration", "longer than the baseline (duration 1h, baseline 1h"),
    ("baseline: 73h", "gates.g4.baseline", "longer than the baseline"),
    ("duration: 10m, baseline: 10m", "gates.g4.duration", "longer than the baseline"),
    # ... by at least 3 windows, or no trend can be fitted
    ("duration: 62m", "gates.g4.duration", "at least 3 windows after the baseline, or no "
                                           "trend can be fitted"),
    ("duration: 64m, window: 2m", "gates.g4.duration", "holds 2 windows of 2m"),
    ("baseline: 4318m", "gates.g4.baseline", "holds 2 windows of 60s"),
    ("baseline: 70h, window: 1h", "gates.g4.window", "at least 3 windows"),
    # ... and the baseline holds a window, or the drifts have no level to be shares of
    ("window: 2h", "gates.g4.window", "a window shorter than twice the baseline"),
    ("baseline: 29s", "gates.g4.baseline", "(window 60s, baseline 29s)"),
])
def test_bad_values_name_the_key_in_one_line(extra: str, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        g4(extra)
    line = err.value.one_line()
    assert err.value.key == key, line
    assert line.startswith(f"site/gate.yaml: {key}: ") and words in line, line
    assert "\n" not in line and err.value.exit_code == 4


def test_three_windows_after_the_baseline_are_enough() -> None:
    """A window belongs after the baseline when its middle is (harness/g4/trend.py)."""
    s = g4("duration: 63m, baseline: 1h, window: 1m").gates.g4
    assert s.windows_after_baseline == 3
    s = g4("duration: 100s, baseline: 32s, window: 10s").gates.g4  # windows 3..9: 7
    assert (s.windows, s.windows_after_baseline) == (10, 7)


def test_the_loader_reads_g4_settings_from_the_file_and_from_set(tmp_path: Path) -> None:
    """gates.g4.duration and the rest were refused as retired once; they are settings."""
    (tmp_path / "gate.yaml").write_text(BASE + "gates: {g4: {duration: 3d, concurrency: 8}}\n")
    loaded = load_config(tmp_path / "gate.yaml", ["gates.g4.duration=90s",
                                                   "gates.g4.window=5s",
                                                   "gates.g4.baseline=30s",
                                                   "gates.g4.criteria.max_restarts=1"])
    s = loaded.config.gates.g4
    assert (s.duration, s.window, s.baseline, s.concurrency) == (90.0, 5.0, 30.0, 8)
    assert s.criteria.max_restarts == 1 and s.windows_after_baseline == 12
    assert loaded.overrides[0] == "gates.g4.duration=90s"


def test_a_set_that_leaves_no_trend_is_blamed_on_the_set() -> None:
    with pytest.raises(ConfigError) as err:
        with_sets("gates.g4.duration=90s")  # the default baseline is an hour
    line = err.value.one_line()
    assert err.value.key == "--set gates.g4.duration" and err.value.file is None, line
    assert "longer than the baseline (duration 90s, baseline 1h" in line
    with pytest.raises(ConfigError) as err:
        with_sets("gates.g4.window=1d")
    assert err.value.key == "--set gates.g4.window", err.value.one_line()


def deviated(cfg: SiteConfig) -> dict[str, Any]:
    return {d.key: d for d in g4_deviations(cfg.model_dump(mode="json"))}


def test_weakened_lists_exactly_the_loosened_settings() -> None:
    cfg = g4("duration: 71h, window: 30s, baseline: 2h, concurrency: 4, stop_early: false, "
             "criteria: {max_error_rate: 0.02, max_ttft_drift_per_24h: 0.2, "
             "max_throughput_drift_per_24h: 0.15, max_memory_growth_per_24h: 0.05, "
             "max_restarts: 1, min_engaged_share: 0.4, min_device_share: 0.3, "
             "confidence: 0.9}")
    lines = weakened(cfg)
    keys = [line.split(" = ")[0] for line in lines]
    c = "gates.g4.criteria."
    assert keys == ["gates.g4.duration", *(c + k for k in (
        "max_error_rate", "max_ttft_drift_per_24h", "max_throughput_drift_per_24h",
        "max_memory_growth_per_24h", "max_restarts", "min_engaged_share",
        "min_device_share", "confidence"))]
    assert lines[0] == ("gates.g4.duration = 71h (default 72h) "
                        "(weaker: needs a reviewer's sign-off)")
    assert f"{c}max_restarts = 1 (default 0) (weaker" in lines[5]
    found = deviated(cfg)  # the window and the baseline are shown, weakening nothing
    assert not found["gates.g4.window"].weakened and found["gates.g4.window"].value == "30s"
    assert not found["gates.g4.baseline"].weakened


@pytest.mark.parametrize("extra", [
    "duration: 72h", "duration: 3d", "duration: 96h", "window: 10s", "concurrency: 64",
    "stop_early: false", "layout: TP8",
    "criteria: {max_error_rate: 0.001, max_ttft_drift_per_24h: 0.05, "
    "max_throughput_drift_per_24h: 0, max_memory_growth_per_24h: 0.01, max_restarts: 0, "
    "min_engaged_share: 0.8, min_device_share: 1, confidence: 0.99}",
])
def test_stricter_or_equal_settings_weaken_nothing(extra: str) -> None:
    assert weakened(g4(extra)) == []


@pytest.mark.parametrize(("extra", "key"), [
    ("duration: 71h", "gates.g4.duration"),
    ("duration: 90s, window: 5s, baseline: 30s", "gates.g4.duration"),
    ("criteria: {max_error_rate: 0.0101}", "gates.g4.criteria.max_error_rate"),
    ("criteria: {min_device_share: 0.49}", "gates.g4.criteria.min_device_share"),
    ("criteria: {confidence: 0.94}", "gates.g4.criteria.confidence"),
])
def test_one_loosened_setting_is_one_weakened_line(extra: str, key: str) -> None:
    lines = weakened(g4(extra))
    assert len(lines) == 1 and lines[0].startswith(key + " = "), lines


def test_g4_settings_do_not_weaken_g3() -> None:
    from harness.config.decision import weakened as g3_weakened

    cfg = g4("duration: 1.5h, window: 1m, criteria: {max_restarts: 3}")
    assert len(weakened(cfg)) == 2
    assert g3_weakened(cfg.model_dump(mode="json")) == []


def test_deviations_read_durations_written_as_text() -> None:
    """A stored or hand-written config dict may carry "71h" rather than seconds."""
    found = g4_deviations({"gates": {"g4": {"duration": "71h", "window": "nonsense"}}})
    assert [(d.key, d.value, d.default, d.weakened) for d in found] == [
        ("gates.g4.duration", "71h", "72h", True)]


def test_criteria_maps_the_section_onto_the_judgement() -> None:
    cfg = g4("baseline: 90m, criteria: {max_error_rate: 0.005, max_ttft_drift_per_24h: 0.2, "
             "max_throughput_drift_per_24h: 0.3, max_memory_growth_per_24h: 0.04, "
             "max_restarts: 2, min_engaged_share: 0.6, min_device_share: 0.7, "
             "confidence: 0.99}")
    assert criteria(cfg) == g4_criteria.Criteria(
        max_error_rate=0.005, max_ttft_drift_per_24h=0.2, max_throughput_drift_per_24h=0.3,
        max_memory_growth_per_24h=0.04, max_restarts=2, min_engaged_share=0.6,
        min_device_share=0.7, baseline_h=1.5, confidence=0.99)
    assert criteria(parse_config(BASE, "gate.yaml")[0]) == g4_criteria.Criteria()


def test_validate_takes_a_declared_layout_and_refuses_another() -> None:
    validate(g4("layout: TP4x2"), INV)
    validate(g4(""), INV)  # None: the first layout
    with pytest.raises(UsageError) as err:
        validate(g4("layout: TP4x3"), INV)
    assert err.value.key == "gates.g4.layout"
    assert "'TP4x3' names no layout" in err.value.message
    assert err.value.hint == "did you mean `TP4x2`?"
    with pytest.raises(UsageError) as err:
        validate(g4("layout: big"), INV)
    assert err.value.hint == "layouts: TP8, TP4x2"
