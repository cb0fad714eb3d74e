"""The campaign workflow: gate order, prerequisites, FORCED, stopping at the first gate that
is not PASS, resume, abort and the sign-off rule. `gate run`, `gate campaign`, `gate
resume`, `gate runs abort`, `gate signoff`, `gate demo` (and later the scheduler) call
these; the CLI only parses, calls and prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from harness.config.inventory import load_inventory
from harness.config.loader import LoadedConfig
from harness.errors import PrerequisiteError, UsageError
from harness.registry import GATES, GateSpec, before, gate_spec
from harness.runner import Progress, RunOutcome, RunRequest, prepare, run_gate, suite_hooks
from harness.store import Store
from harness.store import runs as store_runs
from harness.store.schema import RunRow
from harness.verdict import Verdict
from harness.workflow.preflight import Site, preflight


@dataclass(frozen=True)
class GateState:
    gate: str
    run: RunRow | None  # latest non-partial finished-or-aborted gate run
    verdict: str  # effective verdict, or "not run"
    latest_any: RunRow | None  # latest run of any kind (partial / running included)


def gate_states(store: Store, campaign: str, *, include_simulated: bool = True,
                custom_suites: bool = False) -> list[GateState]:
    """Each gate's standing run in `campaign` ("SITE/CAMPAIGN", or a bare name in one site
    only: harness.store.runs.find_campaign). A run of another suite than the packaged one
    (the harness's own tests) never stands for a gate; with `custom_suites` only such runs
    count (they may open each other, for the tests of the gate order)."""
    states = []
    for spec in GATES:
        history = [r for r in store_runs.runs(store, campaign=campaign, gate=spec.id,
                                              kind="gate")
                   if bool(r.suite) == custom_suites]
        counted = [r for r in history
                   if store_runs.stands(r, include_simulated=include_simulated)]
        latest = counted[-1] if counted else None
        verdict = store_runs.effective_verdict(store, latest) if latest else "not run"
        states.append(GateState(spec.id, latest, verdict, history[-1] if history else None))
    return states


def check_prerequisites(store: Store, campaign: str, gate: str, *,
                        simulated: bool = False, custom_suite: bool = False) -> None:
    """Refuse (exit 4) unless every gate before this one stands PASS. A run against
    simulated hardware satisfies only a simulated campaign, never a real one; a custom
    suite's run satisfies only another custom suite's."""
    states = {s.gate: s for s in gate_states(store, campaign, include_simulated=simulated,
                                             custom_suites=custom_suite)}
    for spec in before(gate):
        state = states[spec.id]
        if state.verdict != "PASS":
            found = (f"its latest run {state.run.id} is {state.verdict}" if state.run
                     else "it has not run (partial runs do not count)")
            raise PrerequisiteError(
                f"{gate} needs {spec.id} passed first, and {found}",
                hint=f"run `gate run {spec.id}` first, or `gate run {gate} --force` "
                     f"(recorded as FORCED)",
            )


def run_one(req: RunRequest, progress: Progress | None = None) -> RunOutcome:
    """`gate run GN`: the gate runs once the gates before it stand PASS, unless FORCED (or
    resumed: it was allowed when it started)."""
    prepared = prepare(req)
    if not req.forced and req.resume_run is None:
        cfg = req.loaded.config
        # the config's campaign within the config's site: the run is filed there
        # (harness.store.runs.ensure_campaign), and another site's campaign of the same
        # name is another campaign
        check_prerequisites(req.store, f"{cfg.site.name}/{cfg.campaign.name}", req.gate,
                            simulated=cfg.simulated, custom_suite=req.suite_dir is not None)
    if req.resume_run is None and req.suite_dir is None and not prepared.passthrough.selecting:
        # what the checks need of the hosts, before the run row (exit 4, nothing recorded)
        preflight(req.gate, suite_hooks(req.gate),
                  Site(req.loaded, prepared.inventory, req.sudo_password))
    return run_gate(req, progress=progress, prepared=prepared)


# -- a campaign: gates in order ------------------------------------------------------------
@dataclass(frozen=True)
class CampaignStep:
    gate: GateSpec
    forced: bool
    outcome: RunOutcome | None  # None: the gate was not run
    note: str = ""  # why it was not run


class CampaignEvents(Protocol):
    """What a caller shows while a campaign runs."""

    def starting(self, gate: GateSpec, forced: bool) -> None: ...

    def finished(self, step: CampaignStep) -> None: ...


def run_campaign(base: RunRequest, gates: Sequence[GateSpec], *, skip_unbuilt: bool,
                 events: CampaignEvents, progress: Progress | None = None
                 ) -> list[CampaignStep]:
    """Run `gates` in order and stop at the first that is not PASS. `skip_unbuilt` (the
    demo): a gate this version does not ship is passed over and every later gate runs
    FORCED, which the store and the report say; otherwise an unbuilt gate is refused like
    `gate run` refuses it."""
    steps: list[CampaignStep] = []
    forced = base.forced
    for spec in gates:
        if skip_unbuilt and not spec.built:
            step = CampaignStep(spec, forced, None, "no suite in this version")
            forced = True
        else:
            events.starting(spec, forced)
            step = CampaignStep(spec, forced, run_one(replace(base, gate=spec.id,
                                                              forced=forced),
                                                      progress=progress))
        steps.append(step)
        events.finished(step)
        if step.outcome is not None and step.outcome.verdict is not Verdict.PASS:
            break
    return steps


# -- resume ------------------------------------------------------------------------------
def resume_request(store: Store, run_id: int, loaded: LoadedConfig,
                   inventory_path: Path | None, *, sudo_password: str | None) -> RunRequest:
    """What continuing run `run_id` means, refused unless it can continue where it stopped:
    an unfinished run of a resumable gate, the same config (overrides included), the same
    inventory and local files the config names (harness.workflow.run_inputs) and the same
    hosts. A RUNNING run whose process is gone is aborted first (refused while its
    process lives); the run is then reopened."""
    row = store_runs.get_run(store, run_id)
    if row.status == "FINISHED":
        raise UsageError(f"run {run_id} is finished ({row.verdict}); nothing to resume")
    spec = gate_spec(row.gate or "")
    if not spec.resumable:
        resumable = ", ".join(g.id for g in GATES if g.resumable)
        raise UsageError(f"run {run_id} is {spec.id}; only {resumable} runs resume",
                         hint=f"start it again: `gate run {spec.id}`")
    _same_inputs(store, row, loaded, inventory_path)
    inventory = load_inventory(inventory_path or loaded.inventory_path)
    if sorted(inventory.hosts) != sorted(row.hosts):
        raise UsageError(f"the inventory's hosts differ from run {run_id}'s",
                         file=str(inventory.path), hint="resume with the same inventory")
    if row.status == "RUNNING":
        store_runs.abort_run(store, run_id)  # refuses while its process is alive
    store_runs.reopen_run(store, run_id)
    return RunRequest(gate=spec.id, loaded=loaded, store=store, inventory_path=inventory_path,
                      forced=row.forced, resume_run=run_id, sudo_password=sudo_password)


def _same_inputs(store: Store, row: RunRow, loaded: LoadedConfig,
                 inventory_path: Path | None) -> None:
    """Refuse (exit 4) a resume whose config, inventory or any local file the run reads
    (harness.workflow.run_inputs) differs from the run's start, naming what changed."""
    from harness.store.lookups import artifact_paths
    from harness.workflow import run_inputs as ri

    if not row.config_hash.startswith(f"{ri.FORM}:"):
        raise UsageError(f"run {row.id} was started by an earlier version of gate, whose "
                         "record of a run's inputs did not cover the inventory and the files "
                         "the config names: it cannot be resumed safely",
                         hint=f"start it again: `gate run {row.gate}`")
    now = ri.run_inputs(loaded, inventory_path)
    if ri.digest(now) == row.config_hash:
        return
    if ri.config_changed(row.config_hash, now):
        given = ", ".join(f"--set {o}" for o in loaded.overrides) or "no --set"
        raise UsageError(f"the config and --set overrides differ from the ones run {row.id} "
                         f"started with (given now: {given})", file=str(loaded.path),
                         hint="resume with the same gate.yaml and the same --set options")
    before: tuple[ri.RunInput, ...] = ()
    for path in artifact_paths(store, row.id, ri.ARTIFACT_KIND):
        try:
            recorded = ri.parse_manifest(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if ri.digest(recorded) == row.config_hash:  # the record is the run's own
            before = recorded
    differ = [i for i in ri.changed(before, now) if i.role != ri.CONFIG] if before else []
    if differ:
        first = differ[0]
        more = f" (and {len(differ) - 1} more: " + ", ".join(
            i.role for i in differ[1:]) + ")" if len(differ) > 1 else ""
        raise UsageError(f"the {first.role} changed since run {row.id} started{more}",
                         file=first.path,
                         hint="resume with the files the run started with, or start a new run")
    raise UsageError(f"the inventory or a file the config names (a playbook, the load "
                     f"agent's wheels) changed since run {row.id} started; its record of "
                     "them is missing, so which one cannot be said",
                     file=str(loaded.path),
                     hint="resume with the files the run started with, or start a new run")


# -- abort -------------------------------------------------------------------------------
def abort(store: Store, run_id: int, loaded: LoadedConfig | None, *, force: bool,
          sudo_password: str | None) -> list[str]:
    """End a RUNNING run whose process is gone as ABORTED (results kept). With the site's
    config at hand, the gate's suite first releases what the run left running (G3: both
    arms' stop actions, every engine the run started). Returns what the user should know."""
    run = store_runs.get_run(store, run_id)
    release = suite_hooks(run.gate).release \
        if run.gate and gate_spec(run.gate).built else None
    if run.status != "RUNNING" or release is None or loaded is None:
        store_runs.abort_run(store, run_id, force=force)
        return []
    campaign = (run.config_json.get("campaign") or {}).get("name")
    if loaded.config.campaign.name != campaign:
        raise UsageError(f"{loaded.path} is campaign {loaded.config.campaign.name!r}, run "
                         f"{run_id} is {campaign!r}", hint="pass -c with the run's config")
    store_runs.abort_run(store, run_id, force=force)  # refuses while it is alive
    lines: list[str] = release(loaded, load_inventory(loaded.inventory_path), store, run_id,
                               sudo_password=sudo_password)
    return lines


def needs_site_config(store: Store, run_id: int) -> bool:
    """Whether aborting this run stops engines, which needs the site's config."""
    run = store_runs.get_run(store, run_id)
    if run.status != "RUNNING" or not run.gate or not gate_spec(run.gate).built:
        return False
    return suite_hooks(run.gate).release is not None


# -- sign-off ----------------------------------------------------------------------------
def sign_off(store: Store, run_id: int, *, role: str, name: str, note: str) -> str:
    """Record a sign-off; returns what the run counts as afterwards. Only a finished run
    can be signed; a reviewer's sign-off turns an above-band INCONCLUSIVE into PASS
    (harness.verdict.effective), a vendor's or customer's records acceptance only."""
    if not name.strip() or not note.strip():
        raise UsageError("--by and --note must not be empty")
    run = store_runs.get_run(store, run_id)
    if run.status != "FINISHED":
        raise UsageError(f"run {run_id} is {run.status}; only a finished run can be signed off")
    store_runs.add_signoff(store, run_id, role=role, name=name.strip(), note=note.strip())
    return store_runs.effective_verdict(store, store_runs.get_run(store, run_id))
