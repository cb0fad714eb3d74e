"""G2 fio runs only on the filesystem its target declares (REVIEW-R3 F1): findmnt's answer
parsed from real captures, and judged against the target (harness/probes/mounts.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.models import FioTarget
from harness.errors import ParseError
from harness.probes import mounts as mount
from harness.probes.findmnt import Mount, parse_findmnt

HW = Path(__file__).resolve().parents[1] / "fixtures" / "hw"


def read(name: str) -> str:
    return (HW / name).read_text(encoding="utf-8")


def test_findmnt_pairs_from_real_captures() -> None:
    assert parse_findmnt(read("findmnt-P_gate-build-host_ext4-root.txt")) == Mount(
        "/dev/vda", "ext4", "/")
    # stacked mounts print one line each: the last is the one the path reaches
    assert parse_findmnt(read("findmnt-P_gate-build-host_tmpfs-stacked-dev-shm.txt")) == \
        Mount("tmpfs", "tmpfs", "/dev/shm")


def test_findmnt_escapes_and_nothing_found() -> None:
    line = 'SOURCE="srv:/a\\x20b" FSTYPE="nfs4" TARGET="/mnt/my\\x20vol"\n'
    assert parse_findmnt(line) == Mount("srv:/a b", "nfs4", "/mnt/my vol")
    with pytest.raises(ParseError, match="no output"):
        parse_findmnt("")  # findmnt exits 1 and prints nothing for a path it cannot find
    with pytest.raises(ParseError, match="no FSTYPE, TARGET"):
        parse_findmnt('SOURCE="/dev/vda"\n')


def target(**kw: object) -> FioTarget:
    return FioTarget.model_validate({"name": "fx100", "path": "/mnt/fx100/gate", **kw})


ROOT = Mount("/dev/vda", "ext4", "/")
VOLUME = Mount("/dev/nvme1n1", "xfs", "/mnt/fx100")


def test_an_unmounted_volume_on_the_root_disk_is_refused_unless_declared() -> None:
    """The route of F1: the volume did not mount, the directory sits on the root disk."""
    why = mount.problem(target(), ROOT)
    assert why is not None and "root filesystem /dev/vda (ext4) at /" in why
    assert mount.problem(target(mount="/"), ROOT) is None  # the root disk is the target
    assert mount.problem(target(device="/dev/vda"), ROOT) is None
    assert mount.problem(target(), VOLUME) is None  # any other mount, when none is declared


def test_the_declared_mount_or_device_must_be_what_the_path_is_on() -> None:
    assert mount.problem(target(mount="/mnt/fx100/"), VOLUME) is None
    assert mount.problem(target(device="/dev/nvme1n1"), VOLUME) is None
    assert mount.problem(target(device="/dev/nvme1n1"),
                         Mount("/dev/nvme1n1[/sub]", "xfs", "/mnt/fx100")) is None  # bind
    why = mount.problem(target(mount="/mnt/fx100"), Mount("/dev/nvme0n1p2", "ext4", "/mnt"))
    assert why is not None and "not on the declared mount /mnt/fx100" in why
    why = mount.problem(target(device="/dev/nvme2n1"), VOLUME)
    assert why is not None and "not on the declared device /dev/nvme2n1" in why
    assert mount.problem(target(mount="/"), VOLUME) is not None


@pytest.mark.parametrize("fstype", ["tmpfs", "overlay", "ramfs"])
def test_filesystems_that_fake_o_direct_are_refused_with_direct(fstype: str) -> None:
    on = Mount(fstype, fstype, "/mnt/fx100")
    why = mount.problem(target(), on)
    assert why is not None and "O_DIRECT" in why
    assert mount.problem(target(direct=False), on) is None  # weakened: a reviewer signs


def test_zfs_needs_direct_io_from_openzfs_2_3() -> None:
    pool = Mount("tank/fx", "zfs", "/mnt/fx100")
    assert mount.zfs_version("2.2.2-0ubuntu9.1\n") == (2, 2)
    assert mount.zfs_version("zfs-kmod-2.3.0-1") is None
    assert mount.zfs_version("2.3.0-1\n") == (2, 3)
    for version in ((2, 2), None):
        why = mount.problem(target(), pool, version)
        assert why is not None and "ARC" in why
    assert mount.problem(target(), pool, (2, 3)) is None
    assert mount.problem(target(direct=False), pool, None) is None
