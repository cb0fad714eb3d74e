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
         "expected"),
        ("gates: {g3: {tierz: [1]}}\n", "gates.g3.tierz", "unknown key"),
        ("gates: {g3: {repetitions: {min: 5, max: 2}}}\n", "gates.g3.repetitions", "max"),
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
