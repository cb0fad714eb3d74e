"""Run one simulated engine in the foreground until SIGTERM / SIGINT.

Prints its URL on stderr once it listens (and writes it to `url_file` if given, so a
controller that asked for port 0 learns the real one). On the way out: in-flight streams
are cut, the diskstats file gets a last update, the tier index is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
from pathlib import Path

from harness.errors import InfrastructureError
from harness.sim.spec import EngineSpec


async def serve(spec: EngineSpec, *, url_file: Path | None = None,
                stop: asyncio.Event | None = None) -> None:
    from aiohttp import web

    from harness.sim.server import SimServer, build_app

    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    server = SimServer(spec)
    await server.start()
    runner = web.AppRunner(build_app(server), access_log=None, handle_signals=False,
                           shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, spec.host, spec.port, reuse_address=True, backlog=1024)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        server.close()
        said = exc.strerror.lower() if exc.strerror else str(exc)  # "address already in use"
        raise InfrastructureError(f"cannot listen on {spec.host}:{spec.port}: {said}",
                                  stage="sim start") from exc
    url = _bound_url(site, spec)
    accts = server.diskstats()

    def flush_all() -> None:
        for a in accts:
            a.flush()

    if accts:
        server.engine.io.on_read_done = flush_all
    flushers = [asyncio.create_task(a.run(stop)) for a in accts]
    keeper = asyncio.create_task(server.housekeep(stop))
    tier = "on" if spec.external_tier else "off"
    sys.stderr.write(
        f"gate sim: SIMULATED engine {server.model} (profile {server.profile.name}, "
        f"tp {server.tp}, instance {spec.instance}, tier {tier}, speed {spec.speed:g}) "
        f"serving at {url}\n")
    sys.stderr.flush()
    if url_file is not None:
        tmp = url_file.with_name(url_file.name + ".tmp")
        tmp.write_text(url + "\n")
        tmp.replace(url_file)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
        server.engine.drain_writes()
        await keeper
        for flusher in flushers:
            await flusher
        for acct in accts:
            acct.flush(final=True)
        server.close()
        sys.stderr.write("gate sim: stopped\n")


def _bound_url(site: object, spec: EngineSpec) -> str:
    server = getattr(site, "_server", None)
    sockets = getattr(server, "sockets", None) or []
    port = spec.port
    for s in sockets:
        if s.family in (socket.AF_INET, socket.AF_INET6):
            port = s.getsockname()[1]
            break
    host = spec.host
    if host in ("0.0.0.0", "", "::"):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def run_foreground(spec: EngineSpec, *, url_file: Path | None = None) -> None:
    """Blocking: uvloop when installed (the `fast` extra), else asyncio's loop."""
    try:
        import uvloop

        factory = uvloop.new_event_loop
    except ImportError:  # pragma: no cover - uvloop is optional
        factory = None
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(serve(spec, url_file=url_file))
