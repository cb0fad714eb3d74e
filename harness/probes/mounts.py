"""What a directory a gate measures on is: the filesystem `findmnt -T` resolves it to,
judged against what it declares (G2's fio targets and gdsio directory,
harness/config/baseline.py; G3's KV volume, gates.g3.evidence.kv_volume).

Why: fio measures whatever filesystem holds its file, and G3 reads the KV volume's
device. An accelerator volume that is not mounted at the moment of the run leaves an
empty directory on the root disk, and a local NVMe root passes against the accelerator's
figures. So the path must exist (G2 never
creates it), must not be the root filesystem unless the target says so (`mount: /`, or
`device:` naming the root's source), must be the declared mount / device when one is
declared, and with O_DIRECT must be a filesystem that honours it.
"""

from __future__ import annotations

import re
from typing import Protocol

from harness.probes.findmnt import Mount
from harness.reasons import Reason


class Placed(Protocol):
    """A directory G2 measures on (a fio target, gdsio's directory) and what it must be."""

    @property
    def path(self) -> str: ...
    @property
    def mount(self) -> str | None: ...
    @property
    def device(self) -> str | None: ...
    @property
    def direct(self) -> bool: ...

# Filesystems that refuse O_DIRECT or serve it from RAM: fio on them measures memory.
# tmpfs / ramfs are RAM; overlay passes O_DIRECT to its upper layer only on some kernels
# and its source says nothing about the disk; ZFS before 2.3 accepts O_DIRECT and still
# reads through the ARC (OpenZFS 2.3 added Direct I/O). With `direct: false` (weakened,
# a reviewer signs) they are measured as they are.
NOT_DIRECT = frozenset({"tmpfs", "ramfs", "overlay"})
ZFS_DIRECT_IO = (2, 3)


def argv(path: str) -> list[str]:
    """MAJ:MIN names the device as /proc/diskstats numbers it (dm-3, nvme1n1p1 alike)."""
    return ["findmnt", "-n", "-P", "-o", "SOURCE,FSTYPE,TARGET,MAJ:MIN", "-T", path]


def described(mount: Mount) -> str:
    return f"{mount.source} ({mount.fstype}) at {mount.target}"


def described_why(mount: Mount) -> Reason:
    """`described` as a Reason (harness.reasons), for the report's languages."""
    return Reason("g2.mount", {"source": mount.source, "fstype": mount.fstype,
                               "target": mount.target})


def zfs_version(raw: str) -> tuple[int, int] | None:
    """/sys/module/zfs/version ("2.2.2-0ubuntu9.1", "2.3.0-1") as (major, minor)."""
    found = re.match(r"\s*(\d+)\.(\d+)", raw)
    return (int(found.group(1)), int(found.group(2))) if found else None


def problem(target: Placed, mount: Mount, zfs: tuple[int, int] | None = None) -> str | None:
    """Why fio / gdsio must not run on this target (None: it may). `zfs`: the module's version,
    read only when the path is on ZFS (None there: unknown)."""
    where = described(mount)
    if target.mount is not None and _norm(mount.target) != _norm(target.mount):
        return f"{target.path} is on {where}, not on the declared mount {target.mount}"
    if target.device is not None and not _same_source(mount.source, target.device):
        return f"{target.path} is on {where}, not on the declared device {target.device}"
    declared_root = target.mount is not None or target.device is not None
    if _norm(mount.target) == "/" and not declared_root:
        return (f"{target.path} is on the root filesystem {where}: the target volume is "
                "not mounted there, or declare `mount: /` if the root disk is the target")
    if target.direct and mount.fstype in NOT_DIRECT:
        return (f"{target.path} is on {where}: {mount.fstype} does not honour O_DIRECT "
                "(fio would measure memory)")
    if target.direct and mount.fstype == "zfs" and (zfs is None or zfs < ZFS_DIRECT_IO):
        found = "unknown" if zfs is None else f"{zfs[0]}.{zfs[1]}"
        return (f"{target.path} is on {where}: ZFS {found} reads O_DIRECT through the ARC "
                "(Direct I/O needs OpenZFS 2.3)")
    return None


def _norm(path: str) -> str:
    return path.rstrip("/") or "/"


def _same_source(source: str, device: str) -> bool:
    """findmnt's SOURCE is the device, or the device[/subdir] of a bind mount."""
    return source == device or source.startswith(device + "[")
