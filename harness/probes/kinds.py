"""Every kind of tool output the probes read, by name: what `gate parse KIND FILE` offers
and how `auto` tells them apart (a signature in the first lines, tried in this order)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from harness.errors import ParseError
from harness.probes import fio, gdsio, gpu_health, lspci, nic, nvidia_smi, nvidia_smi_text, nvme
from harness.probes.diskstats import parse_diskstats
from harness.probes.findmnt import parse_findmnt


@dataclass(frozen=True)
class Kind:
    name: str
    command: str  # the command whose output this is
    parse: Callable[[str], object]
    signature: str  # a regex over the output's start that identifies it


# name, the command whose output it is, its parser, the signature that tells it apart
# (a regex over the output's first lines; `auto` tries the rows in this order).
_ROWS: tuple[tuple[str, str, Callable[[str], object], str], ...] = (
    ("nvidia-smi-xml", "nvidia-smi -q -x", nvidia_smi.parse_nvidia_smi_xml,
     r"<nvidia_smi_log>"),
    ("nvidia-smi-text", "nvidia-smi -q", nvidia_smi_text.parse_nvidia_smi_text,
     r"=+NVSMI LOG=+"),
    ("nvidia-smi-csv", "nvidia-smi --query-gpu=... --format=csv[,nounits]",
     nvidia_smi.parse_query_gpu_csv, r"^\s*(name|index|uuid|pci\.bus_id|timestamp|"
     r"driver_version|serial)\b[^\n]*,"),
    ("nvidia-smi-topo", "nvidia-smi topo -m", nvidia_smi.parse_topo_matrix,
     r"^\s+GPU0\s+GPU1|^\s+GPU0\s+\S+.*CPU Affinity"),
    ("nvme-list", "nvme list -o json", nvme.parse_nvme_list, r"\"Devices\"\s*:"),
    ("nvme-smart-log", "nvme smart-log DEV -o json", nvme.parse_smart_log,
     r"\"critical_warning\"\s*:"),
    ("nvme-id-ctrl", "nvme id-ctrl DEV -o json", nvme.parse_id_ctrl, r"\"(vid|mn)\"\s*:"),
    ("nvme-list-subsys", "nvme list-subsys -o json", nvme.parse_list_subsys,
     r"\"Subsystems\"\s*:"),
    ("lsblk", "lsblk -J [-b] [-o ...]", nvme.parse_lsblk, r"\"blockdevices\"\s*:"),
    ("lspci", "lspci -vvv", lspci.parse_lspci,
     r"^([0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] [^:]+: "),
    ("ibstat", "ibstat", nic.parse_ibstat, r"^CA '"),
    ("ibv-devinfo", "ibv_devinfo", nic.parse_ibv_devinfo, r"^hca_id:"),
    ("ethtool", "ethtool DEV", nic.parse_ethtool, r"^Settings for "),
    ("ethtool-i", "ethtool -i DEV", nic.parse_ethtool_driver, r"^driver:"),
    ("ethtool-m", "ethtool -m DEV", nic.parse_ethtool_module, r"^Identifier\s+:"),
    ("fio", "fio --output-format=json", fio.parse_fio, r"\"fio version\"\s*:"),
    ("gdscheck", "gdscheck -p", gpu_health.parse_gdscheck,
     r"GDS release version|DRIVER CONFIGURATION"),
    ("gdsio", "gdsio -D DIR -x 0 -I 0 ...", gdsio.parse_gdsio,
     r"IoType:\s*\w+\s+XferType:"),
    ("dcgmi-diag", "dcgmi diag -r N -j", gpu_health.parse_dcgmi_diag,
     r"\"DCGM (GPU )?Diagnostic\""),
    ("dcgmi-health", "dcgmi health -c -j", gpu_health.parse_dcgmi_health,
     r"\"Health Monitor Report\"|\"Overall Health\""),
    ("dcgmi-discovery", "dcgmi discovery -l", gpu_health.parse_dcgmi_discovery,
     r"^\d+ GPUs? found\."),
    ("findmnt", "findmnt -n -P -o SOURCE,FSTYPE,TARGET,MAJ:MIN -T PATH", parse_findmnt,
     r'^SOURCE="[^"\n]*" FSTYPE="'),
    ("diskstats", "cat /proc/diskstats", parse_diskstats,
     r"^\s*\d+\s+\d+\s+\S+(\s+\d+){10,}"),
)
KINDS: tuple[Kind, ...] = tuple(Kind(*row) for row in _ROWS)
KINDS_BY_NAME: dict[str, Kind] = {k.name: k for k in KINDS}
KIND_NAMES: tuple[str, ...] = tuple(k.name for k in KINDS)


def kind(name: str) -> Kind:
    return KINDS_BY_NAME[name]


def detect(raw: str) -> Kind:
    """The kind whose signature the output's first lines carry (comment and warning lines
    a collector or the tool put first are looked past)."""
    head = "\n".join(ln for ln in raw.splitlines()[:60] if not ln.startswith("#"))
    for k in KINDS:
        if re.search(k.signature, head, flags=re.M):
            return k
    raise ParseError("not the output of any tool gate reads (auto-detect found no kind)",
                     stage="parse")
