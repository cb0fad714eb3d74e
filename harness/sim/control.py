"""Start, stop and cold-restart simulated engines in the background (the demo's arm
actions, the tests' fixtures).

One engine per state dir: `spec.json` (the arguments, reused by restart), `engine.pid`
(pid and the process's start time, so a recycled pid is never signalled), `engine.url`
(written by the engine once it listens), `engine.log` (its stdout and stderr) and
`engine.spawner` (the spawner socket the last start was given, reused by restart).

An engine is a new interpreter (`python -m harness.sim`, ~0.45 s of imports) or, with
`--spawner PATH`, a fork of a pre-imported harness.sim.spawner; a spawner that does not
answer falls back to a new interpreter and says so in the log.

    python -m harness.sim.control start --state-dir D [gate sim options] [--timeout S]
                                        [--spawner PATH]
    python -m harness.sim.control stop|restart|status --state-dir D

Exit codes: 0 done / running, 1 not running (status), 3 the engine failed, 4 usage.
"""

from __future__ import annotations

import json
import os
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
from harness.sim.procs import alive, start_ticks, terminate
from harness.sim.spawn_client import SpawnerError, exit_code, spawn
from harness.sim.spec import EngineSpec

SPEC, PID, URL, LOG = "spec.json", "engine.pid", "engine.url", "engine.log"
SPAWNER = "engine.spawner"


class EngineProcessError(InfrastructureError):
    """A simulated engine did not come up, or would not go away."""


@dataclass(frozen=True)
class EngineStatus:
    running: bool
    pid: int | None
    url: str | None
    spec: EngineSpec | None


def start_engine(spec: EngineSpec, state_dir: Path, timeout: float = 30.0,
                 spawner: Path | None = None) -> int:
    """Start a detached `gate sim` and wait until /health answers 200; returns its pid.

    With `spawner` (a harness.sim.spawner socket) the engine is forked from it when it
    answers, else a new interpreter is started; restart reuses the choice."""
    spec.check()
    state_dir.mkdir(parents=True, exist_ok=True)
    current = _read_pid(state_dir)
    if current is not None and alive(*current):
        raise UsageError(f"an engine is already running here (pid {current[0]})",
                         file=str(state_dir), hint="stop it first")
    (state_dir / SPEC).write_text(spec.dumps() + "\n")
    _remember_spawner(state_dir, spawner)
    url_file = state_dir / URL
    url_file.unlink(missing_ok=True)
    engine_argv = [*spec.to_argv(), "--url-file", str(url_file)]
    command = " ".join([sys.executable, "-m", "harness.sim", *engine_argv])
    log = state_dir / LOG
    _log_line(log, f"start{f' (spawner {spawner})' if spawner else ''}: {command}")
    launched = _launch(engine_argv, log, spawner)
    pid, ticks = launched.pid, start_ticks(launched.pid)
    (state_dir / PID).write_text(f"{pid} {ticks}\n")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ended = launched.ended(ticks)
        if ended is not None:
            (state_dir / PID).unlink(missing_ok=True)
            raise EngineProcessError(f"engine {ended} at start: {_said(log)}",
                                     stage="sim start")
        if url_file.exists() and _healthy(url_file.read_text().strip()):
            return pid
        time.sleep(0.02)
    _terminate(pid, ticks, grace=2.0)
    (state_dir / PID).unlink(missing_ok=True)
    raise EngineProcessError(f"the engine was not healthy within {timeout:g} s: "
                             f"{_said(log)}", stage="sim start")


def stop_engine(state_dir: Path, grace: float = 10.0) -> bool:
    """SIGTERM, wait `grace` s, then SIGKILL. False when nothing was running."""
    current = _read_pid(state_dir)
    (state_dir / URL).unlink(missing_ok=True)
    if current is None:
        return False
    pid, ticks = current
    was_alive = alive(pid, ticks)
    if was_alive:
        _terminate(pid, ticks, grace)
    (state_dir / PID).unlink(missing_ok=True)
    return was_alive


def restart_engine(state_dir: Path, timeout: float = 30.0, grace: float = 10.0) -> int:
    """Cold restart: a new process (empty GPU cache) with the same spec; the tier is kept."""
    spec = read_spec(state_dir)
    stop_engine(state_dir, grace)
    return start_engine(spec.for_restart(), state_dir, timeout, _remembered_spawner(state_dir))


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
    running = current is not None and alive(*current)
    url_file = state_dir / URL
    url = url_file.read_text().strip() if running and url_file.exists() else None
    return EngineStatus(running, current[0] if current and running else None, url, spec)


def engine_url(state_dir: Path) -> str:
    status = engine_status(state_dir)
    if not status.running or status.url is None:
        raise UsageError("no engine is running here", file=str(state_dir))
    return status.url


# -- processes -------------------------------------------------------------------------
@dataclass(frozen=True)
class _Launched:
    pid: int
    proc: subprocess.Popen[bytes] | None  # None: forked by the spawner, not our child
    spawner: Path | None

    def ended(self, ticks: int) -> str | None:
        """None while it runs, else how it ended (for the start error)."""
        if self.proc is not None:
            code = self.proc.poll()
            return None if code is None else f"exited with code {code}"
        if alive(self.pid, ticks):
            return None
        code = self._reaped_code()
        if code is None:
            return "exited"  # forked by the spawner, which did not say its exit code
        return f"exited with code {code}"

    def _reaped_code(self) -> int | None:
        """The spawner's word on the exit code. A child seen gone may not be reaped yet
        (a zombie, on a busy host): ask for up to a second before saying none is known."""
        if self.spawner is None:
            return None
        for _ in range(10):
            code = exit_code(self.spawner, self.pid)
            if code is not None:
                return code
            time.sleep(0.1)
        return None


def _launch(argv: list[str], log: Path, spawner: Path | None) -> _Launched:
    if spawner is not None:
        try:
            return _Launched(spawn(spawner, argv, log), None, spawner)
        except SpawnerError as exc:
            _log_line(log, f"spawner {spawner} did not serve ({exc.message}): "
                           "starting a new interpreter instead")
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "harness.sim", *argv],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                start_new_session=True, close_fds=True)
    return _Launched(proc.pid, proc, None)


def _said(log: Path) -> str:
    """The engine's own last words, first: the console shows the start of an error line,
    and a command line there (already in the log) hid "address already in use"."""
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines()
                 if ln.strip() and not ln.startswith("--- ")]
    except OSError:
        lines = []
    last = lines[-1] if lines else "(it wrote nothing)"
    for prefix in ("gate: error: ", "stage sim start: "):
        last = last.removeprefix(prefix)
    return f"{last[:300]} (log: {log})"


def _log_line(log: Path, text: str) -> None:
    with open(log, "ab") as out:
        out.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} {text}\n".encode())


def _remember_spawner(state_dir: Path, spawner: Path | None) -> None:
    path = state_dir / SPAWNER
    if spawner is None:
        path.unlink(missing_ok=True)
    else:
        path.write_text(os.path.abspath(spawner) + "\n")


def _remembered_spawner(state_dir: Path) -> Path | None:
    try:
        text = (state_dir / SPAWNER).read_text().strip()
    except FileNotFoundError:
        return None
    return Path(text) if text else None


def _read_pid(state_dir: Path) -> tuple[int, int] | None:
    try:
        pid, ticks = (state_dir / PID).read_text().split()
        return int(pid), int(ticks)
    except (FileNotFoundError, ValueError):
        return None


def _terminate(pid: int, ticks: int, grace: float) -> None:
    if not terminate(pid, ticks, grace):
        raise EngineProcessError(f"pid {pid} survived SIGKILL", stage="sim stop")


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=1.0) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


# -- command line ----------------------------------------------------------------------
_state = click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path),
                      required=True, help="The engine's state dir (pid, spec, url, log).")
_timeout = click.option("--timeout", type=float, default=30.0, show_default=True,
                        help="Seconds to wait for /health 200.")
_spawner = click.option("--spawner", type=click.Path(dir_okay=False, path_type=Path),
                        default=None, help="Fork the engine from this harness.sim.spawner "
                        "socket (a new interpreter when it does not answer); kept for restart.")
_grace = click.option("--grace", type=float, default=10.0, show_default=True,
                      help="Seconds between SIGTERM and SIGKILL.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Background simulated engines: start, stop, cold-restart, status."""


@cli.command()
@_state
@_timeout
@_spawner
@engine_options
@click.pass_context
def start(ctx: click.Context, state_dir: Path, timeout: float, spawner: Path | None) -> None:
    """Start an engine (the `gate sim` options) and wait until it is healthy."""
    pid = start_engine(spec_from_context(ctx), state_dir, timeout, spawner)
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
