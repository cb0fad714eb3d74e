"""Reasons as data: a stable code and its parameters, stored beside the English sentence.

The gates write their reasons in English (the CLI, the logs and runs stored before this
existed read them that way). A customer who reads the report in Chinese needs the same
reason in Chinese, and parsing English sentences back is brittle. So where a reason is
made, it is also recorded as a `Reason`: `code` names a catalogue entry
(`reason.<code>` in reports/i18n/{en,zh}.yaml), `params` fill its placeholders.

A parameter is a plain value (numbers already formatted as shown: "0.275", "2%") or a
nested `Reason` (said in the reader's language too). `parts` fill `{parts}`: a list of
reasons joined with the catalogue's separator ("; " / "；"). Parameters named `arm` and
`criterion` are words the report translates (`arm.<value>`, `reason.criterion.<value>`).
Names and numbers with no words around them (a package and its version) are `text`;
`listed` and `comma` join reasons as the harness joins its words ("; ", ", "), and
`per_arm` says an arm-by-arm value ("baseline 8; accelerated 8").

`CODES` lists every code with its placeholders: a unit test holds every catalogue to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

Param: TypeAlias = "str | int | float | Reason"
ReasonJSON: TypeAlias = "dict[str, object]"


@dataclass(frozen=True)
class Reason:
    code: str
    params: Mapping[str, Param] = field(default_factory=dict)
    parts: tuple[Reason, ...] = ()

    def as_json(self) -> ReasonJSON:
        out: ReasonJSON = {"code": self.code}
        if self.params:
            out["params"] = {k: v.as_json() if isinstance(v, Reason) else v
                             for k, v in self.params.items()}
        if self.parts:
            out["parts"] = [p.as_json() for p in self.parts]
        return out


def text(value: str) -> Reason:
    """Words that have no code (a server's own message, an older check's text): shown as
    they are in every language."""
    return Reason("text", {"text": value})


def listed(parts: Sequence[Reason | str]) -> Reason:
    """Parts joined with the reader's separator ("; " / "；"); a str part is said as
    written."""
    return Reason("list", parts=tuple(p if isinstance(p, Reason) else text(p) for p in parts))


def comma(items: Sequence[Param]) -> Reason:
    """Items joined with the reader's comma (", " / "，"): "a, b, c" as nested reasons, for
    the lists the harness writes with ", " (`reason.sep` is "; ")."""
    if not items:
        return text("")
    first = items[0]
    if len(items) == 1:
        return first if isinstance(first, Reason) else text(str(first))
    return Reason("comma", {"first": first, "rest": comma(items[1:])})


def per_arm(values: Mapping[str, object]) -> Reason:
    """An arm-by-arm value (`{'baseline': [8], 'accelerated': [8, 4]}`) in words:
    "baseline 8; accelerated 8, 4", each arm's name said in the reader's language and its
    values already formatted ("-" for none, "?" for an unknown one)."""
    def shown(value: object) -> str:
        if isinstance(value, list | tuple | set | frozenset):
            return ", ".join("?" if x is None else str(x) for x in value) or "-"
        return "?" if value is None else str(value)

    if not values:
        return text("-")
    return listed([Reason("arm_value", {"arm": str(arm), "value": shown(v)})
                   for arm, v in values.items()])


def from_json(value: object) -> Reason | None:
    """The stored form back as a Reason; None for anything that is not one (old runs)."""
    if not isinstance(value, Mapping) or not isinstance(value.get("code"), str):
        return None
    params: dict[str, Param] = {}
    raw = value.get("params")
    if isinstance(raw, Mapping):
        for k, v in raw.items():
            nested = from_json(v)
            if nested is not None:
                params[str(k)] = nested
            elif isinstance(v, str | int | float) and not isinstance(v, bool):
                params[str(k)] = v
            else:
                return None
    parts: list[Reason] = []
    for p in value.get("parts") or []:
        nested = from_json(p)
        if nested is None:
            return None
        parts.append(nested)
    return Reason(str(value["code"]), params, tuple(parts))


# code -> its placeholders ("parts" when it joins a list). The catalogues' entries must
# have exactly these (tests/unit/test_reasons.py).
CODES: dict[str, frozenset[str]] = {k: frozenset(v) for k, v in {
    "text": {"text"},
    "list": {"parts"},  # parts joined with the separator (listed)
    "comma": {"first", "rest"},  # "a, b" (comma)
    "arm_value": {"arm", "value"},  # one arm's value (per_arm)
    "stage": {"stage", "reason"},  # a MeasurementError's "stage X: ..." prefix
    "check": {"check", "host", "message"},  # one check in a run's reason (harness.runner)
    # harness.stats.decision: a cell's decision
    "cell.estimate": {"criterion", "value", "lo", "hi", "threshold"},
    "cell.estimate_at": {"criterion", "value", "lo", "hi", "threshold", "pairs"},
    "cell.below": {"parts"},
    "cell.both_clear": {"parts"},
    "cell.only_clears": {"criterion", "parts"},
    "cell.straddles": {"parts"},
    "cell.next_look": {"pairs"},
    "cell.last_look": {"pairs"},
    "cell.above_band": set(),
    "cell.not_stationary": {"criterion", "threshold", "at", "pairs"},
    "cell.rep_failed": {"arm", "rep", "failed", "total", "share"},
    "cell.no_tokens": {"arm"},
    "cell.stop_loss": {"reason"},
    # harness.g3.rules / session: why a cell cannot be decided or compared
    "g3.client_saturated": {"arm", "detail"},
    "g3.requests_failed": {"arm", "failed", "total", "share"},
    "g3.requests_failed_first": {"arm", "failed", "total", "share", "first"},
    "g3.length_not_fixed": {"arm", "early", "completed", "fixed"},
    "g3.length_not_fixed_unsent": {"arm", "early", "completed", "fixed"},
    "g3.tokens_disagree": {"arm", "fixed", "disagree", "completed", "share"},
    "g3.counters_reset": set(),
    "g3.not_cold": {"arm"},
    "g3.not_verified": {"arm"},
    "g3.not_cold_local": {"arm", "share"},
    "g3.no_tier_counter": set(),
    "g3.low_external_share": {"share", "min"},
    "g3.contaminated_tokens": {"tokens"},
    "g3.contaminated_store": {"objects"},
    "g3.storage_not_read": set(),
    "g3.counted_not_read": {"share"},
    "g3.storage_errors": {"error"},
    "g3.no_storage_evidence": set(),
    "g3.storage_below_kv": {"read", "min", "expected"},
    "g3.store_found_nothing": set(),
    "g3.store_below_kv": {"served", "min", "expected"},
    "g3.storage_contaminated": {"baseline", "accelerated"},
    "g3.no_device_evidence": {"groups"},
    "g3.device_below_kv": {"read", "share", "expected", "min", "other"},
    "g3.kv_volume_unread": set(),
    "g3.kv_volume_below_kv": {"read", "share", "expected", "min", "storage"},
    "g3.kv_volume_contaminated": {"baseline", "accelerated"},
    "g3.other_tier": {"share", "read"},
    "g3.cell_measured_note": {"measured", "note"},
    "g3.client_clock_only": set(),
    "g3.other_tier_signoff": {"share"},
    "g3.engine_requests_differ": {"arm", "seen", "sent", "completed"},
    "g3.engine_tokens_differ": {"arm", "seen", "sent"},
    "g3.clocks_disagree_ttft": {"client", "server", "cb", "sb", "ca", "sa", "max", "known"},
    "g3.clocks_disagree_e2e": {"client", "server", "cb", "sb", "ca", "sa", "max", "known"},
    "g3.budget": set(),
    "g3.not_compared": {"parts"},
    "g3.not_comparable": {"parts"},
    "g3.layout_misfit": {"parts"},
    "g3.model_differs": {"what", "baseline", "accelerated"},
    "g3.instance_model": {"arm", "instance", "model", "serves"},
    "g3.instance_tp": {"arm", "instance", "tp", "layout", "declared"},
    "g3.instance_count": {"arm", "answered", "declared"},
    "g3.layout_gpus_g1": {"layout", "host", "need", "per", "instances", "found", "run"},
    "g3.layout_gpus_bom": {"layout", "host", "need", "per", "instances", "found", "group"},
    "g3.layout_gpus_unknown": {"layout", "host", "need", "per", "instances"},
    "g3.engines_differ": {"detail"},
    "g3.engines_unverified": {"detail"},
    # G3 check expectations and measurements
    "g3.cell_expected": {"drop", "gain", "top", "confidence"},
    "g3.cell_measured": {"drop", "drop_lo", "drop_hi", "gain", "gain_lo", "gain_hi",
                         "pairs"},
    "g3.same_model_expected": {"model"},
    "g3.layout_expected": {"tp", "n"},
    "g3.differ_expected": {"allowed"},
    "g3.nothing": set(),
    "g3.exposes_expected": set(),
    "g3.present": set(),
    "g3.absent": set(),
    "g3.absent_storage_ok": set(),
    "g3.arms_differ": {"parts", "more"},
    "g3.and_more": {"n"},
    "g3.difference": {"instance", "key", "baseline", "accelerated", "detail"},
    "g3.instance_prefix": {"n"},
    "g3.difference_detail": {"detail"},
    "g3.libs_only": {"arm", "names", "more"},
    "g3.more_files": {"n"},
    "g3.arms_unverified": {"instances"},
    "g3.arms_equal": {"allowed", "ignored"},
    "g3.but_for_allowed": {"keys"},
    "g3.noise_ignored": {"n"},
    # G1 / G2 checks
    "g1.missed": {"host", "item", "expected", "found", "parts"},
    "g1.gpu_link_expected": set(),
    "g1.gpu_ecc_expected": set(),
    "g1.xid_expected": set(),
    "g1.xid_unverifiable": {"why"},
    "g1.pcie_expected": set(),
    "g1.nvme_smart_expected": set(),
    "g1.ib_ports_expected": set(),
    "g1.gds_expected": set(),
    "g1.as_ordered": {"item"},
    "g1.not_checkable": {"why"},
    "g1.gpu_link_narrow": {"gpu", "width", "max"},
    "g1.gpu_expected": {"count", "model", "driver", "cuda"},
    "g1.min_driver": {"version"},
    "g1.min_cuda": {"version"},
    "g1.gpu_found": {"count", "models", "driver", "cuda", "attached"},
    "g1.gpu_attached": {"n"},
    "g1.nvme_expected": {"count", "model", "capacity", "firmware"},
    "g1.min_gb": {"gb"},
    "g1.firmware": {"firmware"},
    "g1.nvme_drive": {"device", "model", "gb", "firmware"},
    "g1.no_nvme": set(),
    "g1.nic_expected": {"count", "model", "rate", "firmware"},
    "g1.min_rate": {"rate"},
    "g1.hca": {"name", "model", "firmware", "rates"},
    "g1.no_hca": set(),
    "g1.interface": {"iface", "device", "unnamed", "firmware", "speed"},
    "g1.driver_only": set(),
    "g1.link_down": set(),
    "g1.no_interface": set(),
    "g1.gds_found": {"version", "supporting", "gpus", "supported"},
    "g1.none": set(),
    "g1.volume_expected": {"nqn", "transport", "paths", "size"},
    "g1.volume_min_gb": {"gb"},
    "g1.volume_not_connected": {"subsystems"},
    "g1.volume_found": {"subsystem", "paths", "namespaces"},
    "g1.volume_namespaces": {"n", "gb"},
    "g1.os_expected": {"os"},
    "g1.kernel_expected": {"kernel"},
    "g1.any_os": set(),
    "g1.os_found": {"os", "kernel"},
    "g1.weights_expected": {"files", "gb"},
    "g1.weights_found": {"present", "files", "matching"},
    "g1.ecc_gpu": {"gpu", "ecc", "unc", "retired"},
    "g1.ecc_on": set(),
    "g1.ecc_off": set(),
    "g1.no_gpu": set(),
    "g1.pcie_found": {"checked", "narrow", "vfs"},
    "g1.smart_drive": {"drive", "warn", "media", "used"},
    "g1.no_drive": set(),
    "g1.ib_ports_found": {"active", "total"},
    "g1.xid_journal": {"xids", "lines", "partial"},
    "g1.xid_partial": set(),
    "g1.xid_journal_unread": {"error"},
    "g1.xid_dmesg": {"xids"},
    "g1.xid_dmesg_unread": {"error"},
    "g1.serial_changed": {"fact", "run"},
    "g1.found_changed": {"found", "changed"},
    "g1.clock_expected": {"limit"},
    "g1.clock_offset": {"host", "offset"},
    "g1.no_host_reached": set(),
    "g2.fio_below": {"host", "target", "job", "value", "unit", "expected"},
    "g2.fio_expected_min": {"value", "unit", "fraction", "spec"},
    "g2.fio_expected_p99": {"bound", "spec", "fraction"},
    "g2.fio_no_figure": {"unit"},
    "g2.fio_no_figure_p99": set(),
    "g2.diag_expected": {"level"},
    "g2.diag_measured": {"tests", "failed", "skipped", "unsettled"},
    "g2.diag_skipped": {"n", "names"},
    "g2.diag_not_run": {"n", "names"},
    "g2.smi_expected": set(),
    "g2.smi_measured": {"gpus", "bad", "unread"},
    "g2.smi_unread": {"n"},
    "g2.gds_expected": set(),
    "g2.gdsio_expected": {"bound", "fraction", "spec"},
    "g2.gdsio_no_figure": set(),
    "g2.gdsio_missing": set(),
    "g2.serving_expected": {"reps", "failed", "cv"},
    "g2.serving_measured": {"reps", "ttft", "ttft_cv", "thr", "thr_cv", "prefill", "failed"},
    "g2.serving_missed": {"cell", "parts"},
    "g2.serving_undecided": {"cell", "parts"},
    "g2.failed_share": {"share", "requests", "max"},
    "g2.ttft_cv_high": {"value", "max"},
    "g2.throughput_cv_high": {"value", "max"},
    "g2.rep_saturated": {"rep", "detail"},
    "g2.mount": {"source", "fstype", "target"},
    "g2.fio_measured": {"value", "unit", "where"},
    "g2.fio_measured_io": {"value", "unit", "io", "where"},  # how fio did its I/O too
    "g2.io_buffered": set(),
    "g2.io_direct": set(),
    "g2.smi_no_gpu": set(),
    "g2.gds_measured": {"version", "supporting", "gpus", "verified"},
    "g2.verified": set(),
    "g2.not_verified": set(),
    "g2.gdsio_no_read": set(),
    "g2.gdsio_xfer": {"xfer"},
    "g2.gdsio_measured": {"gib", "threads", "io", "latency", "compat"},
    "g2.gdsio_compat": set(),
    "g2.gdsio_on": {"measured", "where"},
    "g4.no_windows": set(),
    "g4.error_rate": {"window", "share", "max", "kinds"},
    "g4.error_rate_ok": {"max"},
    "g4.too_few_windows": {"criterion"},
    "g4.drift": {"criterion", "value", "lo", "hi", "max", "per"},
    "g4.drift_ok": {"criterion", "value", "lo", "hi", "max", "per"},
    "g4.drift_undecided": {"criterion", "value", "lo", "hi", "max", "per"},
    "g4.drift_engine": {"criterion", "value", "lo", "hi", "max", "per"},
    "g4.drift_engine_undecided": {"criterion", "value", "lo", "hi", "max", "per"},
    "g4.engine_clock_ok": {"n", "of"},
    "g4.engine_clock_absent": set(),
    "g4.client_clock_only": set(),
    "g4.engine_clock_ttft": {"window", "soak", "engine", "max"},
    "g4.engine_clock_unsampled": {"n", "of"},
    "g4.engine_clock_requests": {"seen", "completed", "ended"},
    "g4.engine_clock_expected": set(),
    "g4.restarts": {"window", "n", "max"},
    "g4.restarts_ok": {"n"},
    "g4.engaged": {"n"},
    "g4.not_engaged_unsampled": {"window"},
    "g4.not_engaged_no_hits": {"window"},
    "g4.not_engaged_device_share": {"window", "read", "share", "kv", "min"},
    "g4.not_engaged_kv_volume_share": {"window", "read", "share", "kv", "min"},
    "g4.not_engaged_hits_below": {"window", "hits", "min", "level"},
    "g4.not_engaged_reads_below": {"window", "read", "min", "level"},
    "g4.soak_expected": set(),
    "g4.soak_measured": {"n", "of", "ended"},
    "g4.soak_stopped_early": {"n", "of", "why"},
    "g4.drift_expected": {"criterion", "max", "per"},
    "g4.restarts_expected": {"max"},
    "g4.engaged_expected": {"min"},
    "g4.hardware_xid": {"host", "n", "window"},
    "g4.hardware_ecc_uncorrectable": {"host", "n", "window"},
    "g4.hardware_nvme_media_errors": {"host", "n", "window"},
    "g4.hardware_nvme_critical_warning": {"host", "n", "window"},
    "g4.hardware_unverified": {"what"},
    "g4.hardware_ok": {"what", "hosts", "readings"},
    "g4.hardware_ok_gaps": {"what", "hosts", "readings", "gaps"},
    "g4.hardware_expected": set(),
}.items()}
