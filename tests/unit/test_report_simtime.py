"""A simulated run's modelled times (harness/report/simtime.py): the speed is read from
what the run recorded of its engines, and shown times get their modelled value beneath."""

from __future__ import annotations

import pandas as pd

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
