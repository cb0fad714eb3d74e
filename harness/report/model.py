"""The typed report model: what a report says, in one language, with no database behind it.

Templates render only this. It is also written into evidence packs as JSON, so its shape
is versioned: bump SCHEMA_VERSION when a field changes meaning or disappears.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = 1


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Plot(Frozen):
    title: str
    data_uri: str  # data:image/svg+xml;base64,...
    caption: str = ""


class Table(Frozen):
    """A plain table; `tones` gives each row's verdict token for colouring (or "")."""

    columns: list[str]
    rows: list[list[str]]
    tones: list[str] = []


class Badge(Frozen):
    gate: str
    gate_name: str
    token: str  # PASS STOP-LOSS INCONCLUSIVE ERROR RUNNING NOT_RUN
    word: str  # the translated verdict word
    run_id: int | None = None
    marks: list[str] = []  # FORCED, PARTIAL n of m, signed, SIMULATED (translated)
    date: str = ""
    counts: bool = True  # False for a partial run: it never counts as the gate's verdict


class Criterion(Frozen):
    gate: str
    criterion: str
    threshold: str
    estimate: str
    ci: str
    n: str
    token: str
    result: str


class Finding(Frozen):
    gate: str
    token: str
    text: str


class Signoff(Frozen):
    run_id: int
    gate: str
    role: str
    name: str
    date: str
    note: str


class Section(Frozen):
    """One gate's section; `template` names the Jinja template under templates/sections."""

    kind: str
    template: str
    gate: str
    title: str
    run_id: int
    badge: Badge
    notes: list[str] = []  # plain-language remarks (empty run, errors, in progress)
    tables: list[tuple[str, Table]] = []  # (heading, table), in order
    plots: list[Plot] = []


class G3Layout(Frozen):
    layout: str
    cells: Table
    plots: list[Plot] = []


class G3Section(Section):
    kind: Literal["g3"] = "g3"
    layouts: list[G3Layout] = []
    storage: Table | None = None
    storage_plot: Plot | None = None
    evidence: Table | None = None


class TrendSection(Frozen):
    gate: str
    title: str
    table: Table
    regressions: list[str] = []
    plot: Plot | None = None


class HostFact(Frozen):
    host: str
    key: str
    value: str
    simulated: bool


class Artifact(Frozen):
    run_id: int
    path: str
    kind: str
    host: str
    size: str
    sha256: str


class RunAppendix(Frozen):
    run_id: int
    gate: str
    kind: str
    status: str
    trigger: str
    harness_version: str
    hostname: str
    operator: str
    started: str
    finished: str
    config_hash: str
    config_json: str  # pretty JSON, secrets redacted
    args: str


class Appendix(Frozen):
    runs: list[RunAppendix]
    engine_versions: Table
    host_facts: list[HostFact]
    artifacts: list[Artifact]
    definitions: list[tuple[str, str, str]]  # term, English, Chinese


class Report(Frozen):
    schema_version: int = SCHEMA_VERSION
    kind: Literal["run", "campaign"]
    lang: str
    title: str
    site: str
    customer: str
    campaign: str
    operator: str
    period: str
    generated: str
    simulated: bool
    stamp: str  # the text of the SIMULATED stamp (empty when not simulated)
    in_progress: list[str]  # "run 12 (G3) is still running ..." lines
    badges: list[Badge]
    ci_label: str
    criteria: list[Criterion]
    findings: list[Finding]
    marks: list[str]  # FORCED / PARTIAL lines for page 1
    signoffs: list[Signoff]
    sections: list[G3Section | Section]
    trends: list[TrendSection]
    appendix: Appendix
    font_stack: str
    footer: str
