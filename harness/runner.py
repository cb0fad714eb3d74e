"""Run one gate suite as pytest, in-process, with the harness plugin; decide its verdict.

The run row and the campaign lock are created together; a heartbeat thread keeps the lock
fresh; Ctrl-C or SIGTERM ends the run ABORTED (verdict ERROR) with everything measured kept.
"""

from __future__ import annotations

import getpass
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
from harness.errors import UsageError
from harness.pytest_plugin import GateContext, GatePlugin
from harness.store import Store
from harness.store import runs as store_runs
from harness.verdict import GATES, Verdict, combine

SUITES = {"G1": "g1_arrival", "G2": "g2_baseline", "G3": "g3_main", "G4": "g4_stability"}
# What each gate needs from the inventory before it can start.
REQUIRED_GROUPS = {"G1": ("gpu",), "G2": ("gpu",), "G3": (), "G4": ("gpu",)}
HEARTBEAT_EVERY = 15.0
DESELECTING = ("-k", "-m", "--deselect", "--lf", "--last-failed", "--sw", "--stepwise",
               "--ignore", "--ignore-glob", "-x", "--exitfirst", "--maxfail")


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
    if gate not in GATES:
        raise UsageError(f"unknown gate {gate!r}", hint="one of G1, G2, G3, G4")
    base = Path(str(importlib.resources.files("harness.gates")))
    path = base / SUITES[gate]
    if not path.is_dir() or not any(path.glob("test_*.py")):
        raise UsageError(
            f"{gate} has no suite in this version of gate",
            hint="G3 is the first gate built; run `gate run G3 --force` to run it without G1/G2",
        )
    return path


def _deselects(args: Sequence[str]) -> bool:
    return any(a == d or a.startswith(d + "=") for a in args for d in DESELECTING)


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


def prepare_inventory(req: RunRequest) -> Inventory:
    inventory = load_inventory(req.inventory_path or req.loaded.inventory_path)
    inventory.require_groups(REQUIRED_GROUPS.get(req.gate, ()))
    if req.gate == "G3" and req.suite_dir is None:
        from harness.g3.plan import validate

        validate(req.loaded.config, inventory)
    return inventory


def run_gate(req: RunRequest, progress: Callable[..., None] | None = None) -> RunOutcome:
    from harness.campaign import check_prerequisites

    suite = req.suite_dir or suite_path(req.gate)
    inventory = prepare_inventory(req)
    cfg = req.loaded.config
    if not req.forced and req.resume_run is None:
        check_prerequisites(req.store, cfg.campaign.name, req.gate, simulated=cfg.simulated)
    run_id = req.resume_run or store_runs.start_gate_run(req.store, store_runs.NewRun(
        campaign=cfg.campaign.name, site=cfg.site.name, customer=cfg.site.customer,
        kind="gate", gate=req.gate, forced=req.forced, trigger=req.trigger,
        simulated=cfg.simulated, config_hash=req.loaded.digest(),
        config_json=req.loaded.config.model_dump(mode="json"),
        operator=req.operator or cfg.campaign.operator or getpass.getuser(),
        hosts=tuple(inventory.hosts), args=tuple(req.pytest_args),
    ))
    artifact_dir = (req.artifact_root or req.loaded.base / "artifacts") / f"run-{run_id}"
    artifact_dir.mkdir(parents=True, exist_ok=True)
    optional = getattr(cfg.gates, req.gate.lower()).optional
    ctx = GateContext(gate=req.gate, run_id=run_id, store=req.store, loaded=req.loaded,
                      inventory=inventory, artifact_dir=artifact_dir, optional=tuple(optional),
                      suite_dir=suite,
                      resume_from=req.resume_run, dry_run=req.dry_run, simulated=cfg.simulated)
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
        code = pytest.main(args, plugins=[plugin])
        interrupted = plugin.tally.interrupted or code == pytest.ExitCode.INTERRUPTED
    except KeyboardInterrupt:
        interrupted = True
    finally:
        signal.signal(signal.SIGTERM, previous)
        beat.stop()
        if ctx.pool is not None:
            ctx.pool.close()
    return _finish(req, ctx, plugin, interrupted, code if not interrupted else None)


def _finish(req: RunRequest, ctx: GateContext, plugin: GatePlugin, interrupted: bool,
            code: Any) -> RunOutcome:
    tally = plugin.tally
    partial = tally.deselected > 0 or _deselects(req.pytest_args)
    total = tally.collected + tally.deselected
    verdict, reason = combine(tally.outcomes)
    status = "FINISHED"
    if interrupted:
        verdict, reason, status = Verdict.ERROR, "aborted (interrupted)", "ABORTED"
    elif code == 4:  # pytest usage error: our own args were wrong
        verdict, reason = Verdict.ERROR, "pytest refused its arguments (see stderr)"
    elif code not in (0, 1, 5):  # internal error (a hook raised): the rest never ran
        verdict, reason = Verdict.ERROR, f"pytest stopped abnormally (exit {int(code)})"
    elif code != 5 and len(tally.reported) < tally.collected:
        missing = tally.collected - len(tally.reported)
        verdict, reason = Verdict.ERROR, f"{missing} of {tally.collected} checks reported nothing"
    elif not reason and verdict is not Verdict.PASS:
        reason = "; ".join(tally.reasons[:5])
    needs_signoff = (verdict is Verdict.INCONCLUSIVE and tally.signoff_only
                     and not interrupted)
    if needs_signoff:
        from harness.verdict import SIGNOFF_REASON

        reason = SIGNOFF_REASON
    store_runs.finish_run(req.store, ctx.run_id, verdict=verdict.value, reason=reason,
                          status=status, partial=partial, selected=tally.collected, total=total,
                          needs_signoff=needs_signoff)
    return RunOutcome(run_id=ctx.run_id, verdict=verdict, reason=reason, status=status,
                      partial=partial, needs_signoff=needs_signoff, checks=len(tally.outcomes),
                      extra={"started": time.time()})
