"""Put gate-agent on the client host: the bundle's agent wheels for that host's Python,
copied over the Transport (only files whose sha256 changed), installed into a private venv
under the login's home (no root, no system package touched), and its version checked.

    agent = ship_agent(transport, local_agent_dir)   # -> the argv that runs gate-agent there

The venv holds only what the wheels install (installed with --no-compile, pip removed
after), and the agent runs as `venv/bin/python -I -B -m harness.remote.agent`: the gate
reads it back and hashes it on its own side before each phase (harness.remote.verify).

Reinstalls only when the wheels differ from what the venv was installed from, or the
installed agent does not answer with this gate's version.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename

from harness import __version__
from harness.bundle.local_agent import OPTIONAL, made_here
from harness.bundle.manifest import SUMS
from harness.digests import parse_sums, sha256_file, sums_text
from harness.errors import MeasurementError, UsageError
from harness.transport.base import Transport

REMOTE_ROOT = ".gate/agent"  # relative to the login's home: where SSH commands start
AGENT_MODULE = "harness.remote.agent"
# -I: no PYTHON* variables, no user site, no script dir on sys.path (a planted ~/harness
# would shadow the agent); -B: no .pyc written (none is installed either: --no-compile),
# so any .pyc in the venv is foreign (harness.remote.verify).
AGENT_FLAGS = ("-I", "-B")
# Bumped when the way the agent is installed changes: older installs are redone.
INSTALL_SCHEME = "2: --no-compile, no pip in the venv, python -I -B -m"
MIN_PYTHON = (3, 9)
# Every python3 on PATH that may be new enough, best first; each prints what it is.
PROBE = ("for p in python3 python3.13 python3.12 python3.11 python3.10 python3.9; do "
         "command -v $p >/dev/null 2>&1 && $p -c 'import sys, platform; "
         "print(sys.executable, sys.version_info[0], sys.version_info[1], "
         "platform.machine(), (platform.libc_ver()[1] or \"0.0\").split(\".\")[1])' "
         "2>/dev/null; done; df -Pk . | tail -n 1")
_DIR = re.compile(r"^py(?P<py>\d+\.\d+)-manylinux_2_(?P<glibc>\d+)_(?P<arch>\w+)$")


@dataclass(frozen=True)
class RemotePython:
    path: str
    version: tuple[int, int]
    arch: str
    glibc: int


@dataclass(frozen=True)
class Probe:
    pythons: tuple[RemotePython, ...]
    free_kb: int


def parse_probe(stdout: str) -> Probe:
    pythons, free = [], 0
    for line in stdout.strip().splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[1].isdigit():
            pythons.append(RemotePython(parts[0], (int(parts[1]), int(parts[2])), parts[3],
                                        int(parts[4]) if parts[4].isdigit() else 0))
        elif len(parts) >= 6 and parts[3].isdigit():  # df -Pk: fs blocks used avail ...
            free = int(parts[3])
    return Probe(tuple(pythons), free)


def choose(probe: Probe, local_root: Path, host: str) -> tuple[RemotePython, Path]:
    """The first new-enough Python there and the bundle's wheel dir for it."""
    usable = [p for p in probe.pythons if p.version >= MIN_PYTHON]
    if not usable:
        found = ", ".join(f"{p.path} {p.version[0]}.{p.version[1]}" for p in probe.pythons)
        raise UsageError(f"no Python 3.9 or newer for the load agent (found: {found or 'none'})",
                         host=host, hint="install python3.9+ there (RHEL 9: dnf install "
                         "python3; Ubuntu: apt-get install python3 python3-venv)")
    have = sorted(d.name for d in local_root.iterdir() if _DIR.match(d.name)) \
        if local_root.is_dir() else []
    for py in usable:
        fits = [d for d in have if (m := _DIR.match(d)) and m["arch"] == py.arch
                and m["py"] == f"{py.version[0]}.{py.version[1]}"
                and int(m["glibc"]) <= py.glibc]
        if fits:
            best = max(fits, key=lambda d: int(_DIR.match(d)["glibc"]))  # type: ignore[index]
            return py, local_root / best
    want = usable[0]
    made = made_here(local_root)
    if made is not None:
        raise UsageError(f"this gate has no bundle: the load agent's wheels it made from its "
                         f"own venv fit Python {made.get('python')} ({', '.join(have)}), the "
                         f"client has Python {want.version[0]}.{want.version[1]} on "
                         f"{want.arch} glibc 2.{want.glibc}", host=host, key="load.agent_wheels",
                         hint=f"on a connected machine, gate bundle --target manylinux_2_"
                              f"{want.glibc}_{want.arch}/{want.version[0]}.{want.version[1]}, "
                              "and set load.agent_wheels to its agent/ directory")
    raise UsageError(f"the bundle has no agent wheels for Python {want.version[0]}."
                     f"{want.version[1]} on {want.arch} glibc 2.{want.glibc} (it has: "
                     f"{', '.join(have) or 'none'})", host=host, file=str(local_root),
                     hint=f"gate bundle --target manylinux_2_{want.glibc}_{want.arch}/"
                          f"{want.version[0]}.{want.version[1]} on a connected machine")


def _remote_sums(transport: Transport, remote: str) -> dict[str, str]:
    res = transport.run(["cat", f"{remote}/{SUMS}"], timeout=30)
    return parse_sums(res.stdout) if res.ok else {}


@dataclass(frozen=True)
class Installed:
    """gate-agent on a host: how to run it, where its venv is, which wheels made it."""

    argv: list[str]
    venv: str  # relative to the login's home
    site: str  # the venv's site-packages, relative to the venv
    wheels: tuple[Path, ...]  # the local wheels shipped (the gate-side truth)


def ship_agent(transport: Transport, local_root: Path, remote_root: str = REMOTE_ROOT,
               *, timeout: float = 600) -> list[str]:
    """Install (or keep) gate-agent on the host; returns the argv that runs it there."""
    return install_agent(transport, local_root, remote_root, timeout=timeout).argv


def install_agent(transport: Transport, local_root: Path, remote_root: str = REMOTE_ROOT,
                  *, timeout: float = 600, again: bool = False) -> Installed:
    """Install (or keep) gate-agent on the host; `again` installs it afresh whatever the
    host says it has (an install found changed: harness.remote.verify)."""
    host = transport.host
    probe = parse_probe(transport.run_shell(PROBE, timeout=60).stdout)
    py, local = choose(probe, local_root, host)
    files = {p.name: sha256_file(p) for p in sorted(local.glob("*.whl"))}
    need_kb = sum(p.stat().st_size for p in local.glob("*.whl")) * 4 // 1024 + 50_000
    wheels, venv = f"{remote_root}/wheels", f"{remote_root}/venv"
    transport.run(["mkdir", "-p", wheels], timeout=30).check("agent install")
    old = _remote_sums(transport, wheels)
    changed = [n for n, h in files.items() if old.get(n) != h]
    if changed and probe.free_kb and probe.free_kb < need_kb:
        raise UsageError(f"{probe.free_kb // 1024} MB free in the home directory, the load "
                         f"agent needs about {need_kb // 1024} MB", host=host,
                         hint="free some space there")
    for name in changed:
        transport.put(local / name, f"{wheels}/{name}")
    stale = sorted(set(old) - set(files))
    if stale:
        transport.run(["rm", "-f", *[f"{wheels}/{n}" for n in stale]], timeout=30)
    sums = sums_text(files)
    marker = hashlib.sha256(f"{INSTALL_SCHEME}\n{py.path}\n{sums}".encode()).hexdigest()
    agent = [f"{venv}/bin/python", *AGENT_FLAGS, "-m", AGENT_MODULE]
    installed = transport.run(["cat", f"{remote_root}/installed"], timeout=30)
    if again or changed or installed.stdout.strip() != marker or \
            not _answers(transport, agent):
        extra = sorted({str(canonicalize_name(parse_wheel_filename(n)[0])) for n in files}
                       & set(OPTIONAL))
        _install(transport, py, wheels, venv, timeout, extra)
        with tempfile.TemporaryDirectory(prefix="gate-ship-") as tmp:
            for name, text in ((SUMS, sums), ("installed", marker + "\n")):
                (Path(tmp) / name).write_text(text)
            transport.put(Path(tmp) / SUMS, f"{wheels}/{SUMS}")
            transport.put(Path(tmp) / "installed", f"{remote_root}/installed")
        if not _answers(transport, agent):
            raise MeasurementError(f"gate-agent installed but does not answer as version "
                                   f"{__version__}", host=host, stage="agent install")
    return Installed(agent, venv, f"lib/python{py.version[0]}.{py.version[1]}/site-packages",
                     tuple(sorted(local.glob("*.whl"))))


def _answers(transport: Transport, agent: list[str]) -> bool:
    res = transport.run([*agent, "--version"], timeout=60)
    return res.ok and res.stdout.split()[:2] == ["gate-agent", __version__]


def _install(transport: Transport, py: RemotePython, wheels: str, venv: str,
             timeout: float, extra: list[str]) -> None:
    """`extra`: optional packages whose wheels were shipped too (uvloop), installed beside
    gate-agent; the agent uses them when they import."""
    transport.run([py.path, "-m", "venv", "--clear", venv], timeout=timeout).check(
        "agent install: python -m venv (Debian/Ubuntu: apt-get install python3-venv)")
    transport.run([f"{venv}/bin/python", "-m", "pip", "install", "-q",
                   "--disable-pip-version-check", "--no-input", "--no-index", "--no-compile",
                   "--find-links", wheels, f"gate-agent=={__version__}", *extra],
                  timeout=timeout,
                  env={"PIP_CONFIG_FILE": "/dev/null"}).check("agent install: pip")
    # Nothing in the venv but what the wheels install (harness.remote.verify checks it):
    # pip and setuptools (a .pth run at every start) go once the agent is in.
    transport.run([f"{venv}/bin/python", "-m", "pip", "uninstall", "-y", "-q",
                   "--disable-pip-version-check", "pip", "setuptools", "wheel"],
                  timeout=timeout, env={"PIP_CONFIG_FILE": "/dev/null"}).check(
        "agent install: pip uninstall")
    # and no .pyc: pip on some distributions (Debian's 3.11) compiles a package anyway
    transport.run(["find", venv, "-name", "__pycache__", "-prune", "-exec", "rm", "-rf",
                   "{}", "+"], timeout=timeout).check("agent install: no .pyc")
