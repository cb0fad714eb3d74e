"""The GPU hosts' side of the device evidence (issue 24, item 1): the KV volume resolved
with findmnt -T as G2 resolves its targets, its line of /proc/diskstats found by MAJ:MIN,
and held to the same rule as the storage hosts' devices (harness/serving/disks.py, devices.py).

Parsers run on captures (tests/fixtures/hw/SOURCES.md, tests/fixtures/probes/SOURCES.md);
the resolution runs real findmnt on this machine's own filesystems.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.config.models import Evidence, KvVolume, SiteConfig
from harness.errors import MeasurementError
from harness.g3.devices import device_problem, device_share
from harness.probes.diskstats import bytes_read_of
from harness.probes.findmnt import Mount, parse_findmnt
from harness.serving.disks import kv_volume_source
from harness.serving.problems import JSONDict, ProblemKind
from harness.transport.local import LocalTransport

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_findmnt_names_the_device_as_diskstats_numbers_it() -> None:
    raw = (FIXTURES / "hw" / "findmnt-P-majmin_gate-build-host_ext4-root.txt").read_text()
    assert parse_findmnt(raw) == Mount("/dev/vda", "ext4", "/", "254:0")
    # util-linux releases that print shell-safe names spell the key MAJ_MIN
    assert parse_findmnt('SOURCE="/dev/dm-3" FSTYPE="xfs" TARGET="/mnt/kv" MAJ_MIN="253:3"'
                         ).majmin == "253:3"
    # older captures without the column still parse
    assert parse_findmnt('SOURCE="/dev/vda" FSTYPE="ext4" TARGET="/"').majmin is None


def test_the_kv_volumes_line_is_found_by_its_numbers() -> None:
    text = (FIXTURES / "probes" / "proc-diskstats_debian12-vm_vda.txt").read_text()
    assert bytes_read_of(text, "254:0") == 4283858 * 512  # vda: sectors read x 512
    assert bytes_read_of(text, "0:42") is None  # NFS / btrfs: no block device of its own
    assert bytes_read_of(text, "7:0") == 0  # a loop device that read nothing is still one


COLD = 100e9  # bytes of KV the accelerated arm recovered cold (below)


def phase(storage: float, kv: float | None, hosts: float = 1.0) -> JSONDict:
    ev: JSONDict = {"exposes_external": True, "external_hit_tokens": COLD / 1000,
                    "kv_bytes_per_token": 1000.0, "kv_compression": 1.0,
                    "storage": {"bytes_read": storage, "hosts": 1.0}}
    if kv is not None:
        ev["kv_volume"] = {"bytes_read": kv, "hosts": hosts}
    return ev


def test_a_dd_on_the_storage_host_does_not_read_the_gpu_hosts_volume() -> None:
    rules = Evidence()
    honest = device_problem(phase(COLD, COLD), phase(0, 0), rules)
    assert honest is None
    # the storage host "read" everything, the GPU host's volume nothing: the KV came
    # from somewhere else, and the storage host's counters were made to say otherwise
    lied = device_problem(phase(COLD, 0), phase(0, 0), rules)
    assert lied is not None and lied.kind is ProblemKind.NOT_EXERCISED
    assert lied.why is not None and lied.why.code == "g3.kv_volume_below_kv"
    assert "while the storage hosts reported 100.00 GB" in lied.text
    # a trickle on the GPU host is not the work either
    trickle = device_problem(phase(COLD, 0.3 * COLD), phase(0, 0), rules)
    assert trickle is not None and "30% of the 100.00 GB" in trickle.text
    # the baseline reading the volume is contamination, as on the storage hosts
    dirty = device_problem(phase(COLD, COLD), phase(0, 0.2 * COLD), rules)
    assert dirty is not None and dirty.kind is ProblemKind.CONTAMINATED
    assert dirty.why is not None and dirty.why.code == "g3.kv_volume_contaminated"
    # declared but never sampled
    unread = device_problem(phase(COLD, 0, hosts=0), phase(0, 0), rules)
    assert unread is not None and unread.why is not None
    assert unread.why.code == "g3.kv_volume_unread"
    # not declared: the storage hosts' word alone (the plan lists it as weakened)
    assert device_problem(phase(COLD, None), phase(0, None), rules) is None


def test_the_share_named_is_the_end_that_read_least() -> None:
    assert device_share(phase(COLD, 0.7 * COLD)) == pytest.approx(0.7)
    assert device_share(phase(0.6 * COLD, None)) == pytest.approx(0.6)


def site(simulated: bool, volume: dict[str, object] | None = None) -> SiteConfig:
    evidence: dict[str, object] = {"devices": ["nvme1n1"]}
    if volume is not None:
        evidence["kv_volume"] = volume
    return SiteConfig.model_validate({
        "site": {"name": "s"}, "campaign": {"name": "c"}, "simulated": simulated,
        "model": {"name": "m", "layers": 1, "kv_heads": 1, "head_dim": 1, "dtype": "bf16"},
        "gates": {"g3": {"evidence": evidence}}})


def test_a_real_site_without_the_gpu_hosts_side_needs_a_sign_off() -> None:
    from harness.g3.plan import weakened

    assert any(w.startswith("gates.g3.evidence.kv_volume not set")
               for w in weakened(site(False)))
    assert not any("kv_volume" in w for w in weakened(site(False, {"path": "/mnt/kv"})))
    assert any("direct = false" in w
               for w in weakened(site(False, {"path": "/mnt/kv", "direct": False})))
    assert not any("kv_volume" in w for w in weakened(site(True)))  # the demo's lab


def _mount_of(path: Path) -> Mount:
    out = subprocess.run(["findmnt", "-n", "-P", "-o", "SOURCE,FSTYPE,TARGET,MAJ:MIN",
                          "-T", str(path)], capture_output=True, text=True, check=True)
    return parse_findmnt(out.stdout)


def test_the_volume_is_resolved_on_the_host_as_g2_resolves_its_targets(
        tmp_path: Path) -> None:
    host = LocalTransport("gpu1")
    mount = _mount_of(tmp_path)
    # a directory that is not there: ERROR before anything is measured
    with pytest.raises(MeasurementError, match="is not a directory on gpu1") as gone:
        kv_volume_source("gpu1", host, KvVolume(path=str(tmp_path / "nope")))
    assert gone.value.host == "gpu1" and gone.value.key == "gates.g3.evidence.kv_volume.path"
    # on another mount than declared: the volume is not mounted there
    with pytest.raises(MeasurementError, match="not on the declared mount /mnt/fx100"):
        kv_volume_source("gpu1", host, KvVolume(path=str(tmp_path), mount="/mnt/fx100"))
    declared = KvVolume(path=str(tmp_path), mount=mount.target, direct=False)
    listed = mount.majmin is not None and bytes_read_of(
        Path("/proc/diskstats").read_text(), mount.majmin) is not None
    if not listed:  # tmp on overlay / tmpfs (a container): no block device to read
        with pytest.raises(MeasurementError, match="not a block device whose reads G3"):
            kv_volume_source("gpu1", host, declared)
        return
    source = kv_volume_source("gpu1", host, declared)
    assert source.majmin == mount.majmin and source.path == "/proc/diskstats"
    assert source.bytes_read() >= 0
    # its diskstats file lost the line (the device went away mid-run): the read says so
    gone_line = tmp_path / "diskstats"
    gone_line.write_text("   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
    moved = KvVolume(path=str(tmp_path), mount=mount.target, direct=False,
                     diskstats=str(gone_line))
    with pytest.raises(MeasurementError, match="not a block device whose reads G3"):
        kv_volume_source("gpu1", host, moved)
