"""Run one gate suite as pytest, in-process, with the harness plugin; decide its verdict.

The run row and the campaign lock are created together; a heartbeat thread keeps the lock
fresh; Ctrl-C or SIGTERM ends the run ABORTED (verdict ERROR) with everything measured kept.

A gate's PASS needs its whole plan executed and decided: the packaged suite declares the
checks it must produce for this config (`expected_checks`), and the stored checks are
compared with that list. Pass-through pytest arguments are an allowlist
(harness/pytest_args.py). Another suite (`suite_dir`, the harness's own tests) is
recorded on the run and never stands as a gate's verdict.
"""

from __future__ import annotations

import getpass
import hashlib
import importlib
import importlib.resources
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from harness.config.inventory import Inventory, load_inventory
from harness.config.loader import LoadedConfig
from harness.errors import InfrastructureError, UsageError
from harness.liblog import RUN_LOG, library_log_to
from harness.pytest_args import PassThrough, check_pytest_args
from harness.pytest_plugin import GateContext, GatePlugin
from harness.registry import GATES, GateSpec, gate_spec
from harness.store import Store
from harness.store import runs as store_runs
from harness.suite_hooks import SuiteHooks
from harness.verdict import SIGNOFF_REASON, Verdict, combine
from harness.workflow.run_inputs import ARTIFACT_KIND as INPUTS_KIND
from harness.workflow.run_inputs import MANIFEST as INPUTS_MANIFEST
from harness.workflow.run_inputs import RunInput, manifest_text, run_inputs
from harness.workflow.run_inputs import digest as inputs_digest

HEARTBEAT_EVERY = 15.0
# Told each check's result as it is stored: (check name, host or None, verdict, message).
Progress = Callable[[str, str | None, str, str], None]


@dataclass(frozen=True)
class RunRequest:
    gate: str
    loaded: LoadedConfig
    store: Store
    inventory_path: Path | None = None
    forced: bool = False
    trigger: str = "manual"
    pytest_args: tuple[str, ...] = ()
    suite_dir: Path | None = None  # tests only: another suite in place of the packaged one
    artifact_root: Path | None = None
    operator: str = ""
    resume_run: int | None = None
    dry_run: bool = False
    sudo_password: str | None = field(default=None, repr=False)  # never from the environment


@dataclass
class RunOutcome:
    run_id: int
    verdict: Verdict
    reason: str
    status: str
    partial: bool
    needs_signoff: bool
    checks: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code


def suite_path(gate: str) -> Path:
    """The installed suite for a gate (gates/ ships inside the package as harness.gates)."""
    spec = gate_spec(gate)
    base = Path(str(importlib.resources.files("harness.gates")))
    path = base / spec.suite
    if not path.is_dir() or not any(path.glob("test_*.py")):
        built = [g.id for g in _built_gates()]
        raise UsageError(
            f"{spec.id} has no suite in this version of gate",
            hint=(f"built: {', '.join(built)}; run `gate run {built[0]} --force` to run it "
                  f"without the gates before it") if built else "this install ships no suite",
        )
    return path


def _built_gates() -> list[GateSpec]:
    return [g for g in GATES if g.built]


def suite_module(gate: str) -> Any:
    """The packaged suite's package (its files: `suite_functions`)."""
    return importlib.import_module(gate_spec(gate).package)


def suite_hooks(gate: str) -> SuiteHooks:
    """What the packaged suite answers generic code (harness/suite_hooks.py): its
    package's HOOKS, which mypy holds to SuiteHooks; a package without them is a broken
    install, not a gate with no plan."""
    hooks = getattr(suite_module(gate), "HOOKS", None)
    if not isinstance(hooks, SuiteHooks):
        raise InfrastructureError(f"the {gate} suite ({gate_spec(gate).package}) exports no "
                                  "HOOKS = SuiteHooks(...)", stage="plan")
    return hooks


def suite_digest(path: Path) -> str:
    """`path sha256:...` of a custom suite's files, recorded on its run."""
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*.py") if "__pycache__" not in p.parts):
        h.update(f.relative_to(path).as_posix().encode() + b"\0" + f.read_bytes())
    return f"{path.resolve()} sha256:{h.hexdigest()[:16]}"


class _Heartbeat(threading.Thread):
    def __init__(self, store: Store, run_id: int) -> None:
        super().__init__(daemon=True, name=f"heartbeat-{run_id}")
        self.store, self.run_id = store, run_id
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(HEARTBEAT_EVERY):
            try:
                store_runs.heartbeat(self.store, self.run_id)
            except Exception:  # a busy DB must not kill the run; the next beat retries
                continue

    def stop(self) -> None:
        self.stopped.set()


def _sigterm_to_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def check_site(gate: str, loaded: LoadedConfig, inventory_path: Path | None = None,
               packaged_suite: bool = True) -> Inventory:
    """The inventory, its groups the gate needs, and the suite's own checks of the config
    against it (every host a layout names, ...): what `gate run`, `--dry-run` and
    `gate config validate` refuse with exit 4 before anything starts."""
    inventory = load_inventory(inventory_path or loaded.inventory_path)
    inventory.require_groups(gate_spec(gate).groups)
    if packaged_suite:
        validate = suite_hooks(gate).validate
        if validate is not None:
            try:
                validate(loaded.config, inventory)
            except UsageError as exc:
                if exc.file is None and exc.key is not None:
                    exc.file = str(loaded.path)  # the key is the config's
                raise
        _check_optional(gate, loaded, inventory)
    return inventory


def _check_optional(gate: str, loaded: LoadedConfig, inventory: Inventory) -> None:
    """Each `gates.gN.optional` entry names a check the packaged suite plans, exactly
    (exit 4 otherwise, with the closest check): a typo makes nothing optional."""
    from harness.config.optional import check_optional

    spec = gate_spec(gate)
    entries = getattr(loaded.config.gates, spec.config_key).optional
    if not entries:
        return
    check_optional(entries, list(suite_hooks(gate).expected_checks(loaded.config, inventory)),
                   key=f"gates.{spec.config_key}.optional", file=str(loaded.path),
                   functions=suite_functions(gate))


def suite_functions(gate: str) -> list[str]:
    """Every check function the packaged suite defines, whether this config plans it or
    not: `optional: [test_gdsio]` on a site without gdsio configured is no typo."""
    import ast

    found: set[str] = set()
    # read, not imported: pytest imports the suite itself (and rewrites its asserts)
    for path in Path(suite_module(gate).__file__).parent.glob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef)
                  and n.name.startswith("test_")}
    return sorted(found)


def prepare_inventory(req: RunRequest) -> Inventory:
    return check_site(req.gate, req.loaded, req.inventory_path, req.suite_dir is None)


@dataclass(frozen=True)
class Plan:
    """What the run must produce: the suite's declared check ids (None: a custom suite,
    whose plan is what it collects) and the settings that weaken a PASS."""

    checks: tuple[str, ...] | None
    weakened: tuple[str, ...] = ()


def gate_plan(req: RunRequest, inventory: Inventory) -> Plan:
    if req.suite_dir is not None:
        return Plan(None)
    hooks = suite_hooks(req.gate)
    weakened = hooks.weakened
    return Plan(tuple(hooks.expected_checks(req.loaded.config, inventory)),
                tuple(weakened(req.loaded.config)) if weakened is not None else ())


@dataclass(frozen=True)
class Prepared:
    """A gate run checked and planned, nothing recorded yet: every usage error is found
    here, before the run row exists."""

    passthrough: PassThrough
    suite: Path
    inventory: Inventory
    plan: Plan
    custom: str  # a custom suite's path and digest; '' for the packaged one
    inputs: tuple[RunInput, ...] = ()  # the local files the run reads (resume compares)


def prepare(req: RunRequest) -> Prepared:
    passthrough = check_pytest_args(req.pytest_args)
    suite = req.suite_dir or suite_path(req.gate)
    inventory = prepare_inventory(req)
    plan = gate_plan(req, inventory)
    custom = suite_digest(suite) if req.suite_dir is not None else ""
    return Prepared(passthrough, suite, inventory, plan, custom,
                    run_inputs(req.loaded, req.inventory_path))


def _record_inputs(req: RunRequest, run_id: int, artifact_dir: Path,
                   inputs: tuple[RunInput, ...]) -> None:
    """The run's inputs beside its artifacts (their digest is the run's config_hash), so
    a refused resume can name the file that changed."""
    path = artifact_dir / INPUTS_MANIFEST
    path.write_text(manifest_text(inputs), encoding="utf-8")
    store_runs.add_artifact(req.store, run_id, path, kind=INPUTS_KIND)


def run_gate(req: RunRequest, progress: Progress | None = None,
             prepared: Prepared | None = None) -> RunOutcome:
    """Run one gate as asked; the campaign workflow (harness.campaign.run_one) decides
    first whether it may run."""
    p = prepared or prepare(req)
    suite, inventory, plan, custom = p.suite, p.inventory, p.plan, p.custom
    cfg = req.loaded.config
    run_id = req.resume_run or store_runs.start_gate_run(req.store, store_runs.NewRun(
        campaign=cfg.campaign.name, site=cfg.site.name, customer=cfg.site.customer,
        kind="gate", gate=req.gate, forced=req.forced, trigger=req.trigger,
        simulated=cfg.simulated, config_hash=inputs_digest(p.inputs),
        config_json=req.loaded.config.model_dump(mode="json"),
        operator=req.operator or cfg.campaign.operator or getpass.getuser(),
        hosts=tuple(inventory.hosts), args=tuple(req.pytest_args), suite=custom,
        plan=plan.checks, overrides=req.loaded.overrides,
    ))
    # absolute: what runs in another working directory (G4's detached soak, playbooks) is
    # handed paths under it (`gate demo`'s default --out is relative)
    artifact_dir = ((req.artifact_root or req.loaded.base / "artifacts")
                    / f"run-{run_id}").resolve()
    artifact_dir.mkdir(parents=True, exist_ok=True)
    store_runs.set_artifact_dir(req.store, run_id, str(artifact_dir))
    if req.resume_run is None:
        _record_inputs(req, run_id, artifact_dir, p.inputs)
    optional = list(getattr(cfg.gates, gate_spec(req.gate).config_key).optional)
    if req.suite_dir is None:  # checks the suite itself declares skippable (G1: unverifiable)
        declared = suite_hooks(req.gate).optional_checks
        optional += declared(cfg, inventory) if declared is not None else []
    ctx = GateContext(gate=req.gate, run_id=run_id, store=req.store, loaded=req.loaded,
                      inventory=inventory, artifact_dir=artifact_dir, optional=tuple(optional),
                      suite_dir=suite, resume_from=req.resume_run, dry_run=req.dry_run,
                      simulated=cfg.simulated, sudo_password=req.sudo_password)
    plugin = GatePlugin(ctx, progress=progress)
    beat = _Heartbeat(req.store, run_id)
    beat.start()
    previous = signal.signal(signal.SIGTERM, _sigterm_to_interrupt)
    import pytest

    args = [str(suite), "-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:pytest_timeout",
            "--rootdir", str(suite.parent), "--confcutdir", str(suite.parent), "-c", os.devnull,
            "--import-mode=importlib",
            *req.pytest_args]
    interrupted = False
    try:
        with library_log_to(artifact_dir / RUN_LOG):
            code = pytest.main(args, plugins=[plugin])
        interrupted = plugin.tally.interrupted or code == pytest.ExitCode.INTERRUPTED
    except KeyboardInterrupt:
        interrupted = True
    finally:
        signal.signal(signal.SIGTERM, previous)
        beat.stop()
        if ctx.pool is not None:
            ctx.pool.close()
    return _finish(req, ctx, plugin, _Judged(plan, p.passthrough, interrupted,
                                             code if not interrupted else None))


@dataclass(frozen=True)
class _Judged:
    plan: Plan
    passthrough: PassThrough
    interrupted: bool
    code: Any


def _short_list(ids: Sequence[str], limit: int = 4) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _judge(tally: Any, j: _Judged) -> tuple[Verdict, str, bool, int, int]:
    """(verdict, reason, partial, checks selected, checks planned) from what the suite
    stored, held against what it had to produce. Nothing here can raise a verdict."""
    verdict, reason = combine(tally.outcomes)
    expected = list(j.plan.checks) if j.plan.checks is not None else \
        [*tally.collected_ids, *tally.deselected_ids]
    missing = [c for c in expected if c not in tally.ids]
    outside = sorted(tally.ids - set(expected)) if j.plan.checks is not None else []
    partial = bool(missing) and (j.passthrough.selecting or tally.deselected > 0)
    selected, total = len(expected) - len(missing), len(expected)
    if j.code == 4:  # pytest usage error: our own args were wrong
        return Verdict.ERROR, "pytest refused its arguments (see stderr)", partial, \
            selected, total
    if j.code not in (0, 1, 5):  # internal error (a hook raised): the rest never ran
        return Verdict.ERROR, f"pytest stopped abnormally (exit {int(j.code)})", partial, \
            selected, total
    if outside:
        return Verdict.ERROR, f"checks outside the suite's plan: {_short_list(outside)}", \
            partial, selected, total
    if missing and not partial:
        return Verdict.ERROR, (f"the plan was not executed: {len(missing)} of {total} planned "
                               f"checks produced no result ({_short_list(missing)})"), \
            partial, selected, total
    if not reason and verdict is not Verdict.PASS:
        reason = "; ".join(tally.reasons[:5])
    if partial and verdict in (Verdict.PASS, Verdict.INCONCLUSIVE):
        # A partial run is never a gate's PASS, whatever the checks it ran said.
        verdict = Verdict.INCONCLUSIVE
        reason = f"PARTIAL: {selected} of {total} planned checks ran" + \
            (f"; {reason}" if reason else "")
    return verdict, reason, partial, selected, total


def _finish(req: RunRequest, ctx: GateContext, plugin: GatePlugin, j: _Judged) -> RunOutcome:
    tally = plugin.tally
    if j.interrupted:
        verdict, reason, partial, selected, total = (
            Verdict.ERROR, "aborted (interrupted)", False, len(tally.ids),
            len(j.plan.checks) if j.plan.checks is not None else tally.collected)
    else:
        verdict, reason, partial, selected, total = _judge(tally, j)
    status = "ABORTED" if j.interrupted else "FINISHED"
    needs_signoff = (verdict is Verdict.INCONCLUSIVE and tally.signoff_only and not partial
                     and not j.interrupted)
    if needs_signoff:
        reason = SIGNOFF_REASON
    if j.plan.weakened and (verdict is Verdict.PASS or needs_signoff):
        from harness.config.decision import WEAKENED_REASON

        # Settings weaker than the defaults: a PASS stands only once a reviewer signs.
        verdict, needs_signoff = Verdict.INCONCLUSIVE, True
        reason = "; ".join([r for r in (reason, WEAKENED_REASON) if r]) + \
            " (" + "; ".join(j.plan.weakened) + ")"
    if verdict is Verdict.PASS and req.loaded.config.simulated and not ctx.detected_simulated:
        # `simulated: true` relaxes rules a real site must meet (unverifiable items, no
        # page-cache drop); at a site where nothing answered as simulated it is a mistake.
        verdict = Verdict.INCONCLUSIVE
        reason = ("gate.yaml says `simulated: true`, but nothing this run read answered as "
                  "simulated: a real site's PASS cannot rest on the simulated lab's rules "
                  "(remove `simulated:` from gate.yaml and run again)")
    # An interrupted run is finalised as ABORTED with what it measured so far: its
    # measured content changed as `gate runs abort` changes it, so its revision goes up
    # with it, once (finish_run touches a RUNNING run only), and `gate sync` sends it again.
    store_runs.finish_run(req.store, ctx.run_id, verdict=verdict.value, reason=reason,
                          status=status, partial=partial, selected=selected, total=total,
                          needs_signoff=needs_signoff, revise=j.interrupted)
    return RunOutcome(run_id=ctx.run_id, verdict=verdict, reason=reason, status=status,
                      partial=partial, needs_signoff=needs_signoff, checks=len(tally.outcomes),
                      extra={"started": time.time()})
