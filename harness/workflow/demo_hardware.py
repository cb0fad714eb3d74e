"""The demo's arrival evidence: which captured machine each simulated host is, and the
bill of materials G1 checks, written from those same captures (what was "ordered" is
what the captures describe), plus what the simulated lab cannot check, said so.

Why from the captures: a BOM typed by hand would drift from the packaged captures; read
from them, the default demo's G1 passes for the right reason (every item matches) and the
`bad-arrival` scenario fails for the right one (its GPU's PCIe link runs x8 of x16 in the
real capture it answers with).
"""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ParseError
from harness.probes.findmnt import Mount, parse_findmnt
from harness.probes.mounts import NOT_DIRECT
from harness.probes.mounts import argv as findmnt_argv
from harness.probes.nic import parse_ethtool, parse_ethtool_driver
from harness.probes.nvidia_smi import parse_nvidia_smi_xml
from harness.sim.hosts import HardwareProfile, load_catalog

# scenario -> the GPU host's hardware profile (harness/sim/hosts/captures/profiles.yaml).
# gpu-8xv100s: eight Tesla V100S at x16 of x16, enough for the demo's layouts (TP8 and
# TP4x2 on gpu1 need 8 GPUs; G3 holds each layout against the GPUs G1 found).
# gpu-t4: one Tesla T4 whose link trained at x8 of x16: a G1 STOP-LOSS.
GPU_HARDWARE = {"bad-arrival": "gpu-t4"}
DEFAULT_GPU_HARDWARE = "gpu-8xv100s"
STORAGE_HARDWARE = "storage-nvme"
CLIENT_HARDWARE = "client"
# The client host's home in the demo's directory (`load.placement: client` ships the load
# agent to ~/.gate there), as an SSH login's home: harness/sim/hardware_transport.py.
CLIENT_HOME = "loadgen-sim-home"
CLIENT_VARS = f"gate_sim_hardware={CLIENT_HARDWARE} gate_sim_home={CLIENT_HOME}"

UNVERIFIABLE = {
    "pcie": "the simulated hosts have no lspci capture of their own machine",
    "gds": "no permissively licensed gdscheck capture ships; the simulated tier is a "
           "directory, not a GDS volume",
    "xid": "the simulated hosts have no kernel log of their own (journalctl and dmesg "
           "would read this machine's)",
}


def gpu_hardware(scenario: str) -> str:
    return GPU_HARDWARE.get(scenario, DEFAULT_GPU_HARDWARE)


def _profile(name: str) -> HardwareProfile:
    profile = load_catalog().get(name)
    if profile is None:
        raise KeyError(f"no simulated hardware profile {name!r}")
    return profile


def _answer(profile: HardwareProfile, argv: list[str]) -> str:
    answer = profile.answer(argv, "demo")
    if answer.rc != 0:
        raise KeyError(answer.stderr.strip())
    return answer.stdout


def _nic(profile: HardwareProfile, iface: str = "eth0") -> str:
    link = parse_ethtool(_answer(profile, ["ethtool", iface]))
    driver = parse_ethtool_driver(_answer(profile, ["ethtool", "-i", iface]))
    return (f"{{model: {driver.driver}, count: 1, interfaces: [{iface}], "
            f"min_rate_gbps: {link.speed_gbps:g}, firmware: \"{driver.firmware}\"}}")


def _os() -> str:
    """This machine's OS and kernel: the simulated hosts run everything but their
    hardware tools here, so `uname -r` answers for real."""
    release = Path("/etc/os-release")
    pretty = ""
    if release.is_file():
        for line in release.read_text(encoding="utf-8").splitlines():
            if line.startswith("PRETTY_NAME="):
                pretty = line.split("=", 1)[1].strip().strip('"')
    kernel = platform.release()
    return "{" + ", ".join(x for x in (pretty and f"os: \"{pretty}\"",
                                       f"kernel: \"{kernel}\"") if x) + "}"


def _software() -> str:
    """The engine's packages as installed here: the simulated engine is gate's own (no
    model weights to identify, so no `weights` item)."""
    import importlib.metadata as metadata
    import sys

    packages = {name: metadata.version(name) for name in ("gate-harness", "aiohttp")}
    listed = ", ".join(f"{n}: \"{v}\"" for n, v in packages.items())
    return f"{{python: \"{sys.executable}\", packages: {{{listed}}}}}"


def g1_yaml(scenario: str) -> str:
    """The `gates.g1` section of the demo's gate.yaml (indented under `gates:`)."""
    gpu = _profile(gpu_hardware(scenario))
    log = parse_nvidia_smi_xml(_answer(gpu, ["nvidia-smi", "-q", "-x"]))
    model = log.gpus[0].name if log.gpus else "none"
    reasons = "\n".join(f"      {k}: \"{v}\"" for k, v in UNVERIFIABLE.items())
    return f"""\
  g1:
    # Written from the captures the simulated hosts answer with ({gpu.name},
    # {STORAGE_HARDWARE}, {CLIENT_HARDWARE}); OS and kernel are this machine's.
    bom:
      gpu:
        gpu: {{model: "{model}", count: {len(log.gpus)}, min_driver: "{log.driver_version}",
              min_cuda: "{log.cuda_version}"}}
        nic: {_nic(gpu)}
        gds: true
        os: {_os()}
        software: {_software()}  # the simulated engine's own packages
      storage:
        nic: {_nic(_profile(STORAGE_HARDWARE))}
      client:
        nic: {_nic(_profile(CLIENT_HARDWARE))}
    # What this simulated lab cannot check: recorded SKIPPED with the reason, never PASS.
    unverifiable:
{reasons}
"""


def inventory(scenario: str) -> str:
    return f"""\
# Written by `gate demo`: every simulated host is this machine. gate_sim_hardware makes a
# host answer its hardware tools (nvidia-smi, nvme, lspci, ...) from captured real outputs
# (`gate hosts check` shows which); every other command runs here for real.
# gate_sim_home: where the client host's commands start (its ~, for the load agent).
[gpu]
gpu1 ansible_connection=local ansible_host=127.0.0.1 gate_sim_hardware={gpu_hardware(scenario)}
[storage]
fx100-sim ansible_connection=local ansible_host=127.0.0.1 gate_sim_hardware={STORAGE_HARDWARE}
[client]
loadgen-sim ansible_connection=local ansible_host=127.0.0.1 {CLIENT_VARS}
"""


def filesystem(path: Path) -> Mount | None:
    """What `path` is on, as G2 resolves it (findmnt -T); None without findmnt."""
    try:
        found = subprocess.run(findmnt_argv(str(path)), capture_output=True, text=True,
                               timeout=30, check=True)
        return parse_findmnt(found.stdout)
    except (OSError, subprocess.SubprocessError, ParseError):
        return None


def mount_point(path: Path) -> str:
    """The mount point `path` is on, so the demo's fio targets declare what they are;
    without findmnt, the nearest parent that is a mount."""
    found = filesystem(path)
    if found is not None:
        return found.target
    path = path.resolve()
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return str(path)


@dataclass(frozen=True)
class DemoKvVolume:
    """The demo's `gates.g3.evidence.kv_volume`: its tier directory as the GPU host's KV
    volume, and the line the simulated engines account its reads on (`majmin`)."""

    path: str
    mount: str
    direct: bool
    diskstats: str
    majmin: str

    def zero_line(self) -> None:
        """The simulated GPU host's diskstats before any engine ran: the volume's line at
        zero, as a real host's /proc/diskstats lists a device before anything reads it."""
        from harness.sim.diskstats import KV_DEVICE, DiskLine, format_line

        major, _, minor = self.majmin.partition(":")
        Path(self.diskstats).write_text(format_line(DiskLine(int(major), int(minor),
                                                             KV_DEVICE)))

    def yaml(self) -> str:
        return (f"      # the GPU host's side of the tier's reads: G3 resolves the path with\n"
                f"      # findmnt -T and reads that device's line of diskstats\n"
                f"      kv_volume: {{path: \"{self.path}\", mount: \"{self.mount}\", "
                f"direct: {str(self.direct).lower()}, diskstats: \"{self.diskstats}\"}}\n")


def kv_volume(tier: Path, diskstats: Path) -> DemoKvVolume | None:
    """The tier directory as findmnt resolves it; None without findmnt (then the demo's
    G3 reads the storage host's side alone, as a simulated site may)."""
    found = filesystem(tier.parent)
    if found is None or found.majmin is None:
        return None
    return DemoKvVolume(str(tier), found.target, found.fstype not in NOT_DIRECT,
                        str(diskstats), found.majmin)


def gdsio_yaml(root: Path) -> str:
    """gdsio on the demo's volume directory, where its filesystem could hold GDS files
    (GPU-direct reads need O_DIRECT: not on tmpfs or overlay, where G2 would refuse the
    directory); otherwise not configured, and the report has no gdsio row."""
    found = filesystem(root)
    if found is None or found.fstype in NOT_DIRECT:
        return ""
    return f"""\
    # GDS read throughput (gdsio -x 0) on the volume: the simulated GPU host has no gdsio
    # capture that may ship, so it answers "not installed" and the site declares the check
    # optional: SKIPPED with that reason, never a PASS.
    gdsio: {{path: "{root / 'storage' / 'gds'}", mount: "{found.target}", read_gib_s: 10}}
    optional: [test_gdsio]
"""


def g2_yaml(root: Path) -> str:
    """The `gates.g2` section: real fio on real files in the demo's directory (the GPU
    host's local disk and the storage host's volume, both directories here; never G3's
    tier directory, whose contents G3 measures), GPU health from the captures, gdsio
    declared optional (no shippable capture), the baseline arm's serving baseline on one
    cell."""
    common = (f'mount: "{mount_point(root)}", size: 16M, runtime_s: 1, direct: false, '
              "spec: {seq_read_mbps: 100, seq_write_mbps: 50, rand_read_iops: 2000, "
              "lat_qd1_p99_us: 20000}")
    return f"""\
  g2:
    # Real fio on files under the demo's directory, one second a job. Both targets declare
    # the filesystem they are on (mount:, often the root disk here; G2 refuses the root
    # disk unless declared). direct: false because that directory may be on tmpfs or
    # overlay, which do not honour O_DIRECT (a site keeps direct: true); the figures are
    # a modest disk's, not a datasheet's.
    numjobs: 2
    fio:
      - {{name: local-disk, path: "{root / 'fio-local'}", {common}}}
      - {{name: volume, group: storage, path: "{root / 'storage' / 'fio-volume'}", {common}}}
    # The serving baseline kept small (G1 + G2 add at most 20 s to the demo): one layout,
    # one tier, two repetitions of eight documents, one wave at c=8 (at sixteen, two
    # waves, the TTFT median fell between the waves' two clusters and swung 45 % from
    # one repetition to the next; a phase a busy host stalls is measured again instead);
    # a site measures every G3 cell.
    serving: {{layouts: [TP8], tiers: [8], repetitions: 2, docs: 8, max_cv: 0.25}}
{gdsio_yaml(root)}"""
