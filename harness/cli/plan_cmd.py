"""`gate plan`: the customer's SLA as storage requirements per layout and tier, held
against what G2 measured (OK / AT RISK / SHORT). Never a gate: it blocks nothing and
exits 0 whatever it finds."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.cli import plan_args as a
from harness.cli.common import config_option, db_option, emit_json, json_option
from harness.cli.tables import console, wide_option
from harness.plan import Comparison, Context

if TYPE_CHECKING:
    from harness.config.loader import LoadedConfig
    from harness.plan.g2 import G2Measured
    from harness.plan.site import WhatIf

EXAMPLE = """\b
What-if, no site config (the seed's R1 shape at c=16):
  gate plan --layers 64 --kv-heads 8 --head-dim 128 --dtype bf16 --tp 1 \\
            --concurrency 16 --context 32768 --ttft-p50 10s
  gate plan --model-config ./Qwen2.5-32B/config.json --concurrency 16 --context 32768 \\
            --ttft-p50 10s --gds
At a site: gate plan -c gate.yaml (its model, layouts, tiers, workload and `plan:` SLA;
with a store holding G2's results, each requirement against what G2 measured)."""


@click.command(epilog=EXAMPLE)
@config_option
@db_option
@click.option("--model-config", "model_config", metavar="FILE",
              help="A local Hugging Face config.json for the shape (never downloaded).")
@click.option("--layers", callback=a.positive_int, metavar="N", help="Transformer layers.")
@click.option("--kv-heads", callback=a.positive_int, metavar="N", help="KV heads a layer.")
@click.option("--head-dim", callback=a.positive_int, metavar="N", help="Dimension of a head.")
@click.option("--dtype", callback=a.dtype, metavar="T", help="KV cache dtype: bf16 fp16 fp8 fp32.")
@click.option("--max-context", callback=a.positive_int, metavar="TOKENS",
              help="The model's longest context (default: the config's).")
@click.option("--tp", callback=a.positive_int, metavar="N",
              help="Tensor parallelism of a what-if layout (replaces the site's layouts).")
@click.option("--instances", callback=a.positive_int, metavar="N",
              help="Instances of the what-if layout, on one host (default 1).")
@click.option("--concurrency", multiple=True, callback=a.tiers, metavar="C",
              help="A concurrency tier (repeatable; default: gates.g3.tiers).")
@click.option("--context", multiple=True, callback=a.contexts, metavar="TOKENS[:SHARE]",
              help="A prompt length and its share of the requests (repeatable).")
@click.option("--suffix-tokens", callback=a.zero_or_more_int, metavar="N",
              help="Tokens computed on every request after the reused prefix "
                   "(default: workload.question_tokens, 64).")
@click.option("--output-tokens", callback=a.positive_int, metavar="N",
              help="Output tokens a request (default: workload.max_tokens, 128).")
@click.option("--ttft-p50", callback=a.duration, metavar="DURATION",
              help="The TTFT p50 target, e.g. 10s or 500ms.")
@click.option("--throughput", callback=a.positive, metavar="TOK/S",
              help="Output tokens / s a layout must deliver.")
@click.option("--prefix-sharing", callback=a.share, metavar="SHARE",
              help="Share of each prefix every request shares (0 to < 1).")
@click.option("--retention", callback=a.positive_int, metavar="DOCS",
              help="Documents whose KV must stay resident (default: G3's per tier).")
@click.option("--prefill-tok-s", callback=a.positive, metavar="TOK/S",
              help="One instance's prefill speed (default: G2's measurement, else "
                   "plan.prefill_tok_s).")
@click.option("--gds/--no-gds", default=None,
              help="GPUDirect Storage present (default: gates.g2.gds, else absent).")
@click.option("--bounce-gbps", callback=a.positive, metavar="GB/S",
              help="Host -> GPU copy bandwidth of a GPU without GDS (default 25).")
@click.option("--headroom", callback=a.zero_or_more, metavar="SHARE",
              help="Met with less to spare than this is AT RISK (default 0.2).")
@json_option
@wide_option
def plan(config_path: str, db_url: str | None, model_config: str | None,
         layers: int | None, kv_heads: int | None, head_dim: int | None, dtype: str | None,
         max_context: int | None, tp: int | None, instances: int | None,
         concurrency: tuple[int, ...], context: tuple[Context, ...],
         suffix_tokens: int | None, output_tokens: int | None, ttft_p50: float | None,
         throughput: float | None, prefix_sharing: float | None, retention: int | None,
         prefill_tok_s: float | None, gds: bool | None, bounce_gbps: float | None,
         headroom: float | None, as_json: bool, wide: bool) -> None:
    """The SLA as storage requirements per layout and tier: KV a token, resident
    capacity, peak and averaged read bandwidth, prefill write peak, hot tier, host copy
    without GDS; with G2's results, each against what was measured. Never a gate."""
    from harness.plan.site import WhatIf

    what_if = WhatIf(
        layers=layers, kv_heads=kv_heads, head_dim=head_dim, dtype=dtype,
        max_context=max_context, model_config=a.hf_config(model_config),
        model_config_path=model_config or "", tp=tp, instances=instances,
        concurrency=concurrency, contexts=context, suffix_tokens=suffix_tokens,
        output_tokens=output_tokens, ttft_p50_s=ttft_p50, throughput_tps=throughput,
        prefix_sharing=prefix_sharing, retention=retention, prefill_tok_s=prefill_tok_s,
        gds=gds, bounce_gbps=bounce_gbps, headroom=headroom)
    _run(config_path, db_url, what_if, as_json, wide)


def _site(config_path: str) -> LoadedConfig | None:
    """The site config when one is named or ./gate.yaml exists; None: a what-if alone."""
    if Path(config_path).exists() or config_path != "gate.yaml":
        from harness.cli.context import open_config
        from harness.config.planning import volume_problem
        from harness.errors import ConfigError

        loaded = open_config(config_path)
        # Checked here, not at load: a plan setting never stops a gate from running.
        why = volume_problem(loaded.config.plan, [t.name for t in loaded.config.gates.g2.fio])
        if why:
            raise ConfigError(why, file=str(loaded.path), key="plan.volume",
                              hint="name the fio target on the accelerator's volume")
        return loaded
    return None


def _g2(loaded: LoadedConfig | None, db_url: str | None, tiers: tuple[int, ...],
        notes: list[str]) -> G2Measured | None:
    """What G2 measured for the config's campaign; None without a config or a store (a
    SQLite file that is not there: nothing has run yet, and the plan says so)."""
    from harness.store.db import absent_file
    from harness.workflow.plan_g2 import read_g2

    if loaded is None:
        if db_url is not None:
            notes.append("comparing with G2 needs the site config (-c gate.yaml): its "
                         "campaign and its accelerator's fio target")
        return None
    missing = absent_file(db_url)
    if missing is not None:  # nothing has run yet: the plan is most useful before G2
        notes.append(f"no store at {missing.absolute()}: requirements only, nothing "
                     "compared")
        return None
    from harness.cli.context import open_store

    store = open_store(db_url, existing=True)
    try:
        found = read_g2(store, loaded.config, tiers)
    finally:
        store.close()
    if found.empty:
        notes.append(f"no G2 results for campaign {found.campaign!r} in {store.url}: "
                     "requirements only")
    return found


def _run(config_path: str, db_url: str | None, what_if: WhatIf, as_json: bool,
         wide: bool) -> None:
    from harness.cli.plan_view import plan_json, render_plan
    from harness.plan import compare
    from harness.plan import plan as plan_tiers
    from harness.plan.g2 import measured_for
    from harness.plan.site import build

    loaded = _site(config_path)
    cfg = loaded.config if loaded is not None else None
    notes: list[str] = []
    tiers = what_if.concurrency or (tuple(cfg.gates.g3.tiers) if cfg is not None else ())
    g2 = _g2(loaded, db_url, tiers, notes)
    planned = build(what_if, cfg, str(loaded.path) if loaded else None, g2)
    plans = [plan_tiers(p) for p in planned.inputs]
    comparisons: list[Comparison] = []
    if g2 is not None:
        for hosts, tier_plans in zip(planned.hosts, plans, strict=True):
            measured = measured_for(hosts, g2)
            for t in tier_plans:
                comparisons += compare(t, measured, planned.headroom)
    notes = [*planned.notes, *notes, *dict.fromkeys(n for ts in plans for t in ts
                                                    for n in t.notes)]
    if as_json:
        emit_json(plan_json(planned, plans, comparisons, notes, None if g2 is None else {
            "campaign": g2.campaign, "volume": g2.volume.name if g2.volume else None}))
        return
    render_plan(console(wide), planned, plans, comparisons, notes)
