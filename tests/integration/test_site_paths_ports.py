"""`gate config validate` on ports and paths, and the pre-flight on a program missing from
a local host's PATH: one line each naming the key (and host), exit 4, nothing recorded.
Hosts are `ansible_connection=local` (this machine, real shells); no lab needed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.gate_testing import GATE

BASE = """\
site: {{name: s}}
campaign: {{name: c}}
inventory: hosts.ini
model: {{name: test/model}}
simulated: true
{extra}"""
INVENTORY = "[gpu]\ngpu1 ansible_connection=local\n[storage]\nst1 ansible_connection=local\n"
ARMS = """\
arms:
  baseline: {start: {command: ["true"]}, stop: {command: ["true"]}}
  accelerated: {start: {playbook: no-such-serve.yml}, stop: {command: ["true"]}}
"""


def _site(tmp_path: Path, extra: str) -> Path:
    (tmp_path / "gate.yaml").write_text(BASE.format(extra=extra))
    (tmp_path / "hosts.ini").write_text(INVENTORY)
    return tmp_path


def _gate(site: Path, *args: str, env: dict[str, str] | None = None
          ) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("GATE_CONFIG", "GATE_DB")}
    return subprocess.run([*GATE, *args], cwd=site, capture_output=True, text=True,
                          timeout=120, env={**base, **(env or {})})


def _errors(out: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in out.stderr.splitlines() if line.startswith("gate: error:")]


def test_two_instances_of_a_layout_on_one_port_is_one_line_with_the_key(
        tmp_path: Path) -> None:
    commands = ARMS.replace("{playbook: no-such-serve.yml}", '{command: ["true"]}')
    site = _site(tmp_path, commands + """\
layouts:
  - {name: TP4x2, tp: 4, instances: [{host: gpu1, port: 8000}, {host: gpu1, port: 8000}]}
  - {name: TP8, tp: 8, instances: [{host: gpu1, port: 8000}]}
""")
    out = _gate(site, "config", "validate")
    assert out.returncode == 4, out.stdout + out.stderr
    assert _errors(out) == [_errors(out)[0]]
    line = _errors(out)[0]
    assert "gate.yaml: layouts[0].instances[1].port" in line, line
    assert "gpu1:8000" in line and "TP4x2" in line and "Traceback" not in out.stderr
    # two layouts on one port is no clash: they run one at a time
    fixed = site / "gate.yaml"
    fixed.write_text(fixed.read_text().replace("port: 8000}]}\n  - {name: TP8",
                                               "port: 8001}]}\n  - {name: TP8"))
    assert _gate(site, "config", "validate").returncode == 0


def test_missing_paths_and_playbook_one_line_each_naming_key_and_host(tmp_path: Path) -> None:
    there = tmp_path / "volume"
    there.mkdir()
    site = _site(tmp_path, ARMS + f"""\
layouts:
  - {{name: TP8, tp: 8, instances: [{{host: gpu1, port: 8000}}]}}
gates:
  g2:
    fio:
      - {{name: nvme, group: gpu, path: {tmp_path / 'no-such-dir'}}}
      - {{name: fx, group: storage, path: {there}}}
""")
    out = _gate(site, "config", "validate")  # the playbook first: the gates read it
    assert out.returncode == 4, out.stdout + out.stderr
    assert len(_errors(out)) == 1, out.stderr
    book = _errors(out)[0]
    assert "gate.yaml: arms.accelerated.start.playbook" in book and "no-such-serve.yml" in book
    config = site / "gate.yaml"
    config.write_text(config.read_text().replace("{playbook: no-such-serve.yml}",
                                                 '{command: ["true"]}'))
    out = _gate(site, "config", "validate")
    assert out.returncode == 4, out.stdout + out.stderr
    assert len(_errors(out)) == 1, out.stderr
    fio = _errors(out)[0]
    assert "gate.yaml: gates.g2.fio[0].path" in fio and "no-such-dir does not exist" in fio
    assert "on gpu1" in fio
    assert "paths: 2 on this machine looked at" in out.stdout  # both fio targets


def test_preflight_refuses_a_host_without_fio_and_records_nothing(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    site = _site(tmp_path, f"""\
gates:
  g2:
    gpu_health: false
    serving: null
    fio:
      - {{name: local, group: gpu, path: {target}, direct: false, size: 1M, runtime_s: 1}}
""")
    # this machine's programs, fio left out: the local host's PATH is the gate's own
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for d in os.environ["PATH"].split(os.pathsep):
        for prog in Path(d).glob("*") if Path(d).is_dir() else ():
            link = bin_dir / prog.name
            if prog.name != "fio" and not link.exists():
                link.symlink_to(prog)
    db = tmp_path / "gate.db"
    out = _gate(site, "run", "G2", "--force",
                env={"PATH": str(bin_dir), "GATE_DB": f"sqlite:///{db}"})
    assert out.returncode == 4, out.stdout + out.stderr
    errors = _errors(out)
    assert len(errors) == 2, out.stderr
    assert errors[0].startswith("gate: error: host gpu1: fio is not on the PATH there")
    assert "test_fio[gpu1-local-seq-read]" in errors[0] and "gates.g2.optional" in errors[0]
    assert "G2 not started" in errors[1]
    listed = _gate(site, "runs", "list", "--json", env={"GATE_DB": f"sqlite:///{db}"})
    assert listed.returncode != 0 or listed.stdout.strip() in ("", "[]"), listed.stdout
