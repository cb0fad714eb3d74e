"""Turn an argv into the one line a remote shell runs, and read our markers back off stderr.

Why: SSH carries a command *string*, so every argv word is quoted with shlex (hostile
strings arrive literally). The line first prints the shell's pid (sshd makes that shell
a process-group leader, and sudo keeps its child in the group), so a timed-out command
can be killed as a group. With a sudo password, sudo is told to prompt with a random
marker on stderr; the password is sent only when that prompt appears, and the command's
own stdin only after a second marker printed once sudo has let the command start.
"""

from __future__ import annotations

import re
import secrets
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HOLD_LIMIT = 64 * 1024  # stderr held back while looking for a marker, at most

SEND_STDIN = "stdin"
SEND_PASSWORD = "password"
AUTH_FAILED = "auth-failed"


def validate_argv(argv: Sequence[str]) -> tuple[str, ...]:
    if isinstance(argv, str):
        raise TypeError("argv must be a list of words, not a string (use run_shell for a script)")
    words = tuple(argv)
    if not words:
        raise ValueError("argv is empty")
    for word in words:
        if not isinstance(word, str):
            raise TypeError(f"argv words must be str, got {type(word).__name__}")
        if "\x00" in word:
            raise ValueError("argv words cannot contain NUL")
    return words


def env_words(env: Mapping[str, str] | None) -> list[str]:
    """`env K=V ...` words; names are checked so a key cannot smuggle in a command."""
    if not env:
        return []
    words = ["env"]
    for key, value in env.items():
        if not _ENV_NAME.match(key):
            raise ValueError(f"bad environment variable name {key!r}")
        if "\x00" in value:
            raise ValueError(f"environment value for {key} contains NUL")
        words.append(f"{key}={value}")
    return words


@dataclass(frozen=True)
class RemoteCommand:
    """The shell line to run and the markers to look for on its stderr."""

    line: str
    pid_marker: str | None
    prompt: str | None  # sudo -S prompt: answer it with the password
    go: str | None  # printed after sudo authenticated: send stdin after it


def build(argv: Sequence[str], *, env: Mapping[str, str] | None = None, sudo: bool = False,
          password: bool = False, pid_marker: bool = True) -> RemoteCommand:
    """The remote line for argv (with env, under sudo -n, or sudo -S when password)."""
    inner = [*env_words(env), *validate_argv(argv)]
    token = secrets.token_hex(8)
    prompt = go = None
    if sudo and password:
        prompt = f"[gate-sudo-{token}]"
        go = f"gate-go-{token}"
        start = f'printf "%s\\n" {go} >&2; exec "$@"'
        words = ["sudo", "-S", "-p", prompt, "--", "sh", "-c", start, "sh", *inner]
    elif sudo:
        words = ["sudo", "-n", "--", *inner]
    else:
        words = inner
    marker = f"gate-pid-{token}:" if pid_marker else None
    line = "exec " + shlex.join(words)
    if marker:
        line = f"printf '%s%s\\n' {marker} \"$$\" >&2; " + line
    return RemoteCommand(line=line, pid_marker=marker, prompt=prompt, go=go)


@dataclass
class Preamble:
    """Strips our markers from the head of stderr and says what to send when.

    feed() returns the stderr bytes that belong to the command plus the actions due:
    SEND_PASSWORD (sudo prompted), SEND_STDIN (the command is running), AUTH_FAILED
    (sudo prompted a second time: the password is wrong).
    """

    command: RemoteCommand
    pid: int | None = None
    prompts: int = 0
    _held: bytes = b""
    _stage: str = field(default="pid")

    def __post_init__(self) -> None:
        if self.command.pid_marker is None:
            self._stage = "auth" if self.command.go else "pass"

    def start_actions(self) -> list[str]:
        """Actions due before any output: stdin goes at once unless sudo must ask first."""
        return [] if self.command.go else [SEND_STDIN]

    @property
    def started(self) -> bool:
        return self._stage == "pass"

    def feed(self, data: bytes) -> tuple[bytes, list[str]]:
        if self._stage == "pass":
            return data, []
        self._held += data
        out = b""
        actions: list[str] = []
        if self._stage == "pid":
            out += self._take_pid()
        if self._stage == "auth":
            more, actions = self._take_auth()
            out += more
        if self._stage != "pass" and len(self._held) > _HOLD_LIMIT:
            # No marker in sight (not a POSIX shell?): stop holding the command's output.
            out, self._held, self._stage = out + self._held, b"", "pass"
            actions.append(SEND_STDIN)
        return out, actions

    def flush(self) -> bytes:
        held, self._held = self._held, b""
        return held

    def _take_pid(self) -> bytes:
        marker = (self.command.pid_marker or "").encode()
        at = self._held.find(marker)
        if at < 0:
            return b""
        end = self._held.find(b"\n", at)
        if end < 0:
            return b""
        before = self._held[:at]
        digits = self._held[at + len(marker): end]
        self.pid = int(digits) if digits.isdigit() else None
        self._held = self._held[end + 1:]
        self._stage = "auth" if self.command.go else "pass"
        if self._stage == "pass":
            before, self._held = before + self._held, b""
        return before

    def _take_auth(self) -> tuple[bytes, list[str]]:
        prompt = (self.command.prompt or "").encode()
        go = (self.command.go or "").encode() + b"\n"
        actions: list[str] = []
        while prompt and prompt in self._held:
            self._held = self._held.replace(prompt, b"", 1)
            self.prompts += 1
            actions.append(SEND_PASSWORD if self.prompts == 1 else AUTH_FAILED)
        at = self._held.find(go)
        if at < 0:
            return b"", actions
        out = self._held[:at] + self._held[at + len(go):]
        self._held, self._stage = b"", "pass"
        actions.append(SEND_STDIN)
        return out, actions


def kill_script(pid: int) -> str:
    """TERM the process group (then the pid), wait up to 2 s, then KILL whatever is left.

    `kill -SIG -PGID`, not `kill -SIG -- -PGID`: dash's kill does not take `--`.
    """
    return (
        f"kill -TERM -{pid} 2>/dev/null || kill -TERM {pid} 2>/dev/null; "
        "i=0; while [ $i -lt 20 ]; do "
        f"kill -0 -{pid} 2>/dev/null || kill -0 {pid} 2>/dev/null || exit 0; "
        "sleep 0.1; i=$((i+1)); done; "
        f"kill -KILL -{pid} 2>/dev/null; kill -KILL {pid} 2>/dev/null; exit 0"
    )
