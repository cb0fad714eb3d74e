"""A G4 soak seen after its gate process ended: `gate status` says it still runs (or
ended with windows not yet stored), `gate runs abort` stops it. The suite's `detached`
and `release` hooks (gates/g4_stability/__init__.py)."""

from __future__ import annotations

from pathlib import Path

from harness.config.inventory import Inventory
from harness.config.loader import LoadedConfig
from harness.errors import GateError
from harness.g4 import soak as soak_proc
from harness.g4.session import SPOOL, STOP_WAIT_S
from harness.g4.spool import Spool
from harness.store import Store
from harness.store import windows as store_windows


def release_soak(loaded: LoadedConfig, inventory: Inventory, store: Store, run_id: int, *,
                 sudo_password: str | None) -> list[str]:
    """`gate runs abort`: the soak a killed G4 run left running is stopped (its whole
    windows are written first), then its engines as for any serving gate."""
    from harness.serving.engines import release_engines
    from harness.store.runs import get_run

    lines = []
    root = Path(get_run(store, run_id).artifact_dir or ".") / SPOOL
    spool = Spool(root)
    state = spool.state() if (root / "spec.json").exists() else None
    if state is not None and not state.ended and soak_proc.alive(state.pid):
        spool.request_stop("gate runs abort")
        gone = soak_proc.terminate(state.pid, STOP_WAIT_S)
        lines.append(f"soak: pid {state.pid} {'stopped' if gone else 'did not stop'} "
                     f"after {state.windows_written} windows")
    else:
        lines.append("soak: none of this run was running")
    return lines + release_engines(loaded, inventory, store, run_id,
                                   sudo_password=sudo_password)


def soak_status(store: Store, run_id: int) -> str | None:
    """`gate status`: a soak of this run still running after its gate process ended (the
    viewer was closed), or ended with windows the store has not taken yet."""
    from harness.store.runs import get_run, liveness

    run = get_run(store, run_id)
    root = Path(run.artifact_dir or ".") / SPOOL
    if liveness(run) in ("alive", "elsewhere") or not (root / "spec.json").exists():
        return None  # a live viewer shows its own progress
    spool = Spool(root)
    try:
        state, spec = spool.state(), spool.spec()
    except GateError:
        return None
    if state is None:
        return None
    stored = store_windows.last_index(store, run_id)
    have = 0 if stored is None else stored + 1
    if not state.ended and soak_proc.alive(state.pid):
        return (f"G4 run {run_id}: its soak is still running (pid {state.pid}, "
                f"{state.windows_written} of {spec.windows} windows written, {have} stored): "
                f"`gate resume {run_id}` re-attaches, `gate runs abort {run_id}` stops it")
    if state.windows_written > have:
        return (f"G4 run {run_id}: its soak {state.status} with {state.windows_written} "
                f"windows, {have} stored: `gate resume {run_id}` stores and judges them")
    return None
