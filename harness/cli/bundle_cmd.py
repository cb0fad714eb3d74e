"""`gate bundle` and `gate bundle verify`: gate for a site without network.

Why: GPU clusters are usually air-gapped; `pip install` from an index is not an install
there. The bundle is made here (pip reaches an index), carried, verified, and installed at
the site by its own install.sh (docs/remote.md, "Offline bundle").
"""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.common import emit_json, json_option, stderr_console
from harness.errors import UsageError


@click.group("bundle", invoke_without_command=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Archive to write (default: ./gate-bundle-VERSION.tar.gz).")
@click.option("--target", "targets", multiple=True, metavar="PLATFORM/PYTHON",
              help="A site platform, e.g. manylinux_2_34_x86_64/3.11 (repeatable; default: "
                   "this machine). Below Python 3.11 only the agent is bundled for it.")
@click.pass_context
def bundle(ctx: click.Context, output: Path | None, targets: tuple[str, ...]) -> None:
    """Make an offline bundle: gate and every dependency as wheels, the load agent's
    wheels for client hosts (Python 3.9+), a CJK font, install.sh and a manifest.

    \b
    At the site:  tar xzf gate-bundle-*.tar.gz && sh gate-bundle-*/install.sh /opt/gate
    Check a copy: gate bundle verify gate-bundle-*.tar.gz
    """
    if ctx.invoked_subcommand is not None:
        if output is not None or targets:
            raise UsageError("-o and --target belong to `gate bundle`, not to its "
                             f"`{ctx.invoked_subcommand}`", key="gate bundle")
        return
    from harness.bundle.build import BundleRequest, build_bundle
    from harness.bundle.targets import parse_target

    err = stderr_console()
    path = build_bundle(BundleRequest(
        output=output, targets=tuple(parse_target(t) for t in targets),
        say=lambda msg: err.print(f"bundle: {msg}", highlight=False)))
    size = path.stat().st_size / 1e6
    click.echo(f"{path} ({size:.0f} MB)")


@bundle.command("verify")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@json_option
def verify(file: Path, as_json: bool) -> None:
    """Check every file of a bundle against its manifest and show what is inside.
    Exit 0 when whole, 4 when anything is damaged, missing or added."""
    from harness.bundle.verify import verify_bundle

    contents = verify_bundle(file)
    if as_json:
        emit_json(contents.to_dict())
    else:
        m = contents.manifest
        click.echo(f"{file}: {m.get('name')} {m.get('version')}, made {m.get('created')} on "
                   f"{m.get('built_on')}, {len(m['files'])} files")
        for where, pkgs in sorted((m.get("packages") or {}).items()):
            names = ", ".join(f"{n} {v}" for n, v in sorted(pkgs.items())
                              if n in ("gate-harness", "gate-agent", "numpy", "aiohttp"))
            click.echo(f"  {where}: {len(pkgs)} wheels ({names})")
        font = m.get("font") or {}
        click.echo(f"  font: {font.get('file')} ({font.get('licence')})")
        click.echo(f"  Debian packages needed: {' '.join(m.get('debian_packages') or [])}")
        for p in contents.problems:
            click.echo(f"  DAMAGED {p.path}: {p.what}")
    if not contents.ok:
        first = contents.problems[0]
        raise UsageError(f"{len(contents.problems)} problem(s), first: {first.path} "
                         f"{first.what}", file=str(file),
                         hint="do not install it; copy the bundle again")
    if not as_json:
        click.echo(f"{file}: OK")
