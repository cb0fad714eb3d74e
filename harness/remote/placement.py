"""`load.placement`: where a gate's load phases run. `local`: in the gate's process;
`client`: by the agent on the inventory's first [client] host, shipped there first
(harness.remote.ship) and read back and hashed on the gate's side around each phase
(harness.remote.verify). G2's serving baseline and G3 take their executor from here, G4
its agent (`client_agent`: the soak runs there, harness.remote.soak_client), and
`gate resume` / `gate runs abort` stop what a dead run left there (harness.remote.leftovers)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from harness.config.inventory import Inventory
from harness.config.loader import LoadedConfig
from harness.errors import UsageError
from harness.loadgen.phase import Executor, InProcessExecutor
from harness.remote import leftovers
from harness.remote.executor import RemoteExecutor
from harness.remote.ship import Installed, install_agent
from harness.remote.verify import AgentGuard, shipped
from harness.store import Store
from harness.transport.base import Transport
from harness.transport.pool import TransportPool


def default_agent_root() -> Path:
    """Where install.sh puts the bundle's agent wheels: beside the installed gate."""
    return Path(sys.prefix) / "share" / "gate" / "agent"


@dataclass(frozen=True)
class ClientAgent:
    """gate-agent installed on the first [client] host and verified on the gate's side:
    what runs a phase (RemoteExecutor) or G4's soak (harness.remote.soak_client) there."""

    transport: Transport
    installed: Installed
    guard: AgentGuard

    @property
    def host(self) -> str:
        return str(getattr(self.transport, "host", "client"))


def agent_root(agent_wheels: Path | None) -> Path:
    """The local directory of the agent's wheels (load.agent_wheels, else the bundle's,
    else made from this gate's own install: harness.bundle.local_agent)."""
    if agent_wheels is None and not default_agent_root().is_dir():
        from harness.bundle.local_agent import local_agent_wheels

        return local_agent_wheels()
    root = agent_wheels or default_agent_root()
    if not root.is_dir():
        raise UsageError(f"no load-agent wheels at {root}", key="load.agent_wheels",
                         hint="install gate from a bundle (install.sh puts them there) or "
                              "set load.agent_wheels to an unpacked bundle's agent/ directory")
    return root


def client_agent(inventory: Inventory, pool: TransportPool,
                 agent_wheels: Path | None) -> ClientAgent:
    """Ship the agent to the first [client] host (nothing is copied or reinstalled when
    it is there already) and arm its gate-side check."""
    host = inventory.group("client")[0].name
    root = agent_root(agent_wheels)
    transport = pool.get(host)
    installed = install_agent(transport, root)

    def reship() -> None:  # an install found changed before the run's first phase
        install_agent(transport, root, again=True)

    guard = AgentGuard(transport, installed.venv, installed.site, shipped(installed.wheels),
                       reship=reship)
    return ClientAgent(transport, installed, guard)


def client_executor(inventory: Inventory, pool: TransportPool, agent_wheels: Path | None,
                    run_id: int) -> RemoteExecutor:
    """Ship the agent to the first [client] host and return the executor for it."""
    agent = client_agent(inventory, pool, agent_wheels)
    return RemoteExecutor(agent.transport, agent.installed.argv, f".gate/phases/run{run_id}",
                          verify=agent.guard.check)


def load_executor(loaded: LoadedConfig, inventory: Inventory, pool: TransportPool,
                  run_id: int) -> Executor:
    """The executor of run_id's load phases, as `load.placement` says (docs/remote.md)."""
    load = loaded.config.load
    if load.placement != "client":
        return InProcessExecutor()
    wheels = load.agent_wheels
    return client_executor(inventory, pool, loaded.resolve(wheels) if wheels else None,
                           run_id)


def stop_left_phases(executor: Executor, store: Store, run_id: int) -> list[str]:
    """Before a dead run is resumed or closed: its phases still on the client host are
    stopped and their records stored (harness.remote.leftovers); one line each. Nothing
    to do for phases that ran in the gate's process: they died with it."""
    if not isinstance(executor, RemoteExecutor):
        return []
    return [left.line() for left in leftovers.recover(executor, store, run_id)]
