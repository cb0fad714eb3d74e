"""The pre-flight against the namespace lab (real sshds): a host on a wrong SSH port, a GPU
host whose (simulated) hardware answers no nvidia-smi, a client host the bundle has no
load-agent wheels for -> exit 4, one line per cause naming the host and what to do, and
no run recorded; the same site put right passes the pre-flight and runs."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest

from tests.lab.netlab import Lab, LabFactory
from tests.lab_site import LabSite, lab_site

pytest_plugins = ["tests.lab.fixtures"]
pytestmark = pytest.mark.lab

G1_CONFIG = """\
site: {name: lab-site}
campaign: {name: preflight-lab}
inventory: hosts.ini
known_hosts: known_hosts
model: {name: test/model}
simulated: true
gates:
  g1:
    bom:
      gpu:
        gpu: {model: A100-SXM4-80GB, count: 1}
"""

WRONG_PORT = "2299"  # nothing listens there in the host's namespace


def _runs(site: LabSite) -> list[dict[str, object]]:
    out = site.gate("runs", "list", "--json")
    assert out.returncode in (0, 4), out.stdout + out.stderr  # 4: no store yet
    return json.loads(out.stdout) if out.returncode == 0 else []


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("gate: error:")]


def _trust_port(lab: Lab, site: LabSite, name: str, port: str) -> None:
    """The host's own key recorded for [address]:port too: the port is wrong, not the key
    (a missing key is refused before the pre-flight, by its own line)."""
    address, kind, blob = lab.known_hosts_lines([name])[0].split()
    with (site.directory / "known_hosts").open("a") as f:
        f.write(f"[{address}]:{port} {kind} {blob}\n")


def test_g1_wrong_port_and_no_nvidia_smi_refused_then_runs(lab_factory: LabFactory,
                                                            tmp_path: Path) -> None:
    lab = lab_factory(["h1", "h2", "h3"], groups={"gpu": ["h1", "h2", "h3"]})
    bad = lab_site(lab, tmp_path, extra={
        "h1": {"gate_sim_hardware": "gpu-a100"},
        "h2": {"gate_sim_hardware": "storage-nvme"},  # answers nvme, no nvidia-smi
        "h3": {"gate_sim_hardware": "gpu-a100", "ansible_port": WRONG_PORT}})
    _trust_port(lab, bad, "h3", WRONG_PORT)
    bad.write_config(G1_CONFIG)
    out = bad.gate("run", "G1")
    assert out.returncode == 4, out.stdout + out.stderr
    errors = _errors(out.stderr)
    # three causes (h2's profile answers neither nvidia-smi nor lspci), then the outcome
    assert len(errors) == 4, out.stderr
    smi = next(e for e in errors if "host h2" in e and "nvidia-smi" in e)
    assert "nvidia-smi is not on the PATH there" in smi and "test_item[h2-gpu]" in smi
    assert "gates.g1.unverifiable: {gpu: WHY, gpu-ecc: WHY" in smi  # what to do
    lspci = next(e for e in errors if "host h2" in e and "lspci" in e)
    assert "lspci is not on sudo's PATH there" in lspci and "test_health[h2-pcie]" in lspci
    port = next(e for e in errors if "host h3" in e)
    assert WRONG_PORT in port or "refused" in port, port
    assert not any("host h1" in e for e in errors)
    assert "G1 not started" in errors[-1] and "nothing was recorded" in errors[-1]
    assert "Traceback" not in out.stderr
    assert _runs(bad) == []  # no run row, no attempt

    good = lab_site(lab, tmp_path, extra={
        name: {"gate_sim_hardware": "gpu-a100"} for name in ("h1", "h2", "h3")})
    good.write_config(G1_CONFIG)
    out = good.gate("run", "G1")
    assert out.returncode != 4, out.stdout + out.stderr
    runs = _runs(good)
    assert len(runs) == 1 and runs[0]["gate"] == "G1", runs


def test_client_without_agent_wheels_for_its_python_is_refused(lab_factory: LabFactory,
                                                               tmp_path: Path) -> None:
    lab = lab_factory(["h1", "c1"], groups={"gpu": ["h1"], "client": ["c1"]})
    site = lab_site(lab, tmp_path, extra={"h1": {"gate_sim_hardware": "gpu-a100"}})
    wheels = tmp_path / "agent"
    (wheels / "py3.9-manylinux_2_17_aarch64").mkdir(parents=True)  # another machine's
    site.write_config(f"""\
site: {{name: lab-site}}
campaign: {{name: preflight-agent}}
inventory: hosts.ini
known_hosts: known_hosts
model: {{name: test/model}}
simulated: true
load: {{placement: client, agent_wheels: {wheels}}}
arms:
  baseline: {{start: {{command: ["true"]}}, stop: {{command: ["true"]}}}}
  accelerated: {{start: {{command: ["true"]}}, stop: {{command: ["true"]}}}}
layouts:
  - {{name: TP1, tp: 1, instances: [{{host: h1, port: 8000}}]}}
gates:
  g2: {{gpu_health: false}}
""")
    out = site.gate("run", "G2", "--force")
    assert out.returncode == 4, out.stdout + out.stderr
    errors = _errors(out.stderr)
    assert len(errors) == 2, out.stderr
    assert "host c1" in errors[0] and "load agent" in errors[0], errors
    assert "no agent wheels" in errors[0] and "gate bundle --target" in errors[0], errors
    assert _runs(site) == []


def test_validate_hosts_finds_a_missing_path_and_a_taken_port_on_the_host(
        lab_factory: LabFactory, tmp_path: Path) -> None:
    lab = lab_factory(["h1", "h2"], groups={"gpu": ["h1"], "storage": ["h2"]})
    site = lab_site(lab, tmp_path, extra={})
    there = f"/tmp/gate-preflight-{uuid.uuid4().hex[:8]}"  # made as the host's user sees it
    assert lab.exec("h1", ["mkdir", "-p", there], as_user=True).returncode == 0
    site.write_config(f"""\
site: {{name: lab-site}}
campaign: {{name: validate-hosts}}
inventory: hosts.ini
known_hosts: known_hosts
model: {{name: test/model}}
simulated: true
arms:
  baseline: {{start: {{command: ["true"]}}, stop: {{command: ["true"]}}}}
  accelerated: {{start: {{command: ["true"]}}, stop: {{command: ["true"]}}}}
layouts:
  - {{name: TP1, tp: 1, instances: [{{host: h1, port: 8123}}]}}
gates:
  g2:
    fio:
      - {{name: nvme, group: gpu, path: /srv/no-such-target}}
      - {{name: here, group: gpu, path: {there}}}
""")
    assert site.gate("config", "validate").returncode == 0  # the hosts' paths need --hosts
    address = lab.host("h1").address
    squatter = lab.spawn("h1", ["python3", "-m", "http.server", "8123", "--bind", address])
    try:
        deadline = 50
        while deadline and "8123" not in lab.exec("h1", ["ss", "-ltnH"]).stdout:
            time.sleep(0.1)
            deadline -= 1
        out = site.gate("config", "validate", "--hosts")
    finally:
        squatter.terminate()
        squatter.wait(10)
        lab.exec("h1", ["rm", "-rf", there], as_user=True)
    assert out.returncode == 4, out.stdout + out.stderr
    errors = _errors(out.stderr)
    assert len(errors) == 2, out.stderr
    path = next(e for e in errors if "fio" in e)
    assert "gates.g2.fio[0].path, host h1: /srv/no-such-target does not exist there" in path
    port = next(e for e in errors if "port" in e)
    assert "layouts[0].instances[0].port, host h1: port 8123 is in use there" in port
