"""The pytest plugin that turns a gate suite's test outcomes into check rows.

Mapping (DESIGN.md 'Gate semantics'; a wrong STOP-LOSS costs the vendor the deal, a wrong
PASS costs the customer, so only a real assertion is a failure):
- call passed                                -> PASS
- AssertionError / pytest.fail in the call   -> STOP-LOSS (a measured criterion missed)
- harness.errors.Inconclusive in the call    -> INCONCLUSIVE (NeedsSignoff flags the run)
- any other exception, or setup / teardown
  / collection error                         -> ERROR (the harness or the site failed)
- skipped: SKIPPED if the config marks the check optional (by its exact function name
  or id), else ERROR

Each check is committed to the store the moment it finishes.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.config.inventory import HostSpec, Inventory
from harness.config.loader import LoadedConfig
from harness.errors import GateError, Inconclusive, NeedsSignoff
from harness.labels import check_label
from harness.reasons import Reason
from harness.store import Store
from harness.store import runs as store_runs
from harness.store.recorder import RunRecorder
from harness.verdict import SKIPPED, Verdict

PLUGIN_NAME = "gate-harness"


@dataclass
class CheckRecorder:
    """What a check expected and measured; a test fills it, the plugin stores it."""

    host: str | None = None
    expected: str = ""
    measured: str = ""
    # The same words as codes + parameters (harness.reasons), for the report's languages:
    # "expected", "measured", and "message" (why the check did not pass; set it just
    # before raising). Stored in the check's details.
    why: dict[str, Reason] = field(default_factory=dict)

    def expect(self, text: object, why: Reason | None = None) -> None:
        self.expected = str(text)
        self._keep("expected", why)

    def measure(self, value: object, why: Reason | None = None) -> None:
        self.measured = str(value)
        self._keep("measured", why)

    def explain(self, why: Reason) -> None:
        """Why the check is about to fail, as a Reason (the raised text stays English)."""
        self.why["message"] = why

    def _keep(self, key: str, why: Reason | None) -> None:
        if why is None:
            self.why.pop(key, None)
        else:
            self.why[key] = why

    def details(self, outcome: str) -> dict[str, object]:
        """What the check row stores: a message reason only for a check that did not pass."""
        return {k: w.as_json() for k, w in self.why.items()
                if k != "message" or outcome != Verdict.PASS.value}


@dataclass
class GateContext:
    """Everything a gate suite's fixtures need; handed to the plugin, not global."""

    gate: str
    run_id: int
    store: Store
    loaded: LoadedConfig
    inventory: Inventory
    artifact_dir: Path
    optional: tuple[str, ...] = ()
    suite_dir: Path | None = None  # only an assertion raised in here is a STOP-LOSS
    resume_from: int | None = None
    dry_run: bool = False
    simulated: bool = False  # configured (gate.yaml `simulated:`) or detected
    detected_simulated: bool = False  # a host or server of this run answered as simulated
    # Taken from the environment when the command line started (harness/secrets.py);
    # never in the config, never stored, never inherited by a child process.
    sudo_password: str | None = field(default=None, repr=False)
    pool: Any = None  # harness.transport.TransportPool, created lazily

    @property
    def recorder(self) -> RunRecorder:
        """How the suite records events, host facts and resume bookkeeping for this run
        (a suite imports no harness.store)."""
        return RunRecorder(self.store, self.run_id)

    def transport_pool(self) -> Any:
        if self.pool is None:
            from harness.transport import TransportPool

            # A simulated host's answer flags the run, whichever suite asked.
            self.pool = TransportPool(self.inventory, known_hosts=self.loaded.known_hosts_path,
                                      sudo_password=self.sudo_password,
                                      on_simulated=self.mark_simulated)
        return self.pool

    def mark_simulated(self) -> None:
        """Called when a server or a host's hardware reports it is simulated (detected,
        not only configured)."""
        self.detected_simulated = True
        if not self.simulated:
            self.simulated = True
            store_runs.mark_simulated(self.store, self.run_id)


@dataclass
class Tally:
    outcomes: list[Verdict] = field(default_factory=list)
    signoff_only: bool = True  # every INCONCLUSIVE so far was a NeedsSignoff
    reasons: list[str] = field(default_factory=list)
    collected: int = 0
    deselected: int = 0
    interrupted: bool = False
    reported: set[str] = field(default_factory=set)  # nodeids with an outcome row
    ids: set[str] = field(default_factory=set)  # check ids (test_cell[TP8-c4]) with a row
    collected_ids: list[str] = field(default_factory=list)
    deselected_ids: list[str] = field(default_factory=list)


def is_optional(optional: tuple[str, ...], check_id: str, function: str) -> bool:
    """An entry of `gates.gN.optional` names a check exactly: its function (`test_gdsio`,
    every host's) or its whole id (`test_gdsio[gpu1]`). Never a substring: `test_gds`
    does not make a skipped `test_gdsio[...]` SKIPPED."""
    return check_id in optional or function in optional


def _short(exc: BaseException) -> str:
    if isinstance(exc, GateError):
        return exc.one_line()
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())[:2000]


class GatePlugin:
    def __init__(self, ctx: GateContext, progress: Any = None) -> None:
        self.ctx = ctx
        self.tally = Tally()
        self.progress = progress
        self.started = time.time()  # a resumed run's checks replace its earlier attempt's

    # -- fixtures -------------------------------------------------------------------------
    @pytest.fixture(scope="session")
    def gate(self) -> GateContext:
        return self.ctx

    @pytest.fixture(scope="session")
    def site(self) -> Any:
        return self.ctx.loaded.config

    @pytest.fixture(scope="session")
    def inventory(self) -> Inventory:
        return self.ctx.inventory

    @pytest.fixture
    def check(self, request: pytest.FixtureRequest) -> CheckRecorder:
        recorder: CheckRecorder = request.node.stash[_RECORDER]
        return recorder

    @pytest.fixture
    def host_spec(self, request: pytest.FixtureRequest) -> HostSpec:
        spec: HostSpec = request.param
        request.node.stash[_RECORDER].host = spec.name
        return spec

    @pytest.fixture
    def host(self, host_spec: HostSpec) -> Iterator[Any]:
        """A Transport to the parametrized host (see @pytest.mark.hosts(group))."""
        yield self.ctx.transport_pool().get(host_spec.name)

    # -- collection -----------------------------------------------------------------------
    def pytest_configure(self, config: pytest.Config) -> None:
        config.addinivalue_line("markers", "hosts(group): run once per host of the group")
        config.stash[GATE_KEY] = self.ctx

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "host_spec" not in metafunc.fixturenames:
            return
        marker = metafunc.definition.get_closest_marker("hosts")
        group = marker.args[0] if marker else "all"
        specs = (list(self.ctx.inventory.hosts.values()) if group == "all"
                 else self.ctx.inventory.group(group))
        metafunc.parametrize("host_spec", specs, ids=[s.name for s in specs], indirect=True)

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            item.stash[_RECORDER] = CheckRecorder()

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.tally.deselected += len(items)
        self.tally.deselected_ids += [item.name for item in items]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.tally.collected = len(session.items)
        self.tally.collected_ids = [item.name for item in session.items]

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self._record(report.nodeid or "collection", "collection", None, Verdict.ERROR,
                         f"collection failed: {str(report.longrepr)[-1500:]}", "collect", 0.0)

    # -- outcomes -------------------------------------------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, None]:
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        recorder: CheckRecorder = item.stash[_RECORDER]
        verdict: Verdict | str | None = None
        message = ""
        if report.when == "call":
            if report.passed:
                verdict = Verdict.PASS
            elif report.skipped:
                verdict, message = self._skip(item, report)
            elif call.excinfo is not None:
                exc = call.excinfo.value
                message = _short(exc)
                if isinstance(exc, Inconclusive):
                    verdict = Verdict.INCONCLUSIVE
                    if not isinstance(exc, NeedsSignoff):
                        self.tally.signoff_only = False
                elif isinstance(exc, AssertionError | pytest.fail.Exception) and \
                        self._raised_by_suite(call.excinfo):
                    verdict = Verdict.STOP_LOSS
                else:
                    verdict = Verdict.ERROR
                    if not isinstance(exc, GateError):
                        message = f"{type(exc).__name__}: {message}"
        elif report.failed:  # setup or teardown error
            failure = call.excinfo.value if call.excinfo else None
            verdict = Verdict.ERROR
            message = f"{report.when} error: " + (_short(failure) if failure else "")
            if isinstance(failure, Inconclusive):
                verdict = Verdict.INCONCLUSIVE
                self.tally.signoff_only = False
        elif report.when == "setup" and report.skipped:
            verdict, message = self._skip(item, report)
        if verdict is None:
            return
        name = getattr(item, "originalname", item.name)
        self.tally.ids.add(item.name)
        self._record(item.nodeid, name, recorder.host, verdict, message, report.when,
                     report.duration, recorder)

    def _raised_by_suite(self, excinfo: pytest.ExceptionInfo[BaseException]) -> bool:
        """A criterion missed is an assertion in the gate's own checks; an assert that
        fires inside the harness or a library is a bug, and a bug never decides."""
        if self.ctx.suite_dir is None:
            return True
        suite = self.ctx.suite_dir.resolve()
        frames = [Path(str(e.path)).resolve() for e in excinfo.traceback
                  if "_pytest" not in Path(str(e.path)).parts]
        return bool(frames) and suite in frames[-1].parents

    def _skip(self, item: pytest.Item, report: pytest.TestReport) -> tuple[Verdict | str, str]:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")  # pytest's own word; the verdict says it
        if is_optional(self.ctx.optional, item.name, getattr(item, "originalname", item.name)):
            return SKIPPED, f"optional, skipped: {reason}"
        return Verdict.ERROR, f"skipped but not optional in the config: {reason}"

    def _record(self, nodeid: str, name: str, host: str | None, verdict: Verdict | str,
                message: str, stage: str, duration: float,
                recorder: CheckRecorder | None = None) -> None:
        self.tally.reported.add(nodeid)
        label = check_label(self.ctx.gate, nodeid, name)
        if isinstance(verdict, Verdict):
            self.tally.outcomes.append(verdict)
            if verdict is not Verdict.PASS and message:
                self.tally.reasons.append(f"{label}{f' [{host}]' if host else ''}: {message}")
        store_runs.record_check(
            self.ctx.store, self.ctx.run_id, nodeid=nodeid, name=name, host=host,
            outcome=verdict.value if isinstance(verdict, Verdict) else verdict, message=message,
            expected=recorder.expected if recorder else "",
            measured=recorder.measured if recorder else "", stage=stage, duration=duration,
            attempt_started=self.started if self.ctx.resume_from is not None else None,
            details=recorder.details(verdict.value if isinstance(verdict, Verdict)
                                     else verdict) if recorder else None,
        )
        if self.progress is not None:
            self.progress(label, host, verdict, message)

    def pytest_keyboard_interrupt(self) -> None:
        self.tally.interrupted = True


_RECORDER = pytest.StashKey[CheckRecorder]()
GATE_KEY = pytest.StashKey[GateContext]()  # a suite's conftest reads it at collection time
