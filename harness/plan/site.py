"""`gate plan`'s inputs: the what-if flags on top of the site config on top of what G2
measured, each figure with where it came from, and every bad value one line naming the
flag or the config key that holds it (exit 4).

Precedence, per figure: a flag (a what-if is asked on purpose), then the site config's
`plan:` section, then G2's measurement, then what G3's own settings imply (its TTFT drop
and throughput gain applied to the baseline); the prefill speed is G2's before the
configured one (plan.prefill_tok_s is for layouts G2 has not measured).

Why in the planner (pure: a parsed config and G2's figures in, no I/O): `gate plan` and
the G3 report's plan section build the same inputs from the same config, and the report
may not import the workflow. Two rules of the serving cells are restated below (which
layouts G3 runs, how many documents a tier asks) because the planner sits below
harness.serving; tests/unit/test_plan_site.py holds them equal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from harness.config.models import G3Thresholds, SiteConfig, Workload
from harness.errors import ConfigError, UsageError
from harness.plan.formulas import plan
from harness.plan.g2 import G2Measured, Serving
from harness.plan.inputs import Context, PlanInput, Sourced, TierInput
from harness.plan.predict import predicted_ttft_p50
from harness.plan.shape import ModelShape, from_hf_config


def g3_layout_names(cfg: SiteConfig) -> list[str]:
    """The layouts G3 runs: `gates.g3.layouts`, else every layout (as
    harness.serving.cells.layouts)."""
    return list(cfg.gates.g3.layouts or [layout.name for layout in cfg.layouts])


def docs_for(tier: int, docs_per_concurrency: int, min_docs: int = 0) -> int:
    """The documents G3 asks at a tier (as harness.serving.cells.docs_for)."""
    return max(docs_per_concurrency * tier, min_docs)


@dataclass(frozen=True)
class WhatIf:
    """`gate plan`'s flags, parsed; None or empty: not given."""

    layers: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    dtype: str | None = None
    max_context: int | None = None
    model_config: Mapping[str, object] | None = None  # a parsed config.json
    model_config_path: str = ""
    tp: int | None = None
    instances: int | None = None
    concurrency: tuple[int, ...] = ()
    contexts: tuple[Context, ...] = ()
    suffix_tokens: int | None = None
    output_tokens: int | None = None
    ttft_p50_s: float | None = None
    throughput_tps: float | None = None
    prefix_sharing: float | None = None
    retention: int | None = None
    prefill_tok_s: float | None = None
    gds: bool | None = None
    bounce_gbps: float | None = None
    headroom: float | None = None


@dataclass(frozen=True)
class Planned:
    """One PlanInput per layout, the hosts each runs on (empty: a what-if layout), the
    AT RISK headroom, and what the reader must know about the inputs."""

    inputs: tuple[PlanInput, ...]
    hosts: tuple[tuple[str, ...], ...]
    headroom: float
    notes: tuple[str, ...]


@dataclass(frozen=True)
class _Where:
    """Where a value came from, to name it in an error: a flag, or a key of `file`."""

    key: str
    file: str | None = None

    def error(self, message: str, hint: str | None = None) -> UsageError:
        if self.file is None:
            return UsageError(message, key=self.key, hint=hint)
        return ConfigError(message, file=self.file, key=self.key, hint=hint)


@dataclass(frozen=True)
class _Layout:
    name: str
    tp: int
    instances: int
    per_host: int
    hosts: tuple[str, ...]
    where: _Where
    from_site: bool  # a layout of the site config: G2's serving figures apply


def _shape(w: WhatIf, cfg: SiteConfig | None, file: str | None) -> ModelShape:
    base: ModelShape | None = None
    if w.model_config is not None:
        try:
            base = from_hf_config(w.model_config, dtype=w.dtype)
        except UsageError as exc:
            raise UsageError(exc.message, file=w.model_config_path, key=exc.key,
                             hint=exc.hint) from None
    elif cfg is not None:
        m = cfg.model
        base = ModelShape(m.layers, m.kv_heads, m.head_dim, m.dtype, m.max_model_len, m.name)
    if base is None:
        missing = [flag for flag, v in (("--layers", w.layers), ("--kv-heads", w.kv_heads),
                                        ("--head-dim", w.head_dim)) if v is None]
        if missing:
            raise UsageError(f"the model's shape is not known: {', '.join(missing)} "
                             "missing", key=missing[0],
                             hint="give --layers, --kv-heads and --head-dim, or "
                                  "--model-config config.json, or -c gate.yaml")
        base = ModelShape(1, 1, 1, "bf16")
    return replace(base, layers=w.layers or base.layers, kv_heads=w.kv_heads or base.kv_heads,
                   head_dim=w.head_dim or base.head_dim, dtype=w.dtype or base.dtype,
                   max_context=w.max_context or base.max_context)


def _layouts(w: WhatIf, cfg: SiteConfig | None, file: str | None) -> list[_Layout]:
    if w.tp is not None or w.instances is not None or cfg is None or not cfg.layouts:
        tp, n = w.tp or 1, w.instances or 1
        return [_Layout(f"TP{tp}" if n == 1 else f"TP{tp}x{n}", tp, n, n, (),
                        _Where("--tp"), False)]
    wanted = set(g3_layout_names(cfg))
    return [_Layout(layout.name, layout.tp, len(layout.instances),
                    max(Counter(i.host for i in layout.instances).values()),
                    tuple(sorted({i.host for i in layout.instances})),
                    _Where(f"layouts[{n}].tp", file), True)
            for n, layout in enumerate(cfg.layouts) if layout.name in wanted]


def _contexts(w: WhatIf, cfg: SiteConfig | None,
              file: str | None) -> list[tuple[Context, _Where]]:
    if w.contexts:
        return [(c, _Where("--context")) for c in w.contexts]
    if cfg is not None and cfg.plan.contexts:
        return [(Context(c.tokens, c.share), _Where(f"plan.contexts[{n}].tokens", file))
                for n, c in enumerate(cfg.plan.contexts)]
    if cfg is not None:
        wl = cfg.workload
        return [(Context(wl.doc_tokens + wl.question_tokens, 1.0),
                 _Where("workload.doc_tokens", file))]
    raise UsageError("no context length: give --context TOKENS (repeatable, "
                     "TOKENS:SHARE for a mix)", key="--context")


def _check_contexts(contexts: Sequence[tuple[Context, _Where]], shape: ModelShape,
                    suffix: int, max_from: str) -> None:
    for c, where in contexts:
        if shape.max_context is not None and c.tokens > shape.max_context:
            raise where.error(f"a context of {c.tokens} tokens is longer than the model's "
                              f"maximum {shape.max_context} ({max_from})")
        if c.tokens <= suffix:
            raise where.error(f"a context of {c.tokens} tokens leaves nothing to load after "
                              f"the {suffix}-token suffix computed on every request",
                              hint="--suffix-tokens / workload.question_tokens")


def _max_from(w: WhatIf, cfg: SiteConfig | None) -> str:
    if w.max_context is not None:
        return "--max-context"
    if w.model_config is not None:
        return f"max_position_embeddings of {w.model_config_path}"
    return "model.max_model_len" if cfg is not None else "--max-context"


def _serving_at(g2: G2Measured | None, layout: _Layout, tier: int) -> tuple[Serving, int] | None:
    if g2 is None or not layout.from_site:
        return None
    return serving_at(g2, layout.name, tier)


def serving_at(g2: G2Measured, layout: str, tier: int) -> tuple[Serving, int] | None:
    """G2's serving baseline at this cell, else at the layout's nearest measured tier
    (the one the prefill speed of a site layout comes from), and that tier."""
    found = {int(k.rsplit("-c", 1)[1]): s for k, s in g2.serving.items()
             if k.rsplit("-c", 1)[0] == layout}
    if not found:
        return None
    near = min(found, key=lambda c: (abs(c - tier), c))
    return found[near], near


def _prefill(w: WhatIf, cfg: SiteConfig | None, layout: _Layout,
             at: tuple[Serving, int] | None) -> Sourced:
    """One instance's prefill speed. G2's is the speed under which the planner's baseline
    formula gives back the TTFT p50 G2 measured: ceil(c / n) x prompt / TTFT p50."""
    if w.prefill_tok_s is not None:
        return Sourced(w.prefill_tok_s, "--prefill-tok-s")
    if at is not None:
        wl = cfg.workload if cfg is not None else Workload()
        serving, tier = at
        per_instance = -(-tier // layout.instances)
        return Sourced(per_instance * (wl.doc_tokens + wl.question_tokens) / serving.ttft_p50_s,
                       serving.source(f"{layout.name}-c{tier}"))
    if cfg is not None and cfg.plan.prefill_tok_s is not None:
        return Sourced(cfg.plan.prefill_tok_s, "plan.prefill_tok_s")
    return Sourced(None)


def _targets(w: WhatIf, cfg: SiteConfig | None, cell: str,
             here: Serving | None) -> tuple[Sourced, Sourced]:
    """The TTFT p50 and throughput targets: the SLA's, else G3's criteria applied to G2's
    baseline at this very cell (a criterion on another tier's baseline means nothing)."""
    th = cfg.gates.g3.thresholds if cfg is not None else G3Thresholds()
    plan_ttft = cfg.plan.ttft_p50 if cfg is not None else None
    plan_thr = cfg.plan.throughput if cfg is not None else None
    ttft, thr = Sourced(None), Sourced(None)
    if w.ttft_p50_s is not None:
        ttft = Sourced(w.ttft_p50_s, "--ttft-p50")
    elif plan_ttft is not None:
        ttft = Sourced(plan_ttft, "plan.ttft_p50")
    elif here is not None:
        ttft = Sourced((1 - th.ttft_p50_drop) * here.ttft_p50_s,
                       f"G3's -{th.ttft_p50_drop:.0%} on the baseline of "
                       f"{here.source(cell)}: {here.ttft_p50_s:.3g} s")
    if w.throughput_tps is not None:
        thr = Sourced(w.throughput_tps, "--throughput")
    elif plan_thr is not None:
        thr = Sourced(plan_thr, "plan.throughput")
    elif here is not None:
        thr = Sourced((1 + th.throughput_gain) * here.throughput_tps,
                      f"G3's +{th.throughput_gain:.0%} on the baseline of "
                      f"{here.source(cell)}: {here.throughput_tps:.4g} tok/s")
    return ttft, thr


def _tier(w: WhatIf, cfg: SiteConfig | None, g2: G2Measured | None, layout: _Layout,
          base: PlanInput, tier: int) -> TierInput:
    """One tier's inputs. Without a TTFT target but with a prefill speed, G3's drop is
    applied to the baseline the planner predicts: what G3 itself will ask of the tier."""
    wl = cfg.workload if cfg is not None else Workload()
    at = _serving_at(g2, layout, tier)
    prefill = _prefill(w, cfg, layout, at)
    if at is not None and at[1] != tier:
        prefill = replace(prefill, source=prefill.source + ", the nearest tier measured")
    here = at[0] if at is not None and at[1] == tier else None
    ttft, throughput = _targets(w, cfg, f"{layout.name}-c{tier}", here)
    retention = (w.retention or (cfg.plan.retention if cfg is not None else None)
                 or docs_for(tier, wl.docs_per_concurrency, wl.min_docs))
    made = TierInput(tier, ttft, throughput, retention, prefill)
    if ttft.value is None and prefill.value is not None:
        (draft,) = plan(replace(base, tiers=(made,)))
        baseline = predicted_ttft_p50(draft, 1.0, "baseline")
        drop = (cfg.gates.g3.thresholds if cfg is not None else G3Thresholds()).ttft_p50_drop
        if baseline is not None:
            made = replace(made, ttft_p50_s=Sourced(
                (1 - drop) * baseline, f"G3's -{drop:.0%} on the predicted baseline "
                                       f"{baseline:.3g} s"))
    return made


def build(w: WhatIf, cfg: SiteConfig | None, file: str | None,
          g2: G2Measured | None) -> Planned:
    """The plan's inputs for each layout; a UsageError / ConfigError for a bad value."""
    shape = _shape(w, cfg, file)
    layouts = _layouts(w, cfg, file)
    wl = cfg.workload if cfg is not None else Workload()
    suffix = w.suffix_tokens if w.suffix_tokens is not None else wl.question_tokens
    contexts = _contexts(w, cfg, file)
    _check_contexts(contexts, shape, suffix, _max_from(w, cfg))
    tiers = w.concurrency or (tuple(cfg.gates.g3.tiers) if cfg is not None else ())
    if not tiers:
        raise UsageError("no concurrency tier: give --concurrency C (repeatable)",
                         key="--concurrency")
    gds = w.gds if w.gds is not None else (cfg is not None and cfg.gates.g2.gds)
    bounce = w.bounce_gbps or (cfg.plan.bounce_gbps if cfg is not None else 25.0)
    sharing = w.prefix_sharing if w.prefix_sharing is not None else (
        cfg.plan.prefix_sharing if cfg is not None else 0.0)
    why = "--no-gds" if w.gds is False else "gates.g2.gds is false" if cfg else "not given"
    notes = [] if gds else [
        f"no GDS ({why}): every KV byte read is copied host -> GPU at {bounce:g} GB/s a "
        "GPU (--gds where G2 verifies GDS; --bounce-gbps)"]
    inputs, hosts = [], []
    for layout in layouts:
        if shape.kv_heads % layout.tp:
            raise layout.where.error(
                f"TP {layout.tp} does not divide the model's {shape.kv_heads} KV heads: "
                "each GPU must hold whole heads", hint="pick a TP that divides them")
        base = PlanInput(shape=shape, layout=layout.name, tp=layout.tp,
                         instances=layout.instances, instances_per_host=layout.per_host,
                         contexts=tuple(c for c, _ in contexts), suffix_tokens=suffix,
                         output_tokens=w.output_tokens or wl.max_tokens,
                         prefix_sharing=sharing, gds=gds, bounce_bytes_s=bounce * 1e9,
                         tiers=())
        made = tuple(_tier(w, cfg, g2, layout, base, t) for t in tiers)
        inputs.append(replace(base, tiers=made))
        hosts.append(layout.hosts)
    if all(t.ttft_p50_s.value is None for p in inputs for t in p.tiers):
        notes.append("no TTFT target, so no read bandwidth: --ttft-p50 or plan.ttft_p50, "
                     "or G2's serving baseline (G3's criterion on it) or a prefill speed")
    if cfg is not None and g2 is not None:
        notes += g2.notes
    headroom = w.headroom if w.headroom is not None else (
        cfg.plan.headroom if cfg is not None else 0.2)
    return Planned(tuple(inputs), tuple(hosts), headroom, tuple(notes))
