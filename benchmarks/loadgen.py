"""Load generator speed against a local no-op streaming server (issues 5 and 24).

Goals: at concurrency 64 with 16-token streams, `gate bench` (recording every chunk time,
storing every request, judging its own health) sustains >= 1.0x the rate of a bare
single-process aiohttp + uvloop client measured in the same run (issue 24: knowing its
own error must not cost its speed); below saturation (c=64, server TTFT 50 ms, 16 tokens
5 ms apart) it adds <= 1 ms to TTFT p50 over the server's own first-byte stamps.

gate's phases carry http:// streams on gate's own HTTP/1.1 client
(harness/loadgen/http1_pool.py; docs/metrics.md says why), which parses every event and
stamps every read; the reference stays what the issue names, aiohttp + uvloop reading
each stream to its end without parsing it. The client each gate run used is printed.

Run: .venv/bin/python benchmarks/loadgen.py [--requests 20000] [--trials 5]
Each client runs in its own process, one after another, against the same server process;
trials alternate bare / engine / `gate bench` so drift on a shared machine (other jobs
taking CPU) hits all alike, and the ratios are taken per trial. --pin puts the server on
CPU 0 and every client on CPU 1 (at a site the engine and the client are different hosts;
unpinned, client and server share the cores, and a client that costs more CPU per
request also leaves less to the server).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "loadgen_support" / "server.py"
RAW = ROOT / "tests" / "loadgen_support" / "rawserver.py"
WARM = 2000  # requests each client sends before it is timed (its pool, the server's caches)
MODEL = "test-model"
PROMPT = "hello world"  # every client sends it: the server's work per request is alike


def pinned(cpu: int | None) -> Callable[[], None] | None:
    """A preexec_fn that puts the child on one CPU (None: anywhere)."""
    if cpu is None or not hasattr(os, "sched_setaffinity"):
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


def start_server(*extra: str, cpu: int | None = None,
                 script: Path = SERVER) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, str(script), "--model", MODEL, *extra],
                            stdout=subprocess.PIPE, text=True, preexec_fn=pinned(cpu))
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("READY "):
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return proc, line.split()[1]


def start_raw(*extra: str, cpu: int | None = None) -> tuple[subprocess.Popen[str], str]:
    return start_server(*extra, cpu=cpu, script=RAW)


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def bare(url: str, c: int, n: int) -> dict[str, Any]:
    """The reference: aiohttp + uvloop, one process, read each stream to its end."""
    import aiohttp
    import uvloop

    body = json.dumps({"model": MODEL, "prompt": PROMPT, "max_tokens": 16,
                       "stream": True, "stream_options": {"include_usage": True}}).encode()

    async def go() -> dict[str, Any]:
        conn = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=conn) as s:
            left = [n]

            async def worker() -> None:
                while left[0] > 0:
                    left[0] -= 1
                    async with s.post(url + "/v1/completions", data=body,
                                      headers={"Content-Type": "application/json"}) as r:
                        async for _ in r.content.iter_any():
                            pass

            left[0] = min(WARM, n)
            await asyncio.gather(*(worker() for _ in range(c)))  # warm the pool
            left[0] = n
            c0, t = cpu(), time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(c)))
            wall = time.perf_counter() - t
            return {"rate": n / wall, "cpu_us": (cpu() - c0) / n * 1e6}

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(go())


def engine(url: str, c: int, n: int) -> dict[str, Any]:
    """gate's run_phase, every chunk time kept, every request stored through the sink."""
    from harness.loadgen import Endpoint, RequestSpec, run_phase, storage
    from harness.store.db import Store
    from harness.store.runs import NewRun, start_run

    specs = [RequestSpec(PROMPT, 16, i) for i in range(n)]
    ep = [Endpoint(url, MODEL)]
    run_phase(ep, [RequestSpec(PROMPT, 16, i) for i in range(min(WARM, n))], concurrency=c,
              progress=False)  # warm
    with tempfile.TemporaryDirectory() as d:
        store = Store(f"sqlite:///{d}/bench.db")
        run_id = start_run(store, NewRun(campaign="b", site="b", customer="", kind="bench"))
        sink = storage.PhaseWriter(store, run_id, storage.PhaseKey(), params={}).sink
        c0 = cpu()
        res = run_phase(ep, specs, concurrency=c, progress=False, on_batch=sink)
        used = cpu() - c0
        chunks = sum(len(r.chunk_times) for r in res.records)
        store.close()
    return {"rate": res.summary.request_throughput, "cpu_us": used / n * 1e6,
            "stored": sink.stored, "chunks": chunks, "failed": res.summary.failed,
            "http_client": res.params.get("http_client")}


def cli(url: str, c: int, n: int, cpu: int | None) -> dict[str, Any]:
    """The real command, end to end (probe, calibration, /metrics, store, summary, the
    client's own health)."""
    gate = Path(sys.executable).parent / "gate"
    with tempfile.TemporaryDirectory() as d:
        prompts = Path(d) / "prompts.jsonl"  # the reference's very request, so the server
        prompts.write_text(json.dumps({"prompt": PROMPT, "max_tokens": 16}) + "\n")
        out = subprocess.run(  # does the same work for every client
            [str(gate), "bench", "--url", url, "--model", MODEL, "--workload", "trace",
             "--workload-file", str(prompts), "--warmup", str(min(WARM, n)),
             "--concurrency", str(c), "--requests", str(n), "--no-progress", "--json",
             "--metrics-interval", "1", "--db", f"sqlite:///{d}/g.db"],
            capture_output=True, text=True, check=False, preexec_fn=pinned(cpu))
    if out.returncode != 0:
        raise SystemExit(f"gate bench failed: {out.stderr.strip()}")
    doc = json.loads(out.stdout)
    s = doc["summary"]
    return {"rate": s["request_throughput"], "stored": s["stored_requests"],
            "client": doc["client"], "http_client": s.get("http_client")}


def in_child(kind: str, url: str, c: int, n: int, cpu: int | None) -> dict[str, Any]:
    if kind == "cli":
        return cli(url, c, n, cpu)
    out = subprocess.run([sys.executable, __file__, "--child", kind, url, str(c), str(n)],
                         capture_output=True, text=True, check=True, preexec_fn=pinned(cpu))
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def server_cpu(pid: int) -> float:
    """A process's user + system CPU seconds so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def saturation(n: int, trials: int, pin: bool, server: str) -> None:
    if server == "raw":  # cheaper per request than any client: req/s is the client's
        proc, url = start_raw("--ttft", "0", "--itl", "0", "--tokens", "16",
                              cpu=0 if pin else None)
    else:  # aiohttp's server costs more per request than the client: req/s is its own
        proc, url = start_server("--tokens", "16", cpu=0 if pin else None)
    try:
        runs: dict[str, list[dict[str, Any]]] = {"bare": [], "engine": [], "cli": []}
        for _ in range(trials):
            for kind in runs:
                before = server_cpu(proc.pid)
                got = in_child(kind, url, 64, n, 1 if pin else None)
                got["server_us"] = (server_cpu(proc.pid) - before) / (n + min(WARM, n)) * 1e6
                runs[kind].append(got)
    finally:
        proc.terminate()
        proc.wait()
    med = {k: statistics.median(r["rate"] for r in v) for k, v in runs.items()}
    ratios_e = [e["rate"] / b["rate"] for e, b in zip(runs["engine"], runs["bare"], strict=True)]
    ratios_c = [e["rate"] / b["rate"] for e, b in zip(runs["cli"], runs["bare"], strict=True)]
    where = "server on CPU 0, clients on CPU 1" if pin else "unpinned"
    print(f"saturation, c=64, 16-token streams, {n} requests x {trials} trials ({where}, "
          f"{'raw asyncio' if server == 'raw' else 'aiohttp'} server)")
    for kind, label in (("bare", "bare aiohttp+uvloop"), ("engine", "gate engine + store"),
                        ("cli", "gate bench (CLI)")):
        rates = " ".join(f"{r['rate']:.0f}" for r in runs[kind])
        cpu_us = [r["cpu_us"] for r in runs[kind] if "cpu_us" in r]
        # the share of its core the client kept busy: near 100 % it is what limits req/s,
        # well below it the server is (the server's CPU per request is printed beside)
        busy = [r["cpu_us"] * r["rate"] / 1e4 for r in runs[kind] if "cpu_us" in r]
        cpu_txt = (f"  client CPU {statistics.median(cpu_us):.0f} us/req "
                   f"({statistics.median(busy):.0f} % busy)" if cpu_us else "")
        srv = statistics.median(r["server_us"] for r in runs[kind])
        print(f"  {label:<22} median {med[kind]:7.0f} req/s  ({rates}){cpu_txt}"
              f"  server CPU {srv:.0f} us/req")
    e = runs["engine"][-1]
    print(f"  engine kept {e['chunks']} chunk times, stored {e['stored']} of {n} requests, "
          f"{e['failed']} failed; CLI stored {runs['cli'][-1]['stored']}; HTTP client: "
          f"engine {e['http_client']}, CLI {runs['cli'][-1]['http_client']}")
    c = runs["cli"][-1]["client"]
    print(f"  CLI's own error (last trial): delay mean {c['delay_mean_ms']} ms, p99 "
          f"{c['delay_p99_ms']} ms against a TTFT p50 of {c['ttft_p50_ms']} ms; saturated: "
          f"{c['saturated']} {'; '.join(c['reasons'])}")
    print(f"  engine / bare  median ratio {statistics.median(ratios_e):.3f}  "
          f"({' '.join(f'{r:.2f}' for r in ratios_e)})")
    print(f"  CLI / bare     median ratio {statistics.median(ratios_c):.3f}  "
          f"({' '.join(f'{r:.2f}' for r in ratios_c)})   goal >= 1.0")


def bare_ttft(url: str, c: int, n: int) -> dict[int, tuple[float, float]]:
    """The reference client's (sent, first byte) per request, on the monotonic clock."""
    import aiohttp
    import uvloop

    body = json.dumps({"model": MODEL, "prompt": PROMPT, "max_tokens": 16,
                       "stream": True, "stream_options": {"include_usage": True}}).encode()
    out: dict[int, tuple[float, float]] = {}

    async def go() -> None:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
            it = iter(range(n))

            async def worker() -> None:
                for i in it:
                    t = time.monotonic()
                    first = 0.0
                    async with s.post(url + "/v1/completions", data=body, headers={
                            "Content-Type": "application/json",
                            "x-request-id": f"bare-{i}"}) as r:
                        async for _ in r.content.iter_any():
                            if not first:
                                first = time.monotonic()
                    out[i] = (t, first)

            await asyncio.gather(*(worker() for _ in range(c)))

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(go())
    return out


def _added(pairs: dict[int, tuple[float, float]], stamps: dict[str, list[float]],
           tag: str) -> tuple[float, float, float]:
    """(client TTFT p50, server TTFT p50, p50 of the per-request difference), ms."""
    client, server, diff = [], [], []
    for i, (sent, first) in pairs.items():
        st = stamps.get(f"{tag}-{i}")
        if st is None or not first:
            continue
        recv, out = st
        client.append((first - sent) * 1000)
        server.append((out - recv) * 1000)
        diff.append(((first - sent) - (out - recv)) * 1000)
    return statistics.median(client), statistics.median(server), statistics.median(diff)


def _added_gate(ttft_p50_ms: float, stamps: dict[str, list[float]]) -> tuple[float, float]:
    """(client TTFT p50, server TTFT p50), ms: the gate's requests carry UUIDs that its
    records do not keep, so the server's side is every stamp that is not the bare
    client's (the bare client runs after the gate, against the same server)."""
    server = [(out - recv) * 1000 for rid, (recv, out) in stamps.items()
              if not rid.startswith("bare-")]
    return ttft_p50_ms, statistics.median(server)


def ttft_overhead(n: int, trials: int) -> None:
    """Against rawserver.py, whose stamps are taken in data_received and at the write of
    the first chunk: the difference to the client's TTFT is what the client adds."""
    from harness.loadgen import Endpoint, RequestSpec, run_phase

    print(f"below saturation, c=64, server TTFT 50 ms, 16 tokens 5 ms apart, {n} requests "
          f"x {trials} trials (rawserver stamps)")
    gate_added, bare_added = [], []
    for _ in range(trials):
        proc, url = start_raw("--ttft", "0.05", "--itl", "0.005", "--tokens", "16")
        try:
            specs = [RequestSpec(PROMPT, 16, i) for i in range(n)]
            res = run_phase([Endpoint(url, MODEL)], specs, concurrency=64, progress=False,
                            tag="gate")
            bare_pairs = bare_ttft(url, 64, n)
            with urllib.request.urlopen(url + "/_stamps") as r:
                stamps = json.loads(r.read())
        finally:
            proc.terminate()
            proc.wait()
        g = _added_gate(res.summary.ttft.median, stamps)
        b = _added(bare_pairs, stamps, "bare")
        gate_added.append(g[0] - g[1])
        bare_added.append(b[0] - b[1])
        print(f"  gate TTFT p50 {g[0]:.3f} ms vs server {g[1]:.3f}: adds {g[0] - g[1]:.3f} ms;"
              f"  bare adds {b[0] - b[1]:.3f} ms (per-request p50 {b[2]:.3f}) "
              f"({res.summary.request_throughput:.0f} req/s)")
    print(f"  gate adds median {statistics.median(gate_added):.3f} ms to TTFT p50   goal <= 1 ms"
          f"   (bare aiohttp client, same run: {statistics.median(bare_added):.3f} ms)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--ttft-requests", type=int, default=3000,
                    help="requests per trial below saturation")
    ap.add_argument("--pin", action="store_true",
                    help="server on CPU 0, clients on CPU 1")
    ap.add_argument("--server", choices=("raw", "aiohttp"), default="raw",
                    help="raw: a bare asyncio server cheaper per request than any client, "
                         "so req/s is the client's (the goal's figure); aiohttp: the test "
                         "server, which costs more per request than the client")
    ap.add_argument("--child", nargs=4, metavar=("KIND", "URL", "C", "N"))
    args = ap.parse_args()
    if args.child:
        kind, url, c, n = args.child
        fn = bare if kind == "bare" else engine
        print(json.dumps(fn(url, int(c), int(n))))
        return
    saturation(args.requests, args.trials, args.pin, args.server)
    ttft_overhead(args.ttft_requests, args.trials)


if __name__ == "__main__":
    main()
