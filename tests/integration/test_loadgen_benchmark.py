"""benchmarks/loadgen.py still runs (issue 24: gate bench's speed against a bare aiohttp
client is a stated goal, and a benchmark nobody runs rots): at a tiny size, it prints its
figures. No speed is asserted here: on a shared machine that is the benchmark's job, with
interleaved trials at a real size."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "loadgen.py"
NUMBER = r"[0-9]+(?:\.[0-9]+)?"


def test_the_load_generator_benchmark_runs_tiny_and_prints_its_figures() -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), "--requests", "200", "--trials", "1",
                          "--ttft-requests", "64"],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    for label in ("bare aiohttp+uvloop", "gate engine + store", "gate bench (CLI)"):
        assert re.search(rf"{re.escape(label)}\s+median\s+{NUMBER} req/s", text), label
    assert re.search(rf"CLI / bare\s+median ratio {NUMBER}", text)
    assert "stored 200 of 200 requests, 0 failed; CLI stored 400" in text  # its 200 warm-up too
    assert re.search(rf"CLI's own error \(last trial\): delay mean {NUMBER} ms", text)
    assert re.search(rf"gate adds median -?{NUMBER} ms to TTFT p50", text)
