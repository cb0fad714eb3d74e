"""Transport speed on the network-namespace lab (root only).

Goals (issue 4): 100 sequential short commands on one host over a reused SSH connection
<= 3 s; the same command on 8 lab hosts in parallel <= 2x the time of one host.
Also shown: the same through a jump host, and bulk output throughput.
Run: .venv/bin/python benchmarks/transport.py [--commands 100] [--hosts 8] [--rounds 20]
     [--bulk-mb 50]   (the test suite runs a tiny size; the goals are for the defaults)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.transport import SSHTransport, TransportPool
from tests.lab import netlab


def sequential(t: SSHTransport, n: int) -> float:
    t.run(["true"]).check()  # connected and warm
    start = time.perf_counter()
    for _ in range(n):
        t.run(["true"]).check()
    return time.perf_counter() - start


def fan_out(pool: TransportPool, names: list[str], rounds: int = 20,
            argv: tuple[str, ...] = ("true",)) -> float:
    """Median wall time of one command on every named host at once (warm connections)."""
    pool.run_all(names, argv)
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        results = pool.run_all(names, argv)
        times.append(time.perf_counter() - start)
        assert all(not isinstance(r, Exception) and r.ok for r in results.values()), results
    return statistics.median(times)


def batch_on_each(pool: TransportPool, names: list[str], n: int = 20) -> float:
    """Wall time of n sequential commands on each named host, hosts in parallel threads."""
    from concurrent.futures import ThreadPoolExecutor

    for name in names:
        pool.get(name).run(["true"]).check()
    start = time.perf_counter()
    with ThreadPoolExecutor(len(names)) as ex:
        list(ex.map(lambda name: [pool.get(name).run(["true"]).check() for _ in range(n)],
                    names))
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commands", type=int, default=100, help="sequential commands timed")
    ap.add_argument("--hosts", type=int, default=8, help="lab hosts in the fan-out")
    ap.add_argument("--rounds", type=int, default=20,
                    help="fan-out rounds (median; `sleep 0.2` a quarter of them)")
    ap.add_argument("--bulk-mb", type=int, default=50, help="MB of stdout read in one go")
    args = ap.parse_args()
    reason = netlab.skip_reason()
    if reason:
        print(f"skipped: {reason}")
        return 0
    n, k, hosts = args.commands, args.hosts, [f"h{i}" for i in range(1, args.hosts + 1)]
    rounds, sleeps, batch = args.rounds, max(args.rounds // 4, 1), args.rounds
    with netlab.Lab(hosts=(*hosts, "jump"), behind={"t1": "jump"}) as lab:
        with lab.transport("h1") as t:
            assert isinstance(t, SSHTransport)
            seq = sequential(t, n)
            size = args.bulk_mb * 1000 * 1000
            start = time.perf_counter()
            big = t.run_shell(f"head -c {size} /dev/zero", timeout=300).check()
            bulk = time.perf_counter() - start
            assert len(big.stdout) == size
        with lab.transport("t1") as t:
            assert isinstance(t, SSHTransport)
            seq_jump = sequential(t, n)
        inv = lab.load_inventory()
        with TransportPool(inv, known_hosts=lab.known_hosts) as pool:
            one = fan_out(pool, ["h1"], rounds)
            many = fan_out(pool, hosts, rounds)
            one_sleep = fan_out(pool, ["h1"], rounds=sleeps, argv=("sleep", "0.2"))
            many_sleep = fan_out(pool, hosts, rounds=sleeps, argv=("sleep", "0.2"))
            batch_one = batch_on_each(pool, ["h1"], batch)
            batch_many = batch_on_each(pool, hosts, batch)
        start = time.perf_counter()
        with TransportPool(inv, known_hosts=lab.known_hosts) as cold:
            results = cold.run_all(hosts, ["true"])
            assert all(not isinstance(r, Exception) for r in results.values())
        cold_many = time.perf_counter() - start
    goal = 3.0 * n / 100  # 3 s per 100 commands
    print(f"{n} sequential commands, one host, reused connection: {seq:.2f} s "
          f"({seq / n * 1000:.1f} ms each; goal <= {goal:g} s: "
          f"{'OK' if seq <= goal else 'MISSED'})")
    print(f"{n} sequential commands through the jump host:        {seq_jump:.2f} s "
          f"({seq_jump / n * 1000:.1f} ms each)")
    print(f"one command, 1 host: {one * 1000:.1f} ms; on {k} hosts in parallel: "
          f"{many * 1000:.1f} ms; ratio {many / one:.2f}x "
          f"(goal <= 2x: {'OK' if many <= 2 * one else 'MISSED'})")
    print(f"`sleep 0.2`, 1 host: {one_sleep * 1000:.0f} ms; on {k} hosts in parallel: "
          f"{many_sleep * 1000:.0f} ms; ratio {many_sleep / one_sleep:.2f}x (waiting overlaps)")
    print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
          "(the lab's sshd and shells share these cores with the client)")
    print(f"{batch} commands per host, 1 host: {batch_one:.2f} s; {k} hosts in parallel: "
          f"{batch_many:.2f} s; ratio {batch_many / batch_one:.2f}x (2 shared cores)")
    print(f"{k} hosts from cold (connect + one command, parallel): {cold_many:.2f} s")
    print(f"{args.bulk_mb} MB on stdout: {bulk:.2f} s ({size / bulk / 1e6:.0f} MB/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
