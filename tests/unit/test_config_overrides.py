"""`--set dotted.key=VALUE`: parsed as YAML, applied before validation, validated like the
file (bounds and cross-key checks included), blamed on the --set when it is the cause,
and part of the digest a resume compares."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from harness.config.loader import load_config, parse_config
from harness.config.overrides import (
    Override,
    apply_overrides,
    blame,
    parse_override,
    parse_overrides,
)
from harness.errors import ConfigError

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


def with_sets(*items: str, text: str = BASE) -> Any:
    return parse_config(text, "site/gate.yaml", parse_overrides(items))[0]


@pytest.mark.parametrize(("item", "path", "value"), [
    ("gates.g3.tiers=[16]", ("gates", "g3", "tiers"), [16]),
    ("gates.g3.tiers=[4, 8]", ("gates", "g3", "tiers"), [4, 8]),
    ("report.lang=zh", ("report", "lang"), "zh"),
    ("gates.g3.confidence=0.97", ("gates", "g3", "confidence"), 0.97),
    ("gates.g3.engine_process_check=false", ("gates", "g3", "engine_process_check"), False),
    ("site.name='16'", ("site", "name"), "16"),
    ("site.name=a=b", ("site", "name"), "a=b"),  # only the first '=' splits
    ("report.logo=", ("report", "logo"), None),
    ("gates.g3.repetitions={min: 4, max: 6}", ("gates", "g3", "repetitions"),
     {"min": 4, "max": 6}),
    ("layouts[1].instances[0].port=90", ("layouts", 1, "instances", 0, "port"), 90),
    (" workload.seed = 9", ("workload", "seed"), 9),
])
def test_values_are_yaml_and_keys_are_dotted_paths(item: str, path: tuple[Any, ...],
                                                    value: Any) -> None:
    o = parse_override(item)
    assert (o.path, o.value) == (path, value)
    assert parse_override(o.text) == o  # the normalised text means the same override


@pytest.mark.parametrize(("item", "text"), [
    ("gates.g3.tiers=[ 16 ]", "gates.g3.tiers=[16]"),
    ("gates.g3.tiers=[4,8]", "gates.g3.tiers=[4, 8]"),
    ("report.lang=zh", "report.lang=zh"),
    ("report.lang='zh'", "report.lang=zh"),
    ("site.name='16'", 'site.name="16"'),
    ("gates.g3.repetitions={max: 6, min: 4}", 'gates.g3.repetitions={"max": 6, "min": 4}'),
    ("layouts[0].tp=8", "layouts[0].tp=8"),
])
def test_normalised_text(item: str, text: str) -> None:
    assert parse_override(item).text == text


@pytest.mark.parametrize(("item", "words"), [
    ("foo", "no '='"),
    ("=3", "no key"),
    ("a..b=1", "empty key segment"),
    ("gates.g3.tiers[x]=1", "bad key segment"),
    ("gates.$g3=1", "bad key segment"),
])
def test_malformed_items_are_refused(item: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_override(item)
    line = err.value.one_line()
    assert line.startswith("--set: ") and words in line and "dotted.key=VALUE" in line
    assert err.value.exit_code == 4


def test_a_value_that_is_not_yaml_names_the_key() -> None:
    with pytest.raises(ConfigError) as err:
        parse_override("site.name=[unclosed")
    assert err.value.key == "--set site.name" and "not YAML" in err.value.message


def test_the_same_key_twice_is_refused() -> None:
    with pytest.raises(ConfigError, match="given twice") as err:
        parse_overrides(["gates.g3.tiers=[4]", "gates.g3.tiers = [8]"])
    assert err.value.key == "--set gates.g3.tiers"


def test_apply_creates_mappings_and_leaves_the_file_mapping_alone() -> None:
    raw: dict[str, Any] = {"gates": {"g3": None}, "layouts": [{"tp": 8}]}
    out = apply_overrides(raw, parse_overrides(["gates.g3.evidence.devices=[nvme0n1]",
                                                "layouts[0].tp=4"]))
    assert out == {"gates": {"g3": {"evidence": {"devices": ["nvme0n1"]}}},
                   "layouts": [{"tp": 4}]}
    assert raw == {"gates": {"g3": None}, "layouts": [{"tp": 8}]}


@pytest.mark.parametrize(("item", "words"), [
    ("layouts[2].tp=4", "layouts has 1 item; [2] is not one of them"),
    ("layouts.tp=4", "layouts is a list, not a mapping"),
    ("site.name.first=x", "site.name is the value 's', not a mapping"),
    ("site[0]=x", "site is not a list"),
])
def test_apply_names_a_step_that_cannot_be_taken(item: str, words: str) -> None:
    raw = {"site": {"name": "s"}, "layouts": [{"tp": 8}]}
    with pytest.raises(ConfigError) as err:
        apply_overrides(raw, [parse_override(item)])
    assert words in err.value.message
    assert err.value.key == f"--set {item.split('=')[0]}"


def test_overrides_take_effect() -> None:
    cfg = with_sets("gates.g3.tiers=[16]", "report.lang=zh", "gates.g3.confidence=0.97",
                    "layouts[1].instances[1].port=9000", "gates.g3.criteria.TP8=[throughput_gain]")
    assert cfg.gates.g3.tiers == [16]
    assert cfg.report.lang == "zh"
    assert cfg.gates.g3.confidence == 0.97
    assert cfg.layout("TP4x2").instances[1].port == 9000
    assert cfg.gates.g3.criteria == {"TP8": ["throughput_gain"]}


@pytest.mark.parametrize(("item", "key", "words"), [
    # the integrity bounds hold for a --set exactly as for the file
    ("gates.g3.evidence.max_failed_share=0.5", "--set gates.g3.evidence.max_failed_share",
     "<= 0.05"),
    ("gates.g3.thresholds.throughput_gain=0.2", "--set gates.g3.thresholds.throughput_gain",
     ">= 0.29"),
    ("gates.g3.confidence=0.8", "--set gates.g3.confidence", ">= 0.9"),
    ("gates.g3.thresholds.band_top=.inf", "--set gates.g3.thresholds.band_top", "finite"),
    ("gates.g3.tiers=four", "--set gates.g3.tiers", 'found "four"'),
    # a model-level rule around the key: named with where it failed
    ("gates.g3.thresholds.band_top=0.29", "--set gates.g3.thresholds.band_top",
     "gates.g3.thresholds: "),
    # unknown keys, with a suggestion when one is close
    ("gates.g3.tierz=[4]", "--set gates.g3.tierz", "unknown key (did you mean `tiers`?)"),
    ("gates.g3.evidence.max_faild_share=0.01", "--set gates.g3.evidence.max_faild_share",
     "did you mean `max_failed_share`"),
    ("gates.g9.x=1", "--set gates.g9.x", "gates.g9: unknown key"),
    ("gates.g4.window=0", "--set gates.g4.window", "outside the allowed range"),
    # the cross-key checks
    ("gates.g3.criteria.TP9=[throughput_gain]", "--set gates.g3.criteria.TP9",
     "names no layout"),
    ("gates.g3.drop_caches_on=[]", "--set gates.g3.drop_caches_on", "needs a reason"),
    ("arms.accelerated.start.command=[serve, '{prot}']", "--set arms.accelerated.start.command",
     "arms.accelerated.start.command[1]: unknown placeholder {prot}"),
])
def test_a_bad_override_is_refused_naming_the_set(item: str, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        with_sets("report.lang=en", item)
    assert err.value.key == key, err.value.one_line()
    assert err.value.file is None  # the file is fine; the --set is not
    line = err.value.one_line()
    assert line.startswith(key + ": ") and words in line and "\n" not in line
    assert err.value.exit_code == 4


def test_a_problem_of_the_file_stays_the_files() -> None:
    bad = BASE + "gates: {g3: {confidence: 0.5}}\n"
    with pytest.raises(ConfigError) as err:
        with_sets("gates.g3.tiers=[16]", text=bad)
    assert (err.value.file, err.value.key) == ("site/gate.yaml", "gates.g3.confidence")
    bad = BASE + "gates: {g3: {drop_caches_on: []}}\n"  # a cross-key check of the file
    with pytest.raises(ConfigError) as err:
        with_sets("gates.g3.drop_caches_reason=''", text=bad)
    assert (err.value.file, err.value.key) == ("site/gate.yaml", "gates.g3.drop_caches_on")


def test_an_override_may_mend_the_file() -> None:
    bad = BASE + "gates: {g3: {confidence: 0.5}}\n"
    assert with_sets("gates.g3.confidence=0.99", text=bad).gates.g3.confidence == 0.99


def test_blame_picks_the_override_on_the_path() -> None:
    a, b = parse_override("gates.g3.tiers=[4]"), parse_override("gates.g3.thresholds={}")
    assert blame(("gates", "g3", "thresholds", "band_top"), [a, b]) == b
    assert blame(("gates", "g3"), [a, b]) == b  # the last one inside the failing mapping
    assert blame(("model", "name"), [a, b]) is None
    assert isinstance(a, Override) and a.flag == "--set gates.g3.tiers"


def test_digest_covers_the_overrides(tmp_path: Path) -> None:
    p = tmp_path / "gate.yaml"
    p.write_text(BASE)
    plain = load_config(p)
    # No --set: the digest is the snapshot's alone, so stored runs still resume.
    assert plain.digest() == hashlib.sha256(plain.snapshot().encode()).hexdigest()
    assert plain.overrides == ()
    # A --set that sets what the file already says still counts: resume as started.
    same = load_config(p, ["gates.g3.tiers=[4, 8, 16]"])
    assert same.snapshot() == plain.snapshot() and same.digest() != plain.digest()
    assert same.overrides == ("gates.g3.tiers=[4, 8, 16]",)
    # The same overrides written differently are one digest; another value is another.
    assert load_config(p, ["gates.g3.tiers=[4,8,16]"]).digest() == same.digest()
    assert load_config(p, ["gates.g3.tiers=[16]"]).digest() != same.digest()
    both = load_config(p, ["gates.g3.tiers=[16]", "report.lang=zh"])
    assert both.overrides == ("gates.g3.tiers=[16]", "report.lang=zh")
    assert both.raw["report"] == {"lang": "zh"} and both.config.report.lang == "zh"


def test_a_malformed_set_is_refused_before_the_file_is_read(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no '='"):
        load_config(tmp_path / "missing.yaml", ["foo"])
