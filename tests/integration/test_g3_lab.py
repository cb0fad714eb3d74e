"""G3 end to end over SSH in the network-namespace lab: simulated engines run inside the
gpu host's namespace, started / cold-restarted / stopped through serve.yml (Ansible over
SSH, become), storage bandwidth read from the storage host over SSH, page caches dropped
with sudo. Each scenario is a real `gate run G3` subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from gate_testing import GATE

from tests.lab.netlab import Lab

pytest_plugins = ["tests.lab.fixtures", "bundle_fixtures"]
pytestmark = [pytest.mark.lab, pytest.mark.slow]

PORT = 8311


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """World-readable: the lab user reads the simulator's diskstats file over SSH."""
    d = Path(tempfile.mkdtemp(prefix="gate-g3lab-"))
    d.chmod(0o755)
    yield d
    subprocess.run(["rm", "-rf", str(d)], check=False)


def arm(name: str, shared: Path, extra: list[str]) -> dict[str, object]:
    command = [sys.executable, "-m", "harness.sim", "--host", "{address}", "--port", "{port}",
               "--tp", "{tp}", "--instance", "{instance}", "--speed", "30",
               "--stream-interval", "8", "--cache-dir", str(shared / "tok"),
               "--diskstats", str(shared / "diskstats"), "--seed", "7", *extra]
    common = {"name": f"{name}-{{instance}}", "pidfile": str(shared / f"{name}-{{instance}}.pid"),
              "log": str(shared / f"{name}-{{instance}}.log"), "serve_become": True,
              "mode": "process"}
    start = {**common, "command": command, "health_url": "http://{address}:{port}/health",
             "health_timeout": 60}
    return {"start": {"playbook": "serve.yml", "vars": {**start, "action": "start"}},
            "restart": {"playbook": "serve.yml", "vars": {**start, "action": "restart"}},
            "stop": {"playbook": "serve.yml", "vars": {**common, "action": "stop"}},
            "health_timeout": 60}


def write_site(lab: Lab, site: Path, shared: Path, *, base_extra: list[str],
               acc_extra: list[str], allow: tuple[str, ...] = ()) -> Path:
    from harness.workflow.demo_hardware import kv_volume

    # The GPU host's KV volume, as the demo's: the tier directory, resolved with findmnt
    # over SSH on h1, its line of the simulator's GPU-side diskstats read there.
    (shared / "tier").mkdir(exist_ok=True)
    volume = kv_volume(shared / "tier", shared / "kv-diskstats")
    evidence: dict[str, object] = {"diskstats": str(shared / "diskstats"),
                                   "devices": ["nvme9n1"], "storage_groups": ["storage"]}
    if volume is not None:
        volume.zero_line()
        evidence["kv_volume"] = {"path": volume.path, "mount": volume.mount,
                                 "direct": volume.direct, "diskstats": volume.diskstats}
        on_gpu = ["--kv-diskstats", volume.diskstats, "--kv-dev", volume.majmin]
        base_extra, acc_extra = [*base_extra, *on_gpu], [*acc_extra, *on_gpu]
    lab.write_inventory(site / "hosts.ini")
    lab.write_known_hosts(site / "known_hosts")
    config = {
        "site": {"name": "lab-site", "customer": "Lab Customer"},
        "campaign": {"name": "lab-g3"},
        "inventory": "hosts.ini", "known_hosts": "known_hosts",
        "model": {"name": "Qwen/Qwen2.5-32B-Instruct"},
        "arms": {"baseline": arm("baseline", shared, ["--external-tier", "off", *base_extra]),
                 "accelerated": {**arm("accelerated", shared,
                                       ["--external-tier", "on", "--tier-dir",
                                        str(shared / "tier"), *acc_extra]),
                                 "differs_by": ["argv:--external-tier", "argv:--tier-dir",
                                                "server:gate_sim*external_tier", *allow]}},
        "layouts": [{"name": "TP8", "tp": 8, "instances": [{"host": "h1", "port": PORT}]}],
        "load": {"placement": "local", "timeout": 120},
        # 32 documents a phase, as the demo: at 16 a c=4 phase lasts ~0.35 s and one stall
        # of a busy CI host moved a pair's gain enough to leave the cell undecided.
        "workload": {"doc_tokens": 32000, "max_tokens": 128, "seed": 7, "min_docs": 32},
        # Up to 8 pairs: the seed-shaped profile's c=4 gain (~0.33) lies near the 0.29
        # threshold, and at 5 pairs its interval straddled it in about 1 run of 3.
        # what was ordered for the GPU host: the layout's TP8 is held against it (no G1
        # ran in this lab)
        "gates": {"g1": {"bom": {"gpu": {"gpu": {"model": "H100 80GB HBM3", "count": 8}}}},
                  "g3": {"tiers": [4], "repetitions": {"min": 3, "max": 8},
                         "drop_caches_on": ["gpu", "storage"], "bootstrap": 1000,
                         "evidence": evidence}},
    }
    path = site / "gate.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


class EnvironScanner(threading.Thread):
    """Reads /proc/PID/environ of every process every 0.5 s but this test's own children
    (the `gate` commands it starts with the password, as a user would): a process any
    of them started that inherited the sudo password is caught while it runs."""

    def __init__(self, secret: str) -> None:
        super().__init__(daemon=True)
        self.secret = secret.encode()
        self.leaks: dict[int, str] = {}
        self.scanned: set[int] = set()
        self.done = threading.Event()

    def run(self) -> None:
        me = os.getpid()
        while not self.done.wait(0.5):
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit() or int(entry.name) == me:
                    continue
                try:
                    stat = (entry / "stat").read_text()
                    if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                        continue  # started by this test, with the password on purpose
                    environ = (entry / "environ").read_bytes()
                    cmdline = (entry / "cmdline").read_bytes()
                except (OSError, ValueError, IndexError):
                    continue
                self.scanned.add(int(entry.name))
                if self.secret in environ:
                    self.leaks[int(entry.name)] = cmdline.replace(b"\0", b" ").decode()[:200]


def run_g3(lab: Lab, site: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    env = {**os.environ, "GATE_DB": f"sqlite:///{site / 'gate.db'}",
           "GATE_SUDO_PASSWORD": lab.password}
    proc = subprocess.Popen([*GATE, "run", "G3", "--force", "-c", str(site / "gate.yaml")],
                            cwd=site, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    stdout, stderr = proc.communicate(timeout=900)
    out = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    show = subprocess.run([*GATE, "runs", "show", "1", "--json"], cwd=site, env=env,
                          capture_output=True, text=True, timeout=120)
    assert show.returncode == 0, show.stderr
    return out, json.loads(show.stdout)


def request_count(site: Path) -> int:
    from sqlalchemy import create_engine, text

    with create_engine(f"sqlite:///{site / 'gate.db'}").connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM request")).scalar() or 0)


def test_seed_shaped_profile_passes_over_ssh(ssh_lab: Lab, tmp_path: Path,
                                             shared_dir: Path) -> None:
    write_site(ssh_lab, tmp_path, shared_dir, base_extra=[], acc_extra=[])
    scanner = EnvironScanner(ssh_lab.password)
    scanner.start()
    try:
        out, run = run_g3(ssh_lab, tmp_path)
    finally:
        scanner.done.set()
        scanner.join()
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    # The sudo password reached sudo and Ansible's become prompt, nothing else: no child
    # process inherited it (the engines, ansible-runner and its workers ran meanwhile).
    assert not scanner.leaks, scanner.leaks
    assert len(scanner.scanned) > 20
    assert_password_nowhere(ssh_lab.password, tmp_path, shared_dir, run)
    assert run["verdict"] == "PASS" and run["simulated"] is True and run["forced"] is True
    outcomes = {c["name"]: c["outcome"] for c in run["checks"]}  # type: ignore[index]
    assert outcomes["test_cell"] == "PASS"
    assert outcomes["test_arms_serve_the_same_model"] == "PASS"
    from sqlalchemy import create_engine, text

    with create_engine(f"sqlite:///{tmp_path / 'gate.db'}").connect() as conn:
        events = {r[0] for r in conn.execute(text("SELECT name FROM event WHERE status='ok'"))}
        storage = conn.execute(text("SELECT max(value) FROM series WHERE "
                                    "metric='storage_read_bytes' AND source='h2'")).scalar()
    assert "drop page cache" in events  # dropped on h1 and h2 with sudo over SSH
    assert any(e.startswith("serve.yml") for e in events)  # restarts went through Ansible
    assert storage and storage > 0  # the tier's reads, seen from the storage host
    assert "kv volume" in events  # resolved on h1 with findmnt over SSH
    with create_engine(f"sqlite:///{tmp_path / 'gate.db'}").connect() as conn:
        gpu_side = conn.execute(text("SELECT max(value) FROM series WHERE "
                                     "metric='kv_volume_read_bytes' AND source='h1'")).scalar()
    assert gpu_side and gpu_side > 0  # ... and from the GPU host's KV volume


# The null profile over SSH cost ~100 s of CI's 30 minutes and found nothing the seed-shaped
# run above and test_demo_scenarios' null demo do not: it runs on with
# GATE_TEST_ALL_PLACEMENTS=1 (below, with the load on the client host).


def test_arms_serving_different_models_are_an_error(ssh_lab: Lab, tmp_path: Path,
                                                    shared_dir: Path) -> None:
    write_site(ssh_lab, tmp_path, shared_dir, base_extra=[],
               acc_extra=["--model", "Qwen/Qwen2.5-7B-Instruct"])
    out, run = run_g3(ssh_lab, tmp_path)
    assert out.returncode == 3, out.stdout + out.stderr[-3000:]
    checks = {c["name"]: c for c in run["checks"]}  # type: ignore[index]
    same = checks["test_arms_serve_the_same_model"]
    assert same["outcome"] == "ERROR" and "Qwen/Qwen2.5-7B-Instruct" in same["message"]
    assert checks["test_cell"]["outcome"] == "ERROR"
    assert request_count(tmp_path) == 0  # arms that differ are never compared


def test_engine_killed_mid_phase_is_never_pass_and_keeps_requests(
        ssh_lab: Lab, tmp_path: Path, shared_dir: Path) -> None:
    # The crash is injected into one arm on purpose: allowed, or the arms would differ.
    write_site(ssh_lab, tmp_path, shared_dir, base_extra=[], acc_extra=["--crash-after", "10"],
               allow=("argv:--crash-after", "server:gate_sim.config.crash_after"))
    out, run = run_g3(ssh_lab, tmp_path)
    assert out.returncode in (2, 3), out.stdout + out.stderr[-3000:]
    assert run["verdict"] in ("ERROR", "INCONCLUSIVE")
    assert request_count(tmp_path) > 0  # what was measured before the crash is kept


def assert_password_nowhere(password: str, site: Path, shared: Path,
                            run: dict[str, object]) -> None:
    """Every artifact, log (the engines' too), the store (with its WAL), a rendered report
    and an evidence pack of the run: the password appears in none of them."""
    env = {**os.environ, "GATE_DB": f"sqlite:///{site / 'gate.db'}"}
    report = subprocess.run([*GATE, "report", str(run["id"]), "--format", "html", "-o",
                             str(site / "report.html")], cwd=site, env=env,
                            capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    pack = subprocess.run([*GATE, "export", str(run["id"]), "-o", str(site / "pack.tar.gz")],
                          cwd=site, env=env, capture_output=True, text=True, timeout=300)
    assert pack.returncode == 0, pack.stderr
    import tarfile

    with tarfile.open(site / "pack.tar.gz") as tar:
        for member in tar.getmembers():
            data = tar.extractfile(member)
            if data is not None:
                assert password.encode() not in data.read(), f"pack: {member.name}"
    files = [p for p in site.rglob("*") if p.is_file()]
    files += [p for p in shared.rglob("*") if p.is_file()]
    assert any("artifacts" in p.parts for p in files)  # Ansible's artifacts were written
    for path in files:
        assert password.encode() not in path.read_bytes(), f"the password is in {path}"


# Each costs ~4.5 min on 2 cores (a G3 run, plus ~2-3 s of agent start per phase), past
# the CI budget: run with GATE_TEST_ALL_PLACEMENTS=1. CI covers placement client through
# test_remote_lab.py (ship over SSH, a phase through a cut link) and test_remote_phase.py.
@pytest.mark.skipif(os.environ.get("GATE_TEST_ALL_PLACEMENTS") != "1",
                    reason="CI budget: set GATE_TEST_ALL_PLACEMENTS=1 (~9 min)")
@pytest.mark.parametrize(("profile", "verdicts"), [
    ("null", ("STOP-LOSS", "INCONCLUSIVE")), ("broken-baseline", ("INCONCLUSIVE",))])
def test_the_load_on_the_client_host_gives_the_local_verdict(
        ssh_lab: Lab, tmp_path: Path, shared_dir: Path, unpacked: Path, profile: str,
        verdicts: tuple[str, ...]) -> None:
    """load.placement: client: the agent is shipped from the bundle to the [client] host
    (jump) and every phase runs there, detached, against the engines on h1; the verdict is
    the one placement: local gives for the scenario (docs/demo.md's scenario table)."""
    path = write_site(ssh_lab, tmp_path, shared_dir, base_extra=["--profile", profile],
                      acc_extra=["--profile", profile])
    config = yaml.safe_load(path.read_text())
    config["load"].update(placement="client", agent_wheels=str(unpacked / "agent"))
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    before = set(ssh_lab.home.glob(".gate/phases/run1/*/status.json"))
    out, run = run_g3(ssh_lab, tmp_path)
    assert run["verdict"] in verdicts, out.stdout + out.stderr[-3000:]
    phases = set(ssh_lab.home.glob(".gate/phases/run1/*/status.json")) - before
    states = {json.loads(p.read_text())["state"] for p in phases}
    assert len(phases) >= 2 * 2 * 3 and states == {"finished"}  # warm + measured, 2 arms
    assert request_count(tmp_path) > 0
