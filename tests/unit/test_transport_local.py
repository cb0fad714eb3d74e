"""LocalTransport: the same contract as SSH on this machine (literal args, caps, timeouts)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from harness.errors import CommandTimeoutError, TransportError
from harness.transport import LocalTransport, Transport

HOSTILE = ["; rm -rf /tmp/x", "$(touch /tmp/pwned)", "`id`", "it's", 'say "hi"', "a\nb", "世界"]


def test_is_a_transport_and_passes_words_literally() -> None:
    t = LocalTransport("gpu1")
    assert isinstance(t, Transport)
    r = t.run(["printf", "%s\\0", *HOSTILE]).check()
    assert r.host == "gpu1" and r.stdout.split("\0")[:-1] == HOSTILE
    assert r.argv[0] == "printf" and r.started <= time.time() and r.duration >= 0


def test_rc_stderr_env_and_stdin() -> None:
    t = LocalTransport()
    r = t.run(["sh", "-c", 'echo "$GATE_X" >&2; cat; exit 3'], env={"GATE_X": "$(x)"},
              stdin="in\n")
    assert (r.rc, r.stdout, r.stderr, r.ok) == (3, "in\n", "$(x)\n", False)


def test_missing_program_is_rc_127_not_a_crash() -> None:
    r = LocalTransport().run(["gate-no-such-tool-xyz", "-q"])
    assert r.rc == 127 and "gate-no-such-tool-xyz" in r.stderr


def test_big_output_on_both_streams_does_not_deadlock() -> None:
    script = ("head -c 8000000 /dev/zero | tr '\\0' a & "
              "head -c 8000000 /dev/zero | tr '\\0' b >&2; wait")
    r = LocalTransport().run_shell(script, timeout=60)
    assert (len(r.stdout), len(r.stderr)) == (8_000_000, 8_000_000)
    assert set(r.stdout) == {"a"} and set(r.stderr) == {"b"}


def test_output_cap_truncates_with_a_marker() -> None:
    r = LocalTransport(output_cap=1000).run_shell("head -c 5000 /dev/zero | tr '\\0' x")
    assert r.truncated and r.stdout.startswith("x" * 1000 + "\n[gate: output truncated")


def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    with pytest.raises(CommandTimeoutError) as info:
        LocalTransport("gpu1").run_shell(f"sleep 60 & echo $! > {pidfile}; wait", timeout=0.5)
    assert info.value.host == "gpu1" and "timed out after 0.5s" in info.value.message
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _running(child):
        time.sleep(0.05)
    assert not _running(child)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(os.geteuid() != 0, reason="as non-root sudo would prompt")
def test_sudo_as_root_runs_directly() -> None:
    assert LocalTransport().run(["id", "-u"], sudo=True).stdout.strip() == "0"


def test_files(tmp_path: Path) -> None:
    t = LocalTransport()
    src = tmp_path / "a $(x) b.txt"
    src.write_bytes(b"\x00\x01data")
    t.put(src, str(tmp_path / "copy"))
    assert t.read_file(str(tmp_path / "copy")) == b"\x00\x01data"
    t.get(str(src), tmp_path / "back")
    assert (tmp_path / "back").read_bytes() == b"\x00\x01data"
    with pytest.raises(TransportError, match="cannot read"):
        t.read_file(str(tmp_path / "missing"))
