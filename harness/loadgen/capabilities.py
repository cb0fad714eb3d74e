"""What a server can do for a campaign, said before anyone spends a day on one.

`gate probe URL` asks the server a few cheap questions (harness.loadgen.probe.probe for
its identity, then one route at a time: health, tokenize, one one-token completion,
/metrics) and `assess` turns the answers into what a user needs: which engine this is,
which endpoints answer, what evidence its /metrics can give, and what G3 will be able to
prove there. Pure: the answers in, the assessment out.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from harness.loadgen.engines import Profile
from harness.probes.prometheus import PREFIX_HITS, TIER_FAMILIES


@dataclass(frozen=True)
class RouteCheck:
    """One route tried: what it is for, whether it answered, and how."""

    route: str
    purpose: str
    ok: bool
    detail: str = ""
    usage_reported: bool | None = None  # a completion: did its stream carry usage?


@dataclass(frozen=True)
class Assessment:
    url: str
    engine: str
    version: str | None
    why: list[str]
    models: list[str]
    max_model_len: int | None
    routes: list[RouteCheck]
    evidence: list[str]          # what its /metrics can show
    g3: list[str]                # what G3 will (not) be able to prove here
    g3_can_decide: bool          # False: every cell would end INCONCLUSIVE here
    hints: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        out = [f"{self.url}: {self.engine}" + (f" {self.version}" if self.version else "")
               + f" ({'; '.join(self.why)})",
               f"  models: {', '.join(self.models)}"
               + (f" (max_model_len {self.max_model_len})" if self.max_model_len else "")]
        out.append("  endpoints:")
        out += [f"    {'ok ' if r.ok else 'no '} {r.route:<22} {r.purpose}"
                + (f": {r.detail}" if r.detail else "") for r in self.routes]
        out.append("  evidence on /metrics:")
        out += [f"    {e}" for e in self.evidence]
        out.append("  G3 here:")
        out += [f"    {g}" for g in self.g3]
        out += [f"  hint: {h}" for h in self.hints]
        return out


def tier_families(metric_names: frozenset[str] | set[str]) -> list[str]:
    """The families on /metrics that can prove a KV tier was read, once per prefix
    (`lmcache:*` once, not per counter)."""
    found = []
    for prefix in TIER_FAMILIES:
        if any(n.startswith(prefix) for n in metric_names):
            found.append(prefix + ("*" if prefix.endswith(":") else ""))
    return found


def assess(*, url: str, profile: Profile, version: str | None, why: list[str],
           models: list[str], max_model_len: int | None, routes: list[RouteCheck],
           metric_names: frozenset[str] | set[str], allow_storage_evidence: bool = False
           ) -> Assessment:
    """What this server gives a campaign. G3 can decide here only when a completion
    answers, the engine honours ignore_eos, and something proves the tier was read: an
    engine counter, or storage bandwidth where the config allows it."""
    tiers = tier_families(metric_names)
    evidence: list[str] = []
    if not metric_names:
        evidence.append("no /metrics: no engine counters at all")
    else:
        evidence.append(f"{len(metric_names)} samples"
                        + (f", {profile.metric_prefix}* families" if profile.metric_prefix
                           else ""))
        if any(n.startswith(PREFIX_HITS) for n in metric_names) or any(
                n.startswith(("sglang:cached_tokens", "llamacpp:prompt_tokens_cache"))
                for n in metric_names):
            evidence.append("GPU prefix-cache hits (proves a restart was cold)")
        evidence += [f"external KV tier: {t}" for t in tiers] or \
            ["no external KV tier counter"]
    completions = [r for r in routes if r.purpose.startswith("completion")]
    g3: list[str] = []
    hints: list[str] = []
    can = True
    if completions and not any(r.ok for r in completions):
        can = False
        g3.append("cannot load it: no one-token completion succeeded (see the lines above)")
    elif completions and not all(r.ok for r in completions):
        works = next(r.route for r in completions if r.ok)
        hints.append(f"only {works} answers: load it with that API (gate bench --api)")
    if any(r.ok and r.usage_reported is False for r in completions):
        can = False
        g3.append("its stream reports no usage: G3 cannot cross-check output lengths "
                  "against the server's count, so cells end INCONCLUSIVE 'token counts "
                  "disagree'")
    if profile.ignore_eos:
        g3.append("output length can be fixed (ignore_eos honoured)")
    else:
        can = False
        g3.append(f"{profile.name} does not honour ignore_eos: output lengths cannot be "
                  "fixed, so cells end INCONCLUSIVE 'output length not fixed'")
    if tiers:
        g3.append(f"can prove the accelerated arm read the tier ({', '.join(tiers)}) and "
                  "the baseline did not")
    elif allow_storage_evidence:
        g3.append("no engine counter proves the tier: storage read bandwidth stands in "
                  "(gates.g3.evidence.allow_storage_evidence; needs a reviewer's sign-off)")
    else:
        can = False
        g3.append("as the accelerated arm: nothing on this server proves a tier was read, "
                  "so cells end INCONCLUSIVE 'accelerator not exercised' unless gates.g3."
                  "evidence.allow_storage_evidence is set (then storage bandwidth stands "
                  "in); a baseline shows none, as it should")
        if profile.proves_tier:
            hints.append(f"{profile.name} exposes {profile.tier_counters} when its KV tier "
                         "is enabled: is this the accelerated arm?")
    tokenize = next((r for r in routes if r.purpose.startswith("tokenize")), None)
    if tokenize is not None and not tokenize.ok:
        g3.append("no tokenize route: prompt lengths are estimates (the run says "
                  "ESTIMATED); `gate bench --calibrate-with-usage` counts them from "
                  "one-token completions instead (flagged)")
    return Assessment(url=url, engine=profile.name, version=version, why=why, models=models,
                      max_model_len=max_model_len, routes=routes, evidence=evidence, g3=g3,
                      g3_can_decide=can, hints=hints)
