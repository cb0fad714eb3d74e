"""A field engineer's first hour (issue 16): every slip there is one line naming the file,
line, key or host, exit 4, no traceback, and nothing is written or rendered first.

Cheap on purpose (no lab): the inventories point at loopback, the "unreachable" host is a
real TCP listener that never speaks SSH, and the only gate run is the passing fixture G1.
"""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from gate_testing import SUITES, GateRunner

PASSING = str(SUITES / "passing")


def one_error_line(out: subprocess.CompletedProcess[str], code: int = 4) -> str:
    assert out.returncode == code, out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.startswith("gate: error:")]
    assert len(lines) == 1, out.stderr
    return lines[0]


@pytest.fixture
def g3_site(gate_cli: GateRunner, site_dir: Path) -> Path:
    """`gate init`'s own site (arms, layouts on gpu1, a realistic inventory)."""
    for name in ("gate.yaml", "hosts.ini"):
        (site_dir / name).unlink()
    assert gate_cli("init", str(site_dir)).returncode == 0
    return site_dir


def test_a_port_that_is_a_word_names_line_and_host(gate_cli: GateRunner, g3_site: Path) -> None:
    hosts = g3_site / "hosts.ini"
    hosts.write_text(hosts.read_text().replace("ansible_port=2222", "ansible_port=twenty"))
    line = one_error_line(gate_cli("run", "G3", "--dry-run"))
    number = next(i for i, text in enumerate(hosts.read_text().splitlines(), 1)
                  if "ansible_port=twenty" in text)
    assert f"hosts.ini: line {number}: ansible_port" in line, line
    assert "host bastion" in line and "'twenty'" in line, line


@pytest.mark.parametrize(("text", "number", "said"), [
    ("[gpu\ngpu1 ansible_connection=local\n", 1, "'[gpu'"),
    ("[gpu]\ngpu1 ansible_connection=local\n[gpu:varz]\na=1\n", 3, "unknown type: varz"),
    ("[gpu]\ngpu1 ansible_connection=local port\n", 2, "Expected key=value"),
])
def test_a_broken_ini_names_its_line(gate_cli: GateRunner, g3_site: Path, text: str,
                                     number: int, said: str) -> None:
    (g3_site / "hosts.ini").write_text(text)
    for command in (("run", "G3", "--dry-run"), ("hosts", "check")):
        line = one_error_line(gate_cli(*command))
        assert f"hosts.ini: line {number}: cannot parse inventory" in line, line
        assert said in line, line


def test_dry_run_refuses_a_layout_host_missing_from_the_inventory(gate_cli: GateRunner,
                                                                  g3_site: Path) -> None:
    hosts = g3_site / "hosts.ini"
    hosts.write_text(hosts.read_text().replace("gpu1 ansible_host=10.20.0.11\n", ""))
    line = one_error_line(gate_cli("run", "G3", "--dry-run"))
    assert "gate.yaml: layouts[0].instances[0].host: host 'gpu1' is not in the inventory" \
        in line, line


def test_an_empty_group_is_not_an_empty_table(gate_cli: GateRunner, site_dir: Path) -> None:
    (site_dir / "hosts.ini").write_text("[gpu]\n\n[storage]\nst1 ansible_connection=local\n")
    line = one_error_line(gate_cli("hosts", "check"))
    assert "hosts.ini: line 1: group [gpu] has no hosts" in line, line


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A TCP port that accepts and never sends an SSH banner (paramiko's noisiest case)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    held: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    done.set()
    thread.join(2)
    for conn in held:
        conn.close()
    server.close()


def test_unreachable_hosts_print_a_table_not_paramiko_tracebacks(
        gate_cli: GateRunner, site_dir: Path, silent_port: int) -> None:
    (site_dir / "hosts.ini").write_text(
        "[gpu]\n" + "".join(f"g{i} ansible_host=127.0.0.1 ansible_port={silent_port}\n"
                            for i in range(3))
        + "[storage]\nst1 ansible_host=127.0.0.1 ansible_port=1\n")
    for command in (("hosts", "check", "--timeout", "2"),
                    ("hosts", "trust", "g0", "--timeout", "2")):
        out = gate_cli(*command)
        assert out.returncode == 3, out.stderr
        for noise in ("Traceback", "Exception (client)", "SSH protocol banner[Errno",
                      "internal error"):
            assert noise not in out.stderr, out.stderr
        assert "g0" in out.stdout + out.stderr


@pytest.fixture
def one_run(gate_cli: GateRunner) -> None:
    assert gate_cli("run", "G1", "--suite", PASSING).returncode == 0


def test_an_unwritable_output_is_refused_before_any_work(gate_cli: GateRunner,
                                                         one_run: None) -> None:
    for command in (("report", "1", "-o", "/proc/nope/r.pdf"), ("report", "1", "-o", "."),
                    ("export", "1", "-o", "/proc/nope/pack.tar.gz"),
                    ("demo", "--out", "/proc/nope")):
        started = time.monotonic()
        line = one_error_line(gate_cli(*command))
        assert command[-1] in line and ("--out" in line or "--output" in line), line
        # Before rendering (a report takes seconds) or starting a simulated lab (minutes).
        assert time.monotonic() - started < 10
    # and in the same store: a campaign that is not there is a usage error, not a table
    line = one_error_line(gate_cli("status", "--campaign", "nope"))
    assert "no campaign 'nope'" in line and "test-campaign" in line, line


def test_an_immutable_output_directory_is_refused(gate_cli: GateRunner, one_run: None,
                                                  site_dir: Path) -> None:
    frozen = site_dir / "frozen"
    frozen.mkdir()
    if subprocess.run(["chattr", "+i", str(frozen)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        for command in (("report", "1", "-o", str(frozen / "r.pdf")),
                        ("demo", "--out", str(frozen / "demo"))):
            line = one_error_line(gate_cli(*command))
            assert "Operation not permitted" in line or "Permission denied" in line, line
        assert list(frozen.iterdir()) == []
    finally:
        subprocess.run(["chattr", "-i", str(frozen)], check=True)


@pytest.mark.parametrize("command", [
    ("status", "--campaign", "x"), ("runs", "list"), ("runs", "show", "1"),
    ("report", "1"), ("export", "1"), ("signoff", "1", "--by", "a", "--role", "vendor",
                                      "--note", "n"),
])
def test_read_only_commands_create_no_store(gate_cli: GateRunner, tmp_path: Path,
                                            command: tuple[str, ...]) -> None:
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    out = gate_cli(*command, cwd=empty, env={"GATE_DB": ""})
    line = one_error_line(out)
    assert "--db: no store at" in line and "gate.db" in line, line
    assert list(empty.iterdir()) == []


def test_status_before_the_first_run_lists_the_gates_and_writes_nothing(
        gate_cli: GateRunner, site_dir: Path) -> None:
    out = gate_cli("status", "--json", env={"GATE_DB": ""})
    assert out.returncode == 0, out.stderr
    assert '"verdict": "not run"' in out.stdout
    assert not (site_dir / "gate.db").exists()


def test_config_show_and_validate(gate_cli: GateRunner, g3_site: Path) -> None:
    import json

    shown = gate_cli("config", "show", "--json", "--set", "gates.g3.tiers=[16]")
    assert shown.returncode == 0, shown.stderr
    effective = json.loads(shown.stdout)
    assert effective["gates"]["g3"]["tiers"] == [16]
    assert effective["gates"]["g3"]["estimate"]["start_s"] == 300.0  # a default, filled in
    ok = gate_cli("config", "validate")
    assert ok.returncode == 0, ok.stderr
    assert "G3: ok (layout hosts gpu1)" in ok.stdout
    assert "G1: not configured (no gates.g1.bom" in ok.stdout  # a G3-only site so far
    hosts = g3_site / "hosts.ini"
    hosts.write_text(hosts.read_text().replace("gpu1 ansible_host=10.20.0.11\n", ""))
    line = one_error_line(gate_cli("config", "validate"))
    assert "layouts[0].instances[0].host: host 'gpu1' is not in the inventory" in line


def test_the_site_gate_init_writes_validates_and_a_misspelt_playbook_var_is_one_line(
        gate_cli: GateRunner, site_dir: Path) -> None:
    """`gate init`'s arms pass serve.yml what it takes (it once passed `kv_tier`, which
    serve.yml ignores, and no `name`: a run failed on the host). A var serve.yml does not
    take is one line naming the key and the closest var; a weakened setting is listed
    under its gate before any run needs the sign-off."""
    init = gate_cli("init", str(site_dir), "--force")
    assert init.returncode == 0, init.stderr
    ok = gate_cli("config", "validate", "--set", "gates.g4.duration=2h")
    assert ok.returncode == 0, ok.stderr
    assert "G3: ok" in ok.stdout
    assert ("G4: ok\n  needs a reviewer's sign-off: gates.g4.duration = 2h (default 72h)\n"
            in ok.stdout)
    config = site_dir / "gate.yaml"
    config.write_text(config.read_text().replace("pidfile: /var/tmp", "pid_file: /var/tmp", 1))
    line = one_error_line(gate_cli("config", "validate"))
    assert "gate.yaml: arms.baseline.start.vars.pid_file: serve.yml takes no var " \
           "'pid_file'" in line
    assert "did you mean 'pidfile'" in line
