"""The site `gate demo` writes: its gate.yaml, per scenario (which simulator profile the
engines run, and for the soak scenarios the fault G4's engine carries). Pure: text out."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# scenario -> the simulator profile of its engines; `bad-arrival` stops at G1 (its GPU
# host's link runs below capability: harness.workflow.demo_hardware.py), so G3 never runs.
SCENARIOS = {"default": "r1-qwen32b", "null": "null", "broken-baseline": "broken-baseline",
             "bad-arrival": "r1-qwen32b", "soak-drift": "r1-qwen32b",
             "soak-fallback": "r1-qwen32b"}

# The soak scenarios: G1-G3 exactly as `default` (same profile, same arms, the same engines
# on the same layouts), then a G4 whose engine carries a fault a soak must catch. G4 soaks
# its own layout (gates.g4.layout), TP8 again under another name that G3 does not measure
# (gates.g3.layouts), and the accelerated arm's start command adds the fault flags for that
# layout only, so no engine of G2 or G3 ever runs with them (harness.sim.spec FaultSpec).
SPAWNER_SOCKET = "spawner.sock"  # in the site dir; an AF_UNIX path: at most 107 bytes


def spawner_socket(root: Path) -> Path:
    """The site's spawner socket: in its directory, or, where that path is longer than a
    unix socket's 107 bytes (a deep --out, a test's temp dir), a short one in /tmp named
    after the site, so every command of the site names the same socket."""
    import hashlib

    sock = root / SPAWNER_SOCKET
    if len(os.fsencode(str(sock))) <= 107:
        return sock
    digest = hashlib.sha256(os.fsencode(str(root.resolve()))).hexdigest()[:16]
    return Path("/tmp") / f"gate-spawner-{digest}.sock"

SOAK_LAYOUT = "TP8-soak"
# In wall seconds of the demo (the simulator's faults count modelled seconds since the
# engine started: wall x speed). G4's engine starts, its documents are calibrated with
# /tokenize and the tier warmed with every one (8-13 s measured on 2 cores), then it soaks
# for 24 s, the first 8 s of them the baseline.
# soak-fallback: the tier stops serving 9-14 s into the soak, after its baseline, and a
# window after that has no external-tier hits. A slower start puts it in the baseline
# (still STOP-LOSS: a later window has none); a faster one cannot put it past the soak's
# last window, which starts 22 s after the soak does.
SOAK_TIER_OFF_S = 22.0
# soak-drift: TTFT's modelled phases grow by 3x their level at the engine's start per 24 s
# (about x2 when the soak starts, x5 at its end). The TTFT a client measures at speed 30
# is ~10 ms of model and a few of this machine's own, which on a busy machine varies by
# +-2.5 ms window to window; a drift must be steep to put even the interval's optimistic
# end past G4's 10 % there: at +0.5x per 24 s the interval straddled it ([-32 %, 113 %]),
# at 3x it reads ~+100 % per 24 s. The closed loop's cycles lengthen with the TTFT (~12 %
# of a cycle at c=4), so throughput drifts down too (~-25 %): G4 names both.
SOAK_TTFT_RISE = 3.0
SOAK_LENGTH_S = 24.0  # gates.g4.duration below


def soak_faults(scenario: str, speed: float) -> list[str]:
    """The `gate sim` flags of a soak scenario's G4 engine (none for the others), scaled
    to the speed so the fault lands in the same part of the 24 s soak at any --speed."""
    if scenario == "soak-drift":  # SHARE_PER_H: the rise over the soak's modelled hours
        return ["--ttft-drift", f"{SOAK_TTFT_RISE / (SOAK_LENGTH_S * speed / 3600.0):.6g}"]
    if scenario == "soak-fallback":
        return ["--tier-off-after", f"{SOAK_TIER_OFF_S * speed:.6g}"]
    return []



def _engine_cmd(verb: str, state: Path, extra: list[str],
                only_on: tuple[str, list[str]] | None = None) -> str:
    """The arm's command; `only_on` (layout, flags): the flags are added on that layout
    only, by a POSIX sh that compares the filled-in `{layout}` ($0) with it."""
    argv = [sys.executable, "-m", "harness.sim.control", verb, "--state-dir", str(state), *extra]
    if only_on is not None:
        layout, flags = only_on
        script = (f'if [ "$0" = {layout} ]; then exec "$@" {" ".join(flags)}; fi; '
                  'exec "$@"')
        argv = ["sh", "-c", script, "{layout}", *argv]
    return "[" + ", ".join(_q(a) for a in argv) + "]"


def _q(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def site_yaml(root: Path, scenario: str, port: int, speed: float) -> str:
    from harness.workflow.demo_hardware import g1_yaml, g2_yaml, kv_volume

    profile = SCENARIOS[scenario]
    faults = soak_faults(scenario, speed)
    engines = root / "engines"
    tier = root / "tier"
    disk = root / "storage" / "diskstats"
    # The GPU host's side of the tier's reads: its KV volume is the tier directory, on a
    # line numbered as findmnt -T numbers that directory's filesystem (none: no findmnt).
    volume = kv_volume(tier, root / "gpu1" / "diskstats")

    def arm(name: str, tier_on: bool) -> str:
        state = engines / f"{name}-{{layout}}-{{instance}}"
        common = ["--profile", profile, "--port", "{port}", "--tp", "{tp}",
                  "--instance", "{instance}", "--speed", str(speed),
                  "--external-tier", "on" if tier_on else "off", "--diskstats", str(disk),
                  "--seed", "7", "--cache-dir", str(root / "tokcache"),
                  "--stream-interval", "8"]
        if tier_on:
            common += ["--tier-dir", str(tier)]
        if volume is not None:
            common += ["--kv-diskstats", volume.diskstats, "--kv-dev", volume.majmin]
        # Engines fork from the demo's pre-imported spawner (restart reuses it); once the
        # demo is over and the spawner gone, these commands start new interpreters instead.
        start = [*common, "--spawner", str(spawner_socket(root))]
        # A soak scenario's fault: on G4's own layout only (SOAK_LAYOUT), never on G3's.
        only_on = (SOAK_LAYOUT, faults) if tier_on and faults else None
        # The only differences G3 accepts between the arms' running engines: the tier
        # switch, the tier's directory, each arm's own state path (docs/g3.md).
        differs = ("    differs_by: [\"argv:--external-tier\", \"argv:--tier-dir\", "
                   "\"argv:--url-file\", \"server:gate_sim*external_tier\"]\n"
                   if tier_on else "")
        return (f"  {name}:\n"
                f"    start: {{command: {_engine_cmd('start', state, start, only_on)}}}\n"
                f"    stop: {{command: {_engine_cmd('stop', state, [])}}}\n"
                f"    restart: {{command: {_engine_cmd('restart', state, [])}}}\n"
                f"    health_timeout: 60\n{differs}"
                # each engine's stdout and stderr (harness.sim.control), fetched into the
                # evidence after every stop
                f"    logs: [{_q(str((state / 'engine.log').absolute()))}]\n")

    soak_layout = g3_layouts = g4_layout = ""
    if faults:
        soak_layout = (f"  # G4's own: the same TP8, which G3 does not measure; its engine "
                       f"starts with {' '.join(faults)}\n"
                       f"  - {{name: {SOAK_LAYOUT}, tp: 8, instances: [{{host: gpu1, port: "
                       f"{port}}}]}}\n")
        g3_layouts = "    layouts: [TP8, TP4x2]   # every layout but G4's own\n"
        g4_layout = f"    layout: {SOAK_LAYOUT}\n"
    return f"""\
# Written by `gate demo`: a simulated lab on this machine ({scenario} scenario,
# profile {profile}, speed x{speed:g}). Every run against it is flagged SIMULATED.
site: {{name: demo-lab, customer: "Demo Customer 演示客户", vendor: "Demo Vendor"}}
campaign: {{name: demo-{scenario}, operator: demo}}
inventory: hosts.ini
known_hosts: known_hosts
simulated: true
model: {{name: Qwen/Qwen2.5-32B-Instruct, layers: 64, kv_heads: 8, head_dim: 128, dtype: bf16}}
arms:
{arm("baseline", False)}{arm("accelerated", True)}
layouts:
  - {{name: TP8, tp: 8, instances: [{{host: gpu1, port: {port}}}]}}
  - {{name: TP4x2, tp: 4, instances: [{{host: gpu1, port: {port}}},
                                    {{host: gpu1, port: {port + 1}}}]}}
{soak_layout}load: {{placement: local, timeout: 120}}
# min_docs 32: 4 x c documents a phase, at least 32 (a site's default is at least 64, for
# power at c=4). At c=4 sixteen documents made a 0.35 s phase, where one 30 ms stall of a
# simulated engine moved a pair's gain by 0.1; 32 documents halve that, at c=8 and c=16
# nothing changes, and the demo stays within minutes.
workload: {{kind: doc-qa, doc_tokens: 32000, question_tokens: 64, max_tokens: 128, seed: 7,
           min_docs: 32}}
gates:
{g1_yaml(scenario)}{g2_yaml(root)}  g3:
{g3_layouts}    tiers: [4, 8, 16]
    repetitions: {{min: 3, max: 8}}
    drop_caches_on: []        # simulated hosts: there is no page cache in front of the tier
    bootstrap: 1000
    # What the demo's steps take on a quiet 2-core machine (benchmarks/demo.py), so that
    # `gate run G3 --dry-run -c` this file estimates minutes, not a real site's hours.
    estimate: {{start_s: 0.6, restart_s: 0.6, stop_s: 0.4, drop_caches_s: 0,
                recompute_tokens_per_s: 900000, tier_tokens_per_s: 1500000}}
    evidence:
      diskstats: {disk}
      storage_groups: [storage]
{volume.yaml() if volume is not None else ""}  g4:
    # A soak of seconds, not 72 h: a demo shows how G4 judges windows, not a stack's
    # stability (a soak shorter than 72 h is a weakened setting: it needs a sign-off).
    duration: 24s
    window: 2s
    baseline: 8s
    concurrency: 4
    # A 24 s soak on a shared machine measures TTFT p50 (~12 ms) to about +-10 % from
    # window to window: held to the default 10 %, the machine's own noise would decide
    # the drifts. 50 % still catches soak-drift's fault (TTFT doubling over the soak).
    criteria: {{max_ttft_drift_per_24h: 0.5, max_throughput_drift_per_24h: 0.5}}
    # What the simulated hosts cannot show while the soak runs (each needs a sign-off; the
    # GPUs' ECC counters are read from the GPU host's nvidia-smi capture and judged).
    unverifiable:
      xid: "the simulated hosts have no kernel log of their own (journalctl reads this machine's)"
      nvme: "no permissively licensed nvme smart-log capture ships with the simulated hosts"
{g4_layout}# `gate plan` holds the SLA against G2's figures of this fio target (docs/plan.md)
plan: {{volume: volume}}
report: {{lang: en}}
"""


