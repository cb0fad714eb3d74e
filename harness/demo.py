"""`gate demo`: a whole campaign against a simulated lab on this machine.

It writes a real site (gate.yaml, hosts.ini, a store) whose arms start and stop simulated
engines (`python -m harness.sim.control`), runs G1, G2, G3 and G4 (its soak shortened to
24 s) in order, each after the one before passed, renders the report and prints the
verdicts. The soak scenarios give G4's engine a fault a soak must catch (SOAK_LAYOUT).
Everything it writes stays in the output directory for a look afterwards.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from harness.workflow.demo_site import site_yaml, spawner_socket

if TYPE_CHECKING:
    from collections.abc import Callable

    from harness.campaign import CampaignEvents, CampaignStep
    from harness.runner import Progress
    from harness.store import Store

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

    sock = spawner_socket(root)
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

        cfg = loaded.config
        reports = render_campaign_report(store, f"{cfg.site.name}/{cfg.campaign.name}",
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
