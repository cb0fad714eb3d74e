"""A run ended by Ctrl-C / SIGTERM is finalised ABORTED with what it measured: its
measured content changed as `gate runs abort` changes it, so its revision goes up once
(harness/runner.py), and a sync target holding an earlier revision of it is sent the run
again as "updated". The continuation is what `gate resume` does (reopen, then the runner
on the same run), on a custom G1 suite, since only G3 / G4 resume from the CLI and both
need engines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from gate_testing import GATE, SUITES, GateRunner

from harness.store import runs as store_runs
from harness.store.db import Store

# `gate resume`'s second half (harness.campaign.resume reopened the run first): the runner
# on the reopened run, with the slow suite in place of the packaged one.
RESUMED = """
import sys
from pathlib import Path
from harness.config.loader import load_config
from harness.runner import RunRequest, run_gate
from harness.store.db import Store
run_gate(RunRequest(gate="G1", loaded=load_config(Path("gate.yaml")), store=Store(sys.argv[1]),
                    suite_dir=Path(sys.argv[2]), resume_run=int(sys.argv[3])))
"""


def interrupted(site_dir: Path, argv: list[str]) -> None:
    """Start `argv` in the site, wait until the slow suite's second check runs, SIGTERM it
    (as Ctrl-C ends it: the runner turns SIGTERM into KeyboardInterrupt)."""
    flag = site_dir / "started.flag"
    flag.unlink(missing_ok=True)
    env = {**os.environ, "GATE_DB": f"sqlite:///{site_dir / 'gate.db'}"}
    proc = subprocess.Popen(argv, cwd=site_dir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not flag.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the slow suite never started"
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err


def revision(site_dir: Path) -> tuple[str, int]:
    store = Store(f"sqlite:///{site_dir / 'gate.db'}")
    run = store_runs.get_run(store, 1)
    store.close()
    return run.status, run.revision


def synced(gate_cli: GateRunner, target: Path) -> dict[str, object]:
    out = gate_cli("sync", "--to", f"sqlite:///{target}", "--json")
    assert out.returncode == 0, out.stderr
    (run,) = json.loads(out.stdout)["runs"]
    return dict(run)


def test_an_interrupted_run_goes_up_one_revision_and_syncs_again_as_updated(
        gate_cli: GateRunner, site_dir: Path) -> None:
    slow = str(SUITES / "slow")
    interrupted(site_dir, [*GATE, "run", "G1", "--suite", slow])
    assert revision(site_dir) == ("ABORTED", 2)  # started at 1, finalised interrupted: 2
    target = site_dir / "fleet.db"
    first = synced(gate_cli, target)
    assert (first["action"], first["revision"]) == ("added", 2)

    store = Store(f"sqlite:///{site_dir / 'gate.db'}")
    store_runs.reopen_run(store, 1)  # `gate resume 1`: RUNNING again, revision 3
    store.close()
    interrupted(site_dir, [sys.executable, "-c", RESUMED,
                           f"sqlite:///{site_dir / 'gate.db'}", slow, "1"])
    assert revision(site_dir) == ("ABORTED", 4)  # once for the resume, once for Ctrl-C
    again = synced(gate_cli, target)
    assert (again["action"], again["revision"], again["target_revision"]) == (
        "updated", 4, 2)
    assert synced(gate_cli, target)["action"] == "skipped"
