"""G1's probe fan-out: how long reading N hosts takes when every tool call costs a
realistic command latency (SSH round trip + the tool itself, ~0.5 s).

Each simulated host answers its hardware tools from the packaged captures (gpu-t4:
nvidia-smi, ethtool) and runs the rest (date, uname, cat, dmesg) on this machine, after
sleeping `--latency` seconds per call. G1 reads hosts in parallel (one thread per host),
each host's probes one after another, so N hosts should take about as long as one.

Goal (issue 14): 32 hosts within 3x the time of one.

Run: .venv/bin/python benchmarks/g1_fanout.py [--latency 0.5] [--hosts 1,8,32]
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.config.models import Bom, GpuBom, NicBom, OsBom
from harness.g1.collect import probes_for, read_all
from harness.g1.plan import HostPlan, _health
from harness.sim.hosts import load_catalog
from harness.transport.local import LocalTransport
from harness.transport.result import CommandResult


class SlowSimulatedHost(LocalTransport):
    """A host `latency` seconds away whose hardware tools answer from a capture profile."""

    def __init__(self, host: str, profile: str, latency: float) -> None:
        super().__init__(host)
        catalog = load_catalog()
        found = catalog.get(profile)
        assert found is not None
        self.catalog, self.profile, self.latency = catalog, found, latency

    def run(self, argv: Sequence[str], *, timeout: float = 60, sudo: bool = False,
            env: Mapping[str, str] | None = None,
            stdin: str | bytes | None = None) -> CommandResult:
        time.sleep(self.latency)
        if self.catalog.simulates(argv):
            started = time.time()
            answer = self.profile.answer(argv, self.host)
            return CommandResult(self.host, tuple(argv), answer.rc, answer.stdout,
                                 answer.stderr, started, 0.0, simulated=True)
        return super().run(argv, timeout=timeout, sudo=sudo, env=env, stdin=stdin)


def one(hosts: int, latency: float, out: Path) -> tuple[float, int]:
    # the os item names this machine's kernel, as the demo's BOM does: an empty one is
    # refused (it would check nothing), and uname runs here for real
    bom = Bom(gpu=GpuBom(model="T4", count=1),
              nic=NicBom(model="e1000e", count=1, interfaces=["eth0"]),
              os=OsBom(kernel=platform.release()))
    plans = [HostPlan(f"gpu{i}", "gpu", bom, ("gpu", "nic", "os"), _health(bom))
             for i in range(hosts)]
    transports = {p.host: SlowSimulatedHost(p.host, "gpu-t4", latency) for p in plans}
    started = time.perf_counter()
    readings = read_all(plans, transports.__getitem__, "gdscheck", out / str(hosts), 60.0)
    wall = time.perf_counter() - started
    assert not any(r.unreachable for r in readings.values())
    return wall, len(probes_for(bom, _health(bom), "gdscheck"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--hosts", default="1,8,32")
    args = ap.parse_args()
    counts = [int(n) for n in args.hosts.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        results = {n: one(n, args.latency, Path(tmp)) for n in counts}
    base = results[counts[0]][0]
    print(f"latency per tool call: {args.latency:g} s; probes per host: "
          f"{results[counts[0]][1]} (one after another on a host, hosts in parallel)")
    print(f"{'hosts':>5}  {'wall s':>7}  {'x one host':>10}")
    for n, (wall, _) in results.items():
        print(f"{n:>5}  {wall:>7.2f}  {wall / base:>10.2f}")


if __name__ == "__main__":
    main()
