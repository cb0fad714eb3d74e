"""The G4 section is typed: `optional` only until its suite comes, and the keys it once
accepted without reading are refused with a message that says so. G2's section is its
suite's (fio targets, GPU health, GDS)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.loader import load_config, parse_config
from harness.config.models import G2, G4
from harness.errors import ConfigError

BASE = "site: {name: s}\ncampaign: {name: c}\nmodel: {name: m}\n"


def test_g4_takes_optional_only_and_g2_its_fio_targets() -> None:
    cfg, _ = parse_config(BASE + "gates: {g2: {optional: [fio rand read], fio: [{name: nvme, "
                          "path: /mnt/t}]}, g4: {optional: []}}\n", "gate.yaml")
    assert cfg.gates.g2.optional == ["fio rand read"] and cfg.gates.g2.fio[0].name == "nvme"
    assert cfg.gates.g4 == G4()
    assert set(G4.model_fields) == {"optional"}
    assert G2().fio == []


@pytest.mark.parametrize("key", ["g4: {duration: 72h}", "g4: {concurrency: 16}",
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
