"""G2's gdsio check end to end on simulated GPU hosts (local connection; gdsio answers
from real captures, everything else runs here): a GPU-direct read above the vendor's
figure x min_fraction PASSes; a run cuFile served in compat mode is a STOP-LOSS although
gdsio printed `XferType: GPUD`; a host without gdsio is refused by the pre-flight (exit 4,
nothing recorded), or SKIPPED once the site lists test_gdsio as optional. Never a silent
pass."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from harness.probes.findmnt import parse_findmnt
from harness.probes.mounts import NOT_DIRECT
from harness.probes.mounts import argv as findmnt_argv
from harness.workflow.demo_hardware import mount_point
from tests.gate_testing import GATE
from tests.lab_site import TEST_CAPTURES

REPO = Path(__file__).resolve().parents[2]

INVENTORY = f"""\
[gpu]
gpu1 ansible_connection=local gate_sim_hardware=lab-gpu-gdsio gate_sim_captures={TEST_CAPTURES}
gpu2 ansible_connection=local gate_sim_hardware=lab-gpu-gdsio-compat \
gate_sim_captures={TEST_CAPTURES}
gpu3 ansible_connection=local gate_sim_hardware=gpu-t4
gpu4 ansible_connection=local gate_sim_hardware=gpu-t4
"""


def _volume(tmp_path: Path) -> Path:
    """A directory on a filesystem that honours O_DIRECT, as GDS needs: the test's own
    temporary directory, unless that is a tmpfs (a Debian /tmp), then one in the repo."""
    found = subprocess.run(findmnt_argv(str(tmp_path)), capture_output=True, text=True,
                           check=True)
    if parse_findmnt(found.stdout).fstype not in NOT_DIRECT:
        return tmp_path / "volume"
    return REPO / ".test-volumes" / tmp_path.name


def _config(volume: Path) -> str:
    return f"""\
site: {{name: gdsio-site}}
campaign: {{name: gdsio}}
inventory: hosts.ini
model: {{name: test/model}}
simulated: true
gates:
  g2:
    gpu_health: false
    serving: null
    gdsio: {{path: "{volume}", mount: "{mount_point(volume)}", size: 1G, io_size: 256K,
             threads: 1, seconds: 10, read_gib_s: 1.5}}
    optional: ["test_gdsio[gpu4]"]  # this one host declared it has no gdsio
"""


def test_gdsio_pass_compat_mode_and_missing_tool(tmp_path: Path) -> None:
    (tmp_path / "hosts.ini").write_text(INVENTORY)
    volume = _volume(tmp_path)
    volume.mkdir(parents=True)  # G2 never creates it: the volume's mount makes it
    (tmp_path / "gate.yaml").write_text(_config(volume))
    env = {**os.environ, "GATE_DB": f"sqlite:///{tmp_path / 'gate.db'}"}
    env.pop("GATE_CONFIG", None)
    out = subprocess.run([*GATE, "run", "G2", "--force"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    # gpu3 has no gdsio and the site did not declare it: the pre-flight refuses, naming
    # it (gpu4's is declared optional), before anything is recorded
    assert out.returncode == 4, out.stdout + out.stderr
    refused = [e for e in out.stderr.splitlines() if e.startswith("gate: error:")]
    assert refused[0].startswith("gate: error: host gpu3: gdsio is not on the PATH"), refused
    assert len(refused) == 2 and "test_gdsio[gpu3]" in refused[0], refused
    config = tmp_path / "gate.yaml"
    config.write_text(config.read_text().replace('"test_gdsio[gpu4]"]',
                                                 '"test_gdsio[gpu4]", "test_gdsio[gpu3]"]'))
    out = subprocess.run([*GATE, "run", "G2", "--force"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stdout + out.stderr  # the compat-mode run decides
    show = subprocess.run([*GATE, "runs", "show", "1", "--json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=True)
    by_host: dict[str, dict[str, Any]] = {c["host"]: c for c in json.loads(show.stdout)["checks"]}
    assert by_host["gpu1"]["outcome"] == "PASS"
    assert by_host["gpu1"]["measured"].startswith("1.56 GiB/s GPUD read, 1 threads")
    assert ">= 1.35 GiB/s (90% of 1.5)" in by_host["gpu1"]["expected"]
    compat = by_host["gpu2"]
    assert compat["outcome"] == "STOP-LOSS"
    assert "compat mode" in compat["message"]
    assert "not registered with nvidia-fs" in compat["message"]
    for declared in (by_host["gpu3"], by_host["gpu4"]):
        assert declared["outcome"] == "SKIPPED" and "gdsio not installed" in declared["message"]
    assert not (volume / "gate-gdsio").exists()  # the work directory is removed
    assert by_host["gpu1"]["measured"].endswith(f"at {mount_point(volume)}")
    if volume.parent.name == ".test-volumes":
        shutil.rmtree(volume)
