"""Reading every host's hardware at once: each host's probes run in its own thread (the
transport pool's executor), so 32 hosts take about as long as one. Every raw output is
saved as an artifact with its sha256 before anything parses it.

A host that cannot be reached is an error for that host only; a tool that is missing
(exit 127) or fails is an error for the items that need it, never a silent pass.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from harness.config.models import Bom
from harness.errors import TransportError
from harness.g1.plan import HostPlan
from harness.progress_log import HostProbes
from harness.transport import Transport
from harness.transport.result import CommandResult, describe, tail

MISSING = 127  # the shell's "command not found"; a simulated host's "no capture"
# This boot's kernel messages as the journal kept them (`-b`: this boot only).
JOURNAL_KERNEL = ("journalctl", "-k", "-b", "--no-pager")
# Run by the engine's interpreter on the host: each distribution's version, null if absent.
VERSIONS_SCRIPT = ("import importlib.metadata as m, json, sys\n"
                   "def v(n):\n"
                   "    try:\n        return m.version(n)\n"
                   "    except m.PackageNotFoundError:\n        return None\n"
                   "print(json.dumps({n: v(n) for n in sys.argv[1:]}))")


@dataclass(frozen=True)
class Probe:
    name: str  # artifact stem and lookup key: "nvidia-smi", "ethtool-i.eth0"
    argv: tuple[str, ...]
    sudo: bool = False
    measured_codes: tuple[int, ...] = (0,)  # exit codes whose output is still a reading


@dataclass
class ProbeOutput:
    probe: Probe
    result: CommandResult | None = None
    path: Path | None = None  # the raw output as saved (stdout, then stderr)
    sha256: str = ""
    error: str = ""  # why there is no usable output (missing tool, exit code, transport)

    @property
    def text(self) -> str:
        assert self.result is not None
        return self.result.stdout


@dataclass
class HostReading:
    host: str
    outputs: dict[str, ProbeOutput] = field(default_factory=dict)
    unreachable: str = ""  # the transport error when the host could not be reached
    clock_offset_s: float | None = None  # host clock minus ours, at the probe's midpoint
    simulated: bool = False


def probes_for(bom: Bom, health: Sequence[str], gdscheck: str) -> list[Probe]:
    """The commands one host's BOM and health checks need, each once."""
    wanted: list[Probe] = [Probe("date", ("date", "+%s.%N"))]
    if bom.gpu is not None:
        wanted.append(Probe("nvidia-smi", ("nvidia-smi", "-q", "-x")))
    if bom.nvme is not None:
        wanted.append(Probe("nvme-list", ("nvme", "list", "-o", "json"), sudo=True))
    if bom.nic is not None:
        for iface in bom.nic.interfaces:
            wanted += [Probe(f"ethtool.{iface}", ("ethtool", iface)),
                       Probe(f"ethtool-i.{iface}", ("ethtool", "-i", iface))]
        if not bom.nic.interfaces:
            wanted.append(Probe("ibstat", ("ibstat",)))
    if bom.gds:
        wanted.append(Probe("gdscheck", (gdscheck, "-p")))
    if bom.volume is not None:
        wanted.append(Probe("list-subsys", ("nvme", "list-subsys", "-o", "json"), sudo=True))
        if bom.volume.min_size_gb is not None and bom.nvme is None:  # its namespaces' sizes
            wanted.append(Probe("nvme-list", ("nvme", "list", "-o", "json"), sudo=True))
    if bom.os is not None:
        wanted += [Probe("uname", ("uname", "-r")), Probe("os-release", ("cat", "/etc/os-release"))]
    if bom.software is not None:
        wanted.append(Probe("packages", (bom.software.python, "-c", VERSIONS_SCRIPT,
                                         *sorted(bom.software.packages))))
    if bom.weights is not None:
        files = [posixpath.join(bom.weights.directory, f) for f in sorted(bom.weights.manifest)]
        # exit 1 is "some file missing": a finding about the weights, not a failed probe
        wanted += [Probe("weights-size", ("stat", "-c", "%s %n", *files), measured_codes=(0, 1)),
                   Probe("weights-sha256", ("sha256sum", *files), measured_codes=(0, 1))]
    if "pcie" in health:
        wanted.append(Probe("lspci", ("lspci", "-vvv"), sudo=True))
    if "xid" in health:  # the journal keeps what `dmesg -C` clears (harness/g1/xid.py)
        wanted += [Probe("journal-kernel", JOURNAL_KERNEL, sudo=True),
                   Probe("dmesg", ("dmesg",), sudo=True)]
    return wanted


def smart_probes(reading: HostReading) -> list[Probe]:
    """smart-log of each controller `nvme list` found (a second round: it needs the list)."""
    from harness.errors import ParseError
    from harness.probes.nvme import parse_nvme_list

    listed = reading.outputs.get("nvme-list")
    if listed is None or listed.error:
        return []
    try:
        devices = parse_nvme_list(listed.text)
    except ParseError:
        return []
    return [Probe(f"smart-log.{Path(d.device).name}", ("nvme", "smart-log", d.device, "-o",
                                                       "json"), sudo=True) for d in devices]


def _run_one(transport: Transport, probe: Probe, host: str, artifact_dir: Path,
             timeout: float) -> ProbeOutput:
    out = ProbeOutput(probe)
    result = transport.run(list(probe.argv), timeout=timeout, sudo=probe.sudo)
    out.result = result
    path = artifact_dir / host / f"{probe.name}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(result.stdout + (f"\n--- stderr ---\n{result.stderr}" if result.stderr
                                     else ""), encoding="utf-8")
    out.path = path
    out.sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    command = describe(probe.argv, sudo=probe.sudo)
    if result.rc == MISSING:
        out.error = f"{command}: tool missing on the host ({tail(result.stderr, 200)})"
    elif result.rc not in probe.measured_codes:
        out.error = f"{command} exited {result.rc}: {tail(result.stderr or result.stdout, 300)}"
    return out


def read_host(transport: Transport, plan: HostPlan, gdscheck: str, artifact_dir: Path,
              timeout: float, shown: HostProbes | None = None) -> HostReading:
    reading = HostReading(plan.host)
    try:
        for rounds in range(2):
            probes = (probes_for(plan.bom, plan.health, gdscheck) if rounds == 0
                      else smart_probes(reading) if "nvme-smart" in plan.health else [])
            for probe in probes:
                if shown is not None:
                    shown.probing(plan.host, probe.argv[0].rsplit("/", 1)[-1])
                before = time.time()
                output = _run_one(transport, probe, plan.host, artifact_dir, timeout)
                after = time.time()
                reading.outputs[probe.name] = output
                if output.result is not None and output.result.simulated:
                    reading.simulated = True
                if probe.name == "date" and not output.error:
                    found = re.match(r"^\s*(\d+(?:\.\d+)?)", output.text)
                    if found:
                        reading.clock_offset_s = float(found.group(1)) - (before + after) / 2
    except TransportError as exc:
        reading.unreachable = exc.one_line()
    return reading


def read_all(plans: Sequence[HostPlan], transport_for: Callable[[str], Transport],
             gdscheck: str, artifact_dir: Path, timeout: float,
             workers: int = 32) -> dict[str, HostReading]:
    """Every host at once; a host whose transport cannot even be made is unreachable.
    The caller records the saved outputs (`ProbeOutput.path`) from its own thread."""
    if not plans:
        return {}
    shown = HostProbes("G1", len(plans))  # the command line's progress line

    def one(plan: HostPlan) -> HostReading:
        try:
            try:
                transport = transport_for(plan.host)
            except TransportError as exc:
                return HostReading(plan.host, unreachable=exc.one_line())
            return read_host(transport, plan, gdscheck, artifact_dir, timeout, shown)
        finally:
            shown.probed(plan.host)

    with ThreadPoolExecutor(max_workers=min(workers, len(plans)),
                            thread_name_prefix="gate-g1") as pool:
        return {r.host: r for r in pool.map(one, plans)}
