"""Secrets the harness is given at start, taken out of the environment at once.

The sudo password comes from GATE_SUDO_PASSWORD. It is read once, when the command line
starts, and removed from this process's environment, so nothing started afterwards
(ansible-runner, which dumps its environment into its artifacts; the engines an arm
action starts; any shell) inherits it. From there it is handed, as a value, only to
what feeds it to sudo's prompt.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

SUDO_ENV = "GATE_SUDO_PASSWORD"


def take_sudo_password(environ: MutableMapping[str, str] | None = None) -> str | None:
    """The sudo password, removed from `environ` (default: this process's environment)."""
    env = os.environ if environ is None else environ
    value = env.pop(SUDO_ENV, None)
    return value or None
