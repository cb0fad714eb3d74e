"""The demo's engine ports are leased for the whole demo, outside the kernel's ephemeral
range, so a second demo beside it cannot take one while an engine restarts (issue 16)."""

from __future__ import annotations

from pathlib import Path

from harness.demo import PortLease, _below_ephemeral


def test_two_leases_never_share_a_port_and_a_released_one_is_free_again() -> None:
    low, high = _below_ephemeral()
    first = PortLease.take()
    second = PortLease.take()
    try:
        assert {first.port, first.port + 1}.isdisjoint({second.port, second.port + 1})
        for lease in (first, second):
            assert low <= lease.port < high
        ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text()
                            .split()[0])
        assert second.port + 1 < ephemeral_low
    finally:
        first.release()
        second.release()
