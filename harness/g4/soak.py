"""The detached soak (harness/loadgen/soak.py, where the load agent can ship it: with
`placement: client` the same soak runs on the client host), and ending a local one."""

from __future__ import annotations

from harness.loadgen.soak import LOG, MODULE, STOP_GRACE_S, Soak, alive, main, run, start
from harness.remote.detach import terminate as end_session

__all__ = ["LOG", "MODULE", "STOP_GRACE_S", "Soak", "alive", "main", "run", "start",
           "terminate"]


def terminate(pid: int, wait: float) -> bool:
    """TERM the soak's session (it stops sending, waits for what is in flight, writes its
    whole windows), KILL after `wait` s; True when it is gone."""
    return end_session(pid, wait, alive)
