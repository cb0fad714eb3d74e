"""The hosts' hardware through a soak: readings of each host's error counters and
temperatures, and the criterion that none of the errors grew. Pure.

What is read, and why these (docs/g4.md "Hardware"):
- `xid`: NVIDIA Xid events in the GPU hosts' kernel journal of this boot (`journalctl -k
  -b`, which `dmesg -C` does not clear): the count may only stay as it was at the start;
- `ecc`: uncorrectable ECC errors of every GPU (`nvidia-smi -q -x`, the aggregate
  counter where the GPU keeps one, else the volatile);
- `nvme`: media errors (summed) and the critical-warning bits (any bit newly set) of
  every NVMe device `nvme list` shows on the GPU and storage hosts.
Temperatures (the GPUs', the NVMe devices') are read with them and shown, not judged.

Each counter is stored as a series per host as it is read (harness/g4/session.py), so a
resumed viewer carries on from the first reading. A source a host did not answer for is
unverifiable there: the criterion is INCONCLUSIVE unless the site declared the source
unverifiable (gates.g4.unverifiable, a weakened setting), never PASS by omission.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.errors import ParseError
from harness.g4.judgement import Judgement
from harness.probes.kernel_log import parse_journal_kernel
from harness.probes.nvidia_smi import parse_nvidia_smi_xml
from harness.probes.nvme import parse_smart_log
from harness.reasons import Reason
from harness.verdict import Verdict

PREFIX = "g4:hw:"
# source -> the counters of it that must not grow (each a series `g4:hw:<counter>`)
JUDGED: dict[str, tuple[str, ...]] = {
    "xid": ("xid",), "ecc": ("ecc_uncorrectable",),
    "nvme": ("nvme_media_errors", "nvme_critical_warning")}
SHOWN = ("gpu_temp_c", "nvme_temp_c")  # read and stored, not judged
NAMES = {"xid": "Xid", "ecc": "ECC", "nvme": "NVMe"}  # a source as its text names it
WORDS = {"xid": "Xid event(s) in the kernel journal",
         "ecc_uncorrectable": "uncorrectable GPU ECC error(s)",
         "nvme_media_errors": "NVMe media error(s)",
         "nvme_critical_warning": "NVMe critical warning bit(s) set"}

Text = tuple[str | None, str]  # a tool's output, or None and why it is not there
Sample = tuple[float, float]  # (epoch s, value)


@dataclass
class HostReading:
    """One host read once: each counter's value, and why a source could not be read."""

    host: str
    at: float
    values: dict[str, float] = field(default_factory=dict)
    unread: dict[str, str] = field(default_factory=dict)  # source -> why


def read_gpu(reading: HostReading, journal: Text, smi: Text) -> None:
    """The Xid count of the boot's kernel journal; ECC and temperature from nvidia-smi."""
    text, why = journal
    if text is None:
        reading.unread["xid"] = why
    else:
        kernel = parse_journal_kernel(text)
        if kernel.entries:
            reading.values["xid"] = float(len(kernel.xids))
        else:
            reading.unread["xid"] = "no kernel messages of this boot in the journal"
    text, why = smi
    if text is None:
        reading.unread["ecc"] = why
        return
    try:
        gpus = parse_nvidia_smi_xml(text).gpus
    except ParseError as exc:
        reading.unread["ecc"] = f"nvidia-smi -q -x: {exc}"
        return
    counts = [g.ecc_aggregate_uncorrectable if g.ecc_aggregate_uncorrectable is not None
              else g.ecc_volatile_uncorrectable for g in gpus]
    if not gpus or all(c is None for c in counts):
        reading.unread["ecc"] = "nvidia-smi reports no uncorrectable ECC counter (ECC off?)"
    else:
        reading.values["ecc_uncorrectable"] = float(sum(c or 0 for c in counts))
    temps = [g.temperature_c for g in gpus if g.temperature_c is not None]
    if temps:
        reading.values["gpu_temp_c"] = max(temps)


def read_nvme(reading: HostReading, smart_logs: Mapping[str, Text], listed: Text) -> None:
    """Media errors summed, critical-warning bits OR-ed, the hottest device's temperature,
    over every device `nvme list` showed (none listed: nothing to judge, counted as 0)."""
    if listed[0] is None:
        reading.unread["nvme"] = listed[1]
        return
    media, warning, temps = 0, 0, []
    for device, (text, why) in smart_logs.items():
        if text is None:
            reading.unread["nvme"] = f"{device}: {why}"
            return
        try:
            log = parse_smart_log(text)
        except ParseError as exc:
            reading.unread["nvme"] = f"{device}: {exc}"
            return
        if log.media_errors is None or log.critical_warning is None:
            reading.unread["nvme"] = f"{device}: smart-log has no media_errors / warning"
            return
        media += log.media_errors
        warning |= log.critical_warning
        if log.temperature_c is not None:
            temps.append(log.temperature_c)
    reading.values["nvme_media_errors"] = float(media)
    reading.values["nvme_critical_warning"] = float(warning)
    if temps:
        reading.values["nvme_temp_c"] = max(temps)


def _grew(counter: str, first: float, now: float) -> int:
    """How many new errors `now` shows over `first` (warning bits: newly set bits)."""
    if counter == "nvme_critical_warning":
        return bin(int(now) & ~int(first)).count("1")
    return max(0, int(now - first))


def hardware(series: Mapping[str, Mapping[str, Sequence[Sample]]],
             expected: Mapping[str, Sequence[str]], declared: Mapping[str, str],
             started_at: float, window_s: float, windows: int) -> Judgement:
    """STOP-LOSS at the first reading that shows a new error (naming host, what and the
    window it was read in); INCONCLUSIVE where a source a host should answer for has not
    been read twice (a start and a later reading); else PASS. `expected`: source -> the
    hosts read for it; `declared`: sources the site cannot read, with why (left out and
    named)."""
    misses: list[tuple[float, str, str, int]] = []
    unverified: list[str] = []
    readings = 0
    for source, hosts in expected.items():
        if source in declared:
            continue
        for host in hosts:
            for counter in JUDGED[source]:
                samples = sorted(series.get(PREFIX + counter, {}).get(host, ()))
                readings = max(readings, len(samples))
                if len(samples) < 2:
                    unverified.append(f"{host} {source}")
                    break
                first = samples[0][1]
                grown = next(((t, n) for t, v in samples[1:]
                              if (n := _grew(counter, first, v)) > 0), None)
                if grown is not None:
                    misses.append((grown[0], host, counter, grown[1]))
    gaps = "; ".join(f"{s}: {why}" for s, why in sorted(declared.items()))
    if misses:
        at, host, counter, n = min(misses)
        window = min(windows, max(1, int((at - started_at) // window_s) + 1))
        return Judgement("hardware", Verdict.STOP_LOSS, Reason(
            f"g4.hardware_{counter}", {"host": host, "n": n, "window": window}),
            f"{host}: {n} new {WORDS[counter]} by window {window}", window - 1)
    if unverified:
        listed = ", ".join(dict.fromkeys(unverified))
        return Judgement("hardware", Verdict.INCONCLUSIVE,
                         Reason("g4.hardware_unverified", {"what": listed}),
                         f"hardware errors unverifiable: {listed} not read at the start "
                         "and since (declare it in gates.g4.unverifiable, with why, if this "
                         "site cannot read it)")
    hosts = sorted({h for s, hs in expected.items() if s not in declared for h in hs})
    checked = ", ".join(NAMES[s] for s in expected if s not in declared) or "-"
    said: dict[str, str | int] = {"what": checked, "hosts": len(hosts), "readings": readings}
    text = f"no new {checked} error on {len(hosts)} host(s) over {readings} readings"
    if gaps:
        return Judgement("hardware", Verdict.PASS,
                         Reason("g4.hardware_ok_gaps", {**said, "gaps": gaps}),
                         f"{text}; not checked: {gaps}")
    return Judgement("hardware", Verdict.PASS, Reason("g4.hardware_ok", said), text)
