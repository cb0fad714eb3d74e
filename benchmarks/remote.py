"""The offline bundle and the load agent, in figures (issue 17).

Goals: bundle from a warm pip cache <= 60 s; install from it <= 60 s; the agent's phase
reaches the in-process load generator's requests/s against the no-op server (within
10 %); pulling 1 M request records back: transfer + decode <= 10 s; end to end with
storing them, as a figure.

Run: .venv/bin/python benchmarks/remote.py [--records 1000000] [--requests 4000]
     [--skip-bundle]   (the bundle and install steps take ~80 s together)
     [--skip-phase]    (only the pull of --records records, and storing them)
The pull runs through LocalTransport (the same `gate-agent pull` command as over SSH,
without the network), so it measures the agent's read, the pipe and the decode.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from loadgen import start_server

from harness.loadgen import storage
from harness.loadgen.phase import InProcessExecutor, PhaseSpec
from harness.loadgen.records import Endpoint, RequestRecord, RequestSpec
from harness.remote import frames, records_file
from harness.remote.executor import Puller, RemoteExecutor, parse_pull
from harness.store.db import Store
from harness.store.runs import NewRun, start_run
from harness.transport.local import LocalTransport

ROOT = Path(__file__).resolve().parents[1]
AGENT = (sys.executable, "-m", "harness.remote.agent")


def bundle_and_install(tmp: Path) -> None:
    out = tmp / "b.tar.gz"
    t0 = time.monotonic()
    subprocess.run([str(Path(sys.executable).with_name("gate")), "bundle", "-o", str(out)],
                   check=True, capture_output=True)
    built = time.monotonic() - t0
    subprocess.run(["tar", "xzf", str(out), "-C", str(tmp)], check=True)
    (top,) = [p for p in tmp.iterdir() if p.is_dir()]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE="/dev/null", HOME=str(tmp))
    t0 = time.monotonic()
    subprocess.run(["sh", str(top / "install.sh"), str(tmp / "venv")], check=True, env=env,
                   capture_output=True)
    installed = time.monotonic() - t0
    print(f"bundle (warm pip cache): {built:.1f} s, {out.stat().st_size / 1e6:.0f} MB "
          f"(goal <= 60 s)")
    print(f"install.sh (checksums + venv + pip --no-index): {installed:.1f} s (goal <= 60 s)")


def phase_rate(n: int, trials: int, tmp: Path) -> None:
    proc, url = start_server()
    try:
        spec = PhaseSpec(endpoints=(Endpoint(url, "test-model", 0),),
                         requests=tuple(RequestSpec("hello world", 16, i) for i in range(n)),
                         concurrency=64)
        local, agent = [], []
        for i in range(trials):  # alternate so drift on a shared machine hits both
            out = InProcessExecutor(progress=False).run(spec)
            local.append(out.result.summary.request_throughput)
            ex = RemoteExecutor(LocalTransport(), AGENT, str(tmp / f"phases{i}"), poll=0.2)
            agent.append(ex.run(spec).result.summary.request_throughput)
    finally:
        proc.kill()
    best_l, best_a = max(local), max(agent)
    print(f"phase req/s, c=64, 16 tokens, {n} requests, best of {trials}: in-process "
          f"{best_l:.0f}, agent {best_a:.0f} ({100 * best_a / best_l:.0f} %; goal >= 90 %)")


def pull_many(n: int, tmp: Path) -> None:
    phase = tmp / "pull"
    phase.mkdir()
    # 8-24 chunk times a request (16 on average), in the engine's batches of 2000
    chunks = [[0.02 + 0.005 * k for k in range(m)] for m in range(8, 25)]
    with (phase / frames.NAME).open("wb") as f:
        append = records_file.Appender(f)
        for start in range(0, n, 2000):
            append([RequestRecord(idx=i, instance=0, doc_id=i, warmup=False,
                                  scheduled=i * 1e-3, sent=i * 1e-3, ttft=0.02,
                                  ttft_text=0.02, e2el=0.095, chunk_times=chunks[i % 17],
                                  prompt_tokens=3, output_tokens=16, usage_reported=True,
                                  status=200, finish_reason="length")
                    for i in range(start, min(n, start + 2000))])
    (phase / "status.json").write_text(json.dumps({"state": "finished", "pid": 1}))
    size = (phase / frames.NAME).stat().st_size
    t = LocalTransport()

    def pull_all(store_rows: storage.RequestSink | None) -> tuple[float, float, int]:
        puller, moved = Puller(), 0.0
        decode = 0.0
        while puller.offset < size:
            a = time.monotonic()
            res = t.run([*AGENT, "pull", "--dir", str(phase), "--offset",
                         str(puller.offset)], timeout=300)
            got = parse_pull(res.stdout)
            b = time.monotonic()
            fresh = puller.take(got.data)
            if store_rows is not None:
                store_rows(fresh)
            moved += b - a
            decode += time.monotonic() - b
        return moved, decode, len(puller.records)

    moved, decode, count = pull_all(None)
    print(f"pull {count} records ({size / 1e6:.0f} MB, 8-24 chunk times each): transfer "
          f"{moved:.1f} s + decode {decode:.1f} s = {moved + decode:.1f} s (goal <= 10 s)")
    store = Store(f"sqlite:///{tmp / 'gate.db'}")
    run_id = start_run(store, NewRun(campaign="b", site="b", customer="", kind="bench"))
    writer = storage.PhaseWriter(store, run_id, storage.PhaseKey("a", "L", 0, 0, "m"),
                                 params={})
    t0 = time.monotonic()
    pull_all(writer.sink)
    total = time.monotonic() - t0
    print(f"end to end with storing in SQLite: {total:.1f} s ({count / total:.0f} records/s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--requests", type=int, default=4000)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--skip-bundle", action="store_true")
    ap.add_argument("--skip-phase", action="store_true", help="only the pull figures")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gate-bench-remote-") as d:
        tmp = Path(d)
        if not args.skip_bundle:
            (tmp / "bundle").mkdir()
            bundle_and_install(tmp / "bundle")
        if not args.skip_phase:
            phase_rate(args.requests, args.trials, tmp)
        pull_many(args.records, tmp)


if __name__ == "__main__":
    main()
