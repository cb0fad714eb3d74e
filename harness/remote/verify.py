"""The load agent on the client host, verified on the gate's side before (and after) each
phase: the host's own checksums are not trusted.

What is compared: the files the agent's wheels install (every RECORD row of the wheels
the gate shipped, with its sha256), read back over the Transport and hashed here. Once,
before a run's first phase, everything under the venv's site-packages is read (a tar of
it, ~65 MB with numpy), and anything the wheels did not install is refused too: a `.pth`,
a `sitecustomize.py`, a module shadowing an optional import (uvloop), a `__pycache__`
(the agent is installed with `--no-compile` and runs with `-I -B`, so no .pyc is ever
legitimately there: a planted one would run instead of its source). Then, before and
after every phase, one command lists the whole venv (type, size, mtime, ctime, inode,
link target) and streams the gate-agent distribution's own files (~160 KB): any entry
that differs from the first read, or a file that differs from the wheel, is an ERROR
naming the host and the file, and the phase is not measured (or its result not used).
An edit changes a file's ctime, which a user cannot set back.

What is not covered: the client's Python itself and its standard library (outside the
venv), and a host whose root lies (a rigged tar or kernel): the gate-side comparison of
the two clocks (the engine's own latency counters) is what holds against that.
"""

from __future__ import annotations

import base64
import binascii
import csv
import hashlib
import io
import shlex
import tarfile
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import MeasurementError
from harness.transport.base import Transport

STAGE = "load agent check"
AGENT_DIST = "gate_agent"
# What pip writes into a distribution's .dist-info beside the wheel's own files.
PIP_WRITES = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})
LIST = r"find . -printf '%y\t%s\t%T@\t%C@\t%i\t%P\t%l\n'"
SEP = "\x1e"


@dataclass(frozen=True)
class Shipped:
    """What the gate's wheels install into site-packages."""

    files: dict[str, str]  # path -> sha256 as RECORD writes it (urlsafe base64, no padding)
    dist_infos: frozenset[str]  # the wheels' .dist-info directories
    agent_files: tuple[str, ...]  # the gate-agent distribution's own files


def record_digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def shipped(wheels: Sequence[Path]) -> Shipped:
    """Read from the wheels themselves (their RECORD), on the gate's side."""
    files: dict[str, str] = {}
    infos: set[str] = set()
    agent: list[str] = []
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            record = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
            infos.add(record.split("/", 1)[0])
            rows = csv.reader(io.StringIO(z.read(record).decode("utf-8")))
            for row in rows:
                if len(row) >= 2 and row[1].startswith("sha256="):
                    files[row[0]] = row[1].removeprefix("sha256=")
                    if wheel.name.startswith(f"{AGENT_DIST}-"):
                        agent.append(row[0])
    return Shipped(files, frozenset(infos), tuple(sorted(agent)))


@dataclass(frozen=True)
class Entry:
    kind: str  # find's %y: f file, d directory, l symlink
    size: str
    mtime: str
    ctime: str
    inode: str
    target: str  # a symlink's target


def parse_listing(text: str) -> dict[str, Entry]:
    """find's lines (LIST) by path relative to the venv."""
    out: dict[str, Entry] = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 7:
            kind, size, mtime, ctime, inode, path, target = parts
            out[path] = Entry(kind, size, mtime, ctime, inode, target)
    return out


def changes(before: Mapping[str, Entry], now: Mapping[str, Entry]) -> list[str]:
    """Paths added, removed or changed (content, mode of change, inode) since `before`."""
    found = [f"{p} (added)" for p in sorted(set(now) - set(before))]
    found += [f"{p} (removed)" for p in sorted(set(before) - set(now))]
    found += [f"{p} (changed)" for p in sorted(set(now) & set(before)) if now[p] != before[p]]
    return found


def tree_problems(listing: Mapping[str, Entry], ship: Shipped, site: str,
                  pyvenv: str) -> list[str]:
    """What the venv holds beyond (or short of) what the wheels install, and a venv that
    would reach packages outside itself."""
    prefix = site.rstrip("/") + "/"
    problems = []
    for path, entry in sorted(listing.items()):
        if not path.startswith(prefix) or entry.kind == "d":
            continue
        rel = path[len(prefix):]
        info, _, name = rel.partition("/")
        if rel in ship.files or (info in ship.dist_infos and name in PIP_WRITES):
            continue
        problems.append(f"{path} (not installed by the gate's wheels)")
    problems += [f"{prefix}{rel} (missing)" for rel in sorted(ship.files)
                 if f"{prefix}{rel}" not in listing]
    python = listing.get("bin/python")
    if python is None or python.kind != "l":
        problems.append("bin/python (not the venv's link to the host's Python)")
    if "include-system-site-packages = false" not in pyvenv:
        problems.append("pyvenv.cfg (the venv would see the system's packages)")
    return problems


def content_problems(members: Mapping[str, bytes], ship: Shipped,
                     expected: Sequence[str]) -> list[str]:
    """Each of `expected` (site-packages paths) read back and hashed here, against the
    wheel's RECORD."""
    problems = []
    for rel in expected:
        data = members.get(rel)
        if data is None:
            problems.append(f"{rel} (not read back)")
        elif record_digest(data) != ship.files[rel]:
            problems.append(f"{rel} (differs from the wheel the gate shipped)")
    return problems


def tar_members(data: bytes) -> dict[str, bytes]:
    """Regular files of a tar, by path without a leading `./`."""
    out: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar:
            if member.isfile():
                f = tar.extractfile(member)
                if f is not None:
                    out[member.name.removeprefix("./")] = f.read()
    return out


@dataclass
class AgentGuard:
    """Verifies the installed agent for one RemoteExecutor: `check()` before and after
    each phase. The first check reads everything; `reship` (the gate's own install, run
    again) replaces an install found different before any phase of this run."""

    transport: Transport
    venv: str  # relative to the login's home
    site: str  # site-packages, relative to the venv
    ship: Shipped
    reship: Callable[[], None] | None = None
    baseline: dict[str, Entry] | None = None
    timings: list[float] = field(default_factory=list)  # seconds per check, for the docs

    @property
    def host(self) -> str:
        return str(getattr(self.transport, "host", "client"))

    def _fail(self, problems: Sequence[str], when: str) -> MeasurementError:
        more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
        return MeasurementError(f"the load agent on {self.host} is not what the gate shipped "
                                f"({when}): {problems[0]}{more}; no phase is measured on it",
                                host=self.host, stage=STAGE)

    def check(self) -> None:
        started = time.monotonic()
        if self.baseline is None:
            self._first()
        else:
            self._again()
        self.timings.append(time.monotonic() - started)

    def _first(self) -> None:
        problems = self._read_all()
        if problems and self.reship is not None:
            self.reship()  # an install changed before this run: the gate's own, again
            problems = self._read_all()
        if problems:
            raise self._fail(problems, "read back before the run's first phase")

    def _read_all(self) -> list[str]:
        tar = f"{self.venv}.check.tar"
        script = (f"cd {shlex.quote(self.venv)} && {LIST} && printf '{SEP}\\n' && "
                  f"cat pyvenv.cfg && tar -cf ../{shlex.quote(Path(tar).name)} "
                  f"-C {shlex.quote(self.site)} .")
        res = self.transport.run_shell(script, timeout=300).check(STAGE)
        listing_text, _, pyvenv = res.stdout.partition(f"{SEP}\n")
        try:
            members = tar_members(self.transport.read_file(tar))
        finally:
            self.transport.run(["rm", "-f", tar], timeout=30)
        listing = parse_listing(listing_text)
        problems = tree_problems(listing, self.ship, self.site, pyvenv)
        problems += content_problems(members, self.ship, sorted(self.ship.files))
        if not problems:
            self.baseline = listing
        return problems

    def _again(self) -> None:
        assert self.baseline is not None
        names = " ".join(shlex.quote(f) for f in self.ship.agent_files)
        script = (f"cd {shlex.quote(self.venv)} && {LIST} && printf '{SEP}\\n' && "
                  f"tar -cf - -C {shlex.quote(self.site)} {names} | base64 -w0")
        res = self.transport.run_shell(script, timeout=120).check(STAGE)
        listing_text, _, encoded = res.stdout.partition(f"{SEP}\n")
        problems = changes(self.baseline, parse_listing(listing_text))
        try:
            members = tar_members(binascii.a2b_base64(encoded.strip()))
        except (binascii.Error, tarfile.TarError):
            members = {}
        problems += content_problems(members, self.ship, self.ship.agent_files)
        if problems:
            raise self._fail(problems, "changed since the gate verified it")
