"""`gate demo` end to end, as the README's first command runs it: the scenarios end with
the exit codes DESIGN.md gives, and the PDF says SIMULATED on every page. The default
scenario runs whole (it is the README's command: G1, G2, then G3 without FORCED); null
and broken-baseline run one cell (`--set`, TP8 at c=16), which is where their verdict
shows and a third of the time; bad-arrival stops at G1.

Each scenario runs once a session (tests/demo_fixtures.py) and the tests below, and any
other module's, assert on that one run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from demo_fixtures import g4_drift_undecided

if TYPE_CHECKING:
    from demo_fixtures import Demo

pytest_plugins = ["demo_fixtures"]
pytestmark = pytest.mark.slow


def test_default_demo_passes_without_forced(demo_default: Demo) -> None:
    out = demo_default.out
    # 0: G1-G3 PASS and G4 needs only its sign-off; 2 only for a drift the short soak
    # could not decide on a busy machine (G1-G3 still PASS: the tests below)
    assert out.returncode == 0 or (out.returncode == 2 and g4_drift_undecided(
        demo_default)), out.stdout + out.stderr[-3000:]
    assert "FORCED" not in out.stdout


def test_default_demo_g1_and_g2_pass_simulated(demo_default: Demo) -> None:
    for gate in ("G1", "G2"):
        (arrival,) = demo_default.runs(gate)
        assert (arrival["verdict"], arrival["simulated"]) == ("PASS", True), arrival


def test_default_demo_g3_passes_simulated_and_unforced(demo_default: Demo) -> None:
    run = demo_default.g3_run()
    assert (run["verdict"], run["simulated"], run["forced"]) == ("PASS", True, False)


def test_default_demo_g4_soaks_and_needs_only_a_signoff(demo_default: Demo) -> None:
    """The demo's 24 s G4: every window stored once, every criterion met, and no PASS (a
    soak that short is a weakened setting: a reviewer signs it off)."""
    (run,) = demo_default.runs("G4")
    assert (run["verdict"], run["simulated"], run["forced"]) == ("INCONCLUSIVE", True, False)
    shown = demo_default.run_json(run["id"])
    outcomes = {c["nodeid"].rpartition("::")[2]: c["outcome"] for c in shown["checks"]}
    assert len(outcomes) == 9, outcomes
    if not g4_drift_undecided(demo_default):  # else the run's reason is the drift's
        assert shown["needs_signoff"] and "gates.g4.duration" in str(shown["reason"])
        assert "gates.g4.unverifiable.xid" in str(shown["reason"]), shown["reason"]
        assert set(outcomes.values()) == {"PASS"}, outcomes
    for name in ("test_soak", "test_criterion[error_rate]", "test_criterion[restarts]",
                 "test_criterion[engaged]", "test_criterion[engine_clock]",
                 "test_criterion[hardware]"):
        assert outcomes[name] == "PASS", outcomes
    # the GPUs' ECC read from the simulated host's capture; what it cannot show, named
    (hw,) = [c for c in shown["checks"] if c["nodeid"].endswith("[hardware]")]
    assert hw["measured"].startswith("no new ECC error on 1 host(s) over "), hw
    assert "not checked: nvme: " in hw["measured"] and "; xid: " in hw["measured"], hw
    idx = demo_default.query("SELECT idx FROM soak_window WHERE run_id = ? ORDER BY idx",
                             run["id"])
    assert [i for (i,) in idx] == list(range(12))
    assert any("The soak, window by window" in page for page in demo_default.pdf_pages())


def test_default_demo_stamps_every_page(demo_default: Demo) -> None:
    pages = demo_default.pdf_pages()
    assert len(pages) >= 2
    assert all("SIMULATED" in page for page in pages)


def test_null_demo_is_not_pass(demo_null: Demo) -> None:
    out = demo_null.out
    assert out.returncode in (1, 2), out.stdout + out.stderr[-3000:]
    assert demo_null.g3_run()["verdict"] in ("STOP-LOSS", "INCONCLUSIVE")


def test_broken_baseline_demo_needs_signoff(demo_broken_baseline: Demo) -> None:
    out = demo_broken_baseline.out
    assert out.returncode == 2, out.stdout + out.stderr[-3000:]
    run = demo_broken_baseline.g3_run()
    assert run["verdict"] == "INCONCLUSIVE" and run["needs_signoff"] is True
    assert run["reason"] == "above band: needs sign-off"


def test_a_reviewers_signoff_makes_the_broken_baseline_demo_count(
        demo_broken_baseline: Demo, tmp_path: Path) -> None:
    """Signed on a copy of the demo's store: the demo's own stays as the demo left it."""
    run = demo_broken_baseline.g3_run()
    copy = demo_broken_baseline.copy_site(tmp_path / "site")
    signed = demo_broken_baseline.gate("signoff", str(run["id"]), "--by", "R. Viewer",
                                       "--role", "reviewer", "--note", "baseline checked",
                                       db=copy / "gate.db")
    assert signed.returncode == 0 and "counts as PASS" in signed.stdout


def test_bad_arrival_stops_the_campaign_at_g1(demo_bad_arrival: Demo) -> None:
    out = demo_bad_arrival.out
    assert out.returncode == 1, out.stdout + out.stderr[-3000:]
    (g1,) = demo_bad_arrival.runs("G1")
    assert g1["verdict"] == "STOP-LOSS"
    # host, item, expected and found, from the real capture the host answers with
    assert "gpu1 gpu-link: GPU 00000000:00:1E.0: PCIe link x8 of x16" in str(g1["reason"])
    assert "expected every GPU link at its full width" in str(g1["reason"])
    assert demo_bad_arrival.runs("G2") == [] and demo_bad_arrival.runs("G3") == []
    text = "\n".join(demo_bad_arrival.pdf_pages())
    assert "Bill of materials, host by item" in text and "Health, host by check" in text
    assert "not checkable here" in text  # the declared gaps, with their reasons


def test_the_demos_last_table_says_g3s_worst_cell_as_page_one_does(demo_null: Demo) -> None:
    """Issue 27 item 5: the console's last table shows G3's headline figures (its lowest
    TTFT p50 drop and throughput gain, with the cell), read from the store and written as
    page 1 writes them."""
    from harness.report import fmt

    shown = " ".join(demo_null.out.stdout.split())
    cells = demo_null.query("SELECT layout, tier, \"drop\", drop_lo, drop_hi, gain, gain_lo, "
                            "gain_hi FROM cell")
    if not cells:  # an INCONCLUSIVE that decided no cell (a busy machine): no figure
        assert "worst cell" not in shown, demo_null.out.stdout
        return
    ((layout, tier, *values),) = cells
    drop, drop_lo, drop_hi, gain, gain_lo, gain_hi = (float(str(v)) for v in values)
    assert (f"worst cell {layout} · c={tier}: TTFT p50 drop {fmt.pct(drop)} "
            f"{fmt.interval_pct(drop_lo, drop_hi)}, throughput gain {fmt.pct(gain)} "
            f"{fmt.interval_pct(gain_lo, gain_hi)}") in shown, demo_null.out.stdout
    page1 = " ".join(demo_null.pdf_pages()[0].split())
    # each figure alone: a wide interval wraps in its cell, and the PDF's text may put a
    # neighbouring column's words between its two ends
    for figure in (drop, drop_lo, drop_hi, gain, gain_lo, gain_hi):
        assert fmt.pct(figure) in page1, (fmt.pct(figure), page1)
