"""What code a running process is: its executable, working directory, loaded libraries,
the Python packages its interpreter imports, its main script and its model files.

Why: two engines started with the same argv and environment can still run different code
(a baseline started in a directory whose copy of the engine's package shadows the
installed one, another interpreter, a preloaded library, a swapped model directory). One
POSIX sh script per process (coreutils, findutils, grep; the process's own interpreter
only to locate its packages) reads, for the process (pid, start ticks):

- /proc/PID/exe resolved, and the sha256 of the image through /proc/PID/exe (what runs,
  even if the file was replaced on disk since);
- /proc/PID/cwd resolved; the mapped shared objects of /proc/PID/maps (`*.so*`);
- the main script of a Python process (its sha256), and each package named: the process's
  interpreter (the argv[0] that resolves to /proc/PID/exe, so a venv stays a venv) is run
  with the process's environment and working directory, as the process's user, and only
  asked where `importlib.util.find_spec(NAME)` finds it and its distribution's version
  (nothing is imported); the files there (without __pycache__) are hashed by sha256sum;
- the model files (a path relative to the process's cwd, or a Hugging Face hub snapshot):
  each file's size, resolved through symlinks, and a sha256 of the whole file up to 3 MiB,
  else of its first, middle and last MiB.
The script and what one reading asks are in harness/probes/code_script.py; its
output is parsed here by `parse_code_report`, a pure function; file names with a newline
are left out (and counted), the start ticks are checked before and after.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from harness.errors import ParseError
from harness.probes.code_script import CODE_SCRIPT, FORMAT, PACKAGE_NAME, CodeQuery

if TYPE_CHECKING:  # a type only: the report reads ModelFile without the transports
    from harness.transport.base import Transport
@dataclass(frozen=True)
class Package:
    name: str
    found: bool
    dist: str | None = None
    version: str | None = None
    location: str | None = None
    files: int | None = None  # files hashed
    listed: int | None = None  # files found there (more than hashed: some unreadable)
    digest: str | None = None


@dataclass(frozen=True)
class ModelFile:
    name: str  # relative to the model directory, "./..."
    size: int | None  # None: not readable
    digest: str | None  # whole up to code_script.WHOLE_UP_TO, else first / middle / last MiB


@dataclass(frozen=True)
class ModelFiles:
    given: str  # the path found (as tried, or the hub snapshot)
    path: str  # resolved through symlinks
    files: tuple[ModelFile, ...]


@dataclass(frozen=True)
class ProcessCode:
    """What code one process runs; None where it could not be read."""

    pid: int
    euid: int
    gone: bool = False  # exited, or its pid is another process's now
    exe: str | None = None
    exe_sha256: str | None = None
    exe_size: int | None = None
    cwd: str | None = None
    libs: tuple[str, ...] | None = None
    script: str | None = None
    script_sha256: str | None = None
    python: str | None = None  # the interpreter run to locate packages
    packages: tuple[Package, ...] = ()
    model: ModelFiles | None = None
    model_missing: bool = False  # model paths were given, none was found


def _fail(n: int, line: str, why: str) -> ParseError:
    return ParseError(f"code probe output line {n}: {why}: {line[:80]!r}", stage="code")


def _text(hexstr: str) -> str:
    return bytes.fromhex(hexstr).decode("utf-8", errors="backslashreplace")


def _opt(word: str) -> str | None:
    return None if word == "-" else word


class _Reader:
    """Accumulates one report's fields line by line."""

    def __init__(self, pid: int, euid: int) -> None:
        self.code = ProcessCode(pid, euid)
        self.libs: list[str] = []
        self.packages: list[Package] = []
        self.files: list[ModelFile] = []
        self.model: tuple[str, str] | None = None

    def line(self, word: str, rest: list[str], raw: str) -> None:
        c = self.code
        if word == "exe":
            c = replace(c, exe=_text(rest[1]) if rest[0] == "ok" else None)
        elif word == "exesum":
            c = replace(c, exe_sha256=_opt(rest[0]), exe_size=int(rest[1])
                        if len(rest) > 1 and rest[1].isdigit() else None)
        elif word == "cwd":
            c = replace(c, cwd=_text(rest[1]) if rest[0] == "ok" else None)
        elif word == "lib":
            self.libs.append(raw[4:])
        elif word == "libs":
            c = replace(c, libs=tuple(self.libs) if rest[0] == "ok" else None)
        elif word == "script":
            c = replace(c, script=_text(rest[-1]) if len(rest) > 1 else None,
                        script_sha256=rest[1] if rest[0] == "ok" else None)
        elif word == "python":
            c = replace(c, python=_text(rest[1]) if rest[0] == "ok" else None)
        elif word == "pkg":
            self.pkg(rest)
        elif word in ("pkgat", "pkgfiles"):
            self.pkg_more(word, rest)
        elif word == "model":
            self.model = (_text(rest[1]), _text(rest[2])) if rest[0] == "ok" else None
            c = replace(c, model_missing=rest[0] != "ok")
        elif word == "mfile":
            size, digest, name = rest[0], rest[1], " ".join(rest[2:])
            self.files.append(ModelFile(name, int(size) if size.isdigit() else None,
                                        _opt(digest)))
        else:
            raise ValueError("unknown line")
        self.code = c

    def pkg(self, rest: list[str]) -> None:
        if not PACKAGE_NAME.match(rest[0]):
            raise ValueError("not a package name")
        if rest[1] == "ok":
            self.packages.append(Package(rest[0], True, _opt(rest[2]), _opt(rest[3])))
        else:
            self.packages.append(Package(rest[0], False))

    def pkg_more(self, word: str, rest: list[str]) -> None:
        if not self.packages or not self.packages[-1].found:
            raise ValueError(f"{word} without a package")
        last = self.packages[-1]
        if word == "pkgat":
            last = replace(last, location=_text(rest[0]))
        elif rest[0] != "-":
            last = replace(last, files=int(rest[0]), listed=int(rest[1]), digest=rest[2])
        self.packages[-1] = last

    def done(self, gone: bool) -> ProcessCode:
        model = ModelFiles(self.model[0], self.model[1], tuple(self.files)) \
            if self.model else None
        return replace(self.code, gone=gone, packages=tuple(self.packages), model=model)


def parse_code_report(text: str) -> ProcessCode:
    """Parse CODE_SCRIPT's output. Pure; any unknown shape is a ParseError."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    head = lines[0][1].split(" ") if lines else []
    if head[:2] != FORMAT.split() or len(head) != 6 or head[2:5:2] != ["pid", "euid"]:
        raise _fail(lines[0][0] if lines else 1, lines[0][1] if lines else "",
                    f"not {FORMAT!r} output")
    pid, euid = int(head[3]), int(head[5])
    if [line for _, line in lines[1:]] == ["gone", "done"]:
        return ProcessCode(pid, euid, gone=True)
    if lines[-1][1] != "done":
        raise ParseError("code probe output ends early (no 'done'): truncated?", stage="code")
    reader = _Reader(pid, euid)
    gone = None
    for n, line in lines[1:-1]:
        word, *rest = line.split(" ")
        try:
            if word == "end":
                gone = rest != ["ok"]
            elif gone is not None:
                raise ValueError("text after 'end'")
            else:
                reader.line(word, rest, line)
        except (ValueError, IndexError) as exc:
            raise _fail(n, line, str(exc) or "unknown shape") from None
    if gone is None:
        raise ParseError("code probe output has no 'end' line", stage="code")
    return reader.done(gone)


def read_code(transport: Transport, query: CodeQuery, *, sudo: bool = False,
              timeout: float = 300) -> ProcessCode:
    """Run CODE_SCRIPT on the process's host and parse it (errors name the host)."""
    what = f"code probe (pid {query.pid})"
    result = transport.run_shell(CODE_SCRIPT(query), timeout=timeout, sudo=sudo).check("code")
    if result.truncated:
        raise ParseError("output truncated by the transport's cap", host=transport.host,
                         command=what, stage="code")
    try:
        return parse_code_report(result.stdout)
    except ParseError as exc:
        raise ParseError(exc.message, host=transport.host, command=what,
                         stage=exc.stage) from None
