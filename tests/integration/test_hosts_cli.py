"""`gate hosts check` / `gate hosts trust` as a user runs them, against the lab."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gate_testing import MINIMAL_CONFIG

from tests.lab.netlab import Lab, LabFactory

pytest_plugins = ["tests.lab.fixtures"]
pytestmark = pytest.mark.lab


def _site(lab: Lab, tmp_path: Path, *, trusted: bool) -> Path:
    (tmp_path / "gate.yaml").write_text(MINIMAL_CONFIG)
    shutil.copy(lab.inventory, tmp_path / "hosts.ini")
    (tmp_path / "known_hosts").write_text(lab.known_hosts.read_text() if trusted else "")
    return tmp_path


def _gate(site: Path, *args: str, password: str | None = None
          ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GATE_SUDO_PASSWORD", "GATE_CONFIG")}
    if password:
        env["GATE_SUDO_PASSWORD"] = password
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=site, env=env,
                          capture_output=True, text=True, timeout=180)


def _fingerprint(lab: Lab, host: str) -> str:
    out = subprocess.run(["ssh-keygen", "-lf", str(lab.host(host).host_key)],
                         capture_output=True, text=True, check=True).stdout
    return out.split()[1]


def test_check_all_fine_exits_0(ssh_lab: Lab, tmp_path: Path) -> None:
    site = _site(ssh_lab, tmp_path, trusted=True)
    out = _gate(site, "hosts", "check", "--json", password=ssh_lab.password)
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert report["ok"] and [h["name"] for h in report["hosts"]] == ["h1", "h2", "jump", "t1"]
    for h in report["hosts"]:
        assert h["reachable"] and h["user"] == ssh_lab.user and h["host_key"] == "trusted"
        assert h["auth"] == f"publickey ({ssh_lab.key_file})" and h["sudo"] == "ok (password)"
        assert h["python"].startswith("3.") and h["rtt_ms"] > 0 and h["problems"] == []
    table = _gate(site, "hosts", "check", "-l", "t1", password=ssh_lab.password)
    assert table.returncode == 0 and "t1" in table.stdout and "trusted" in table.stdout


def test_unknown_keys_exit_3_with_what_to_do(ssh_lab: Lab, tmp_path: Path) -> None:
    site = _site(ssh_lab, tmp_path, trusted=False)
    out = _gate(site, "hosts", "check", "--json", password=ssh_lab.password)
    assert out.returncode == 3
    hosts = {h["name"]: h for h in json.loads(out.stdout)["hosts"]}
    assert hosts["h1"]["host_key"] == "unknown" and not hosts["h1"]["ok"]
    assert _fingerprint(ssh_lab, "h1") in hosts["h1"]["problems"][0]
    assert "gate hosts trust h1" in hosts["h1"]["problems"][0]
    assert hosts["t1"]["host_key"] == "not checked"  # its jump host is unknown first
    assert "gate hosts trust jump" in hosts["t1"]["problems"][0]
    table = _gate(site, "hosts", "check", password=ssh_lab.password)
    assert table.returncode == 3 and "PROBLEM" in table.stdout
    assert "Traceback" not in table.stderr


def test_trust_prints_and_records_then_check_passes(ssh_lab: Lab, tmp_path: Path) -> None:
    site = _site(ssh_lab, tmp_path, trusted=False)
    out = _gate(site, "hosts", "trust", "h1", "jump", "t1")
    assert out.returncode == 0, out.stderr
    lines = [ln.split("\t") for ln in out.stdout.splitlines()]
    assert [(n, fp) for n, _, fp in lines] == [
        (n, _fingerprint(ssh_lab, n)) for n in ("h1", "jump", "t1")]
    assert "trusted host h1" in out.stderr  # logged (the CLI has no log handler)
    recorded = (site / "known_hosts").read_text()
    assert recorded.count("# gate hosts trust:") == 3
    check = _gate(site, "hosts", "check", "--json", "-l", "h1", "-l", "t1",
                  password=ssh_lab.password)
    assert check.returncode == 0, check.stdout
    again = _gate(site, "hosts", "trust", "h1")
    assert again.returncode == 0 and (site / "known_hosts").read_text() == recorded


def test_sudo_password_missing_is_a_problem(ssh_lab: Lab, tmp_path: Path) -> None:
    site = _site(ssh_lab, tmp_path, trusted=True)
    out = _gate(site, "hosts", "check", "--json", "-l", "h2")
    assert out.returncode == 3
    (h2,) = json.loads(out.stdout)["hosts"]
    assert h2["sudo"] == "password required" and "GATE_SUDO_PASSWORD" in h2["problems"][0]
    wrong = _gate(site, "hosts", "check", "--json", "-l", "h2", password="wrong")
    assert json.loads(wrong.stdout)["hosts"][0]["sudo"] == "wrong password"


def test_changed_key_refused_by_trust_unless_replace(lab_factory: LabFactory,
                                                     tmp_path: Path) -> None:
    lab = lab_factory(["h1"])
    site = _site(lab, tmp_path, trusted=True)
    old = _fingerprint(lab, "h1")
    lab.new_host_key("h1")
    new = _fingerprint(lab, "h1")
    check = _gate(site, "hosts", "check", "--json")
    (h1,) = json.loads(check.stdout)["hosts"]
    assert check.returncode == 3 and h1["host_key"] == "CHANGED"
    assert old in h1["problems"][0] and new in h1["problems"][0]
    refused = _gate(site, "hosts", "trust", "h1")
    assert refused.returncode == 3 and old in refused.stderr and new in refused.stderr
    replaced = _gate(site, "hosts", "trust", "--replace", "h1")
    assert replaced.returncode == 0 and new in replaced.stdout
    assert _gate(site, "hosts", "check", "--json", password=lab.password).returncode == 0


def test_unknown_host_name_is_a_usage_error(ssh_lab: Lab, tmp_path: Path) -> None:
    site = _site(ssh_lab, tmp_path, trusted=True)
    for args in (["hosts", "trust", "nope"], ["hosts", "check", "-l", "nope"]):
        out = _gate(site, *args)
        assert out.returncode == 4 and "Traceback" not in out.stderr
        assert "host 'nope' is not in the inventory" in out.stderr
