"""Page 1's lines about how the verdicts came about: the campaign in one line (the
furthest gate reached), every reason a gate did not pass, runs in progress, FORCED and
PARTIAL, every attempt of each gate, the sign-offs (who gave them, as which OS account,
on which host) and which reviewer's sign-off accepted what; checks counted with their
shares."""

from __future__ import annotations

from typing import Any

from harness.report import fmt
from harness.report.frames import AttemptInfo, RunFrames, RunInfo
from harness.report.i18n import Translator
from harness.report.model import Attempt, Badge, Finding, GateAttempts, MoreFindings, Signoff


def _role(t: Translator, role: str) -> str:
    return t(f"role.{role}") if f"role.{role}" in t.messages else role


def who(s: Any) -> str:
    """The OS account and host that ran `gate signoff`: "li@site-jump" ("" when an older
    harness did not record them)."""
    user, host = str(s.os_user or ""), str(s.hostname or "")
    return f"{user}@{host}" if user and host else (user or (f"@{host}" if host else ""))


def _counts(frames: RunFrames, s: Any) -> bool:
    """A reviewer's sign-off counts only when made after the run's result
    (harness.store.runs.effective_verdict); other roles' sign-offs decide nothing."""
    r = frames.run
    return s.role != "reviewer" or (r.finished_at is not None and float(s.at) >= r.finished_at)


def signoffs(frames: RunFrames, t: Translator, accepts: str) -> list[Signoff]:
    out = []
    for s in frames.signoffs.itertuples(index=False):
        counts = _counts(frames, s)
        out.append(Signoff(run_id=frames.run.id, gate=frames.run.gate or "—",
                           role=_role(t, str(s.role)), name=str(s.name), date=fmt.when(s.at),
                           note=str(s.note or ""), who=who(s), counts=counts,
                           accepts=accepts if s.role == "reviewer" and counts else ""))
    return out


def signer(t: Translator, role: str, name: str, account: str) -> str:
    """ "reviewer Dr. Li (as li@site-jump)" """
    values = {"role": role, "name": name, "who": account}
    return t("signoff.signer_as" if account else "signoff.signer", values)


def accepted(frames: RunFrames, t: Translator, accepts: str) -> list[str]:
    """The line that says which sign-off made a run PASS (signed), and what it accepted."""
    r = frames.run
    if not (accepts and r.needs_signoff and r.signed and r.effective == "PASS"):
        return []
    names = [signer(t, _role(t, str(s.role)), str(s.name), who(s))
             for s in frames.signoffs.itertuples(index=False)
             if s.role == "reviewer" and _counts(frames, s)]
    dates = [float(s.at) for s in frames.signoffs.itertuples(index=False)
             if s.role == "reviewer" and _counts(frames, s)]
    return [t("page1.accepted", {"gate": r.gate or "—", "run": r.id,
                                 "verdict": t("verdict.PASS_SIGNED"),
                                 "signers": ", ".join(names) or "—",
                                 "date": fmt.day(min(dates)) if dates else "—",
                                 "what": accepts})]


def progress_and_marks(frames: RunFrames, t: Translator) -> tuple[list[str], list[str]]:
    r = frames.run
    gate = r.gate or "—"
    progress = [t("page1.in_progress", {"gate": gate, "run": r.id,
                                        "heartbeat": fmt.when(r.heartbeat_at)})
                ] if r.status == "RUNNING" else []
    marks = []
    if r.forced:
        marks.append(t("page1.forced", {"gate": gate, "run": r.id}))
    if r.partial:
        marks.append(t("page1.partial", {"gate": gate, "run": r.id, "n": r.checks_selected,
                                         "m": r.checks_total,
                                         "pct": share(r.checks_selected, r.checks_total)}))
    return progress, marks


def attempt(a: AttemptInfo, t: Translator, this: bool) -> Attempt:
    word = t("verdict.PASS_SIGNED") if a.effective == "PASS" and a.needs_signoff \
        else t.verdict(a.effective)
    marks = [t(key) for key, on in (("mark.forced", a.forced), ("mark.partial_short", a.partial),
                                    ("mark.aborted", a.status == "ABORTED"),
                                    ("mark.simulated", a.simulated)) if on]
    return Attempt(run_id=a.id, token=a.effective, word=word,
                   date=fmt.day(a.finished_at or a.started_at), marks=marks, this=this)


def gate_attempts(gate: str, found: list[AttemptInfo], this: set[int],
                  t: Translator) -> GateAttempts:
    return GateAttempts(gate=gate, attempts=[attempt(a, t, a.id in this) for a in found])


# -- the campaign in one line -------------------------------------------------------------
def overall(badges: list[Badge], t: Translator) -> tuple[str, str]:
    """(the line, its verdict token): the furthest gate reached, its verdict and run, the
    marks that qualify it (FORCED, PARTIAL; SIMULATED is in the title), and the earlier
    gates that did not pass (a FORCED PASS after a STOP-LOSS is no PASS of the campaign;
    their badges beside it say how). The tone is the worst of them."""
    reached = [b for b in badges if b.token != "NOT_RUN"]
    if not reached:
        return t("page1.overall_none"), "NOT_RUN"
    last = reached[-1]
    marks = [m for m in last.marks if m not in (t("mark.simulated"), t("mark.signed"))]
    earlier = [b for b in badges[:badges.index(last)] if b.token != "PASS"]
    line = t("page1.overall", {
        "verdict": last.word, "gate": last.gate,
        "run": last.run_id if last.run_id is not None else "—",
        "marks": t("page1.attempt_marks", {"marks": ", ".join(marks)}) if marks else ""})
    if earlier:
        line += t("page1.overall_earlier", {"gates": t("crit.count_sep").join(
            b.gate for b in earlier)})
    # a gate passed after earlier ones that did not (FORCED) or never ran is no green line
    worst = next((tok for tok in ("ERROR", "STOP-LOSS", "INCONCLUSIVE", "RUNNING", "NOT_RUN")
                  if any(b.token == tok for b in [*earlier, last])), last.token)
    return line, worst


# -- every reason a gate did not pass -----------------------------------------------------
PER_GATE = 6  # a gate's reasons on page 1; the rest are named by count and page


def reasons(findings: list[Finding], runs: list[RunInfo], checks: list[Any],
            t: Translator) -> tuple[list[Finding], list[MoreFindings]]:
    """Page 1's reasons: every finding of every gate, each said once, a gate whose run
    did not pass and that no finding explains said by its run's reason; PER_GATE a gate,
    the rest counted with the page of the gate's section ("and 4 more, page 7")."""
    from harness.report.sections.base import run_reason

    said: dict[str, list[Finding]] = {}
    for f in findings:
        mine = said.setdefault(f.gate, [])
        if all(f.text != g.text for g in mine):
            mine.append(f)
    for run, frame in zip(runs, checks, strict=True):
        gate = run.gate or run.kind
        if run.kind == "gate" and run.effective not in ("PASS", "RUNNING") \
                and not said.get(gate):
            why = run_reason(run, t, frame) or "—"
            said[gate] = [Finding(gate=gate, token=run.effective, text=why)]
    shown: list[Finding] = []
    more: list[MoreFindings] = []
    for gate, mine in said.items():
        shown += mine[:PER_GATE]
        if len(mine) > PER_GATE:
            more.append(MoreFindings(gate=gate, n=len(mine) - PER_GATE,
                                     anchor=f"gate-{gate}"))
    return shown, more


# -- counts with their shares -------------------------------------------------------------
COUNTED = ("PASS", "STOP-LOSS", "INCONCLUSIVE", "ERROR", "SKIPPED")


def share(n: int, total: int) -> str:
    """n of total as a whole percentage ("71 %"), the form page 1 shows every fraction
    in; "—" of nothing."""
    return fmt.pct(n / total, 0) if total else fmt.dash()


NBSP = "\u00a0"


def _unbroken(part: str) -> str:
    """A count kept on one line but for before its share ("1 INCONCLUSIVE" / "(7 %)"):
    a narrow column breaks it there or between counts, never inside "7 %"."""
    return " (".join(p.replace(" ", NBSP) for p in part.split(" ("))


def outcome_counts(outcomes: list[str], t: Translator) -> str:
    """"10 PASS (71 %), 4 SKIPPED (29 %) of 14": every outcome counted, skipped checks
    too (they are not a failure, nor a pass), each with its share."""
    total = len(outcomes)
    if not total:
        return t("crit.count_none")
    parts = [_unbroken(t(f"crit.count.{word}", {"n": n, "pct": share(n, total)}))
             for word in COUNTED if (n := sum(1 for o in outcomes if o == word))]
    return t("crit.count_of", {"parts": t("crit.count_sep").join(parts), "total": total})
