"""Transport backends are found by the host variable that asks for one: the simulated
hardware through its entry point, any other through the resolver a caller passes."""

from __future__ import annotations

from pathlib import Path

from harness.config.inventory import load_inventory
from harness.sim import hardware_transport
from harness.transport import TransportPool
from harness.transport.backends import BackendHost, TransportBackend, registered_backend
from harness.transport.base import Transport, WrappedTransport


def test_the_simulated_hardware_is_registered_under_its_host_variable() -> None:
    # Fails on an editable install older than the entry point: rerun ./scripts/setup.sh.
    assert registered_backend("gate_sim_hardware") is hardware_transport.wrap
    assert registered_backend("gate_sim_captures") is None
    assert registered_backend("gate_no_such_backend") is None


class Tagged:
    """A wrapper that answers nothing itself: shows which backend wrapped which."""

    def __init__(self, tag: str, host: BackendHost, inner: Transport) -> None:
        self.tag, self.seen, self.inner, self.host = tag, host, inner, inner.host
        self.run, self.run_shell, self.close = inner.run, inner.run_shell, inner.close
        self.put, self.get, self.read_file = inner.put, inner.get, inner.read_file

    @property
    def hardware(self) -> str:
        return f"tagged ({self.tag})"

    def __enter__(self) -> Tagged:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Resolver:
    """Backends gate_a and gate_b (and one under a name without the prefix); records asks."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, var: str) -> TransportBackend | None:
        self.asked.append(var)
        if var not in ("gate_a", "gate_b", "plain"):
            return None
        tag = var.removeprefix("gate_")
        return lambda host, inner: Tagged(tag, host, inner)


def test_a_pool_wraps_a_host_in_the_backends_its_variables_name(tmp_path: Path) -> None:
    (tmp_path / "hosts.ini").write_text(
        "[gpu]\ng1 ansible_connection=local gate_b=1 gate_a=x plain=1 gate_other=2\n"
        "g2 ansible_connection=local plain=1\n")
    resolve = Resolver()
    with TransportPool(load_inventory(tmp_path / "hosts.ini"), known_hosts=tmp_path / "kh",
                       backends=resolve, on_simulated=lambda: None) as pool:
        outer = pool.get("g1")
        assert isinstance(outer, Tagged) and isinstance(outer, WrappedTransport)
        assert outer.tag == "b" and isinstance(outer.inner, Tagged) and outer.inner.tag == "a"
        assert outer.seen.name == "g1" and outer.seen.inventory_dir == tmp_path
        assert outer.run(["echo", "real"]).stdout == "real\n"  # the rest reaches the host
        plain = pool.get("g2")
        assert not isinstance(plain, WrappedTransport)
    assert resolve.asked == ["gate_a", "gate_b", "gate_other"]  # only gate_ variables, sorted
