"""G2 checks: real fio on each target against the vendor's figures, GPU health, GDS, the
serving baseline of the baseline arm.

A figure below its bound is STOP-LOSS; fio that failed, a missing tool, an unreachable
host is ERROR (nothing measured). Every raw output is an artifact with its sha256.
The serving baseline: failed requests above the configured share or a CV above its
limit is STOP-LOSS; a phase where every request failed is ERROR; a saturated client
leaves the CVs undecided: INCONCLUSIVE (harness/g2/serving.py:judge).
"""

from __future__ import annotations

import math

import pytest

from harness.config.models import SiteConfig
from harness.errors import Inconclusive, MeasurementError
from harness.g2 import fio as g2fio
from harness.g2.plan import FioCell
from harness.g2.serving import judge
from harness.g2.serving_run import ServingBaseline
from harness.g3.plan import Cell
from harness.probes.fio import parse_fio
from harness.probes.gpu_health import parse_dcgmi_diag, parse_gdscheck
from harness.probes.nvidia_smi import parse_nvidia_smi_xml
from harness.pytest_plugin import CheckRecorder, GateContext
from harness.reasons import Reason
from harness.transport.result import CommandResult, describe, tail

MISSING = 127


def _save(gate: GateContext, host: str, name: str, result: CommandResult) -> None:
    path = gate.artifact_dir / "g2" / host / f"{name}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(result.stdout + (f"\n--- stderr ---\n{result.stderr}" if result.stderr
                                     else ""), encoding="utf-8")
    gate.recorder.artifact(path, kind=f"g2:{name.split('.')[0]}", host=host)


def _ok(result: CommandResult, host: str) -> str:
    if result.rc == MISSING:
        raise MeasurementError(f"{describe(result.argv)}: tool missing on the host",
                               host=host, stage="g2")
    if not result.ok:
        raise MeasurementError(f"{describe(result.argv)} exited {result.rc}: "
                               f"{tail(result.stderr or result.stdout, 300)}", host=host,
                               stage="g2")
    return result.stdout


def test_fio(gate: GateContext, site: SiteConfig, check: CheckRecorder, cell: FioCell) -> None:
    """One fio job on one target of one host: bandwidth, IOPS or p99 latency against the
    vendor's figure x min_fraction."""
    check.host = cell.host
    g2 = site.gates.g2
    host = gate.transport_pool().get(cell.host)
    expected, bound = g2fio.wanted(cell.target, cell.job, g2.min_fraction)
    expected_why = g2fio.wanted_why(cell.target, cell.job, g2.min_fraction)
    check.expect(expected, expected_why)
    argv = g2fio.argv(cell.target, cell.job, g2.numjobs)
    if not cell.target.path.startswith("/dev/"):
        host.run(["mkdir", "-p", cell.target.path], timeout=30).check("g2 fio target")
    try:
        result = host.run(argv, timeout=cell.target.runtime_s * 4 + 120)
    finally:
        if not cell.target.path.startswith("/dev/"):
            host.run(["rm", "-f", g2fio.target_file(cell.target)], timeout=60)
    _save(gate, cell.host, f"fio.{cell.target.name}.{cell.job}", result)
    parsed = parse_fio(_ok(result, cell.host))
    if not parsed.jobs or parsed.failed:
        code = parsed.failed[0].error if parsed.failed else "no job reported"
        raise MeasurementError(f"fio job failed (error {code})", host=cell.host,
                               stage="g2 fio")
    value = g2fio.figure(parsed, cell.job)
    unit = g2fio.job(cell.job, g2.numjobs).figure
    check.measure(f"{value:.0f} {unit}")
    gate.recorder.host_fact(host=cell.host, key=f"fio {cell.target.name} {cell.job}",
                            value=round(value, 1), simulated=gate.simulated)
    if math.isnan(value):
        raise MeasurementError("fio reported no p99 latency", host=cell.host, stage="g2 fio")
    if bound is None:
        return
    low = value > bound if cell.job == "lat-qd1" else value < bound
    if low:
        check.explain(Reason("g2.fio_below", {
            "host": cell.host, "target": cell.target.name, "job": cell.job,
            "value": f"{value:.0f}", "unit": unit, "expected": expected_why}))
        pytest.fail(f"{cell.host} {cell.target.name} {cell.job}: {value:.0f} {unit} "
                    f"(expected {expected})", pytrace=False)


def test_gpu_health(gate: GateContext, site: SiteConfig, check: CheckRecorder,
                    gpu_host: str) -> None:
    """dcgmi diag where DCGM is installed; else nvidia-smi: ECC errors, retired pages,
    row-remap failures."""
    check.host = gpu_host
    host = gate.transport_pool().get(gpu_host)
    level = site.gates.g2.dcgm_level
    diag = host.run(["dcgmi", "diag", "-r", str(level), "-j"], timeout=3600)
    if diag.rc != MISSING:
        _save(gate, gpu_host, f"dcgmi-diag-r{level}", diag)
        report = parse_dcgmi_diag(_ok(diag, gpu_host))
        check.expect(f"dcgmi diag -r {level}: no test failed")
        check.measure(f"{len(report.tests)} tests, {len(report.failed)} failed")
        if report.failed:
            pytest.fail(f"{gpu_host} dcgmi diag: " + "; ".join(
                f"{t.name}: {t.status} {' '.join(t.info)[:120]}" for t in report.failed),
                pytrace=False)
        return
    smi = host.run(["nvidia-smi", "-q", "-x"], timeout=120)
    _save(gate, gpu_host, "nvidia-smi", smi)
    log = parse_nvidia_smi_xml(_ok(smi, gpu_host))
    check.expect("nvidia-smi (no DCGM): no uncorrectable ECC, retired pages or remap failure")
    bad = [f"{g.pci_bus_id}: " + ", ".join(
        x for x in (g.ecc_volatile_uncorrectable and f"{g.ecc_volatile_uncorrectable} ECC",
                    g.retired_pages and f"{g.retired_pages} retired pages",
                    g.remap_failure and "row remap failed") if x)
        for g in log.gpus if g.ecc_volatile_uncorrectable or g.retired_pages or g.remap_failure]
    check.measure(f"{len(log.gpus)} GPUs, {len(bad)} unhealthy")
    if not log.gpus:
        raise MeasurementError("nvidia-smi lists no GPU", host=gpu_host, stage="g2 gpu health")
    if bad:
        pytest.fail(f"{gpu_host} GPU health: " + "; ".join(bad), pytrace=False)


def test_gds(gate: GateContext, site: SiteConfig, check: CheckRecorder, gpu_host: str) -> None:
    """gdscheck -p: the platform verified, every GPU supporting GDS."""
    check.host = gpu_host
    result = gate.transport_pool().get(gpu_host).run([site.gates.g2.gdscheck, "-p"],
                                                     timeout=300)
    _save(gate, gpu_host, "gdscheck", result)
    gds = parse_gdscheck(_ok(result, gpu_host))
    check.expect("platform verified, every GPU supports GDS")
    check.measure(f"GDS {gds.version or '?'}: {gds.gpus_supporting}/{gds.gpus} GPUs, "
                  f"{'verified' if gds.verified else 'not verified'}")
    if not gds.verified or gds.gpus_supporting < gds.gpus or not gds.gpus:
        pytest.fail(f"{gpu_host} GDS: {gds.gpus_supporting} of {gds.gpus} GPUs, platform "
                    f"{'verified' if gds.verified else 'not verified'}", pytrace=False)


def test_serving(gate: GateContext, serving: ServingBaseline, check: CheckRecorder,
                 serving_cell: Cell) -> None:
    """The baseline arm alone at one G3 layout x tier: no failed requests (or at most the
    configured share), TTFT p50 and throughput steady across repetitions; its prefill
    throughput is recorded for the planner."""
    limits = serving.limits
    host = serving_cell.layout.instances[0].host
    check.host = host
    check.expect(f"{limits.repetitions} reps: at most {limits.max_failed_share:.0%} failed, "
                 f"CV of TTFT p50 and throughput <= {limits.max_cv:.0%}",
                 Reason("g2.serving_expected", {"reps": limits.repetitions,
                                                "failed": f"{limits.max_failed_share:.0%}",
                                                "cv": f"{limits.max_cv:.0%}"}))
    reps = serving.measure(serving_cell)
    verdict = judge(reps, limits)
    check.measure(verdict.measured(reps), verdict.measured_why(reps))
    gate.recorder.host_fact(host=host, key=f"serving prefill {serving_cell.key}",
                            value={"tokens_per_s": round(verdict.prefill_tps, 1),
                                   "ttft_p50_s": [round(r.ttft_p50_s, 4) for r in reps],
                                   "throughput_tps": [round(r.throughput_tps, 1)
                                                      for r in reps]},
                            simulated=gate.simulated)
    if verdict.missed:
        check.explain(Reason("g2.serving_missed", {"cell": serving_cell.key},
                             verdict.missed_why))
        pytest.fail(f"{serving_cell.key} baseline: " + "; ".join(verdict.missed),
                    pytrace=False)
    if verdict.undecided:
        check.explain(Reason("g2.serving_undecided", {"cell": serving_cell.key},
                             verdict.undecided_why))
        raise Inconclusive(f"{serving_cell.key}: " + "; ".join(verdict.undecided))
