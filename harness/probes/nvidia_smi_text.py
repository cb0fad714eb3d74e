"""`nvidia-smi -q` (the human-readable log): the same typed result as `-q -x`.

The log is an indented tree, four spaces a level, of "Key : Value" lines and section
headings; each GPU starts at "GPU <bus id>". Sites paste this form into tickets more often
than the XML, so `gate parse` reads both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness.errors import ParseError
from harness.probes.nvidia_smi import Gpu, NvidiaSmiLog
from harness.probes.values import absent, integer, size_bytes, text

_LINE = re.compile(r"^(?P<indent> *)(?P<key>[^:]+?)\s*(?::\s?(?P<value>.*))?$")


@dataclass
class _Node:
    value: str | None = None
    children: dict[str, _Node] = field(default_factory=dict)

    def get(self, *path: str) -> str | None:
        node: _Node | None = self
        for part in path:
            node = node.children.get(part) if node is not None else None
        return node.value if node is not None else None


def _tree(lines: list[tuple[int, str]]) -> _Node:
    root = _Node()
    stack: list[tuple[int, _Node]] = [(-1, root)]
    for n, line in lines:
        found = _LINE.match(line)
        if not found or not line.strip():
            continue
        indent = len(found.group("indent"))
        if indent % 4:
            raise ParseError(f"nvidia-smi -q line {n}: indent of {indent} spaces", stage="parse")
        while stack[-1][0] >= indent:
            stack.pop()
        node = _Node(found.group("value"))
        stack[-1][1].children.setdefault(found.group("key").strip(), node)
        stack.append((indent, node))
    return root


def _yes(value: str | None) -> bool | None:
    return None if absent(value) else (value or "").strip().lower() in ("yes", "enabled")


def _sum(node: _Node | None, *, uncorrectable: bool = True) -> int | None:
    if node is None:
        return None
    total: int | None = None
    for key, child in node.children.items():
        if "Uncorrectable" in key and uncorrectable:
            value = integer(child.value, what=f"ecc {key}")
            if value is not None:
                total = (total or 0) + value
    return total


def _gpu(bus_id: str, g: _Node) -> Gpu:
    link = ("PCI", "GPU Link Info")
    ecc = g.children.get("ECC Errors")
    retired = [integer(g.get("Retired Pages", k), what="retired pages")
               for k in ("Single Bit ECC", "Double Bit ECC")]
    known = [r for r in retired if r is not None]
    return Gpu(
        pci_bus_id=bus_id, name=text(g.get("Product Name")), serial=text(g.get("Serial Number")),
        uuid=text(g.get("GPU UUID")), vbios=text(g.get("VBIOS Version")),
        memory_bytes=size_bytes(g.get("FB Memory Usage", "Total"), what="fb memory"),
        link_gen_max=integer(g.get(*link, "PCIe Generation", "Max"), what="link gen"),
        link_gen_current=integer(g.get(*link, "PCIe Generation", "Current"), what="link gen"),
        link_width_max=integer((g.get(*link, "Link Width", "Max") or "").rstrip("x") or None,
                               what="link width"),
        link_width_current=integer(
            (g.get(*link, "Link Width", "Current") or "").rstrip("x") or None, what="link width"),
        ecc_enabled=_yes(g.get("ECC Mode", "Current")),
        ecc_volatile_uncorrectable=_sum(ecc.children.get("Volatile") if ecc else None),
        ecc_aggregate_uncorrectable=_sum(ecc.children.get("Aggregate") if ecc else None),
        retired_pages=sum(known) if known else None,
        retirement_pending=_yes(g.get("Retired Pages", "Pending Page Blacklist")),
        remapped_rows_uncorrectable=integer(g.get("Remapped Rows", "Uncorrectable Error"),
                                            what="remapped rows"),
        remap_failure=_yes(g.get("Remapped Rows", "Remapping Failure Occurred")),
        mig_enabled=_yes(g.get("MIG Mode", "Current")))


def parse_nvidia_smi_text(raw: str) -> NvidiaSmiLog:
    lines = list(enumerate(raw.splitlines(), 1))
    start = next((i for i, (_, ln) in enumerate(lines) if "NVSMI LOG" in ln), None)
    if start is None:
        raise ParseError("nvidia-smi -q line 1: no \"NVSMI LOG\" heading", stage="parse")
    body = lines[start + 1:]
    heads = [i for i, (_, ln) in enumerate(body) if re.match(r"^GPU [0-9A-Fa-f:.]+\s*$", ln)]
    top = _tree(body[:heads[0]] if heads else body)
    gpus = []
    for k, at in enumerate(heads):
        end = heads[k + 1] if k + 1 < len(heads) else len(body)
        bus_id = body[at][1].split()[1]
        block = [(n, ln[4:] if ln.startswith("    ") else ln) for n, ln in body[at + 1:end]]
        gpus.append(_gpu(bus_id, _tree(block)))
    return NvidiaSmiLog(driver_version=text(top.get("Driver Version")),
                        cuda_version=text(top.get("CUDA Version")),
                        attached_gpus=integer(top.get("Attached GPUs"), what="Attached GPUs"),
                        gpus=tuple(gpus))
