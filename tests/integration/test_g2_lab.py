"""G2 end to end on the namespace lab: real fio on real files on each host over SSH, GPU
health from captured dcgmi output. A figure below the vendor's spec x min_fraction is a
STOP-LOSS naming host, target, job, expected and found; a target directory that does not
exist, or that findmnt (over SSH) puts on another mount than the declared one, is ERROR
before fio runs; the rest PASS."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.lab.netlab import Lab
from tests.lab_site import lab_site

pytest_plugins = ["tests.lab.fixtures"]
pytestmark = pytest.mark.lab


def test_g2_fio_and_gpu_health_on_lab_hosts(ssh_lab: Lab, tmp_path: Path) -> None:
    site = lab_site(ssh_lab, tmp_path, names=["h1", "h2"], extra={
        "h1": {"gate_sim_hardware": "gpu-t4"}, "h2": {"gate_sim_hardware": "storage-nvme"}})
    target = f"/tmp/gate-g2-{uuid.uuid4().hex[:8]}"  # in each host's own /tmp, as its user
    for name in ("h1", "h2"):  # G2 never creates a target: a site mounts and makes it
        assert ssh_lab.exec(name, ["mkdir", "-p", target], as_user=True).returncode == 0
    found = ssh_lab.exec("h1", ["findmnt", "-n", "-o", "TARGET", "-T", target])
    on = found.stdout.strip().splitlines()[-1]  # the mount the lab's /tmp is on, declared
    modest = "{seq_read_mbps: 5, seq_write_mbps: 5, rand_read_iops: 50, lat_qd1_p99_us: 500000}"
    site.write_config(f"""\
site: {{name: lab-site}}
campaign: {{name: g2-lab}}
inventory: hosts.ini
known_hosts: known_hosts
model: {{name: test/model}}
simulated: true
gates:
  g2:
    numjobs: 2
    fio:
      - {{name: local, group: gpu, path: {target}, mount: "{on}", size: 8M, runtime_s: 1,
         direct: false, spec: {modest}}}
      - {{name: vol, group: storage, path: {target}, mount: "{on}", size: 8M, runtime_s: 1,
         direct: false, spec: {{seq_read_mbps: 10000000}}}}
      - {{name: elsewhere, group: gpu, path: {target}, mount: /mnt/fx100, spec: {modest}}}
      - {{name: gone, group: gpu, path: {target}/not-mounted, mount: "{on}", spec: {modest}}}
""")
    out = site.gate("run", "G2", "--force")
    assert out.returncode == 1, out.stdout + out.stderr
    checks = site.checks(1)
    slow = checks["test_fio[h2-vol-seq-read]"]
    assert slow["outcome"] == "STOP-LOSS" and slow["host"] == "h2"
    assert "h2 vol seq-read" in slow["message"] and ">= 9000000 MB/s" in slow["message"]
    for job in ("seq-read", "seq-write", "rand-read", "lat-qd1"):
        elsewhere = checks.pop(f"test_fio[h1-elsewhere-{job}]")
        assert elsewhere["outcome"] == "ERROR", elsewhere
        assert "not on the declared mount /mnt/fx100" in elsewhere["message"]
        gone = checks.pop(f"test_fio[h1-gone-{job}]")
        assert gone["outcome"] == "ERROR" and "is not a directory" in gone["message"], gone
    local = checks["test_fio[h1-local-seq-read]"]
    assert local["measured"].endswith(f" at {on}"), local  # what fio ran on, from findmnt
    others = {k: c["outcome"] for k, c in checks.items() if k != "test_fio[h2-vol-seq-read]"}
    assert set(others.values()) == {"PASS"}, others
    assert set(others) >= {f"test_fio[h1-local-{j}]" for j in
                           ("seq-read", "seq-write", "rand-read", "lat-qd1")}
    assert "dcgmi diag -r 2" in checks["test_gpu_health[h1]"]["expected"]
    assert checks["test_gpu_health[h1]"]["measured"] == "11 tests, 0 failed"
    # fio ran on the hosts themselves, and cleaned up its files there
    leftover = ssh_lab.exec("h1", ["ls", "-A", target], as_user=True)
    assert leftover.returncode == 0 and leftover.stdout.strip() == ""
    for name in ("h1", "h2"):
        ssh_lab.exec(name, ["rm", "-rf", target], as_user=True)
