"""What generic code may ask a gate's packaged suite, typed: each suite package
(`harness.gates.<suite>`) exports `HOOKS = SuiteHooks(...)`, and mypy holds every
packaged suite to this shape (the runner, the campaign, the CLI and the demo call only
these, never `if gate == "G3"`; docs/gates.md).

Why a frozen dataclass of callables and not a Protocol over the module's names: a hook a
suite leaves out is `None` here, visibly, where `getattr(module, "release", None)` made a
misspelt name a silently missing hook.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from harness.config.decision import Deviation
from harness.config.inventory import Inventory
from harness.config.loader import LoadedConfig
from harness.config.models import SiteConfig
from harness.store import Store


@dataclass(frozen=True)
class DryRunStep:
    """One step a run would take, with its estimated duration."""

    cell: str
    repetition: int
    arm: str
    step: str  # start, warm, restart, drop_caches, measured, stop, soak, ...
    estimate_s: float


@dataclass(frozen=True)
class DryRun:
    """`gate run GATE --dry-run`: the steps, lines that say what each cell asks, and the
    total at the fewest and the most repetitions the config allows."""

    title: str
    steps: tuple[DryRunStep, ...]
    notes: tuple[str, ...]
    total_min_s: float
    total_max_s: float
    at_min: str  # what the fewest repetitions are ("2 pairs per cell")
    at_max: str
    basis: str  # where the estimates come from (a config key)


@dataclass(frozen=True)
class ToolNeed:
    """A program a planned check runs on a host: looked for there before the run starts
    (harness/workflow/preflight.py), so its absence is one line, not an ERROR attempt."""

    host: str
    argv: tuple[str, ...]  # the command the check sends; argv[0] is the program
    checks: tuple[str, ...]  # the planned check ids that run it (all optional: not needed)
    sudo: bool = False  # the check runs it with sudo (found on sudo's PATH; sudo must work)
    # the config entry that lets the checks run without it ("": `gates.<key>.optional`)
    instead: str = ""


@dataclass(frozen=True)
class UrlNeed:
    """A service the gate reads but never starts (a KV store's /metrics): it must answer."""

    url: str
    key: str  # the config key that names it
    checks: tuple[str, ...]


@dataclass(frozen=True)
class Needs:
    """What a gate's planned checks need of the site before anything is measured."""

    tools: tuple[ToolNeed, ...] = ()
    urls: tuple[UrlNeed, ...] = ()
    # hosts whose checks run commands with sudo (beside the tools' own sudo)
    sudo_hosts: tuple[str, ...] = ()
    # the checks that ship the load agent to the first [client] host (load.placement:
    # client); empty: the gate runs no load there
    load_agent: tuple[str, ...] = ()


class Release(Protocol):
    """Stop what a killed run of this gate left running (engines, soaks); the lines say
    what was done, for the user."""

    def __call__(self, loaded: LoadedConfig, inventory: Inventory, store: Store, run_id: int,
                 *, sudo_password: str | None) -> list[str]: ...


@dataclass(frozen=True)
class SuiteHooks:
    """A packaged suite's answers. Only `expected_checks` is required: a suite without a
    plan could never prove its PASS (harness/runner.py compares the plan with the stored
    checks)."""

    # the check ids a PASS needs, for this config and inventory
    expected_checks: Callable[[SiteConfig, Inventory], list[str]]
    # refuse (UsageError) a config this gate cannot run, before a run row exists
    validate: Callable[[SiteConfig, Inventory], None] | None = None
    # why this config does not set the gate up at all (None: it does); `gate config
    # validate` says so instead of refusing the config, since a site fills it in later
    unconfigured: Callable[[SiteConfig], str | None] | None = None
    # settings weaker than the defaults: a PASS then needs a reviewer's sign-off
    weakened: Callable[[SiteConfig], list[str]] | None = None
    # checks the suite itself may skip (G1: items nothing on the host can verify)
    optional_checks: Callable[[SiteConfig, Inventory], list[str]] | None = None
    # what `gate runs abort` stops after a killed run (None: nothing is left running)
    release: Release | None = None
    # `gate run GATE --dry-run` (None: the gate has no phases worth estimating)
    dry_run: Callable[[SiteConfig], DryRun] | None = None
    # the decision settings a stored run's config (its JSON) moved off their defaults,
    # for `gate runs show` (None: the gate has no decision settings)
    deviations: Callable[[Mapping[str, Any]], list[Deviation]] | None = None
    # what `gate config validate` checks beyond `validate` and says after "ok" (G3: the
    # layouts fit the BOM's GPUs; the layout hosts)
    config_summary: Callable[[SiteConfig, Inventory], str] | None = None
    # whether `gate demo` runs this gate (False: it could not finish in a demo's minutes)
    in_demo: bool = True
    # what a run of this gate still has running on its own after its process ended (G4: a
    # detached soak), in a line for `gate status`; None: nothing
    detached: Callable[[Store, int], str | None] | None = None
    # the demo runs a shortened version (G4: a soak of seconds, a weakened setting), so
    # its best end is "needs a sign-off": that end does not set the demo's exit code
    demo_shortened: bool = False
    # what the planned checks need of the hosts (tools, sudo, the load agent, services),
    # checked by the pre-flight before a run row exists (None: only the hosts' reach)
    needs: Callable[[SiteConfig, Inventory], Needs] | None = None
