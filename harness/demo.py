"""`gate demo`: a whole campaign against a simulated lab on this machine.

It writes a real site (gate.yaml, hosts.ini, a store) whose arms start and stop simulated
engines (`python -m harness.sim.control`), runs G1, G2 and G3 in order, each after the
one before passed (G4's suite says it stays out of a demo: its soak cannot end in
minutes; none is forced), renders the report and prints the verdicts. Everything it
writes stays in the output directory for a look afterwards.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from harness.campaign import CampaignEvents, CampaignStep
    from harness.runner import Progress
    from harness.store import Store

# scenario -> the simulator profile of its engines; `bad-arrival` stops at G1 (its GPU
# host's link runs below capability: harness.workflow.demo_hardware.py), so G3 never runs.
SCENARIOS = {"default": "r1-qwen32b", "null": "null", "broken-baseline": "broken-baseline",
             "bad-arrival": "r1-qwen32b"}
SPAWNER_SOCKET = "spawner.sock"  # in the site dir; an AF_UNIX path: at most 107 bytes
DEMO_SPEED = 30.0  # above ~50 Python overhead starts to blur the modelled ratios (docs/sim.md)


PORT_LOCKS = "gate-demo-ports"  # under the temp dir: one lock file per port a demo holds


class PortLease:
    """Ports P and P+1 on loopback (TP4x2 needs two), held for a whole demo.

    Why: the engines rebind their port at every cold restart (hundreds per demo). A port
    the kernel hands out for port 0 is an ephemeral one, which a second demo beside this
    one (or any outgoing connection, the load generator's own) may take in the moment an
    engine is down: "address already in use" in the middle of G3. So the lease picks a
    port below the kernel's ephemeral range and holds an flock on a lock file per port
    until `release`, which every other demo's lease respects."""

    def __init__(self, port: int, files: list[int]) -> None:
        self.port = port
        self._files = files

    @classmethod
    def take(cls, attempts: int = 200) -> PortLease:
        import fcntl
        import random
        import tempfile

        folder = Path(tempfile.gettempdir()) / PORT_LOCKS
        folder.mkdir(exist_ok=True)
        low, high = _below_ephemeral()
        rng = random.Random()
        for _ in range(attempts):
            port = rng.randrange(low, high)
            files: list[int] = []
            try:
                for p in (port, port + 1):
                    fd = os.open(folder / f"{p}.lock", os.O_RDWR | os.O_CREAT, 0o666)
                    files.append(fd)
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if all(_bindable(p) for p in (port, port + 1)):
                    return cls(port, files)
            except OSError:
                pass
            for fd in files:
                os.close(fd)
        raise OSError(f"no two adjacent free ports on loopback in {low}..{high}")

    def release(self) -> None:
        for fd in self._files:
            os.close(fd)
        self._files = []

    def __del__(self) -> None:
        self.release()


def _below_ephemeral() -> tuple[int, int]:
    """A range of ports the kernel does not hand out on its own (Linux: below
    ip_local_port_range); 20000..32000 when that cannot be read."""
    try:
        first = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first = 32768
    low = 20000 if first > 21000 else 1025
    return low, max(low + 100, first - 2)


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _engine_cmd(verb: str, state: Path, extra: list[str]) -> str:
    argv = [sys.executable, "-m", "harness.sim.control", verb, "--state-dir", str(state), *extra]
    return "[" + ", ".join(_q(a) for a in argv) + "]"


def _q(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def site_yaml(root: Path, scenario: str, port: int, speed: float) -> str:
    from harness.workflow.demo_hardware import g1_yaml, g2_yaml, kv_volume

    profile = SCENARIOS[scenario]
    engines = root / "engines"
    tier = root / "tier"
    disk = root / "storage" / "diskstats"
    # The GPU host's side of the tier's reads: its KV volume is the tier directory, on a
    # line numbered as findmnt -T numbers that directory's filesystem (none: no findmnt).
    volume = kv_volume(tier, root / "gpu1" / "diskstats")

    def arm(name: str, tier_on: bool) -> str:
        state = engines / f"{name}-{{layout}}-{{instance}}"
        common = ["--profile", profile, "--port", "{port}", "--tp", "{tp}",
                  "--instance", "{instance}", "--speed", str(speed),
                  "--external-tier", "on" if tier_on else "off", "--diskstats", str(disk),
                  "--seed", "7", "--cache-dir", str(root / "tokcache"),
                  "--stream-interval", "8"]
        if tier_on:
            common += ["--tier-dir", str(tier)]
        if volume is not None:
            common += ["--kv-diskstats", volume.diskstats, "--kv-dev", volume.majmin]
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
                f"    health_timeout: 60\n{differs}"
                # each engine's stdout and stderr (harness.sim.control), fetched into the
                # evidence after every stop
                f"    logs: [{_q(str((state / 'engine.log').absolute()))}]\n")

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
    # What the demo's steps take on a quiet 2-core machine (benchmarks/demo.py), so that
    # `gate run G3 --dry-run -c` this file estimates minutes, not a real site's hours.
    estimate: {{start_s: 0.6, restart_s: 0.6, stop_s: 0.4, drop_caches_s: 0,
                recompute_tokens_per_s: 900000, tier_tokens_per_s: 1500000}}
    evidence:
      diskstats: {disk}
      storage_groups: [storage]
{volume.yaml() if volume is not None else ""}  g4:
    # A soak of seconds, not 72 h: a demo shows how G4 judges windows, not a stack's
    # stability (a soak shorter than 72 h is a weakened setting: it needs a sign-off).
    duration: 24s
    window: 2s
    baseline: 8s
    concurrency: 4
# `gate plan` holds the SLA against G2's figures of this fio target (docs/plan.md)
plan: {{volume: volume}}
report: {{lang: en}}
"""


@dataclass(frozen=True)
class DemoSite:
    root: Path
    config: Path
    db_url: str
    ports: PortLease  # held while the site's engines may run; release() when done


def write_site(out: Path, scenario: str, speed: float = DEMO_SPEED) -> DemoSite:
    stamp = f"{time.strftime('%Y%m%d-%H%M%S')}-{scenario}"
    for n in range(100):  # two demos started in the same second each get their own
        root = out / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            root.mkdir(parents=True, exist_ok=False)
            break
        except FileExistsError:
            continue
    (root / "storage").mkdir()
    (root / "tier").mkdir()  # the KV volume G3 resolves before any engine starts
    (root / "gpu1").mkdir()
    (root / "fio-local").mkdir()  # G2 never creates a fio target: a site mounts its own
    (root / "storage" / "fio-volume").mkdir()
    (root / "storage" / "gds").mkdir()  # gdsio's directory, likewise
    from harness.workflow.demo_hardware import inventory

    (root / "hosts.ini").write_text(inventory(scenario), encoding="utf-8")
    (root / "known_hosts").touch()
    config = root / "gate.yaml"
    ports = PortLease.take()
    config.write_text(site_yaml(root, scenario, ports.port, speed), encoding="utf-8")
    from harness.workflow.demo_hardware import kv_volume

    volume = kv_volume(root / "tier", root / "gpu1" / "diskstats")
    if volume is not None:  # G3 resolves it before any engine runs
        volume.zero_line()
    return DemoSite(root, config, f"sqlite:///{root / 'gate.db'}", ports)


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


class LoadWatch:
    """The machine's 1-minute load average, sampled while the demo runs (its highest):
    the demo's engines and load generator share these cores with whatever else runs."""

    def __init__(self, every: float = 2.0) -> None:
        import threading

        self.highest = 0.0
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="load-watch", daemon=True)

    def _sample(self) -> None:
        while True:
            self.highest = max(self.highest, os.getloadavg()[0])
            if self._stop.wait(self._every):
                return

    def __enter__(self) -> LoadWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def busy_line(load: float, cores: int, healths: list[tuple[float, dict[str, object]]]) -> str:
    """One line saying the machine was too busy for the simulated lab, with what was
    measured; '' when it was not. The demo alone keeps about one core per engine busy,
    so a load above cores + 1 means other jobs competed; a simulator that woke later than
    a tenth of a phase behind its schedule had its modelled timings stretched."""
    worst_share = 0.0
    worst_s = 0.0
    for duration, health in healths:
        lag = health.get("sim_lag_max_s")
        if isinstance(lag, int | float) and duration > 0:
            worst_s = max(worst_s, float(lag))
            worst_share = max(worst_share, float(lag) / duration)
    loaded = load > cores + 1
    lagging = worst_share > 0.10
    if not (loaded or lagging):
        return ""
    return (f"this machine was too busy for the simulated lab: load average up to {load:.1f} "
            f"on {cores} cores, the simulator up to {worst_s:.2f} s ({worst_share:.0%} of a "
            "phase) behind its schedule; the arms' ratios compress under load, so rerun "
            "`gate demo` when the machine is quieter (docs/metrics.md \"Phase health\")")


@dataclass(frozen=True)
class DemoOutcome:
    site: DemoSite
    steps: list[CampaignStep]
    reports: list[Path]
    report_problem: str  # why no report was rendered, or ''
    busy: str = ""  # busy_line() for the run that did not PASS, when the machine was busy

    @property
    def exit_code(self) -> int:
        """The verdict where the campaign stopped: the first gate that did not PASS (a G1
        STOP-LOSS ends the demo there), else PASS once the demo's last gate ran (ERROR when
        it never did). A gate the demo runs shortened (its `demo_shortened` hook) that
        ended only needing a sign-off is as far as the demo can take it: PASS here."""
        from harness.runner import suite_hooks

        for step in self.steps:
            outcome = step.outcome
            if outcome is None or outcome.exit_code == 0:
                continue
            if outcome.needs_signoff and step.gate.built \
                    and suite_hooks(step.gate.id).demo_shortened:
                continue
            return outcome.exit_code
        built = [s for s in self.steps if s.gate.built]
        return 0 if built and built[-1].outcome is not None else 3


def run_demo(out: Path, scenario: str, lang: str, speed: float, fmt: str,
             overrides: tuple[str, ...], *,
             events: CampaignEvents, progress: Progress | None,
             say: Callable[[str], None], db_url: str | None = None) -> DemoOutcome:
    """Write the site, run the campaign against it (every gate whose suite runs in a
    demo: G1, G2, G3 and G4's soak shortened to seconds; a gate not built is passed over
    and any gate after one would run FORCED), render the report. The caller shows what
    happens. The store is the site's gate.db unless `db_url` names another."""
    from harness.campaign import run_campaign
    from harness.config.loader import load_config
    from harness.errors import GateError
    from harness.registry import GATES
    from harness.runner import RunRequest, suite_hooks
    from harness.store import Store

    gates = tuple(g for g in GATES if not g.built or suite_hooks(g.id).in_demo)
    site = write_site(out, scenario, speed)
    if db_url:
        site = replace(site, db_url=db_url)
    say(f"[bold]gate demo[/] ({scenario}) in {site.root}")
    loaded = load_config(site.config, overrides)
    if loaded.overrides:
        from rich.markup import escape

        say(escape("--set " + ", ".join(loaded.overrides)))
    store = Store(site.db_url)
    spawner = _start_spawner(site.root, say)
    try:
        with LoadWatch() as load:
            steps = run_campaign(RunRequest(gate=gates[0].id, loaded=loaded, store=store,
                                            artifact_root=site.root / "artifacts"),
                                 gates, skip_unbuilt=True, events=events, progress=progress)
    finally:
        _stop_leftovers(site.root)
        site.ports.release()
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
    return DemoOutcome(site, steps, reports, problem, _busy(store, steps, load.highest))


def _busy(store: Store, steps: list[CampaignStep], load: float) -> str:
    """busy_line() for the run where the campaign stopped short of PASS, when it measured
    load phases (a PASS needs no excuse; a hardware check is not slowed by a busy
    machine)."""
    from harness.store import runs as store_runs
    from harness.verdict import Verdict

    for step in steps:
        if step.outcome is not None and step.outcome.verdict is not Verdict.PASS:
            health = store_runs.measured_phase_health(store, step.outcome.run_id)
            return busy_line(load, os.cpu_count() or 1, health) if health else ""
    return ""
