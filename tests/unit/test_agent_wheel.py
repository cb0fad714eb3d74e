"""gate-agent is slim: the load generator and the phase seam, nothing of the report, PDF,
pandas, Ansible, store or simulator, and it imports only what its wheel requires."""

from __future__ import annotations

import asyncio
import sys
import zipfile
from pathlib import Path

import pytest

from harness.bundle.agent_wheel import (
    AGENT_OPTIONAL,
    AGENT_REQUIRES,
    agent_modules,
    build_agent_wheel,
    third_party_imports,
)
from harness.loadgen import compat
from harness.loadgen.records import RequestRecord, pack_chunks, unpack_chunks
from harness.remote import frames, records_file

FORBIDDEN = ("harness.report", "harness.sim", "harness.store", "harness.ansible",
             "harness.cli", "harness.g3", "harness.transport", "harness.config")


def test_the_agent_carries_the_engine_and_nothing_heavy() -> None:
    modules = agent_modules()
    assert {"harness.remote.agent", "harness.loadgen.engine", "harness.loadgen.phase",
            "harness.loadgen.health", "harness.errors", "harness"} <= set(modules)
    assert not [m for m in modules if m.startswith(FORBIDDEN)]


def test_the_agent_imports_only_the_standard_library_and_its_requirements() -> None:
    allowed = {r.split(">")[0].replace("-", "_") for r in AGENT_REQUIRES} | set(AGENT_OPTIONAL)
    outside = third_party_imports(agent_modules()) - set(sys.stdlib_module_names) - allowed
    assert outside == set()


def test_the_wheel_is_installable_and_reproducible(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    wheel = build_agent_wheel(a)
    assert wheel.read_bytes() == build_agent_wheel(b).read_bytes()
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = zf.read(next(n for n in names if n.endswith("METADATA"))).decode()
        record = zf.read(next(n for n in names if n.endswith("RECORD"))).decode()
        entry = zf.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "harness/loadgen/engine.py" in names and "harness/report/__init__.py" not in names
    assert "Requires-Python: >=3.9" in meta and "Requires-Dist: aiohttp>=3.8" in meta
    assert "gate-agent = harness.remote.agent:main" in entry
    assert {line.split(",")[0] for line in record.splitlines()} == set(names)


def test_a_pull_never_reads_half_a_record() -> None:
    recs = [RequestRecord(idx=i, instance=0, doc_id=i, warmup=False, scheduled=0.1 * i,
                          chunk_times=[0.01, 0.02]) for i in range(3)]
    data = frames.HEADER + records_file.encode(recs[:2]) + records_file.encode(recs[2:])
    cut = len(data) - 5
    first, used = records_file.decode(data[:cut], at_start=True)
    assert [r.idx for r in first] == [0, 1] and data[used:used + 4] == frames.MAGIC
    rest, used2 = records_file.decode(data[used:])
    assert [r.idx for r in rest] == [2] and used + used2 == len(data)
    # float32, the precision the store keeps them in (request.chunks)
    assert rest[0].chunk_times == unpack_chunks(pack_chunks([0.01, 0.02])).tolist()
    assert records_file.decode(data[used:used + 7]) == ([], 0)


def test_the_3_9_deadline_ends_the_block_as_timeout_error() -> None:
    """compat's own asyncio.timeout (3.9 / 3.10) behaves like the standard one here."""
    async def body(delay: float) -> bool:
        scope = compat._Deadline(0.05)
        try:
            async with scope:
                await asyncio.sleep(delay)
        except TimeoutError:
            assert scope.expired()
            return True
        assert not scope.expired()
        return False

    assert asyncio.run(body(5.0)) is True
    assert asyncio.run(body(0.0)) is False


def test_the_3_9_deadline_lets_other_cancels_through() -> None:
    async def body() -> None:
        async with compat._Deadline(10.0):
            raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(body())
