"""G3 on engines that expose no tier counter (one-cell simulated site, as in
test_g3_engines.py): both arms run with `--tier-counters off`, so /metrics cannot tell a
tier read from a recompute while the accelerated arm's tier still serves and the storage
host's diskstats still count its reads.

Without `gates.g3.evidence.allow_storage_evidence` the cell is INCONCLUSIVE (nothing
proves the tier was read), never PASS. With it, the decision rests on the storage hosts'
read bytes, and the PASS it allows is a weaker one: INCONCLUSIVE "needs sign-off", exit 2.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from g3_site import Site, one_cell_site

from harness.config.decision import WEAKENED_REASON

pytestmark = pytest.mark.slow


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    with one_cell_site(tmp_path) as made:
        arms = {}
        for name in ("baseline", "accelerated"):
            start = dict(made.arm(name)["start"])  # type: ignore[call-overload]
            start["command"] = [*start["command"], "--tier-counters", "off"]
            arms[name] = {"start": start}
        made.edit({"arms": arms})
        yield made


def checks(site: Site, run_id: int) -> dict[str, dict[str, object]]:
    return {str(c["name"]): c for c in site.run_json(run_id)["checks"]}  # type: ignore[attr-defined]


def test_no_tier_counter_is_inconclusive_unless_storage_evidence_is_allowed(site: Site) -> None:
    # Without the setting the accelerated arm's preflight already ends it (the cell would
    # say the same: tests/unit/test_engine_evidence.py), so only that check runs here.
    out = site.gate("run", "G3", "--force", "--", "-k", "exposes_external")
    assert out.returncode == 2, out.stdout + out.stderr[-2000:]
    check = checks(site, 1)["test_accelerated_arm_exposes_external_cache"]
    assert check["outcome"] == "INCONCLUSIVE", check
    assert "exposes no counter that proves the tier was read" in str(check["message"])
    assert site.run_json(1)["verdict"] != "PASS"

    # max 3 pairs: one look, a bounded test time (3 is also the minimum; not a weaker
    # setting)
    out = site.gate("run", "G3", "--force", "--set", "gates.g3.repetitions.max=3",
                    "--set", "gates.g3.evidence.allow_storage_evidence=true")
    assert out.returncode == 2, out.stdout + out.stderr[-2000:]
    run = site.run_json(2)
    checked = checks(site, 2)
    assert checked["test_accelerated_arm_exposes_external_cache"]["outcome"] == "PASS"
    cell = checked["test_cell"]
    # The evidence was sound (not "accelerator not exercised", not "contaminated"): the
    # cell went on to the statistics. On a quiet machine they decide PASS, and the run
    # that PASS allowed needs a sign-off. A busy machine compresses the simulated arms'
    # gain toward the threshold (PLATFORM-NOTES) and the interval may straddle it: still
    # INCONCLUSIVE, never PASS, so that outcome is accepted here.
    assert run["verdict"] == "INCONCLUSIVE", run
    if cell["outcome"] == "PASS":
        assert run["needs_signoff"] is True and WEAKENED_REASON in str(run["reason"])
    else:
        assert cell["outcome"] == "INCONCLUSIVE", cell
        assert str(cell["message"]).startswith("interval straddles threshold"), cell
    # the decision rested on the storage host's reads: the accelerated arm's measured
    # phases read from it, the baseline's did not
    read: dict[str, float] = {"accelerated": 0.0, "baseline": 0.0}
    for arm, summary in site.query("SELECT arm, summary FROM benchmark WHERE run_id = 2 "
                                   "AND phase = 'measured'"):
        evidence = json.loads(str(summary))["evidence"]
        assert evidence["exposes_external"] is False
        read[str(arm)] += evidence["storage"]["bytes_read"]
    assert read["accelerated"] > 0 and read["baseline"] == 0, read
