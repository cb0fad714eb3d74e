"""gate-agent: runs one load phase on the client host, detached from the gate.

    gate-agent --version
    gate-agent start --spec SPEC.json --dir DIR    detached (harness.remote.detach)
    gate-agent run --spec SPEC.json --dir DIR      in the foreground
    gate-agent pull --dir DIR --offset N           status + records from byte N
    gate-agent stop --dir DIR [--wait S]           end a phase the gate left running
    gate-agent soak-start|soak-run|soak-pull|soak-stop --dir DIR ...
    gate-agent soak-clean --dir DIR --stored K | --root ROOT --older-than DAYS
                                                   G4's soak (harness.remote.soak_agent)

`run` reads a PhaseSpec (harness.loadgen.phase, as to_dict wrote it), runs it with the
in-process engine on this host's own Python (3.9 or newer), appends every finished
request to DIR/records.bin (framed: harness.remote.frames, records_file), and keeps
DIR/status.json current: `running` with its pid at the start, then `finished` (the
outcome without records: timing, status and the phase health measured here, on the
client host) or `error` with the cause. The gate pulls both files; it never needs this
process to answer.
"""

from __future__ import annotations

import argparse
import binascii
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from harness import __version__
from harness.remote import detach, frames, soak_agent

STATUS, SPEC = "status.json", "spec.json"
LEGACY = "records.jsonl"  # format v1, refused by the gate (records_file)


def write_status(directory: Path, status: dict[str, Any], *, unless_there: bool = False) -> bool:
    """Replace status.json atomically: a reader sees the old or the new state, never half.
    Each writer has its own temporary file (`start` and the phase it detached write at
    once). `unless_there`: write only where no status is yet, atomically (a hard link
    fails on an existing name); False when one was there."""
    tmp = directory / f"{STATUS}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(status, sort_keys=True))
    if not unless_there:
        os.replace(tmp, directory / STATUS)
        return True
    try:
        os.link(tmp, directory / STATUS)
    except FileExistsError:
        return False
    finally:
        tmp.unlink()
    return True


def run_phase(spec_path: Path, directory: Path) -> int:
    # Imported here: `pull` runs every second during a phase, on the client host the load
    # runs on, and needs none of numpy / aiohttp.
    from harness.loadgen import engine
    from harness.loadgen.phase import InProcessExecutor, PhaseSpec
    from harness.remote.records_file import Appender

    spec = PhaseSpec.from_dict(json.loads(spec_path.read_text()))
    base = {"pid": os.getpid(), "agent_version": __version__,
            "python": platform.python_version(), "started_at": time.time()}
    write_status(directory, {**base, "state": "running"})
    loop = engine.loop_factory()()
    try:
        with (directory / frames.NAME).open("ab") as stream:
            appender = Appender(stream)
            outcome = loop.run_until_complete(
                InProcessExecutor(progress=False).run_async(spec, appender))
    except BaseException as exc:  # the cause is the status; the gate reads it
        write_status(directory, {**base, "state": "error", "ended_at": time.time(),
                                 "error": f"{type(exc).__name__}: {exc}",
                                 "traceback": traceback.format_exc(limit=8)})
        return 3
    finally:
        loop.close()
    summary = {k: v for k, v in outcome.to_dict().items() if k != "records"}
    write_status(directory, {**base, "state": "finished", "ended_at": time.time(),
                             "records": appender.count, "outcome": summary})
    return 0


def read_status(directory: Path) -> dict[str, Any] | None:
    try:
        status: dict[str, Any] = json.loads((directory / STATUS).read_text())
    except (OSError, ValueError):
        return None
    return status


def start(spec_path: Path, directory: Path) -> int:
    """Start the phase detached and return at once; starting twice is refused."""
    if (directory / STATUS).exists():
        print(f"gate-agent: {directory} already holds a phase", file=sys.stderr)
        return 4
    how, pid = detach.start_detached(spec_path, directory, f"gate-phase-{directory.name}")
    if pid is not None:  # the phase overwrites this with `running` once it runs; a phase
        # that ran and finished before this line keeps its `finished` (overwritten, a dead
        # pid under `starting` read as an agent gone without finishing: a spurious ERROR)
        write_status(directory, {"state": "starting", "pid": pid, "how": how,
                                 "started_at": time.time()}, unless_there=True)
    print(json.dumps({"how": how, "pid": pid}))
    return 0


def pull(directory: Path, offset: int, limit: int) -> int:
    """One line of JSON (status, whether its pid lives, the file size and format, the log
    tail), then base64 of whole frames of the record file from `offset` (up to `limit`
    bytes, or the one frame there when it is larger): the Transport carries text."""
    status = read_status(directory)
    path = directory / frames.NAME
    if not path.exists() and (directory / LEGACY).exists():
        path = directory / LEGACY  # a v1 phase: its bytes go back so the gate can say so
    size = path.stat().st_size if path.exists() else 0
    header = {"status": status, "alive": detach.alive((status or {}).get("pid")),
              "size": size, "offset": offset, "format": frames.VERSION,
              "log": detach.log_tail(directory)}
    data = read_frames(path, offset, limit) if size > offset else b""
    out = sys.stdout.buffer
    out.write(json.dumps(header).encode() + b"\n")
    out.write(binascii.b2a_base64(data, newline=False))
    out.flush()
    return 0


def read_frames(path: Path, offset: int, limit: int) -> bytes:
    """The whole frames from offset (a frame boundary, or 0: the header too). A torn
    last frame stays for the next pull; bytes that are no frame at all are returned
    as found, for the gate to refuse with what it saw."""
    base = len(frames.HEADER) if offset == 0 else 0
    with path.open("rb") as f:
        f.seek(offset)
        buf = f.read(max(limit, base + frames.FRAME.size))
        if offset == 0 and not buf.startswith(frames.HEADER):
            return buf[:len(frames.HEADER)]
        end = frames.whole_frames(buf, offset == 0)
        if end > base:
            return buf[:end]
        head = buf[base:base + frames.FRAME.size]
        need = frames.frame_length(head)
        if need is None:
            return buf[:base] + head  # no frame here, or not yet a whole frame header
        f.seek(offset + base)
        whole = f.read(need)  # one frame larger than the limit
        return buf[:base] + (whole if len(whole) == need else b"")


def stop(directory: Path, wait: float) -> int:
    """End the phase in directory if its process still runs: TERM to its process group
    (the phase leads its own session), KILL after `wait` s. One line of JSON: its pid,
    whether it was running, and its state (`stopped` when this ended it). For a gate
    that died mid-phase (`gate resume`, `gate runs abort`): no load of a dead run may
    still reach an engine when the next measurement starts."""
    status = read_status(directory) or {}
    pid = status.get("pid")
    was_alive = detach.alive(pid)
    if was_alive:
        detach.terminate(int(pid or 0), wait)
        if (read_status(directory) or {}).get("state") in ("starting", "running"):
            write_status(directory, {**status, "state": "stopped", "ended_at": time.time()})
    after = read_status(directory) or {}
    print(json.dumps({"pid": pid, "was_alive": was_alive, "alive": detach.alive(pid),
                      "state": after.get("state"), "error": after.get("error"),
                      "log": detach.log_tail(directory)}))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gate-agent", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command")
    for name, what in (("run", "run one phase here"), ("start", "start one phase detached")):
        cmd = sub.add_parser(name, help=f"{what}; records and status go to --dir")
        cmd.add_argument("--spec", type=Path, required=True, help="PhaseSpec as JSON")
        cmd.add_argument("--dir", type=Path, required=True, help="records and status")
    take = sub.add_parser("pull", help="status and records from a byte offset")
    take.add_argument("--dir", type=Path, required=True)
    take.add_argument("--offset", type=int, default=0)
    take.add_argument("--limit", type=int, default=32 << 20)
    halt = sub.add_parser("stop", help="end a phase still running (TERM, then KILL)")
    halt.add_argument("--dir", type=Path, required=True)
    halt.add_argument("--wait", type=float, default=10.0, help="s between TERM and KILL")
    soak_commands(sub)
    args = parser.parse_args(argv)
    if args.version:
        print(f"gate-agent {__version__} python {platform.python_version()}")
        return 0
    if args.command == "pull":
        return pull(args.dir, args.offset, args.limit)
    if args.command == "stop":
        return stop(args.dir, args.wait)
    if args.command is not None and args.command.startswith("soak-"):
        return soak(args)
    if args.command not in ("run", "start"):
        parser.print_usage(sys.stderr)
        return 4
    if not args.spec.is_file():
        print(f"gate-agent: {args.spec}: no such spec file", file=sys.stderr)
        return 4
    args.dir.mkdir(parents=True, exist_ok=True)
    spec, directory = args.spec.resolve(), args.dir.resolve()
    return run_phase(spec, directory) if args.command == "run" else start(spec, directory)


def soak_commands(sub: Any) -> None:
    """The soak's subcommands (harness.remote.soak_agent): each takes the spool --dir."""
    for name, what in (("soak-start", "start the soak of --dir detached"),
                       ("soak-run", "run the soak of --dir here"),
                       ("soak-pull", "the soak's state and its windows after --after"),
                       ("soak-stop", "ask the soak to stop (and end it: --kill-after)")):
        cmd = sub.add_parser(name, help=what)
        cmd.add_argument("--dir", type=Path, required=True, help="the soak's spool")
        if name == "soak-pull":
            cmd.add_argument("--after", type=int, default=-1, help="the last window held")
            cmd.add_argument("--limit", type=int, default=soak_agent.PULL_LIMIT)
        if name == "soak-stop":
            cmd.add_argument("--why", default="stop requested")
            cmd.add_argument("--kill-after", type=float, default=None,
                             help="TERM now, KILL after S s (default: only ask)")
    rid = sub.add_parser("soak-clean", help="remove spools no longer needed: never a running "
                                            "soak's, never one with windows not stored")
    one = rid.add_mutually_exclusive_group(required=True)
    one.add_argument("--dir", type=Path, help="this soak's spool")
    one.add_argument("--root", type=Path, help="every ended soak's spool under ROOT")
    rid.add_argument("--stored", type=int, default=None,
                     help="the last window index the gate stored (-1: none)")
    rid.add_argument("--older-than", type=float, default=None, metavar="DAYS",
                     help="only spools not written for DAYS days")


def soak(args: argparse.Namespace) -> int:
    if args.command == "soak-clean":
        if args.dir is not None and args.stored is None:
            print("gate-agent: soak-clean --dir needs --stored K", file=sys.stderr)
            return 4
        if args.root is not None and args.older_than is None:
            print("gate-agent: soak-clean --root needs --older-than DAYS", file=sys.stderr)
            return 4
        dirs = [args.dir.resolve()] if args.dir is not None \
            else soak_agent.spools(args.root.resolve())
        age = args.older_than * 86400 if args.older_than is not None else None
        return soak_agent.clean(dirs, args.stored, age)
    directory = args.dir.resolve()
    if args.command == "soak-pull":
        return soak_agent.pull(directory, args.after, args.limit)
    if args.command == "soak-stop":
        return soak_agent.stop(directory, args.why, args.kill_after)
    if args.command == "soak-start":
        return soak_agent.start(directory)
    return soak_agent.run(directory)


if __name__ == "__main__":
    sys.exit(main())
