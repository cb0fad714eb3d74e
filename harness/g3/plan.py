"""The G3 plan: cells (layout x tier), repetition pairs in a seeded ABBA order, and the
steps each arm-repetition takes. Pure: no I/O, so `--dry-run` and tests share it."""

from __future__ import annotations

import random

from harness.config.inventory import Inventory
from harness.config.models import G3, SiteConfig
from harness.serving.cells import ARMS, Cell, cells, docs_for, layouts
from harness.suite_hooks import DryRun
from harness.suite_hooks import DryRunStep as Step

# The per-layout checks that run before anything is measured (gates/g3_main/test_g3.py).
PREFLIGHT = ("test_arms_serve_the_same_model", "test_arms_match_the_declared_layout",
             "test_arms_differ_only_by_the_accelerator",
             "test_accelerated_arm_exposes_external_cache")


def expected_checks(config: SiteConfig, inventory: object = None) -> list[str]:
    """G3's plan: every preflight check of every layout and every layout x tier cell.
    A PASS needs each of them stored and passed (harness/runner.py compares)."""
    return ([f"{name}[{layout.name}]" for layout in layouts(config) for name in PREFLIGHT]
            + [f"test_cell[{cell.key}]" for cell in cells(config)])


def weakened(config: SiteConfig) -> list[str]:
    """The decision settings weaker than their defaults, and evidence a real site leaves
    to the vendor's word: a PASS then needs a sign-off."""
    from harness.config.decision import weakened as weaker

    out = [d.line() for d in weaker(config.model_dump(mode="json"))]
    volume = config.gates.g3.evidence.kv_volume
    if config.simulated:
        return out
    if volume is None:
        out.append("gates.g3.evidence.kv_volume not set: the accelerator's reads are "
                   "counted on the storage hosts alone (the vendor's), not on the GPU hosts")
    elif not volume.direct:
        out.append("gates.g3.evidence.kv_volume.direct = false: the KV volume may be a "
                   "filesystem in memory (tmpfs, overlay)")
    return out


def pair_order(seed: int, cell_key: str, repetition: int) -> tuple[str, str]:
    """ABBA across repetitions, with the starting arm drawn per cell from the seed: rep 0
    A-B, rep 1 B-A, ... so drift and warm-up effects hit both arms alike."""
    first = random.Random(f"{seed}:{cell_key}").random() < 0.5
    flip = (repetition % 2 == 1) != first
    return ("accelerated", "baseline") if flip else ("baseline", "accelerated")


def estimate_steps(config: SiteConfig, cell: Cell, repetition: int) -> list[Step]:
    g3: G3 = config.gates.g3
    est = g3.estimate
    n_docs = docs_for(cell.tier, config.workload.docs_per_concurrency,
                      config.workload.min_docs)
    tokens = n_docs * (config.workload.doc_tokens + config.workload.question_tokens)
    per_instance = tokens / len(cell.layout.instances)
    steps = []
    for arm in pair_order(g3.seed, cell.key, repetition):
        rate = est.tier_tokens_per_s if arm == "accelerated" else est.recompute_tokens_per_s
        steps += [
            Step(cell.key, repetition, arm, "start", est.start_s),
            Step(cell.key, repetition, arm, "warm", per_instance / est.recompute_tokens_per_s),
            Step(cell.key, repetition, arm, "restart", est.restart_s),
            Step(cell.key, repetition, arm, "drop_caches",
                 est.drop_caches_s if g3.drop_caches_on else 0.0),
            Step(cell.key, repetition, arm, "measured", per_instance / rate),
            Step(cell.key, repetition, arm, "stop", est.stop_s),
        ]
    return steps


def dry_run(config: SiteConfig) -> DryRun:
    """Every step at the minimum repetitions, what each cell asks, and the totals at the
    fewest and the most pairs."""
    g3 = config.gates.g3
    reps = g3.repetitions
    steps: list[Step] = []
    total_min = total_max = 0.0
    notes = []
    for cell in cells(config):
        for rep in range(reps.max):
            rep_steps = estimate_steps(config, cell, rep)
            cost = sum(s.estimate_s for s in rep_steps)
            total_max += cost
            if rep < reps.min:
                total_min += cost
                steps += rep_steps
        n = docs_for(cell.tier, config.workload.docs_per_concurrency, config.workload.min_docs)
        notes.append(f"{cell.key}: {n} documents of {config.workload.doc_tokens} tokens per "
                     f"phase, {reps.min}..{reps.max} ABBA pairs")
    return DryRun(title=f"G3 plan for {config.campaign.name} (minimum repetitions)",
                  steps=tuple(steps), notes=tuple(notes), total_min_s=total_min,
                  total_max_s=total_max, at_min=f"{reps.min} pairs per cell",
                  at_max=str(reps.max), basis="gates.g3.estimate")


def validate(config: SiteConfig, inventory: Inventory) -> None:
    """What G3 needs from the config, checked before anything starts (exit 4)."""
    from harness.errors import UsageError

    assert isinstance(inventory, Inventory)  # a caller mypy cannot see: a harness bug
    if config.arms is None:
        raise UsageError("G3 needs `arms:` with baseline and accelerated", key="arms")
    if not config.layouts:
        raise UsageError("G3 needs at least one layout", key="layouts")
    if config.load.placement == "client" and not inventory.groups.get("client"):
        raise UsageError("load.placement: client runs the load on the inventory's [client] "
                         "host, and the inventory has none", key="load.placement",
                         hint="add the client host under [client], or use placement: local")
    for i, layout in enumerate(config.layouts):
        for j, inst in enumerate(layout.instances):
            if inst.host not in inventory.hosts and not _declared(config, layout.name):
                raise UsageError(f"host {inst.host!r} is not in the inventory",
                                 key=f"layouts[{i}].instances[{j}].host")
    for arm_name in ARMS:
        arm = getattr(config.arms, arm_name)
        for which in ("start", "stop", "restart"):
            action = getattr(arm, which)
            host = getattr(action, "host", "local")
            if action is not None and host != "local" and host not in inventory.hosts:
                raise UsageError(f"host {host!r} is not in the inventory",
                                 key=f"arms.{arm_name}.{which}.host")
    from harness.ansible.playbook_vars import check_arms, playbook_texts

    check_arms(config.arms, playbook_texts(config.arms))
    for group in config.gates.g3.drop_caches_on:
        inventory.group(group)
    evidence = config.gates.g3.evidence
    if not config.simulated:
        # The accelerator's devices' reads are what proves it did the work (devices.py):
        # at a real site they must be named, and their hosts in the inventory.
        if not evidence.devices:
            raise UsageError("must name the accelerator's block devices on the storage "
                             "hosts: G3 holds their reads against the KV the accelerated "
                             "arm recovered cold, and with no list every disk would count",
                             key="gates.g3.evidence.devices",
                             hint="list them as /proc/diskstats names them, e.g. [nvme1n1]")
        if not any(inventory.groups.get(g) for g in evidence.storage_groups):
            raise UsageError("no inventory host in these groups: G3 reads the "
                             "accelerator's devices there (/proc/diskstats)",
                             key="gates.g3.evidence.storage_groups",
                             hint="add the storage hosts to the inventory under the group")
    if evidence.kv_volume is not None:
        for i, layout in enumerate(config.layouts):
            for j, inst in enumerate(layout.instances):
                if inst.host not in inventory.hosts:
                    raise UsageError(f"host {inst.host!r} is not in the inventory, and "
                                     "gates.g3.evidence.kv_volume is read on every layout "
                                     "host", key=f"layouts[{i}].instances[{j}].host")


def _declared(config: SiteConfig, layout: str) -> bool:
    assert config.arms is not None
    return all(layout in getattr(config.arms, a).endpoints for a in ARMS)


def config_summary(config: SiteConfig, inventory: Inventory) -> str:
    """`gate config validate`: every layout fits the GPUs its hosts' BOM group orders
    (exit 4 naming it; G3's layout check holds it against G1's count too, and a host
    whose group orders no GPU is left to that check); says the layout hosts."""
    from harness.errors import ConfigError
    from harness.serving.layout_fit import misfits, ordered_gpus

    ordered = ordered_gpus(config.gates.g1, inventory)
    for i, layout in enumerate(config.layouts):
        bad = [m for m in misfits(layout, ordered) if m.found is not None]
        if bad:
            raise ConfigError(bad[0].text(), key=f"layouts[{i}]",
                              hint="fewer instances or a smaller tp, or the BOM's GPU count")
    hosts = sorted({i.host for layout in config.layouts for i in layout.instances})
    return f"layout hosts {', '.join(hosts)}" if hosts else ""
