"""`gate parse KIND FILE`: read a tool's captured output the way G1 / G2 read it on a host.

Field engineers use it on outputs captured at a site before a gate runs: what gate makes
of each value, and whether the output is in a shape gate knows at all.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from harness.cli.common import emit_json, json_option
from harness.errors import ParseError, UsageError
from harness.probes.kinds import KIND_NAMES, KINDS, detect, kind

_KIND_HELP = "\n".join(f"  {k.name:<17} {k.command}" for k in KINDS)


def _plain(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _show(value: object, indent: str = "") -> list[str]:
    plain = _plain(value)
    lines: list[str] = []
    if isinstance(plain, dict):
        for key, item in plain.items():
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{indent}{key}:")
                lines.extend(_show(item, indent + "  "))
            else:
                lines.append(f"{indent}{key}: {'-' if item in (None, {}, []) else item}")
    elif isinstance(plain, list):
        for n, item in enumerate(plain):
            lines.append(f"{indent}[{n}]")
            lines.extend(_show(item, indent + "  "))
    else:
        lines.append(f"{indent}{plain}")
    return lines


@click.command(epilog=f"Kinds (auto: detect from the output):\n\n\b\n{_KIND_HELP}")
@click.argument("kind_name", metavar="KIND", type=click.Choice(("auto", *KIND_NAMES)))
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@json_option
def parse(kind_name: str, file: Path, as_json: bool) -> None:
    """Parse FILE, a captured output of KIND (or `auto`), and print what gate reads from it.

    A value the tool marks unavailable (N/A) shows as `-` (null in --json), never 0.
    """
    try:
        raw = file.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise UsageError(f"cannot read it: {e.strerror}", file=str(file)) from None
    try:
        chosen = detect(raw) if kind_name == "auto" else kind(kind_name)
        result = chosen.parse(raw)
    except ParseError as e:
        raise UsageError(e.message, file=str(file),
                         hint=None if kind_name == "auto" else "try KIND auto") from None
    if as_json:
        emit_json({"kind": chosen.name, "file": str(file), "result": _plain(result)})
        return
    click.echo(f"{file}: {chosen.name} ({chosen.command})")
    for line in _show(result, "  "):
        click.echo(line)
