"""gate-agent's soak commands: a G4 soak run on the client host, detached, read by the gate.

    gate-agent soak-start --dir DIR              DIR/spec.json written by the gate
    gate-agent soak-run --dir DIR                the soak itself (what soak-start detaches)
    gate-agent soak-pull --dir DIR --after K     state + the windows after K, as JSON
    gate-agent soak-stop --dir DIR --why TEXT [--kill-after S]

The soak is harness/loadgen/soak.py, the same one `placement: local` runs on the gate's
machine; DIR is its spool (harness/loadgen/soak_spool.py: spec, state, one file per window
written whole, a stop request). `soak-pull` is what the gate runs every few seconds over
SSH, on the host the load runs on, so it imports nothing but the standard library (no
numpy, no aiohttp: the spool's layout is repeated below, and tests/unit/
test_remote_soak.py holds it to soak_spool's). A window pulled twice is the same file:
the gate stores windows by (run, index), so nothing is counted twice.
"""

from __future__ import annotations

import json
import os
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
