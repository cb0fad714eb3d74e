"""G1 checks: each host x BOM item and host x health check as expected vs found.

A missed item is a STOP-LOSS naming host, item, expected and found; an output that could
not be read (host unreachable, tool missing, unknown format) is ERROR for that check only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.models import SiteConfig
from harness.errors import Inconclusive, MeasurementError, ParseError
from harness.g1 import judge
from harness.g1.collect import HostReading
from harness.g1.plan import HostPlan
from harness.probes import files, gpu_health, lspci, nic, nvidia_smi, nvme
from harness.pytest_plugin import CheckRecorder, GateContext
from harness.reasons import Reason, comma, listed, text


def _text(reading: HostReading, name: str) -> str:
    """One probe's output, or an infrastructure error (-> ERROR) saying why there is none."""
    if reading.unreachable:
        raise MeasurementError(f"host unreachable: {reading.unreachable}", host=reading.host,
                               stage="g1 probe")
    output = reading.outputs.get(name)
    if output is None:
        raise MeasurementError(f"no {name} output was collected", host=reading.host,
                               stage="g1 probe")
    if output.error:
        raise MeasurementError(output.error, host=reading.host, stage="g1 probe")
    return output.text


def _source(reading: HostReading, name: str) -> tuple[str | None, str]:
    """One of several sources a check may do without: its text, or None and why (an
    unreachable host is still an ERROR)."""
    try:
        return _text(reading, name), ""
    except MeasurementError as exc:
        if reading.unreachable:
            raise
        return None, exc.message


def _unverifiable(site: SiteConfig, key: str, check: CheckRecorder) -> None:
    why = site.gates.g1.unverifiable.get(key)
    if why is not None:  # declared by the site: shown with its reason, never a PASS
        check.expect(f"{key} as ordered", Reason("g1.as_ordered", {"item": key}))
        check.measure(f"not checkable here: {why}", Reason("g1.not_checkable", {"why": why}))
        pytest.skip(f"not checkable here: {why}")


def _pci_names(reading: HostReading) -> dict[str, str]:
    """lspci's device names by PCI address, or none when lspci gave no usable output (the
    pcie health check says why; the NIC item then names the driver it matched)."""
    output = reading.outputs.get("lspci")
    if output is None or output.error or output.result is None:
        return {}
    try:
        devices = lspci.parse_lspci(output.text)
    except ParseError:
        return {}
    return {a: d.description for d in devices
            if (a := judge.pci_address(d.address)) is not None}


def _judge_item(plan: HostPlan, item: str, reading: HostReading) -> judge.Finding:
    bom = plan.bom
    if item == "gpu" and bom.gpu is not None:
        return judge.gpu(bom.gpu, nvidia_smi.parse_nvidia_smi_xml(_text(reading, "nvidia-smi")))
    if item == "nvme" and bom.nvme is not None:
        return judge.nvme(bom.nvme, nvme.parse_nvme_list(_text(reading, "nvme-list")))
    if item == "nic" and bom.nic is not None:
        if not bom.nic.interfaces:
            return judge.nic_ib(bom.nic, nic.parse_ibstat(_text(reading, "ibstat")))
        links = {i: nic.parse_ethtool(_text(reading, f"ethtool.{i}")) for i in bom.nic.interfaces}
        drivers = {i: nic.parse_ethtool_driver(_text(reading, f"ethtool-i.{i}"))
                   for i in bom.nic.interfaces}
        return judge.nic_eth(bom.nic, links, drivers, _pci_names(reading))
    if item == "gds":
        return judge.gds(gpu_health.parse_gdscheck(_text(reading, "gdscheck")))
    if item == "volume" and bom.volume is not None:
        namespaces = (nvme.parse_nvme_list(_text(reading, "nvme-list"))
                      if bom.volume.min_size_gb is not None else [])
        return judge.volume(bom.volume, nvme.parse_list_subsys(_text(reading, "list-subsys")),
                            namespaces)
    if item == "os" and bom.os is not None:
        return judge.os_release(bom.os, _text(reading, "uname"), _text(reading, "os-release"))
    if item == "software" and bom.software is not None:
        return judge.software(bom.software, files.parse_versions(_text(reading, "packages")))
    if item == "weights" and bom.weights is not None:
        return judge.weights(bom.weights, files.parse_stat_sizes(_text(reading, "weights-size")),
                             files.parse_sha256sum(_text(reading, "weights-sha256")))
    raise MeasurementError(f"no judge for item {item!r}", host=plan.host, stage="g1")


def _judge_health(plan: HostPlan, health: str, reading: HostReading) -> judge.Finding:
    if health == "gpu-ecc":
        return judge.gpu_ecc(nvidia_smi.parse_nvidia_smi_xml(_text(reading, "nvidia-smi")))
    if health == "gpu-link":
        return judge.gpu_link(nvidia_smi.parse_nvidia_smi_xml(_text(reading, "nvidia-smi")))
    if health == "xid":
        journal, journal_error = _source(reading, "journal-kernel")
        ring, ring_error = _source(reading, "dmesg")
        return judge.xid(judge.KernelLogs(journal, ring, journal_error, ring_error))
    if health == "pcie":
        return judge.pcie(lspci.parse_lspci(_text(reading, "lspci")))
    if health == "nvme-smart":  # every drive the list shows (an unreadable list: ERROR)
        drives = sorted({Path(d.device).name for d in
                         nvme.parse_nvme_list(_text(reading, "nvme-list"))})
        return judge.nvme_smart({d: nvme.parse_smart_log(_text(reading, f"smart-log.{d}"))
                                 for d in drives})
    if health == "ib-ports":
        cas = nic.parse_ibstat(_text(reading, "ibstat"))
        model = plan.bom.nic.model if plan.bom.nic is not None else ""
        ordered = [c for c in cas if model.lower() in (c.model or "").lower()]
        if not ordered:
            raise MeasurementError(
                f"ib-ports: no HCA of the ordered model {model} in ibstat (CA types: "
                f"{', '.join(sorted({c.model or '?' for c in cas})) or 'none'}): cannot judge",
                host=plan.host, stage="g1")
        return judge.ib_ports(ordered)
    raise MeasurementError(f"no judge for health check {health!r}", host=plan.host, stage="g1")


SERIALS = ("gpu serials", "nvme serials", "nic guids", "pci serials")


def _decide(gate: GateContext, check: CheckRecorder, plan: HostPlan, key: str,
            finding: judge.Finding) -> None:
    check.expect(finding.expected, finding.expected_why or text(finding.expected))
    changed, changed_why = [], []
    for fact, value in finding.facts.items():
        if fact in SERIALS:  # a part replaced since the last arrival (an RMA) is shown
            run, before = gate.recorder.earlier_facts(fact).get(plan.host, (None, None))
            if run is not None and before != value:
                changed.append(f"{fact} changed since run {run}")
                changed_why.append(Reason("g1.serial_changed", {"fact": fact, "run": run}))
                gate.recorder.host_fact(host=plan.host, key=f"serial change: {fact}",
                                        value={"since run": run, "before": before,
                                               "after": value}, simulated=gate.simulated)
                gate.recorder.event(source="g1", name="serial change", host=plan.host,
                                    status="changed", message=f"{fact}: {before} -> {value}")
        gate.recorder.host_fact(host=plan.host, key=fact, value=value,
                                simulated=gate.simulated)
    found_why = finding.found_why or text(finding.found)
    check.measure(finding.found + (f" ({'; '.join(changed)})" if changed else ""),
                  Reason("g1.found_changed", {"found": found_why, "changed": listed(changed_why)})
                  if changed else found_why)
    if not finding.ok:  # a measured miss: STOP-LOSS naming host, item, expected, found
        check.explain(judge.missed(plan.host, key, finding))
        pytest.fail(f"{plan.host} {key}: {'; '.join(finding.problems)} (expected "
                    f"{finding.expected}; found {finding.found})", pytrace=False)
    unjudged = judge.unjudged(key, finding)
    if unjudged is not None:  # read nothing, or not every device: no PASS on it
        raise MeasurementError(unjudged, host=plan.host, stage="g1")
    if finding.inconclusive is not None:  # read, nothing wrong, and still no proof
        if finding.inconclusive_why is not None:
            check.explain(finding.inconclusive_why)
        raise Inconclusive(f"{plan.host} {key}: {finding.inconclusive}")


def test_item(gate: GateContext, site: SiteConfig, check: CheckRecorder, plan: HostPlan,
              item: str, readings: dict[str, HostReading]) -> None:
    """One BOM item of one host: model, count, versions and capacity as ordered."""
    check.host = plan.host
    _unverifiable(site, item, check)
    _decide(gate, check, plan, item, _judge_item(plan, item, readings[plan.host]))


def test_health(gate: GateContext, site: SiteConfig, check: CheckRecorder, plan: HostPlan,
                health: str, readings: dict[str, HostReading]) -> None:
    """One health check of one host: ECC, Xid, link widths, NVMe SMART, IB ports."""
    check.host = plan.host
    _unverifiable(site, health, check)
    _decide(gate, check, plan, health, _judge_health(plan, health, readings[plan.host]))


def test_clocks(site: SiteConfig, check: CheckRecorder,
                readings: dict[str, HostReading]) -> None:
    """Every reachable host's clock within the configured offset of ours (and so of each
    other's): the run's timelines are compared across hosts."""
    limit = site.gates.g1.clock_offset_s
    offsets = {h: r.clock_offset_s for h, r in readings.items() if not r.unreachable}
    check.expect(f"|offset| <= {limit:g} s", Reason("g1.clock_expected", {"limit": f"{limit:g}"}))
    check.measure(", ".join(f"{h} {o:+.3f} s" if o is not None else f"{h} -"
                            for h, o in sorted(offsets.items())) or "no host reached",
                  comma([Reason("g1.clock_offset", {"host": h, "offset": f"{o:+.3f}"})
                         if o is not None else f"{h} -" for h, o in sorted(offsets.items())])
                  if offsets else Reason("g1.no_host_reached"))
    unread = sorted(h for h, o in offsets.items() if o is None)
    if unread or not offsets:
        raise MeasurementError(f"no clock read from {', '.join(unread) or 'any host'}",
                               stage="g1 clocks")
    far = {h: o for h, o in offsets.items() if o is not None and abs(o) > limit}
    if far:
        pytest.fail(f"clock offset above {limit:g} s: " + ", ".join(
            f"{h} {o:+.3f} s" for h, o in sorted(far.items())), pytrace=False)
