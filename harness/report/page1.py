"""Page 1's lines about how the verdicts came about: runs in progress, FORCED and PARTIAL,
every attempt of each gate, the sign-offs (who gave them, as which OS account, on which
host) and which reviewer's sign-off accepted what."""

from __future__ import annotations

from typing import Any

from harness.report import fmt
from harness.report.frames import AttemptInfo, RunFrames
from harness.report.i18n import Translator
from harness.report.model import Attempt, GateAttempts, Signoff


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
                                         "m": r.checks_total}))
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
