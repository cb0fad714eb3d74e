"""`lspci -vvv`: each device's PCIe link capability (LnkCap) against its status (LnkSta).

G1 compares *width*: an idle GPU or NIC lowers its link speed to save power, which is not
a fault, while a link trained at x8 in an x16 slot is. SR-IOV virtual functions report
"Width x0 (downgraded)" by design and are marked `virtual_function` so a check skips them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.errors import ParseError

_HEAD = re.compile(r"^([0-9a-fA-F]{2,4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] ")
_LNKCAP = re.compile(r"LnkCap:\s*Port #\d+, Speed ([^,]+), Width x(\d+)")
_LNKSTA = re.compile(r"LnkSta:\s*Speed ([^,]+?)(?: \((?:ok|downgraded)\))?, "
                     r"Width x(\d+)( \(downgraded\))?")
_GTS = re.compile(r"([\d.]+)GT/s")


@dataclass(frozen=True)
class PciDevice:
    address: str  # 0000:03:00.0 or 03:00.0 as printed
    kind: str  # "3D controller", "Ethernet controller", ...
    description: str  # "NVIDIA Corporation Device 20b0 (rev a1)"
    driver: str | None
    serial: str | None  # VPD [SN] when the device has one
    link_speed_max_gts: float | None
    link_width_max: int | None
    link_speed_gts: float | None  # None when "unknown"
    link_width: int | None
    virtual_function: bool

    @property
    def width_below_capability(self) -> bool:
        """A physical function whose link trained narrower than it can run."""
        return (not self.virtual_function and self.link_width is not None
                and self.link_width_max is not None and self.link_width < self.link_width_max)


def _gts(value: str) -> float | None:
    found = _GTS.search(value)
    return float(found.group(1)) if found else None


def _device(head: str, body: list[str], line_no: int) -> PciDevice:
    address, _, rest = head.partition(" ")
    kind, sep, description = rest.partition(": ")
    if not sep:
        raise ParseError(f"lspci line {line_no}: no class in {head[:60]!r}", stage="parse")
    joined = "\n".join(body)
    cap = _LNKCAP.search(joined)
    sta = _LNKSTA.search(joined)
    driver = re.search(r"Kernel driver in use:\s*(\S+)", joined)
    serial = re.search(r"\[SN\] Serial number:\s*(.+?)\s*$", joined, flags=re.M)
    vf = "Virtual Function" in head or "Virtual Function" in joined.split("\n", 1)[0]
    return PciDevice(
        address=address, kind=kind.strip(), description=description.strip(),
        driver=driver.group(1) if driver else None,
        serial=serial.group(1) if serial else None,
        link_speed_max_gts=_gts(cap.group(1)) if cap else None,
        link_width_max=int(cap.group(2)) if cap else None,
        link_speed_gts=_gts(sta.group(1)) if sta else None,
        link_width=int(sta.group(2)) if sta else None,
        virtual_function=vf)


def parse_lspci(raw: str) -> list[PciDevice]:
    devices: list[PciDevice] = []
    head: str | None = None
    head_line = 0
    body: list[str] = []
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        if _HEAD.match(line):
            if head is not None:
                devices.append(_device(head, body, head_line))
            head, head_line, body = line, n, []
        elif line[0] in " \t" and head is not None:
            body.append(line.strip())
        elif line.startswith("lspci: "):  # a warning on stderr merged into the capture
            continue
        else:
            raise ParseError(f"lspci line {n}: not a device header or an indented field: "
                             f"{line[:60]!r}", stage="parse")
    if head is not None:
        devices.append(_device(head, body, head_line))
    if not devices:
        raise ParseError("lspci: no device in the output", stage="parse")
    return devices
