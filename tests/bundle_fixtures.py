"""One offline bundle per test session (building it takes ~35 s): `gate bundle` run as a
user would, and its unpacked copy. Load with `pytest_plugins = ["bundle_fixtures"]`."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

GATE = str(Path(sys.executable).with_name("gate"))


@pytest.fixture(scope="session")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "gate-bundle.tar.gz"
    proc = subprocess.run([GATE, "bundle", "-o", str(out)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "bundle: wheels for the agent on" in proc.stderr
    return out


@pytest.fixture(scope="session")
def unpacked(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("unpacked")
    with tarfile.open(bundle) as tar:
        tar.extractall(where, filter="data")
    (top,) = where.iterdir()
    return top
