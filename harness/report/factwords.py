"""Ids and keys the harness stores, said in the report's language.

The store keeps what the harness names in English ids: a run's status and trigger, G1's
items (`gpu-link`), G2's fio jobs (`seq-read`), host facts' keys (`nic bus`, `fio
local-disk seq-read`, `engine baseline TP8#0`). They stay so in the store (the CLI and
scripts read them); the report says each from `words.*` in its language. Anything without
an entry (a custom suite's fact, an id a later harness adds) is shown as stored; names
the site wrote inside a key (a fio target, a layout) stay as written.
"""

from __future__ import annotations

import re
from typing import Any

from harness.g1.plan import PLAN_FACT
from harness.report.i18n import Translator

_ENGINE = re.compile(r"^engine (?:(?P<identity>identity) )?(?P<arm>baseline|accelerated) "
                     r"(?P<instance>\S+#\d+)$")


def word(t: Translator, group: str, value: str) -> str:
    """`words.<group>.<value>` when the catalogue has it, else the value as stored."""
    key = f"words.{group}.{value}"
    return t(key) if key in t.messages else value


def status(t: Translator, value: str) -> str:
    return word(t, "status", value)


def trigger(t: Translator, value: str) -> str:
    return word(t, "trigger", value)


def item(t: Translator, value: str) -> str:
    """A G1 item or health check (`gpu-link`)."""
    return word(t, "item", value)


def fio_job(t: Translator, value: str) -> str:
    return word(t, "fio_job", value)


def artifact_kind(t: Translator, value: str) -> str:
    """An artifact's kind: `run inputs`, `engine-log`; `g1:nvidia-smi` is a tool's
    capture, named by the tool."""
    return word(t, "artifact", value)


def arm(t: Translator, arm: str) -> str:
    """An arm's name (`baseline`, `accelerated`) in words; another as stored."""
    return t(f"arm.{arm}") if f"arm.{arm}" in t.messages else arm


def fact_key(t: Translator, key: str) -> str:
    """A host fact's key: fixed ones from the catalogue, the composed ones (G2's `fio
    TARGET JOB`, `LABEL filesystem`, an engine's card) with their site names kept."""
    if f"words.fact.{key}" in t.messages:
        return t(f"words.fact.{key}")
    engine = _ENGINE.match(key)
    if engine:
        code = "engine_identity" if engine["identity"] else "engine"
        return t(f"words.fact_of.{code}", {"arm": arm(t, engine["arm"]),
                                            "instance": engine["instance"]})
    head, _, rest = key.partition(" ")
    if key.startswith("serial change: "):
        fact = key.removeprefix("serial change: ")
        return t("words.fact_of.serial_change", {"fact": fact_key(t, fact)})
    if key.startswith("engine version "):
        return t("words.fact_of.engine_version",
                 {"instance": key.removeprefix("engine version ")})
    if key.startswith("serving prefill "):
        return t("words.fact_of.serving_prefill", {"cell": key.removeprefix("serving prefill ")})
    if key.endswith(" filesystem"):
        return t("words.fact_of.filesystem", {"what": key.removesuffix(" filesystem")})
    if head == "fio" and " " in rest:
        target, _, job = rest.rpartition(" ")
        return t("words.fact_of.fio", {"target": target, "job": fio_job(t, job)})
    return key


def fact_value(t: Translator, key: str, value: Any) -> Any:
    """A fact's value with the harness's own words translated: the keys the catalogue
    names (G1's plan's `health` / `items`, a serial change's `since run`, an engine's
    card, a filesystem's `mount`), G1's plan's item ids; other keys (a package's name) as
    stored."""
    if not isinstance(value, dict):
        return value
    plan = key == PLAN_FACT
    return {_key(t, str(k)): [item(t, str(i)) for i in v] if plan and isinstance(v, list)
            else v for k, v in value.items()}


def _key(t: Translator, key: str) -> str:
    return t(f"words.fact.{key}") if f"words.fact.{key}" in t.messages else key
