"""How `gate plan` shows a plan: tables in human units on a terminal, every figure in
bytes, bytes / s and seconds with --json (a script divides; a reader should not)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from harness.cli.tables import Cell, Column, render
from harness.plan import Comparison, ModelShape, PlanInput, TierPlan
from harness.plan.site import Planned

STATUS_COLOURS = {"OK": "green", "AT RISK": "yellow", "SHORT": "red"}
REQUIREMENT = {"read_peak": "read, peak (TTFT)", "read_avg": "read, averaged (throughput)",
               "write_peak": "prefill write, peak"}


def size(b: float | None) -> str:
    """Decimal units, as fio and storage vendors count: 8.39 GB."""
    if b is None:
        return "—"
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(b) >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b:.0f} B"


def rate(b: float | None) -> str:
    return "—" if b is None else size(b) + "/s"


def secs(s: float | None) -> str:
    if s is None:
        return "—"
    return f"{s * 1e3:.3g} ms" if 0 < abs(s) < 1 else f"{s:.3g} s"


def kib(b: int) -> str:
    return f"{b / 1024:g} KiB"


def shape_line(shape: ModelShape) -> str:
    name = f"{shape.name}: " if shape.name else ""
    limit = f", max context {shape.max_context}" if shape.max_context else ""
    return (f"model {name}{shape.layers} layers x {shape.kv_heads} KV heads x "
            f"{shape.head_dim} x {shape.dtype} = {kib(shape.kv_bytes_per_token)} of KV a "
            f"token{limit}")


def _layout_line(p: PlanInput, hosts: Sequence[str]) -> str:
    where = f" on {', '.join(hosts)}" if hosts else ""
    mix = " + ".join(f"{c.tokens} x {c.share:.0%}" if len(p.contexts) > 1 else str(c.tokens)
                     for c in p.contexts)
    gds = "GDS" if p.gds else f"no GDS (host copy {p.bounce_bytes_s / 1e9:g} GB/s a GPU)"
    return (f"layout {p.layout}: TP {p.tp}, {p.instances} instance"
            f"{'s' if p.instances > 1 else ''}{where}, "
            f"{kib(p.shape.kv_bytes_per_token_gpu(p.tp))} a token a GPU; prompts {mix} "
            f"tokens ({p.suffix_tokens} computed each), {p.output_tokens} out, "
            f"prefix shared {p.prefix_sharing:.0%}; {gds}")


def _rows(tiers: Sequence[TierPlan]) -> list[tuple[str, Callable[[TierPlan], str]]]:
    host_differs = any(t.read_peak_host_bytes_s != t.read_peak_bytes_s for t in tiers)
    rows: list[tuple[str, Callable[[TierPlan], str]]] = [
        ("TTFT p50 target", lambda t: secs(t.ttft_target.value)),
        ("throughput target", lambda t: "—" if t.throughput_target.value is None
         else f"{t.throughput_target.value:.4g} tok/s"),
        ("cold KV a request", lambda t: size(t.cold_bytes)),
        ("suffix prefill", lambda t: secs(t.compute_s)),
        ("host copy (no GDS)", lambda t: secs(t.bounce_s) if t.bounce_s else "none"),
        ("time left to read", lambda t: secs(t.time_left_s)),
        ("read, peak (TTFT)", lambda t: "unreachable" if t.unreachable
         else rate(t.read_peak_bytes_s)),
        ("read, averaged (throughput)", lambda t: rate(t.read_avg_bytes_s)),
        ("prefill write, peak", lambda t: rate(t.write_peak_bytes_s)),
        ("resident KV (cold tier)", lambda t: f"{size(t.capacity_bytes)} "
                                              f"({t.retention_docs} docs)"),
        ("hot KV a GPU (decode)", lambda t: size(t.hot_bytes_gpu)),
    ]
    if host_differs:
        rows.insert(7, ("  of which one host", lambda t: rate(t.read_peak_host_bytes_s)))
    return rows


def _sources(tiers: Sequence[TierPlan]) -> list[str]:
    """Where the targets and the prefill speed came from: one line each, per tier where
    the tiers differ."""
    named: list[tuple[str, Callable[[TierPlan], str]]] = [
        ("TTFT target", lambda t: t.ttft_target.source),
        ("throughput target", lambda t: t.throughput_target.source),
        ("prefill speed", lambda t: "" if t.prefill.value is None else
         f"{t.prefill.value:.0f} tok/s an instance, {t.prefill.source}")]
    out = []
    for what, get in named:
        seen = [(t.concurrency, get(t)) for t in tiers if get(t)]
        if len({s for _, s in seen}) == 1 and len(seen) == len(tiers):
            out.append(f"{what}: {seen[0][1]}")
        elif seen:
            out.append(f"{what}: " + "; ".join(f"c={c} {s}" for c, s in seen))
    return out


COMPARE_COLUMNS = (Column("layout", whole=True), Column("c", whole=True),
                   Column("requirement"), Column("needed", whole=True),
                   Column("measured", whole=True), Column("status", whole=True),
                   Column("margin", whole=True), Column("source", weight=2))


def render_plan(out: Any, planned: Planned, plans: Sequence[Sequence[TierPlan]],
                comparisons: Sequence[Comparison], notes: Sequence[str]) -> None:
    """The plan on a rich console: a line for the model, a table per layout, the
    comparison with G2 when there is one, then the notes."""
    out.print(shape_line(planned.inputs[0].shape), markup=False, highlight=False,
              soft_wrap=True)
    for p, hosts, tiers in zip(planned.inputs, planned.hosts, plans, strict=True):
        out.print()
        out.print(_layout_line(p, hosts), markup=False, highlight=False, soft_wrap=True)
        columns = (Column("per tier", weight=2),
                   *(Column(f"c={t.concurrency}", whole=True) for t in tiers))
        render(out, columns, [[name, *(get(t) for t in tiers)] for name, get in _rows(tiers)])
        for line in _sources(tiers):
            out.print(line, markup=False, highlight=False, soft_wrap=True)
    if comparisons:
        out.print()
        render(out, COMPARE_COLUMNS, [
            [c.layout, str(c.concurrency), REQUIREMENT[c.requirement],
             "unreachable" if c.needed is None else rate(c.needed), rate(c.measured),
             Cell(c.status, STATUS_COLOURS[c.status]),
             "—" if c.margin is None else f"{c.margin:+.0%}", c.source]
            for c in comparisons], title="against what G2 measured, per host (never a gate)")
    for note in notes:
        out.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)


def plan_json(planned: Planned, plans: Sequence[Sequence[TierPlan]],
              comparisons: Sequence[Comparison], notes: Sequence[str],
              g2: dict[str, Any] | None) -> dict[str, Any]:
    """Bytes, bytes / s, seconds and tokens, as the planner computed them."""
    shape = planned.inputs[0].shape
    return {
        "model": {**asdict(shape), "kv_bytes_per_token": shape.kv_bytes_per_token},
        "layouts": [{**{k: v for k, v in asdict(p).items() if k not in ("shape", "tiers")},
                     "hosts": list(hosts),
                     "tiers": [{**asdict(t), "unreachable": t.unreachable} for t in tiers]}
                    for p, hosts, tiers in zip(planned.inputs, planned.hosts, plans,
                                               strict=True)],
        "headroom": planned.headroom, "g2": g2,
        "comparisons": [asdict(c) for c in comparisons], "notes": list(notes),
    }
