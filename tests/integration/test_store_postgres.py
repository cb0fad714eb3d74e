"""The store on a real PostgreSQL server (tests/pg_support's throwaway cluster), through
`gate` as a user runs it: a gate run end to end with GATE_DB on PostgreSQL, two `gate run`
racing for one campaign from two processes (exactly one refused, naming the holder's host
and pid), a URL carrying a password refused without a trace of it anywhere, and the
password taken from PGPASSWORD instead."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from gate_testing import GATE, SUITES, GateRunner
from pg_support import PgCluster


def suite(name: str) -> str:
    return str(SUITES / name)


def test_a_gate_run_end_to_end_on_postgresql(gate_cli: GateRunner, site_dir: Path,
                                             pg_url: str) -> None:
    env = {"GATE_DB": pg_url}
    out = gate_cli("run", "G1", "--suite", suite("passing"), env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "G1 run 1: PASS" in out.stdout
    listed = json.loads(gate_cli("runs", "list", "--json", env=env).stdout)
    assert [(r["gate"], r["verdict"], r["status"]) for r in listed] == [
        ("G1", "PASS", "FINISHED")]
    shown = json.loads(gate_cli("runs", "show", "1", "--json", env=env).stdout)
    assert {c["outcome"] for c in shown["checks"]} == {"PASS"} and shown["checks"]
    status = gate_cli("status", "--db", pg_url)  # --db beats GATE_DB alike
    assert status.returncode == 0, status.stderr
    signed = gate_cli("signoff", "1", "--by", "R", "--role", "reviewer", "--note", "ok",
                      env=env)
    assert signed.returncode == 0, signed.stderr
    # a server store has no directory: what is written "next to the store" goes here
    report = gate_cli("report", "1", "--format", "html", env=env)
    assert report.returncode == 0, report.stderr
    assert Path(report.stdout.split()[-1]).exists()
    pack = gate_cli("export", "1", env=env)
    assert pack.returncode == 0, pack.stderr
    written = sorted(site_dir.glob("*.tar.gz"))
    assert len(written) == 1
    verified = gate_cli("export", "verify", str(written[0]), env=env)
    assert verified.returncode == 0, verified.stderr
    assert gate_cli("db", "upgrade", env=env).returncode == 0


def test_two_gate_runs_racing_for_one_campaign_one_is_refused(site_dir: Path,
                                                              pg_url: str) -> None:
    """From an empty database: both migrate (one waits on the other's advisory lock),
    both make the campaign (one reads the other's), one takes the lock."""
    env = {**os.environ, "GATE_DB": pg_url}
    env.pop("GATE_CONFIG", None)
    procs = [subprocess.Popen([*GATE, "run", "G1", "--suite", suite("slow")], cwd=site_dir,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    try:
        deadline = time.monotonic() + 90
        while all(p.poll() is None for p in procs):
            assert time.monotonic() < deadline, "neither gate run was refused"
            time.sleep(0.1)
        refused = next(p for p in procs if p.poll() is not None)
        holder = next(p for p in procs if p is not refused)
        _, err = refused.communicate()
        assert refused.returncode == 4, err
        assert (f"campaign is busy: run 1 (pid {holder.pid} on {socket.gethostname()}) "
                f"is running") in err
        assert holder.poll() is None  # still measuring
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            p.communicate(timeout=60)
    check = subprocess.run([*GATE, "runs", "list", "--json"], cwd=site_dir, env=env,
                           capture_output=True, text=True, timeout=120)
    assert [r["status"] for r in json.loads(check.stdout)] == ["ABORTED"]  # no second run


def test_a_url_with_a_password_is_refused_and_never_written(
        gate_cli: GateRunner, site_dir: Path, pg_cluster: PgCluster) -> None:
    url = pg_cluster.new_database().replace("postgres@", "postgres:s3cret-pw@")
    for args, env in ((("runs", "list", "--db", url), None),
                      (("run", "G1", "--suite", suite("passing")), {"GATE_DB": url})):
        out = gate_cli(*args, env=env)
        assert out.returncode == 4, out.stderr
        assert "PGPASSWORD or ~/.pgpass" in out.stderr
        assert "s3cret" not in out.stdout + out.stderr
    leaked = [p for p in site_dir.rglob("*") if p.is_file()
              and b"s3cret" in p.read_bytes()]
    assert leaked == []


def test_the_password_comes_from_pgpassword(gate_cli: GateRunner,
                                            pg_cluster: PgCluster) -> None:
    url = pg_cluster.password_database("s3cret-pw")
    asked = gate_cli("runs", "list", "--db", url, env={"PGPASSWORD": ""})
    assert asked.returncode == 3
    assert "PGPASSWORD or ~/.pgpass" in asked.stderr, asked.stderr
    given = gate_cli("runs", "list", "--db", url, env={"PGPASSWORD": "s3cret-pw"})
    assert given.returncode == 0, given.stderr
