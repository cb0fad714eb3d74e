"""The sh script that reads what code a running process is (harness/probes/process_code.py
says what it reads and why, and parses its output).

Its own module because the script is the one thing here that runs on the engine's host:
its text, the Python snippet the engine's own interpreter is asked to run, and what one
reading asks (CodeQuery).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

FORMAT = "gate-code 1"  # the first line's first two words
MIB = 1024 * 1024
WHOLE_UP_TO = 3 * MIB  # larger files are sampled (first, middle, last MiB)
PACKAGE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

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
    bad = [p for p in q.packages if not PACKAGE_NAME.match(p)]
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
