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
The output is parsed by `parse_code_report`, a pure function; file names with a newline
are left out (and counted), the start ticks are checked before and after.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from harness.errors import ParseError

if TYPE_CHECKING:  # a type only: the report reads ModelFile without the transports
    from harness.transport.base import Transport

_FORMAT = "gate-code 1"
MIB = 1024 * 1024
WHOLE_UP_TO = 3 * MIB  # larger files are sampled (first, middle, last MiB)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Run by the process's interpreter: where each package is and its version, nothing imported.
_LOCATE = r"""import sys
import importlib.util as u
try:
    import importlib.metadata as md
except ImportError:
    md = None
def version(name):
    if md is None:
        return "-", "-"
    try:
        return name, md.version(name)
    except Exception:
        pass
    dists = []
    try:  # top_level.txt first: packages_distributions() reads every RECORD (~0.1 s)
        for d in md.distributions():
            if name in (d.read_text("top_level.txt") or "").split():
                dists = [d.metadata["Name"]]
                break
        dists = dists or md.packages_distributions().get(name) or []
    except Exception:
        dists = []
    for d in dists[:1]:
        try:
            return d, md.version(d)
        except Exception:
            pass
    return "-", "-"
for name in sys.argv[1:]:
    try:
        spec = u.find_spec(name)
    except Exception:
        spec = None
    where = list(spec.submodule_search_locations or []) if spec else []
    path = where[0] if where else (spec.origin if spec else None)
    if not path or "\n" in path or path in ("built-in", "frozen"):
        print("pkg", name, "-")
        continue
    dist, ver = version(name)
    print("pkg", name, "ok", dist.replace(" ", "_") or "-", ver.replace(" ", "_") or "-")
    print("at " + path)
"""

_SCRIPT = r"""LC_ALL=C; export LC_ALL
pid=@PID@; ticks=@TICKS@; mib=1048576
nl='
'
echo "gate-code 1 pid $pid euid $(id -u)"
hx() { printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n'; }
now() { s=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1; set -- ${s##*)}; echo "${20}"; }
digest_of() { s=$(sha256sum 2>/dev/null < "$1") || return 1; echo "${s%% *}"; }
tree() {  # files (or one file) under $1: "COUNT LISTED DIGEST", or "-"
  if [ -d "$1" ]; then
    listed=$(cd "$1" && find -L . -type f ! -path '*/__pycache__/*' \
      ! -name '*.pyc' ! -name "*$nl*" -print0 2>/dev/null | tr -dc '\000' | wc -c)
    sums=$(cd "$1" && find -L . -type f ! -path '*/__pycache__/*' \
      ! -name '*.pyc' ! -name "*$nl*" -print0 2>/dev/null | sort -z \
      | xargs -0 -r sha256sum 2>/dev/null)
  elif [ -f "$1" ]; then
    listed=1; sums=$(sha256sum 2>/dev/null < "$1") || sums=
  else echo "-"; return; fi
  n=$(printf '%s' "$sums" | grep -c .)
  d=$(printf '%s\n' "$sums" | sha256sum); echo "$n $listed ${d%% *}"
}
[ "$(now)" = "$ticks" ] || { echo gone; echo done; exit 0; }
uid=; gid=
while read -r k a rest; do
  case $k in Uid:) uid=$a ;; Gid:) gid=$a ;; esac
done 2>/dev/null < "/proc/$pid/status"
x=
if x=$(readlink "/proc/$pid/exe" 2>/dev/null); then
  echo "exe ok $(hx "$x")"
  if s=$(digest_of "/proc/$pid/exe"); then
    echo "exesum $s $(stat -L -c %s "/proc/$pid/exe" 2>/dev/null || echo -)"
  else echo "exesum -"; fi
else x=; echo "exe -"; fi
here=
if c=$(readlink "/proc/$pid/cwd" 2>/dev/null) && cd "/proc/$pid/cwd" 2>/dev/null; then
  here=1; echo "cwd ok $(hx "$c")"
else echo "cwd -"; fi
if m=$(cat "/proc/$pid/maps" 2>/dev/null) && [ -n "$m" ]; then
  printf '%s\n' "$m" | while read -r a p o d i path; do
    case $path in *.so|*.so.*|*.so" (deleted)") printf 'lib %s\n' "$path" ;; esac
  done | sort -u
  echo "libs ok"
else echo "libs -"; fi
script=@SCRIPT@
if [ -n "$script" ]; then
  if [ -n "$here" ] && s=$(digest_of "$script"); then echo "script ok $s $(hx "$script")"
  else echo "script - $(hx "$script")"; fi
fi
py=
for cand in @PYTHONS@; do
  [ -n "$here" ] && [ -n "$x" ] || break
  r=$(readlink -f -- "$cand" 2>/dev/null) || continue
  [ "$r" = "$x" ] && [ -x "$cand" ] && { py=$cand; break; }
done
pkgs=@PKGS@
if [ -n "$pkgs" ]; then
  if [ -n "$py" ]; then
    echo "python ok $(hx "$py")"
    drop=
    if [ "$(id -u)" = 0 ] && [ -n "$uid" ] && [ "$uid" != 0 ]; then
      drop="setpriv --reuid=$uid --regid=$gid --clear-groups"
      command -v setpriv >/dev/null 2>&1 || drop=
    fi
    run='p=$1; prog=$2; shift 2; exec env -i "$@" "$p" -c "$prog" '"$pkgs"
    out=$($drop xargs -0 -x -s 1048576 sh -c "$run" gate "$py" '@LOCATE@' \
      < "/proc/$pid/environ" 2>/dev/null)
    printf '%s\n' "$out" | while IFS= read -r line; do
      case $line in
        "pkg "*) echo "$line" ;;
        "at "*) loc=${line#at }; echo "pkgat $(hx "$loc")"; echo "pkgfiles $(tree "$loc")" ;;
      esac
    done
  else echo "python -"; fi
fi
found=
for m in @MODELS@; do
  [ -n "$here" ] && [ -e "$m" ] && { found=$m; break; }
done
rev=@REV@
if [ -z "$found" ]; then
  for d in @HUBS@; do
    r=$(cat "$d/refs/$rev" 2>/dev/null) || r=$rev
    [ -d "$d/snapshots/$r" ] && { found="$d/snapshots/$r"; break; }
  done
fi
if [ -n "$found" ]; then
  real=$(readlink -f -- "$found" 2>/dev/null) || real=$found
  echo "model ok $(hx "$found") $(hx "$real")"
  if [ -d "$real" ]; then dir=$real
    list=$(cd "$dir" && find -L . -maxdepth 3 -type f ! -path '*/.*' ! -name "*$nl*" | sort)
  else dir=${real%/*}; list="./${real##*/}"; fi
  printf '%s\n' "$list" | while IFS= read -r f; do
    [ -n "$f" ] || continue
    size=$(cd "$dir" && stat -L -c %s -- "$f" 2>/dev/null) || { echo "mfile - - $f"; continue; }
    if ! (cd "$dir" && [ -r "$f" ]); then s=-
    elif [ "$size" -le @WHOLE@ ]; then s=$(cd "$dir" && digest_of "$f") || s=-
    else
      s=$(cd "$dir" && { head -c $mib "$f"; dd if="$f" bs=$mib skip=$((size / 2 / mib)) \
        count=1 2>/dev/null; tail -c $mib "$f"; } 2>/dev/null | sha256sum); s=${s%% *}
    fi
    echo "mfile $size $s $f"
  done
elif [ -n "@ANYMODEL@" ]; then echo "model -"; fi
if [ "$(now)" = "$ticks" ]; then echo "end ok"; else echo "end gone"; fi
echo done
"""


@dataclass(frozen=True)
class CodeQuery:
    """What to read of one process (pid, start ticks). Paths are as the process knows
    them: relative ones are relative to its working directory."""

    pid: int
    ticks: int
    pythons: tuple[str, ...] = ()  # interpreter paths to try; the one that is the exe runs
    packages: tuple[str, ...] = ()  # top-level import names
    script: str | None = None  # a Python process's main script
    models: tuple[str, ...] = ()  # model paths to try, in order
    hubs: tuple[str, ...] = ()  # Hugging Face hub repo dirs (.../models--org--name)
    revision: str = "main"


def _words(values: tuple[str, ...]) -> str:
    return " ".join(shlex.quote(v) for v in values) if values else ""


def CODE_SCRIPT(q: CodeQuery) -> str:
    """The sh script reading what code the process (pid, start ticks) runs."""
    if not (q.pid > 0 and q.ticks >= 0):
        raise ValueError(f"not a pid / start ticks: {q.pid!r} {q.ticks!r}")
    bad = [p for p in q.packages if not _NAME.match(p)]
    if bad:
        raise ValueError(f"not a top-level package name: {bad[0]!r}")
    if any("\n" in v for v in (*q.pythons, *q.models, *q.hubs, q.script or "", q.revision)):
        raise ValueError("a path with a newline")
    fill = {"@PID@": str(q.pid), "@TICKS@": str(q.ticks), "@WHOLE@": str(WHOLE_UP_TO),
            "@SCRIPT@": shlex.quote(q.script or ""), "@PYTHONS@": _words(q.pythons),
            "@PKGS@": shlex.quote(" ".join(q.packages)), "@MODELS@": _words(q.models),
            "@HUBS@": _words(q.hubs), "@REV@": shlex.quote(q.revision),
            "@ANYMODEL@": "1" if q.models or q.hubs else "",
            "@LOCATE@": _LOCATE.replace("'", "'\\''")}
    text = _SCRIPT
    for key, value in fill.items():
        text = text.replace(key, value)
    return text


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
    digest: str | None  # whole file up to WHOLE_UP_TO, else first / middle / last MiB


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
        if not _NAME.match(rest[0]):
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
    if head[:2] != _FORMAT.split() or len(head) != 6 or head[2:5:2] != ["pid", "euid"]:
        raise _fail(lines[0][0] if lines else 1, lines[0][1] if lines else "",
                    f"not {_FORMAT!r} output")
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
