"""Message catalogs: every customer-facing word of the report, in English and Chinese.

Catalogs live in reports/i18n/<lang>.yaml as nested mappings; keys are flattened with dots
(`verdict.PASS`). A missing key is an error, never a silently English or empty string.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from harness.errors import UsageError
from harness.report.resources import read_text

Lang = Literal["en", "zh"]
LANGS: tuple[Lang, ...] = ("en", "zh")

# Verdict tokens the report knows; "NOT_RUN", "RUNNING" and "RECORDED" (a bench / import:
# measured, nothing decided) are report states, not verdicts.
VERDICT_TOKENS = ("PASS", "STOP-LOSS", "INCONCLUSIVE", "ERROR", "RUNNING", "NOT_RUN", "SKIPPED",
                  "RECORDED")


def _flatten(prefix: str, node: Any, out: dict[str, str]) -> None:
    if isinstance(node, Mapping):
        for k, v in node.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = str(node)


def load_catalog(lang: str) -> dict[str, str]:
    if lang not in LANGS:
        raise UsageError(f"unknown report language {lang!r}", key="--lang",
                         hint="choose en or zh")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    raw = yaml.load(read_text("i18n", f"{lang}.yaml"), Loader=loader)
    out: dict[str, str] = {}
    _flatten("", raw, out)
    return out


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


@dataclass(frozen=True)
class Translator:
    """Looks up and formats catalog strings for one language."""

    lang: Lang
    messages: Mapping[str, str]

    def __call__(self, key: str, values: Mapping[str, object] | None = None) -> str:
        try:
            text = self.messages[key]
        except KeyError:
            raise KeyError(f"message {key!r} missing from the {self.lang} catalog") from None
        return text.format_map(dict(values)) if values else text

    def verdict(self, token: str | None) -> str:
        """The verdict word; Chinese keeps the English token in parentheses for auditors."""
        key = token if token in VERDICT_TOKENS else "NOT_RUN"
        return self(f"verdict.{key}")

    def gate_name(self, gate: str) -> str:
        return self(f"gate.{gate}") if f"gate.{gate}" in self.messages else gate


def translator(lang: str) -> Translator:
    messages = load_catalog(lang)
    return Translator(lang="zh" if lang == "zh" else "en", messages=messages)
