"""G2 and G4 sections are typed: `optional` only until their suites come, and the keys they
once accepted without reading are refused with a message that says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.loader import load_config, parse_config
from harness.config.models import G2, G4
from harness.errors import ConfigError

BASE = "site: {name: s}\ncampaign: {name: c}\nmodel: {name: m}\n"


def test_g2_and_g4_take_optional_only() -> None:
    cfg, _ = parse_config(BASE + "gates: {g2: {optional: [fio rand read]}, g4: {optional: []}}\n",
                          "gate.yaml")
    assert cfg.gates.g2 == G2(optional=["fio rand read"])
    assert cfg.gates.g4 == G4()
    assert set(G2.model_fields) == {"optional"} and set(G4.model_fields) == {"optional"}


@pytest.mark.parametrize("key", ["g2: {fio: {bs: 4k}}", "g2: {thresholds: {iops: 1}}",
                                 "g4: {duration: 72h}", "g4: {concurrency: 16}",
                                 "g4: {window: 60s}", "g4: {criteria: {error_rate: 0.01}}"])
def test_keys_nothing_read_are_refused_as_retired(key: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(BASE + f"gates: {{{key}}}\n", "site/gate.yaml")
    gate, name = key.split(":")[0], key.split("{")[1].split(":")[0]
    line = err.value.one_line()
    assert line.startswith(f"site/gate.yaml: gates.{gate}.{name}: no longer a setting"), line
    assert f"{gate.upper()} has only `optional`" in line and err.value.exit_code == 4


def test_an_unknown_g4_key_is_still_a_plain_unknown_key() -> None:
    with pytest.raises(ConfigError, match="did you mean `optional`"):
        parse_config(BASE + "gates: {g4: {optionals: [x]}}\n", "gate.yaml")


def test_the_shipped_template_loads(tmp_path: Path) -> None:
    from harness.config.template import template

    (tmp_path / "gate.yaml").write_text(template())
    cfg = load_config(tmp_path / "gate.yaml")
    assert cfg.config.report.logo is None and cfg.config.gates.g4 == G4()
