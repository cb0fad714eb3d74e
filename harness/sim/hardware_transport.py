"""The simulated lab's transport backend: a real host whose hardware is simulated.

Why a wrapper and not a FakeTransport: a simulated-lab host is a real machine (or a
network namespace behind a real sshd) that runs the engines, fio and the page-cache drop
for real; only the tools that describe hardware it does not have (nvidia-smi, nvme,
lspci, dcgmi ...) must answer from captured outputs. So hardware tools are answered from
the host's profile (harness.sim.hosts) and everything else goes to the real Transport.

Every simulated answer says so (CommandResult.simulated) and calls `on_simulated`, which
a gate run uses to flag itself simulated: detected from what answered, not from config.

It lives with the simulator and registers itself (entry point `gate_sim_hardware` in the
`gate.transport_backends` group, pyproject.toml), so harness.transport never imports the
simulator: a host with `gate_sim_hardware=PROFILE` gets it through `wrap`.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from harness.errors import InventoryError
from harness.sim.hosts import Catalog, HardwareProfile, load_catalog
from harness.transport import command
from harness.transport.backends import BackendHost
from harness.transport.base import Transport
from harness.transport.result import CommandResult

SIM_HARDWARE_VAR = "gate_sim_hardware"  # a profile name (harness/sim/hosts); selects wrap()
SIM_CAPTURES_VAR = "gate_sim_captures"  # a directory of one's own captures (optional)
SIM_HOME_VAR = "gate_sim_home"  # where the host's commands start, as an SSH login's (optional)


def wrap(host: BackendHost, inner: Transport) -> SimulatedHardwareTransport:
    """The registered backend: inner, with the hardware of the host's profile simulated.

    An unknown profile or a bad captures directory is a usage error naming the host.
    """
    name = str(host.vars[SIM_HARDWARE_VAR])
    extra = host.vars.get(SIM_CAPTURES_VAR)
    extra_dir = None
    if extra:
        extra_dir = Path(str(extra)).expanduser()
        if not extra_dir.is_absolute() and host.inventory_dir is not None:
            extra_dir = host.inventory_dir / extra_dir
    catalog = load_catalog(extra_dir)
    profile = catalog.get(name)
    if profile is None:
        raise InventoryError(
            f"host {host.name}: {SIM_HARDWARE_VAR}={name} is not a simulated hardware profile",
            hint=f"known: {', '.join(sorted(catalog.profiles))}")
    home = host.vars.get(SIM_HOME_VAR)
    if home:
        where = Path(str(home)).expanduser()
        if not where.is_absolute() and host.inventory_dir is not None:
            where = host.inventory_dir / where
        inner = HomeTransport(inner, where.resolve())
    return SimulatedHardwareTransport(inner, profile, catalog, host.on_simulated)


class HomeTransport:
    """`inner` (this machine) with its commands started in `home`, as an SSH login's start
    in its home directory: the load agent's relative paths (~/.gate/...) then land in the
    simulated host's own directory, not in the gate's working directory."""

    def __init__(self, inner: Transport, home: Path) -> None:
        self.inner = inner
        self.host = inner.host
        self.home = home

    def __repr__(self) -> str:
        return f"HomeTransport({self.inner!r}, {str(self.home)!r})"

    def _path(self, remote: str) -> str:
        return remote if remote.startswith("/") else str(self.home / remote)

    def run(self, argv: Sequence[str], *, timeout: float = 60, sudo: bool = False,
            env: Mapping[str, str] | None = None,
            stdin: str | bytes | None = None) -> CommandResult:
        self.home.mkdir(parents=True, exist_ok=True)
        words = command.validate_argv(argv)
        return self.inner.run(["env", "-C", str(self.home), *words], timeout=timeout,
                              sudo=sudo, env=env, stdin=stdin)

    def run_shell(self, script: str, *, timeout: float = 60, sudo: bool = False) -> CommandResult:
        self.home.mkdir(parents=True, exist_ok=True)
        return self.inner.run_shell(f"cd {shlex.quote(str(self.home))} || exit 1\n{script}",
                                    timeout=timeout, sudo=sudo)

    def put(self, local: Path, remote: str) -> None:
        self.inner.put(local, self._path(remote))

    def get(self, remote: str, local: Path) -> None:
        self.inner.get(self._path(remote), local)

    def read_file(self, remote: str) -> bytes:
        return self.inner.read_file(self._path(remote))

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> HomeTransport:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class SimulatedHardwareTransport:
    """Hardware tools answer from `profile`; every other command runs on `inner`."""

    def __init__(self, inner: Transport, profile: HardwareProfile, catalog: Catalog,
                 on_simulated: Callable[[], None] | None = None) -> None:
        self.inner = inner
        self.host = inner.host
        self.profile = profile
        self.catalog = catalog
        self._on_simulated = on_simulated
        self._tool_words = re.compile(
            r"(?<![\w./-])(?:\S*/)?(" + "|".join(re.escape(t) for t in sorted(catalog.tools))
            + r")(?![\w.-])")

    def __repr__(self) -> str:
        return f"SimulatedHardwareTransport({self.inner!r}, {self.profile.name!r})"

    @property
    def hardware(self) -> str:
        """What `gate hosts check` shows for this host (WrappedTransport)."""
        return f"simulated ({self.profile.name})"

    def _simulated(self, argv: tuple[str, ...], rc: int, stdout: str, stderr: str,
                   capture: str | None) -> CommandResult:
        if self._on_simulated is not None:
            self._on_simulated()
        return CommandResult(self.host, argv, rc, stdout, stderr, time.time(), 0.0,
                             simulated=True, capture=capture or "")

    def run(self, argv: Sequence[str], *, timeout: float = 60, sudo: bool = False,
            env: Mapping[str, str] | None = None,
            stdin: str | bytes | None = None) -> CommandResult:
        words = command.validate_argv(argv)
        if not self.catalog.simulates(words):
            return self.inner.run(words, timeout=timeout, sudo=sudo, env=env, stdin=stdin)
        answer = self.profile.answer(words, self.host)
        return self._simulated(words, answer.rc, answer.stdout, answer.stderr, answer.capture)

    def run_shell(self, script: str, *, timeout: float = 60, sudo: bool = False) -> CommandResult:
        """A script that calls a hardware tool cannot be answered piecewise: refused."""
        found = self._tool_words.search(script)
        if found is None:
            return self.inner.run_shell(script, timeout=timeout, sudo=sudo)
        return self._simulated(
            ("sh", "-c", script), 127, "",
            f"gate sim: {self.host} has simulated hardware ({self.profile.name}): a shell "
            f"script calling {found.group(1)} cannot be simulated; run the tool with an "
            f"argv (Transport.run) instead\n", None)

    def put(self, local: Path, remote: str) -> None:
        self.inner.put(local, remote)

    def get(self, remote: str, local: Path) -> None:
        self.inner.get(remote, local)

    def read_file(self, remote: str) -> bytes:
        return self.inner.read_file(remote)

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> SimulatedHardwareTransport:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
