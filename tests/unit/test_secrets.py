"""The sudo password leaves the environment when the command line starts: not inherited
by any child, not readable in /proc/PID/environ of gate or of a fork of it."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import os
from harness.secrets import take_sudo_password
taken = take_sudo_password()
own = open(f"/proc/{os.getpid()}/environ", "rb").read()
child = os.fork()
if child == 0:
    import time
    time.sleep(1.0)
    os._exit(0)
forked = open(f"/proc/{child}/environ", "rb").read()
os.waitpid(child, 0)
spawned = subprocess.run(["cat", "/proc/self/environ"], capture_output=True).stdout
print(taken, b"pw-4711-x" in own, b"pw-4711-x" in forked, b"pw-4711-x" in spawned,
      "GATE_SUDO_PASSWORD" in os.environ)
"""


def test_the_password_is_taken_and_found_nowhere_after() -> None:
    out = subprocess.run([sys.executable, "-c", "import subprocess\n" + PROBE],
                         env={"GATE_SUDO_PASSWORD": "pw-4711-x", "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["pw-4711-x", "False", "False", "False", "False"]


def test_an_empty_or_absent_password_is_none() -> None:
    from harness.secrets import take_sudo_password

    env = {"GATE_SUDO_PASSWORD": "", "OTHER": "x"}
    assert take_sudo_password(env) is None and env == {"OTHER": "x"}
    assert take_sudo_password({}) is None
