"""G2's section of the site config: fio targets against the vendor's figures, GPU health,
GDS and the serving baseline (harness/g2). Re-exported by harness.config.models."""

from __future__ import annotations

import re

from pydantic import Field

from harness.config.base import Frozen

# fio's size units with its default kb_base=1024: 4k = 4096, 4G = 4 GiB (a bare number is
# bytes). fio's other spellings (KiB, which kb_base=1024 reads as 1000; a percentage of a
# device) are refused, so what G2 weighs is what fio writes.
FIO_SIZE = r"^\d+[KkMmGgTtPp]?$"
_UNITS: dict[str, int] = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def size_bytes(size: str) -> int:
    """Bytes of a FIO_SIZE value ("4G" -> 4 * 2**30)."""
    found = re.fullmatch(r"(\d+)([KkMmGgTtPp]?)", size)
    if found is None:
        raise ValueError(f"not a fio size: {size!r}")
    power: int = 1024 ** _UNITS[found.group(2).lower()]
    return int(found.group(1)) * power


class FioSpec(Frozen):
    """The vendor's figures for a target; G2 asks `min_fraction` of each (None: measured
    and shown, not judged)."""

    seq_read_mbps: float | None = Field(default=None, gt=0)
    seq_write_mbps: float | None = Field(default=None, gt=0)
    rand_read_iops: float | None = Field(default=None, gt=0)
    lat_qd1_p99_us: float | None = Field(default=None, gt=0, description="at most")


class FioTarget(Frozen):
    name: str = Field(min_length=1, pattern=r"^[\w.-]+$")  # "local-nvme", "fx100"
    group: str = "gpu"  # the inventory group whose hosts run it
    # A directory on the target (fio writes gate-fio.<name>.dat there and G2 removes it);
    # a raw device (/dev/...) only with destructive: true: the write job overwrites it.
    path: str = Field(min_length=1)
    destructive: bool = False
    # What the path must resolve to (`findmnt -T path` on the host, harness/probes/mounts.py):
    # `mount` its mount point, `device` its source (/dev/nvme1n1, server:/export). Neither:
    # any mount but the root filesystem; `mount: /` declares the root disk is the target.
    mount: str | None = Field(default=None, min_length=1)
    device: str | None = Field(default=None, min_length=1)
    size: str = Field(default="4G", pattern=FIO_SIZE)  # fio's --size per job; < 4G weakened
    runtime_s: float = Field(default=30, gt=0)  # < 30 weakened
    direct: bool = True  # O_DIRECT; false only where the filesystem refuses it (tmpfs)
    spec: FioSpec = FioSpec()


# G2's serving baseline (harness/g2/serving.py): the baseline arm alone at G3's layouts x
# tiers with G3's workload, checked for sanity before any A/B. A limit looser than its
# default makes a PASS need a reviewer's sign-off (harness/g2/plan.py:weakened).
class G2Serving(Frozen):
    # Empty: G3's (gates.g3.layouts, gates.g3.tiers); fewer at a real site is weakened.
    layouts: list[str] = Field(default_factory=list)
    tiers: list[int] = Field(default_factory=list)
    repetitions: int = Field(default=3, ge=2, le=20, description="measured phases per cell")
    # Documents a repetition (each asked once); 0: G3's own count for the tier.
    docs: int = Field(default=0, ge=0)
    max_cv: float = Field(default=0.10, gt=0, le=0.25,
                          description="repetition-to-repetition CV of TTFT p50 and throughput")
    max_failed_share: float = Field(default=0.0, ge=0, le=0.05)


class Gdsio(Frozen):
    """GDS read throughput on the accelerator volume, per GPU host: `gdsio -D DIR -d gpu
    -w threads -s size -i io_size -x 0 -I 0 -T seconds` (-x 0: GPU-direct, GPUD) against
    the vendor's GiB/s x min_fraction (None: measured and shown, not judged)."""

    # A directory on the accelerator volume; gdsio's files go to gate-gdsio/ in it, which
    # G2 removes afterwards. It must exist and resolve as fio's targets do (mount /
    # device, never the root filesystem unless declared: harness/probes/mounts.py).
    path: str = Field(min_length=1)
    mount: str | None = Field(default=None, min_length=1)
    device: str | None = Field(default=None, min_length=1)
    size: str = Field(default="4G", pattern=r"^\d+[KMG]?$")  # -s: each thread's file
    io_size: str = Field(default="1M", pattern=r"^\d+[KMG]?$")  # -i
    threads: int = Field(default=4, ge=1, le=256)  # -w
    seconds: float = Field(default=30, gt=0)  # -T
    gpu: int = Field(default=0, ge=0)  # -d: the GPU index the reads land in
    read_gib_s: float | None = Field(default=None, gt=0)  # the vendor's figure
    gdsio: str = "gdsio"  # e.g. /usr/local/cuda/gds/tools/gdsio

    @property
    def direct(self) -> bool:
        """GPU-direct reads bypass the page cache: the filesystem must honour O_DIRECT."""
        return True


class G2(Frozen):
    fio: list[FioTarget] = Field(default_factory=list)
    numjobs: int = Field(default=4, ge=1, le=256)  # random read 4k qd32 x numjobs
    min_fraction: float = Field(default=0.9, gt=0, le=1)
    gpu_health: bool = True  # dcgmi diag where dcgmi exists, nvidia-smi checks otherwise
    dcgm_level: int = Field(default=2, ge=1, le=4)  # 1 exercises no GPU: weakened
    gds: bool = False  # gdscheck -p must verify the platform
    gdscheck: str = "gdscheck"
    gdsio: Gdsio | None = None  # null: no GDS throughput measured
    serving: G2Serving | None = G2Serving()  # null: not measured (weakened at a real site)
    optional: list[str] = Field(default_factory=list)
