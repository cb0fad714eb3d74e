"""The simulator's soak faults (what G4 must catch), on the engine model in virtual time:
the modelled engine RSS (constant, or growing at --memory-leak), a TTFT that drifts with
the modelled time since start (--ttft-drift), a tier that silently stops serving
(--tier-off-after), and a restart that moves process_start_time_seconds. The flags,
their reporting and their validation too."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import replace

import click
import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from harness.errors import UsageError
from harness.sim.calibrate import make_docs, run_virtual
from harness.sim.engine import MB, Engine, Rates, Trace
from harness.sim.metrics import Identity, build_registry, process_start_time, render
from harness.sim.options import engine_options, spec_from_context
from harness.sim.profiles import GIB, get_profile
from harness.sim.prompt import Prompt
from harness.sim.spec import EngineSpec, FaultSpec
from harness.sim.tier import MemoryTierIndex

P = get_profile("r1-qwen32b")
TP = 8
HOUR = 3600.0


def _rates() -> Rates:
    return replace(Rates.of(P, TP), jitter_sigma=0.0)  # exact times


def _engine(faults: FaultSpec | None = None, *, tier: MemoryTierIndex | None = None,
            speed: float = 1.0) -> Engine:
    return Engine(_rates(), tier=tier, speed=speed, seed=3, salt="soak", faults=faults)


def _scraped(engine: Engine, name: str) -> float:
    ident = Identity(P.model, P.name, TP, 0, engine.tier is not None, engine.speed,
                     P.max_model_len)
    text = render(build_registry(engine, ident)).decode()
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name:
                return float(s.value)
    raise AssertionError(f"{name} not on /metrics")


async def _ttft(engine: Engine, doc: Prompt) -> tuple[float, Trace]:
    loop = asyncio.get_running_loop()
    trace = Trace()
    sent = loop.time()
    first = None
    async for _ in engine.generate(doc, 4, trace):
        if first is None:
            first = loop.time() - sent
    assert first is not None and trace.finish == "length"
    return first, trace


# -- the engine's RSS ---------------------------------------------------------------------

def test_rss_is_the_modelled_engines_and_constant_without_a_leak() -> None:
    async def main() -> list[float]:
        engine = _engine(speed=30.0)
        await engine.start()
        seen = [_scraped(engine, "process_resident_memory_bytes")]
        for _ in range(3):
            await asyncio.sleep(HOUR)
            seen.append(_scraped(engine, "process_resident_memory_bytes"))
        return seen

    seen = run_virtual(main)
    assert seen == [40 * GIB] * 4  # the profile's host memory, not this Python process's
    assert P.host_rss_bytes == 40 * GIB


def test_a_leak_grows_the_rss_per_modelled_hour() -> None:
    async def main() -> list[float]:
        engine = _engine(FaultSpec(leak_mb_per_h=500.0), speed=4.0)
        await engine.start()
        seen = [_scraped(engine, "process_resident_memory_bytes")]
        for _ in range(3):
            await asyncio.sleep(HOUR / 4)  # one modelled hour at speed 4
            seen.append(_scraped(engine, "process_resident_memory_bytes"))
        return seen

    seen = run_virtual(main)
    assert seen[0] == 40 * GIB
    for k, rss in enumerate(seen):
        assert rss == pytest.approx(40 * GIB + k * 500 * MB, abs=1.0)


def test_rss_counts_from_the_engines_start() -> None:
    async def main() -> tuple[float, float]:
        await asyncio.sleep(HOUR)  # before this engine started: not its uptime
        engine = _engine(FaultSpec(leak_mb_per_h=100.0))
        before = engine.rss_bytes()  # not started: no uptime
        await engine.start()
        await asyncio.sleep(HOUR / 2)
        return before, engine.rss_bytes()

    before, after = run_virtual(main)
    assert before == 40 * GIB
    assert after == pytest.approx(40 * GIB + 50 * MB, abs=1.0)


# -- TTFT drift ---------------------------------------------------------------------------

@pytest.mark.parametrize("tier", [False, True], ids=["recompute", "tier-read"])
def test_ttft_drift_stretches_the_ttft_with_the_modelled_hours(tier: bool) -> None:
    docs = make_docs(3, 4096, seed=11, salt="soak")

    async def main(drift: float) -> list[float]:
        index = MemoryTierIndex(P.tier_capacity_tokens) if tier else None
        if index is not None:  # another engine filled the tier: these docs load from it
            warm = _engine(tier=index)
            await warm.start()
            for doc in docs:
                await _ttft(warm, doc)
            await asyncio.sleep(60)  # the write-behind lands
        # slower than real time: the clock's early wakes (< 1 ms) vanish in the TTFT
        engine = _engine(FaultSpec(ttft_drift_per_h=drift), tier=index, speed=0.005)
        await engine.start()
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        out = []
        for k, doc in enumerate(docs):  # at 0, 1 and 2 modelled hours since start
            await asyncio.sleep(t0 + k * HOUR / 0.005 - loop.time())
            ttft, trace = await _ttft(engine, doc)
            assert (trace.external_hit > 0) is tier
            out.append(ttft)
        return out

    flat = run_virtual(lambda: main(0.0))
    assert flat == pytest.approx([flat[0]] * 3, rel=1e-3)  # no drift: the same TTFT
    drifting = run_virtual(lambda: main(0.25))
    assert drifting[0] == pytest.approx(flat[0], rel=1e-3)  # at start: none yet
    for k in (1, 2):  # 1 + 0.25 x hours since start, at each request's admission
        assert drifting[k] / flat[k] == pytest.approx(1 + 0.25 * k, rel=1e-3)


def test_ttft_drift_is_deterministic() -> None:
    doc = make_docs(1, 2048, seed=5, salt="soak")[0]

    async def main() -> float:
        engine = Engine(Rates.of(P, TP), tier=None, speed=1.0, seed=9, salt="soak",
                        faults=FaultSpec(ttft_drift_per_h=3.0))  # with jitter
        await engine.start()
        await asyncio.sleep(HOUR / 3)
        return (await _ttft(engine, doc))[0]

    assert run_virtual(main) == run_virtual(main)


# -- the tier silently stops serving ------------------------------------------------------

def test_after_tier_off_after_nothing_is_read_or_counted_and_requests_succeed() -> None:
    docs = make_docs(4, 4096, seed=12, salt="soak")

    async def main() -> dict[str, list[float]]:
        index = MemoryTierIndex(P.tier_capacity_tokens)
        warm = _engine(tier=index)
        await warm.start()
        for doc in docs:
            await _ttft(warm, doc)
        await asyncio.sleep(60)  # the write-behind lands
        chunks = index.count()
        engine = _engine(FaultSpec(tier_off_after_s=60.0), tier=index, speed=10.0)
        await engine.start()
        st = engine.stats
        seen: dict[str, list[float]] = {k: [] for k in (
            "hit", "ttft", "external_hits", "remote_reads", "read_bytes", "lookups",
            "queries", "written", "chunks", "scraped_hits")}

        def sample(ttft: float, trace: Trace) -> None:
            seen["hit"].append(trace.external_hit)
            seen["ttft"].append(ttft)
            seen["external_hits"].append(st.external_hits)
            seen["remote_reads"].append(st.lm_remote_reads)
            seen["read_bytes"].append(engine.io_snapshot().read_bytes)
            seen["lookups"].append(st.lm_lookup_requests)
            seen["queries"].append(st.external_queries)
            seen["written"].append(engine.io_snapshot().write_bytes)
            seen["chunks"].append(index.count() - chunks)
            seen["scraped_hits"].append(_scraped(engine, "vllm:external_prefix_cache_hits_total"))

        for k, doc in enumerate(docs):  # at 0 and ~30, then ~61 and ~91 modelled s
            sample(*await _ttft(engine, doc))
            assert engine.tier_serving() is (k < 1 or engine.uptime_s() < 60.0)
            await asyncio.sleep(3.1 if k == 1 else 3.0)  # 31 or 30 modelled s
        assert not engine.tier_serving()
        await asyncio.sleep(60)  # any write-behind would land
        seen["written"].append(engine.io_snapshot().write_bytes)
        seen["chunks"].append(index.count() - chunks)
        return seen

    seen = run_virtual(main)
    hit0 = seen["hit"][0]
    assert hit0 > 4000 and seen["hit"][1] > 4000  # before: loaded from the tier
    assert seen["hit"][2:] == [0, 0]  # after: every lookup misses
    assert seen["external_hits"][1] == seen["external_hits"][3] > 0  # nothing more counted
    assert seen["scraped_hits"][1] == seen["scraped_hits"][3] == seen["external_hits"][1]
    assert seen["remote_reads"] == [1, 2, 2, 2]  # nor read from the tier
    assert seen["read_bytes"][1] == seen["read_bytes"][3] > 0
    assert seen["lookups"] == [1, 2, 3, 4]  # the connector still asks ...
    assert seen["queries"][3] == 4 * 4096  # ... for the whole prompt
    written = seen["written"]
    assert written[2] == written[3] == written[4]  # the dead tier takes no writes
    assert seen["chunks"] == [0] * 5
    assert min(seen["ttft"][2:]) > 3 * max(seen["ttft"][:2])  # the engine recomputes


# -- a restart moves process_start_time_seconds --------------------------------------------

def test_process_start_time_is_the_real_process_and_moves_with_a_new_one() -> None:
    async def main() -> float:
        engine = _engine()
        await engine.start()
        return _scraped(engine, "process_start_time_seconds")

    mine = run_virtual(main)
    assert mine == pytest.approx(process_start_time())
    child = subprocess.run(
        [sys.executable, "-c", "from harness.sim.metrics import process_start_time as t; "
                               "print(repr(t()))"],
        capture_output=True, text=True, timeout=60, check=True)
    assert float(child.stdout) > mine  # a restart is a new process: a later start


# -- the flags ----------------------------------------------------------------------------

@click.command()
@engine_options
@click.pass_context
def _probe(ctx: click.Context) -> None:
    click.echo(spec_from_context(ctx).dumps())


def _parse(argv: list[str]) -> EngineSpec:
    result = CliRunner().invoke(_probe, argv, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return EngineSpec.from_json(json.loads(result.output))


def test_flags_round_trip_and_are_reported() -> None:
    spec = _parse(["--memory-leak", "250", "--ttft-drift", "1.5", "--tier-off-after", "600"])
    assert spec.faults == FaultSpec(leak_mb_per_h=250.0, ttft_drift_per_h=1.5,
                                    tier_off_after_s=600.0)
    assert _parse(spec.to_argv()) == spec
    assert EngineSpec.from_json(json.loads(spec.dumps())) == spec
    config = spec.reported_config()
    assert (config["leak_mb_per_h"], config["ttft_drift_per_h"],
            config["tier_off_after_s"]) == (250.0, 1.5, 600.0)
    plain = EngineSpec()
    assert {k for k, v in spec.reported_config().items()
            if plain.reported_config()[k] != v} == {"leak_mb_per_h", "ttft_drift_per_h",
                                                    "tier_off_after_s"}
    # a default spec's argv is as before the flags existed (an older spawner still forks)
    argv = plain.to_argv()
    assert not {"--memory-leak", "--ttft-drift", "--tier-off-after"} & set(argv)
    assert EngineSpec.from_json({"port": 1}).faults == FaultSpec()  # a state dir from before


@pytest.mark.parametrize(("faults", "key"), [
    (FaultSpec(leak_mb_per_h=-1.0), "--memory-leak"),
    (FaultSpec(ttft_drift_per_h=-0.1), "--ttft-drift"),
    (FaultSpec(tier_off_after_s=-5.0), "--tier-off-after"),
    (FaultSpec(ttft_drift_per_h=float("nan")), "--ttft-drift"),
])
def test_negative_values_name_the_flag(faults: FaultSpec, key: str) -> None:
    with pytest.raises(UsageError) as err:
        EngineSpec(faults=faults).check()
    assert err.value.key == key and err.value.exit_code == 4
    with pytest.raises(UsageError) as cli:
        CliRunner().invoke(_probe, [key, "-1"], catch_exceptions=False)
    assert cli.value.key == key
