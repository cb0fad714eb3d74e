"""A detached soak's spool directory (harness/loadgen/soak_spool.py, where the load agent
can ship it: the same soak runs on the client host with `placement: client`), and a
window file as the store's row.
"""

from __future__ import annotations

from typing import Any

from harness.errors import MeasurementError
from harness.loadgen.soak_spool import (
    ENDED,
    SPEC,
    STATE,
    STOP,
    WINDOWS,
    SoakSpec,
    SoakState,
    Spool,
    Status,
    read_json,
    window_name,
    write_json,
)

__all__ = ["ENDED", "SPEC", "STATE", "STOP", "WINDOWS", "SoakSpec", "SoakState", "Spool",
           "Status", "read_json", "window_name", "window_row", "write_json"]


def window_row(doc: dict[str, Any]) -> dict[str, Any]:
    """A window file as a store row (harness/store/windows.py)."""
    try:
        return {"idx": int(doc["index"]), "start_s": float(doc["start_s"]),
                "length_s": float(doc["length_s"]), "requests": int(doc["requests"]),
                "errors": dict(doc.get("errors") or {}), "ttft_p50_s": doc.get("ttft_p50_s"),
                "ttft_p99_s": doc.get("ttft_p99_s"), "tpot_p50_s": doc.get("tpot_p50_s"),
                "output_tokens": int(doc.get("output_tokens") or 0),
                "external_hit_tokens": doc.get("external_hit_tokens"),
                "engine_rss_bytes": doc.get("engine_rss_bytes"),
                "engine_restarts": int(doc.get("engine_restarts") or 0),
                "counters": {"engines": doc.get("engines") or [],
                             "unanswered": doc.get("unanswered", 0),
                             "clock": doc.get("clock")}}
    except (KeyError, TypeError, ValueError) as exc:
        raise MeasurementError(f"a soak window file is malformed: {exc}",
                               stage="g4 soak") from None
