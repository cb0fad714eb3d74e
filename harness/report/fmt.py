"""Number, time and interval formatting shared by every section (one style everywhere)."""

from __future__ import annotations

import math
import time


def _ok(v: float | None) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def dash() -> str:
    return "—"


def seconds(v: float | None) -> str:
    """TTFT and latencies: always seconds with three decimals, so they match the store."""
    if not _ok(v):
        return dash()
    assert v is not None
    if math.isinf(v):
        return "∞"
    return f"{v:.3f} s"


def pct(v: float | None, digits: int = 1) -> str:
    """A ratio as a percentage: 0.3123 -> '31.2 %'."""
    if not _ok(v):
        return dash()
    assert v is not None
    return f"{v * 100:.{digits}f} %"


def interval_pct(lo: float | None, hi: float | None) -> str:
    if not (_ok(lo) and _ok(hi)):
        return dash()
    assert lo is not None and hi is not None
    return f"[{lo * 100:.1f} %, {hi * 100:.1f} %]"


def interval_pct_short(lo: float | None, hi: float | None) -> str:
    """The same interval for narrow table cells: '[31.0, 39.0] %'."""
    if not (_ok(lo) and _ok(hi)):
        return dash()
    assert lo is not None and hi is not None
    return f"[{lo * 100:.1f}, {hi * 100:.1f}] %"


def rate(v: float | None, unit: str = "tok/s") -> str:
    if not _ok(v):
        return dash()
    assert v is not None
    return f"{v:,.1f} {unit}"


def number(v: float | None, digits: int = 3) -> str:
    if not _ok(v):
        return dash()
    assert v is not None
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:,.{digits}g}" if abs(v) >= 1e6 else f"{v:,.{digits}f}".rstrip("0").rstrip(".")


def gbps(v: float | None) -> str:
    if not _ok(v):
        return dash()
    assert v is not None
    return f"{v:.2f} GB/s"


def when(epoch: float | None) -> str:
    """UTC date and time; the store keeps epoch seconds."""
    if not _ok(epoch):
        return dash()
    assert epoch is not None
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))


def day(epoch: float | None) -> str:
    if not _ok(epoch):
        return dash()
    assert epoch is not None
    return time.strftime("%Y-%m-%d", time.gmtime(epoch))


def duration(sec: float | None) -> str:
    if not _ok(sec):
        return dash()
    assert sec is not None
    s = round(sec)
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h} h {m:02d} min" if h else (f"{m} min {s:02d} s" if m else f"{s} s")
