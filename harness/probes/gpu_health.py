"""GPU health tools: `dcgmi diag -r N -j`, `dcgmi health -c -j`, `dcgmi discovery -l`, and
GDS's `gdscheck -p`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.errors import ParseError
from harness.probes.jsondoc import items, load_json, obj, opt_str


@dataclass(frozen=True)
class DiagTest:
    category: str
    name: str
    status: str  # Pass, Fail, Warn, Skip (as DCGM prints them)
    info: tuple[str, ...]


@dataclass(frozen=True)
class DcgmDiag:
    tests: tuple[DiagTest, ...]

    @property
    def failed(self) -> list[DiagTest]:
        return [t for t in self.tests if t.status.lower() in ("fail", "warn", "error")]


def parse_dcgmi_diag(raw: str) -> DcgmDiag:
    doc = obj(load_json(raw, what="dcgmi diag"), what="dcgmi diag")
    body = doc.get("DCGM GPU Diagnostic", doc.get("DCGM Diagnostic"))
    if body is None:
        raise ParseError("dcgmi diag: no \"DCGM GPU Diagnostic\" key", stage="parse")
    tests = []
    for cat in items(obj(body, what="diagnostic").get("test_categories"), what="test_categories"):
        for test in items(cat.get("tests"), what="tests"):
            results = items(test.get("results"), what="results")
            statuses = {str(r.get("status", "")).strip() for r in results} or {""}
            worst = next((s for s in ("Fail", "Warn", "Skip", "Pass") if s in statuses),
                         sorted(statuses)[0])
            info = tuple(str(r["info"]) for r in results if r.get("info"))
            tests.append(DiagTest(str(cat.get("category", "")), str(test.get("name", "")),
                                  worst, info))
    return DcgmDiag(tuple(tests))


@dataclass(frozen=True)
class DcgmHealth:
    overall: str | None  # Healthy, Warning, Failure
    incidents: tuple[str, ...]


def parse_dcgmi_health(raw: str) -> DcgmHealth:
    doc = obj(load_json(raw, what="dcgmi health"), what="dcgmi health")
    body = doc.get("body")
    if not isinstance(body, dict):
        raise ParseError("dcgmi health: no \"body\" object", stage="parse")
    overall = body.get("Overall Health")
    value = opt_str(overall.get("value")) if isinstance(overall, dict) else opt_str(overall)
    incidents = tuple(f"{k}: {v}" for k, v in body.items() if k != "Overall Health")
    return DcgmHealth(value, incidents)


@dataclass(frozen=True)
class DcgmGpu:
    gpu_id: int
    name: str | None
    pci_bus_id: str | None
    uuid: str | None


def parse_dcgmi_discovery(raw: str) -> list[DcgmGpu]:
    head = re.search(r"^(\d+) GPUs? found\.", raw, flags=re.M)
    if not head:
        raise ParseError("dcgmi discovery line 1: no \"N GPUs found.\"", stage="parse")
    gpus: list[DcgmGpu] = []
    current: dict[str, str] = {}
    gpu_id: int | None = None
    for line in raw.splitlines():
        if "NvSwitch" in line or "Switch ID" in line:
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or line.startswith("+"):
            continue
        if cells[0].isdigit():
            if gpu_id is not None:
                gpus.append(_dcgm_gpu(gpu_id, current))
            gpu_id, current = int(cells[0]), {}
        key, _, value = cells[1].partition(": ")
        if gpu_id is not None and value:
            current[key] = value
    if gpu_id is not None:
        gpus.append(_dcgm_gpu(gpu_id, current))
    if len(gpus) != int(head.group(1)):
        raise ParseError(f"dcgmi discovery: says {head.group(1)} GPUs, lists {len(gpus)}",
                         stage="parse")
    return gpus


def _dcgm_gpu(gpu_id: int, fields: dict[str, str]) -> DcgmGpu:
    return DcgmGpu(gpu_id, fields.get("Name"), fields.get("PCI Bus ID"),
                   fields.get("Device UUID"))


@dataclass(frozen=True)
class GdsCheck:
    version: str | None
    supported: dict[str, bool]  # NVMe -> True, NVMeOF -> False, ...
    gpus_supporting: int
    gpus: int
    iommu_enabled: bool | None
    verified: bool  # "Platform verification succeeded"


def parse_gdscheck(raw: str) -> GdsCheck:
    if "GDS release version" not in raw and "DRIVER CONFIGURATION" not in raw:
        raise ParseError("gdscheck -p line 1: no \"GDS release version\" or driver section",
                         stage="parse")
    version = re.search(r"GDS release version:\s*(\S+)", raw)
    supported: dict[str, bool] = {}
    section = ""
    for line in raw.splitlines():
        stripped = line.strip()
        if stripped.endswith(":") and stripped.isupper():
            section = stripped
        elif section.startswith("DRIVER") and ":" in stripped and not stripped.startswith("--"):
            key, _, value = stripped.partition(":")
            if value.strip() in ("Supported", "Unsupported"):
                supported[key.strip()] = value.strip() == "Supported"
    gpu_lines = re.findall(r"^\s*GPU index \d+ .*$", raw, flags=re.M)
    iommu = re.search(r"^\s*IOMMU:\s*(\w+)", raw, flags=re.M)
    return GdsCheck(
        version.group(1) if version else None, supported,
        sum(1 for g in gpu_lines if "supports GDS" in g), len(gpu_lines),
        None if not iommu else iommu.group(1).lower() == "enabled",
        "Platform verification succeeded" in raw)
