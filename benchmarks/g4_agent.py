"""What a client soak's viewer costs the client host (issue 26): the CPU of the agent's
commands the gate runs there, per pull and per window, as a share of one core.

The soak's spool grows as a 72 h soak's does (N windows, the last M of them written one
by one); after each window the viewer's own cadence is replayed: `gate-agent soak-pull
--after K` as often as ClientPlace.poll_s says at that window length (a quarter window,
at most 15 s: 4 a 60 s window), through RemoteSoak over a LocalTransport (the same argv
as over SSH, without sshd), and the agent check (AgentGuard, every 30 s: 2 a window).
CPU is the children's rusage of this process around each command: the agent's Python,
everything it ran, and the `find` / `tar` of a check. Not counted: sshd's own work per
command at a site (one channel on the gate's open connection).

Goal: < 1 % of a core at 60 s windows, at the end of a 72 h soak (4 320 windows).

Run: .venv/bin/python benchmarks/g4_agent.py [--windows 4320] [--measure 20]
     [--window-s 60] [--agent ship|here]
  ship (default): the agent installed from wheels into a venv, as `placement: client`
  does (harness.remote.ship; wheels made from this gate's venv: harness.bundle.
  local_agent), run as `venv/bin/python -I -B -m harness.remote.agent`; ~20 s to install.
  here: this venv's Python (its editable install costs ~40 ms more a start).
"""

from __future__ import annotations

import argparse
import math
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from g4_soak import write_spool

from harness.g4.placement import client_poll_s
from harness.g4.session import HARDWARE_EVERY_S
from harness.g4.spool import SoakState
from harness.remote.soak_client import RemoteSoak
from harness.remote.verify import AgentGuard
from harness.sim.hardware_transport import HomeTransport
from harness.transport.base import Transport
from harness.transport.local import LocalTransport

WINDOW_DOC = {"errors": {}, "ttft_p50_s": 9.3, "ttft_p99_s": 14.0, "tpot_p50_s": 0.05,
              "output_tokens": 30720, "external_hit_tokens": 3.0e6,
              "engine_rss_bytes": 4.0e10, "engine_restarts": 0,
              "engines": [{"instance": 0, "sampled": True}]}


def child_cpu() -> float:
    """User + system seconds of every child this process has waited for."""
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def timed(call: Callable[[], object]) -> float:
    before = child_cpu()
    call()
    return child_cpu() - before


def agent(kind: str, home: Path) -> tuple[Transport, list[str], AgentGuard | None]:
    """The transport to the 'client host' (a home directory here), the agent's argv and
    its gate-side check (None: an agent this benchmark did not ship)."""
    transport: Transport = HomeTransport(LocalTransport("client"), home)
    if kind == "here":
        return transport, [sys.executable, "-I", "-B", "-m", "harness.remote.agent"], None
    from harness.bundle.local_agent import local_agent_wheels
    from harness.remote.ship import install_agent
    from harness.remote.verify import shipped

    t = time.perf_counter()
    installed = install_agent(transport, local_agent_wheels())
    guard = AgentGuard(transport, installed.venv, installed.site, shipped(installed.wheels))
    guard.check()  # the first, whole read: once a run, not per window
    print(f"agent shipped and read back in {time.perf_counter() - t:.1f} s "
          f"({len(installed.wheels)} wheels)")
    return transport, installed.argv, guard


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--windows", type=int, default=4320, help="the spool's size at the end")
    ap.add_argument("--measure", type=int, default=20, help="windows replayed at the end")
    ap.add_argument("--window-s", type=float, default=60.0)
    ap.add_argument("--agent", choices=("ship", "here"), default="ship")
    args = ap.parse_args()
    n, m, w = args.windows, min(args.measure, args.windows), args.window_s
    poll = client_poll_s(w, 2.0)  # the viewer's, with its default poll_s
    pulls_per_window = math.ceil(w / poll)  # and one just after each edge, which this is
    checks_per_window = w / HARDWARE_EVERY_S
    with tempfile.TemporaryDirectory(prefix="gate-g4agent-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        transport, argv, guard = agent(args.agent, home)
        directory = ".gate/soaks/run1-bench"
        t = time.perf_counter()
        spool = write_spool(home / directory, n - m, w)
        print(f"spool: {n - m} window files written in {time.perf_counter() - t:.2f} s")
        remote = RemoteSoak(transport, argv, directory)
        pull_cpu: list[float] = []
        check_cpu: list[float] = []
        stored = n - m - 1
        t = time.perf_counter()
        for k in range(n - m, n):
            spool.write_window(k, {"index": k, "start_s": k * w, "length_s": w,
                                   "requests": 240, **WINDOW_DOC})
            spool.set_state(SoakState("running", 1, 1_000_000.0, 1_000_000.0 + (k + 1) * w,
                                      windows_written=k + 1))
            for _ in range(pulls_per_window):
                before = child_cpu()
                got = remote.pull(stored).windows
                pull_cpu.append(child_cpu() - before)
                stored = max([stored, *(int(x["index"]) for x in got)])
            if guard is not None:
                check_cpu.append(timed(guard.check))
        wall = time.perf_counter() - t
    assert stored == n - 1, f"pulled through {stored}, {n} windows written"
    pull = sum(pull_cpu) / len(pull_cpu)
    check = sum(check_cpu) / len(check_cpu) if check_cpu else 0.0
    per_window = pulls_per_window * pull + checks_per_window * check
    print(f"cadence at {w:g} s windows: a pull every {poll:g} s ({pulls_per_window} a window),"
          f" an agent check every {HARDWARE_EVERY_S:g} s ({checks_per_window:g} a window)")
    print(f"pull: {len(pull_cpu)} pulls at {n - m}..{n} windows, CPU {pull * 1000:.1f} ms a "
          f"pull (min {min(pull_cpu) * 1000:.1f}, max {max(pull_cpu) * 1000:.1f}); "
          f"{wall:.1f} s wall")
    if check_cpu:
        print(f"agent check: {len(check_cpu)} checks, CPU {check * 1000:.1f} ms a check")
    else:
        print("agent check: not measured (--agent here: nothing was shipped)")
    share = per_window / w
    print(f"per window: {per_window * 1000:.1f} ms CPU = {share:.3%} of a core at {w:g} s "
          f"windows   goal < 1 % ({'met' if share < 0.01 else 'NOT met'})")


if __name__ == "__main__":
    main()
