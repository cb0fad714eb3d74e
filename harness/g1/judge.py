"""Expected vs found, per BOM item and health check: pure functions over parsed outputs.

Each returns a Finding whose `problems` name what is wrong in words a field engineer acts
on ("2 of 8 GPUs ...", "GPU 0000:17:00.0 link x8 of x16"); no problem means the item is as
ordered. Whether a missing output is an ERROR is the caller's business, not decided here.
The health checks are in harness/g1/health.py, `Finding` in finding.py; both are
re-exported here, so a suite reads every judge as `judge.NAME`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from harness.config.bom import GPU_COUNT_FACT
from harness.config.models import (
    GpuBom,
    NicBom,
    NvmeBom,
    OsBom,
    SoftwareBom,
    VolumeBom,
    WeightsBom,
)
from harness.g1.finding import Finding, missed
from harness.g1.health import gpu_ecc, gpu_link, ib_ports, nvme_smart, pcie, unjudged
from harness.g1.xid import KernelLogs, xid
from harness.probes.gpu_health import GdsCheck
from harness.probes.nic import EthtoolDriver, EthtoolLink, IbDevice
from harness.probes.nvidia_smi import NvidiaSmiLog
from harness.probes.nvme import NvmeNamespace, Subsystem
from harness.reasons import Param, Reason, comma, text

__all__ = ["Finding", "KernelLogs", "at_least", "gds", "gpu", "gpu_ecc", "gpu_link",
           "ib_ports", "missed", "nic_eth", "nic_ib", "nvme", "nvme_smart", "os_release",
           "pci_address", "pcie", "software", "unjudged", "version_tuple", "volume",
           "weights", "xid"]

GB = 1e9
T = TypeVar("T")


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))


def at_least(found: str | None, wanted: str) -> bool:
    return found is not None and version_tuple(found) >= version_tuple(wanted)


def _matches(model: str, name: str | None) -> bool:
    return name is not None and model.lower() in name.lower()


def _count_problem(what: str, model: str, want: int, have: int, others: Sequence[str]) -> str:
    extra = f" (also found: {', '.join(sorted(set(others)))})" if others else ""
    return f"{have} {what} {model}, {want} ordered{extra}"


def _ordered(model: str, count: int, parts: Sequence[T],
             name: Callable[[T], str | None]) -> tuple[list[T], list[str]]:
    """The parts whose name matches the ordered model, and the count problem if any."""
    matching = [p for p in parts if _matches(model, name(p))]
    if len(matching) == count:
        return matching, []
    others = [name(p) or "?" for p in parts if p not in matching]
    return matching, [_count_problem("x", model, count, len(matching), others)]


def gpu(bom: GpuBom, log: NvidiaSmiLog) -> Finding:
    _, problems = _ordered(bom.model, bom.count, log.gpus, lambda g: g.name)
    if bom.min_driver and not at_least(log.driver_version, bom.min_driver):
        problems.append(f"driver {log.driver_version or 'unknown'} < {bom.min_driver}")
    if bom.min_cuda and not at_least(log.cuda_version, bom.min_cuda):
        problems.append(f"CUDA {log.cuda_version or 'unknown'} < {bom.min_cuda}")
    expected = f"{bom.count}x {bom.model}" + (f", driver >= {bom.min_driver}"
                                               if bom.min_driver else "") + (
        f", CUDA >= {bom.min_cuda}" if bom.min_cuda else "")
    expected_why = Reason("g1.gpu_expected", {
        "count": bom.count, "model": bom.model,
        "driver": Reason("g1.min_driver", {"version": bom.min_driver}) if bom.min_driver else "",
        "cuda": Reason("g1.min_cuda", {"version": bom.min_cuda}) if bom.min_cuda else ""})
    models = ', '.join(sorted({g.name or '?' for g in log.gpus})) or '-'
    found = (f"{len(log.gpus)}x {models}, "
             f"driver {log.driver_version or '-'}, CUDA {log.cuda_version or '-'}")
    if log.count_mismatch:
        found += f" (nvidia-smi says {log.attached_gpus} attached)"
    found_why = Reason("g1.gpu_found", {
        "count": len(log.gpus), "models": models, "driver": log.driver_version or "-",
        "cuda": log.cuda_version or "-",
        "attached": Reason("g1.gpu_attached", {"n": str(log.attached_gpus)})
        if log.count_mismatch else ""})
    facts: dict[str, object] = {
        GPU_COUNT_FACT: len(log.gpus),  # what G3's layouts are held against
        "gpu serials": [g.serial for g in log.gpus], "gpu uuids": [g.uuid for g in log.gpus],
        "gpu driver": log.driver_version, "cuda": log.cuda_version,
        "gpu vbios": sorted({g.vbios for g in log.gpus if g.vbios})}
    return Finding(expected, found, tuple(problems), facts, expected_why=expected_why,
                   found_why=found_why)


def nvme(bom: NvmeBom, namespaces: Sequence[NvmeNamespace]) -> Finding:
    drives = {(n.controller or n.device, n.serial): n for n in namespaces}.values()
    matching, problems = _ordered(bom.model, bom.count, list(drives), lambda d: d.model)
    if bom.min_capacity_gb is not None:
        small = [d for d in matching if (d.size_bytes or 0) < bom.min_capacity_gb * GB]
        problems += [f"{d.device}: {(d.size_bytes or 0) / GB:.0f} GB < {bom.min_capacity_gb:g} GB"
                     for d in small]
    if bom.firmware:
        problems += [f"{d.device}: firmware {d.firmware or 'unknown'}, {bom.firmware} ordered"
                     for d in matching if d.firmware != bom.firmware]
    expected = f"{bom.count}x {bom.model}" + (
        f" >= {bom.min_capacity_gb:g} GB" if bom.min_capacity_gb else "") + (
        f", firmware {bom.firmware}" if bom.firmware else "")
    expected_why = Reason("g1.nvme_expected", {
        "count": bom.count, "model": bom.model,
        "capacity": Reason("g1.min_gb", {"gb": f"{bom.min_capacity_gb:g}"})
        if bom.min_capacity_gb else "",
        "firmware": _firmware(bom.firmware)})
    found = ", ".join(f"{d.device} {d.model or '?'} {(d.size_bytes or 0) / GB:.0f} GB "
                      f"fw {d.firmware or '-'}" for d in drives) or "no NVMe drive"
    found_why = _listed([Reason("g1.nvme_drive", {
        "device": d.device, "model": d.model or "?", "gb": f"{(d.size_bytes or 0) / GB:.0f}",
        "firmware": d.firmware or "-"}) for d in drives], "g1.no_nvme")
    return Finding(expected, found, tuple(problems),
                   {"nvme serials": {d.device: d.serial for d in drives}},
                   expected_why=expected_why, found_why=found_why)


def _firmware(firmware: str | None) -> Reason | str:
    """", firmware X" of an expectation, or nothing where none is ordered."""
    return Reason("g1.firmware", {"firmware": firmware}) if firmware else ""


def _listed(items: Sequence[Param], none: str) -> Reason:
    """Items the judge joins with ", ", or the words for none (`none`, a code)."""
    return comma(items) if items else Reason(none)


def nic_ib(bom: NicBom, cas: Sequence[IbDevice]) -> Finding:
    matching, problems = _ordered(bom.model, bom.count, cas, lambda c: c.model)
    if bom.min_rate_gbps is not None:
        problems += [f"{c.name} port {p.number}: rate {p.rate_gbps or 0:g} Gb/s < "
                     f"{bom.min_rate_gbps:g}" for c in matching for p in c.ports
                     if (p.rate_gbps or 0) < bom.min_rate_gbps]
    if bom.firmware:
        problems += [f"{c.name}: firmware {c.firmware or 'unknown'}, {bom.firmware} ordered"
                     for c in matching if c.firmware != bom.firmware]
    expected = _nic_expected(bom)
    found = ", ".join(f"{c.name} {c.model or '?'} fw {c.firmware or '-'} "
                      f"{'/'.join(f'{p.rate_gbps or 0:g}' for p in c.ports)} Gb/s"
                      for c in cas) or "no HCA"
    found_why = _listed([Reason("g1.hca", {
        "name": c.name, "model": c.model or "?", "firmware": c.firmware or "-",
        "rates": "/".join(f"{p.rate_gbps or 0:g}" for p in c.ports)}) for c in cas], "g1.no_hca")
    return Finding(expected, found, tuple(problems),
                   {"nic guids": {c.name: c.node_guid for c in cas}},
                   expected_why=_nic_expected_why(bom), found_why=found_why)


def _nic_expected(bom: NicBom) -> str:
    return f"{bom.count}x {bom.model}" + (
        f" >= {bom.min_rate_gbps:g} Gb/s" if bom.min_rate_gbps else "") + (
        f", firmware {bom.firmware}" if bom.firmware else "")


def _nic_expected_why(bom: NicBom) -> Reason:
    return Reason("g1.nic_expected", {
        "count": bom.count, "model": bom.model,
        "rate": Reason("g1.min_rate", {"rate": f"{bom.min_rate_gbps:g}"})
        if bom.min_rate_gbps else "",
        "firmware": _firmware(bom.firmware)})


def pci_address(address: str | None) -> str | None:
    """`0000:17:00.0` for lspci's `17:00.0`, ethtool's `0000:17:00.0` and nvidia-smi's
    `00000000:17:00.0` alike (None when it is no PCI address: a virtual NIC's bus-info)."""
    found = re.fullmatch(r"(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])",
                         (address or "").strip())
    if found is None:
        return None
    return f"{int(found.group(1) or '0', 16):04x}:{found.group(2).lower()}"


def nic_eth(bom: NicBom, links: Mapping[str, EthtoolLink],
            drivers: Mapping[str, EthtoolDriver],
            pci_names: Mapping[str, str] | None = None) -> Finding:
    """`pci_names`: lspci's device name by PCI address. The model is matched against the
    device name at the interface's bus-info (`ConnectX-7`, not the driver mlx5_core that
    every ConnectX shares); only where lspci could not name the device (no lspci, a
    virtual NIC) against ethtool's driver, and `found` says so."""
    names = pci_names or {}

    def identity(iface: str) -> str | None:
        address = pci_address(drivers[iface].bus_info)
        return names.get(address) if address is not None and address in names \
            else drivers[iface].driver

    matching = [i for i in drivers if _matches(bom.model, identity(i))]
    problems = []
    if len(matching) != bom.count:
        others = [identity(i) or "?" for i in drivers if i not in matching]
        problems.append(_count_problem("interfaces with", bom.model, bom.count, len(matching),
                                       others))
    for iface in matching:
        link, drv = links.get(iface), drivers[iface]
        speed = link.speed_gbps if link is not None else None
        if link is None or link.link_detected is False or speed is None:
            problems.append(f"{iface}: link down")
        elif bom.min_rate_gbps is not None and speed < bom.min_rate_gbps:
            problems.append(f"{iface}: link {speed:g} Gb/s < {bom.min_rate_gbps:g}")
        if bom.firmware and drv.firmware != bom.firmware:
            problems.append(f"{iface}: firmware {drv.firmware or 'unknown'}, "
                            f"{bom.firmware} ordered")

    def shown(iface: str) -> str:
        address = pci_address(drivers[iface].bus_info)
        named = address is not None and address in names
        speed = links[iface].speed_gbps if iface in links else None
        return (f"{iface} {identity(iface) or '?'}"
                + ("" if named else " (driver; lspci did not name the device)")
                + f" fw {drivers[iface].firmware or '-'} "
                + (f"{speed:g} Gb/s" if speed is not None else "link down"))

    def shown_why(iface: str) -> Reason:
        address = pci_address(drivers[iface].bus_info)
        named = address is not None and address in names
        speed = links[iface].speed_gbps if iface in links else None
        return Reason("g1.interface", {
            "iface": iface, "device": identity(iface) or "?",
            "unnamed": "" if named else Reason("g1.driver_only"),
            "firmware": drivers[iface].firmware or "-",
            "speed": f"{speed:g} Gb/s" if speed is not None else Reason("g1.link_down")})

    found = ", ".join(shown(i) for i in drivers) or "no interface"
    return Finding(_nic_expected(bom), found, tuple(problems),
                   {"nic bus": {i: d.bus_info for i, d in drivers.items()}},
                   expected_why=_nic_expected_why(bom),
                   found_why=_listed([shown_why(i) for i in drivers], "g1.no_interface"))


def gds(check: GdsCheck) -> Finding:
    problems = []
    if not check.verified:
        problems.append("gdscheck: platform verification did not succeed")
    if check.gpus_supporting < check.gpus or check.gpus == 0:
        problems.append(f"{check.gpus_supporting} of {check.gpus} GPUs support GDS")
    supported = [k for k, v in check.supported.items() if v]
    return Finding("GDS verified on every GPU",
                   f"GDS {check.version or '?'}, {check.gpus_supporting}/{check.gpus} GPUs, "
                   f"supported: {', '.join(supported) or 'none'}", tuple(problems),
                   {"gds version": check.version}, expected_why=Reason("g1.gds_expected"),
                   found_why=Reason("g1.gds_found", {
                       "version": check.version or "?", "supporting": check.gpus_supporting,
                       "gpus": check.gpus,
                       "supported": ", ".join(supported) or Reason("g1.none")}))


def volume(bom: VolumeBom, subsystems: Sequence[Subsystem],
           namespaces: Sequence[NvmeNamespace] = ()) -> Finding:
    sub = next((s for s in subsystems if s.nqn == bom.nqn), None)
    expected = f"{bom.nqn} over {bom.transport}, >= {bom.min_paths} live path(s)" + (
        f", >= {bom.min_size_gb:g} GB" if bom.min_size_gb is not None else "")
    expected_why = Reason("g1.volume_expected", {
        "nqn": bom.nqn, "transport": bom.transport, "paths": bom.min_paths,
        "size": Reason("g1.volume_min_gb", {"gb": f"{bom.min_size_gb:g}"})
        if bom.min_size_gb is not None else ""})
    if sub is None:
        seen = ", ".join(s.nqn or "?" for s in subsystems) or "none"
        return Finding(expected, f"not connected (subsystems: {seen})",
                       (f"NQN {bom.nqn} not connected",), expected_why=expected_why,
                       found_why=Reason("g1.volume_not_connected", {
                           "subsystems": ", ".join(s.nqn or "?" for s in subsystems)
                           or Reason("g1.none")}))
    live = [p for p in sub.paths if p.state == "live" and p.transport == bom.transport]
    problems = []
    if len(live) < bom.min_paths:
        problems.append(f"{len(live)} live {bom.transport} path(s), {bom.min_paths} needed")
    paths = ", ".join(f"{p.controller} {p.transport} {p.address} {p.state}" for p in sub.paths)
    found = f"{sub.name}: " + paths
    sized: Reason | str = ""
    if bom.min_size_gb is not None:
        sizes = [n.size_bytes or 0 for n in namespaces if n.subsystem_nqn == bom.nqn]
        size = sum(sizes) / GB
        found += f"; {len(sizes)} namespace(s), {size:.0f} GB"
        sized = Reason("g1.volume_namespaces", {"n": len(sizes), "gb": f"{size:.0f}"})
        if size < bom.min_size_gb:
            problems.append(f"volume {size:.0f} GB < {bom.min_size_gb:g} GB")
    return Finding(expected, found, tuple(problems), {"volume paths": len(sub.paths)},
                   expected_why=expected_why, found_why=Reason("g1.volume_found", {
                       "subsystem": str(sub.name), "paths": paths, "namespaces": sized}))


def os_release(bom: OsBom, kernel: str, release: str) -> Finding:
    pretty = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', release, flags=re.M)
    name = pretty.group(1) if pretty else "unknown"
    problems = []
    if bom.os and bom.os.lower() not in name.lower():
        problems.append(f"OS {name}, {bom.os} ordered")
    if bom.kernel and not kernel.strip().startswith(bom.kernel):
        problems.append(f"kernel {kernel.strip()}, {bom.kernel} ordered")
    expected = ", ".join(x for x in (bom.os and f"OS {bom.os}",
                                     bom.kernel and f"kernel {bom.kernel}*") if x)
    ordered = [Reason(code, {key: value}) for code, key, value in (
        ("g1.os_expected", "os", bom.os), ("g1.kernel_expected", "kernel", bom.kernel)) if value]
    return Finding(expected or "any OS", f"{name}, kernel {kernel.strip()}", tuple(problems),
                   {"os": name, "kernel": kernel.strip()},
                   expected_why=comma(ordered) if ordered else Reason("g1.any_os"),
                   found_why=Reason("g1.os_found", {"os": name, "kernel": kernel.strip()}))


def software(bom: SoftwareBom, versions: Mapping[str, str | None]) -> Finding:
    problems = tuple(f"{name} {versions.get(name) or 'not installed'}, {want} ordered"
                     for name, want in sorted(bom.packages.items())
                     if versions.get(name) != want)
    expected = ", ".join(f"{n} {v}" for n, v in sorted(bom.packages.items()))
    found = ", ".join(f"{n} {versions.get(n) or '-'}" for n in sorted(bom.packages))
    return Finding(expected, found, problems, {"software": dict(sorted(versions.items()))},
                   expected_why=text(expected), found_why=text(found))  # names and versions


def weights(bom: WeightsBom, sizes: Mapping[str, int], digests: Mapping[str, str]) -> Finding:
    problems = []
    for rel, want in sorted(bom.manifest.items()):
        path = f"{bom.directory.rstrip('/')}/{rel}"
        if path not in sizes:
            problems.append(f"{rel}: missing")
        elif sizes[path] != want.size:
            problems.append(f"{rel}: {sizes[path]} bytes, {want.size} in the manifest")
        elif digests.get(path) != want.sha256:
            problems.append(f"{rel}: sha256 {str(digests.get(path))[:12]}..., "
                            f"{want.sha256[:12]}... in the manifest")
    total = sum(w.size for w in bom.manifest.values())
    return Finding(f"{len(bom.manifest)} files, {total / GB:.2f} GB, as the manifest",
                   f"{len(sizes)} of {len(bom.manifest)} files present, "
                   f"{len(bom.manifest) - len(problems)} matching", tuple(problems),
                   expected_why=Reason("g1.weights_expected", {
                       "files": len(bom.manifest), "gb": f"{total / GB:.2f}"}),
                   found_why=Reason("g1.weights_found", {
                       "present": len(sizes), "files": len(bom.manifest),
                       "matching": len(bom.manifest) - len(problems)}))
