"""G1's health checks, judged: ECC and retired pages, PCIe link width, lspci links,
NVMe SMART, IB ports: pure functions over parsed outputs (Xid: harness/g1/xid.py).

Why apart from the BOM items (harness/g1/judge.py): a health check has no order to
compare with; what it must prove is that it read something, so a check that read nothing
(every field N/A, capabilities unreadable, no drive) is an ERROR, never a PASS
(`unjudged`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.g1.finding import Finding
from harness.probes.lspci import PciDevice
from harness.probes.nic import IbDevice
from harness.probes.nvidia_smi import Gpu, NvidiaSmiLog
from harness.probes.nvme import SmartLog
from harness.reasons import Reason, listed, text


def _ecc_read(g: Gpu) -> bool:
    """ECC reported off (nothing to count: shown as such), or its uncorrectable counter read.
    N/A (a MIG instance, a GPU without ECC, a driver that hides it) is not a reading."""
    return g.ecc_enabled is False or g.ecc_volatile_uncorrectable is not None


def gpu_ecc(log: NvidiaSmiLog) -> Finding:
    problems = []
    for g in log.gpus:
        if g.ecc_volatile_uncorrectable:
            problems.append(f"GPU {g.pci_bus_id}: {g.ecc_volatile_uncorrectable} uncorrectable "
                            "ECC errors since boot")
        if g.retired_pages:
            problems.append(f"GPU {g.pci_bus_id}: {g.retired_pages} retired pages")
        if g.retirement_pending or g.remap_failure:
            problems.append(f"GPU {g.pci_bus_id}: page retirement pending or row remap failed")
        if g.remapped_rows_uncorrectable:
            problems.append(f"GPU {g.pci_bus_id}: {g.remapped_rows_uncorrectable} rows remapped "
                            "for uncorrectable errors")
    found = "; ".join(
        f"{g.pci_bus_id} ECC {'on' if g.ecc_enabled else 'off' if g.ecc_enabled is False else '-'}"
        f" unc {g.ecc_volatile_uncorrectable if g.ecc_volatile_uncorrectable is not None else '-'}"
        f" retired {g.retired_pages if g.retired_pages is not None else '-'}" for g in log.gpus)
    found_why = listed([Reason("g1.ecc_gpu", {
        "gpu": str(g.pci_bus_id),
        "ecc": Reason("g1.ecc_on") if g.ecc_enabled else Reason("g1.ecc_off")
        if g.ecc_enabled is False else "-",
        "unc": _or_dash(g.ecc_volatile_uncorrectable), "retired": _or_dash(g.retired_pages)})
        for g in log.gpus]) if log.gpus else Reason("g1.no_gpu")
    unread = tuple(f"GPU {g.pci_bus_id}" for g in log.gpus if not _ecc_read(g))
    return Finding("no uncorrectable ECC errors, retired pages or failed remaps",
                   found or "no GPU", tuple(problems), checked=len(log.gpus) - len(unread),
                   unread=unread, expected_why=Reason("g1.gpu_ecc_expected"),
                   found_why=found_why)


def _or_dash(value: object) -> str:
    """A counter as the found text shows it: "-" where it was not read."""
    return str(value) if value is not None else "-"


def gpu_link(log: NvidiaSmiLog) -> Finding:
    """Width against capability; a lower link *generation* at idle is power saving."""
    narrow = [g for g in log.gpus
              if g.link_width_current is not None and g.link_width_max is not None
              and g.link_width_current < g.link_width_max]
    problems = [f"GPU {g.pci_bus_id}: PCIe link x{g.link_width_current} of "
                f"x{g.link_width_max}" for g in narrow]
    found = "; ".join(f"{g.pci_bus_id} x{g.link_width_current or '?'}/x{g.link_width_max or '?'}"
                      f" gen{g.link_gen_current or '?'}/{g.link_gen_max or '?'}"
                      for g in log.gpus)
    unread = tuple(f"GPU {g.pci_bus_id}" for g in log.gpus
                   if g.link_width_current is None or g.link_width_max is None)
    return Finding("every GPU link at its full width", found or "no GPU", tuple(problems),
                   checked=len(log.gpus) - len(unread), unread=unread,
                   expected_why=Reason("g1.gpu_link_expected"),
                   found_why=text(found) if found else Reason("g1.no_gpu"),  # widths only
                   problem_whys=tuple(Reason("g1.gpu_link_narrow", {
                       "gpu": g.pci_bus_id, "width": f"x{g.link_width_current}",
                       "max": f"x{g.link_width_max}"}) for g in narrow))


# Classes whose physical functions are always PCIe endpoints with a link: one of them
# without a readable LnkSta (`Capabilities: <access denied>`) is a link not checked.
_LINKED = ("3D controller", "Non-Volatile memory controller", "Infiniband controller",
           "Ethernet controller")


def pcie(devices: Sequence[PciDevice]) -> Finding:
    narrow = [d for d in devices if d.width_below_capability]
    checked = [d for d in devices if not d.virtual_function and d.link_width is not None]
    unread = tuple(f"{d.address} {d.description[:48]}" for d in devices
                   if d.kind in _LINKED and not d.virtual_function and d.link_width is None)
    problems = tuple(f"{d.address} {d.description[:48]}: PCIe link x{d.link_width} of "
                     f"x{d.link_width_max}" for d in narrow)
    vfs = sum(1 for d in devices if d.virtual_function)
    return Finding("every PCIe link at its full width (virtual functions skipped)",
                   f"{len(checked)} links checked, {len(narrow)} narrow, {vfs} VFs skipped",
                   problems, {"pci serials": {d.address: d.serial for d in devices if d.serial}},
                   checked=len(checked), unread=unread,
                   expected_why=Reason("g1.pcie_expected"),
                   found_why=Reason("g1.pcie_found", {"checked": len(checked),
                                                      "narrow": len(narrow), "vfs": vfs}))


def nvme_smart(logs: Mapping[str, SmartLog]) -> Finding:
    """`logs`: the smart-log of every drive `nvme list` found (none: nothing was judged)."""
    problems = []
    for dev, log in sorted(logs.items()):
        if log.critical_warning:
            problems.append(f"{dev}: critical warning 0x{log.critical_warning:02x}")
        if log.media_errors:
            problems.append(f"{dev}: {log.media_errors} media errors")
    found = "; ".join(f"{d} warn {s.critical_warning if s.critical_warning is not None else '-'}"
                      f" media {s.media_errors if s.media_errors is not None else '-'}"
                      f" used {s.percent_used if s.percent_used is not None else '-'}%"
                      for d, s in sorted(logs.items()))
    found_why = listed([Reason("g1.smart_drive", {
        "drive": d, "warn": _or_dash(s.critical_warning), "media": _or_dash(s.media_errors),
        "used": _or_dash(s.percent_used)}) for d, s in sorted(logs.items())]) \
        if logs else Reason("g1.no_drive")
    unread = tuple(d for d, s in sorted(logs.items())
                   if s.critical_warning is None or s.media_errors is None)
    return Finding("no critical warning, no media errors", found or "no drive", tuple(problems),
                   checked=len(logs) - len(unread), unread=unread,
                   expected_why=Reason("g1.nvme_smart_expected"), found_why=found_why)


def ib_ports(cas: Sequence[IbDevice]) -> Finding:
    down = [f"{c.name} port {p.number}: {p.state or '?'} ({p.physical_state or '-'})"
            for c in cas for p in c.ports if not p.up]
    total = sum(len(c.ports) for c in cas)
    return Finding("every port Active", f"{total - len(down)} of {total} ports Active",
                   tuple(down), checked=total, expected_why=Reason("g1.ib_ports_expected"),
                   found_why=Reason("g1.ib_ports_found", {"active": total - len(down),
                                                          "total": total}))


# health check -> (what it reads, what "nothing there" means)
_READS = {
    "gpu-ecc": ("an uncorrectable ECC counter", "no GPU in nvidia-smi's output"),
    "gpu-link": ("its PCIe link width", "no GPU in nvidia-smi's output"),
    "pcie": ("its link status", "no device showed LnkSta: capabilities unreadable "
             "(lspci needs root)"),
    "nvme-smart": ("a SMART log", "nvme list found no drive"),
    "ib-ports": ("a port", "no port on the ordered HCAs"),
}


def unjudged(key: str, finding: Finding) -> str | None:
    """Why a health check cannot stand as a PASS (None when it read what it needed): it
    read nothing, or some device it had to read reported N/A. A measurement that did not
    happen is an ERROR, never a PASS."""
    if finding.checked is None:
        return None
    what, empty = _READS.get(key, ("a value", "nothing was read"))
    if finding.checked == 0:
        cause = (f"none of {len(finding.unread)} reported {what} "
                 f"(N/A on all {len(finding.unread)}: {_some(finding.unread)})"
                 if finding.unread else empty)
        return f"{key}: {cause}: cannot judge"
    if finding.unread:
        return (f"{key}: {_some(finding.unread)} reported no {what} (N/A; "
                f"{finding.checked} read): cannot judge them")
    return None


def _some(names: Sequence[str], limit: int = 4) -> str:
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more"
                                        if len(names) > limit else "")
