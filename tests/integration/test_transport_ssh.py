"""SSHTransport against real sshd in network namespaces: literal args, sudo, jump host,
files, big output, caps, timeouts that kill the remote command, the pool."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness.errors import AuthError, CommandTimeoutError
from harness.transport import SSHTransport, TransportPool
from tests.lab.netlab import Lab

pytest_plugins = ["tests.lab.fixtures"]
pytestmark = pytest.mark.lab

HOSTILE = ["; rm -rf /tmp/gate-x", "$(touch /tmp/gate-pwned)", "`id`", "it's", 'say "hi"',
           "two\nlines", "tab\there", "世界 ünïcødé", "*", "~", "$HOME", "--", "-n", "\\", "",
           "  spaced  ", "a'b\"c$d`e\\f"]


@pytest.fixture(params=["h1", "t1"], ids=["direct", "via-jump"])
def host(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_hostile_arguments_reach_the_remote_program_literally(ssh_lab: Lab, host: str) -> None:
    with ssh_lab.transport(host) as t:
        r = t.run(["printf", "%s\\0", *HOSTILE]).check()
        assert r.stdout.split("\0")[:-1] == HOSTILE
        assert r.host == host and r.stderr == ""
        env = t.run(["sh", "-c", 'printf %s "$GATE_V"'], env={"GATE_V": HOSTILE[1] + HOSTILE[2]})
        assert env.stdout == HOSTILE[1] + HOSTILE[2]
        fed = t.run(["cat"], stdin="".join(HOSTILE).encode())
        assert fed.stdout == "".join(HOSTILE)
    assert not Path("/tmp/gate-pwned").exists()


def test_runs_as_the_inventory_user_and_through_the_jump(ssh_lab: Lab, host: str) -> None:
    with ssh_lab.transport(host) as t:
        assert t.run(["id", "-un"]).stdout.strip() == ssh_lab.user
        addrs = t.run(["ip", "-o", "-4", "addr", "show", "eth0"]).stdout
        assert ssh_lab.host(host).address in addrs
        assert isinstance(t, SSHTransport) and t.auth_method == f"publickey ({ssh_lab.key_file})"


def test_rc_and_stderr(ssh_lab: Lab) -> None:
    with ssh_lab.transport("h1") as t:
        r = t.run_shell("echo out; echo err >&2; exit 7")
        assert (r.rc, r.stdout, r.stderr, r.ok) == (7, "out\n", "err\n", False)
        assert t.run(["gate-no-such-tool"]).rc == 127


def test_sudo_with_password_and_stdin(ssh_lab: Lab, host: str) -> None:
    with ssh_lab.transport(host, sudo_password=ssh_lab.password) as t:
        assert t.run(["id", "-u"], sudo=True).check().stdout == "0\n"
        r = t.run(["cat"], sudo=True, stdin="after the password\n")
        assert (r.stdout, r.stderr) == ("after the password\n", "")
        assert ssh_lab.password not in r.stdout + r.stderr
    with ssh_lab.transport(host) as t:  # no password: sudo -n, which refuses
        refused = t.run(["id", "-u"], sudo=True)
        assert refused.rc == 1 and "password is required" in refused.stderr


def test_wrong_sudo_password_is_an_auth_error(ssh_lab: Lab) -> None:
    with ssh_lab.transport("h1", sudo_password="not-" + ssh_lab.password) as t, \
            pytest.raises(AuthError) as info:
        t.run(["true"], sudo=True, timeout=30)
    assert info.value.stage == "sudo" and info.value.host == "h1"


def test_files_with_hostile_names(ssh_lab: Lab, host: str, tmp_path: Path) -> None:
    name = "gate file ; $(id) `x` 'q' \"d\" 世界.bin"
    remote = str(ssh_lab.home / name)
    payload = bytes(range(256)) * 4000
    src = tmp_path / "src.bin"
    src.write_bytes(payload)
    with ssh_lab.transport(host) as t:
        t.put(src, remote)
        assert t.read_file(remote) == payload
        t.get(remote, tmp_path / "back.bin")
        listing = t.run(["ls", "-1", str(ssh_lab.home)]).stdout.splitlines()
        t.run(["rm", "-f", "--", remote]).check()
    assert (tmp_path / "back.bin").read_bytes() == payload
    assert name in listing


def test_50_mb_on_stdout_and_stderr_at_once(ssh_lab: Lab) -> None:
    size = 50 * 1000 * 1000
    script = (f"head -c {size} /dev/zero | tr '\\0' o & "
              f"head -c {size} /dev/zero | tr '\\0' e >&2; wait")
    with ssh_lab.transport("h1") as t:
        r = t.run_shell(script, timeout=300).check()
    assert (len(r.stdout), len(r.stderr), r.truncated) == (size, size, False)
    assert r.stdout.count("o") == size and r.stderr.count("e") == size


def test_output_cap_keeps_the_head_and_says_so(ssh_lab: Lab) -> None:
    with ssh_lab.transport("h1") as t:
        assert isinstance(t, SSHTransport)
        t.output_cap = 1 << 20
        r = t.run_shell("head -c 5000000 /dev/zero | tr '\\0' x; echo done >&2")
    assert r.rc == 0 and r.truncated and r.stderr == "done\n"
    assert r.stdout.startswith("x" * (1 << 20) + "\n[gate: output truncated")
    assert "dropped 3951424 more" in r.stdout


def test_timeout_kills_the_remote_command(ssh_lab: Lab, host: str) -> None:
    with ssh_lab.transport(host, sudo_password=ssh_lab.password) as t:
        for sudo in (False, True):
            # Unique durations: pgrep sees every process on the machine (no PID namespace).
            tag = f"{time.monotonic_ns() % 10**9:09d}"
            script = f"sleep 300.{tag} & sleep 301.{tag}"
            with pytest.raises(CommandTimeoutError) as info:
                t.run(["sh", "-c", script], timeout=1, sudo=sudo)
            assert "killed its process group" in info.value.message
            assert info.value.host == host and f"sleep 301.{tag}" in (info.value.command or "")
            left = ssh_lab.exec(host, ["pgrep", "-f", f"sleep 30[01].{tag}"]).stdout.split()
            assert [p for p in left if _running(p)] == []
            assert t.run(["echo", "still usable"]).stdout == "still usable\n"


def _running(pid: str) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_connection_is_reused(ssh_lab: Lab) -> None:
    with ssh_lab.transport("h1") as t:
        assert isinstance(t, SSHTransport)
        first = t.connect()
        for _ in range(20):
            t.run(["true"]).check()
        assert t.connect() is first


def test_pool_runs_on_many_hosts_at_once(ssh_lab: Lab) -> None:
    inv = ssh_lab.load_inventory()
    with TransportPool(inv, known_hosts=ssh_lab.known_hosts, connect_timeout=5) as pool:
        results = pool.run_all(["h1", "h2", "t1", "jump"], ["hostname", "-I"])
        assert pool.get("h1") is pool.get("h1")
    assert all(not isinstance(r, Exception) and r.ok for r in results.values())
    for name, r in results.items():
        assert ssh_lab.host(name).address in r.stdout.split()  # type: ignore[union-attr]
