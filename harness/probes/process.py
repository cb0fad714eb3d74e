"""Which process listens on a TCP port, what it was started with; stopping it safely.

Why /proc through the Transport: G3 compares what actually runs on each endpoint, not what
the config says was launched. The scripts are POSIX sh over Linux /proc with coreutils
(od, ls, cat, readlink, tr, id) and grep only. cmdline, environ, comm and exe travel
hex-encoded (`od -An -v -tx1`), so NULs and odd bytes cross intact. A process is named by
(pid, start ticks = field 22 of /proc/PID/stat), so a recycled pid is never taken for, or
signalled as, the engine. Without root a user sees only its own processes: a socket whose
owner it cannot see is `ListenerReport.hidden`, an unreadable environ `env=None`. The
parser hashes secrets (harness.probes.redact) before any caller sees them.
Limits: only the host's network namespace is searched (a containerised engine shows as
its port proxy, or not at all); the pid check before a signal leaves a microseconds'
window that only a pidfd could close.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from harness.errors import MeasurementError, ParseError, TransportError
from harness.probes.redact import redact_argv, redact_env
from harness.transport.base import Transport

_FORMAT = "gate-listeners 1"
T = TypeVar("T")

_LISTENER = r"""LC_ALL=C; export LC_ALL
port=@PORT@; hex=$(printf '%04X' "$port")
echo "gate-listeners 1 port $port euid $(id -u)"
hexof() { od -An -v -tx1 | tr -d ' \n'; }
inodes=; tables=0
for t in /proc/net/tcp /proc/net/tcp6; do
  [ -r "$t" ] || continue
  tables=$((tables + 1))
  while read -r sl laddr raddr st rest; do
    set -- $rest
    if [ "$st" = 0A ] && [ "${laddr##*:}" = "$hex" ]; then
      echo "socket ${t##*/} $laddr $4 $6"; inodes="$inodes $6"
    fi
  done < "$t"
done
[ "$tables" -gt 0 ] || { echo "error no /proc/net/tcp"; exit 3; }
hidden=0
for d in /proc/[0-9]*/fd; do [ -r "$d" ] || hidden=$((hidden + 1)); done
echo "unreadable $hidden"
[ -n "$inodes" ] || { echo done; exit 0; }
set -- -e /fd:
for i in $inodes; do set -- "$@" -e "socket:[$i]"; done
q=-lq; ls -q / >/dev/null 2>&1 || q=-l  # -q: no newline in a file name can fake a line
pairs=$(ls "$q" /proc/[0-9]*/fd 2>/dev/null | grep -F "$@")
owners=; pids=; cur=
while IFS= read -r line; do
  case $line in
    /proc/*/fd:) cur=${line#/proc/}; cur=${cur%/fd:} ;;
    *"socket:["*"]")
      ino=${line##*socket:[}; ino=${ino%]}; owners="$owners $cur:$ino"
      case " $pids " in *" $cur "*) ;; *) pids="$pids $cur" ;; esac ;;
  esac
done <<EOF
$pairs
EOF
ticks() { s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; set -- ${s##*)}; echo "${20} $2 $1"; }
for p in $pids; do
  [ "$p" = "$$" ] && continue
  st=$(ticks "$p") || { echo "vanished $p"; continue; }
  held=; for o in $owners; do [ "${o%%:*}" = "$p" ] && held="$held ${o#*:}"; done
  uid=-
  while read -r k v rest; do
    [ "$k" = Uid: ] && { uid=$v; break; }
  done 2>/dev/null < "/proc/$p/status"
  echo "process $p"; echo "held$held"; echo "stat $st"; echo "uid $uid"
  echo "comm $(hexof 2>/dev/null < "/proc/$p/comm")"
  echo "cmdline $(hexof 2>/dev/null < "/proc/$p/cmdline")"
  if e=$(od -An -v -tx1 "/proc/$p/environ" 2>/dev/null); then
    echo "environ ok $(printf '%s' "$e" | tr -d ' \n')"
  else echo "environ denied"; fi
  if x=$(readlink "/proc/$p/exe" 2>/dev/null); then echo "exe ok $(printf '%s' "$x" | hexof)"
  else echo "exe -"; fi
  end=$(ticks "$p") || end=gone; echo "end $p ${end%% *}"
done
echo done
"""

_STAT = r"""state() {
  s=$(cat "/proc/$pid/stat" 2>/dev/null) || { echo gone; return; }
  set -- ${s##*)}
  if [ "${20}" != "$ticks" ]; then echo recycled; elif [ "$1" = Z ]; then echo zombie
  else echo alive; fi
}
"""

_STOP = r"""nap() { if sleep 0.1 2>/dev/null; then n=$((n + 1)); else sleep 1; n=$((n + 10)); fi; }
send() {  # $1 signal, $2 outcome if gone before it is sent, $3 once gone after, $4 steps
  [ "$(state)" = alive ] || { echo "outcome $2"; exit 0; }
  kill -s "$1" "$pid" 2>/dev/null || {
    [ "$(state)" = alive ] && { echo "outcome denied"; exit 0; }
    echo "outcome $2"; exit 0; }
  n=0
  while [ "$n" -lt "$4" ]; do nap; [ "$(state)" = alive ] || { echo "outcome $3"; exit 0; }; done
}
send TERM gone stopped "$steps"
send KILL stopped killed 50
echo "outcome survived"
"""

Liveness = Literal["alive", "zombie", "gone", "recycled"]
StopOutcome = Literal["gone", "stopped", "killed", "survived"]
_LIVENESS: dict[str, Liveness] = {s: s for s in ("alive", "zombie", "gone", "recycled")}
_OUTCOMES: dict[str, StopOutcome | Literal["denied"]] = {
    s: s for s in ("gone", "stopped", "killed", "survived", "denied")}


def _ident(pid: int, ticks: int) -> str:
    if not (isinstance(pid, int) and isinstance(ticks, int) and pid > 0 and ticks >= 0):
        raise ValueError(f"not a pid / start ticks: {pid!r} {ticks!r}")
    return f"pid={pid} ticks={ticks}\n"


def LISTENER_SCRIPT(port: int) -> str:
    """The sh script printing every process holding a LISTEN socket on TCP `port`."""
    if not (isinstance(port, int) and 0 < port < 65536):
        raise ValueError(f"not a TCP port: {port!r}")
    return _LISTENER.replace("@PORT@", str(port))


def ALIVE_SCRIPT(pid: int, ticks: int) -> str:
    """Prints alive / zombie / gone / recycled for the process (pid, start ticks)."""
    return _ident(pid, ticks) + _STAT + "state\n"


def STOP_SCRIPT(pid: int, ticks: int, grace: float) -> str:
    """SIGTERM, up to `grace` s, SIGKILL, up to 5 s; the start ticks checked before each."""
    if not grace >= 0:
        raise ValueError(f"grace must be >= 0 s, got {grace!r}")
    return _ident(pid, ticks) + f"steps={math.ceil(grace * 10)}\n" + _STAT + _STOP


@dataclass(frozen=True)
class Socket:
    family: str  # tcp or tcp6
    address: str  # bound address: 0.0.0.0, ::, 127.0.0.1, ...
    port: int
    uid: int
    inode: int


@dataclass(frozen=True)
class ProcessInfo:
    """One process holding a listening socket; argv and env already redacted."""

    pid: int
    start_ticks: int
    ppid: int
    state: str  # R, S, D, ... (field 3 of stat)
    uid: int | None
    comm: str
    argv: tuple[str, ...]
    env: dict[str, str] | None = field(hash=False)  # None: environ not readable
    exe: str | None  # None: not readable (or a kernel thread)
    inodes: tuple[int, ...]


@dataclass(frozen=True)
class ListenerReport:
    port: int
    euid: int  # who the probe ran as: 0 sees everything
    sockets: tuple[Socket, ...]
    processes: tuple[ProcessInfo, ...]
    unreadable: int  # processes whose fds this user could not list
    vanished: int = 0  # holders that exited while being read

    @property
    def hidden(self) -> tuple[Socket, ...]:
        """Listening sockets no visible process holds (another user's, without root)."""
        held = {i for p in self.processes for i in p.inodes}
        return tuple(s for s in self.sockets if s.inode not in held)


def _fail(n: int, line: str, why: str) -> ParseError:
    shown = "environ ..." if line.startswith("environ") else line[:80]  # may hold secrets
    return ParseError(f"listener probe output line {n}: {why}: {shown!r}", stage="listeners")


def _text(hexstr: str) -> str:
    return bytes.fromhex(hexstr).decode("utf-8", errors="backslashreplace")


def _socket(rest: str) -> Socket:
    family, hexaddr, uid, inode = rest.split(" ")
    addr, _, port = hexaddr.partition(":")
    raw = bytes.fromhex(addr)  # each 32-bit word in host (little-endian) order
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    if family != {4: "tcp", 16: "tcp6"}.get(len(raw)):
        raise ValueError(f"a {len(raw)}-byte address in {family}")
    return Socket(family, str(ipaddress.ip_address(raw)), int(port, 16), int(uid), int(inode))


def _environ(raw: bytes) -> dict[str, str]:
    env: dict[str, str] = {}
    for entry in raw.split(b"\0"):
        if entry:
            name, _, value = entry.decode("utf-8", errors="backslashreplace").partition("=")
            env.setdefault(name, value)  # getenv() answers the first of duplicates
    return env


_FIELDS = ("held", "stat", "uid", "comm", "cmdline", "environ", "exe", "end")


def _process(pid: int, lines: list[tuple[int, str]]) -> ProcessInfo | None:
    """One `process PID` record's fields (in _FIELDS order); None if it changed meanwhile."""
    if len(lines) < len(_FIELDS):
        raise ValueError("record cut short")
    got: dict[str, list[str]] = {}
    for (n, line), key in zip(lines, _FIELDS, strict=False):
        if line.split(" ")[0] != key:
            raise _fail(n, line, f"expected {key!r} in the record of pid {pid}")
        got[key] = line.split(" ")[1:]
    ticks, ppid, state = got["stat"]
    end_pid, end_ticks = got["end"]
    if int(end_pid) != pid:
        raise ValueError(f"record of pid {pid} ends as pid {end_pid}")
    if end_ticks != ticks:
        return None  # exited (or the pid was reused) while being read
    cmd = bytes.fromhex("".join(got["cmdline"])).rstrip(b"\0")
    return ProcessInfo(
        pid=pid, start_ticks=int(ticks), ppid=int(ppid), state=state,
        uid=None if got["uid"] == ["-"] else int(got["uid"][0]),
        comm=_text("".join(got["comm"])).rstrip("\n"),
        argv=redact_argv([a.decode("utf-8", errors="backslashreplace")
                          for a in cmd.split(b"\0")] if cmd else []),
        env=redact_env(_environ(bytes.fromhex(got["environ"][1])))
        if got["environ"][0] == "ok" else None,
        exe=_text(got["exe"][1]) if got["exe"][0] == "ok" else None,
        inodes=tuple(sorted({int(x) for x in got["held"] if x})))


def parse_listener_report(text: str) -> ListenerReport:
    """Parse LISTENER_SCRIPT's output. Pure; any unknown shape is a ParseError."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    head = lines[0][1].split(" ") if lines else []
    if head[:2] != _FORMAT.split() or len(head) != 6 or head[2:5:2] != ["port", "euid"]:
        raise _fail(lines[0][0] if lines else 1, lines[0][1] if lines else "",
                    f"not {_FORMAT!r} output")
    sockets: list[Socket] = []
    procs: list[ProcessInfo] = []
    unreadable, vanished, k, done = -1, 0, 1, False
    while k < len(lines):
        n, line = lines[k]
        word, _, rest = line.partition(" ")
        try:
            if done:
                raise ValueError("text after 'done'")
            if word == "socket":
                sockets.append(_socket(rest))
            elif word == "unreadable":
                unreadable = int(rest)
            elif word == "vanished" and rest.isdigit():
                vanished += 1
            elif word == "process":
                info = _process(int(rest), lines[k + 1:k + 1 + len(_FIELDS)])
                k += len(_FIELDS)
                vanished += info is None
                procs.extend([info] if info else [])
            elif line == "done":
                done = True
            elif word == "error":
                raise ParseError(f"the probe failed on the host: {rest[:80]}", stage="listeners")
            else:
                raise ValueError("unknown line")
        except (ValueError, IndexError) as exc:
            raise _fail(n, line, str(exc) or "unknown shape") from None
        k += 1
    if not done or unreadable < 0:
        raise ParseError("listener probe output ends early (no 'done'): truncated?",
                         stage="listeners")
    port = int(head[3])
    if any(s.port != port for s in sockets):
        raise ParseError(f"the probe for port {port} reported another port", stage="listeners")
    return ListenerReport(port, int(head[5]), tuple(sockets), tuple(procs), unreadable, vanished)


def parse_listeners(text: str) -> list[ProcessInfo]:
    """The processes holding the port's listening sockets (see parse_listener_report)."""
    return list(parse_listener_report(text).processes)


def parse_alive(text: str) -> Liveness:
    if text.strip() not in _LIVENESS:
        raise ParseError(f"unknown liveness answer: {text.strip()[:80]!r}", stage="alive")
    return _LIVENESS[text.strip()]


def parse_stop(text: str) -> StopOutcome | Literal["denied"]:
    """STOP_SCRIPT's outcome: its last line, `outcome WORD`."""
    last = (text.strip().splitlines() or [""])[-1]
    if not last.startswith("outcome ") or last[8:] not in _OUTCOMES:
        raise ParseError(f"unknown stop outcome: {last[:80]!r}", stage="stop")
    return _OUTCOMES[last[8:]]


def root_process(processes: list[ProcessInfo]) -> ProcessInfo:
    """The holder whose parent holds none of the sockets: the engine's main process (vLLM's
    workers inherit the listening socket and retitle themselves, VLLM::EngineCore, ...)."""
    pids = {p.pid for p in processes}
    roots = [p for p in processes if p.ppid not in pids]
    if len(roots) != 1:
        raise MeasurementError(f"{len(roots)} unrelated processes hold the port: "
                               + ", ".join(f"{p.pid} ({p.comm})" for p in roots[:4]),
                               stage="listeners")
    return roots[0]


def _run(transport: Transport, script: str, what: str, stage: str, timeout: float,
         sudo: bool) -> str:
    result = transport.run_shell(script, timeout=timeout, sudo=sudo).check(stage)
    if result.truncated:
        raise ParseError("output truncated by the transport's cap", host=transport.host,
                         command=what, stage=stage)
    return result.stdout


def _parsed(transport: Transport, what: str, parse: Callable[[str], T], text: str) -> T:
    try:
        return parse(text)
    except ParseError as exc:
        raise ParseError(exc.message, host=transport.host, command=what,
                         stage=exc.stage) from None


def listener_report(transport: Transport, port: int, *, sudo: bool = False,
                    timeout: float = 60) -> ListenerReport:
    what = f"listener probe (port {port})"
    text = _run(transport, LISTENER_SCRIPT(port), what, "listeners", timeout, sudo)
    return _parsed(transport, what, parse_listener_report, text)


def listeners(transport: Transport, port: int, *, sudo: bool = False,
              timeout: float = 60) -> list[ProcessInfo]:
    """Every process holding a LISTEN socket on `port` ([] when nothing listens). A socket
    whose owner this user cannot see is a MeasurementError: the engine would be unknown."""
    report = listener_report(transport, port, sudo=sudo, timeout=timeout)
    if report.hidden:
        uids = ", ".join(sorted({str(s.uid) for s in report.hidden}))
        raise MeasurementError(
            f"port {port} is listened on by uid {uids} but its process is not visible to "
            f"uid {report.euid}", host=transport.host, command=f"listener probe (port {port})",
            stage="listeners", hint="probe with sudo, or run the engine as the SSH user")
    return list(report.processes)


def is_alive(transport: Transport, pid: int, ticks: int, *, sudo: bool = False,
             timeout: float = 30) -> bool:
    """True while the process (pid, start ticks) runs; a zombie or a new owner is False."""
    what = f"alive check (pid {pid})"
    text = _run(transport, ALIVE_SCRIPT(pid, ticks), what, "alive", timeout, sudo)
    return _parsed(transport, what, parse_alive, text) == "alive"


def stop_process(transport: Transport, pid: int, ticks: int, grace: float = 10.0, *,
                 sudo: bool = False) -> StopOutcome:
    """Stop (pid, start ticks): "gone" (already, or the pid is another process's now),
    "stopped" (SIGTERM), "killed" (SIGKILL), "survived" (even SIGKILL: stuck in the kernel,
    e.g. a GPU driver). Only that pid is signalled. Not permitted: TransportError."""
    what = f"stop (pid {pid}, grace {grace:g}s)"
    text = _run(transport, STOP_SCRIPT(pid, ticks, grace), what, "stop", grace + 30, sudo)
    outcome = _parsed(transport, what, parse_stop, text)
    if outcome == "denied":
        raise TransportError(f"not permitted to signal pid {pid}", host=transport.host,
                             command=what, stage="stop", hint="stop it with sudo")
    return outcome
