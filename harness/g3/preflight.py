"""What preflight reads of each layout's arms before anything is measured: the model
cards the servers report, what keeps the arms from being compared, and whether the
layout fits the GPUs its hosts have (G1's count, else the BOM's)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.config.bom import GPU_COUNT_FACT
from harness.config.inventory import Inventory
from harness.config.models import Layout, SiteConfig
from harness.g3.rules import Card
from harness.loadgen.probe import ServerInfo
from harness.probes.prometheus import MetricsSnapshot, exposes_tier
from harness.reasons import Reason
from harness.serving.identity import ArmComparison
from harness.serving.layout_fit import HostGpus, misfits, ordered_gpus
from harness.serving.problems import Problem, ProblemKind
from harness.store import Store


@dataclass(frozen=True)
class Preflight:
    """What one layout's arms serve and run, read before anything is measured."""

    layout: str
    cards: dict[str, list[Card]]  # arm -> model card per instance
    card_problems: list[Problem]  # MODEL (served model, max_model_len, version), LAYOUT
    identity: ArmComparison  # the engines' argv / environment / server config
    unreadable: list[str]  # engines whose process could not be read
    accelerated_exposes_external: bool

    def of(self, kind: ProblemKind) -> list[Problem]:
        return [p for p in self.problems if p.kind is kind]

    @property
    def problems(self) -> list[Problem]:
        """Everything that keeps the layout's arms from being compared."""
        summary = self.identity.summary()
        differ = [Problem(ProblemKind.ENGINES_DIFFER, summary,
                          Reason("g3.engines_differ",
                                 {"detail": self.identity.summary_why()}))] \
            if not self.identity.equal else []
        unverified = [Problem(ProblemKind.ENGINES_UNVERIFIED, u,
                              Reason("g3.engines_unverified", {"detail": u}))
                      for u in self.unreadable]
        return [*self.card_problems, *differ, *unverified]

    def card_values(self, arm: str, key: str) -> list[str]:
        """The distinct values of one model-card key over the arm's instances."""
        return sorted({str(c.get(key)) for c in self.cards.get(arm, []) if c.get(key)})

    def honours_ignore_eos(self, arm: str) -> bool:
        """Does every engine found on this arm honour ignore_eos? (True when none was
        named: the old behaviour, and the length check still guards.)"""
        from harness.loadgen.engines import PROFILES

        return all(PROFILES[n].ignore_eos for n in self.card_values(arm, "engine")
                   if n in PROFILES)

    def engine_names(self, arm: str) -> dict[str, str]:
        """engine and engine_version of the arm's instances."""
        names, versions = self.card_values(arm, "engine"), self.card_values(arm, "version")
        return {k: ", ".join(v) for k, v in (("engine", names), ("engine_version", versions))
                if v}


def _mapping(value: object) -> dict[str, object]:
    return {str(k): v for k, v in value.items()} if isinstance(value, dict) else {}


def model_card(info: ServerInfo) -> Card:
    """What an engine says it serves, as preflight compares it."""
    raw = _mapping(info.raw)
    sim = _mapping(raw.get("gate_sim"))
    tp = sim.get("tp", _mapping(raw.get("parallel_config")).get("tensor_parallel_size"))
    return {"models": list(info.models), "model": info.models[0] if info.models else None,
            "max_model_len": info.max_model_len, "version": info.version,
            "engine": info.engine.name if info.engine else None,
            "tp": int(tp) if isinstance(tp, int | float | str) else None,
            "simulated": bool(sim.get("simulated"))}


def exposes_external(snapshot: MetricsSnapshot) -> bool:
    """A counter that can prove the tier was read (vLLM's KV connector, LMCache, SGLang's
    HiCache storage prefetch); llama.cpp, TGI and Ollama expose none."""
    return exposes_tier(snapshot)




def host_gpus(store: Store, run_id: int, config: SiteConfig,
              inventory: Inventory) -> dict[str, HostGpus]:
    """How many GPUs each inventory host has: what the campaign's latest G1 run counted
    there (nvidia-smi), else what the BOM of its group orders; a host with neither is
    left out (its layouts cannot be checked)."""
    from harness.store.lookups import gate_facts

    counted = gate_facts(store, run_id, "G1", GPU_COUNT_FACT)
    listed = gate_facts(store, run_id, "G1", "gpu uuids")  # G1 runs before the count fact
    ordered = ordered_gpus(config.gates.g1, inventory)
    found: dict[str, HostGpus] = {}
    for name in inventory.hosts:
        if name in counted and isinstance(counted[name][1], int):
            found[name] = HostGpus(name, counted[name][1], g1_run=counted[name][0])
        elif name in listed and isinstance(listed[name][1], list):
            found[name] = HostGpus(name, len(listed[name][1]), g1_run=listed[name][0])
        elif name in ordered:
            found[name] = ordered[name]
    return found


def layout_gpu_problems(store: Store, run_id: int, config: SiteConfig,
                        inventory: Inventory, layout: Layout) -> list[Problem]:
    """LAYOUT problems: a host of the layout with fewer GPUs than tp x pp x its
    instances there, or whose GPUs nobody counted (harness/serving/layout_fit.py)."""
    gpus = host_gpus(store, run_id, config, inventory)
    return [Problem(ProblemKind.LAYOUT, m.text(), m.why()) for m in misfits(layout, gpus)]
