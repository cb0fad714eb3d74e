"""G2's GPU health judgement: `dcgmi diag` where DCGM answers, nvidia-smi's ECC / retired
pages / row-remap state otherwise. Pure functions of the parsed outputs.

A PASS needs something read: dcgmi diag that ran no test is ERROR (nothing measured);
one whose tests were all skipped, or with a test not run or of a status DCGM's docs do
not name (Pass / Fail / Warn / Skip), is INCONCLUSIVE naming those tests, since nobody
knows what they would have found. Skipped tests beside passed ones are shown, not held
against the host (DCGM skips what a GPU or driver does not support, e.g. the EUD test).
The nvidia-smi fallback likewise: a GPU of which no health field was readable (all
N/A, as on a MIG-enabled A100 whose counters live per instance) makes it INCONCLUSIVE.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.probes.gpu_health import DcgmDiag, DiagTest
from harness.probes.nvidia_smi import Gpu
from harness.reasons import Reason


@dataclass(frozen=True)
class HealthVerdict:
    measured: str
    failed: tuple[str, ...] = ()  # STOP-LOSS
    error: str | None = None  # nothing measured: ERROR
    undecided: str | None = None  # INCONCLUSIVE
    measured_why: Reason | None = None  # `measured` as a Reason, where it has one


def judge_diag(report: DcgmDiag) -> HealthVerdict:
    tests = report.tests
    failed = report.failed
    passed = [t for t in tests if t.status.lower() == "pass"]
    skipped = [t for t in tests if t.status.lower() == "skip"]
    unsettled = [t for t in tests if t not in failed and t not in passed and t not in skipped]
    measured = f"{len(tests)} tests, {len(failed)} failed"
    if skipped:
        measured += f", {len(skipped)} skipped ({_names(skipped)})"
    if unsettled:
        measured += f", {len(unsettled)} not run ({_names(unsettled)})"
    why = Reason("g2.diag_measured", {"tests": len(tests), "failed": len(failed),
                                      "skipped": _named("g2.diag_skipped", skipped),
                                      "unsettled": _named("g2.diag_not_run", unsettled)})
    if failed:
        return HealthVerdict(measured, failed=tuple(
            f"{t.name}: {t.status} {' '.join(t.info)[:120]}" for t in failed), measured_why=why)
    if not tests:
        return HealthVerdict(measured, error="dcgmi diag reported no test", measured_why=why)
    if unsettled:
        return HealthVerdict(measured, undecided="dcgmi diag did not run "
                             + ", ".join(f"{t.name} ({t.status or 'no result'})"
                                         for t in unsettled), measured_why=why)
    if not passed:
        return HealthVerdict(measured, undecided="dcgmi diag skipped every test: "
                             + _names(skipped), measured_why=why)
    return HealthVerdict(measured, measured_why=why)


def _named(code: str, tests: Sequence[DiagTest]) -> Reason | str:
    """`, 1 skipped (EUD Test)` as a nested reason, or nothing where there is none."""
    return Reason(code, {"n": len(tests), "names": _names(tests)}) if tests else ""


def judge_smi(gpus: Sequence[Gpu]) -> HealthVerdict:
    if not gpus:
        return HealthVerdict("0 GPUs", error="nvidia-smi lists no GPU",
                             measured_why=Reason("g2.smi_no_gpu"))
    bad = [f"{g.pci_bus_id}: " + ", ".join(
        x for x in (g.ecc_volatile_uncorrectable and f"{g.ecc_volatile_uncorrectable} ECC",
                    g.retired_pages and f"{g.retired_pages} retired pages",
                    g.remap_failure and "row remap failed") if x)
        for g in gpus if g.ecc_volatile_uncorrectable or g.retired_pages or g.remap_failure]
    unread = [str(g.pci_bus_id) for g in gpus if _fields_read(g) == 0]
    measured = f"{len(gpus)} GPUs, {len(bad)} unhealthy"
    if unread:
        measured += f", {len(unread)} unreadable"
    why = Reason("g2.smi_measured", {"gpus": len(gpus), "bad": len(bad), "unread": Reason(
        "g2.smi_unread", {"n": len(unread)}) if unread else ""})
    if bad:
        return HealthVerdict(measured, failed=tuple(bad), measured_why=why)
    if unread:
        return HealthVerdict(measured, undecided="nvidia-smi shows no ECC, retired-page or "
                             "row-remap field (N/A) for " + ", ".join(unread), measured_why=why)
    return HealthVerdict(measured, measured_why=why)


def _fields_read(gpu: Gpu) -> int:
    return sum(v is not None for v in (gpu.ecc_volatile_uncorrectable, gpu.retired_pages,
                                       gpu.remap_failure))


def _names(tests: Sequence[DiagTest]) -> str:
    return ", ".join(t.name for t in tests)
