"""Secrets the harness is given at start, taken out of the environment at once.

The sudo password comes from GATE_SUDO_PASSWORD. It is read once, when the command line
starts, and removed from this process's environment, so nothing started afterwards
(ansible-runner, which dumps its environment into its artifacts; the engines an arm
action starts; any shell) inherits it. From there it is handed, as a value, only to
what feeds it to sudo's prompt.

Removing a variable (unsetenv) leaves its text in the process's original environment
block, which /proc/PID/environ shows for this process and for every fork of it until it
execs. So the text is overwritten there too (glibc / musl: getenv returns a pointer into
that block), before the variable is removed.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import MutableMapping

SUDO_ENV = "GATE_SUDO_PASSWORD"


def take_sudo_password(environ: MutableMapping[str, str] | None = None) -> str | None:
    """The sudo password, removed from `environ` (default: this process's environment,
    whose original block is scrubbed as well)."""
    env = os.environ if environ is None else environ
    if environ is None:
        _scrub_original(SUDO_ENV)
    value = env.pop(SUDO_ENV, None)
    return value or None


def _scrub_original(name: str) -> None:
    """Overwrite the value of `name` in the C environment with NULs (same length, so the
    block keeps its shape). Best effort: where libc is not reachable, nothing changes."""
    try:
        libc = ctypes.CDLL(None)
        getenv = libc.getenv
    except (OSError, AttributeError):
        return
    getenv.restype = ctypes.c_void_p
    getenv.argtypes = [ctypes.c_char_p]
    address = getenv(name.encode())
    if not address:
        return
    length = len(ctypes.string_at(address))
    ctypes.memset(address, 0, length)
