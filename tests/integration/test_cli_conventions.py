"""What a field engineer expects of a mature CLI (issue 27, item 8), as a user runs it:
`-v` showing the commands sent to hosts, `gate run --json` / `--junit-xml` for scripts and
CI, `gate report` with no target, `gate probe HOST:PORT`, a silent SSH port said while it
is waited for. Real subprocesses, a real suite on local hosts, a real silent socket."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from gate_testing import MINIMAL_CONFIG, SUITES, GateRunner
from loadgen_support.server import ServerConfig, running_server

from harness.errors import UnreachableError
from harness.transport.connection import ConnectOptions, open_connection
from harness.transport.endpoint import resolve
from harness.transport.hostkeys import KnownHosts
from tests.lab.netlab import Lab, LabFactory

pytest_plugins = ["tests.lab.fixtures"]

SUITE = '''
import pytest

@pytest.mark.hosts("gpu")
def test_echo(host, check):
    r = host.run(["echo", "marker-42"], timeout=30)
    check.measure(r.stdout.strip())
    assert r.stdout.strip() == "marker-42"

def test_fail(check):
    check.expect(">= 0.25")
    check.measure("0.10")
    assert 0.10 >= 0.25, "drop too small"
'''


def _suite(site: Path) -> str:
    (site / "suite").mkdir()
    (site / "suite" / "test_conventions.py").write_text(SUITE)
    return str(site / "suite")


def test_run_json_junit_verbose_then_report_without_a_target(gate_cli: GateRunner,
                                                               site_dir: Path) -> None:
    suite = _suite(site_dir)
    out = gate_cli("run", "G1", "--suite", suite, "-v", "--json", "--junit-xml",
                   "ci/gate.xml")
    assert out.returncode == 1, out.stderr
    result = json.loads(out.stdout)  # stdout is the JSON alone
    assert (result["run"], result["gate"], result["verdict"], result["exit_code"]) == \
        (1, "G1", "STOP-LOSS", 1)
    assert [(c["name"], c["host"], c["outcome"]) for c in result["checks"]] == [
        ("test_echo", "gpu1", "PASS"), ("test_echo", "gpu2", "PASS"),
        ("test_fail", None, "STOP-LOSS")]
    assert result["checks"][2]["measured"] == 0.1 and "G1 run 1: STOP-LOSS" in out.stderr
    # -v: each command sent to a host, above the check it served
    assert "gpu1: run echo marker-42" in out.stderr and "gpu2: run echo marker-42" in out.stderr

    suite_el = ET.parse(site_dir / "ci" / "gate.xml").getroot().find("testsuite")
    assert suite_el is not None
    assert (suite_el.get("name"), suite_el.get("tests"), suite_el.get("failures"),
            suite_el.get("errors")) == ("G1", "3", "1", "0")
    props = {p.get("name"): p.get("value") for p in suite_el.iter("property")}
    assert props["verdict"] == "STOP-LOSS" and props["run"] == "1"
    failed = [c for c in suite_el.iter("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["test_fail"]
    failure = failed[0].find("failure")
    assert failure is not None and str(failure.get("message")).startswith("STOP-LOSS: ")

    # no run id, no --campaign: the config's campaign, as `gate status` finds it
    report = gate_cli("report", "--format", "html", "-o", "r.html")
    assert report.returncode == 0, report.stderr
    assert "test-campaign" in (site_dir / "r.html").read_text()
    both = gate_cli("report", "1", "--campaign", "test-campaign")
    assert both.returncode == 4 and "not both" in both.stderr


def test_run_output_options_are_refused_before_anything_runs(gate_cli: GateRunner,
                                                             site_dir: Path) -> None:
    (site_dir / "taken").mkdir()
    out = gate_cli("run", "G1", "--suite", _suite(site_dir), "--junit-xml", "taken")
    assert out.returncode == 4 and "--junit-xml" in out.stderr and "Traceback" not in out.stderr
    dry = gate_cli("run", "G1", "--dry-run", "--json")
    assert dry.returncode == 4 and "--dry-run" in dry.stderr
    assert not (site_dir / "gate.db").exists()  # nothing was recorded


def test_probe_takes_host_port_without_a_scheme(tmp_path: Path) -> None:
    env = {**os.environ, "GATE_CONFIG": str(tmp_path / "none.yaml")}
    with running_server(ServerConfig(external_tier=True)) as (url, _):
        bare = url.removeprefix("http://")
        out = subprocess.run([sys.executable, "-m", "harness", "probe", bare, "--json"],
                             capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    (a,) = json.loads(out.stdout)
    assert a["url"] == url.rstrip("/") and a["engine"] == "vllm"


@contextmanager
def _silent_port() -> Iterator[int]:
    """A port that accepts connections and never says a word (not sshd, or a hung one)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield srv.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        for s in [*held, srv]:
            s.close()


def test_a_silent_ssh_port_says_what_it_waits_for_and_how_long(gate_cli: GateRunner,
                                                                site_dir: Path) -> None:
    with _silent_port() as port:
        (site_dir / "hosts.ini").write_text(
            f"[gpu]\ngpu1 ansible_host=127.0.0.1 ansible_port={port} ansible_user=nobody\n")
        out = gate_cli("hosts", "check", "--timeout", "1.2", "--json")
    assert out.returncode == 3, out.stderr
    # said while it waits (after half of each 1.2 s attempt), not only at the end
    assert f"gpu1: 127.0.0.1:{port} accepted the connection but has sent no SSH banner; " \
           "waiting up to 1.2 s (attempt " in out.stderr
    (host,) = json.loads(out.stdout)["hosts"]
    assert f"127.0.0.1:{port} accepted the connection but sent no SSH banner in 1.2 s " \
           "(3 attempts in" in host["problems"][0]
    assert "Traceback" not in out.stderr


@pytest.mark.lab
def test_a_host_with_no_key_on_record_is_refused_before_the_run(ssh_lab: Lab,
                                                                 tmp_path: Path) -> None:
    (tmp_path / "gate.yaml").write_text(MINIMAL_CONFIG)
    (tmp_path / "hosts.ini").write_text(ssh_lab.inventory.read_text())
    ssh_lab.write_known_hosts(tmp_path / "known_hosts", ["h1", "jump", "t1"])
    env = {k: v for k, v in os.environ.items() if k != "GATE_CONFIG"}
    env["GATE_DB"] = f"sqlite:///{tmp_path / 'gate.db'}"

    def gate(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "harness", *args], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120)

    passing = str(SUITES / "passing")
    out = gate("run", "G1", "--suite", passing)  # `gate campaign` and `resume` alike
    assert out.returncode == 4, out.stderr
    (line,) = out.stderr.strip().splitlines()  # one line: the host and what to do
    assert "no SSH host key on record for h2 (" in line and "gate hosts trust h2`" in line
    assert not (tmp_path / "gate.db").exists()  # refused before any attempt was recorded
    ssh_lab.write_known_hosts(tmp_path / "known_hosts")
    assert gate("run", "G1", "--suite", passing).returncode == 0


@pytest.mark.lab
def test_a_connect_that_hangs_says_what_it_waits_for(lab_factory: LabFactory,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    lab = lab_factory(["h1"])
    inventory = lab.load_inventory()
    endpoint = resolve(inventory.host("h1"), ssh_config=None, inventory_hosts=inventory.hosts)
    lab.cut_link("h1")  # SYNs go unanswered: the TCP connect hangs until its timeout
    caplog.set_level(logging.WARNING, logger="harness.transport")
    options = ConnectOptions(known_hosts=KnownHosts(site=lab.known_hosts, user=None),
                             connect_timeout=1.0, attempts=1)
    with pytest.raises(UnreachableError) as info:
        open_connection(endpoint, options)
    assert f"{endpoint.hostname}:22: no answer in 1 s" in info.value.message
    assert caplog.messages == [f"h1: {endpoint.hostname}:22 has not answered the TCP connect "
                               "yet; waiting up to 1 s (one attempt)"]
