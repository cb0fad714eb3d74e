"""The listener / alive / stop parsers on real captured probe outputs (tests/fixtures/probes,
see its SOURCES.md), the shapes they refuse, and the error context of the thin wrappers."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.errors import MeasurementError, ParseError, TransportError
from harness.probes.process import (
    ALIVE_SCRIPT,
    LISTENER_SCRIPT,
    STOP_SCRIPT,
    is_alive,
    listeners,
    parse_alive,
    parse_listener_report,
    parse_listeners,
    parse_stop,
    root_process,
    stop_process,
)
from harness.probes.redact import hash_secret
from harness.transport.fake import FakeResponse, FakeTransport

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"
IPV4 = FIXTURES / "listeners_debian12-vm_root_http-server-ipv4.txt"
FORKED = FIXTURES / "listeners_debian12-vm_root_forked-holders-ipv6.txt"
HIDDEN = FIXTURES / "listeners_debian12-vm_nobody_owner-hidden.txt"
NOBODY = FIXTURES / "listeners_debian12-vm_nobody_own-process.txt"
FAKE_TOKEN = "not-a-real-token-1234"  # what the ipv4 listener was started with (SOURCES.md)


def _field(text: str, word: str) -> list[list[str]]:
    return [line.split()[1:] for line in text.splitlines() if line.startswith(word + " ")]


def test_ipv4_capture_gives_the_launched_argv_and_env_with_the_token_hashed() -> None:
    text = IPV4.read_text()
    report = parse_listener_report(text)
    header = text.splitlines()[0].split()
    assert (report.port, report.euid) == (int(header[3]), int(header[5]))
    [sock] = report.sockets
    assert (sock.family, sock.address, sock.port) == ("tcp", "127.0.0.1", report.port)
    [proc] = report.processes
    [[pid]], [[ticks, ppid, state]] = _field(text, "process"), _field(text, "stat")
    assert (proc.pid, proc.start_ticks, proc.ppid, proc.state) == (
        int(pid), int(ticks), int(ppid), state)
    assert proc.inodes == (sock.inode,) and proc.uid == sock.uid == report.euid
    assert proc.argv[1:] == ("-m", "http.server", str(report.port), "--bind", "127.0.0.1")
    assert proc.comm == Path(proc.argv[0]).name[:15]
    assert proc.exe is not None and Path(proc.exe).name.startswith("python")
    assert proc.env is not None and proc.env["GATE_PROBE_MARK"] == "ipv4-fixture"
    assert proc.env["HF_TOKEN"] == hash_secret(FAKE_TOKEN)
    assert FAKE_TOKEN not in repr(report)
    assert parse_listeners(text) == [proc]


def test_a_socket_held_by_a_parent_and_its_forked_child_names_the_parent_as_root() -> None:
    text = FORKED.read_text()
    report = parse_listener_report(text)
    [sock] = report.sockets
    assert (sock.family, sock.address) == ("tcp6", "::1")
    parent, child = sorted(report.processes, key=lambda p: p.start_ticks)
    assert child.ppid == parent.pid and parent.inodes == child.inodes == (sock.inode,)
    assert root_process(list(report.processes)) == parent
    assert parent.argv == child.argv
    assert parent.argv[1] == "-c" and parent.argv[2].startswith("\nimport os")
    assert parent.argv[3:] == (str(report.port), "--role", "parent and child")
    assert report.hidden == () and report.vanished == 0


def test_as_another_user_the_socket_is_seen_but_its_owner_is_hidden() -> None:
    text = HIDDEN.read_text()
    report = parse_listener_report(text)
    assert report.euid != 0 and report.unreadable > 0
    assert report.processes == () and report.hidden == report.sockets != ()
    assert parse_listeners(text) == []


def test_a_normal_user_sees_its_own_listener_with_its_environment() -> None:
    report = parse_listener_report(NOBODY.read_text())
    [proc] = report.processes
    assert report.euid != 0 and proc.uid == report.euid == report.sockets[0].uid
    assert proc.env is not None and proc.env["GATE_PROBE_MARK"] == "nobody-fixture"


def test_unreadable_environ_and_exe_are_none_not_empty() -> None:
    text = re.sub(r"(?m)^environ ok .*$", "environ denied", IPV4.read_text())
    text = re.sub(r"(?m)^exe ok .*$", "exe -", text)
    [proc] = parse_listeners(text)
    assert proc.env is None and proc.exe is None and proc.argv


def test_a_holder_that_changed_while_read_is_dropped_and_counted() -> None:
    text = IPV4.read_text()
    [[pid, ticks]] = _field(text, "end")
    report = parse_listener_report(text.replace(f"end {pid} {ticks}", f"end {pid} gone"))
    assert report.processes == () and report.vanished == 1


def _garble(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize("edit, message", [
    (lambda t: "", "line 1"),
    (lambda t: "hello\n" + t, "line 1"),
    (lambda t: t.replace("\ndone\n", "\n"), "ends early"),
    (lambda t: t + "socket tcp 0100007F:494D 0 1\n", "after 'done'"),
    (lambda t: _garble(t, "\nheld", "\nbogus"), "expected 'held'"),
    (lambda t: _garble(t, "cmdline 2f", "cmdline zz"), "line"),
    (lambda t: _garble(t, "unreadable", "unread"), "unknown line"),
    (lambda t: t.split("\nprocess")[0] + "\nprocess 12\nheld 1\ndone\n", "line"),
    (lambda t: _garble(t, ":494D ", ":1F90 "), "another port"),
    (lambda t: _garble(t, "socket tcp ", "socket tcp6 "), "address"),
    (lambda t: t.split("\n")[0] + "\nerror no /proc/net/tcp\n", "failed on the host"),
])
def test_garbled_output_is_a_parse_error_naming_where(edit: Callable[[str], str],
                                                     message: str) -> None:
    text = edit(IPV4.read_text())
    with pytest.raises(ParseError, match=re.escape(message)) as err:
        parse_listener_report(text)
    assert err.value.stage == "listeners"


def test_a_garbled_environ_line_is_not_echoed_in_the_error() -> None:
    text = IPV4.read_text()
    env_hex = _field(text, "environ")[0][1]
    with pytest.raises(ParseError, match=r"line \d+") as err:
        parse_listener_report(text.replace(env_hex, env_hex + "Z"))
    assert FAKE_TOKEN.encode().hex() not in str(err.value) and env_hex[:20] not in str(err.value)


def test_alive_and_stop_answers() -> None:
    assert [parse_alive(w + "\n") for w in ("alive", "zombie", "gone", "recycled")] == [
        "alive", "zombie", "gone", "recycled"]
    assert parse_stop("outcome stopped\n") == "stopped"
    assert parse_stop("noise\noutcome denied\n") == "denied"
    for bad in ("", "maybe", "outcome later"):
        with pytest.raises(ParseError):
            parse_stop(bad)
    with pytest.raises(ParseError):
        parse_alive("alive?")


def test_scripts_take_only_numbers() -> None:
    assert "port=8000;" in LISTENER_SCRIPT(8000) and "steps=25" in STOP_SCRIPT(7, 9, 2.5)
    assert ALIVE_SCRIPT(7, 9).startswith("pid=7 ticks=9\n")
    hostile: object = "80; reboot"
    bad: list[Callable[[], str]] = [
        lambda: LISTENER_SCRIPT(0), lambda: LISTENER_SCRIPT(hostile),  # type: ignore[arg-type]
        lambda: ALIVE_SCRIPT(-1, 5), lambda: STOP_SCRIPT(1, 1, -1.0)]
    for build in bad:
        with pytest.raises(ValueError):
            build()


def test_root_process_refuses_unrelated_holders() -> None:
    procs = parse_listeners(FORKED.read_text()) + parse_listeners(IPV4.read_text())
    with pytest.raises(MeasurementError, match="2 unrelated"):
        root_process(procs)


def test_wrappers_carry_host_command_and_stage() -> None:
    fake = FakeTransport([FakeResponse("*port=8000;*", stdout_file=HIDDEN),
                          FakeResponse("*port=8001;*", stdout="garbage\n"),
                          FakeResponse("*port=8002;*", rc=2, stderr="sh: od: not found"),
                          FakeResponse("*pid=5 ticks=6*steps=*", stdout="outcome denied\n"),
                          FakeResponse("*pid=5 ticks=6*", stdout="zombie\n")], host="gpu1")
    with pytest.raises(MeasurementError, match="not visible") as hidden:
        listeners(fake, 8000)
    assert (hidden.value.host, hidden.value.stage) == ("gpu1", "listeners")
    assert hidden.value.hint and "sudo" in hidden.value.hint
    with pytest.raises(ParseError) as garbled:
        listeners(fake, 8001)
    assert (garbled.value.host, garbled.value.stage) == ("gpu1", "listeners")
    assert garbled.value.command and "8001" in garbled.value.command
    with pytest.raises(TransportError, match="od: not found") as failed:
        listeners(fake, 8002)
    assert (failed.value.host, failed.value.stage) == ("gpu1", "listeners")
    with pytest.raises(TransportError, match="not permitted") as denied:
        stop_process(fake, 5, 6, grace=1)
    assert (denied.value.host, denied.value.stage) == ("gpu1", "stop")
    assert is_alive(fake, 5, 6) is False
    assert fake.calls[-1].sudo is False
