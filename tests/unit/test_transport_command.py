"""The remote command line and the stderr markers: quoting, sudo modes, what to send when."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from harness.transport import command

HOSTILE = ["; rm -rf /tmp/x", "$(touch /tmp/pwned)", "`id`", "it's", 'say "hi"', "a\nb",
           "世界 ünï", "*", "~", "$HOME", "--", "-n", "\\", "", " lead and trail "]


def _shell(line: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["sh", "-c", line], capture_output=True, timeout=10)


def test_hostile_words_reach_the_program_literally() -> None:
    # The line a remote login shell would run, run by a real local shell.
    rc = command.build(["printf", "%s\\0", *HOSTILE], pid_marker=False)
    done = _shell(rc.line)
    assert done.returncode == 0
    assert done.stdout.decode().split("\0")[:-1] == HOSTILE


def test_pid_marker_comes_first_on_stderr_and_is_the_shell_pid() -> None:
    rc = command.build(["sh", "-c", "echo $$ >&2; echo out"])
    done = _shell(rc.line)
    first, second = done.stderr.decode().splitlines()
    assert rc.pid_marker and first.startswith(rc.pid_marker)
    assert first[len(rc.pid_marker):] == second  # exec keeps the pid
    pre = command.Preamble(rc)
    kept, actions = pre.feed(done.stderr)
    assert pre.pid == int(second) and kept == (second + "\n").encode()
    assert pre.start_actions() == [command.SEND_STDIN] and actions == []


def test_env_is_passed_with_env_and_names_are_checked() -> None:
    rc = command.build(["sh", "-c", 'printf %s "$X"'], env={"X": "$(id) `q` ;"}, pid_marker=False)
    assert _shell(rc.line).stdout == b"$(id) `q` ;"
    with pytest.raises(ValueError, match="bad environment variable name"):
        command.build(["true"], env={"X; rm -rf /": "1"})


@pytest.mark.parametrize("bad", ["echo hi", [], ["a\x00b"], [1]])
def test_bad_argv_is_refused(bad: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        command.build(bad)  # type: ignore[arg-type]


def test_sudo_without_password_is_non_interactive() -> None:
    rc = command.build(["id"], sudo=True)
    assert "exec sudo -n -- id" in rc.line and rc.prompt is None and rc.go is None


def test_sudo_with_password_prompts_with_a_marker_and_signals_start() -> None:
    rc = command.build(["cat"], sudo=True, password=True)
    words = shlex.split(rc.line.split("; ", 1)[1])
    assert words[:5] == ["exec", "sudo", "-S", "-p", rc.prompt]
    assert rc.go and rc.go in words[8]
    pre = command.Preamble(rc)
    assert pre.start_actions() == []  # stdin waits until sudo let the command start
    assert rc.pid_marker and rc.prompt
    kept, actions = pre.feed(f"{rc.pid_marker}42\n".encode() + rc.prompt[:5].encode())
    assert (kept, actions, pre.pid) == (b"", [], 42)
    kept, actions = pre.feed(rc.prompt[5:].encode())
    assert actions == [command.SEND_PASSWORD]
    kept, actions = pre.feed(f"warning: lecture\n{rc.go}\ncommand err\n".encode())
    assert kept == b"warning: lecture\ncommand err\n" and actions == [command.SEND_STDIN]
    assert pre.started and pre.feed(b"more")[0] == b"more"


def test_a_second_sudo_prompt_means_the_password_was_wrong() -> None:
    rc = command.build(["true"], sudo=True, password=True)
    assert rc.pid_marker and rc.prompt
    pre = command.Preamble(rc)
    pre.feed(f"{rc.pid_marker}7\n{rc.prompt}".encode())
    _kept, actions = pre.feed(f"Sorry, try again.\n{rc.prompt}".encode())
    assert actions == [command.AUTH_FAILED]
    pre.feed(b"sudo: 1 incorrect password attempt\n")
    assert b"incorrect password" in pre.flush() and not pre.started


def test_output_without_a_marker_is_not_held_forever() -> None:
    pre = command.Preamble(command.build(["true"]))
    kept, actions = pre.feed(b"x" * (70 * 1024))
    assert len(kept) == 70 * 1024 and command.SEND_STDIN in actions and pre.pid is None


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_kill_script_ends_a_process_group() -> None:
    proc = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60 & wait"], start_new_session=True)
    try:
        done = _shell(command.kill_script(proc.pid))
        assert done.returncode == 0
        assert proc.wait(timeout=10) != 0
        members = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True).stdout
        assert all(_zombie(int(p)) for p in members.split())  # no init reaps them here
    finally:
        if proc.poll() is None:
            proc.kill()
