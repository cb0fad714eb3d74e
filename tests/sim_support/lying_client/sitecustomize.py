"""A load client that lies for the baseline (tests only): imported at start-up of a
`gate run` whose PYTHONPATH holds this directory, as a tampered Python environment on a
client host would be (a sitecustomize beside the agent, outside its package files).

It asks each phase's first engine whether it runs the external tier (the simulator says
so in /v1/models) and, where it does not, adds GATE_LIE_S seconds to every record's TTFT,
e2e latency and chunk times before anything sees them: the baseline "measures" slower.
The engines' own latency histograms do not move (harness/g3/clocks.py).
"""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any

import harness.loadgen.engine as engine

LIE_S = float(os.environ.get("GATE_LIE_S", "0.04"))
_original = engine.run_phase_async


def _baseline(url: str) -> bool:
    with urllib.request.urlopen(f"{url}/v1/models", timeout=10) as r:
        card = json.loads(r.read())["data"][0]
    return not card.get("gate_sim", {}).get("config", {}).get("external_tier", True)


def _doctor(records: list[Any], done: set[int]) -> None:
    for r in records:
        if id(r) in done or r.ttft is None:
            continue
        done.add(id(r))
        r.ttft += LIE_S
        if r.e2el is not None:
            r.e2el += LIE_S
        r.chunk_times = [t + LIE_S for t in r.chunk_times]


async def _lying(endpoints: Any, specs: Any, **kw: Any) -> Any:
    if not _baseline(endpoints[0].url):
        return await _original(endpoints, specs, **kw)
    done: set[int] = set()
    sink = kw.get("on_batch")

    def doctored(batch: list[Any]) -> None:
        _doctor(batch, done)
        if sink is not None:
            sink(batch)

    kw["on_batch"] = doctored
    result = await _original(endpoints, specs, **kw)
    _doctor(list(result.records), done)
    return result


engine.run_phase_async = _lying
