"""Shared test fixtures: a temp site (config + inventory + store) and a CLI runner."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from gate_testing import GATE, MINIMAL_CONFIG, MINIMAL_INVENTORY, GateRunner

# pg_support: the throwaway PostgreSQL cluster (pg_cluster, pg_url); parallel: how the
# suite shares cores (pytest-xdist groups)
pytest_plugins = ["pg_support", "parallel"]


@pytest.fixture
def site_dir(tmp_path: Path) -> Path:
    (tmp_path / "gate.yaml").write_text(MINIMAL_CONFIG)
    (tmp_path / "hosts.ini").write_text(MINIMAL_INVENTORY)
    return tmp_path



@pytest.fixture
def gate_cli(site_dir: Path) -> GateRunner:
    """Run `gate ...` as a user would: a subprocess in the site dir, its own store."""

    def run(*args: str, cwd: Path | None = None, timeout: float = 300,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        full_env = {**os.environ, "GATE_DB": f"sqlite:///{site_dir / 'gate.db'}"}
        full_env.pop("GATE_CONFIG", None)
        if env:
            full_env.update(env)
        return subprocess.run([*GATE, *args], cwd=cwd or site_dir, capture_output=True,
                              text=True, timeout=timeout, env=full_env)

    return run


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Engine tests need ./scripts/engine-env.sh's venv: left out unless the `-m`
    expression names `engine`. A rule here, not `-m 'not engine'` in addopts, which a
    user's own `-m "not slow"` silently replaced (the README's command then demanded the
    engine venv)."""
    if "engine" in (config.option.markexpr or ""):
        return
    keep = [item for item in items if item.get_closest_marker("engine") is None]
    if len(keep) < len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep
