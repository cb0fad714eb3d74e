"""The evidence appendix: config snapshots (secrets redacted), versions, host facts, run
ids, artifacts with sha256, and short metric definitions in both languages.

Config and facts are tables a customer reads (harness.report.readable), without the
paths of the machine the harness ran on; the raw values stay in the evidence pack."""

from __future__ import annotations

import json
from typing import Any

from harness.report import factwords, fmt, readable
from harness.report.frames import RunFrames
from harness.report.i18n import Translator
from harness.report.model import Appendix, Artifact, HostFact, RunAppendix, Table
from harness.report.redact import redact, redact_args, redact_overrides

MAX_FACTS = 400
# harness.serving.enginelogs.KIND (not imported: it brings the transports along). A run
# fetches an engine's log after every stop, hundreds of files in a campaign: on paper one
# line per host says how many, the evidence pack's manifest has each with its sha256.
ENGINE_LOG = "engine-log"
DEFINITIONS = ("ttft", "ttft_text", "tpot", "e2el", "throughput", "drop", "gain", "ci",
               "stop_loss", "inconclusive", "partial", "forced", "simulated", "signed", "weakened",
               "differs_by", "storage", "evidence", "window")


def _text(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True,
                                                           ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_version_key(key: str) -> bool:
    low = key.lower()
    return "version" in low or low in ("engine", "server", "vllm", "lmcache", "driver")


ENGINE_CARD = ("engine", "version", "model", "max_model_len", "tp")
IDENTITY = "engine identity "


def _engine_card(key: str, value: Any) -> bool:
    """`engine baseline TP8#0`: what G3 read from an arm's engine after it started."""
    return key.startswith("engine ") and not key.startswith(IDENTITY) and isinstance(value,
                                                                                      dict)


def engine_versions(frames_list: list[RunFrames], t: Translator) -> Table:
    seen: dict[tuple[str, str, str], None] = {}
    for f in frames_list:
        for fact in f.facts.itertuples(index=False):
            key = str(fact.key)
            if _engine_card(key, fact.value):
                for sub in ENGINE_CARD:
                    if fact.value.get(sub) is not None:
                        seen[(f"{fact.host} · {factwords.fact_key(t, key)}",
                              factwords.fact_key(t, sub),
                              _text(readable.scalar(redact(fact.value[sub])), 120))] = None
            elif _is_version_key(key):
                seen[(str(fact.host), factwords.fact_key(t, key),
                      _text(redact(fact.value), 120))] = None
        for b in f.benchmarks.itertuples(index=False):
            params = b.params if isinstance(b.params, dict) else {}
            for k, v in params.items():
                if _is_version_key(str(k)):
                    src = t("appendix.bench_params",
                            {"arm": factwords.arm(t, str(b.arm)) if b.arm else "—"})
                    seen[(src, factwords.fact_key(t, str(k)), _text(redact(v), 120))] = None
    return Table(columns=[t("col.source"), t("col.key"), t("col.value")],
                 rows=[list(k) for k in seen])


def fact_value(key: str, value: Any, t: Translator) -> str:
    """A host fact for one table cell. An engine's identity (its whole argv and
    environment, compared between the arms on page 1) is counted here, not listed."""
    if key.startswith(IDENTITY) and isinstance(value, dict):
        found = value.get("facts")
        keys = [str(k) for k in found] if isinstance(found, dict) else []
        argv = len([k for k in keys if k.startswith("argv:")])
        env = len([k for k in keys if k.startswith("env:")])
        return t("appendix.identity", {"pid": value.get("pid", "—"),
                                       "url": value.get("url", "—"), "argv": argv,
                                       "env": env, "other": len(keys) - argv - env})
    if _engine_card(key, value):  # its model card is in the evidence pack
        value = {k: v for k, v in value.items() if k != "card"}
    return _text(readable.lines(factwords.fact_value(t, key, value)), 600)


def run_appendix(f: RunFrames, t: Translator) -> RunAppendix:
    r = f.run
    return RunAppendix(
        run_id=r.id, gate=r.gate or "—", kind=r.kind, status=factwords.status(t, r.status),
        trigger=factwords.trigger(t, r.trigger),
        harness_version=r.harness_version or "—", hostname=r.hostname or "—",
        operator=r.operator or "—", started=fmt.when(r.started_at),
        finished=fmt.when(r.finished_at), config_hash=r.config_hash or "—",
        config_json=json.dumps(redact(r.config_json), indent=2, sort_keys=True,
                               ensure_ascii=False, default=str),
        config=readable.rows(redact(r.config_json)),
        args=readable.shorten_paths(" ".join(redact_args(r.args))) or "—", uid=r.uid,
        overrides=" ".join(f"--set {o}" for o in redact_overrides(r.overrides)))


def build_appendix(frames_list: list[RunFrames], t: Translator, en: Translator,
                   zh: Translator) -> Appendix:
    facts: list[HostFact] = []
    artifacts: list[Artifact] = []
    for f in frames_list:
        for fact in f.facts.itertuples(index=False):
            if len(facts) < MAX_FACTS:
                facts.append(HostFact(host=str(fact.host),
                                      key=factwords.fact_key(t, str(fact.key)),
                                      value=fact_value(str(fact.key), redact(fact.value), t),
                                      simulated=bool(fact.simulated)))
        logs: dict[str, list[Any]] = {}  # host -> engine-log rows: one line each on paper
        for a in f.artifacts.itertuples(index=False):
            if str(a.kind or "").startswith(ENGINE_LOG):
                logs.setdefault(str(a.host or "—"), []).append(a)
                continue
            artifacts.append(Artifact(run_id=f.run.id, path=readable.shorten_paths(str(a.path)),
                                      kind=factwords.artifact_kind(t, str(a.kind or "—")),
                                      host=str(a.host or "—"), size=fmt.number(a.size),
                                      sha256=str(a.sha256)))
        for host, rows in logs.items():
            tails = sum(str(r.kind) != ENGINE_LOG for r in rows)
            artifacts.append(Artifact(
                run_id=f.run.id, path=t("appendix.engine_logs", {"n": len(rows),
                                                                  "tails": tails}),
                kind=factwords.artifact_kind(t, ENGINE_LOG), host=host,
                size=fmt.number(sum(int(r.size) for r in rows)),
                sha256=t("appendix.in_manifest")))
    definitions = [(t(f"def.{k}.term"), en(f"def.{k}.text"), zh(f"def.{k}.text"))
                   for k in DEFINITIONS]
    runs: list[RunAppendix] = []
    for f in frames_list:  # a configuration shown once; a later run with the same says so
        run = run_appendix(f, t)
        same = next((r.run_id for r in runs if r.config == run.config and r.config), None)
        runs.append(run.model_copy(update={"config": [], "config_same_as": same})
                    if same is not None else run)
    return Appendix(runs=runs,
                    engine_versions=engine_versions(frames_list, t), host_facts=facts,
                    artifacts=artifacts, definitions=definitions)
