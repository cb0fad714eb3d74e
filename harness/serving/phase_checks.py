"""What a finished load phase must show before its numbers count, for G3's arms and G2's
serving baseline alike: it ended in time, it measured something, its engines survived.

Why apart from the session: both gates drive phases through the same seam and must
refuse the same broken phases with the same words (a copy in G2 had already drifted).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.config.models import SiteConfig
from harness.errors import EndpointError, InfrastructureError, MeasurementError
from harness.loadgen.failures import explain
from harness.loadgen.phase import PhaseOutcome
from harness.loadgen.records import Endpoint as LoadEndpoint
from harness.loadgen.records import RequestRecord
from harness.loadgen.storage import PhaseWriter
from harness.serving.arms import Endpoint, wait_healthy


def load_endpoints(eps: Sequence[Endpoint], model: str) -> list[LoadEndpoint]:
    return [LoadEndpoint(url=ep.url, model=model, instance=ep.instance) for ep in eps]


def ended_in_time(outcome: PhaseOutcome, what: str, stage: str) -> None:
    """A phase stopped by gates.g3.phase_timeout measured only part of its requests:
    ERROR (what finished is stored, the benchmark row says TIMEOUT). `what` names the
    phase in the message ("accelerated measured", "baseline serving")."""
    if outcome.status == "TIMEOUT":
        limit = outcome.result.params.get("phase_timeout")
        said = f" ({limit:g} s)" if isinstance(limit, int | float) else ""
        raise MeasurementError(f"the {what} phase ran past gates.g3.phase_timeout{said} and "
                               "was stopped; its finished requests are stored", stage=stage)


def measured_something(records: Sequence[RequestRecord], what: str, stage: str,
                       cfg: SiteConfig) -> None:
    """A phase where every request failed measured nothing: an ERROR to fix (wrong model,
    context too long, engine broken), not an infinitely slow arm; the message quotes the
    server and names the likely cause (harness.loadgen.failures). A phase with no record
    at all (a remote phase whose record file was lost) is one too."""
    if not records:
        raise MeasurementError(f"the {what} phase returned no request records", stage=stage)
    if not any(r.ok for r in records):
        report = explain(records, api=cfg.workload.api, model=cfg.model.name)
        first = report.samples[0].line() if report and report.samples else "?"
        hint = f"; likely cause: {report.hint}" if report and report.hint else ""
        raise MeasurementError(f"every request of the {what} phase failed "
                               f"({len(records)}x), e.g. {first}{hint}", stage=stage)


def still_healthy(eps: Sequence[Endpoint], bench: PhaseWriter, outcome: PhaseOutcome,
                  path: str = "/health") -> None:
    """An engine that died during the phase is an infrastructure failure, not a slow arm."""
    for ep in eps:
        try:
            wait_healthy(ep.url, timeout=10, path=path)
        except EndpointError as exc:
            bench.finish(outcome, status="FAILED", duration=0.0,
                         extra={"error": exc.one_line()})
            raise InfrastructureError(f"engine died during the measured phase: {exc.message}",
                                      host=ep.url, stage="measured") from None
