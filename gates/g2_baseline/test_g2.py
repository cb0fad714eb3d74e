"""G2 checks: real fio on each target against the vendor's figures, GPU health, GDS (the
platform, and gdsio's GPU-direct read throughput), the serving baseline of the baseline arm.

A figure below its bound is STOP-LOSS; fio that failed, a missing tool, an unreachable
host is ERROR (nothing measured). Every raw output is an artifact with its sha256.
The serving baseline: failed requests above the configured share or a CV above its
limit is STOP-LOSS; a phase where every request failed is ERROR; a saturated client
leaves the CVs undecided: INCONCLUSIVE (harness/g2/serving.py:judge).
"""

from __future__ import annotations

import math

import pytest

from harness.config.models import Layout, SiteConfig
from harness.errors import Inconclusive, MeasurementError
from harness.g2 import engine_version, health
from harness.g2 import fio as g2fio
from harness.g2 import gdsio as g2gdsio
from harness.g2.plan import JOBS, FioCell, fio_cells
from harness.g2.serving import judge
from harness.g2.serving_run import ServingBaseline
from harness.probes import mounts
from harness.probes.findmnt import Mount, parse_findmnt
from harness.probes.fio import parse_fio
from harness.probes.gdsio import parse_gdsio
from harness.probes.gpu_health import parse_dcgmi_diag, parse_gdscheck
from harness.probes.nvidia_smi import parse_nvidia_smi_xml
from harness.progress_log import Timed
from harness.pytest_plugin import CheckRecorder, GateContext
from harness.reasons import Reason, text
from harness.serving.cells import Cell
from harness.transport.base import Transport
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


def _filesystem(gate: GateContext, host: Transport, name: str, target: mounts.Placed,
                label: str, fact: bool) -> Mount:
    """The filesystem the target's directory is on, as findmnt resolves it on host `name`;
    ERROR where it is not what the target declares (harness/probes/mounts.py). G2 never creates
    the directory: an unmounted volume would leave fio or gdsio measuring the root disk.
    `fact`: record it as the host fact `LABEL filesystem` (once per target and host)."""
    if not host.run(["test", "-d", target.path], timeout=30).ok:
        raise MeasurementError(f"{target.path} is not a directory on {name}",
                               host=name, stage=f"g2 {label}",
                               hint="mount the target volume and create the directory: "
                                    "G2 does not create it")
    found = host.run(mounts.argv(target.path), timeout=30)
    _save(gate, name, f"findmnt.{label.replace(' ', '.')}", found)
    mount = parse_findmnt(_ok(found, name))
    zfs = None
    if mount.fstype == "zfs" and target.direct:
        version = host.run(["cat", "/sys/module/zfs/version"], timeout=30)
        zfs = mounts.zfs_version(version.stdout) if version.ok else None
    if fact:
        gate.recorder.host_fact(host=name, key=f"{label} filesystem",
                                value={"source": mount.source, "fstype": mount.fstype,
                                       "mount": mount.target}, simulated=gate.simulated)
    why = mounts.problem(target, mount, zfs)
    if why:
        raise MeasurementError(why, host=name, stage=f"g2 {label}",
                               hint="set the target's mount: / device: to what it is on, "
                                    "or direct: false (weakened)")
    return mount


def test_fio(gate: GateContext, site: SiteConfig, check: CheckRecorder, cell: FioCell) -> None:
    """One fio job on one target of one host: bandwidth, IOPS or p99 latency against the
    vendor's figure x min_fraction, on the filesystem the target declares."""
    check.host = cell.host
    g2 = site.gates.g2
    host = gate.transport_pool().get(cell.host)
    expected, bound = g2fio.wanted(cell.target, cell.job, g2.min_fraction)
    expected_why = g2fio.wanted_why(cell.target, cell.job, g2.min_fraction)
    check.expect(expected, expected_why)
    argv = g2fio.argv(cell.target, cell.job, g2.numjobs)
    raw = cell.target.path.startswith("/dev/")
    where = cell.target.path
    where_why: Reason | str = where
    if not raw:
        mount = _filesystem(gate, host, cell.host, cell.target, f"fio {cell.target.name}",
                            fact=cell.job == JOBS[0])
        where, placed = mounts.described(mount), mounts.described_why(mount)
        where_why = placed
        check.measure(where, placed)
    try:
        with Timed(g2fio.step(cell, fio_cells(site, gate.inventory))):
            result = host.run(argv, timeout=cell.target.runtime_s * 4 + 120)
    finally:
        if not raw:
            host.run(["rm", "-f", g2fio.target_file(cell.target)], timeout=60)
    _save(gate, cell.host, f"fio.{cell.target.name}.{cell.job}", result)
    parsed = parse_fio(_ok(result, cell.host))
    if not parsed.jobs or parsed.failed:
        code = parsed.failed[0].error if parsed.failed else "no job reported"
        raise MeasurementError(f"fio job failed (error {code})", host=cell.host,
                               stage="g2 fio")
    value = g2fio.figure(parsed, cell.job)
    unit = g2fio.job(cell.job, g2.numjobs).figure
    words, why = g2fio.measured(value, unit, cell.target, where, where_why)
    check.measure(words, why)
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
    row-remap failures. Nothing read is not a PASS (harness/g2/health.py)."""
    check.host = gpu_host
    host = gate.transport_pool().get(gpu_host)
    level = site.gates.g2.dcgm_level
    diag = host.run(["dcgmi", "diag", "-r", str(level), "-j"], timeout=3600)
    if diag.rc != MISSING:
        _save(gate, gpu_host, f"dcgmi-diag-r{level}", diag)
        check.expect(f"dcgmi diag -r {level}: tests run and passed, none failed",
                     Reason("g2.diag_expected", {"level": level}))
        verdict = health.judge_diag(parse_dcgmi_diag(_ok(diag, gpu_host)))
    else:
        smi = host.run(["nvidia-smi", "-q", "-x"], timeout=120)
        _save(gate, gpu_host, "nvidia-smi", smi)
        check.expect("nvidia-smi (no DCGM): no uncorrectable ECC, retired pages or remap "
                     "failure, read on every GPU", Reason("g2.smi_expected"))
        verdict = health.judge_smi(parse_nvidia_smi_xml(_ok(smi, gpu_host)).gpus)
    check.measure(verdict.measured, verdict.measured_why)
    if verdict.error:
        raise MeasurementError(verdict.error, host=gpu_host, stage="g2 gpu health")
    if verdict.failed:
        pytest.fail(f"{gpu_host} GPU health: " + "; ".join(verdict.failed), pytrace=False)
    if verdict.undecided:
        raise Inconclusive(f"{gpu_host}: {verdict.undecided}")


def test_gds(gate: GateContext, site: SiteConfig, check: CheckRecorder, gpu_host: str) -> None:
    """gdscheck -p: the platform verified, every GPU supporting GDS."""
    check.host = gpu_host
    result = gate.transport_pool().get(gpu_host).run([site.gates.g2.gdscheck, "-p"],
                                                     timeout=300)
    _save(gate, gpu_host, "gdscheck", result)
    gds = parse_gdscheck(_ok(result, gpu_host))
    check.expect("platform verified, every GPU supports GDS", Reason("g2.gds_expected"))
    check.measure(f"GDS {gds.version or '?'}: {gds.gpus_supporting}/{gds.gpus} GPUs, "
                  f"{'verified' if gds.verified else 'not verified'}",
                  Reason("g2.gds_measured", {
                      "version": gds.version or "?", "supporting": gds.gpus_supporting,
                      "gpus": gds.gpus, "verified": Reason("g2.verified" if gds.verified
                                                           else "g2.not_verified")}))
    if not gds.verified or gds.gpus_supporting < gds.gpus or not gds.gpus:
        pytest.fail(f"{gpu_host} GDS: {gds.gpus_supporting} of {gds.gpus} GPUs, platform "
                    f"{'verified' if gds.verified else 'not verified'}", pytrace=False)


def test_gdsio(gate: GateContext, site: SiteConfig, check: CheckRecorder,
               gpu_host: str) -> None:
    """gdsio's GPU-direct sequential read on the accelerator volume against the vendor's
    GiB/s x min_fraction; a run cuFile served in compat mode is not GDS (STOP-LOSS). No
    gdsio on the host: ERROR, or SKIPPED where the site lists test_gdsio as optional."""
    check.host = gpu_host
    g2 = site.gates.g2
    spec = g2.gdsio
    assert spec is not None  # only collected when configured (harness/g2/plan.py)
    expected, bound = g2gdsio.wanted(spec, g2.min_fraction)
    check.expect(expected, g2gdsio.wanted_why(spec, g2.min_fraction))
    host = gate.transport_pool().get(gpu_host)
    mount = _filesystem(gate, host, gpu_host, spec, "gdsio", fact=True)
    where = mounts.described(mount)
    work = g2gdsio.work_dir(spec)
    host.run(["mkdir", "-p", work], timeout=30).check("g2 gdsio directory")
    try:
        result = host.run(g2gdsio.argv(spec), timeout=spec.seconds * 4 + 300,
                          env=g2gdsio.env(spec))
        log = host.run(["cat", f"{work}/{g2gdsio.LOG_NAME}"], timeout=30)
    finally:
        host.run(["rm", "-rf", work], timeout=300)
    _save(gate, gpu_host, "gdsio", result)
    if result.rc == MISSING:  # never a silent pass: SKIPPED only where declared optional
        check.measure("gdsio not installed", Reason("g2.gdsio_missing"))
        if any(o and o in f"test_gdsio[{gpu_host}]" for o in gate.optional):
            pytest.skip(f"gdsio not installed on {gpu_host}")
        raise MeasurementError(f"{describe(result.argv)}: gdsio is not installed "
                               f"({tail(result.stderr, 160)})", host=gpu_host,
                               stage="g2 gdsio", hint="install GDS's tools, or list "
                                                      "test_gdsio in gates.g2.optional")
    output = _ok(result, gpu_host)
    verdict = g2gdsio.judge(parse_gdsio("\n".join((output, result.stderr,
                                                   log.stdout if log.ok else ""))), bound)
    check.measure(f"{verdict.measured} on {where}", Reason("g2.gdsio_on", {
        "measured": verdict.measured_why or text(verdict.measured),
        "where": mounts.described_why(mount)}))
    if verdict.error:
        raise MeasurementError(verdict.error, host=gpu_host, stage="g2 gdsio")
    gate.recorder.host_fact(host=gpu_host, key="gdsio read GiB/s",
                            value=round(verdict.gib_s, 3), simulated=gate.simulated)
    if verdict.missed:
        pytest.fail(f"{gpu_host} GDS read: " + "; ".join(verdict.missed)
                    + f" (expected {expected})", pytrace=False)


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


def test_engine_version(gate: GateContext, site: SiteConfig, serving: ServingBaseline,
                        check: CheckRecorder, serving_layout: Layout) -> None:
    """The baseline arm's running engines (what /version etc. report once started) against
    the version the software BOM orders for their hosts: a mismatch is STOP-LOSS; nothing
    to compare is ERROR, or SKIPPED where test_engine_version is optional."""
    running = serving.running_engines(serving_layout)
    check.host = serving_layout.instances[0].host
    orders = {one.host: engine_version.ordered(site, gate.inventory, one.host)
              for one in running}
    found = engine_version.compare(running, orders)
    check.expect(found.expected, text(found.expected))  # hosts, engines and versions: no words
    check.measure(found.found, text(found.found))
    for i, one in enumerate(running):  # keyed like G3's `engine baseline TP8#0`
        gate.recorder.host_fact(host=one.host, key=f"engine version {serving_layout.name}#{i}",
                                value={"url": one.url, "engine": one.engine,
                                       "version": one.version}, simulated=gate.simulated)
    if found.mismatch:
        pytest.fail(f"{serving_layout.name} engine: " + "; ".join(found.mismatch),
                    pytrace=False)
    if found.unknown:
        why = "; ".join(found.unknown)
        if any(o and o in f"test_engine_version[{serving_layout.name}]" for o in gate.optional):
            pytest.skip(f"not comparable: {why}")
        raise MeasurementError(f"the running engine cannot be compared with the BOM: {why}",
                               stage="g2 engine version",
                               hint="order the engine in gates.g1.bom.<group>.software, or "
                                    "list test_engine_version in gates.g2.optional")
