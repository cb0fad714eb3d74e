"""The typed report model: what a report says, in one language, with no database behind it.

Templates render only this. It is also written into evidence packs as JSON, so its shape
is versioned: bump SCHEMA_VERSION when a field changes meaning or disappears.

2: page 1 carries each G3 run's decision settings that differ from the defaults, what
   differed between the arms' engines, every attempt of each gate, and which sign-off
   accepted what; a reviewer's sign-off counts (marks, PASS (signed)) only when made after
   the run's result, as harness.store.runs.effective_verdict counts it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = 3  # 3: a simulated run's storage GB/s are the model's


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
    token: str  # PASS STOP-LOSS INCONCLUSIVE ERROR RUNNING NOT_RUN RECORDED
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


class MoreFindings(Frozen):
    """A gate's reasons past those page 1 lists: how many, and the section that has them
    (the PDF says its page)."""

    gate: str
    n: int
    anchor: str  # the gate section's HTML id


class Signoff(Frozen):
    run_id: int
    gate: str
    role: str
    name: str
    date: str
    note: str
    who: str = ""  # the OS account and host that ran `gate signoff` (user@host)
    accepts: str = ""  # what a reviewer's sign-off accepted (weaker settings, above band)
    counts: bool = True  # False: a reviewer's sign-off made before the run's result


class SettingChange(Frozen):
    """A G3 decision setting that differs from its default (harness.config.decision)."""

    key: str
    value: str
    default: str
    why: str
    weakened: bool  # weaker than the default: the run needs a reviewer's sign-off


class RunSettings(Frozen):
    run_id: int
    gate: str
    changes: list[SettingChange] = []  # weakened first; empty: every setting is the default
    overrides: list[str] = []  # `--set key=value` given on the command line


class ArmDifference(Frozen):
    """A fact that differed between the arms' engines; values shortened for the page."""

    instance: int | None = None  # None: the same difference on every instance
    key: str
    baseline: str
    accelerated: str
    allowed_by: str = ""  # the differs_by pattern that allowed it; "": it blocks the layout


class ArmsLayout(Frozen):
    """One comparison result; layouts whose arms differed alike share one."""

    layouts: list[str]
    token: str  # PASS: nothing blocks; ERROR: a difference blocks or a process went unseen;
    #             NOT_RUN: the engines were not both read
    differences: list[ArmDifference] = []  # allowed and blocking (noise left out)
    notes: list[str] = []  # why the arms could not be compared, per instance (translated)
    ignored: list[str] = []  # session-noise keys that differed and were ignored


class ArmsCheck(Frozen):
    """What differed between the arms of a G3 run, per layout, as read after start."""

    run_id: int
    gate: str
    patterns: list[str]  # arms.accelerated.differs_by
    layouts: list[ArmsLayout] = []


class Attempt(Frozen):
    run_id: int
    token: str  # the effective verdict (harness.store.runs.effective_verdict)
    word: str
    date: str
    marks: list[str] = []  # FORCED, PARTIAL, ABORTED, SIMULATED (translated)
    this: bool = False  # the run this report stands on for the gate


class GateAttempts(Frozen):
    """Every run of a gate in the campaign (packaged suite only), oldest first."""

    gate: str
    attempts: list[Attempt]


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


class PlanPart(Frozen):
    """G3's outcome beside what the planner predicted (harness/report/sections/
    g3_plan.py): a risk shown, never a verdict."""

    title: str
    lines: list[str] = []  # where the inputs came from, or why nothing is predicted
    table: Table | None = None  # per layout, tier and arm: predicted, measured, error
    misses: list[str] = []  # where the model was off, and by how much


class G3Section(Section):
    kind: Literal["g3"] = "g3"
    layouts: list[G3Layout] = []
    rules: list[str] = []  # the decision rule, once, then layouts decided on fewer criteria
    rules_table: Table | None = None  # per cell: layout, tier, reason, how its CIs were taken
    storage: Table | None = None
    storage_plot: Plot | None = None
    storage_notes: list[str] = []  # a simulated run: what its tier is modelled at
    evidence: Table | None = None
    crosschecks: Table | None = None  # devices vs cold KV, engine counts, two clocks
    plan: PlanPart | None = None  # predicted against measured TTFT p50 (never a verdict)


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
    config_json: str  # pretty JSON, secrets redacted (the evidence pack's model)
    config: list[tuple[str, str]] = []  # dotted key, value: the appendix's table, no paths
    config_same_as: int | None = None  # the earlier run shown with the same config (empty)
    args: str
    uid: str = ""
    overrides: str = ""  # `--set` options, "" when none


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
    stamp: str  # every page's header: IN PROGRESS and / or SIMULATED (empty: neither)
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
    # A run that is not a gate (bench / import): what the cover says it is, why it carries
    # no verdict, and what it recorded. Empty for gate runs and campaigns.
    not_a_gate: str = ""
    not_a_gate_notes: list[str] = []
    attempts: list[GateAttempts] = []  # every attempt of each gate in the report
    accepted: list[str] = []  # "G3 run 9 counts as PASS (signed): reviewer ... accepted ..."
    settings: list[RunSettings] = []  # per G3 run: decision settings off their defaults
    arms: list[ArmsCheck] = []  # per G3 run: what differed between the arms' engines
    logo: str = ""  # report.logo as a data: URI (image/png, jpeg, gif, svg+xml); "": none
    overall: str = ""  # the campaign in one line: the furthest gate reached, its verdict
    overall_token: str = ""  # its tone: the worst of that gate's and the earlier ones'
    more: list[MoreFindings] = []  # per gate, the reasons past those `findings` lists
