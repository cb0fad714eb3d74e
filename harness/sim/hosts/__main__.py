"""`python -m harness.sim.hosts --profile P [--captures DIR] [--host NAME] -- ARGV...`

The command shim of simulated hardware: what a simulated host's tool prints, for the
paths that do not go through the harness's Transport (playbooks/facts.yml runs its probes
on the host through Ansible). Same catalog, same answers as SimulatedHardwareTransport:
a hardware tool prints its capture byte for byte or exits 127 naming what the profile
answers; any other program is exec'd for real. Exit 4 for a bad profile or directory.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from harness.errors import EXIT_USAGE, GateError
from harness.sim.hosts.catalog import load_catalog


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness.sim.hosts",
        description="Answer a hardware tool as a simulated host would (captured output).")
    parser.add_argument("--profile", required=True, help="a simulated hardware profile")
    parser.add_argument("--captures", type=lambda s: Path(s) if s else None,
                        help="a directory of one's own captures (empty: none)")
    parser.add_argument("--host", default="this host", help="the host's name, for messages")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- ARGV...")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given after --")
    try:
        catalog = load_catalog(args.captures)
    except GateError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return EXIT_USAGE
    profile = catalog.get(args.profile)
    if profile is None:
        print(f"error: {args.profile} is not a simulated hardware profile (known: "
              f"{', '.join(sorted(catalog.profiles))})", file=sys.stderr)
        return EXIT_USAGE
    if not catalog.simulates(command):
        os.execvp(command[0], command)  # not hardware: the real program, as the wrapper does
    answer = profile.answer(command, args.host)
    sys.stdout.buffer.write(answer.stdout.encode("utf-8"))
    sys.stderr.write(answer.stderr)
    return answer.rc


if __name__ == "__main__":
    sys.exit(main())
