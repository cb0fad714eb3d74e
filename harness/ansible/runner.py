"""run_playbook: a thin adapter over ansible-runner, one private_data_dir per run.

Why: playbooks (facts, serve, drop caches, logs) run with the site inventory and the same
known_hosts the SSH transport uses; their per-host task results become events (store +
progress), facts come from the setup task's event (the fact cache is empty on 2.19), and a
failure is a PlaybookError naming host, task and message, unreachable kept distinct.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from harness.ansible.events import AnsibleEvent, facts_of, failures, parse_event
from harness.ansible.setup import ansible_cfg, ssh_config, unsafe_yaml
from harness.config.inventory import load_inventory
from harness.errors import PlaybookError, UsageError

BECOME_PROMPT = r"^BECOME password.*:\s*?$"
# ansible-runner looks at the cancel callback every pexpect_timeout (5 s), then kills.
_CANCEL_WAIT = 30.0
_CONTROL_PATH_MAX = 60  # + "/" + a 40-char hash must fit a unix socket path (108)


@dataclass
class PlaybookResult:
    playbook: Path
    status: str  # successful | failed | timeout | canceled
    rc: int
    events: list[AnsibleEvent] = field(default_factory=list)
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    private_data_dir: Path = Path()
    duration: float = 0.0

    def hosts(self, status: str) -> list[str]:
        return sorted({e.host for e in self.events if e.status == status})


class PlaybookFailure(PlaybookError):
    """PlaybookError that also carries the run's result (events, facts) for the record."""

    def __init__(self, message: str, *, result: PlaybookResult, host: str | None = None,
                 task: str | None = None, unreachable: bool = False) -> None:
        super().__init__(message, host=host, task=task, unreachable=unreachable)
        self.result = result


def playbook_path(name: str | Path) -> Path:
    """A playbook shipped in the package (`serve.yml`), or an existing path as given."""
    p = Path(name).expanduser()
    if p.is_file():
        return p.resolve()
    if p.parent == Path("."):
        shipped = Path(str(resources.files("harness.playbooks").joinpath(p.name)))
        if shipped.is_file():
            return shipped
    raise UsageError(f"playbook {name} not found (neither a file nor one of gate's playbooks)",
                     file=str(name))


def _env(pdd: Path, control_dir: Path) -> dict[str, str]:
    venv_bin = str(Path(sys.executable).parent)
    return {
        "PATH": venv_bin + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
        "ANSIBLE_CONFIG": str(pdd / "ansible.cfg"),
        "ANSIBLE_HOME": str(pdd / "home"),
        "ANSIBLE_LOCAL_TEMP": str(pdd / "tmp"),
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(control_dir),
        "ANSIBLE_SSH_ARGS": f"-F {shlex.quote(str(pdd / 'ssh_config'))} -C "
                            "-o ControlMaster=auto -o ControlPersist=30s",
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
    }


def _stop_masters(control_dir: Path) -> None:
    """End the ControlPersist ssh masters this run started, then remove their sockets."""
    for sock in control_dir.glob("*"):
        with contextlib.suppress(Exception):
            subprocess.run(["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "gate-control"],
                           capture_output=True, timeout=10)


def run_playbook(playbook: str | Path, *, inventory: Path, known_hosts: Path,
                 limit: str | None, extravars: Mapping[str, object], artifact_dir: Path,
                 on_event: Callable[[AnsibleEvent], None] | None = None,
                 verbose: bool = False, timeout: float | None = None,
                 become_password: str | None = None,
                 cancel: threading.Event | None = None) -> PlaybookResult:
    """Run one playbook; the result on success, PlaybookError (PlaybookFailure) otherwise.

    extravars are passed as data (never templated); `gate_artifact_dir` is added (the
    directory playbooks write fetched files to) unless given. become_password answers
    Ansible's BECOME prompt and is written nowhere. Setting `cancel` (from another
    thread) stops the playbook like an interrupt does and raises PlaybookCancelled.
    """
    import ansible_runner

    book = playbook_path(playbook)
    inv = load_inventory(inventory)
    artifact_dir = Path(artifact_dir).resolve()
    stamp = time.strftime("%Y%m%dT%H%M%S")
    pdd = artifact_dir / f"ansible-{book.stem}-{stamp}-{secrets.token_hex(3)}"
    (pdd / "home").mkdir(parents=True)
    (pdd / "tmp").mkdir()
    control_dir = pdd / "cp"
    if len(str(control_dir)) > _CONTROL_PATH_MAX:
        control_dir = Path(tempfile.mkdtemp(prefix="gate-cp-"))
    else:
        control_dir.mkdir()
    (pdd / "ssh_config").write_text(ssh_config(inv, known_hosts))
    (pdd / "ansible.cfg").write_text(ansible_cfg())
    data = {"gate_artifact_dir": str(artifact_dir), **dict(extravars)}
    (pdd / "extravars.yml").write_text(unsafe_yaml(data) + "\n")
    cmdline = ["-e", "@" + str(pdd / "extravars.yml")]
    if become_password is not None:
        cmdline.append("--ask-become-pass")
    events: list[AnsibleEvent] = []

    def handle(raw: dict[str, Any]) -> bool:
        if verbose and raw.get("stdout"):
            print(raw["stdout"], file=sys.stderr, flush=True)
        ev = parse_event(raw)
        if ev is not None:
            events.append(ev)
            if on_event is not None:
                on_event(ev)
        return True

    t0 = time.monotonic()
    try:
        r = _run_interruptibly(str(pdd), cancel, lambda stop: ansible_runner.run(
            private_data_dir=str(pdd), playbook=str(book), project_dir=str(book.parent),
            inventory=str(inv.path), limit=limit, cmdline=shlex.join(cmdline),
            envvars=_env(pdd, control_dir), event_handler=handle, quiet=True,
            passwords={BECOME_PROMPT: become_password} if become_password is not None else None,
            timeout=int(timeout) if timeout else None, ident="run", rotate_artifacts=0,
            suppress_env_files=True,  # env/passwords would hold the become password
            cancel_callback=stop,
        ))
    finally:
        _stop_masters(control_dir)
        if control_dir.parent != pdd:
            shutil.rmtree(control_dir, ignore_errors=True)
    result = PlaybookResult(book, str(r.status), int(r.rc or 0), events, facts_of(events), pdd,
                            time.monotonic() - t0)
    _raise_for(result, r, timeout)
    return result


class PlaybookCancelled(PlaybookError):
    """The playbook was stopped because the gate run was interrupted (its cancel event)."""


def _run_interruptibly(marker: str, cancel: threading.Event | None,
                       run: Callable[[Callable[[], bool]], Any]) -> Any:
    """Run ansible-runner in a worker thread; an interrupt of the caller cancels it.

    Why: called from the main thread without a cancel callback, ansible-runner installs
    SIGTERM / SIGINT handlers of its own and never restores them, so after one playbook
    `gate run` could no longer be stopped (and a SIGTERM became a "canceled" playbook
    failure). In a worker thread it touches no handler; a KeyboardInterrupt (gate's
    SIGTERM) in the waiting thread sets the cancel event, ansible-runner kills the
    playbook, and the interrupt goes on to the caller; `cancel`, set by another thread (an
    arm's instances act in parallel), does the same. Ansible's forked workers run in
    sessions of their own, which ansible-runner's kill misses: they are found by
    `marker` (the private data dir, in their inherited command line) and killed too.
    """
    stop, done = threading.Event(), threading.Event()
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["result"] = run(stop.is_set)
        except BaseException as exc:  # handed to the caller's thread below
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="gate-ansible", daemon=True).start()
    # An Event, not Thread.join: a signal raised inside join() makes CPython 3.11 mark the
    # still-running thread as stopped (bpo-45274), and the cancel below would not wait.
    try:
        while not done.wait(0.2):
            if cancel is not None and cancel.is_set():
                raise PlaybookCancelled("cancelled: the gate run was interrupted",
                                        stage="playbook")
    except BaseException:
        stop.set()
        done.wait(_CANCEL_WAIT)
        _kill_groups_naming(marker)
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def _kill_groups_naming(marker: str) -> None:
    """SIGKILL the process group of every process whose command line contains marker."""
    needle = marker.encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if needle not in (proc / "cmdline").read_bytes():
                continue
            os.killpg(os.getpgid(int(proc.name)), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            continue  # gone meanwhile, or not ours to signal


def _raise_for(result: PlaybookResult, r: Any, timeout: float | None) -> None:
    name = result.playbook.name
    bad = failures(result.events)
    if bad:
        first = bad[0]
        others = sorted({e.host for e in bad} - {first.host})
        more = f" (also failed: {', '.join(others)})" if others else ""
        what = "unreachable" if first.status == "unreachable" else f"task {first.task!r} failed"
        raise PlaybookFailure(f"{name}: {what}: {first.message}{more}", result=result,
                              host=first.host, task=first.task,
                              unreachable=first.status == "unreachable")
    if result.status == "timeout":
        raise PlaybookFailure(f"{name}: timed out after {timeout:g}s", result=result)
    if result.status != "successful":
        raise PlaybookFailure(f"{name}: ansible-playbook {result.status} (rc {result.rc}): "
                              f"{_stdout_tail(r)}", result=result)


def _stdout_tail(r: Any) -> str:
    try:
        text = str(r.stdout.read())
    except Exception:  # a run that never started has no stdout file
        return "no output"
    lines = [ln for ln in re.sub(r"\x1b\[[0-9;]*m", "", text).splitlines() if ln.strip()]
    errors = [ln for ln in lines if "ERROR" in ln or "error" in ln.lower()]
    return " | ".join((errors or lines)[-4:])[-1500:] or "no output"
