"""Which pytest arguments a gate run passes through (after `--`), and what they make of it.

An allowlist, not a blocklist: pytest has many ways to change what it collects or how it
judges (`-o python_functions=...`, `-p`, `-c`, `--rootdir`, extra paths, ...) and any of
them could turn a gate into a PASS that measured nothing. Only output options, and the
selection options that make a run PARTIAL (a partial run is never a gate's PASS), pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.errors import UsageError

# Options that only change what is printed (the plugin's own lines are unaffected).
OUTPUT_FLAGS = frozenset({"-q", "--quiet", "-v", "--verbose", "-s", "-l", "--showlocals",
                          "--full-trace", "--no-header", "--no-summary"})
OUTPUT_VALUED = frozenset({"--tb", "--capture", "--log-level", "--color", "--durations",
                           "-r"})
# Options that run fewer checks than the plan: allowed, and the run is PARTIAL.
SELECTING_FLAGS = frozenset({"-x", "--exitfirst"})
SELECTING_VALUED = frozenset({"-k", "-m", "--deselect", "--maxfail"})

ALLOWED_HELP = ("output options (-v, -q, -s, -l, --tb, --capture, --log-level, -r, "
                "--durations) and selection options that make the run PARTIAL (-k, -m, "
                "--deselect, -x, --maxfail)")


@dataclass(frozen=True)
class PassThrough:
    args: tuple[str, ...]
    selecting: bool  # the user asked for fewer checks: the run is PARTIAL


def check_pytest_args(args: Sequence[str]) -> PassThrough:
    """The arguments as given, if every one is allowed; else UsageError (exit 4)."""
    selecting = False
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, _ = arg.partition("=")
        if arg in OUTPUT_FLAGS or _repeated_short(arg, "v") or _repeated_short(arg, "q"):
            i += 1
            continue
        if arg in SELECTING_FLAGS:
            selecting = True
            i += 1
            continue
        valued = name in OUTPUT_VALUED or name in SELECTING_VALUED
        short_joined = len(arg) > 2 and arg[:2] in ("-k", "-m", "-r") and arg[2:3] != "="
        if valued or short_joined:
            selecting = selecting or name in SELECTING_VALUED or arg[:2] in ("-k", "-m")
            if not eq and not short_joined:
                if i + 1 >= len(args):
                    raise UsageError(f"pytest option {arg} needs a value", key="--")
                i += 1
            i += 1
            continue
        raise UsageError(
            f"pytest argument {arg!r} is not allowed in a gate run",
            key="--", hint=f"allowed: {ALLOWED_HELP}; anything that changes what is "
                           "collected or how it is judged could fake a verdict")
    return PassThrough(tuple(args), selecting)


def _repeated_short(arg: str, letter: str) -> bool:
    return len(arg) >= 2 and arg[0] == "-" and set(arg[1:]) == {letter}
