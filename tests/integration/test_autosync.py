"""`sync.to:` in gate.yaml: after every run the campaign's finished runs go to the target
by themselves; a target that cannot be reached is an event and a line, never the run's
exit code, and the next run's sync sends what the failed one could not. Real `gate run
G1` subprocesses on the demo's simulated site, a real SQLite target."""

from __future__ import annotations

import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from g3_site import Site

from harness.demo import write_site


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    made = write_site(tmp_path, "default")
    try:
        yield Site(made.root)
    finally:
        made.ports.release()


def _sync_to(site: Site, url: str) -> None:
    cfg = yaml.safe_load(site.config.read_text())
    cfg["sync"] = {"to": url}
    site.config.write_text(yaml.safe_dump(cfg, sort_keys=False))


def _g1(site: Site) -> subprocess.CompletedProcess[str]:
    out = site.gate("run", "G1", timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr[-2000:]
    return out


def test_each_run_syncs_itself_and_a_failed_sync_is_sent_by_the_next(
        site: Site, tmp_path: Path) -> None:
    target = tmp_path / "central.db"
    _sync_to(site, f"sqlite:///{target}")
    first = _g1(site)
    assert f"synced to {target}: added 1, updated 0, skipped 0, refused 0" in first.stderr

    _sync_to(site, "postgresql+psycopg://gate@127.0.0.1:9/nowhere")  # nothing listens
    second = _g1(site)  # the run's own verdict and exit code, whatever the sync did
    assert "sync to postgresql+psycopg://gate@127.0.0.1:9/nowhere failed" in second.stderr
    failed = site.query("SELECT run_id, status FROM event WHERE name = 'sync'")
    assert (2, "failed") in failed, failed

    _sync_to(site, f"sqlite:///{target}")
    third = _g1(site)
    assert "added 2, updated 0, skipped 1, refused 0" in third.stderr  # run 2 caught up
    with sqlite3.connect(target) as db:
        there = sorted(u for (u,) in db.execute("SELECT uid FROM run"))
    assert there == sorted(str(u) for (u,) in site.query("SELECT uid FROM run"))


def test_a_password_in_the_sync_url_is_refused_at_load(site: Site) -> None:
    _sync_to(site, "postgresql+psycopg://gate:s3cret@db.example/fleet")
    out = site.gate("config", "validate")
    assert out.returncode == 4, out.stdout + out.stderr
    assert "sync.to" in out.stderr and "PGPASSWORD or ~/.pgpass" in out.stderr
    assert "s3cret" not in out.stderr and "gate:***@db.example" in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) <= 2
