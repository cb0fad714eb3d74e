"""G1's section of the site config: the bill of materials per inventory group and the
arrival checks' settings (harness/g1). Re-exported by harness.config.models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field, model_validator

from harness.config.base import Frozen


# G1's bill of materials (harness/g1): what each host of an inventory group must have.
# Models are matched as case-insensitive substrings of what the tool reports ("A100-SXM4-80GB"
# matches "NVIDIA A100-SXM4-80GB"); versions compare numerically ("535.54" <= "535.104.05").
# A count is at least 1: "none of this model" is no arrival check, and health checks on
# zero devices would judge nothing (leave the item out instead).
class GpuBom(Frozen):
    model: str = Field(min_length=1)
    count: int = Field(ge=1)
    min_driver: str | None = None
    min_cuda: str | None = None


class NvmeBom(Frozen):
    model: str = Field(min_length=1)
    count: int = Field(ge=1)
    min_capacity_gb: float | None = Field(default=None, gt=0, description="per drive, 1e9 B")
    firmware: str | None = None


class NicBom(Frozen):
    # ibstat's CA type (MT4129) or, with `interfaces`, the device name lspci shows at
    # ethtool -i's bus-info ("ConnectX-7", "MT2910"); ethtool's driver (mlx5_core, shared by
    # every ConnectX) only where lspci cannot name the device. A declared interface whose
    # link is down is a miss.
    model: str = Field(min_length=1)
    count: int = Field(ge=1)
    interfaces: list[str] = Field(default_factory=list, description="empty: read ibstat")
    min_rate_gbps: float | None = Field(default=None, gt=0)
    firmware: str | None = None


class VolumeBom(Frozen):
    """The accelerator's volume as this host sees it: an NVMe-oF subsystem."""

    nqn: str = Field(min_length=1)
    transport: Literal["tcp", "rdma", "fc", "pcie"] = "tcp"
    min_paths: int = Field(default=1, ge=1, description="live paths at least")
    min_size_gb: float | None = Field(default=None, gt=0)


class OsBom(Frozen):
    os: str | None = Field(default=None, min_length=1)  # a substring of os-release PRETTY_NAME
    kernel: str | None = Field(default=None, min_length=1)  # a prefix of `uname -r`

    @model_validator(mode="after")
    def _says_something(self) -> OsBom:
        if self.os is None and self.kernel is None:  # `os: {}` would pass any OS
            raise ValueError("os: or kernel: (an empty os item checks nothing; leave it "
                             "out)")
        return self


class FileDigest(Frozen):
    size: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class WeightsBom(Frozen):
    """Model weights identified by a manifest: relative path -> size and sha256."""

    directory: str = Field(min_length=1)
    manifest: dict[str, FileDigest] = Field(min_length=1)


class SoftwareBom(Frozen):
    python: str = "python3"  # the engine's interpreter on the host
    packages: dict[str, str] = Field(min_length=1, description="distribution -> version")


class Bom(Frozen):
    software: SoftwareBom | None = None
    weights: WeightsBom | None = None
    gpu: GpuBom | None = None
    nvme: NvmeBom | None = None
    nic: NicBom | None = None
    gds: bool | None = None  # true: gdscheck -p must show GDS supported on every GPU
    volume: VolumeBom | None = None
    os: OsBom | None = None


G1_HEALTH = ("gpu-ecc", "gpu-link", "xid", "pcie", "nvme-smart", "ib-ports")
# The host fact G1 records with the GPUs nvidia-smi listed on a host; G3 holds each
# layout's tp x instances against it (harness/serving/layout_fit.py).
GPU_COUNT_FACT = "gpu count"


class G1(Frozen):
    # inventory group -> what each of its hosts must have (a host in two groups with a BOM
    # is refused: which one applies would be a guess)
    bom: dict[str, Bom] = Field(default_factory=dict)
    # item or health check -> why this lab cannot check it (e.g. a simulated host with no
    # capture of that tool). Shown as SKIPPED with the reason, never a silent PASS.
    unverifiable: dict[str, str] = Field(default_factory=dict)
    clock_offset_s: float = Field(default=1.0, gt=0, le=3600)
    gdscheck: str = "gdscheck"  # e.g. /usr/local/cuda/gds/tools/gdscheck
    probe_timeout: float = Field(default=120.0, gt=0)
    optional: list[str] = Field(default_factory=list)


def declared_gpus(g1: G1, groups: Sequence[str]) -> tuple[str, int] | None:
    """(group, count) of the GPUs the BOM orders for a host in `groups` (the first of its
    groups, in order, whose BOM orders GPUs); None when none does."""
    for group in groups:
        bom = g1.bom.get(group)
        if bom is not None and bom.gpu is not None:
            return group, bom.gpu.count
    return None
