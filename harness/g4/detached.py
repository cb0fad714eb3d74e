"""A G4 soak seen after its gate process ended: `gate status` says it still runs (or
ended with windows not yet stored), `gate runs abort` stops it, on this machine or on the
client host (`placement: client`: over the gate's transport, through the agent). The
suite's `detached` and `release` hooks (gates/g4_stability/__init__.py)."""

from __future__ import annotations

from pathlib import Path

from harness.config.inventory import Inventory
from harness.config.loader import LoadedConfig
from harness.errors import GateError
from harness.g4 import soak as soak_proc
from harness.g4.placement import ClientPlace, attach_client, client_record, last_client_state
from harness.g4.session import SPOOL, STOP_WAIT_S, G4Session
from harness.g4.spool import Spool, window_row
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
    record = client_record(root) if (root / "spec.json").exists() else None
    if record is not None:
        lines.append(stop_client_soak(loaded, inventory, store, run_id, root, record,
                                      sudo_password=sudo_password))
        return lines + release_engines(loaded, inventory, store, run_id,
                                       sudo_password=sudo_password)
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


def stop_client_soak(loaded: LoadedConfig, inventory: Inventory, store: Store, run_id: int,
                     root: Path, record: dict[str, object], *,
                     sudo_password: str | None) -> str:
    """`gate runs abort` of a soak on the client host: asked to stop (its whole windows
    written), TERMed and KILLed after STOP_WAIT_S, through the agent there; the windows it
    wrote that the store lacks are stored first (by index: none twice)."""
    from harness.store.recorder import RunRecorder
    from harness.transport import TransportPool

    host = str(record.get("host"))
    pool = TransportPool(inventory, known_hosts=loaded.known_hosts_path,
                         sudo_password=sudo_password)
    try:
        place = attach_client(root, record, pool.get(host), RunRecorder(store, run_id).event)
        last = store_windows.last_index(store, run_id)
        seen = place.see(-1 if last is None else last)
        if seen.state is None or seen.state.ended or not seen.alive:
            return f"soak: none of this run was running on {host}"
        place.stop("gate runs abort", STOP_WAIT_S)
        after = place.see(-1 if last is None else last)
        stored = [window_row(doc) for doc in [*seen.windows, *after.windows]]
        if stored:
            store_windows.upsert_windows(store, run_id, stored)
        gone = after.state is not None and (after.state.ended or not after.alive)
        if gone:  # every window it wrote is stored now: its spool there is not needed
            last = store_windows.last_index(store, run_id)
            place.clean(-1 if last is None else last)
        return (f"soak: pid {seen.state.pid} on {host} {'stopped' if gone else 'did not stop'}"
                f" after {after.state.windows_written if after.state else '?'} windows")
    except GateError as exc:
        return f"soak: on {host}: {exc.one_line()}"
    finally:
        pool.close()


def clean_client_spool(session: G4Session) -> None:
    """After a run's outcome (the soak done, stopped early, or ERROR): the soak's spool on
    the client host is removed when every window it wrote is stored, and kept when the
    soak still runs or a window is not stored (`gate resume` needs them). A local soak's
    spool is the run's artifact directory: kept."""
    if not session.resumable() or client_record(session.spool.root) is None:
        return
    place = session.place()
    if isinstance(place, ClientPlace):
        last = store_windows.last_index(session.gate.store, session.gate.run_id)
        place.clean(-1 if last is None else last)


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
        record = client_record(root)
        state, spec = spool.state(), spool.spec()
    except GateError:
        return None
    stored = store_windows.last_index(store, run_id)
    have = 0 if stored is None else stored + 1
    if record is not None:  # on the client host: as the last viewer saw it (no connect)
        state = last_client_state(root)
        if state is None or (state.ended and state.windows_written <= have):
            return None
        return (f"G4 run {run_id}: its soak on {record.get('host')} was {state.status} when "
                f"last seen (pid {state.pid}, {state.windows_written} of {spec.windows} "
                f"windows written, {have} stored): `gate resume {run_id}` re-attaches, "
                f"`gate runs abort {run_id}` stops it")
    if state is None:
        return None
    if not state.ended and soak_proc.alive(state.pid):
        return (f"G4 run {run_id}: its soak is still running (pid {state.pid}, "
                f"{state.windows_written} of {spec.windows} windows written, {have} stored): "
                f"`gate resume {run_id}` re-attaches, `gate runs abort {run_id}` stops it")
    if state.windows_written > have:
        return (f"G4 run {run_id}: its soak {state.status} with {state.windows_written} "
                f"windows, {have} stored: `gate resume {run_id}` stores and judges them")
    return None
