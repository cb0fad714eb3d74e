"""G3's evidence section of the site config: what proves the accelerated arm read its KV
from the accelerator and the baseline did not (harness/g3/devices.py, disks.py).
Re-exported by harness.config.models."""

from __future__ import annotations

from pydantic import Field

from harness.config.base import Frozen


class KvVolume(Frozen):
    """The accelerator's volume as the GPU hosts see it (the NVMe-oF namespace the engine's
    KV tier lives on): G3 resolves `path` with `findmnt -T` on each layout host, as G2
    resolves its targets (harness/probes/mounts.py), and reads that device's line of
    `diskstats` there around every measured phase. The GPU host is the customer's: its
    reads hold the storage hosts' (the vendor's) to account."""

    path: str = Field(min_length=1)  # a directory on the volume, e.g. LMCache's local path
    # What the path must resolve to, as G2's targets: `mount` its mount point, `device`
    # its source; neither: any mount but the root filesystem.
    mount: str | None = Field(default=None, min_length=1)
    device: str | None = Field(default=None, min_length=1)
    # A filesystem that does not honour O_DIRECT (tmpfs, overlay) holds KV in memory:
    # refused unless this is false (weakened: needs sign-off).
    direct: bool = True
    diskstats: str = "/proc/diskstats"  # path on the GPU hosts


class Evidence(Frozen):
    """What proves the accelerated arm read from the tier and the baseline did not."""

    min_external_hit_share: float = Field(default=0.5, ge=0.3, le=1)
    # Failed requests count as +inf TTFT and no tokens: on the baseline they inflate the
    # gain, so a phase with more than this share failed cannot decide a cell.
    max_failed_share: float = Field(default=0.02, ge=0, le=0.05)
    # A cold restart must leave the GPU prefix cache empty: local hits above this share
    # of the measured phase's prompt tokens mean the restart was not cold.
    max_local_hit_share: float = Field(default=0.05, ge=0, le=0.2)
    # The server's usage.completion_tokens must agree with the fixed output length on all
    # but this share of a phase's completed requests ("token counts disagree" otherwise).
    max_token_disagreement: float = Field(default=0.01, ge=0, le=0.01)
    storage_sample_interval: float = Field(default=1.0, gt=0)
    metrics_interval: float = Field(default=5.0, gt=0)
    storage_groups: list[str] = Field(default_factory=lambda: ["storage"])
    diskstats: str = "/proc/diskstats"  # path on the storage hosts
    devices: list[str] = Field(default_factory=list, description="empty: every whole disk")
    # The GPU hosts' side of the same reads (None: the storage hosts' word alone, which
    # at a real site is weakened: needs sign-off).
    kv_volume: KvVolume | None = None
    # How many times smaller the accelerator stores KV than the engine holds it (a tier
    # that compresses): its devices must read at least half of the cold KV bytes / this.
    # A weaker setting above 1: the result needs a sign-off.
    kv_compression: float = Field(default=1.0, ge=1.0, le=16.0)
    # Where the engine exposes no counter that proves the tier was read (llama.cpp, TGI,
    # Ollama, SGLang without a storage backend), storage read bandwidth on the storage
    # hosts may stand in for it only when this is set; otherwise such a cell is
    # INCONCLUSIVE. A weaker setting: the result needs a sign-off.
    allow_storage_evidence: bool = False
    # Base URLs of KV-store services whose own /metrics count reads (Mooncake Store's
    # master: its admin port, default 9003), scraped around each measured phase with the
    # arm's engines: the accelerated arm's phase must find objects there, the
    # baseline's must not (docs/engines.md).
    store_metrics: list[str] = Field(default_factory=list)
