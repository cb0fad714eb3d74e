"""`gate report` (a run's or a campaign's PDF / HTML) and `gate export` (evidence packs)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from harness.cli.common import config_option, db_option
from harness.cli.outputs import check_output
from harness.errors import UsageError
from harness.report.pace import fewer_collections

if TYPE_CHECKING:
    from harness.store import Store
    from harness.store.fleet import Filters


def _defaults(ctx: click.Context, config_path: str) -> tuple[str, str, str | None]:
    """(lang, format, logo data: URI) from the config's `report:` when the config exists,
    else en / pdf / no logo.

    An explicitly given -c that does not exist is an error; the default gate.yaml may be
    absent (a report is often rendered away from the site directory).
    """
    explicit = ctx.get_parameter_source("config_path") not in (ParameterSource.DEFAULT, None)
    if not Path(config_path).exists() and not explicit:
        return "en", "pdf", None
    from harness.cli.context import open_config

    loaded = open_config(config_path)
    report = loaded.config.report
    return report.lang, report.format, loaded.logo_uri()


def _one_target(run_id: int | None, campaign: str | None, command: str,
                optional: bool = False) -> None:
    """Exactly one of RUN and --campaign; with `optional` (gate report) neither is also
    fine: the config's campaign, as `gate status` finds it."""
    if optional and run_id is None and campaign is None:
        return
    if optional and run_id is not None and campaign is not None:
        raise UsageError("give a run id or --campaign NAME, not both", key=command,
                         hint=f"`{command}` alone reports the config's campaign")
    if (run_id is None) == (campaign is None):
        raise UsageError("give a run id or --campaign NAME (exactly one)", key=command,
                         hint=f"e.g. `{command} 12` or `{command} --campaign NAME`")


def _campaign(store: Store, campaign: str | None, configured: tuple[str, str] | None,
              config_path: str) -> tuple[str, str]:
    """(how the store finds it, how it is shown): --campaign; else the config's campaign
    (`gate report` alone, as `gate status`); else the store's only one."""
    if campaign is not None:
        return campaign, campaign
    if configured is not None:
        return configured
    from harness.store.runs import campaign_names

    names = campaign_names(store)
    if len(names) == 1:
        return names[0], names[0]
    raise UsageError(f"give a run id or --campaign NAME: there is no {config_path} here and "
                     f"the store has {len(names) or 'no'} campaign{'s' if names else ''}",
                     key="gate report",
                     hint=f"campaigns: {', '.join(names)}" if names else "run a gate first")


def _fleet_target(run_id: int | None, campaign: str | None, fleet: bool,
                  filters: dict[str, str | None]) -> None:
    """--fleet stands alone; its filters (those of `gate fleet`) mean nothing without it."""
    given = [f"--{k}" for k, v in filters.items() if v is not None]
    if fleet and (run_id is not None or campaign is not None):
        raise UsageError("--fleet reports every campaign: give no run id or --campaign",
                         key="gate report --fleet",
                         hint="narrow it with --site, --customer, --accelerator, --since")
    if given and not fleet:
        raise UsageError(f"{', '.join(given)} only with --fleet", key=given[0],
                         hint="e.g. `gate report --fleet --site NAME`")


@click.command("report")
@click.argument("run_id", required=False, type=int)
@click.option("--campaign", default=None,
              help="Report every gate of this campaign (NAME, or SITE/CAMPAIGN).")
@click.option("--fleet", is_flag=True, default=False,
              help="Report every campaign of the store, one row each (`gate fleet`'s "
                   "view), with G3's drop against gain across campaigns.")
@click.option("--site", default=None, metavar="NAME", help="--fleet: only this site.")
@click.option("--customer", default=None, metavar="TEXT",
              help="--fleet: only sites whose customer contains TEXT (any case).")
@click.option("--accelerator", default=None, metavar="TEXT",
              help="--fleet: only campaigns whose accelerator vendor contains TEXT.")
@click.option("--since", default=None, metavar="DATE",
              help="--fleet: only campaigns with a gate run that finished on or after "
                   "DATE (YYYY-MM-DD, local time).")
@click.option("--format", "fmt", type=click.Choice(["pdf", "html", "both"]), default=None,
              help="Output format (default: the config's report.format, else pdf).")
@click.option("--lang", type=click.Choice(["en", "zh"]), default=None,
              help="Report language (default: the config's report.lang, else en).")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="Output file (default: next to the store, dated).")
@config_option
@db_option
@click.pass_context
@fewer_collections()  # its imports too: a quarter of the CPU otherwise (harness/report/pace.py)
def report(ctx: click.Context, run_id: int | None, campaign: str | None, fleet: bool,
           site: str | None, customer: str | None, accelerator: str | None,
           since: str | None, fmt: str | None, lang: str | None, output: Path | None,
           config_path: str, db_url: str | None) -> None:
    """Render the customer report of RUN, or of a whole campaign (latest run of each gate,
    with trends across earlier runs), or of the fleet (--fleet: every campaign, filtered
    as `gate fleet`). Prints the written file(s).

    With neither RUN nor --campaign: the campaign of the config (gate.yaml here, or -c),
    else the store's only campaign, as `gate status` reports it."""
    _fleet_target(run_id, campaign, fleet, {"site": site, "customer": customer,
                                            "accelerator": accelerator, "since": since})
    if not fleet:
        _one_target(run_id, campaign, "gate report", optional=True)
    else:  # a bad date is one line before anything is read
        from harness.cli.fleet_cmd import since_epoch
        from harness.store.fleet import Filters

        filters = Filters(site=site, customer=customer, accelerator=accelerator,
                          since=since_epoch(since) if since is not None else None)
    configured = None
    if not fleet and run_id is None and campaign is None:
        from harness.cli.context import campaign_name

        configured = campaign_name(config_path, None)  # a bad config: its line, first
    lang_default, fmt_default, logo = _defaults(ctx, config_path)
    lang, fmt = lang or lang_default, fmt or fmt_default
    if fleet:
        for p in _fleet_report(db_url, filters, output, lang, fmt, logo):
            click.echo(str(p))
        return
    from harness.cli.context import open_store
    from harness.report.api import (
        default_name,
        render_campaign_report,
        render_run_report,
        store_dir,
    )
    from harness.report.frames import run_info

    store = open_store(db_url, existing=True)
    try:
        if run_id is not None:
            info = run_info(store, run_id)
            out = output or store_dir(store) / default_name(
                campaign=info.campaign, gate=info.gate, run_id=run_id, lang=lang)
            paths = render_run_report(store, run_id, check_output(out, "--output"), lang,
                                      fmt, logo=logo)
        else:
            from harness.store.runs import resolve_campaign

            key, name = _campaign(store, campaign, configured, config_path)
            resolve_campaign(store, key)  # absent, or a bare name in two sites: say so now
            out = output or store_dir(store) / default_name(campaign=name, lang=lang)
            paths = render_campaign_report(store, key, check_output(out, "--output"),
                                           lang, fmt, logo=logo)
    finally:
        store.close()
    for p in paths:
        click.echo(str(p))


def _fleet_report(db_url: str | None, filters: Filters, output: Path | None, lang: str,
                  fmt: str, logo: str | None) -> list[Path]:
    """The fleet's report, as `gate fleet` reads it (harness.report.fleet)."""
    from harness.cli.context import open_store
    from harness.report.api import default_name, store_dir
    from harness.report.fleet import render_fleet_report

    store = open_store(db_url, existing=True)
    try:
        out = output or store_dir(store) / default_name(campaign="fleet", lang=lang)
        return render_fleet_report(store, check_output(out, "--output"), lang, fmt,
                                   filters=filters, logo=logo)
    finally:
        store.close()


@click.command("export")
@click.argument("target", nargs=-1)
@click.option("--campaign", default=None,
              help="Pack every run of this campaign (NAME, or SITE/CAMPAIGN).")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="The pack to write (default: next to the store, dated .tar.gz).")
@click.option("--lang", type=click.Choice(["en", "zh"]), default="en", show_default=True,
              help="Language of the report inside the pack.")
@db_option
def export(target: tuple[str, ...], campaign: str | None, output: Path | None, lang: str,
           db_url: str | None) -> None:
    """Write an evidence pack: `gate export RUN|--campaign NAME -o pack.tar.gz` (the runs'
    store rows as SQLite, their artifacts, the rendered report, a sha256 manifest).

    Check one: `gate export verify FILE` (exit 0 when every file matches, 3 naming the
    files that do not)."""
    if target and target[0] == "verify":
        if len(target) != 2 or campaign:
            raise UsageError("usage: gate export verify FILE", key="gate export verify")
        from harness.report.export import verify_pack

        n = verify_pack(Path(target[1]))
        click.echo(f"ok: {n} files match the manifest of {target[1]}")
        return
    if len(target) > 1:
        raise UsageError(f"unexpected arguments: {' '.join(target[1:])}", key="gate export")
    run_id = None
    if target:
        try:
            run_id = int(target[0])
        except ValueError:
            raise UsageError(f"not a run id: {target[0]!r}", key="gate export",
                             hint="gate export RUN | --campaign NAME | verify FILE") from None
    _one_target(run_id, campaign, "gate export")
    from harness.cli.common import stderr_console
    from harness.cli.context import open_store
    from harness.report.api import store_dir
    from harness.report.export import export_pack

    store = open_store(db_url, existing=True)
    try:
        day = time.strftime("%Y%m%d", time.gmtime())
        # SITE/CAMPAIGN names a file, not a directory: acme_poc, as the report's names
        name = f"gate-evidence-run{run_id}-{day}.tar.gz" if run_id is not None else (
            f"gate-evidence-{str(campaign).replace('/', '_')}-{day}.tar.gz")
        out = check_output(output or store_dir(store) / name, "--output")
        path, warnings = export_pack(store, out, run_id=run_id, campaign=campaign, lang=lang)
    finally:
        store.close()
    from rich.markup import escape

    console = stderr_console()
    for w in warnings:
        console.print("[yellow]warning:[/] " + escape(w), highlight=False)
    click.echo(str(path))
