"""`load.placement: client`: the executor that runs each load phase on the inventory's
client host, with the agent shipped there first (harness.remote.ship)."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.config.inventory import Inventory
from harness.errors import UsageError
from harness.remote.executor import RemoteExecutor
from harness.remote.ship import ship_agent
from harness.transport.pool import TransportPool


def default_agent_root() -> Path:
    """Where install.sh puts the bundle's agent wheels: beside the installed gate."""
    return Path(sys.prefix) / "share" / "gate" / "agent"


def client_executor(inventory: Inventory, pool: TransportPool, agent_wheels: Path | None,
                    run_id: int) -> RemoteExecutor:
    """Ship the agent to the first [client] host and return the executor for it."""
    host = inventory.group("client")[0].name
    root = agent_wheels or default_agent_root()
    if not root.is_dir():
        raise UsageError(f"no load-agent wheels at {root}", key="load.agent_wheels",
                         hint="install gate from a bundle (install.sh puts them there) or "
                              "set load.agent_wheels to an unpacked bundle's agent/ directory")
    transport = pool.get(host)
    agent = ship_agent(transport, root)
    return RemoteExecutor(transport, agent, f".gate/phases/run{run_id}")
