"""What one simulated engine is started with: the contract between `gate sim`, the
process controller and whoever starts engines (the demo, tests).

An EngineSpec round-trips through JSON (kept in the controller's state dir, so `restart`
reuses the same arguments) and through argv (the `gate sim` command line).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.errors import UsageError
from harness.sim.profiles import DEFAULT_PROFILE, Profile, get_profile


@dataclass(frozen=True)
class FaultSpec:
    """Faults injected on purpose; all draws come from the engine's seeded RNG."""

    error_rate: float = 0.0  # share of requests that fail: HTTP 500 or a stream cut mid-way
    stall_rate: float = 0.0  # share of requests whose stream pauses once mid-decode
    stall_s: float = 5.0  # modelled seconds of one stall
    crash_after: int | None = None  # the process exits when request N+1 arrives
    slow_start_s: float = 0.0  # modelled seconds of 503 on /health after start
    # What a soak must catch (G4), each a function of the modelled time since the engine
    # started (wall time x speed), so deterministic and drawing nothing from the RNG:
    leak_mb_per_h: float = 0.0  # the engine's RSS grows this many MB (1e6 B) per hour
    ttft_drift_per_h: float = 0.0  # TTFT's modelled phases x (1 + this x hours)
    tier_off_after_s: float | None = None  # then the tier silently stops serving

    def check(self) -> None:
        for name in ("error_rate", "stall_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise UsageError(f"must be between 0 and 1, got {value}",
                                 key="--" + name.replace("_", "-"))
        if self.stall_s < 0 or self.slow_start_s < 0:
            raise UsageError("durations must be >= 0", key="--stall-s/--slow-start")
        if self.crash_after is not None and self.crash_after < 0:
            raise UsageError("must be >= 0", key="--crash-after")
        for value, key in ((self.leak_mb_per_h, "--memory-leak"),
                           (self.ttft_drift_per_h, "--ttft-drift"),
                           (self.tier_off_after_s, "--tier-off-after")):
            if value is not None and not value >= 0:  # NaN is refused too
                raise UsageError(f"must be >= 0, got {value}", key=key)


# EngineSpec fields the server does not report in gate_sim.config: where it listens, and
# the arm's own state (its tier directory and whether it is emptied at start, its
# diskstats files, the prompt-digest cache, which changes no modelled number), and what
# the hosts around the engine do (a storage host that lies is not the engine's to say).
# The faults are reported field by field.
NOT_REPORTED = frozenset({"host", "port", "tier_dir", "tier_reset", "diskstats", "cache_dir",
                          "kv_diskstats", "kv_dev", "storage_host_lies"})
_PATHS = ("tier_dir", "diskstats", "kv_diskstats", "cache_dir")


@dataclass(frozen=True)
class EngineSpec:
    profile: str = DEFAULT_PROFILE
    host: str = "127.0.0.1"
    port: int = 8000
    external_tier: bool = False
    speed: float = 1.0  # divides every modelled duration
    tp: int | None = None  # None: the profile's default
    instance: int = 0  # index of this engine within its layout (TP4x2: 0 and 1)
    tier_dir: Path | None = None  # None with the tier on: an in-memory tier (lost on exit)
    tier_reset: bool = False
    diskstats: Path | None = None  # the storage host's view of the tier's device
    diskstats_device: str = "nvme9n1"
    # The GPU host's view: its KV volume (the NVMe-oF namespace) reads what the device
    # read, on a line numbered `kv_dev` (MAJ:MIN; None: the tier directory's filesystem,
    # as findmnt -T numbers it), so G3's kv_volume check finds it.
    kv_diskstats: Path | None = None
    kv_dev: str | None = None
    # The storage host's diskstats count the memory tier's hits as device reads, as a
    # `dd` on the vendor's storage host during the phase would; the GPU host's do not.
    storage_host_lies: bool = False
    cache_dir: Path | None = None  # shared prompt-digest cache (speed only, no numbers)
    tier_read_gbps: float | None = None  # override the profile's tier read bandwidth
    model: str | None = None  # serve under another name (arms that differ, on purpose)
    seed: int = 0
    stream_interval: int = 1  # tokens per streamed chunk after the first, like vLLM's
    eos_rate: float = 0.0  # share of requests that end early at an EOS (unless ignore_eos)
    # False: /metrics shows no counter that tells a tier read from a recompute (like
    # llama.cpp or TGI), though the tier still serves: the storage-only evidence path.
    tier_counters: bool = True
    # Share of the tier's hits served by a DRAM tier in front of the device (an LMCache
    # server or a Mooncake DRAM pool that outlives the engine's restart): counted as
    # external hits, but not read from the device (its diskstats show nothing).
    memory_tier: float = 0.0
    faults: FaultSpec = field(default_factory=FaultSpec)

    def resolved_profile(self) -> Profile:
        return get_profile(self.profile)

    def resolved_tp(self) -> int:
        return self.tp if self.tp is not None else self.resolved_profile().default_tp

    def served_model(self) -> str:
        return self.model or self.resolved_profile().model

    def check(self) -> None:
        self.resolved_profile()
        if not self.speed > 0:
            raise UsageError(f"must be > 0, got {self.speed}", key="--speed")
        if self.tp is not None and self.tp < 1:
            raise UsageError(f"must be >= 1, got {self.tp}", key="--tp")
        if self.instance < 0:
            raise UsageError("must be >= 0", key="--instance")
        if not 0 <= self.port <= 65535:
            raise UsageError(f"not a port: {self.port}", key="--port")
        if self.tier_read_gbps is not None and not self.tier_read_gbps > 0:
            raise UsageError(f"must be > 0, got {self.tier_read_gbps}", key="--tier-read-gbps")
        if self.stream_interval < 1:
            raise UsageError("must be >= 1", key="--stream-interval")
        if not 0.0 <= self.eos_rate <= 1.0:
            raise UsageError(f"must be between 0 and 1, got {self.eos_rate}", key="--eos-rate")
        if self.kv_dev is not None and not re.fullmatch(r"\d+:\d+", self.kv_dev):
            raise UsageError(f"not MAJ:MIN: {self.kv_dev!r}", key="--kv-dev")
        if not 0.0 <= self.memory_tier <= 1.0:
            raise UsageError(f"must be between 0 and 1, got {self.memory_tier}",
                             key="--memory-tier")
        self.faults.check()

    def reported_config(self) -> dict[str, Any]:
        """Every parameter that changes how this engine behaves, as the server reports it
        (/v1/models `gate_sim.config`): two arms started alike differ here only in
        `external_tier` (and a layout's instances in `instance`). Left out
        (NOT_REPORTED): where it listens and the paths of the arm's own state."""
        f = self.faults
        return {
            "profile": self.profile, "tp": self.resolved_tp(), "instance": self.instance,
            "external_tier": self.external_tier, "speed": self.speed, "seed": self.seed,
            "stream_interval": self.stream_interval, "tier_read_gbps": self.tier_read_gbps,
            "model": self.model, "eos_rate": self.eos_rate,
            "tier_counters": self.tier_counters, "memory_tier": self.memory_tier,
            "diskstats_device": self.diskstats_device,
            "error_rate": f.error_rate, "stall_rate": f.stall_rate, "stall_s": f.stall_s,
            "crash_after": f.crash_after, "slow_start_s": f.slow_start_s,
            "leak_mb_per_h": f.leak_mb_per_h, "ttft_drift_per_h": f.ttft_drift_per_h,
            "tier_off_after_s": f.tier_off_after_s,
        }

    def url(self) -> str:
        host = self.host
        if host in ("0.0.0.0", "", "::"):
            host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    def for_restart(self) -> EngineSpec:
        """A cold restart keeps the tier: never reset it again."""
        return replace(self, tier_reset=False)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key in _PATHS:
            if data[key] is not None:
                data[key] = str(data[key])
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EngineSpec:
        data = dict(data)
        faults = FaultSpec(**data.pop("faults", {}))
        for key in _PATHS:
            if data.get(key) is not None:
                data[key] = Path(data[key])
        return cls(faults=faults, **data)

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, sort_keys=True)

    def to_argv(self) -> list[str]:
        """The `gate sim` options that recreate this spec."""
        argv = [
            "--profile", self.profile, "--host", self.host, "--port", str(self.port),
            "--external-tier", "on" if self.external_tier else "off",
            "--speed", repr(self.speed), "--instance", str(self.instance),
            "--seed", str(self.seed), "--stream-interval", str(self.stream_interval),
            "--diskstats-device", self.diskstats_device,
        ]
        if self.tp is not None:
            argv += ["--tp", str(self.tp)]
        if self.tier_dir is not None:
            argv += ["--tier-dir", str(self.tier_dir)]
        if self.tier_reset:
            argv.append("--tier-reset")
        if self.diskstats is not None:
            argv += ["--diskstats", str(self.diskstats)]
        if self.kv_diskstats is not None:
            argv += ["--kv-diskstats", str(self.kv_diskstats)]
        if self.kv_dev is not None:
            argv += ["--kv-dev", self.kv_dev]
        if self.storage_host_lies:
            argv.append("--storage-host-lies")
        if self.cache_dir is not None:
            argv += ["--cache-dir", str(self.cache_dir)]
        if self.tier_read_gbps is not None:
            argv += ["--tier-read-gbps", repr(self.tier_read_gbps)]
        if self.model is not None:
            argv += ["--model", self.model]
        if self.eos_rate:  # only when set: a spawner older than --eos-rate still forks
            argv += ["--eos-rate", repr(self.eos_rate)]
        if not self.tier_counters:  # only when off, as --eos-rate
            argv += ["--tier-counters", "off"]
        if self.memory_tier:  # only when set, as --eos-rate
            argv += ["--memory-tier", repr(self.memory_tier)]
        f = self.faults
        argv += ["--error-rate", repr(f.error_rate), "--stall-rate", repr(f.stall_rate),
                 "--stall-s", repr(f.stall_s), "--slow-start", repr(f.slow_start_s)]
        if f.crash_after is not None:
            argv += ["--crash-after", str(f.crash_after)]
        # the soak's faults only when set, as --eos-rate
        if f.leak_mb_per_h:
            argv += ["--memory-leak", repr(f.leak_mb_per_h)]
        if f.ttft_drift_per_h:
            argv += ["--ttft-drift", repr(f.ttft_drift_per_h)]
        if f.tier_off_after_s is not None:
            argv += ["--tier-off-after", repr(f.tier_off_after_s)]
        return argv
