"""Config validation: every bad input is one ConfigError naming the file and key path."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.loader import key_path, load_config, parse_config
from harness.errors import ConfigError

BASE = """\
site: {name: s}
campaign: {name: c}
model: {name: m}
"""


def test_minimal_config_gets_seed_defaults() -> None:
    config, _ = parse_config(BASE, "gate.yaml")
    g3 = config.gates.g3
    assert (g3.thresholds.ttft_p50_drop, g3.thresholds.throughput_gain,
            g3.thresholds.band_top) == (0.25, 0.29, 0.40)
    assert g3.tiers == [4, 8, 16]
    assert config.model.kv_bytes_per_token == 64 * 8 * 128 * 2 * 2  # Qwen2.5-32B: 256 KiB


def test_config_is_frozen() -> None:
    config, _ = parse_config(BASE, "gate.yaml")
    with pytest.raises(Exception, match="frozen"):
        config.site.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("extra", "key", "words"),
    [
        ("layouts:\n  - {name: TP8, tp: 8, instances: [{host: g, port: 80}]}\n"
         "  - {name: TP4x2, tp: 4, instances: [{host: g, port: 1}, {host: g, port: 'x'}]}\n",
         "layouts[1].instances[1].port", "found \"x\""),
        ("layouts:\n  - {name: TP8, tp: 8, instances: [{host: g, port: 80, colour: red}]}\n",
         "layouts[0].instances[0].colour", "unknown key"),
        ("gates: {g3: {thresholds: {ttft_p50_drop: 2}}}\n", "gates.g3.thresholds.ttft_p50_drop",
         "outside the allowed range"),
        ("gates: {g3: {tierz: [1]}}\n", "gates.g3.tierz", "unknown key"),
        ("gates: {g3: {repetitions: {min: 5, max: 4}}}\n", "gates.g3.repetitions", "max"),
    ],
)
def test_bad_values_name_the_key_path(extra: str, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(BASE + extra, "site/gate.yaml")
    assert err.value.key == key
    assert words in err.value.message
    assert err.value.one_line().startswith(f"site/gate.yaml: {key}: ")
    assert "\n" not in err.value.one_line()


def test_missing_required_key() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config("site: {name: s}\ncampaign: {name: c}\n", "gate.yaml")
    assert err.value.key == "model"
    assert "missing" in err.value.message


def test_yaml_syntax_error_gives_line_and_column() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(BASE + "gates: {g3: [\n", "gate.yaml")
    assert "line" in err.value.message and "column" in err.value.message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found") as err:
        load_config(tmp_path / "nope.yaml")
    assert err.value.exit_code == 4


def test_key_path_drops_union_member_names() -> None:
    assert key_path(("arms", "baseline", "start", "PlaybookAction", "vars")) == \
        "arms.baseline.start.vars"


def test_snapshot_hash_is_stable(tmp_path: Path) -> None:
    p = tmp_path / "gate.yaml"
    p.write_text(BASE)
    assert load_config(p).digest() == load_config(p).digest()
    p.write_text(BASE + "workload: {seed: 8}\n")
    first = load_config(p).digest()
    p.write_text(BASE)
    assert load_config(p).digest() != first


ARMS = """\
arms:
  baseline: {start: {command: [serve, "{port}"]}, stop: {command: [stop]}}
  accelerated: {start: {command: [serve, "{port}", --tier]}, stop: {command: [stop]}}
layouts:
  - {name: TP8, tp: 8, instances: [{host: g, port: 80}]}
"""


@pytest.mark.parametrize(("extra", "key", "words"), [
    # The review's route 4: loosening the failed-request guard is refused, not weakened.
    ("gates: {g3: {evidence: {max_failed_share: 0.5}}}\n", "gates.g3.evidence.max_failed_share",
     "<= 0.05"),
    ("gates: {g3: {thresholds: {throughput_gain: 0.2}}}\n",
     "gates.g3.thresholds.throughput_gain", ">= 0.29"),
    ("gates: {g3: {thresholds: {band_top: .inf}}}\n", "gates.g3.thresholds.band_top",
     "finite"),
    ("gates: {g3: {thresholds: {band_top: 1.5}}}\n", "gates.g3.thresholds.band_top", "<= 1"),
    ("gates: {g3: {confidence: 0.8}}\n", "gates.g3.confidence", ">= 0.9"),
    ("gates: {g3: {repetitions: {min: 2}}}\n", "gates.g3.repetitions.min", ">= 3"),
    ("gates: {g3: {evidence: {min_external_hit_share: 0.1}}}\n",
     "gates.g3.evidence.min_external_hit_share", ">= 0.3"),
    ("gates: {g3: {drop_caches_on: []}}\n", "gates.g3.drop_caches_on", "needs a reason"),
    (ARMS + "gates: {g3: {criteria: {TP4: [throughput_gain]}}}\n", "gates.g3.criteria.TP4",
     "names no layout"),
    (ARMS + "gates: {g3: {criteria: {TP8: []}}}\n", "gates.g3.criteria.TP8", "one or both"),
    (ARMS.replace('"{port}", --tier', '"{prot}", --tier'), "arms.accelerated.start.command[1]",
     "unknown placeholder {prot}"),
    (ARMS.replace("baseline: {start:", "baseline: {differs_by: [y], start:"),
     "arms.baseline.differs_by", "accelerated arm only"),
])
def test_decision_settings_past_their_bounds_are_refused(extra: str, key: str,
                                                        words: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(BASE + extra, "site/gate.yaml")
    assert err.value.key == key, err.value.one_line()
    assert words in err.value.one_line()
    assert err.value.exit_code == 4


def test_settings_weaker_than_the_defaults_are_listed_and_flagged() -> None:
    from harness.config.decision import deviations

    cfg, _ = parse_config(BASE + ARMS + (
        "gates: {g3: {confidence: 0.92, bootstrap: 4000, drop_caches_on: [],\n"
        "             drop_caches_reason: no sudo on the storage appliance,\n"
        "             criteria: {TP8: [throughput_gain]},\n"
        "             thresholds: {ttft_p50_drop: 0.3}}}\n"), "site/gate.yaml")
    found = {d.key: d for d in deviations(cfg.model_dump(mode="json"))}
    assert found["gates.g3.confidence"].weakened
    assert not found["gates.g3.bootstrap"].weakened  # more resamples weaken nothing
    assert not found["gates.g3.thresholds.ttft_p50_drop"].weakened  # stricter
    assert found["gates.g3.drop_caches_on"].weakened
    assert "no sudo on the storage appliance" in found["gates.g3.drop_caches_on"].why
    assert found["gates.g3.criteria.TP8"].weakened
    assert "ttft_p50_drop" in found["gates.g3.criteria.TP8"].why
    defaults, _ = parse_config(BASE, "site/gate.yaml")
    assert deviations(defaults.model_dump(mode="json")) == []
