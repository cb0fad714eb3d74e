"""`gate resume` continues a run only with the inputs it started with: the config, the
inventory and every local file the config names (here an arm's playbook). A change to
any of them is refused (exit 4) naming the file; a run recorded in the old digest form
(config only) is refused with a clear line; the gate run itself records the inputs.

The G3 runs are recorded as the runner records them (harness.workflow.run_inputs), so
nothing here starts an engine: an unchanged resume goes on to the next refusal (the
recorded hosts differ), which shows the inputs check passed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from gate_testing import MINIMAL_CONFIG, SUITES, GateRunner

from harness.config.loader import load_config
from harness.store import runs
from harness.store.db import Store
from harness.store.lookups import artifact_paths
from harness.workflow import run_inputs as ri

PLAYBOOK = "- hosts: all\n  gather_facts: false\n  tasks: []\n"


def site(site_dir: Path) -> Path:
    (site_dir / "serve.yml").write_text(PLAYBOOK)
    cfg = site_dir / "gate.yaml"
    cfg.write_text(MINIMAL_CONFIG + f"""\
arms:
  baseline: {{start: {{playbook: "{site_dir / 'serve.yml'}"}}, stop: {{command: [/bin/true]}}}}
  accelerated: {{start: {{command: [/bin/true]}}, stop: {{command: [/bin/true]}}}}
layouts:
  - {{name: TP8, tp: 8, instances: [{{host: gpu1, port: 8000}}]}}
""")
    return cfg


def record_run(site_dir: Path, *, manifest: bool = True, old_form: bool = False) -> int:
    """A G3 run as the runner starts it: its digest, and its inputs beside its artifacts;
    recorded on another host list, so a resume that passes the inputs check stops at the
    hosts check."""
    loaded = load_config(site_dir / "gate.yaml")
    inputs = ri.run_inputs(loaded)
    store = Store(f"sqlite:///{site_dir / 'gate.db'}")
    rid = runs.start_run(store, runs.NewRun(
        campaign="test-campaign", site="test-site", customer="", kind="gate", gate="G3",
        config_hash=loaded.digest() if old_form else ri.digest(inputs),
        config_json=loaded.config.model_dump(mode="json"), hosts=("elsewhere",)))
    if manifest:
        path = site_dir / "artifacts" / f"run-{rid}" / ri.MANIFEST
        path.parent.mkdir(parents=True)
        path.write_text(ri.manifest_text(inputs))
        runs.add_artifact(store, rid, path, kind=ri.ARTIFACT_KIND)
    store.close()
    return rid


def refused(out: object, *needles: str) -> str:
    rc, err = out.returncode, out.stderr  # type: ignore[attr-defined]
    assert rc == 4 and "Traceback" not in err, err
    (line,) = [x for x in err.splitlines() if x.startswith("gate: error:")]
    for needle in needles:
        assert needle in line, line
    return line


def test_unchanged_inputs_pass_the_check(gate_cli: GateRunner, site_dir: Path) -> None:
    site(site_dir)
    rid = record_run(site_dir)
    refused(gate_cli("resume", str(rid)), "the inventory's hosts differ")


def test_a_changed_inventory_is_refused_naming_it(gate_cli: GateRunner,
                                                  site_dir: Path) -> None:
    site(site_dir)
    rid = record_run(site_dir)
    inventory = site_dir / "hosts.ini"
    inventory.write_text(inventory.read_text() + "gpu3 ansible_connection=local\n")
    line = refused(gate_cli("resume", str(rid)), f"the inventory changed since run {rid}")
    assert str(inventory.resolve()) in line
    # the same inventory given by another path is the same input
    inventory.write_text(inventory.read_text().replace("gpu3 ansible_connection=local\n", ""))
    (site_dir / "copy.ini").write_text(inventory.read_text())
    refused(gate_cli("resume", str(rid), "-i", str(site_dir / "copy.ini")),
            "the inventory's hosts differ")


def test_a_changed_playbook_is_refused_naming_it(gate_cli: GateRunner,
                                                 site_dir: Path) -> None:
    site(site_dir)
    rid = record_run(site_dir)
    (site_dir / "serve.yml").write_text(PLAYBOOK.replace("tasks: []", "tasks: [{ping: }]"))
    line = refused(gate_cli("resume", str(rid)),
                   f"the playbook arms.baseline.start changed since run {rid}")
    assert str(site_dir / "serve.yml") in line


def test_a_changed_config_is_said_as_before(gate_cli: GateRunner, site_dir: Path) -> None:
    cfg = site(site_dir)
    rid = record_run(site_dir)
    cfg.write_text(cfg.read_text().replace("port: 8000", "port: 8001"))
    refused(gate_cli("resume", str(rid)), "the config and --set overrides differ",
            "given now: no --set")


def test_without_the_record_the_change_is_still_refused(gate_cli: GateRunner,
                                                        site_dir: Path) -> None:
    site(site_dir)
    rid = record_run(site_dir, manifest=False)
    (site_dir / "serve.yml").write_text(PLAYBOOK + "# edited\n")
    refused(gate_cli("resume", str(rid)), "the inventory or a file the config names",
            "which one cannot be said")


def test_a_run_recorded_in_the_old_form_is_refused(gate_cli: GateRunner,
                                                   site_dir: Path) -> None:
    site(site_dir)
    rid = record_run(site_dir, old_form=True)
    refused(gate_cli("resume", str(rid)), "started by an earlier version of gate",
            "gate run G3")


def test_a_gate_run_records_its_inputs(gate_cli: GateRunner, site_dir: Path) -> None:
    """The runner's own record: the manifest artifact, whose digest is the run's."""
    out = gate_cli("run", "G1", "--suite", str(SUITES / "passing"))
    assert out.returncode == 0, out.stdout + out.stderr
    store = Store(f"sqlite:///{site_dir / 'gate.db'}")
    row = runs.get_run(store, 1)
    (path,) = artifact_paths(store, 1, ri.ARTIFACT_KIND)
    store.close()
    recorded = ri.parse_manifest(path.read_text())
    assert ri.digest(recorded) == row.config_hash and row.config_hash.startswith("v2:")
    assert len(row.config_hash) == 64
    roles = {i.role: i for i in recorded}
    inventory = (site_dir / "hosts.ini").read_bytes()
    assert roles["inventory"].sha256 == hashlib.sha256(inventory).hexdigest()
    assert json.loads(path.read_text())[0]["role"] == "config"
