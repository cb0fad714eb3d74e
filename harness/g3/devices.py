"""Did the accelerator do the work G3 credits it with? The accelerator's own devices must
have read the KV the accelerated arm recovered cold, in proportion, and the baseline's
phase (nearly) nothing from them (docs/g3.md "The decision"): on the storage hosts and,
where declared, on the GPU hosts' KV volume (harness/serving/disks.py samples both).

Why devices and not counters: an engine's tier counter counts hits from any external tier
(an LMCache server or a Mooncake DRAM pool in front of the flash survives the engine's
restart as well), and a KV store's own counters are service-wide and count memory-pool
hits; only the reads of the accelerator's block devices, sampled from /proc/diskstats on
their hosts over the gate's own transport, say the flash did the work.
"""

from __future__ import annotations

from harness.config.models import Evidence
from harness.reasons import Reason
from harness.serving.problems import JSONDict, Problem, ProblemKind


def number(ev: JSONDict, key: str) -> float:
    value = ev.get(key)
    return float(value) if isinstance(value, int | float) else 0.0


def numbers(ev: JSONDict, key: str) -> dict[str, float]:
    value = ev.get(key)
    if not isinstance(value, dict):
        return {}
    return {k: float(v) for k, v in value.items() if isinstance(v, int | float)}


# The accelerator's devices must read at least this share of the KV bytes the accelerated
# arm's measured phase recovered cold (each document's prefix once, after the restart): a
# floor a tier that served the phase clears with room (reads are whole chunks), far above
# a trickle of reads beside a KV store held in memory.
DEVICE_MIN_KV_SHARE = 0.5
# ... and the baseline's measured phase may read at most this share of what the
# accelerated arm's read from the same devices (background reads, a log, a metadata scan).
DEVICE_BASELINE_SHARE = 0.05
# Below this share of the cold KV read from the devices, the report names the other tier
# (memory?) that served the rest: its prefixes are not the accelerator's work.
DEVICE_NAMED_SHARE = 0.9


def cold_kv_tokens(acc: JSONDict) -> float:
    """The tokens whose KV the accelerated arm's measured phase had to recover cold: each
    document once (G3 asks every document once after the restart, so every hit is a
    first hit), its hit tokens as the engine counted them, else (no tier counter) the
    prompt tokens of its completed requests."""
    return number(acc, "external_hit_tokens") if acc.get("exposes_external") \
        else number(acc, "client_prompt_tokens")


def cold_kv_bytes(acc: JSONDict) -> float:
    """cold_kv_tokens x model.kv_bytes_per_token / evidence.kv_compression."""
    compression = number(acc, "kv_compression") or 1.0
    return cold_kv_tokens(acc) * number(acc, "kv_bytes_per_token") / compression


def device_share(acc: JSONDict) -> float | None:
    """What the accelerator's devices read over the cold KV bytes, on the end that read
    least (the storage hosts, or the GPU hosts' KV volume where it was sampled); None:
    nothing to read."""
    expected = cold_kv_bytes(acc)
    if expected <= 0:
        return None
    reads = [numbers(acc, side).get("bytes_read", 0.0) for side in ("storage", "kv_volume")
             if side in acc]
    return min(reads, default=0.0) / expected


def device_problem(acc: JSONDict, base: JSONDict, rules: Evidence) -> Problem | None:
    """The accelerator's devices read at least DEVICE_MIN_KV_SHARE of the KV bytes the
    accelerated arm recovered cold, and the baseline's phase at most DEVICE_BASELINE_SHARE
    of that, on both ends of the wire: the storage hosts' (evidence.devices) and, where
    declared, the GPU hosts' KV volume (evidence.kv_volume). One rule whether the engine
    counts tier hits or not: a counter counts hits from any tier (a KV store held in
    memory survives the engine's restart too), so only the devices' reads say the
    accelerator did the work, in proportion to the work claimed; and the storage hosts
    are the vendor's, so a `dd` there during the accelerated phase shows on them alone,
    never on the GPU hosts' volume."""
    kind = ProblemKind.NOT_EXERCISED
    errors = [str(e) for ev in (acc, base)
              if isinstance(said := ev.get("storage_errors"), list) for e in said]
    if errors:
        return Problem(kind, f"{kind}: the storage hosts could not be read during a "
                             f"measured phase ({errors[0]}): the accelerator's device reads "
                             "are incomplete",
                       Reason("g3.storage_errors", {"error": errors[0]}))
    if numbers(acc, "storage").get("hosts", 0.0) <= 0:
        return Problem(kind, f"{kind}: no device of the accelerator was sampled (no host "
                             f"of gates.g3.evidence.storage_groups "
                             f"{', '.join(rules.storage_groups) or '[]'} could be read): "
                             "nothing shows the accelerator read the KV",
                       Reason("g3.no_device_evidence",
                              {"groups": ", ".join(rules.storage_groups) or "[]"}))
    return _storage_problem(acc, base) or _kv_volume_problem(acc, base)


def _reads(acc: JSONDict, base: JSONDict, side: str) -> tuple[float, float]:
    """(accelerated, baseline) bytes the side's devices read in the measured phases."""
    return (numbers(acc, side).get("bytes_read", 0.0),
            numbers(base, side).get("bytes_read", 0.0))


def _storage_problem(acc: JSONDict, base: JSONDict) -> Problem | None:
    kind = ProblemKind.NOT_EXERCISED
    expected = cold_kv_bytes(acc)
    read, base_read = _reads(acc, base, "storage")
    if read <= 0:
        return Problem(kind, f"{kind}: the accelerator's devices read nothing during the "
                             "accelerated arm's measured phase",
                       Reason("g3.storage_not_read"))
    if expected > 0 and read < DEVICE_MIN_KV_SHARE * expected:
        share = read / expected
        return Problem(kind, f"{kind}: the accelerator's devices read "
                             f"{read / 1e9:.2f} GB during the accelerated "
                             f"arm's measured phase, {share:.0%} of the {expected / 1e9:.2f} "
                             f"GB of KV it recovered cold (< {DEVICE_MIN_KV_SHARE:.0%}): "
                             f"another tier (memory?) served {1 - share:.0%}",
                       Reason("g3.device_below_kv", {
                           "read": f"{read / 1e9:.2f}", "share": f"{share:.0%}",
                           "expected": f"{expected / 1e9:.2f}",
                           "min": f"{DEVICE_MIN_KV_SHARE:.0%}", "other": f"{1 - share:.0%}"}))
    return _contaminated(read, base_read, "the accelerator's devices",
                         "g3.storage_contaminated")


def _kv_volume_problem(acc: JSONDict, base: JSONDict) -> Problem | None:
    """The same rule on the GPU hosts' KV volume (absent: not declared, nothing to say;
    the run's plan lists that as weakened at a real site)."""
    if "kv_volume" not in acc:
        return None
    kind = ProblemKind.NOT_EXERCISED
    if numbers(acc, "kv_volume").get("hosts", 0.0) <= 0:
        return Problem(kind, f"{kind}: the GPU hosts' KV volume (gates.g3.evidence."
                             "kv_volume) could not be sampled during the accelerated arm's "
                             "measured phase",
                       Reason("g3.kv_volume_unread"))
    expected = cold_kv_bytes(acc)
    read, base_read = _reads(acc, base, "kv_volume")
    storage = numbers(acc, "storage").get("bytes_read", 0.0)
    if read <= 0 or (expected > 0 and read < DEVICE_MIN_KV_SHARE * expected):
        share = read / expected if expected > 0 else 0.0
        return Problem(kind, f"{kind}: the GPU hosts' KV volume read {read / 1e9:.2f} GB "
                             f"during the accelerated arm's measured phase, {share:.0%} of "
                             f"the {expected / 1e9:.2f} GB of KV it recovered cold (< "
                             f"{DEVICE_MIN_KV_SHARE:.0%}), while the storage hosts reported "
                             f"{storage / 1e9:.2f} GB: the KV did not come over the "
                             "accelerator's volume",
                       Reason("g3.kv_volume_below_kv", {
                           "read": f"{read / 1e9:.2f}", "share": f"{share:.0%}",
                           "expected": f"{expected / 1e9:.2f}",
                           "min": f"{DEVICE_MIN_KV_SHARE:.0%}",
                           "storage": f"{storage / 1e9:.2f}"}))
    return _contaminated(read, base_read, "the GPU hosts' KV volume",
                         "g3.kv_volume_contaminated")


def _contaminated(read: float, base_read: float, where: str, code: str) -> Problem | None:
    """The baseline's phase read more than DEVICE_BASELINE_SHARE of what the accelerated
    arm's read from `where` (the words; `code` says it in the report's languages)."""
    if base_read <= DEVICE_BASELINE_SHARE * read:
        return None
    kind = ProblemKind.CONTAMINATED
    return Problem(kind, f"{kind}: the baseline's measured phase read {base_read / 1e9:.2f} "
                         f"GB from {where}, the accelerated arm's {read / 1e9:.2f} GB",
                   Reason(code, {"baseline": f"{base_read / 1e9:.2f}",
                                 "accelerated": f"{read / 1e9:.2f}"}))


def other_tier_note(acc: JSONDict) -> tuple[float, str, Reason] | None:
    """A tier in front of the accelerator that served part of the cold KV (the devices
    read less than DEVICE_NAMED_SHARE of it): named on the report, its prefixes are not
    the accelerator's work. (share it served, English, Reason); None when the devices
    read (nearly) all of it."""
    share = device_share(acc)
    if share is None or share >= DEVICE_NAMED_SHARE:
        return None
    other = max(0.0, 1 - share)
    return other, (f"another tier in front of the accelerator (memory?) served {other:.0%} "
                   f"of the cold KV: the accelerator's devices read {share:.0%} of it"), \
        Reason("g3.other_tier", {"share": f"{other:.0%}", "read": f"{share:.0%}"})


def store_problem(acc: JSONDict, base: JSONDict) -> Problem | None:
    """A KV store's own counters (Mooncake master, gates.g3.evidence.store_metrics): it
    found objects for the accelerated arm's phase, none for the baseline's. Service-wide
    and counting memory-pool hits too, they never replace the devices' reads; they add a
    contamination check."""
    if not acc.get("store_exposes"):
        return None
    kind = ProblemKind.NOT_EXERCISED
    if number(acc, "store_found") <= 0:
        return Problem(kind, f"{kind}: the KV store found nothing for the accelerated "
                             "arm's measured phase",
                       Reason("g3.store_found_nothing"))
    base_found = number(base, "store_found")
    if base_found > 0:
        kind = ProblemKind.CONTAMINATED
        return Problem(kind, f"{kind}: the KV store found {base_found:.0f} objects for the "
                             "baseline's measured phase",
                       Reason("g3.contaminated_store", {"objects": f"{base_found:.0f}"}))
    return None
