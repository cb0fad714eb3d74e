"""gate-agent's soak commands: a G4 soak run on the client host, detached, read by the gate.

    gate-agent soak-start --dir DIR              DIR/spec.json written by the gate
    gate-agent soak-run --dir DIR                the soak itself (what soak-start detaches)
    gate-agent soak-pull --dir DIR --after K     state + the windows after K, as JSON
    gate-agent soak-stop --dir DIR --why TEXT [--kill-after S]
    gate-agent soak-clean --dir DIR --stored K   remove DIR: the gate stored windows 0..K
    gate-agent soak-clean --root ROOT --older-than DAYS   remove ended spools not written since

The soak is harness/loadgen/soak.py, the same one `placement: local` runs on the gate's
machine; DIR is its spool (harness/loadgen/soak_spool.py: spec, state, one file per window
written whole, a stop request). `soak-pull` is what the gate runs every few seconds over
SSH, on the host the load runs on, so it imports nothing but the standard library (no
numpy, no aiohttp: the spool's layout is repeated below, and tests/unit/
test_remote_soak.py holds it to soak_spool's). A window pulled twice is the same file:
the gate stores windows by (run, index), so nothing is counted twice.

`soak-clean` removes a spool once nothing in it is needed: never while its soak runs,
never with a window the gate has not stored (a resume needs it); the gate runs it after
a soak's windows are stored, and with --older-than at each soak's start for spools whose
viewer never came back.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from harness.remote import detach

# the spool's layout (harness/loadgen/soak_spool.py)
SPEC, STATE, STOP, WINDOWS = "spec.json", "state.json", "stop", "windows"
ENDED = ("done", "stopped", "failed")
RUN = "soak-run"
PULL_LIMIT = 1000  # windows per pull (~1 KB each); the gate pulls again for the rest


def read_state(directory: Path) -> dict[str, Any] | None:
    try:
        state = json.loads((directory / STATE).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def running(pid: Any, directory: Path) -> bool:
    """`pid` runs and is this directory's soak (a reused pid is someone else's)."""
    if not isinstance(pid, int) or pid <= 0 or not detach.alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return RUN.encode() in cmdline and str(directory).encode() in cmdline


def start(directory: Path) -> int:
    """Start the soak of DIR detached and return at once; a second start is refused (the
    gate re-attaches to a soak, it never starts two)."""
    if not (directory / SPEC).is_file():
        print(f"gate-agent: {directory / SPEC}: no soak spec", file=sys.stderr)
        return 4
    if (directory / STATE).exists():
        print(f"gate-agent: {directory} already holds a soak", file=sys.stderr)
        return 4
    (directory / WINDOWS).mkdir(exist_ok=True)
    how, pid = detach.start_argv(detach.agent_argv(RUN, "--dir", str(directory)), directory,
                                 f"gate-soak-{directory.name}")
    if pid is not None:  # the soak replaces it with its own word once it runs
        first = {"status": "starting", "pid": pid, "started_at": 0.0,
                 "updated_at": time.time(), "windows_written": 0}
        tmp = directory / f".{STATE}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(first))
        try:
            os.link(tmp, directory / STATE)  # only where the soak wrote none yet
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    print(json.dumps({"how": how, "pid": pid}))
    return 0


def run(directory: Path) -> int:
    from harness.loadgen import soak  # numpy and aiohttp: only the soak itself needs them

    return soak.run(directory)


def pull(directory: Path, after: int, limit: int = PULL_LIMIT) -> int:
    """One line of JSON: the soak's state, whether its process runs, this host's clock
    (the gate places the soak's start on its own clock with it), the windows written
    after index `after` (whole files only: one being written has a temporary name), and
    the log's last lines."""
    state = read_state(directory)
    found = []
    try:
        names = os.listdir(directory / WINDOWS)
    except FileNotFoundError:
        names = []
    for name in names:
        stem, dot, ext = name.partition(".")
        if dot and ext == "json" and stem.isdigit() and int(stem) > after:
            found.append(int(stem))
    found.sort()
    windows = []
    for k in found[:limit]:
        try:
            windows.append(json.loads((directory / WINDOWS / f"{k:06d}.json").read_text()))
        except (OSError, ValueError):
            break  # never skip one: the next pull starts here again
    answer = {"state": state, "alive": running((state or {}).get("pid"), directory),
              "now": time.time(), "windows": windows, "more": len(found) > len(windows),
              "log": detach.log_tail(directory)}
    sys.stdout.write(json.dumps(answer, separators=(",", ":")) + "\n")
    return 0


def stop(directory: Path, why: str, kill_after: float | None) -> int:
    """Ask the soak to stop (it waits for the requests in flight and writes its whole
    windows); with `kill_after`, also TERM its session now and KILL it after that many
    seconds. One line of JSON: pid, was_alive, alive, status."""
    (directory / STOP).write_text(why or "stop requested")
    state = read_state(directory) or {}
    pid = state.get("pid") if isinstance(state.get("pid"), int) else None
    was_alive = running(pid, directory)
    if pid is not None and was_alive and kill_after is not None:
        detach.terminate(pid, kill_after, lambda p: running(p, directory))
    after = read_state(directory) or {}
    print(json.dumps({"pid": pid, "was_alive": was_alive,
                      "alive": running(pid, directory), "status": after.get("status"),
                      "windows_written": after.get("windows_written"),
                      "log": detach.log_tail(directory)}))
    return 0


def _window_indices(directory: Path) -> list[int]:
    try:
        names = os.listdir(directory / WINDOWS)
    except FileNotFoundError:
        return []
    return sorted(int(stem) for stem, dot, ext in (n.partition(".") for n in names)
                  if dot and ext == "json" and stem.isdigit())


def _why_kept(directory: Path, stored: int | None) -> str | None:
    """Why the spool must stay (None: it may go): a soak that runs there, or a window
    written after the last one the gate stored (`stored` None: the age alone decides)."""
    if not directory.is_dir():
        return "no such spool"
    if not (directory / SPEC).is_file() and not (directory / STATE).is_file():
        return "not a soak's spool"
    state = read_state(directory)
    if running((state or {}).get("pid"), directory):
        return "its soak is running"
    if stored is not None:
        if state is None:
            return "no state: the soak never ran (its log stays for a look)"
        left = [k for k in _window_indices(directory) if k > stored]
        if left:
            return f"{len(left)} window(s) after {stored} not stored yet"
    return None


def _last_write(directory: Path) -> float:
    paths = [directory, directory / STATE, directory / WINDOWS, directory / detach.LOG]
    return max((p.stat().st_mtime for p in paths if p.exists()), default=0.0)


def clean(directories: list[Path], stored: int | None, older_than_s: float | None) -> int:
    """Remove each spool that may go (see _why_kept; with `older_than_s`, also not
    written for that long). One line of JSON: removed (names), kept (name -> why)."""
    removed, kept = [], {}
    now = time.time()
    for directory in directories:
        why = _why_kept(directory, stored)
        if why is None and older_than_s is not None \
                and now - _last_write(directory) < older_than_s:
            why = "written recently"
        if why is None:
            shutil.rmtree(directory, ignore_errors=True)
            why = "could not be removed" if directory.exists() else None
        if why is None:
            removed.append(directory.name)
        else:
            kept[directory.name] = why
    print(json.dumps({"removed": removed, "kept": kept}))
    return 0


def spools(root: Path) -> list[Path]:
    """The soak spools under root (~/.gate/soaks): every directory holding a spec or
    a state; anything else there is not the agent's to remove."""
    try:
        found = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())
    except FileNotFoundError:
        return []
    return [p for p in found if (p / SPEC).is_file() or (p / STATE).is_file()]
