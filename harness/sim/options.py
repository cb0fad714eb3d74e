"""The engine's command-line options, shared by `gate sim` and
`python -m harness.sim.control start`, turned into one EngineSpec.

Each option stores its value in ctx.meta (not in the callback's arguments), so a command
gets the whole spec from `spec_from_context(ctx)` and keeps a short signature.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from harness.errors import UsageError
from harness.sim.profiles import DEFAULT_PROFILE, PROFILES
from harness.sim.spec import EngineSpec, FaultSpec

F = TypeVar("F", bound=Callable[..., Any])
_META = "harness.sim.engine_options"


def _keep(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    assert param.name is not None
    ctx.meta.setdefault(_META, {})[param.name] = value
    return value


def _opt(*decls: str, **attrs: Any) -> Callable[[F], F]:
    return click.option(*decls, expose_value=False, callback=_keep, **attrs)


_PROFILE_HELP = "; ".join(f"{p.name}: {p.summary}" for p in PROFILES.values())

ENGINE_OPTIONS: list[Callable[[F], F]] = [
    _opt("--profile", type=click.Choice(list(PROFILES)), default=DEFAULT_PROFILE,
         show_default=True, help=f"Engine profile. {_PROFILE_HELP}."),
    _opt("--host", default="127.0.0.1", show_default=True,
         help="Address to bind (any address, e.g. one inside a network namespace)."),
    _opt("--port", type=int, default=8000, show_default=True, help="TCP port (0: any free)."),
    _opt("--external-tier", type=click.Choice(["on", "off"]), default="off",
         show_default=True, help="Serve with the external KV tier (the accelerated arm)."),
    _opt("--tier-counters", type=click.Choice(["on", "off"]), default="on",
         show_default=True,
         help="off: /metrics hides every counter that tells a tier read from a recompute "
              "(external prefix cache, prompt tokens by source, lmcache:*), as engines "
              "without one (llama.cpp, TGI); the tier still serves."),
    _opt("--memory-tier", type=float, default=0.0, show_default=True,
         help="Share of the tier's hits served from a DRAM tier in front of the device "
              "that outlives restarts (an LMCache server, a Mooncake DRAM pool): counted "
              "as external hits, never read from the device."),
    _opt("--speed", type=float, default=1.0, show_default=True,
         help="Divide every modelled duration by this (shown in /v1/models and /metrics)."),
    _opt("--tp", type=int, default=None, help="Tensor-parallel degree [profile's default]."),
    _opt("--instance", type=int, default=0, show_default=True,
         help="This engine's index within its layout (TP4x2: 0 and 1)."),
    _opt("--tier-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
         help="Directory of the tier's index, shared by instances, kept across restarts "
              "[in memory: lost on exit]."),
    _opt("--tier-reset", is_flag=True, help="Empty the tier's index at start."),
    _opt("--diskstats", type=click.Path(dir_okay=False, path_type=Path), default=None,
         help="Account the tier's reads/writes into this /proc/diskstats-format file."),
    _opt("--diskstats-device", default="nvme9n1", show_default=True,
         help="Device name on the diskstats line."),
    _opt("--kv-diskstats", type=click.Path(dir_okay=False, path_type=Path), default=None,
         help="The GPU host's view: account the tier's device reads into this file too, "
              "as its KV volume (the NVMe-oF namespace) would count them."),
    _opt("--kv-dev", default=None,
         help="MAJ:MIN of the --kv-diskstats line [the tier directory's filesystem's, as "
              "findmnt -T numbers it]."),
    _opt("--storage-host-lies", is_flag=True,
         help="The storage host's --diskstats count the memory tier's hits as device "
              "reads (a `dd` on the storage host); --kv-diskstats does not."),
    _opt("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
         help="Share tokenized-prompt digests here (CPU only: engines restarted on the "
              "same documents skip re-tokenizing; no modelled number changes)."),
    _opt("--tier-read-gbps", type=float, default=None,
         help="Override the profile's tier read bandwidth (GB/s at the profile's TP)."),
    _opt("--model", default=None, help="Serve under this model id [the profile's]."),
    _opt("--seed", type=int, default=0, show_default=True,
         help="Seed of jitter, faults and EOS draws."),
    _opt("--stream-interval", type=int, default=1, show_default=True,
         help="Tokens per streamed chunk after the first (vLLM's --stream-interval)."),
    _opt("--eos-rate", type=float, default=0.0, show_default=True,
         help="Share of requests that end early at an EOS token (finish_reason \"stop\"), "
              "unless the request sets ignore_eos (then: max_tokens, \"length\")."),
    _opt("--error-rate", type=float, default=0.0, show_default=True,
         help="Share of requests that fail (HTTP 500, or a stream cut mid-way)."),
    _opt("--stall-rate", type=float, default=0.0, show_default=True,
         help="Share of requests whose stream stalls once."),
    _opt("--stall-s", type=float, default=5.0, show_default=True,
         help="Modelled seconds of one stall."),
    _opt("--crash-after", type=int, default=None,
         help="Exit the process when request N+1 arrives (a crash)."),
    _opt("--slow-start", type=float, default=0.0, show_default=True,
         help="Modelled seconds of HTTP 503 on /health after start."),
    _opt("--memory-leak", type=float, default=0.0, show_default=True, metavar="MB_PER_H",
         help="The engine's modelled RSS (process_resident_memory_bytes) grows this many "
              "MB per modelled hour since start (a leak a soak must catch)."),
    _opt("--ttft-drift", type=float, default=0.0, show_default=True, metavar="SHARE_PER_H",
         help="Every modelled tier read and prefill before the first token takes "
              "(1 + SHARE_PER_H x modelled hours since start) times as long."),
    _opt("--tier-off-after", type=float, default=None, metavar="SECONDS",
         help="After this many modelled seconds since start the external tier silently "
              "stops serving: lookups miss, the engine recomputes, requests still succeed."),
]


def engine_options(f: F) -> F:
    for opt in reversed(ENGINE_OPTIONS):
        f = opt(f)
    return f


def spec_from_context(ctx: click.Context) -> EngineSpec:
    v = ctx.meta.get(_META, {})
    faults = FaultSpec(error_rate=v["error_rate"], stall_rate=v["stall_rate"],
                       stall_s=v["stall_s"], crash_after=v["crash_after"],
                       slow_start_s=v["slow_start"], leak_mb_per_h=v["memory_leak"],
                       ttft_drift_per_h=v["ttft_drift"],
                       tier_off_after_s=v["tier_off_after"])
    spec = EngineSpec(
        profile=v["profile"], host=v["host"], port=v["port"],
        external_tier=v["external_tier"] == "on", speed=v["speed"], tp=v["tp"],
        instance=v["instance"], tier_dir=v["tier_dir"], tier_reset=v["tier_reset"],
        diskstats=v["diskstats"], diskstats_device=v["diskstats_device"],
        kv_diskstats=v["kv_diskstats"], kv_dev=v["kv_dev"],
        storage_host_lies=v["storage_host_lies"],
        cache_dir=v["cache_dir"], tier_read_gbps=v["tier_read_gbps"], model=v["model"],
        seed=v["seed"], stream_interval=v["stream_interval"], eos_rate=v["eos_rate"],
        tier_counters=v["tier_counters"] == "on", memory_tier=v["memory_tier"],
        faults=faults)
    spec.check()
    if spec.tier_reset and not spec.external_tier:
        raise UsageError("--tier-reset needs --external-tier on", key="--tier-reset")
    return spec
