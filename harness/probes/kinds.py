"""Every kind of tool output the probes read, by name: what `gate parse KIND FILE` offers
and how `auto` tells them apart (a signature in the first lines, tried in this order)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from harness.errors import ParseError
from harness.probes import fio, gpu_health, lspci, nic, nvidia_smi, nvidia_smi_text, nvme
from harness.probes.diskstats import parse_diskstats


@dataclass(frozen=True)
class Kind:
    name: str
    command: str  # the command whose output this is
    parse: Callable[[str], object]
    signature: str  # a regex over the output's start that identifies it


KINDS: tuple[Kind, ...] = (
    Kind("nvidia-smi-xml", "nvidia-smi -q -x", nvidia_smi.parse_nvidia_smi_xml,
         r"<nvidia_smi_log>"),
    Kind("nvidia-smi-text", "nvidia-smi -q", nvidia_smi_text.parse_nvidia_smi_text,
         r"=+NVSMI LOG=+"),
    Kind("nvidia-smi-csv", "nvidia-smi --query-gpu=... --format=csv[,nounits]",
         nvidia_smi.parse_query_gpu_csv, r"^\s*(name|index|uuid|pci\.bus_id|timestamp|"
         r"driver_version|serial)\b[^\n]*,"),
    Kind("nvidia-smi-topo", "nvidia-smi topo -m", nvidia_smi.parse_topo_matrix,
         r"^\s+GPU0\s+GPU1|^\s+GPU0\s+\S+.*CPU Affinity"),
    Kind("nvme-list", "nvme list -o json", nvme.parse_nvme_list, r"\"Devices\"\s*:"),
    Kind("nvme-smart-log", "nvme smart-log DEV -o json", nvme.parse_smart_log,
         r"\"critical_warning\"\s*:"),
    Kind("nvme-id-ctrl", "nvme id-ctrl DEV -o json", nvme.parse_id_ctrl,
         r"\"(vid|mn)\"\s*:"),
    Kind("nvme-list-subsys", "nvme list-subsys -o json", nvme.parse_list_subsys,
         r"\"Subsystems\"\s*:"),
    Kind("lsblk", "lsblk -J [-b] [-o ...]", nvme.parse_lsblk, r"\"blockdevices\"\s*:"),
    Kind("lspci", "lspci -vvv", lspci.parse_lspci,
         r"^([0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] [^:]+: "),
    Kind("ibstat", "ibstat", nic.parse_ibstat, r"^CA '"),
    Kind("ibv-devinfo", "ibv_devinfo", nic.parse_ibv_devinfo, r"^hca_id:"),
    Kind("ethtool", "ethtool DEV", nic.parse_ethtool, r"^Settings for "),
    Kind("ethtool-i", "ethtool -i DEV", nic.parse_ethtool_driver, r"^driver:"),
    Kind("ethtool-m", "ethtool -m DEV", nic.parse_ethtool_module, r"^Identifier\s+:"),
    Kind("fio", "fio --output-format=json", fio.parse_fio, r"\"fio version\"\s*:"),
    Kind("gdscheck", "gdscheck -p", gpu_health.parse_gdscheck,
         r"GDS release version|DRIVER CONFIGURATION"),
    Kind("dcgmi-diag", "dcgmi diag -r N -j", gpu_health.parse_dcgmi_diag,
         r"\"DCGM (GPU )?Diagnostic\""),
    Kind("dcgmi-health", "dcgmi health -c -j", gpu_health.parse_dcgmi_health,
         r"\"Health Monitor Report\"|\"Overall Health\""),
    Kind("dcgmi-discovery", "dcgmi discovery -l", gpu_health.parse_dcgmi_discovery,
         r"^\d+ GPUs? found\."),
    Kind("diskstats", "cat /proc/diskstats", parse_diskstats,
         r"^\s*\d+\s+\d+\s+\S+(\s+\d+){10,}"),
)
KIND_NAMES: tuple[str, ...] = tuple(k.name for k in KINDS)


def kind(name: str) -> Kind:
    for k in KINDS:
        if k.name == name:
            return k
    raise KeyError(name)


def detect(raw: str) -> Kind:
    """The kind whose signature the output's first lines carry (comment and warning lines
    a collector or the tool put first are looked past)."""
    head = "\n".join(ln for ln in raw.splitlines()[:60] if not ln.startswith("#"))
    for k in KINDS:
        if re.search(k.signature, head, flags=re.M):
            return k
    raise ParseError("not the output of any tool gate reads (auto-detect found no kind)",
                     stage="parse")
