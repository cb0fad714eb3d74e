"""Transport backends: wrappers a host asks for with an inventory variable.

A backend answers some of a host's commands itself and hands the rest to the host's real
Transport (local or SSH). The one that exists today is the simulated lab's hardware: a
host with `gate_sim_hardware=PROFILE` answers nvidia-smi, nvme, lspci ... from captures.

Why registered and not imported: a backend belongs to the package that knows what it
simulates or adds (the simulated hardware lives in harness.sim), and transport sits below
those packages. So a backend registers itself in the `gate.transport_backends`
entry-point group under the name of the host variable that selects it, and connect()
looks the group up (importlib.metadata) only for a host that carries a `gate_` variable.
Only the backend asked for is imported; nothing is cached between lookups. Tests and
embedders can pass their own resolver instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Protocol

from harness.errors import InventoryError
from harness.transport.base import Transport

GROUP = "gate.transport_backends"
VAR_PREFIX = "gate_"  # only a host variable with this prefix can select a backend


@dataclass(frozen=True)
class BackendHost:
    """What a backend may know about the host it wraps (not the whole inventory)."""

    name: str
    vars: Mapping[str, object]
    inventory_dir: Path | None  # relative paths in host variables are found beside it
    on_simulated: Callable[[], None] | None  # call on each answer that is not the host's


class TransportBackend(Protocol):
    """Wrap `inner` for `host`; a bad host variable is an InventoryError naming the host."""

    def __call__(self, host: BackendHost, inner: Transport) -> Transport: ...


BackendResolver = Callable[[str], TransportBackend | None]


def registered_backend(var: str) -> TransportBackend | None:
    """The backend registered under the host variable `var`, imported now; None if none.
    An install that registers no backend at all is broken (an editable install made before
    the group existed): a simulated host would quietly be taken for real hardware."""
    if not entry_points(group=GROUP):
        raise InventoryError(f"a host sets {var}, and this install of gate registers no "
                             f"transport backends", hint="reinstall gate: ./scripts/setup.sh")
    for point in entry_points(group=GROUP, name=var):
        backend = point.load()
        if not callable(backend):
            raise InventoryError(f"transport backend {var} ({point.value}) is not callable",
                                 hint="reinstall gate: ./scripts/setup.sh")
        found: TransportBackend = backend
        return found
    return None


def with_backends(host: BackendHost, inner: Transport,
                  resolve: BackendResolver = registered_backend) -> Transport:
    """inner wrapped by every backend the host's variables select, in variable-name order."""
    transport = inner
    for var in sorted(v for v in host.vars if v.startswith(VAR_PREFIX)):
        backend = resolve(var)
        if backend is not None:
            transport = backend(host, transport)
    return transport
