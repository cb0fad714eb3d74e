"""`gate fleet`'s read (harness/store/fleet.py): every campaign's gates stand as `gate
status` says they do (the same run, the same effective verdict: a signed above-band
INCONCLUSIVE is PASS), with their flags, G3's cells and a G4 soak in progress; filters by
site, customer, the accelerator's vendor and date; and a fixed handful of SELECTs whatever
the number of campaigns. Stores are built through the store API, on SQLite and on
PostgreSQL (`store_url`, tests/pg_support)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event

from harness.campaign import gate_states
from harness.errors import NotFoundError
from harness.registry import GATE_IDS
from harness.store import Store, writer
from harness.store import runs as store_runs
from harness.store import windows as store_windows
from harness.store.fleet import CampaignLine, Filters, GateLine, fleet, planned_windows

DAY = 86400.0
T0 = 1_800_000_000.0  # 2027-01-15, a fixed clock for dates and sign-offs


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store(store_url)
    yield s
    s.close()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The store's clock, set by the test: now[0]."""
    now = [T0]
    monkeypatch.setattr(store_runs, "_now", lambda: now[0])
    return now


def run(store: Store, gate: str, verdict: str | None = "PASS", *, campaign: str = "poc",
        site: str = "acme", customer: str = "Acme Corp", vendor: str = "FastKV",
        finish: bool = True, **kw: Any) -> int:
    """A gate run of `campaign`, finished with `verdict` unless `finish` is False;
    partial / needs_signoff go to finish_run, the rest to NewRun."""
    ends = {k: kw.pop(k) for k in ("partial", "needs_signoff") if k in kw}
    config = kw.pop("config_json", {"site": {"name": site, "vendor": vendor}})
    rid = store_runs.start_run(store, store_runs.NewRun(
        campaign=campaign, site=site, customer=customer, kind=kw.pop("kind", "gate"),
        gate=gate, config_json=config, **kw))
    if finish:
        store_runs.finish_run(store, rid, verdict=verdict, reason="", **ends)
    return rid


def g3_cells(store: Store, rid: int, figures: dict[tuple[str, int], tuple[float, float]]
             ) -> None:
    for (layout, tier), (drop, gain) in figures.items():
        writer.upsert_cell(store, rid, {"layout": layout, "tier": tier, "verdict": "PASS",
                                        "drop": drop, "drop_lo": drop - 0.05,
                                        "drop_hi": drop + 0.05, "gain": gain,
                                        "gain_lo": gain - 0.05, "gain_hi": gain + 0.05})


def gates_of(line: CampaignLine) -> dict[str, GateLine]:
    return {g.gate: g for g in line.gates}


def only(store: Store) -> dict[str, GateLine]:
    (line,) = fleet(store, GATE_IDS)
    return gates_of(line)


def test_each_gate_stands_with_its_effective_verdict_and_flags(store: Store,
                                                               clock: list[float]) -> None:
    run(store, "G1", "STOP-LOSS")
    g1 = run(store, "G1", "PASS", forced=True, simulated=True)
    clock[0] += 10
    run(store, "G1", "ERROR", partial=True)  # later, partial: never stands
    early = run(store, "G2", "INCONCLUSIVE", needs_signoff=True)
    store_runs.add_signoff(store, early, role="vendor", name="v", note="not a reviewer")
    clock[0] += 10
    g2 = run(store, "G2", "INCONCLUSIVE", needs_signoff=True)
    store_runs.add_signoff(store, g2, role="reviewer", name="r", note="above band: fine")
    g3 = run(store, "G3", "INCONCLUSIVE", needs_signoff=True)  # weakened, not signed
    run(store, "G3", "PASS", suite="/tmp/suite sha256:0")  # a custom suite never stands
    store_runs.start_run(store, store_runs.NewRun(  # nor does a bench run
        campaign="poc", site="acme", customer="", kind="bench"))
    gates = only(store)
    assert [g.gate for g in gates.values()] == ["G1", "G2", "G3", "G4"]
    assert (gates["G1"].verdict, gates["G1"].run, gates["G1"].forced,
            gates["G1"].simulated, gates["G1"].finished_at) == ("PASS", g1, True, True, T0)
    later = gates["G1"].partial_later
    assert later is not None and (later.run, later.verdict, later.finished_at) == \
        (g1 + 1, "ERROR", T0 + 10)
    assert (gates["G2"].verdict, gates["G2"].run, gates["G2"].weakened,
            gates["G2"].signed) == ("PASS", g2, True, True)
    assert (gates["G3"].verdict, gates["G3"].run, gates["G3"].weakened,
            gates["G3"].signed) == ("INCONCLUSIVE", g3, True, False)
    assert gates["G4"] == GateLine("G4", "not run")


def test_it_agrees_with_gate_status_run_for_run(store: Store, clock: list[float]) -> None:
    """The same rules, read in bulk: for every gate of every campaign, the run and the
    effective verdict harness.campaign.gate_states (`gate status`) gives."""
    for i, campaign in enumerate(("a", "b", "c")):
        for k, gate in enumerate(GATE_IDS[: i + 2]):
            clock[0] += 1
            run(store, gate, ("PASS", "INCONCLUSIVE", "STOP-LOSS")[(i + k) % 3],
                campaign=campaign, needs_signoff=(i + k) % 3 == 1)
            if (i + k) % 2:
                run(store, gate, "PASS", campaign=campaign, partial=True)
    signed = run(store, "G2", "INCONCLUSIVE", campaign="a", needs_signoff=True)
    clock[0] += 1
    store_runs.add_signoff(store, signed, role="reviewer", name="r", note="ok")
    aborted = run(store, "G3", None, campaign="b", finish=False)
    store_runs.abort_run(store, aborted, force=True)
    lines = fleet(store, GATE_IDS)
    assert [c.campaign for c in lines] == ["a", "b", "c"]
    for line in lines:
        status = {s.gate: (s.run.id if s.run else None, s.verdict)
                  for s in gate_states(store, line.ref)}
        assert {g.gate: (g.run, g.verdict) for g in line.gates} == status, line.ref
    assert gates_of(lines[1])["G3"].verdict == "ERROR"  # aborted: ERROR, as status says


def test_g3_figures_are_the_standing_runs_cells(store: Store) -> None:
    old = run(store, "G3", "STOP-LOSS")
    g3_cells(store, old, {("TP8", 16): (0.05, 0.02)})
    rid = run(store, "G3", "PASS")
    g3_cells(store, rid, {("TP8", 4): (0.52, 0.41), ("TP8", 16): (0.31, 0.45),
                          ("TP4", 32): (0.38, 0.22)})
    g3 = only(store)["G3"]
    assert g3.run == rid
    got = {(c.layout, c.tier): (c.drop, c.gain, c.verdict) for c in g3.cells}
    assert got == {("TP4", 32): (0.38, 0.22, "PASS"), ("TP8", 4): (0.52, 0.41, "PASS"),
                   ("TP8", 16): (0.31, 0.45, "PASS")}
    cell = next(c for c in g3.cells if c.tier == 16)
    assert (cell.drop_lo, cell.drop_hi, cell.gain_lo, cell.gain_hi) == pytest.approx(
        (0.26, 0.36, 0.40, 0.50))
    assert only(store)["G1"].cells == ()


def test_a_running_soak_says_windows_stored_of_planned(store: Store) -> None:
    run(store, "G4", "STOP-LOSS")
    soak = {"duration": "2h", "window": "60s", "baseline": "10m"}
    rid = run(store, "G4", None, finish=False, config_json={"gates": {"g4": soak}})
    store_windows.upsert_windows(store, rid, [
        {"idx": k, "start_s": 60.0 * k, "length_s": 60.0, "requests": 9} for k in range(12)])
    g4 = only(store)["G4"]
    assert g4.verdict == "STOP-LOSS" and g4.run == rid - 1  # the standing one, beside it
    assert g4.running is not None
    assert (g4.running.run, g4.running.windows, g4.running.planned) == (rid, 12, 120)
    busy = run(store, "G1", None, finish=False, campaign="other")  # another gate: no windows
    (g1,) = [g for c in fleet(store, GATE_IDS) if c.campaign == "other" for g in c.gates
             if g.gate == "G1"]
    assert g1.verdict == "not run"
    assert g1.running is not None and (g1.running.run, g1.running.windows) == (busy, None)


def test_planned_windows_reads_the_stored_soak_or_says_nothing() -> None:
    assert planned_windows({"gates": {"g4": {}}}) == 72 * 60  # the defaults: 72 h of 60 s
    assert planned_windows({"gates": {"g4": {"duration": 3600.0, "window": 30.0,
                                             "baseline": 600.0}}}) == 120
    for config in (None, {}, {"gates": None}, {"gates": {"g4": "x"}},
                   {"gates": {"g4": {"window": "soon"}}}):
        assert planned_windows(config) is None, config


def test_filters_by_site_customer_accelerator_and_date(store: Store,
                                                       clock: list[float]) -> None:
    run(store, "G1", campaign="poc", site="acme", customer="Acme Corp", vendor="FastKV Inc")
    clock[0] += 3 * DAY
    run(store, "G1", campaign="poc", site="globex", customer="Globex", vendor="Other")
    run(store, "G2", campaign="trial", site="globex", customer="Globex", vendor="fastkv")
    store_runs.ensure_campaign(store, "empty", "initech", "ACME subsidiary")  # no runs

    def refs(**kw: Any) -> list[str]:
        return [c.ref for c in fleet(store, GATE_IDS, Filters(**kw))]

    assert refs() == ["acme/poc", "globex/poc", "globex/trial", "initech/empty"]
    assert refs(site="globex") == ["globex/poc", "globex/trial"]
    assert refs(customer="acme") == ["acme/poc", "initech/empty"]  # any case, a substring
    assert refs(accelerator="FASTKV") == ["acme/poc", "globex/trial"]
    assert refs(accelerator="fastkv", customer="globex") == ["globex/trial"]
    assert refs(since=T0 + DAY) == ["globex/poc", "globex/trial"]
    assert refs(since=T0) == ["acme/poc", "globex/poc", "globex/trial"]  # on the day: in
    assert refs(since=T0 + 4 * DAY) == []
    vendors = {c.ref: c.vendor for c in fleet(store, GATE_IDS)}
    assert vendors == {"acme/poc": "FastKV Inc", "globex/poc": "Other",
                       "globex/trial": "fastkv", "initech/empty": ""}
    with pytest.raises(NotFoundError, match=r"no site 'nowhere' in .* \(sites here: acme, "
                                            r"globex, initech\)"):
        fleet(store, GATE_IDS, Filters(site="nowhere"))


def selects(store: Store) -> list[str]:
    """Every SELECT the store runs from now on (a list the listener fills)."""
    seen: list[str] = []

    def note(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            seen.append(statement)

    event.listen(store.engine, "before_cursor_execute", note)
    return seen


def fill(store: Store, campaigns: range) -> None:
    """Per campaign: G1..G3 finished (G3 with cells, G2 signed), G4 soaking."""
    for i in campaigns:
        name = f"c{i}"
        run(store, "G1", campaign=name, site=f"s{i % 3}")
        g2 = run(store, "G2", "INCONCLUSIVE", campaign=name, site=f"s{i % 3}",
                 needs_signoff=True)
        store_runs.add_signoff(store, g2, role="reviewer", name="r", note="ok")
        g3 = run(store, "G3", campaign=name, site=f"s{i % 3}")
        g3_cells(store, g3, {("TP8", 4): (0.5, 0.4), ("TP8", 16): (0.3, 0.3)})
        g4 = run(store, "G4", None, finish=False, campaign=name, site=f"s{i % 3}",
                 config_json={"gates": {"g4": {}}})
        store_windows.upsert_windows(store, g4, [
            {"idx": 0, "start_s": 0.0, "length_s": 60.0, "requests": 1}])


def test_a_few_selects_whatever_the_number_of_campaigns(store: Store) -> None:
    fill(store, range(2))
    seen = selects(store)
    small = fleet(store, GATE_IDS)
    few = len(seen)
    fill(store, range(2, 30))
    seen.clear()
    large = fleet(store, GATE_IDS)
    assert len(seen) == few <= 8, seen
    assert len(small) == 2 and len(large) == 30
    for line in large:
        gates = gates_of(line)
        assert [gates[g].verdict for g in GATE_IDS] == ["PASS", "PASS", "PASS", "not run"]
        assert gates["G2"].signed and len(gates["G3"].cells) == 2
        running = gates["G4"].running
        assert running is not None and (running.windows, running.planned) == (1, 4320)
