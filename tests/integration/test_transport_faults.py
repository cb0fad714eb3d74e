"""Faults against the real lab, each its own test: host keys, auth, a dying sshd or link,
nothing listening, a jump host that cannot reach its target. Each gives a distinct error
that names the host and, where a command ran, the command; none hangs."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from harness.errors import (
    AuthError,
    ChangedHostKeyError,
    CommandTimeoutError,
    TransportError,
    UnknownHostKeyError,
    UnreachableError,
)
from harness.transport import fingerprint
from harness.transport.hostkeys import KnownHosts
from tests.lab.netlab import Lab, LabFactory

pytest_plugins = ["tests.lab.fixtures"]
pytestmark = pytest.mark.lab


def _later(seconds: float, action: object) -> threading.Timer:
    timer = threading.Timer(seconds, action)  # type: ignore[arg-type]
    timer.start()
    return timer


def test_unknown_host_key_is_refused_with_its_fingerprint(ssh_lab: Lab, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with ssh_lab.transport("h1", known_hosts=empty) as t, pytest.raises(
            UnknownHostKeyError) as info:
        t.run(["true"])
    exc = info.value
    assert exc.host == "h1" and "gate hosts trust h1" in (exc.hint or "")
    shown = subprocess.run(["ssh-keygen", "-lf", str(ssh_lab.host("h1").host_key)],
                           capture_output=True, text=True, check=True).stdout.split()[1]
    assert shown in exc.message
    assert empty.read_text() == ""  # nothing was added on the fly


def test_unknown_jump_host_key_is_refused_too(ssh_lab: Lab, tmp_path: Path) -> None:
    only_target = ssh_lab.write_known_hosts(tmp_path / "known_hosts", ["t1"])
    with ssh_lab.transport("t1", known_hosts=only_target) as t, pytest.raises(
            UnknownHostKeyError) as info:
        t.run(["true"])
    assert info.value.host == "jump"


def test_changed_host_key_is_refused_showing_both(lab_factory: LabFactory) -> None:
    lab = lab_factory(["h1"])
    old = lab.known_hosts.read_text()
    lab.new_host_key("h1")
    with lab.transport("h1") as t, pytest.raises(ChangedHostKeyError) as info:
        t.run(["true"])
    kh = KnownHosts(site=lab.known_hosts, user=None)
    keys, _ = kh.lookup(lab.host("h1").address, 22)
    on_record = fingerprint(next(iter(keys.values())))
    assert on_record in info.value.message and "presented ssh-ed25519 SHA256:" in info.value.message
    assert info.value.message.count("SHA256:") == 2
    assert lab.known_hosts.read_text() == old


def test_wrong_key_is_an_auth_error(ssh_lab: Lab, tmp_path: Path) -> None:
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    inv = ssh_lab.write_inventory(tmp_path / "hosts.ini",
                                  extra={"h1": {"ansible_ssh_private_key_file": str(other)}})
    from harness.config.inventory import load_inventory
    from harness.transport import connect

    spec = load_inventory(inv).host("h1")
    t = connect(spec, known_hosts=ssh_lab.known_hosts, ssh_config=None, user_known_hosts=None)
    with pytest.raises(AuthError) as info:
        t.run(["true"])
    assert info.value.host == "h1" and str(other) in info.value.message
    assert "authorized_keys" in (info.value.hint or "")


@pytest.mark.timeout(60)  # a hang fails the test
def test_nothing_listening_is_unreachable_after_bounded_retries(lab_factory: LabFactory) -> None:
    lab = lab_factory(["h1"])
    lab.kill_sshd("h1")
    with lab.transport("h1", connect_timeout=2) as t, pytest.raises(UnreachableError) as info:
        t.run(["true"])
    assert "Connection refused" in info.value.message and info.value.host == "h1"


@pytest.mark.timeout(60)  # a hang fails the test
def test_sshd_killed_mid_command(lab_factory: LabFactory) -> None:
    lab = lab_factory(["h1"])
    with lab.transport("h1") as t:
        t.run(["true"]).check()
        timer = _later(1.0, lambda: lab.kill_sshd("h1"))
        with pytest.raises(UnreachableError) as info:
            t.run(["sleep", "60"], timeout=30)
        timer.join()
    assert info.value.host == "h1" and info.value.command == "sleep 60"
    assert "connection lost" in info.value.message


@pytest.mark.timeout(60)  # a hang fails the test
def test_link_cut_mid_command_errors_within_the_timeout(lab_factory: LabFactory) -> None:
    lab = lab_factory(["h1"])
    with lab.transport("h1", connect_timeout=3) as t:
        t.run(["true"]).check()
        timer = _later(1.0, lambda: lab.cut_link("h1"))
        with pytest.raises(TransportError) as info:
            t.run(["sleep", "60"], timeout=5)
        timer.join()
    assert isinstance(info.value, UnreachableError) and not isinstance(
        info.value, CommandTimeoutError)
    assert "does not respond" in info.value.message and info.value.command == "sleep 60"


@pytest.mark.timeout(60)  # a hang fails the test
def test_link_cut_to_a_host_behind_the_jump(lab_factory: LabFactory) -> None:
    lab = lab_factory(["jump"], behind={"t1": "jump"})
    with lab.transport("t1", connect_timeout=3) as t:
        t.run(["true"]).check()
        timer = _later(1.0, lambda: lab.cut_link("t1"))
        with pytest.raises(UnreachableError) as info:
            t.run(["sleep", "30"], timeout=3)
        timer.join()
        assert "does not respond" in info.value.message
        with pytest.raises(UnreachableError, match=r"jump host .* cannot reach"):
            t.run(["true"], timeout=3)  # reconnects, and the jump says why


def test_jump_host_cannot_reach_the_target(lab_factory: LabFactory) -> None:
    lab = lab_factory(["jump"], behind={"t1": "jump"})
    lab.kill_sshd("t1")
    with lab.transport("t1", connect_timeout=3) as t, pytest.raises(UnreachableError) as info:
        t.run(["true"])
    assert info.value.host == "t1" and "jump host" in info.value.message


def test_a_broken_connection_is_reopened_for_the_next_command(lab_factory: LabFactory) -> None:
    lab = lab_factory(["h1"])
    with lab.transport("h1") as t:
        t.run(["true"]).check()
        lab.kill_sshd("h1")
        with pytest.raises(UnreachableError):
            t.run(["true"])
        lab.start_sshd("h1")
        assert t.run(["echo", "back"]).stdout == "back\n"
