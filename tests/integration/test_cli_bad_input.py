"""Bad input: one line naming the file / key / host, exit 4, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from gate_testing import SUITES, GateRunner
from sqlalchemy import create_engine, text

PASSING = str(SUITES / "passing")


def assert_one_line_usage_error(out: object, *needles: str) -> None:
    rc, err = out.returncode, out.stderr  # type: ignore[attr-defined]
    assert rc == 4, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("gate: error:")]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_missing_config(gate_cli: GateRunner, site_dir: Path) -> None:
    (site_dir / "gate.yaml").unlink()
    assert_one_line_usage_error(gate_cli("run", "G1", "--suite", PASSING), "gate.yaml",
                                "not found")


def test_yaml_syntax_error(gate_cli: GateRunner, site_dir: Path) -> None:
    (site_dir / "gate.yaml").write_text("site: {name: [\n")
    assert_one_line_usage_error(gate_cli("run", "G1", "--suite", PASSING), "line", "column")


@pytest.mark.parametrize(("extra", "needle"), [
    ("gates: {g3: {tierz: [4]}}\n", "gates.g3.tierz: unknown key"),
    ("gates: {g3: {tiers: four}}\n", "gates.g3.tiers"),
])
def test_unknown_key_and_wrong_type(gate_cli: GateRunner, site_dir: Path, extra: str,
                                    needle: str) -> None:
    cfg = site_dir / "gate.yaml"
    cfg.write_text(cfg.read_text() + extra)
    assert_one_line_usage_error(gate_cli("run", "G1", "--suite", PASSING), needle)


def test_missing_and_unparseable_inventory(gate_cli: GateRunner, site_dir: Path) -> None:
    (site_dir / "hosts.ini").unlink()
    assert_one_line_usage_error(gate_cli("run", "G1", "--suite", PASSING), "hosts.ini",
                                "not found")
    (site_dir / "hosts.ini").write_text("[gpu\nfoo = = =\n")
    assert_one_line_usage_error(gate_cli("run", "G1", "--suite", PASSING), "cannot parse")


def test_group_the_gate_needs_is_missing(gate_cli: GateRunner, site_dir: Path) -> None:
    (site_dir / "hosts.ini").write_text("[storage]\nst1 ansible_connection=local\n")
    assert_one_line_usage_error(gate_cli("run", "G1", "--suite", PASSING), "group [gpu]")


def test_unknown_gate(gate_cli: GateRunner) -> None:
    out = gate_cli("run", "G9")
    assert out.returncode == 4 and "not a gate" in out.stderr and "Traceback" not in out.stderr


def test_bad_db_url(gate_cli: GateRunner) -> None:
    assert_one_line_usage_error(gate_cli("run", "G1", "--suite", PASSING, "--db", "nosuch://x"),
                                "--db")


def test_newer_schema(gate_cli: GateRunner, site_dir: Path) -> None:
    assert gate_cli("run", "G1", "--suite", PASSING).returncode == 0
    engine = create_engine(f"sqlite:///{site_dir / 'gate.db'}")
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num='0999_future'"))
    assert_one_line_usage_error(gate_cli("status"), "newer than this harness")
    assert_one_line_usage_error(gate_cli("run", "G1", "--suite", PASSING),
                                "newer than this harness")


def test_g4_on_a_site_without_arms_names_the_key(gate_cli: GateRunner) -> None:
    assert_one_line_usage_error(gate_cli("run", "G4", "--force"), "arms: G4 needs `arms:`")
