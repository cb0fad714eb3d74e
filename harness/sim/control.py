"""Start, stop and cold-restart simulated engines in the background (the demo's arm
actions, the tests' fixtures).

One engine per state dir: `spec.json` (the arguments, reused by restart), `engine.pid`
(pid and the process's start time, so a recycled pid is never signalled), `engine.url`
(written by the engine once it listens) and `engine.log` (its stdout and stderr).

    python -m harness.sim.control start --state-dir D [gate sim options] [--timeout S]
    python -m harness.sim.control stop|restart|status --state-dir D

Exit codes: 0 done / running, 1 not running (status), 3 the engine failed, 4 usage.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import click

from harness.errors import InfrastructureError, UsageError
from harness.sim.options import engine_options, spec_from_context
from harness.sim.spec import EngineSpec

SPEC, PID, URL, LOG = "spec.json", "engine.pid", "engine.url", "engine.log"


class EngineProcessError(InfrastructureError):
    """A simulated engine did not come up, or would not go away."""


@dataclass(frozen=True)
class EngineStatus:
    running: bool
    pid: int | None
    url: str | None
    spec: EngineSpec | None


def start_engine(spec: EngineSpec, state_dir: Path, timeout: float = 30.0) -> int:
    """Spawn a detached `gate sim` and wait until /health answers 200; returns its pid."""
    spec.check()
    state_dir.mkdir(parents=True, exist_ok=True)
    current = _read_pid(state_dir)
    if current is not None and _alive(*current):
        raise UsageError(f"an engine is already running here (pid {current[0]})",
                         file=str(state_dir), hint="stop it first")
    (state_dir / SPEC).write_text(spec.dumps() + "\n")
    url_file = state_dir / URL
    url_file.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "harness.sim", *spec.to_argv(), "--url-file", str(url_file)]
    with open(state_dir / LOG, "ab") as log:
        log.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} start: {' '.join(argv)}\n"
                  .encode())
        log.flush()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True, close_fds=True)
    (state_dir / PID).write_text(f"{proc.pid} {_start_ticks(proc.pid)}\n")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            (state_dir / PID).unlink(missing_ok=True)
            raise EngineProcessError(f"the engine exited with code {code} during start: "
                                     f"{_tail(state_dir / LOG)}", stage="sim start",
                                     command=" ".join(argv))
        if url_file.exists() and _healthy(url_file.read_text().strip()):
            return proc.pid
        time.sleep(0.02)
    _terminate(proc.pid, _start_ticks(proc.pid), grace=2.0)
    (state_dir / PID).unlink(missing_ok=True)
    raise EngineProcessError(f"the engine was not healthy within {timeout:g} s: "
                             f"{_tail(state_dir / LOG)}", stage="sim start",
                             command=" ".join(argv))


def stop_engine(state_dir: Path, grace: float = 10.0) -> bool:
    """SIGTERM, wait `grace` s, then SIGKILL. False when nothing was running."""
    current = _read_pid(state_dir)
    (state_dir / URL).unlink(missing_ok=True)
    if current is None:
        return False
    pid, ticks = current
    was_alive = _alive(pid, ticks)
    if was_alive:
        _terminate(pid, ticks, grace)
    (state_dir / PID).unlink(missing_ok=True)
    return was_alive


def restart_engine(state_dir: Path, timeout: float = 30.0, grace: float = 10.0) -> int:
    """Cold restart: a new process (empty GPU cache) with the same spec; the tier is kept."""
    spec = read_spec(state_dir)
    stop_engine(state_dir, grace)
    return start_engine(spec.for_restart(), state_dir, timeout)


def read_spec(state_dir: Path) -> EngineSpec:
    path = state_dir / SPEC
    try:
        return EngineSpec.from_json(json.loads(path.read_text()))
    except FileNotFoundError:
        raise UsageError("no engine was started here", file=str(path)) from None
    except (ValueError, TypeError) as exc:
        raise UsageError(f"unreadable engine spec: {exc}", file=str(path)) from exc


def engine_status(state_dir: Path) -> EngineStatus:
    current = _read_pid(state_dir)
    spec = read_spec(state_dir) if (state_dir / SPEC).exists() else None
    running = current is not None and _alive(*current)
    url_file = state_dir / URL
    url = url_file.read_text().strip() if running and url_file.exists() else None
    return EngineStatus(running, current[0] if current and running else None, url, spec)


def engine_url(state_dir: Path) -> str:
    status = engine_status(state_dir)
    if not status.running or status.url is None:
        raise UsageError("no engine is running here", file=str(state_dir))
    return status.url


# -- processes -------------------------------------------------------------------------
def _read_pid(state_dir: Path) -> tuple[int, int] | None:
    try:
        pid, ticks = (state_dir / PID).read_text().split()
        return int(pid), int(ticks)
    except (FileNotFoundError, ValueError):
        return None


def _start_ticks(pid: int) -> int:
    """Field 22 of /proc/PID/stat: the process's start time (guards against pid reuse)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[19])


def _alive(pid: int, ticks: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:  # our own child, now reaped
            return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[1].split()
    return state[0] != "Z" and (ticks == 0 or int(state[19]) == ticks)


def _terminate(pid: int, ticks: int, grace: float) -> None:
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not _alive(pid, ticks):
                return
            time.sleep(0.01)
    raise EngineProcessError(f"pid {pid} survived SIGKILL", stage="sim stop")


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=1.0) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _tail(log: Path, lines: int = 3) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) + f" (log: {log})"


# -- command line ----------------------------------------------------------------------
_state = click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path),
                      required=True, help="The engine's state dir (pid, spec, url, log).")
_timeout = click.option("--timeout", type=float, default=30.0, show_default=True,
                        help="Seconds to wait for /health 200.")
_grace = click.option("--grace", type=float, default=10.0, show_default=True,
                      help="Seconds between SIGTERM and SIGKILL.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Background simulated engines: start, stop, cold-restart, status."""


@cli.command()
@_state
@_timeout
@engine_options
@click.pass_context
def start(ctx: click.Context, state_dir: Path, timeout: float) -> None:
    """Start an engine (the `gate sim` options) and wait until it is healthy."""
    pid = start_engine(spec_from_context(ctx), state_dir, timeout)
    click.echo(f"started pid {pid} at {engine_url(state_dir)}")


@cli.command()
@_state
@_grace
def stop(state_dir: Path, grace: float) -> None:
    """Stop the engine (SIGTERM, then SIGKILL after the grace period)."""
    click.echo("stopped" if stop_engine(state_dir, grace) else "was not running")


@cli.command()
@_state
@_timeout
@_grace
def restart(state_dir: Path, timeout: float, grace: float) -> None:
    """Cold restart with the same options: GPU cache cleared, tier kept."""
    pid = restart_engine(state_dir, timeout, grace)
    click.echo(f"restarted pid {pid} at {engine_url(state_dir)}")


@cli.command()
@_state
def status(state_dir: Path) -> None:
    """Print running / stopped; exit 1 when stopped."""
    st = engine_status(state_dir)
    if st.running:
        click.echo(f"running pid {st.pid} at {st.url}")
    else:
        click.echo("stopped")
        sys.exit(1)


def main(argv: list[str] | None = None) -> None:
    from harness.errors import GateError

    try:
        cli.main(args=argv, prog_name="python -m harness.sim.control", standalone_mode=False)
    except GateError as exc:
        click.echo(f"gate sim control: error: {exc.one_line()}", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(4)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
