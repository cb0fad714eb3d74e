"""nvidia-smi: `-q -x` (XML, DTD v10-v13, MIG), `--query-gpu --format=csv[,nounits]`, `topo -m`.

G1 reads the GPUs' model, serial, driver / CUDA, PCIe link (width against capability: an
idle GPU lowers its link *speed*, never its width), ECC errors and retired pages / remapped
rows from these. A value nvidia-smi marks N/A is None.
"""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from harness.errors import ParseError
from harness.probes.values import absent, integer, number, size_bytes, text


@dataclass(frozen=True)
class MigDevice:
    index: int | None
    gpu_instance_id: int | None
    memory_bytes: int | None


@dataclass(frozen=True)
class Gpu:
    pci_bus_id: str
    name: str | None
    serial: str | None
    uuid: str | None
    vbios: str | None
    memory_bytes: int | None
    link_gen_max: int | None
    link_gen_current: int | None
    link_width_max: int | None
    link_width_current: int | None
    ecc_enabled: bool | None
    ecc_volatile_uncorrectable: int | None  # summed over sram/dram; None when all N/A
    ecc_aggregate_uncorrectable: int | None
    retired_pages: int | None  # single + double bit retirements; None when N/A
    retirement_pending: bool | None
    remapped_rows_uncorrectable: int | None
    remap_failure: bool | None
    mig_enabled: bool | None
    mig_devices: tuple[MigDevice, ...] = ()
    temperature_c: float | None = None  # the GPU's (<temperature><gpu_temp>27 C)


@dataclass(frozen=True)
class NvidiaSmiLog:
    driver_version: str | None
    cuda_version: str | None
    attached_gpus: int | None  # what the header says; `gpus` is what the file holds
    gpus: tuple[Gpu, ...]

    @property
    def count_mismatch(self) -> bool:
        return self.attached_gpus is not None and self.attached_gpus != len(self.gpus)


def _find(node: ET.Element, path: str) -> str | None:
    found = node.find(path)
    return None if found is None or found.text is None else found.text


def _sum_uncorrectable(node: ET.Element | None) -> int | None:
    if node is None:
        return None
    total: int | None = None
    for child in node:
        if "uncorrectable" in child.tag and child.tag != "unrepairable_memory":
            value = integer(child.text, what=f"ecc {child.tag}")
            if value is not None:
                total = (total or 0) + value
        if child.tag in ("single_bit", "double_bit"):  # DTD <= v10: device_memory, total
            value = integer(_find(child, "total"), what=f"ecc {child.tag}")
            if child.tag == "double_bit" and value is not None:
                total = (total or 0) + value
    return total


def _yes(value: str | None) -> bool | None:
    if absent(value):
        return None
    assert value is not None
    return value.strip().lower() in ("yes", "enabled", "true")


def _width(value: str | None) -> int | None:
    return integer(value.rstrip("x") if value else value, what="link width")


def _retired(gpu: ET.Element) -> int | None:
    total: int | None = None
    for path in ("retired_pages/multiple_single_bit_retirement/retired_count",
                 "retired_pages/double_bit_retirement/retired_count"):
        value = integer(_find(gpu, path), what="retired pages")
        if value is not None:
            total = (total or 0) + value
    return total


def _gpu(node: ET.Element) -> Gpu:
    mig = tuple(
        MigDevice(integer(_find(m, "index"), what="mig index"),
                  integer(_find(m, "gpu_instance_id"), what="mig gpu instance"),
                  size_bytes(_find(m, "fb_memory_usage/total"), what="mig memory"))
        for m in node.findall("mig_devices/mig_device"))
    ecc = node.find("ecc_errors")
    return Gpu(
        pci_bus_id=node.get("id") or _find(node, "pci/pci_bus_id") or "",
        name=text(_find(node, "product_name")),
        serial=text(_find(node, "serial")),
        uuid=text(_find(node, "uuid")),
        vbios=text(_find(node, "vbios_version")),
        memory_bytes=size_bytes(_find(node, "fb_memory_usage/total"), what="fb memory"),
        link_gen_max=integer(_find(node, "pci/pci_gpu_link_info/pcie_gen/max_link_gen"),
                             what="max link gen"),
        link_gen_current=integer(_find(node, "pci/pci_gpu_link_info/pcie_gen/current_link_gen"),
                                 what="current link gen"),
        link_width_max=_width(_find(node, "pci/pci_gpu_link_info/link_widths/max_link_width")),
        link_width_current=_width(
            _find(node, "pci/pci_gpu_link_info/link_widths/current_link_width")),
        ecc_enabled=_yes(_find(node, "ecc_mode/current_ecc")),
        ecc_volatile_uncorrectable=_sum_uncorrectable(
            ecc.find("volatile") if ecc is not None else None),
        ecc_aggregate_uncorrectable=_sum_uncorrectable(
            ecc.find("aggregate") if ecc is not None else None),
        retired_pages=_retired(node),
        retirement_pending=_yes(_find(node, "retired_pages/pending_retirement")),
        remapped_rows_uncorrectable=integer(_find(node, "remapped_rows/remapped_row_unc"),
                                            what="remapped rows"),
        remap_failure=_yes(_find(node, "remapped_rows/remapped_row_failure")),
        mig_enabled=_yes(_find(node, "mig_mode/current_mig")),
        mig_devices=mig,
        temperature_c=number(_find(node, "temperature/gpu_temp"), what="gpu temperature"),
    )


def parse_nvidia_smi_xml(raw: str) -> NvidiaSmiLog:
    """`nvidia-smi -q -x`. Trusts the <gpu> elements over <attached_gpus> (a trimmed log
    says 4 and holds one: `count_mismatch`)."""
    start = raw.find("<?xml")
    if start < 0:
        start = raw.find("<nvidia_smi_log")
    if start < 0:
        raise ParseError("nvidia-smi XML: no <nvidia_smi_log> document", stage="parse")
    body = re.sub(r"<!DOCTYPE[^>]*>", "", raw[start:], count=1)
    try:
        root = ET.fromstring(body)
    except ET.ParseError as e:
        line = e.position[0] + raw[:start].count("\n")
        raise ParseError(f"nvidia-smi XML line {line}: {e.msg}", stage="parse") from None
    if root.tag != "nvidia_smi_log":
        raise ParseError(f"nvidia-smi XML: root <{root.tag}>, not <nvidia_smi_log>",
                         stage="parse")
    return NvidiaSmiLog(
        driver_version=text(_find(root, "driver_version")),
        cuda_version=text(_find(root, "cuda_version")),
        attached_gpus=integer(_find(root, "attached_gpus"), what="attached_gpus"),
        gpus=tuple(_gpu(g) for g in root.findall("gpu")),
    )


@dataclass(frozen=True)
class QueryColumn:
    field: str  # "power.draw"
    unit: str | None  # "W" from the header "power.draw [W]"


@dataclass(frozen=True)
class QueryGpuTable:
    """`nvidia-smi --query-gpu=... --format=csv[,nounits]`: one row per GPU (or per sample
    with -l / -lms). Values keep their text; `value()` reads one as a number."""

    columns: tuple[QueryColumn, ...]
    rows: tuple[dict[str, str | None], ...] = field(default_factory=tuple)

    def value(self, row: int, name: str) -> float | None:
        return number(self.rows[row].get(name), what=name, line=row + 2)


_HEADER = re.compile(r"^([a-z_][\w.]*)(?:\s*\[([^\]]+)\])?$")


def parse_query_gpu_csv(raw: str) -> QueryGpuTable:
    lines = [ln for ln in raw.splitlines()]
    if not lines or not lines[0].strip():
        raise ParseError("nvidia-smi CSV line 1: no header", stage="parse")
    columns = []
    for name in (c.strip() for c in lines[0].split(",")):
        found = _HEADER.match(name)
        if not found:
            raise ParseError(f"nvidia-smi CSV line 1: {name[:40]!r} is not a query field",
                             stage="parse")
        columns.append(QueryColumn(found.group(1), found.group(2)))
    rows = []
    for n, fields in enumerate(csv.reader(io.StringIO("\n".join(lines[1:]))), 2):
        if not fields:
            continue
        if len(fields) != len(columns):
            raise ParseError(f"nvidia-smi CSV line {n}: {len(fields)} values for "
                             f"{len(columns)} columns", stage="parse")
        rows.append({c.field: text(v) for c, v in zip(columns, fields, strict=True)})
    return QueryGpuTable(tuple(columns), tuple(rows))


@dataclass(frozen=True)
class TopoDevice:
    name: str  # GPU0, NIC0, or mlx5_0 in older versions
    links: dict[str, str]  # other device -> X, NV18, PIX, NODE, SYS, ...
    cpu_affinity: str | None
    numa_affinity: str | None
    gpu_numa_id: str | None


@dataclass(frozen=True)
class Topology:
    devices: tuple[TopoDevice, ...]
    nic_names: dict[str, str]  # NIC0 -> mlx5_0 (the "NIC Legend")

    def gpus(self) -> list[TopoDevice]:
        return [d for d in self.devices if d.name.startswith("GPU")]

    def nvlinks(self, gpu: str) -> dict[str, int]:
        """Bonded NVLink count to each other GPU (NV18 -> 18)."""
        dev = next(d for d in self.devices if d.name == gpu)
        return {k: int(v[2:]) for k, v in dev.links.items() if re.fullmatch(r"NV\d+", v)}


_TRAILING = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_LINK = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC|NA)$")


def parse_topo_matrix(raw: str) -> Topology:
    """`nvidia-smi topo -m`, tab- or space-separated (GitHub turns tabs into spaces), with
    or without the NIC legend; an empty CPU affinity stays None."""
    lines = raw.splitlines()
    head_at = next((i for i, ln in enumerate(lines) if re.search(r"\bGPU0\b", ln)), None)
    if head_at is None:
        raise ParseError("nvidia-smi topo: no header line naming GPU0", stage="parse")
    header = lines[head_at]
    trailing = [t for t in _TRAILING if t in header]
    rest = header
    for t in trailing:
        rest = rest.replace(t, "")
    names = rest.split()
    devices = []
    for n, line in enumerate(lines[head_at + 1:], head_at + 2):
        if not line.strip():
            break
        label, _, body = line.partition("\t") if "\t" in line else line.partition(" ")
        label = label.strip()
        if label not in names:
            raise ParseError(f"nvidia-smi topo line {n}: row {label[:20]!r} is not a column",
                             stage="parse")
        if "\t" in line:
            cells = [c.strip() for c in body.split("\t")]
            links, extra = cells[:len(names)], cells[len(names):]
            if len(extra) > len(trailing):  # nvidia-smi pads GPU NUMA ID with a tab
                extra = extra[:2] + [c for c in extra[2:] if c]
        else:
            tokens = body.split()
            links, extra = tokens[:len(names)], tokens[len(names):]
            extra = [""] * (len(trailing) - len(extra)) + extra  # right-aligned
        if len(links) != len(names) or not all(_LINK.match(c) for c in links):
            raise ParseError(f"nvidia-smi topo line {n}: {len(links)} link cells for "
                             f"{len(names)} devices", stage="parse")
        extra += [""] * (3 - len(extra))
        values = dict(zip(trailing, extra, strict=False))
        devices.append(TopoDevice(
            label, {k: v for k, v in zip(names, links, strict=True) if k != label},
            text(values.get("CPU Affinity")), text(values.get("NUMA Affinity")),
            text(values.get("GPU NUMA ID"))))
    legend = dict(re.findall(r"^\s*(NIC\d+):\s*(\S+)\s*$", raw, flags=re.M))
    return Topology(tuple(devices), legend)
