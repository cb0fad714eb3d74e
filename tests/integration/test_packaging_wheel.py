"""An installed `gate` works from any directory: gates/, playbooks/, reports/ ship inside."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wheels = tmp_path_factory.mktemp("wheels")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(wheels), str(REPO)], check=True, capture_output=True)
    wheel = next(wheels.glob("gate_harness-*.whl"))
    site = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    return site


def run_installed(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("GATE_DB", None)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_wheel_ships_suites_playbooks_reports_and_migrations(installed: Path) -> None:
    pkg = installed / "harness"
    assert (pkg / "gates" / "__init__.py").is_file()
    assert (pkg / "playbooks" / "__init__.py").is_file()
    assert (pkg / "reports" / "__init__.py").is_file()
    assert (pkg / "reports" / "report.css").is_file()
    assert any((pkg / "reports" / "templates").rglob("*.j2")) or \
        any((pkg / "reports" / "templates").rglob("*.html"))
    assert (pkg / "reports" / "i18n" / "zh.yaml").is_file()
    assert (pkg / "playbooks" / "serve.yml").is_file()
    assert (pkg / "gates" / "g3_main" / "test_g3.py").is_file()
    assert (pkg / "config" / "templates" / "hosts.ini").is_file()
    assert any((pkg / "store" / "migrations" / "versions").glob("0001_*.py"))
    captures = pkg / "sim" / "hosts" / "captures"
    shipped = {p.name for p in captures.iterdir()}
    source = {p.name for p in (REPO / "harness" / "sim" / "hosts" / "captures").iterdir()}
    assert shipped == source and {"profiles.yaml", "SOURCES.md"} <= shipped


def test_installed_gate_runs_from_an_unrelated_directory(installed: Path,
                                                         tmp_path: Path) -> None:
    where = run_installed(installed, tmp_path, "-c",
                          "import harness.gates, harness; print(harness.__file__)")
    assert where.stdout.strip().startswith(str(installed)), where.stderr
    out = run_installed(installed, tmp_path, "-m", "harness", "init", "site")
    assert out.returncode == 0, out.stderr
    status = run_installed(installed, tmp_path / "site", "-m", "harness", "status", "--json")
    assert status.returncode == 0, status.stderr
    assert '"campaign": "fx100-2026q4"' in status.stdout
    # status is read-only: before the first run it answers from the config, no store made
    assert not (tmp_path / "site" / "gate.db").exists()
    smi = run_installed(installed, tmp_path, "-c",
                        "from harness.sim.hosts import load_catalog; print(load_catalog()"
                        ".profiles['gpu-a100'].answer(['nvidia-smi', '-q', '-x'], 'h').rc)")
    assert smi.stdout.strip() == "0", smi.stderr
