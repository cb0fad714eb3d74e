"""The agent shipped over real SSH to a namespace-lab client host, and a phase run there
detached while the gate's link to the host is cut: every request comes back exactly once.

The engine (tests/loadgen_support/server.py) runs inside the client host's namespace, as
engines next to a site's client host would; the gate only reaches the host over SSH.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.errors import UsageError
from harness.loadgen.phase import PhaseOutcome, PhaseSpec
from harness.loadgen.records import Endpoint, RequestRecord, RequestSpec
from harness.remote import frames, records_file
from harness.remote.executor import RemoteExecutor
from harness.remote.ship import ship_agent

pytestmark = [pytest.mark.lab, pytest.mark.slow]
pytest_plugins = ["tests.lab.fixtures", "bundle_fixtures"]
REPO = Path(__file__).resolve().parents[2]
PORT = 18080  # inside the client host's own namespace


def test_ship_then_a_phase_survives_a_cut_link(lab_factory, unpacked: Path) -> None:  # type: ignore[no-untyped-def]
    lab = lab_factory(hosts=("c1",), groups={"client": ("c1",)}, sudo="none")
    t = lab.transport("c1")
    agent = ship_agent(t, unpacked / "agent")
    installed = lab.home / ".gate/agent/installed"
    first = installed.stat().st_mtime_ns
    assert ship_agent(t, unpacked / "agent") == agent  # same wheels: nothing reinstalled
    assert installed.stat().st_mtime_ns == first

    server = lab.spawn("c1", [sys.executable, str(REPO / "tests/loadgen_support/server.py"),
                              "--port", str(PORT), "--itl", "0.01"],
                       env={**os.environ, "PYTHONPATH": str(REPO / "tests")})
    try:
        time.sleep(1.5)
        n = 160
        spec = PhaseSpec(endpoints=(Endpoint(f"http://127.0.0.1:{PORT}", "test-model", 0),),
                         requests=tuple(RequestSpec(f"doc {i}", 8, i) for i in range(n)),
                         concurrency=2)
        got: list[RequestRecord] = []
        ex = RemoteExecutor(t, agent, ".gate/phases/cut", poll=0.2, reconnect_for=120)
        result: dict[str, PhaseOutcome] = {}
        follower = threading.Thread(target=lambda: result.setdefault("o", ex.run(spec, got.extend)))
        follower.start()
        end = time.monotonic() + 30
        while time.monotonic() < end and sum(
                len(records_file.read_file(p))
                for p in lab.home.glob(f".gate/phases/cut/*/{frames.NAME}")) < 30:
            time.sleep(0.1)
        lab.cut_link("c1")
        time.sleep(4)
        lab.restore_link("c1")
        follower.join(timeout=180)
    finally:
        server.kill()
    assert not follower.is_alive() and "o" in result
    assert sorted(r.idx for r in got) == list(range(n))
    (status_file,) = lab.home.glob(".gate/phases/cut/*/status.json")
    status = json.loads(status_file.read_text())
    assert status["state"] == "finished" and len(result["o"].records) == n


def test_a_platform_the_bundle_lacks_is_one_line(lab_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    lab = lab_factory(hosts=("c1",), groups={"client": ("c1",)}, sudo="none")
    (tmp_path / "py3.9-manylinux_2_17_aarch64").mkdir()
    with pytest.raises(UsageError) as e:
        ship_agent(lab.transport("c1"), tmp_path)
    assert e.value.host == "c1" and "no agent wheels for Python 3." in e.value.message
    assert "gate bundle --target manylinux_2_" in e.value.one_line()


def _agent_phase(n: int) -> PhaseSpec:
    return PhaseSpec(endpoints=(Endpoint(f"http://127.0.0.1:{PORT}", "test-model", 0),),
                     requests=tuple(RequestSpec(f"doc {i}", 8, i) for i in range(n)),
                     concurrency=2)


def test_an_agent_edited_between_phases_is_never_measured(lab_factory, unpacked: Path) -> None:  # type: ignore[no-untyped-def]
    """The gate hashes the installed agent on its own side around each phase: a file of
    the shipped agent edited after a genuine install (as a vendor's engineer could, to
    slow only the baseline) makes the next phase ERROR naming the host and the file, and
    that phase never starts. A file planted before the run (a shadowing module) is
    replaced by the gate's own install before the first phase."""
    from harness.errors import MeasurementError
    from harness.remote.ship import install_agent
    from harness.remote.verify import AgentGuard, shipped

    lab = lab_factory(hosts=("c1",), groups={"client": ("c1",)}, sudo="none")
    t = lab.transport("c1")
    root = unpacked / "agent"
    installed = install_agent(t, root)
    site = lab.home / ".gate/agent/venv" / installed.site
    assert not list(site.rglob("__pycache__")) and not list(site.glob("*.pth"))
    assert not (site / "pip").exists()  # nothing in the venv but the wheels' files
    planted = site / "uvloop.py"  # would shadow the optional fast loop the agent tries
    planted.write_text("raise SystemExit('not the gate's')\n")

    def reship() -> None:
        install_agent(t, root, again=True)

    guard = AgentGuard(t, installed.venv, installed.site, shipped(installed.wheels),
                       reship=reship)
    ex = RemoteExecutor(t, installed.argv, ".gate/phases/verify", poll=0.2, verify=guard.check)
    server = lab.spawn("c1", [sys.executable, str(REPO / "tests/loadgen_support/server.py"),
                              "--port", str(PORT), "--itl", "0.001"],
                       env={**os.environ, "PYTHONPATH": str(REPO / "tests")})
    try:
        time.sleep(1.5)
        first = ex.run(_agent_phase(20))
        assert len(first.records) == 20 and not planted.exists()  # re-shipped, then ran
        second = ex.run(_agent_phase(20))
        assert len(second.records) == 20
        engine = site / "harness" / "loadgen" / "engine.py"
        engine.write_text(engine.read_text() + "\n# slower for the baseline\n")
        with pytest.raises(MeasurementError) as e:
            ex.run(_agent_phase(20))
    finally:
        server.kill()
    line = e.value.one_line()
    assert e.value.host == "c1" and "harness/loadgen/engine.py" in line, line
    assert "no phase is measured on it" in line
    assert len(list((lab.home / ".gate/phases/verify").iterdir())) == 2  # the third never ran
    # what each check cost (the docs state it): the first reads everything once
    print(f"\nagent checks on c1: first {guard.timings[0]:.2f} s (after a re-ship), then "
          + ", ".join(f"{x * 1000:.0f} ms" for x in guard.timings[1:]))
