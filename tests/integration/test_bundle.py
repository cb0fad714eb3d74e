"""The offline bundle end to end: `gate bundle` builds it, `gate bundle verify` and
install.sh check it, install.sh installs gate with every index unusable, and the agent
part installs on Python 3.9 and runs a phase against a real streaming server.

pip on this machine is configured with local wheel dirs and indexes (PIP_* variables,
/etc/pip.conf): the install runs with PIP_CONFIG_FILE=/dev/null, no other PIP_* variable
and --no-index (install.sh's own), so only the bundle's files can satisfy it.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from loadgen_support.server import ServerConfig, running_server

from harness.loadgen.phase import PhaseSpec
from harness.loadgen.records import Endpoint, RequestSpec
from harness.remote import frames, records_file

pytestmark = pytest.mark.slow
pytest_plugins = ["bundle_fixtures"]
GATE = str(Path(sys.executable).with_name("gate"))


def offline_env(home: Path) -> dict[str, str]:
    """No pip configuration, no index, nothing of this machine's pip setup."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE="/dev/null", HOME=str(home), PIP_NO_INDEX="1",
               PATH="/usr/local/bin:/usr/bin:/bin")
    env.pop("VIRTUAL_ENV", None)
    return env


def test_verify_shows_what_is_inside(bundle: Path) -> None:
    out = subprocess.run([GATE, "bundle", "verify", "--json", str(bundle)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["ok"] and info["problems"] == [] and info["font"]["licence"] == "Apache-2.0"
    agent39 = next(v for k, v in info["packages"].items() if k.startswith("agent/py3.9-"))
    assert {"gate-agent", "aiohttp", "numpy", "async-timeout"} <= set(agent39)
    gate = next(v for k, v in info["packages"].items() if k.startswith("wheels/py3.11-"))
    assert {"gate-harness", "weasyprint", "ansible-core", "pandas", "uvloop"} <= set(gate)
    assert "libpango-1.0-0" in info["debian_packages"]


def test_install_needs_no_index_and_gives_a_working_gate(unpacked: Path,
                                                        tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    proc = subprocess.run(["sh", str(unpacked / "install.sh"), str(venv)],
                          env=offline_env(tmp_path), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "checksums ok" in proc.stderr and "gate, version" in proc.stdout
    version = subprocess.run([str(venv / "bin" / "gate"), "--version"],
                             env=offline_env(tmp_path), capture_output=True, text=True)
    assert version.returncode == 0 and "version" in version.stdout
    assert list((tmp_path / ".local/share/fonts/gate").glob("*.ttc"))
    init = subprocess.run([str(venv / "bin" / "gate"), "init", str(tmp_path / "site")],
                          env=offline_env(tmp_path), capture_output=True, text=True,
                          timeout=120)
    assert init.returncode == 0, init.stderr


def test_a_corrupted_file_is_refused_by_install_and_verify(unpacked: Path,
                                                          tmp_path: Path) -> None:
    damaged = tmp_path / unpacked.name
    shutil.copytree(unpacked, damaged)
    wheel = next((damaged / "wheels").glob("*/numpy-*.whl"))
    data = bytearray(wheel.read_bytes())
    data[len(data) // 2] ^= 0xFF
    wheel.write_bytes(bytes(data))
    proc = subprocess.run(["sh", str(damaged / "install.sh"), str(tmp_path / "venv")],
                          env=offline_env(tmp_path), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 4 and "checksum mismatch" in proc.stderr
    assert wheel.name in proc.stderr and not (tmp_path / "venv").exists()
    archive = tmp_path / "damaged.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        tar.add(damaged, arcname=damaged.name)
    out = subprocess.run([GATE, "bundle", "verify", str(archive)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 4, out.stdout
    assert f"DAMAGED wheels/{wheel.parent.name}/{wheel.name}: changed" in out.stdout
    assert "Traceback" not in out.stderr and str(archive) in out.stderr


def _python39() -> str | None:
    """A working Python 3.9 (pyenv's shim answers `command not found` when 3.9 is not the
    selected version, so the interpreter is run once to be sure)."""
    for found in [*sorted(glob.glob("/root/.pyenv/versions/3.9*/bin/python3.9")),
                  shutil.which("python3.9")]:
        if found and subprocess.run([found, "-c", "import venv"],
                                    capture_output=True).returncode == 0:
            return found
    return None


def test_the_agent_installs_and_runs_a_phase_on_python_3_9(unpacked: Path,
                                                          tmp_path: Path) -> None:
    python39 = _python39()
    if python39 is None:
        pytest.skip("no Python 3.9 on this machine (pyenv 3.9 or python3.9)")
    venv = tmp_path / "agent"
    subprocess.run([python39, "-m", "venv", str(venv)], check=True, timeout=120)
    wheels = next((unpacked / "agent").glob("py3.9-*"))
    pip = subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q",
                          "--no-index", "--find-links", str(wheels), "gate-agent"],
                         env=offline_env(tmp_path), capture_output=True, text=True,
                         timeout=300)
    assert pip.returncode == 0, pip.stderr
    agent = str(venv / "bin" / "gate-agent")
    assert "python 3.9" in subprocess.run([agent, "--version"], capture_output=True,
                                          text=True).stdout
    # an engine-like TTFT: against a no-op server's sub-ms one, the client's own delay is
    # most of what it measures and its health says so (issue 24)
    with running_server(ServerConfig(ttft=0.05, itl=0.001)) as (url, _srv):
        spec = PhaseSpec(endpoints=(Endpoint(url, "test-model", 0),),
                         requests=tuple(RequestSpec(f"doc {i} text", 8, i) for i in range(40)),
                         concurrency=4, warmup=2)
        (tmp_path / "spec.json").write_text(json.dumps(spec.to_dict()))
        run = subprocess.run([agent, "run", "--spec", str(tmp_path / "spec.json"),
                              "--dir", str(tmp_path / "phase")], capture_output=True,
                             text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    status = json.loads((tmp_path / "phase" / "status.json").read_text())
    assert status["state"] == "finished" and status["python"].startswith("3.9")
    data = (tmp_path / "phase" / frames.NAME).read_bytes()
    records, used = records_file.decode(data, at_start=True)  # written by 3.9's numpy
    assert used == len(data)
    assert sorted(r.idx for r in records) == list(range(40)) == sorted({r.idx for r in records})
    assert all(r.error_kind is None and len(r.chunk_times) == 8 for r in records)
    health = status["outcome"]["health"]
    assert health["sends"] > 0 and health["loop_samples"] > 0 and not health["saturated"]
