"""nvme-cli JSON: `nvme list` (2.x flat "Devices" and 2.11 nested Subsystems/Controllers),
`smart-log`, `id-ctrl`, `list-subsys`; and `lsblk -J`.

nvme-cli prints some numbers as strings and pads id-ctrl's serial / model with spaces;
both are normalised here. Capacities are bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import ParseError
from harness.probes.jsondoc import items, load_json, obj, opt_str
from harness.probes.values import json_int, size_bytes


@dataclass(frozen=True)
class NvmeNamespace:
    device: str  # /dev/nvme0n1
    controller: str | None  # nvme0 (2.11 layout only)
    model: str | None
    serial: str | None
    firmware: str | None
    size_bytes: int | None
    transport: str | None  # pcie, tcp, rdma, fc (2.11 layout only)
    address: str | None  # PCI address or traddr=...
    subsystem_nqn: str | None = None  # 2.11 layout only: which volume a namespace is


def _dev(name: object) -> str:
    text = opt_str(name) or ""
    return text if text.startswith("/dev/") or not text else f"/dev/{text}"


def parse_nvme_list(raw: str) -> list[NvmeNamespace]:
    doc = obj(load_json(raw, what="nvme list"), what="nvme list")
    if "Devices" not in doc:
        raise ParseError("nvme list: no \"Devices\" key", stage="parse")
    out: list[NvmeNamespace] = []
    for dev in items(doc["Devices"], what="nvme list Devices"):
        if "Subsystems" in dev:  # nvme-cli >= 2.11: host -> subsystems -> controllers
            for sub in items(dev["Subsystems"], what="nvme list Subsystems"):
                for ctrl in items(sub.get("Controllers"), what="nvme list Controllers"):
                    for ns in items(ctrl.get("Namespaces"), what="nvme list Namespaces"):
                        out.append(NvmeNamespace(
                            _dev(ns.get("NameSpace")), opt_str(ctrl.get("Controller")),
                            opt_str(ctrl.get("ModelNumber")), opt_str(ctrl.get("SerialNumber")),
                            opt_str(ctrl.get("Firmware")),
                            json_int(ns.get("PhysicalSize"), what="PhysicalSize"),
                            opt_str(ctrl.get("Transport")), opt_str(ctrl.get("Address")),
                            opt_str(sub.get("SubsystemNQN"))))
        else:
            out.append(NvmeNamespace(
                _dev(dev.get("DevicePath")), None, opt_str(dev.get("ModelNumber")),
                opt_str(dev.get("SerialNumber")), opt_str(dev.get("Firmware")),
                json_int(dev.get("PhysicalSize"), what="PhysicalSize"), None, None))
    return out


@dataclass(frozen=True)
class SmartLog:
    critical_warning: int | None  # the bit field; 0 is healthy
    temperature_c: float | None
    available_spare_pct: int | None
    spare_threshold_pct: int | None
    percent_used: int | None
    media_errors: int | None
    error_log_entries: int | None
    power_on_hours: int | None
    unsafe_shutdowns: int | None


def parse_smart_log(raw: str) -> SmartLog:
    doc = obj(load_json(raw, what="nvme smart-log"), what="nvme smart-log")
    if "critical_warning" not in doc:
        raise ParseError("nvme smart-log: no \"critical_warning\" key", stage="parse")
    warning = doc["critical_warning"]
    if isinstance(warning, dict):  # nvme-cli >= 2.11: {"value": N, "available_spare": ...}
        warning = warning.get("value")
    kelvin = json_int(doc.get("temperature"), what="temperature")
    return SmartLog(
        critical_warning=json_int(warning, what="critical_warning"),
        temperature_c=None if kelvin is None else round(kelvin - 273.15, 1),
        available_spare_pct=json_int(doc.get("avail_spare"), what="avail_spare"),
        spare_threshold_pct=json_int(doc.get("spare_thresh"), what="spare_thresh"),
        percent_used=json_int(doc.get("percent_used"), what="percent_used"),
        media_errors=json_int(doc.get("media_errors"), what="media_errors"),
        error_log_entries=json_int(doc.get("num_err_log_entries"), what="num_err_log_entries"),
        power_on_hours=json_int(doc.get("power_on_hours"), what="power_on_hours"),
        unsafe_shutdowns=json_int(doc.get("unsafe_shutdowns"), what="unsafe_shutdowns"),
    )


@dataclass(frozen=True)
class IdCtrl:
    model: str | None
    serial: str | None
    firmware: str | None
    capacity_bytes: int | None  # tnvmcap; None or 0 where the drive does not report it
    subsystem_nqn: str | None
    pci_vendor: int | None


def parse_id_ctrl(raw: str) -> IdCtrl:
    doc = obj(load_json(raw, what="nvme id-ctrl"), what="nvme id-ctrl")
    if "mn" not in doc and "sn" not in doc:
        raise ParseError("nvme id-ctrl: no \"mn\" / \"sn\" keys", stage="parse")
    return IdCtrl(opt_str(doc.get("mn")), opt_str(doc.get("sn")), opt_str(doc.get("fr")),
                  json_int(doc.get("tnvmcap"), what="tnvmcap"), opt_str(doc.get("subnqn")),
                  json_int(doc.get("vid"), what="vid"))


@dataclass(frozen=True)
class SubsysPath:
    controller: str | None  # nvme1
    transport: str | None  # tcp, rdma, fc, pcie
    address: str | None  # traddr=10.0.0.9,trsvcid=4420
    state: str | None  # live, connecting, ...


@dataclass(frozen=True)
class Subsystem:
    name: str | None
    nqn: str | None
    paths: tuple[SubsysPath, ...]

    @property
    def live_paths(self) -> int:
        return sum(1 for p in self.paths if p.state == "live")


def _paths(value: object) -> tuple[SubsysPath, ...]:
    return tuple(SubsysPath(opt_str(p.get("Name")), opt_str(p.get("Transport")),
                            opt_str(p.get("Address")), opt_str(p.get("State")))
                 for p in items(value, what="nvme list-subsys Paths"))


def parse_list_subsys(raw: str) -> list[Subsystem]:
    """`nvme list-subsys -o json`: nvme-cli 2.x prints a list of hosts (some builds one host
    object) each with "Subsystems"; 1.x put a subsystem's Paths in the next list element."""
    doc = load_json(raw, what="nvme list-subsys")
    hosts = items(doc if isinstance(doc, list) else [doc], what="nvme list-subsys")
    out: list[Subsystem] = []
    for host in hosts:
        if "Subsystems" not in host:
            raise ParseError("nvme list-subsys: no \"Subsystems\" key", stage="parse")
        pending: dict[str, object] | None = None
        for sub in items(host["Subsystems"], what="nvme list-subsys Subsystems"):
            if "NQN" in sub or "Name" in sub:
                if pending is not None:
                    out.append(Subsystem(opt_str(pending.get("Name")),
                                         opt_str(pending.get("NQN")), ()))
                pending = sub
                if "Paths" in sub:
                    out.append(Subsystem(opt_str(sub.get("Name")), opt_str(sub.get("NQN")),
                                         _paths(sub["Paths"])))
                    pending = None
            elif "Paths" in sub and pending is not None:  # nvme-cli 1.x split element
                out.append(Subsystem(opt_str(pending.get("Name")), opt_str(pending.get("NQN")),
                                     _paths(sub["Paths"])))
                pending = None
        if pending is not None:
            out.append(Subsystem(opt_str(pending.get("Name")), opt_str(pending.get("NQN")), ()))
    return out


@dataclass(frozen=True)
class BlockDevice:
    name: str
    path: str | None
    type: str | None  # disk, part, crypt, loop (when the TYPE column was asked for)
    size_bytes: int | None  # with -b; lsblk's "1.8T" otherwise
    model: str | None
    serial: str | None
    mountpoint: str | None
    fstype: str | None
    children: tuple[BlockDevice, ...] = ()


def _size(value: object) -> int | None:
    """lsblk -b prints bytes; without -b a size like "1.8T" (binary units)."""
    if isinstance(value, str) and value and value[-1] in "KMGTP":
        return size_bytes(value[:-1] + " " + value[-1], what="lsblk size")
    return json_int(value, what="lsblk size")


def _block(dev: dict[str, object]) -> BlockDevice:
    mounts = dev.get("mountpoints")
    mount = dev.get("mountpoint")
    if mount is None and isinstance(mounts, list):
        mount = next((m for m in mounts if m), None)
    return BlockDevice(
        name=opt_str(dev.get("name")) or "", path=opt_str(dev.get("path")),
        type=opt_str(dev.get("type")), size_bytes=_size(dev.get("size")),
        model=opt_str(dev.get("model")), serial=opt_str(dev.get("serial")),
        mountpoint=opt_str(mount), fstype=opt_str(dev.get("fstype")),
        children=tuple(_block(c) for c in items(dev.get("children"), what="lsblk children")))


def parse_lsblk(raw: str) -> list[BlockDevice]:
    doc = obj(load_json(raw, what="lsblk -J"), what="lsblk -J")
    if "blockdevices" not in doc:
        raise ParseError("lsblk -J: no \"blockdevices\" key", stage="parse")
    return [_block(d) for d in items(doc["blockdevices"], what="lsblk blockdevices")]
