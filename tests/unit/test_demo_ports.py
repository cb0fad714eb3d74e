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


def test_a_busy_machine_is_said_in_one_line_with_what_was_measured() -> None:
    from harness.demo import busy_line

    quiet = [(0.8, {"sim_lag_max_s": 0.02}), (0.7, {"sim_lag_max_s": None})]
    assert busy_line(2.4, 2, quiet) == ""
    line = busy_line(4.6, 2, quiet)
    assert "load average up to 4.6 on 2 cores" in line and "\n" not in line
    lagging = busy_line(1.0, 2, [(0.79, {"sim_lag_max_s": 0.30})])
    assert "0.30 s (38% of a phase)" in lagging
