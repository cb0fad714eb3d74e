"""`gate demo`: a whole campaign against a simulated lab on this machine.

It writes a real site (gate.yaml, hosts.ini, a store) whose arms start and stop simulated
engines (`python -m harness.sim.control`), runs the gates that exist in order (forcing
past the ones not built yet, recorded as FORCED), renders the report and prints the
verdicts. Everything it writes stays in the output directory for a look afterwards.
"""

from __future__ import annotations

import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from harness.campaign import CampaignEvents, CampaignStep
    from harness.runner import Progress

# scenario -> the simulator profile of its engines; `bad-arrival` stops at G1 (its GPU
# host's link runs below capability: harness.workflow.demo_hardware.py), so G3 never runs.
SCENARIOS = {"default": "r1-qwen32b", "null": "null", "broken-baseline": "broken-baseline",
             "bad-arrival": "r1-qwen32b"}
SPAWNER_SOCKET = "spawner.sock"  # in the site dir; an AF_UNIX path: at most 107 bytes
DEMO_SPEED = 30.0  # above ~50 Python overhead starts to blur the modelled ratios (docs/sim.md)


def free_port_pair() -> int:
    """A port P with P and P+1 free on loopback (TP4x2 needs two)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port < 65000:
            with socket.socket() as s2:
                try:
                    s2.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
            return port
    raise OSError("no two adjacent free ports on loopback")


def _engine_cmd(verb: str, state: Path, extra: list[str]) -> str:
    argv = [sys.executable, "-m", "harness.sim.control", verb, "--state-dir", str(state), *extra]
    return "[" + ", ".join(_q(a) for a in argv) + "]"


def _q(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def site_yaml(root: Path, scenario: str, port: int, speed: float) -> str:
    from harness.workflow.demo_hardware import g1_yaml, g2_yaml

    profile = SCENARIOS[scenario]
    engines = root / "engines"
    tier = root / "tier"
    disk = root / "storage" / "diskstats"

    def arm(name: str, tier_on: bool) -> str:
        state = engines / f"{name}-{{layout}}-{{instance}}"
        common = ["--profile", profile, "--port", "{port}", "--tp", "{tp}",
                  "--instance", "{instance}", "--speed", str(speed),
                  "--external-tier", "on" if tier_on else "off", "--diskstats", str(disk),
                  "--seed", "7", "--cache-dir", str(root / "tokcache"),
                  "--stream-interval", "8"]
        if tier_on:
            common += ["--tier-dir", str(tier)]
        # Engines fork from the demo's pre-imported spawner (restart reuses it); once the
        # demo is over and the spawner gone, these commands start new interpreters instead.
        start = [*common, "--spawner", str(root / SPAWNER_SOCKET)]
        # The only differences G3 accepts between the arms' running engines: the tier
        # switch, the tier's directory, each arm's own state path (docs/g3.md).
        differs = ("    differs_by: [\"argv:--external-tier\", \"argv:--tier-dir\", "
                   "\"argv:--url-file\", \"server:gate_sim*external_tier\"]\n"
                   if tier_on else "")
        return (f"  {name}:\n"
                f"    start: {{command: {_engine_cmd('start', state, start)}}}\n"
                f"    stop: {{command: {_engine_cmd('stop', state, [])}}}\n"
                f"    restart: {{command: {_engine_cmd('restart', state, [])}}}\n"
                f"    health_timeout: 60\n{differs}")

    return f"""\
# Written by `gate demo`: a simulated lab on this machine ({scenario} scenario,
# profile {profile}, speed x{speed:g}). Every run against it is flagged SIMULATED.
site: {{name: demo-lab, customer: "Demo Customer 演示客户", vendor: "Demo Vendor"}}
campaign: {{name: demo-{scenario}, operator: demo}}
inventory: hosts.ini
known_hosts: known_hosts
simulated: true
model: {{name: Qwen/Qwen2.5-32B-Instruct, layers: 64, kv_heads: 8, head_dim: 128, dtype: bf16}}
arms:
{arm("baseline", False)}{arm("accelerated", True)}
layouts:
  - {{name: TP8, tp: 8, instances: [{{host: gpu1, port: {port}}}]}}
  - {{name: TP4x2, tp: 4, instances: [{{host: gpu1, port: {port}}},
                                    {{host: gpu1, port: {port + 1}}}]}}
load: {{placement: local, timeout: 120}}
# min_docs 32: 4 x c documents a phase, at least 32 (a site's default is at least 64, for
# power at c=4). At c=4 sixteen documents made a 0.35 s phase, where one 30 ms stall of a
# simulated engine moved a pair's gain by 0.1; 32 documents halve that, at c=8 and c=16
# nothing changes, and the demo stays within minutes.
workload: {{kind: doc-qa, doc_tokens: 32000, question_tokens: 64, max_tokens: 128, seed: 7,
           min_docs: 32}}
gates:
{g1_yaml(scenario)}{g2_yaml(root)}  g3:
    tiers: [4, 8, 16]
    repetitions: {{min: 3, max: 8}}
    drop_caches_on: []        # simulated hosts: there is no page cache in front of the tier
    bootstrap: 1000
    evidence: {{diskstats: {disk}, storage_groups: [storage]}}
report: {{lang: en}}
"""


@dataclass(frozen=True)
class DemoSite:
    root: Path
    config: Path
    db_url: str


def write_site(out: Path, scenario: str, speed: float = DEMO_SPEED) -> DemoSite:
    root = out / f"{time.strftime('%Y%m%d-%H%M%S')}-{scenario}"
    root.mkdir(parents=True, exist_ok=False)
    (root / "storage").mkdir()
    from harness.workflow.demo_hardware import inventory

    (root / "hosts.ini").write_text(inventory(scenario), encoding="utf-8")
    (root / "known_hosts").touch()
    config = root / "gate.yaml"
    config.write_text(site_yaml(root, scenario, free_port_pair(), speed), encoding="utf-8")
    return DemoSite(root, config, f"sqlite:///{root / 'gate.db'}")


def _stop_leftovers(root: Path) -> None:
    """Whatever happened, no simulated engine outlives the demo."""
    try:
        from harness.sim.control import stop_engine
    except ImportError:  # pragma: no cover - the simulator ships with the harness
        return
    for state in sorted((root / "engines").glob("*")):
        try:
            stop_engine(state)
        except Exception:  # a stale pidfile must not hide the demo's own result
            continue


def _start_spawner(root: Path, say: Callable[[str], None]) -> Path | None:
    """The engines' spawner (harness.sim.spawner): ~150 engine starts and cold restarts
    cost a fork each instead of a new interpreter. Without it the demo still runs, slower."""
    from harness.errors import GateError
    from harness.sim.spawn_client import start_spawner

    sock = root / SPAWNER_SOCKET
    try:
        start_spawner(sock, root / "spawner.log", idle_exit=900)
    except GateError as exc:  # e.g. an --out path too long for a unix socket
        say(f"spawner not started ({exc.one_line()}): engines start without it")
        return None
    return sock


@dataclass(frozen=True)
class DemoOutcome:
    site: DemoSite
    steps: list[CampaignStep]
    reports: list[Path]
    report_problem: str  # why no report was rendered, or ''

    @property
    def exit_code(self) -> int:
        """The verdict where the campaign stopped: the first gate that did not PASS (a G1
        STOP-LOSS ends the demo there), else G3's PASS."""
        ran = [s.outcome for s in self.steps if s.outcome is not None]
        for outcome in ran:
            if outcome.exit_code != 0:
                return outcome.exit_code
        return 0 if any(s.gate.id == "G3" for s in self.steps if s.outcome) else 3


def run_demo(out: Path, scenario: str, lang: str, speed: float, fmt: str,
             overrides: tuple[str, ...], *,
             events: CampaignEvents, progress: Progress | None,
             say: Callable[[str], None]) -> DemoOutcome:
    """Write the site, run the campaign against it (gates not built are passed over, the
    later ones FORCED), render the report. The caller shows what happens."""
    from harness.campaign import run_campaign
    from harness.config.loader import load_config
    from harness.errors import GateError
    from harness.registry import GATES
    from harness.runner import RunRequest
    from harness.store import Store

    site = write_site(out, scenario, speed)
    say(f"[bold]gate demo[/] ({scenario}) in {site.root}")
    loaded = load_config(site.config, overrides)
    if loaded.overrides:
        from rich.markup import escape

        say(escape("--set " + ", ".join(loaded.overrides)))
    store = Store(site.db_url)
    spawner = _start_spawner(site.root, say)
    try:
        steps = run_campaign(RunRequest(gate=GATES[0].id, loaded=loaded, store=store,
                                        artifact_root=site.root / "artifacts"),
                             GATES, skip_unbuilt=True, events=events, progress=progress)
    finally:
        _stop_leftovers(site.root)
        if spawner is not None:
            from harness.sim.spawn_client import stop_spawner

            stop_spawner(spawner)
    reports: list[Path] = []
    problem = ""
    try:
        from harness.report import render_campaign_report

        reports = render_campaign_report(store, loaded.config.campaign.name,
                                         site.root / f"report-{lang}", lang, fmt,
                                         logo=loaded.logo_uri())
    except ImportError:
        problem = "not available in this version"
    except GateError as exc:
        problem = exc.one_line()
    return DemoOutcome(site, steps, reports, problem)
