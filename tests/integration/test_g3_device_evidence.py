"""The accelerator's devices must have done the work (issue 24, item 1), on the one-cell
simulated site (TP8, tier 4, speed 30).

The review's route: a KV store held in memory in front of the flash (an LMCache server, a
Mooncake DRAM pool) survives the engine's restart, so the engine's tier counters count
every hit while the flash reads little or nothing. The simulator's `--memory-tier SHARE`
serves that share of the tier's loads from such a store: counted as external hits, never
read from the device. All from memory: "accelerator not exercised"; a quarter from
memory: the cell may pass its criteria, but the other tier is named and the PASS needs a
reviewer's sign-off.

And the storage host is the vendor's: all from memory while its diskstats count those
hits as its devices' reads (`--storage-host-lies`, as a `dd` there during the phase
would) satisfies the storage hosts' side, never the GPU host's KV volume, which the demo
site declares (gates.g3.evidence.kv_volume: the tier directory, resolved with findmnt).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from g3_site import Site, one_cell_site

pytestmark = pytest.mark.slow


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    with one_cell_site(tmp_path) as made:
        yield made


def with_storage_host_lying(site: Site, lies: bool = True) -> None:
    """The storage host counts what the memory tier served as its devices' reads. Given to
    both arms' engines (the baseline has no tier: nothing to count), so their argv agree
    as the engines at a site would: the lie is the storage host's, not the engine's."""
    for name in ("baseline", "accelerated"):
        start = dict(site.arm(name)["start"])  # type: ignore[call-overload]
        honest = [w for w in start["command"] if w != "--storage-host-lies"]
        start["command"] = [*honest, "--storage-host-lies"] if lies else honest
        site.edit({"arms": {name: {"start": start}}})


def with_memory_tier(site: Site, share: float) -> None:
    """The accelerated arm's engine with a DRAM tier in front of its device; the knob is
    allowed to differ (the vendor declared it, as an LMCache server's config would be)."""
    arm = site.arm("accelerated")
    start = dict(arm["start"])  # type: ignore[call-overload]
    start["command"] = [w for w in start["command"]]
    if "--memory-tier" in start["command"]:
        i = start["command"].index("--memory-tier")
        start["command"][i + 1] = str(share)
    else:
        start["command"] += ["--memory-tier", str(share)]
    allowed = [p for p in arm.get("differs_by") or []  # type: ignore[attr-defined]
               if "memory" not in p]
    site.edit({"arms": {"accelerated": {
        "start": start,
        "differs_by": [*allowed, "argv:--memory-tier", "server:gate_sim*memory_tier"]}}})


def cell(site: Site, run: int) -> dict[str, object]:
    return next(c for c in site.run_json(run)["checks"]  # type: ignore[attr-defined]
                if c["name"] == "test_cell")


def test_a_kv_store_in_memory_in_front_of_the_flash_is_not_the_accelerators_work(
        site: Site) -> None:
    # What is asserted is the device evidence's reason. At speed 30 a TTFT p50 is ~3 ms,
    # so on a busy machine a 0.4 ms event-loop lag already reads "client saturated" (13 %
    # > 10 %), and that reason would stand in the cell's place (seen in CI beside another
    # job): the client's bound is loosened here, which only weakens a PASS none of these
    # runs can reach.
    site.edit({"load": {"health": {"max_client_delay_share": 0.5}}})
    with_memory_tier(site, 1.0)
    out = site.gate("run", "G3", "--force", "--set", "gates.g3.repetitions.max=3")
    assert out.returncode == 2, out.stdout + out.stderr[-2000:]
    first = cell(site, 1)
    assert first["outcome"] == "INCONCLUSIVE"
    assert "accelerator not exercised: the accelerator's devices read nothing" in \
        str(first["message"])
    # the engine counted every hit: the counters alone would have passed this phase
    summary = site.query("SELECT summary FROM benchmark WHERE run_id = 1 AND "
                         "arm = 'accelerated' AND phase = 'measured'")
    evidence = json.loads(str(summary[0][0]))["evidence"]
    assert evidence["external_hit_share"] > 0.9 and evidence["storage"]["bytes_read"] == 0

    with_storage_host_lying(site)
    out = site.gate("run", "G3", "--force", "--set", "gates.g3.repetitions.max=3")
    assert out.returncode == 2, out.stdout + out.stderr[-2000:]
    lied = str(cell(site, 2)["message"])
    assert "the GPU hosts' KV volume read 0.00 GB during the accelerated arm's measured " \
           "phase, 0% of the 268.44 GB of KV it recovered cold (< 50%), while the storage " \
           "hosts reported" in lied, lied
    summary = site.query("SELECT summary FROM benchmark WHERE run_id = 2 AND "
                         "arm = 'accelerated' AND phase = 'measured'")
    evidence = json.loads(str(summary[0][0]))["evidence"]
    # the storage hosts' side alone would have passed: they "read" all the cold KV
    assert evidence["storage"]["bytes_read"] >= 0.5 * 268.44e9, evidence["storage"]
    assert evidence["kv_volume"]["bytes_read"] == 0 and evidence["kv_volume"]["hosts"] == 1

    with_storage_host_lying(site, lies=False)
    with_memory_tier(site, 0.25)
    out = site.gate("run", "G3", "--force", "--set", "gates.g3.repetitions.max=3")
    assert out.returncode == 2, out.stdout + out.stderr[-2000:]
    quarter = cell(site, 3)
    assert quarter["outcome"] == "INCONCLUSIVE"
    assert "another tier in front of the accelerator (memory?) served 25% of the cold KV" \
        in str(quarter["measured"])
    assert site.run_json(3)["verdict"] != "PASS"
