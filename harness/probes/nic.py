"""NICs: `ibstat`, `ibv_devinfo`, `ethtool DEV`, `ethtool -i DEV`, `ethtool -m DEV`.

Rates are Gb/s (ibstat's "Rate: 400"; ethtool's "Speed: 1000Mb/s" -> 1.0). A port that is
not Active / PORT_ACTIVE is down, whatever its rate says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.errors import ParseError
from harness.probes.values import number, text


@dataclass(frozen=True)
class IbPort:
    number: int
    state: str | None  # Active, Down, Init, ...
    physical_state: str | None
    rate_gbps: float | None
    link_layer: str | None  # InfiniBand, Ethernet

    @property
    def up(self) -> bool:
        return (self.state or "").lower() in ("active", "port_active")


@dataclass(frozen=True)
class IbDevice:
    name: str  # mlx5_0
    model: str | None  # CA type MT4129 / vendor_part_id 4123
    firmware: str | None
    node_guid: str | None
    ports: tuple[IbPort, ...]


def _fields(lines: list[tuple[int, str]], sep: str = ":") -> dict[str, str]:
    out: dict[str, str] = {}
    for _n, line in lines:
        key, found, value = line.partition(sep)
        if found:
            out[key.strip().lower()] = value.strip()
    return out


def parse_ibstat(raw: str) -> list[IbDevice]:
    devices: list[IbDevice] = []
    blocks: list[tuple[str, list[tuple[int, str]]]] = []
    for n, line in enumerate(raw.splitlines(), 1):
        head = re.match(r"^CA '([^']+)'\s*$", line)
        if head:
            blocks.append((head.group(1), []))
        elif line.strip() and blocks:
            blocks[-1][1].append((n, line))
        elif line.strip():
            raise ParseError(f"ibstat line {n}: expected \"CA 'name'\": {line[:60]!r}",
                             stage="parse")
    for name, lines in blocks:
        ports: list[IbPort] = []
        device_lines: list[tuple[int, str]] = []
        port_lines: list[tuple[int, str]] = []
        port_no: int | None = None
        for n, line in lines:
            found = re.match(r"^\s*Port (\d+):\s*$", line)
            if found:
                if port_no is not None:
                    ports.append(_ib_port(port_no, port_lines))
                port_no, port_lines = int(found.group(1)), []
            elif port_no is None:
                device_lines.append((n, line))
            else:
                port_lines.append((n, line))
        if port_no is not None:
            ports.append(_ib_port(port_no, port_lines))
        f = _fields(device_lines)
        devices.append(IbDevice(name, text(f.get("ca type")), text(f.get("firmware version")),
                                text(f.get("node guid")), tuple(ports)))
    if not devices:
        raise ParseError("ibstat: no CA in the output", stage="parse")
    return devices


def _ib_port(number_: int, lines: list[tuple[int, str]]) -> IbPort:
    f = _fields(lines)
    return IbPort(number_, text(f.get("state")), text(f.get("physical state")),
                  number(f.get("rate"), what="ibstat rate"), text(f.get("link layer")))


def parse_ibv_devinfo(raw: str) -> list[IbDevice]:
    devices: list[IbDevice] = []
    name: str | None = None
    dev_lines: list[tuple[int, str]] = []
    ports: list[tuple[int, list[tuple[int, str]]]] = []

    def flush() -> None:
        if name is None:
            return
        f = _fields(dev_lines)
        parsed = []
        for port_no, lines in ports:
            p = _fields(lines)
            state = text(p.get("state"))
            parsed.append(IbPort(port_no, state.split()[0] if state else None, None, None,
                                 text(p.get("link_layer"))))
        devices.append(IbDevice(name, text(f.get("vendor_part_id")), text(f.get("fw_ver")),
                                text(f.get("node_guid")), tuple(parsed)))

    for n, line in enumerate(raw.splitlines(), 1):
        head = re.match(r"^hca_id:\s*(\S+)\s*$", line)
        port = re.match(r"^\s*port:\s*(\d+)\s*$", line)
        if head:
            flush()
            name, dev_lines, ports = head.group(1), [], []
        elif port and name is not None:
            ports.append((int(port.group(1)), []))
        elif line.strip() and name is not None:
            (ports[-1][1] if ports else dev_lines).append((n, line))
        elif line.strip():
            raise ParseError(f"ibv_devinfo line {n}: expected \"hca_id:\": {line[:60]!r}",
                             stage="parse")
    flush()
    if not devices:
        raise ParseError("ibv_devinfo: no hca_id in the output", stage="parse")
    return devices


@dataclass(frozen=True)
class EthtoolLink:
    interface: str | None
    speed_gbps: float | None  # None when "Unknown!" (link down)
    duplex: str | None
    link_detected: bool | None


def _ethtool_lines(raw: str) -> list[tuple[int, str]]:
    """The lines ethtool wrote: a collector's "# ethtool eth0" comment and netlink
    permission notices (non-root) are not data."""
    return [(n, ln) for n, ln in enumerate(raw.splitlines(), 1)
            if ln.strip() and not ln.startswith("#") and not ln.startswith("netlink error")]


def parse_ethtool(raw: str) -> EthtoolLink:
    lines = _ethtool_lines(raw)
    if not lines or not lines[0][1].startswith("Settings for "):
        where = lines[0][0] if lines else 1
        raise ParseError(f"ethtool line {where}: expected \"Settings for DEV:\"", stage="parse")
    f = _fields(lines[1:])
    speed = f.get("speed")
    gbps: float | None = None
    if speed and re.match(r"^\d+Mb/s$", speed):
        gbps = int(speed[:-4]) / 1000
    elif speed and not speed.lower().startswith("unknown"):
        raise ParseError(f"ethtool line {next(n for n, ln in lines if 'Speed:' in ln)}: "
                         f"speed {speed!r}", stage="parse")
    detected = f.get("link detected")
    return EthtoolLink(lines[0][1][len("Settings for "):].rstrip(":"), gbps,
                       text(f.get("duplex")),
                       None if detected is None else detected.lower() == "yes")


@dataclass(frozen=True)
class EthtoolDriver:
    driver: str | None
    version: str | None
    firmware: str | None
    bus_info: str | None


def parse_ethtool_driver(raw: str) -> EthtoolDriver:
    lines = _ethtool_lines(raw)
    f = _fields(lines)
    if "driver" not in f:
        raise ParseError(f"ethtool -i line {lines[0][0] if lines else 1}: no \"driver:\"",
                         stage="parse")
    return EthtoolDriver(text(f.get("driver")), text(f.get("version")),
                         text(f.get("firmware-version")), text(f.get("bus-info")))


@dataclass(frozen=True)
class EthtoolModule:
    identifier: str | None
    transceiver: str | None
    vendor: str | None
    part_number: str | None
    serial: str | None
    temperature_c: float | None
    rx_power_dbm: float | None
    alarms_on: tuple[str, ...]  # every "... alarm/warning : On"


def parse_ethtool_module(raw: str) -> EthtoolModule:
    lines = _ethtool_lines(raw)
    if not lines or not lines[0][1].startswith("Identifier"):
        raise ParseError(f"ethtool -m line {lines[0][0] if lines else 1}: expected "
                         "\"Identifier :\"", stage="parse")
    f = _fields(lines)
    alarms = tuple(k for k, v in f.items() if ("alarm" in k or "warning" in k)
                   and "threshold" not in k and v.lower() == "on")
    temp = f.get("module temperature")
    rx = re.search(r"(-?[\d.]+) dBm", f.get("receiver signal average optical power", ""))

    def masked(value: str | None) -> str | None:
        found = text(value)
        return None if found is None or set(found) == {"X"} else found

    return EthtoolModule(
        text(f.get("identifier")), text(f.get("transceiver type")), masked(f.get("vendor name")),
        masked(f.get("vendor pn")), masked(f.get("vendor sn")),
        number(temp.split(" degrees")[0], what="module temperature") if temp else None,
        float(rx.group(1)) if rx else None, alarms)
