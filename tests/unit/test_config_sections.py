"""The G4 section is typed (the soak's duration, windows, load and criteria: tests/unit/
test_g4_config.py holds its rules), an unknown key in it is refused with a suggestion. G2's
section is its suite's (fio targets, GPU health, GDS)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.loader import load_config, parse_config
from harness.config.models import G2, G4
from harness.errors import ConfigError

BASE = "site: {name: s}\ncampaign: {name: c}\nmodel: {name: m}\n"


def test_g4_and_g2_sections_parse() -> None:
    cfg, _ = parse_config(BASE + "gates: {g2: {optional: [fio rand read], fio: [{name: nvme, "
                          "path: /mnt/t}]}, g4: {optional: [], duration: 72h, window: 60s}}\n",
                          "gate.yaml")
    assert cfg.gates.g2.optional == ["fio rand read"] and cfg.gates.g2.fio[0].name == "nvme"
    assert cfg.gates.g4 == G4() and cfg.gates.g4.duration == 72 * 3600
    assert G2().fio == []


def test_an_unknown_g4_key_is_still_a_plain_unknown_key() -> None:
    with pytest.raises(ConfigError, match="did you mean `optional`"):
        parse_config(BASE + "gates: {g4: {optionals: [x]}}\n", "gate.yaml")


def test_the_shipped_template_loads(tmp_path: Path) -> None:
    from harness.config.template import template

    (tmp_path / "gate.yaml").write_text(template())
    cfg = load_config(tmp_path / "gate.yaml")
    assert cfg.config.report.logo is None and cfg.config.gates.g4 == G4()
