"""A simulated run's modelled times (harness/report/simtime.py): the speed is read from
what the run recorded of its engines, and shown times get their modelled value beneath."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.report import simtime
from harness.report.i18n import translator

IDENTITY = {"pid": 1, "facts": {"server:gate_sim.speed": "30.0", "argv:--tp": "8"}}
CARD = {"models": ["m"], "card": {"id": "m", "gate_sim": {"speed": 30.0, "tp": 8}}}
CONFIG = {"arms": {"baseline": {"start": {"command": ["python", "-m", "harness.sim.control",
                                                     "start", "--speed", "21.9"]}}}}


def facts(*rows: tuple[str, object]) -> pd.DataFrame:
    return pd.DataFrame([{"host": "gpu1", "key": k, "value": v, "simulated": True}
                         for k, v in rows], columns=["host", "key", "value", "simulated"])


def test_the_speed_comes_from_the_engines_then_the_arms_commands() -> None:
    assert simtime.speed_of(True, facts(("engine identity baseline TP8#0", IDENTITY)),
                            CONFIG) == 30.0
    assert simtime.speed_of(True, facts(("engine accelerated TP8#0", CARD)), {}) == 30.0
    assert simtime.speed_of(True, facts(), CONFIG) == 21.9  # G2: no engine facts
    assert simtime.speed_of(False, facts(("engine identity b TP8#0", IDENTITY)), {}) is None
    mixed = facts(("engine identity baseline TP8#0", IDENTITY),
                  ("engine identity accelerated TP8#0",
                   {"facts": {"server:gate_sim.speed": "21.9"}}))
    assert simtime.speed_of(True, mixed, {}) is None  # no single modelled scale
    assert simtime.speed_of(True, facts(("gpu serials", ["x"])), {}) is None


def test_times_and_rates_get_their_modelled_value_labelled() -> None:
    en, zh = translator("en"), translator("zh")
    assert simtime.seconds(0.043, 30.0, en) == "0.043 s\nmodel 1.290"
    assert simtime.seconds(0.043, None, en) == "0.043 s"
    assert simtime.rate(4500.0, 30.0, zh) == "4,500.0 tok/s\n模型 150.0"
    assert simtime.note(30.0, en)[0].startswith("Simulated at speed ×30")
    assert simtime.note(None, en) == []


def _card(gbps: float | None) -> dict[str, object]:
    sim: dict[str, object] = {"speed": 30.0, "tp": 4}
    if gbps is not None:
        sim["tier_read_gbps"] = gbps
    return {"card": {"id": "m", "gate_sim": sim}}


def test_the_tiers_modelled_bandwidth_is_the_sum_of_a_hosts_engines() -> None:
    """The engines' own figure (card.gate_sim.tier_read_gbps), summed over the engines
    of a layout on a host, the lowest host's; a layout an engine of which did not say it
    has none (an older run), and the baseline arm's engines are not the tier's readers."""
    rows = pd.DataFrame([
        {"host": "gpu1", "key": "engine accelerated TP8#0", "value": _card(110.56)},
        {"host": "gpu1", "key": "engine accelerated TP4x2#0", "value": _card(55.28)},
        {"host": "gpu1", "key": "engine accelerated TP4x2#1", "value": _card(55.28)},
        {"host": "gpu2", "key": "engine accelerated TP4x2#2", "value": _card(55.28)},
        {"host": "gpu1", "key": "engine accelerated TP2#0", "value": _card(27.64)},
        {"host": "gpu1", "key": "engine accelerated TP2#1", "value": _card(None)},
        {"host": "gpu1", "key": "engine baseline TP16#0", "value": _card(221.0)},
        {"host": "gpu1", "key": "engine identity accelerated TP1#0", "value": IDENTITY},
    ]).assign(simulated=True)
    assert simtime.tier_gbps(rows) == {"TP8": pytest.approx(110.56),
                                       "TP4x2": pytest.approx(55.28)}
    assert simtime.tier_gbps(facts()) == {}


def test_storage_rates_and_the_tier_are_said_in_the_models_gbps() -> None:
    en, zh = translator("en"), translator("zh")
    assert simtime.gbps(300.0, 30.0) == "10.00 GB/s"
    assert simtime.gbps(300.0, None) == "300.00 GB/s"

    engines = pd.DataFrame([{"host": "gpu1", "key": "engine accelerated TP8#0",
                             "value": _card(110.56), "simulated": True}])
    said = simtime.tier_note(engines, 30.0, en)
    assert said and "110.56 GB/s (TP8)" in said[0] and "fio" in said[0]
    assert "110.56 GB/s（TP8）" in simtime.tier_note(engines, 30.0, zh)[0]
    assert simtime.tier_note(engines, None, en) == []
    assert simtime.tier_note(facts(), 30.0, en) == [en("sim.tier_unknown")]
