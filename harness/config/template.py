"""`gate init`'s gate.yaml, generated from the config models so it cannot drift.

Why: the hand-written template omitted keys the error messages send a user to it for
(gates.g3.estimate, evidence, phase_timeout, gate_budget, the g1/g2/g4 sections) and its
comments contradicted the code ("4 x c documents" where the dry-run said 64). Here every
key of SiteConfig is written with its default, each under a one-line comment from
COMMENTS; the keys a site must fill in (and arms / layouts, which have no useful default)
come from EXAMPLES. tests/unit/test_config_template.py holds COMMENTS equal to the
models' keys and loads the result, so a new field without a comment fails a test.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from harness.config.models import SiteConfig
from harness.config.template_examples import EXAMPLE_HEADER, EXAMPLE_SITE, EXAMPLES

HEADER = """\
# gate site config, written by `gate init`: every key with its default and what it does.
# Every key is validated (a typo is an error naming its path, with "did you mean").
# Secrets never live here: SSH keys come from the agent or key files, passwords from
# GATE_* environment variables. One value can be changed for one run on the command line,
# validated like this file and recorded on the run:
#   gate run G3 --set gates.g3.tiers=[16] --set report.lang=en
# `gate config show` prints the effective config; `gate config validate` checks it with
# the inventory and the hosts the layouts name.
"""

COMMENTS: dict[str, str] = {
    "site": "where the tests run",
    "site.name": "a short name for the site (required)",
    "site.customer": "printed on the report",
    "site.vendor": "the accelerator's vendor, printed on the report",
    "site.location": "free text, printed on the report",
    "campaign": "one series of gates G1 -> G4 at this site",
    "campaign.name": "created on first use; holds the gate order G1 -> G4 (required)",
    "campaign.operator": "who runs the gates; empty: the login name of whoever runs gate",
    "inventory": "Ansible INI inventory with groups gpu / storage / client, relative to here",
    "known_hosts": "this site's SSH host keys (`gate hosts trust HOST` writes here)",
    "model": "the same model on both arms",
    "model.name": "the model both arms serve, as the engines report it (required)",
    "model.layers": "transformer layers (KV bytes per token = layers x kv_heads x "
                    "head_dim x 2 x dtype bytes)",
    "model.kv_heads": "KV heads per layer",
    "model.head_dim": "dimension of one head",
    "model.dtype": "KV cache type: bf16 | fp16 | fp8 | fp32",
    "model.max_model_len": "the engines' context limit; null: not checked",
    "arms": "what differs between the two sides of the A/B: how each starts, stops, restarts "
            "(a playbook or a command; also endpoints, proxies, health_timeout 900 s, "
            "differs_by, logs; engine_packages beside the arms)",
    "layouts": "what both arms share: name, tp, pp (default 1), instances of host, port, "
               "scheme (default http)",
    "load": "how the load generator runs",
    "load.placement": "local: this host reaches the engines; client: next to them "
                      "(needs the load agent; G4's soak runs there too, detached)",
    "load.agent_wheels": "placement client: the bundle's agent/ directory; null: "
                         "VENV/share/gate/agent, where install.sh put it",
    "load.timeout": "one request's timeout, seconds",
    "load.health": "when the load generator itself counts as saturated (docs/metrics.md "
                   "\"Phase health\"; looser than a default needs a reviewer's sign-off)",
    "load.health.max_loop_lag_p99_ms": "event-loop oversleep p99, ms",
    "load.health.late_after_ms": "a send this many ms after its due time is late",
    "load.health.max_late_share": "share of late sends that saturates a phase",
    "load.health.max_process_cpu": "the load generator's CPU, share of one core",
    "load.health.max_host_cpu": "the whole host's CPU, share of all cores (1.0: not judged)",
    "load.health.max_sim_lag_share": "a simulated engine's worst wake behind its schedule, "
                                     "share of the phase (G3 uses at most 0.10)",
    "load.health.max_client_delay_share": "mean event-loop lag, share of the TTFT p50 "
                                          "the phase measured",
    "load.health.max_client_tail_share": "event-loop lag p99, share of the TTFT p50 "
                                         "the phase measured",
    "load.health.max_rate_shortfall": "open loop: how far the send rate may fall short "
                                      "of --rate",
    "workload": "what each load phase asks",
    "workload.kind": "doc-qa: long documents, then a question on each (cold KV recovery)",
    "workload.doc_tokens": "tokens of each document",
    "workload.question_tokens": "tokens of the question after each document",
    "workload.max_tokens": "output tokens of each answer (fixed length)",
    "workload.seed": "seed of the documents' text",
    "workload.api": "completions | chat",
    "workload.docs_per_concurrency": "documents per phase = this x concurrency c, at least "
                                     "min_docs",
    "workload.min_docs": "at least this many documents per phase: 64 at c=4, 8 and 16 with "
                         "the defaults (the dry-run shows the count per cell)",
    "gates": "each gate's own settings",
    "gates.g1": "G1 arrival acceptance",
    "gates.g1.bom": "bill of materials per inventory group; the gpu group is required with "
                    "its gpu item, e.g. {gpu: {gpu: {model: \"A100-SXM4-80GB\", count: 8, "
                    "min_driver: \"535.104\"}, nic: {model: ConnectX-7, count: 8}}}; a gpu "
                    "group without nvme, nic, volume or software: a PASS needs a sign-off",
    "gates.g1.optional": "check names that may be skipped without an ERROR",
    "gates.g1.unverifiable": "item or health check -> why this lab cannot check it "
                             "(SKIPPED with the reason; at a real site a PASS needs a sign-off)",
    "gates.g1.clock_offset_s": "hosts' clocks must agree with this one within this many s",
    "gates.g1.gdscheck": "path of gdscheck on the GPU hosts",
    "gates.g1.probe_timeout": "seconds one hardware tool may take on a host",
    "gates.g2": "G2 single-node baselines",
    "gates.g2.optional": "check names that may be skipped without an ERROR",
    "gates.g2.fio": "fio targets: name, group, path (an existing directory, never created; "
                    "a raw device only with destructive: true), mount / device (what "
                    "findmnt -T must resolve the path to; the root disk only as mount: /), "
                    "size (fio units, < 4G needs a sign-off), runtime_s (< 30 likewise), "
                    "direct, spec (the vendor's figures; a job without one needs a sign-off)",
    "gates.g2.numjobs": "jobs of the random-read 4k qd32 test",
    "gates.g2.min_fraction": "share of the vendor's figure each fio result must reach "
                             "(below 0.9: a PASS needs a sign-off)",
    "gates.g2.gpu_health": "dcgmi diag where dcgmi exists, nvidia-smi checks otherwise "
                           "(false: a PASS needs a sign-off)",
    "gates.g2.dcgm_level": "dcgmi diag -r level (1 deployment only: a PASS needs a "
                           "sign-off; 2 medium ... 4 long)",
    "gates.g2.gds": "gdscheck -p must verify the GDS platform",
    "gates.g2.gdscheck": "path of gdscheck on the GPU hosts",
    "gates.g2.gdsio": "GDS read throughput per GPU host: gdsio -x 0 (GPU-direct) in a "
                      "directory on the accelerator volume, against read_gib_s x "
                      "min_fraction (docs/config.md); null: not measured. No gdsio on a "
                      "host is ERROR unless test_gdsio is in optional",
    "gates.g2.serving": "serving baseline: the baseline arm alone at G3's layouts x tiers "
                        "with G3's workload (null: not measured; then a PASS needs a "
                        "sign-off)",
    "gates.g2.serving.layouts": "layouts to measure; empty: G3's (a G3 cell left without a "
                                "baseline: a PASS needs a sign-off)",
    "gates.g2.serving.tiers": "concurrency tiers; empty: G3's (likewise)",
    "gates.g2.serving.repetitions": "measured phases per layout x tier (fresh documents each)",
    "gates.g2.serving.docs": "documents a repetition; 0: G3's count for the tier",
    "gates.g2.serving.max_cv": "largest repetition-to-repetition CV of TTFT p50 and of "
                               "throughput (at most 0.25; above 0.1 a PASS needs a sign-off)",
    "gates.g2.serving.max_failed_share": "share of requests that may fail (at most 0.05; "
                                         "above 0 a PASS needs a sign-off)",
    "gates.g3": "G3 main gate: the A/B of baseline and accelerated arms",
    "gates.g3.tiers": "concurrency tiers c; each cell is one layout at one tier",
    "gates.g3.layouts": "layouts to run; empty: every layout",
    "gates.g3.repetitions": "ABBA pairs per cell",
    "gates.g3.repetitions.min": "pairs before the first look (at least 3)",
    "gates.g3.repetitions.max": "pairs at most, when the first looks cannot decide",
    "gates.g3.drop_caches_on": "inventory groups whose page cache is dropped before each "
                               "measured phase, so a read comes from the device, not RAM",
    "gates.g3.drop_caches_reason": "why not, when drop_caches_on is empty at a real site "
                                   "(then a PASS needs a reviewer's sign-off)",
    "gates.g3.thresholds": "the decision: stricter is allowed, weaker is refused",
    "gates.g3.thresholds.ttft_p50_drop": "TTFT p50 must drop by at least this share",
    "gates.g3.thresholds.throughput_gain": "throughput must gain at least this share",
    "gates.g3.thresholds.band_top": "a gain above this needs a reviewer's sign-off",
    "gates.g3.criteria": "criteria per layout, e.g. {TP8: [ttft_p50_drop]}; a layout not "
                         "named is judged on both (fewer needs a sign-off)",
    "gates.g3.engine_process_check": "compare the engines' argv and environment from /proc "
                                     "(off needs a sign-off)",
    "gates.g3.confidence": "confidence of the intervals (0.90 .. 0.99)",
    "gates.g3.bootstrap": "bootstrap resamples per interval",
    "gates.g3.seed": "seed of the bootstrap and the pair order",
    "gates.g3.phase_timeout": "a load phase still running after this many seconds is "
                              "stopped; the cell is ERROR",
    "gates.g3.gate_budget": "the whole G3 run's time budget, seconds (default 7 days)",
    "gates.g3.evidence": "what proves the accelerated arm read from the tier",
    "gates.g3.evidence.min_external_hit_share": "share of prompt tokens the accelerated "
                                                "arm must read from the tier",
    "gates.g3.evidence.max_failed_share": "a phase with more failed requests cannot decide",
    "gates.g3.evidence.max_local_hit_share": "GPU cache hits after a cold restart, at most",
    "gates.g3.evidence.max_token_disagreement": "share of answers whose token count may "
                                                "differ from max_tokens",
    "gates.g3.evidence.storage_sample_interval": "seconds between storage samples",
    "gates.g3.evidence.metrics_interval": "seconds between /metrics samples of the engines",
    "gates.g3.evidence.storage_groups": "inventory groups whose disks are sampled",
    "gates.g3.evidence.kv_volume": "the accelerator's volume on the GPU hosts: a directory "
                                   "on it, and the mount or device findmnt -T must resolve "
                                   "it to; its device's reads are held to the storage hosts' "
                                   "(null: needs a sign-off; also direct: false for tmpfs, "
                                   "diskstats: the file)",
    "gates.g3.evidence.diskstats": "the diskstats file on the storage hosts",
    "gates.g3.evidence.devices": "the accelerator's block devices on the storage hosts, "
                                 "as /proc/diskstats names them (required at a real site: "
                                 "their reads must cover the cold KV)",
    "gates.g3.evidence.kv_compression": "how much smaller the tier stores KV (above 1: "
                                        "needs a sign-off)",
    "gates.g3.evidence.allow_storage_evidence": "an engine with no tier counter may rest on "
        "storage read bandwidth (weaker: a PASS needs a sign-off)",
    "gates.g3.evidence.store_metrics": "base URLs of KV stores' own /metrics (Mooncake "
                                       "master, port 9003): they must serve the "
                                       "accelerated arm only",
    "gates.g3.estimate": "rough durations for `gate run G3 --dry-run`; set from experience",
    "gates.g3.estimate.start_s": "seconds to start an arm's engines",
    "gates.g3.estimate.restart_s": "seconds to cold-restart them",
    "gates.g3.estimate.stop_s": "seconds to stop them",
    "gates.g3.estimate.drop_caches_s": "seconds to drop the caches",
    "gates.g3.estimate.recompute_tokens_per_s": "prompt tokens per second the baseline "
                                                "recomputes",
    "gates.g3.estimate.tier_tokens_per_s": "prompt tokens per second read from the tier",
    "gates.g3.optional": "check names that may be skipped without an ERROR",
    "gates.g4": "G4 72 h stability: one layout's accelerated arm under load, judged window "
                "by window (docs/g4.md); durations are seconds or 90s, 5m, 1.5h, 3d",
    "gates.g4.duration": "how long the soak runs, seconds (default 72 h: shorter needs a "
                         "sign-off)",
    "gates.g4.window": "the soak is cut into windows this long, each judged on its own",
    "gates.g4.baseline": "the first part of the soak: the level the drifts are shares of; "
                         "trends are fitted after it (at least 3 windows must follow)",
    "gates.g4.concurrency": "requests in flight, closed loop (each sends its next when its "
                            "last ends)",
    "gates.g4.documents": "the soak's working set (empty: over twice the GPU cache the "
                          "engine reports; set it when the engine does not say)",
    "gates.g4.layout": "the layout whose accelerated arm is soaked; null: the first of "
                       "layouts",
    "gates.g4.stop_early": "a hard criterion failing ends the soak there as STOP-LOSS",
    "gates.g4.criteria": "what every window and trend must show (looser than a default "
                         "needs a reviewer's sign-off)",
    "gates.g4.criteria.max_error_rate": "share of a window's requests that may fail",
    "gates.g4.criteria.max_ttft_drift_per_24h": "TTFT p50 growth per 24 h, share of the "
                                                "baseline's level (its interval's upper end)",
    "gates.g4.criteria.max_throughput_drift_per_24h": "throughput fall per 24 h, share of "
                                                      "the baseline's (its interval's lower "
                                                      "end)",
    "gates.g4.criteria.max_memory_growth_per_24h": "engine RSS growth per 24 h, share of the "
                                                   "baseline's (its interval's upper end)",
    "gates.g4.criteria.max_restarts": "engine restarts over the soak",
    "gates.g4.criteria.min_engaged_share": "every window's tier hits and device reads, share "
                                           "of the baseline's mean per window, at least",
    "gates.g4.criteria.min_device_share": "device bytes read, share of the KV bytes a "
                                          "window's tier hits stand for (G3's rule), at least",
    "gates.g4.criteria.confidence": "confidence of the drifts' intervals (0.90 .. 0.99)",
    "gates.g4.optional": "check names that may be skipped without an ERROR",
    "gates.g4.unverifiable": "hardware sources (xid, ecc, nvme) this site cannot read, each "
                             "with why; each needs a reviewer's sign-off",
    "sync": "where this store sends its finished runs by itself after every run",
    "sync.to": "a store URL (postgresql+psycopg://user@host/db); the password from "
               "PGPASSWORD or ~/.pgpass; unreachable: an event, tried again next run",
    "plan": "`gate plan`: the customer's SLA turned into storage requirements and held "
            "against G2's results (docs/plan.md); never a gate",
    "plan.ttft_p50": "TTFT p50 target at every tier, s; null: G3's criterion on G2's "
                     "measured baseline",
    "plan.throughput": "output tokens / s a layout must deliver at every tier; null: G3's "
                       "criterion on G2's measured baseline",
    "plan.contexts": "prompt lengths of the customer's requests, e.g. [{tokens: 32000, "
                     "share: 0.75}, {tokens: 8000, share: 0.25}]; empty: the workload's",
    "plan.prefix_sharing": "share of each document common to every request (kept hot once)",
    "plan.retention": "documents whose KV must stay on the cold tier; null: G3's documents "
                      "at each tier",
    "plan.prefill_tok_s": "one instance's prefill tokens / s where G2 has not measured the "
                          "layout; null: G2's serving baseline only",
    "plan.bounce_gbps": "host -> GPU copy GB/s of one GPU without GDS (gates.g2.gds false): "
                        "25 is PCIe 4.0 x16",
    "plan.volume": "the gates.g2.fio target that is the accelerator's volume; null: the one "
                   "on gates.g3.evidence.kv_volume's mount or device, else the only one",
    "plan.headroom": "a requirement met with less than this share to spare is AT RISK",
    "report": "the customer's report",
    "report.lang": "en | zh",
    "report.logo": "an image (PNG, JPEG, GIF, SVG) on page 1, relative to this file; null: "
                   "none",
    "report.format": "pdf | html | both",
    "simulated": "set by `gate demo`; a simulated engine is also detected. Never at a real "
                 "site: it relaxes rules there, and a run where nothing answered as "
                 "simulated is no PASS",
    "engine": "vllm | sglang | tgi | llama.cpp | llama-cpp-python | ollama | generic; "
              "null: detected from the server's answers (docs/engines.md)",
}


def _section(field: FieldInfo) -> type[BaseModel] | None:
    """The model a field holds when it is written as a nested section, else None."""
    ann = field.annotation
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    if isinstance(ann, types.UnionType) or typing.get_origin(ann) is typing.Union:
        models = [a for a in typing.get_args(ann) if isinstance(a, type)
                  and issubclass(a, BaseModel)]
        return models[0] if len(models) == 1 else None
    return None


def keys(model: type[BaseModel] = SiteConfig, prefix: str = "") -> list[str]:
    """Every dotted key the template writes: fields, and the fields of nested sections
    that are not given as an example."""
    out: list[str] = []
    for name, field in model.model_fields.items():
        key = prefix + name
        out.append(key)
        sub = _section(field)
        if sub is not None and key not in EXAMPLES:
            out += keys(sub, key + ".")
    return out


def _value(value: Any) -> str:
    """A default as YAML flow text (JSON is YAML; strings quoted only when needed)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, str):
        plain = value and value.strip() == value and not any(
            c in value for c in ":#{}[],&*!|>'\"%@`") and value.lower() not in (
            "null", "true", "false", "yes", "no", "on", "off", "~")
        return value if plain and not _numberlike(value) else json.dumps(value)
    return json.dumps(value, ensure_ascii=False).replace('", "', '", "')


def _numberlike(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _write(model: type[BaseModel], prefix: str, indent: int, out: list[str],
           values: Mapping[str, list[str]]) -> None:
    pad = "  " * indent
    for name, field in model.model_fields.items():
        key = prefix + name
        comment = COMMENTS.get(key) or field.description or ""
        if indent == 0:
            out.append("")
        if comment:
            out.append(f"{pad}# {comment}")
        example = values.get(key)
        sub = _section(field)
        if example is not None and (len(example) > 1 or key == "layouts"):  # else inline
            out.append(f"{pad}{name}:")
            out += [f"{pad}  {line}" for line in example]
        elif example is not None:
            out.append(f"{pad}{name}: {example[0]}")
        elif sub is not None and not field.is_required() and field.default is None:
            out.append(f"{pad}{name}: null")
        elif sub is not None:
            out.append(f"{pad}{name}:")
            _write(sub, key + ".", indent + 1, out, values)
        else:
            out.append(f"{pad}{name}: {_value(field.get_default(call_default_factory=True))}")


def template(values: Mapping[str, list[str]] | None = None, header: str = HEADER) -> str:
    """The whole gate.yaml `gate init` writes; `values` (dotted key -> YAML lines) replace
    defaults and EXAMPLES, as the example site's do."""
    out: list[str] = []
    _write(SiteConfig, "", 0, out, {**EXAMPLES, **(values or {})})
    return header + "\n".join(out) + "\n"



def example_site() -> str:
    """examples/site/gate.yaml."""
    return template(EXAMPLE_SITE, EXAMPLE_HEADER + HEADER.split("\n", 1)[1])
