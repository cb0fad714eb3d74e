"""G4's soak as the load agent runs it on a client host's own Python 3.9 (RHEL 9's): the
agent installed from wheels made for 3.9, `soak-start` detaches the soak, `soak-pull`
reads every window back through the gate's RemoteSoak (a LocalTransport: this machine
is the client host), and `soak-stop --kill-after` ends a second soak early with its
whole windows written. The soak's code moved to harness/loadgen for this; 3.11-only
constructs there (asyncio.Runner, zip(strict=), X | Y in isinstance) fail only when
they run, so it is run."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from loadgen_support.server import ServerConfig, running_server

from harness.loadgen.records import Endpoint, RequestSpec
from harness.loadgen.soak_spool import SoakSpec
from harness.remote.soak_client import RemoteSoak
from harness.transport.local import LocalTransport

# ~25 s (wheels for 3.9, a venv, two short soaks), past the CI budget with the lab's client
# soak: with GATE_TEST_ALL_PLACEMENTS=1, as the other client-placement runs.
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("GATE_TEST_ALL_PLACEMENTS") != "1",
                                 reason="CI budget: set GATE_TEST_ALL_PLACEMENTS=1 (~25 s)")]


def _python39() -> str | None:
    for found in [*sorted(glob.glob("/root/.pyenv/versions/3.9*/bin/python3.9")),
                  shutil.which("python3.9")]:
        if found and subprocess.run([found, "-c", "import venv"],
                                    capture_output=True).returncode == 0:
            return found
    return None


def _agent39(tmp: Path, python39: str) -> list[str]:
    """gate-agent in a 3.9 venv, from its wheel and its dependencies' cp39 wheels."""
    from harness.bundle.agent_wheel import AGENT_NAME, build_agent_wheel
    from harness.bundle.targets import agent_targets, running_target
    from harness.bundle.wheels import fetch_complete

    (target,) = [t for t in agent_targets([running_target()]) if t.python == "3.9"]
    wheels = tmp / target.key
    wheels.mkdir()
    fetch_complete([str(build_agent_wheel(wheels))], [AGENT_NAME], wheels, target,
                   target.marker_env())
    venv = tmp / "venv"
    subprocess.run([python39, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q",
                          "--no-index", "--find-links", str(wheels), AGENT_NAME],
                         capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr
    return [str(venv / "bin/python"), "-I", "-B", "-m", "harness.remote.agent"]


def _spec(url: str, duration: float) -> dict[str, object]:
    return SoakSpec(endpoints=(Endpoint(url, "test-model", 0),),
                    documents=tuple(RequestSpec(f"doc {i} text", 8, i) for i in range(8)),
                    concurrency=2, duration_s=duration, window_s=1.0).to_dict()


def _until_ended(remote: RemoteSoak, timeout: float = 120) -> list[dict[str, object]]:
    """Every window pulled, each once, until the soak's state says it ended."""
    got: list[dict[str, object]] = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        pulled = remote.pull(len(got) - 1)
        got += pulled.windows
        state = pulled.state or {}
        if state.get("status") in ("done", "stopped", "failed") and not pulled.more:
            return got
        time.sleep(0.3)
    raise AssertionError("the soak did not end")


def test_the_soak_runs_on_the_agents_python_3_9(tmp_path: Path) -> None:
    python39 = _python39()
    if python39 is None:
        pytest.skip("no Python 3.9 on this machine (pyenv 3.9 or python3.9)")
    agent = _agent39(tmp_path, python39)
    local = LocalTransport("client")
    with running_server(ServerConfig(ttft=0.01, itl=0.002)) as (url, _srv):
        whole = RemoteSoak(local, agent, str(tmp_path / "soak"))
        whole.start(_spec(url, 4))
        windows = _until_ended(whole)
        stopped = RemoteSoak(local, agent, str(tmp_path / "stopped"))
        stopped.start(_spec(url, 600))
        while not stopped.pull(-1).windows:
            time.sleep(0.2)
        answer = stopped.stop("asked by the test", kill_after=30)
    state = json.loads((tmp_path / "soak" / "state.json").read_text())
    assert state["status"] == "done", (tmp_path / "soak" / "agent.log").read_text()
    assert [w["index"] for w in windows] == [0, 1, 2, 3]
    assert all(int(str(w["requests"])) > 0 and not w["errors"] for w in windows)
    assert answer["was_alive"] is True and answer["alive"] is False
    assert answer["status"] == "stopped" and int(answer["windows_written"]) >= 1
    written = sorted(p.name for p in (tmp_path / "stopped" / "windows").iterdir())
    assert len(written) == int(answer["windows_written"])  # whole windows, none half
