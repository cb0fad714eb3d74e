"""How a gate program ends: shared by `gate` and `python -m harness.sim`.

A GateError is one line and its exit code; click's usage errors exit 4; anything else is a
bug in gate, one line and exit 3 (ERROR: nothing was decided), never Python's exit 1, which
would read as STOP-LOSS. --debug adds the traceback, not another exit code.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from harness.errors import EXIT_ERROR, EXIT_USAGE, GateError


def run_command(command: click.Command, args: list[str], prog: str, *,
                worded: Callable[[GateError], GateError] | None = None) -> Any:
    """Run `command` as a program. `worded` lets the CLI add its own words (commands and
    flags to try) to an error raised below it."""
    debug = "--debug" in args
    from harness.liblog import quiet_library_logs

    quiet_library_logs()
    try:
        return command.main(args=args, prog_name=prog, standalone_mode=False)
    except GateError as exc:
        _traceback(debug)
        shown = worded(exc) if worded is not None else exc
        click.echo(f"gate: error: {shown.one_line()}", err=True)
        sys.exit(exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("gate: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_USAGE)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:  # a bug: say so in one line, exit ERROR
        _traceback(debug)
        text = " ".join(str(exc).split()) or "(no message)"
        more = "" if debug else "; rerun with --debug for the traceback"
        click.echo(f"gate: internal error: {type(exc).__name__}: {text} (a bug in gate{more})",
                   err=True)
        sys.exit(EXIT_ERROR)


def _traceback(debug: bool) -> None:
    if debug:
        import traceback

        traceback.print_exc()
