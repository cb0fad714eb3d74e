"""`gate run` end to end through a subprocess: verdicts, exit codes, checks in the store,
PARTIAL, prerequisites, FORCED, lock, SIGTERM -> ABORTED, sign-off."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from gate_testing import GATE, SUITES, GateRunner


def suite(name: str) -> str:
    return str(SUITES / name)


def runs_json(gate_cli: GateRunner) -> list[dict[str, object]]:
    out = gate_cli("runs", "list", "--json")
    assert out.returncode == 0, out.stderr
    return list(json.loads(out.stdout))


def test_passing_suite_is_pass_and_checks_are_stored(gate_cli: GateRunner) -> None:
    out = gate_cli("run", "G1", "--suite", suite("passing"))
    assert out.returncode == 0, out.stderr
    assert "G1 run 1: PASS" in out.stdout
    show = json.loads(gate_cli("runs", "show", "1", "--json").stdout)
    assert [c["outcome"] for c in show["checks"]] == ["PASS", "PASS"]
    assert show["checks"][0]["expected"] == ">= 1" and show["checks"][0]["measured"] == 2
    assert show["partial"] is False and show["status"] == "FINISHED"


def test_mixed_outcomes_follow_precedence(gate_cli: GateRunner) -> None:
    out = gate_cli("run", "G1", "--suite", suite("mixed"))
    assert out.returncode == 1, out.stderr  # STOP-LOSS beats ERROR and INCONCLUSIVE
    show = json.loads(gate_cli("runs", "show", "1", "--json").stdout)
    outcomes = {c["name"]: c["outcome"] for c in show["checks"]}
    assert outcomes == {"test_pass": "PASS", "test_fail": "STOP-LOSS", "test_infra": "ERROR",
                        "test_inconclusive": "INCONCLUSIVE", "test_setup_error": "ERROR"}
    infra = next(c for c in show["checks"] if c["name"] == "test_infra")
    assert "gpu1" in infra["message"] and "nvidia-smi" in infra["message"]


def test_error_beats_inconclusive(gate_cli: GateRunner) -> None:
    assert gate_cli("run", "G1", "--suite", suite("inconclusive")).returncode == 3


def test_a_harness_bug_is_error_not_stop_loss_and_hosts_parametrize(
        gate_cli: GateRunner) -> None:
    out = gate_cli("run", "G1", "--suite", suite("hosts"))
    assert out.returncode == 3, out.stderr
    checks = json.loads(gate_cli("runs", "show", "1", "--json").stdout)["checks"]
    per_host = [(c["host"], c["outcome"]) for c in checks if c["name"] == "test_per_host"]
    assert per_host == [("gpu1", "PASS"), ("gpu2", "PASS")]
    bug = next(c for c in checks if c["name"] == "test_bug")
    assert bug["outcome"] == "ERROR" and "KeyError" in bug["message"]


def test_only_an_assertion_in_the_suite_is_stop_loss(gate_cli: GateRunner) -> None:
    out = gate_cli("run", "G1", "--suite", suite("harness_assert"))
    assert out.returncode == 1, out.stderr
    checks = {c["name"]: c["outcome"]
              for c in json.loads(gate_cli("runs", "show", "1", "--json").stdout)["checks"]}
    assert checks == {"test_library_assert": "ERROR", "test_suite_assert": "STOP-LOSS"}


def test_zero_checks_is_error(gate_cli: GateRunner) -> None:
    out = gate_cli("run", "G1", "--suite", suite("empty"))
    assert out.returncode == 3
    assert "no checks ran" in out.stdout


def test_skip_is_error_unless_optional(gate_cli: GateRunner, site_dir: Path) -> None:
    assert gate_cli("run", "G1", "--suite", suite("skipping")).returncode == 3
    cfg = site_dir / "gate.yaml"
    cfg.write_text(cfg.read_text() + "gates: {g1: {optional: [test_optional_thing, "
                   "test_required]}}\n")
    out = gate_cli("run", "G1", "--suite", suite("skipping"))
    assert out.returncode == 0, out.stdout + out.stderr
    checks = json.loads(gate_cli("runs", "show", "2", "--json").stdout)["checks"]
    assert sorted(c["outcome"] for c in checks) == ["PASS", "SKIPPED", "SKIPPED"]
    # the suite's own words, once: not pytest's "Skipped: " after "optional, skipped:"
    assert "optional, skipped: no GDS on this host" in {c["message"] for c in checks}


def test_deselected_run_is_partial_and_does_not_satisfy_the_next_gate(
        gate_cli: GateRunner) -> None:
    out = gate_cli("run", "G1", "--suite", suite("passing"), "--", "-k", "one")
    assert out.returncode == 2, out.stdout + out.stderr  # a partial run is never PASS
    assert "PARTIAL: 1 of 2 planned checks ran" in out.stdout
    ignored = gate_cli("run", "G1", "--suite", suite("mixed"), "--", "--ignore",
                       str(SUITES / "mixed" / "test_mixed.py"))
    assert ignored.returncode == 4 and "'--ignore' is not allowed" in ignored.stderr
    run = runs_json(gate_cli)[0]
    assert run["partial"] is True and (run["checks_selected"], run["checks_total"]) == (1, 2)
    assert run["verdict"] == "INCONCLUSIVE"
    refused = gate_cli("run", "G2", "--suite", suite("passing"))
    assert refused.returncode == 4
    assert "G2 needs G1 passed first" in refused.stderr and "--force" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_a_simulated_pass_does_not_open_a_real_campaign(gate_cli: GateRunner,
                                                         site_dir: Path) -> None:
    (site_dir / "hosts.ini").write_text(
        "[gpu]\ngpu1 ansible_connection=local gate_sim_hardware=gpu-a100\n")
    cfg = site_dir / "gate.yaml"
    real = cfg.read_text()
    cfg.write_text(real + "simulated: true\n")
    assert gate_cli("run", "G1", "--suite", suite("simhw")).returncode == 0
    assert gate_cli("run", "G2", "--suite", suite("simhw")).returncode == 0  # sim -> sim
    cfg.write_text(real)
    refused = gate_cli("run", "G2", "--suite", suite("simhw"))
    assert refused.returncode == 4 and "G2 needs G1 passed first" in refused.stderr


def test_simulated_true_where_nothing_is_simulated_is_never_a_pass(
        gate_cli: GateRunner, site_dir: Path) -> None:
    """`simulated: true` relaxes rules a real site must meet (unverifiable G1 items, the
    page-cache drop): a run where no host or engine answered as simulated is no PASS."""
    cfg = site_dir / "gate.yaml"
    cfg.write_text(cfg.read_text() + "simulated: true\n")
    out = gate_cli("run", "G1", "--suite", suite("passing"))
    assert out.returncode == 2, out.stdout + out.stderr
    # the outcome line wraps at the terminal's width (80 here), between words
    assert "nothing this run read answered as simulated" in " ".join(out.stdout.split())


def test_simulated_hardware_flags_the_run_though_the_config_is_real(
        gate_cli: GateRunner, site_dir: Path) -> None:
    """Detected, not configured: a host answering from captures makes the run SIMULATED,
    and such a PASS never opens the next gate of a real campaign."""
    (site_dir / "hosts.ini").write_text(
        "[gpu]\ngpu1 ansible_connection=local gate_sim_hardware=gpu-a100\n"
        "gpu2 ansible_connection=local gate_sim_hardware=gpu-2xa5000\n")
    out = gate_cli("run", "G1", "--suite", suite("simhw"))
    assert out.returncode == 0, out.stderr
    show = json.loads(gate_cli("runs", "show", "1", "--json").stdout)
    assert show["simulated"] is True
    measured = {c["host"]: c["measured"] for c in show["checks"]}
    assert measured == {"gpu1": "nvidia-smi-q-x_telegraf_a100-sxm4-80gb-x4_drv535.xml",
                        "gpu2": "nvidia-smi-q-x_telegraf_dual-a5000_v13.xml"}
    assert "SIMULATED" in gate_cli("runs", "list").stdout
    refused = gate_cli("run", "G2", "--suite", suite("passing"))
    assert refused.returncode == 4 and "G2 needs G1 passed first" in refused.stderr


def test_order_is_enforced_and_force_is_recorded(gate_cli: GateRunner) -> None:
    assert gate_cli("run", "G2", "--suite", suite("passing")).returncode == 4
    forced = gate_cli("run", "G2", "--force", "--suite", suite("passing"))
    assert forced.returncode == 0
    assert runs_json(gate_cli)[0]["forced"] is True
    assert gate_cli("run", "G1", "--suite", suite("passing")).returncode == 0
    assert gate_cli("run", "G2", "--suite", suite("passing")).returncode == 0
    listed = {(r["gate"], r["id"]): (r["effective_verdict"], r["forced"])
              for r in runs_json(gate_cli)}
    assert listed[("G1", 2)] == ("PASS", False) and listed[("G2", 3)] == ("PASS", False)
    # Custom suites open each other (this test's order), never the packaged gates: the
    # campaign's standing is untouched by them.
    status = json.loads(gate_cli("status", "--json").stdout)
    assert {g["gate"]: g["verdict"] for g in status["gates"]} == dict.fromkeys(
        ("G1", "G2", "G3", "G4"), "not run")


def test_signoff_accepts_above_band(gate_cli: GateRunner) -> None:
    out = gate_cli("run", "G1", "--suite", suite("signoff"))
    assert out.returncode == 2 and "above band: needs sign-off" in out.stdout
    assert gate_cli("run", "G2", "--suite", suite("passing")).returncode == 4
    signed = gate_cli("signoff", "1", "--by", "Dr. Li", "--role", "reviewer",
                      "--note", "baseline verified by hand")
    assert signed.returncode == 0 and "counts as PASS" in signed.stdout
    run = runs_json(gate_cli)[0]
    assert run["verdict"] == "INCONCLUSIVE" and run["effective_verdict"] == "PASS"
    assert gate_cli("run", "G2", "--suite", suite("passing")).returncode == 0


def test_vendor_signoff_does_not_accept_above_band(gate_cli: GateRunner) -> None:
    gate_cli("run", "G1", "--suite", suite("signoff"))
    gate_cli("signoff", "1", "--by", "V", "--role", "vendor", "--note", "ok")
    assert runs_json(gate_cli)[0]["effective_verdict"] == "INCONCLUSIVE"


def _start_slow(site_dir: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "GATE_DB": f"sqlite:///{site_dir / 'gate.db'}"}
    proc = subprocess.Popen([*GATE, "run", "G1", "--suite", suite("slow")], cwd=site_dir,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (site_dir / "started.flag").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "slow suite never started"
        time.sleep(0.1)
    return proc


def test_second_run_is_refused_while_first_holds_the_campaign(
        gate_cli: GateRunner, site_dir: Path) -> None:
    first = _start_slow(site_dir)
    try:
        second = gate_cli("run", "G1", "--suite", suite("passing"))
        assert second.returncode == 4
        assert "campaign is busy: run 1 " in second.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=60)


def test_sigterm_aborts_the_run_and_keeps_results(gate_cli: GateRunner, site_dir: Path) -> None:
    proc = _start_slow(site_dir)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    # G1 does not resume: the console says to run it again (a G3 / G4 says `gate resume 1`)
    assert "gate: run 1 was interrupted; what it measured is kept: run it again with " \
           "`gate run G1`" in err
    run = runs_json(gate_cli)[0]
    assert (run["status"], run["verdict"]) == ("ABORTED", "ERROR")
    checks = json.loads(gate_cli("runs", "show", "1", "--json").stdout)["checks"]
    assert checks[0]["name"] == "test_first" and checks[0]["outcome"] == "PASS"
    assert gate_cli("run", "G1", "--suite", suite("passing")).returncode == 0  # lock freed


def test_killed_run_lock_is_cleared_by_runs_abort(gate_cli: GateRunner, site_dir: Path) -> None:
    proc = _start_slow(site_dir)
    proc.kill()
    proc.communicate(timeout=30)
    assert gate_cli("run", "G1", "--suite", suite("passing")).returncode == 4
    out = gate_cli("runs", "abort", "1")
    assert out.returncode == 0, out.stderr
    assert runs_json(gate_cli)[0]["status"] == "ABORTED"
    assert gate_cli("run", "G1", "--suite", suite("passing")).returncode == 0


def test_help_lists_exit_codes() -> None:
    out = subprocess.run([*GATE, "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    assert "0 PASS, 1 STOP-LOSS, 2 INCONCLUSIVE, 3 ERROR, 4" in " ".join(out.stdout.split())
    assert sys.executable  # the console script and `python -m harness` are the same main()
