"""Reading the process behind an instance: the engine on the layout's port, what code it
runs, and whether the endpoint the load goes to is that same process.

Why: identity read from one process while the load goes to another proves nothing (an
adversarial review pointed `endpoints:` at a proxy in front of a faster engine while
the layout's port ran the honest one). So each endpoint's URL is resolved to the
inventory host and port it reaches and the process listening there: it must be the
engine gate inspected (same host, same pid), or a proxy declared in
`arms.<arm>.proxies`, whose own process is then read and compared between the arms
like an engine's (`proxy:` facts). A URL whose host is no inventory host cannot be
inspected: ERROR, unless declared with its host.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.config.inventory import Inventory
from harness.config.models import SiteConfig
from harness.errors import GateError, MeasurementError
from harness.probes.process import ProcessInfo, listeners, root_process
from harness.probes.process_args import code_query, is_python, model_argument
from harness.probes.process_code import read_code
from harness.serving.arms import Endpoint, url_listener
from harness.serving.identity import engine_facts, proxy_facts
from harness.serving.running import ENGINE_PACKAGES, Running, running_facts
from harness.transport import TransportPool

# Processes that forward a port to an engine gate cannot see (a container's, a remote
# one): their argv says nothing about the engine's configuration.
FORWARDERS = ("docker-proxy", "rootlessport", "slirp4netns", "socat", "kubectl", "haproxy",
              "nginx", "envoy", "sshd")


@dataclass(frozen=True)
class Seen:
    """One process read on a host and port, or why it could not be."""

    proc: ProcessInfo | None
    problem: str = ""
    running: Running | None = None  # what code it runs (None: not read)


@dataclass
class Inspector:
    config: SiteConfig
    inventory: Inventory
    pool: TransportPool
    # Hosts whose engines could be read only with sudo: go there directly next time.
    sudo_hosts: set[str] = field(default_factory=set)

    def listener(self, host: str, port: int, *, engine: bool = True) -> Seen:
        """The root process listening on host:port, or why it cannot be seen. An engine
        behind a forwarder (docker-proxy, ...) is not visible; a declared proxy may be one."""
        where = f"{host}:{port}"
        if host not in self.inventory.hosts:
            return Seen(None, f"{where}: host not in the inventory, its process cannot be read")
        transport = self.pool.get(host)
        try:
            hidden = host in self.sudo_hosts
            if not hidden:
                try:
                    found = listeners(transport, port)
                    hidden = any(p.env is None for p in found)
                except MeasurementError:  # a socket of another user's process
                    hidden = True
            if hidden:  # run as another user: read it with sudo
                found = listeners(transport, port, sudo=True)
                self.sudo_hosts.add(host)
            if not found:
                return Seen(None, f"{where}: no process listens there (another network "
                                  "namespace?)")
            proc = root_process(found)  # the server, not the workers that share its socket
        except GateError as exc:
            return Seen(None, f"{where}: {exc.one_line()}")
        if engine and (proc.comm in FORWARDERS or (
                proc.argv and proc.argv[0].rsplit("/", 1)[-1] in FORWARDERS)):
            return Seen(proc, f"{where}: the listening process is {proc.comm}, a forwarder: "
                              "the engine's own argv and environment are not visible")
        if proc.env is None:
            return Seen(proc, f"{where}: the environment of pid {proc.pid} is not readable")
        return Seen(proc)

    def code(self, host: str, port: int, proc: ProcessInfo, *, engine: bool) -> Running:
        """What code the process runs (an engine's packages: arms.engine_packages and
        `python -m NAME`'s, which must be found; its profile's, recorded)."""
        arms = self.config.arms
        profile = ENGINE_PACKAGES.get(self.config.engine or "", ()) if engine else ()
        configured = tuple(arms.engine_packages) if engine and arms is not None else ()
        query, expected = code_query(proc.pid, proc.start_ticks, proc.exe, proc.argv,
                                     proc.env, configured=configured, profile=profile)
        try:
            code = read_code(self.pool.get(host), query, sudo=host in self.sudo_hosts)
        except GateError as exc:
            return Running({}, [f"{host}:{port}: {exc.one_line()}"], frozenset())
        found = running_facts(code, expected,
                              model_argument(proc.argv, is_python(proc.exe, proc.argv)))
        return Running(found.facts, [f"{host}:{port}: {p}" for p in found.problems],
                       found.libs)

    def engine(self, host: str, port: int, *, read_code: bool) -> Seen:
        seen = self.listener(host, port)
        if not read_code or seen.proc is None or seen.problem:
            return seen
        return Seen(seen.proc, "", self.code(host, port, seen.proc, engine=True))

    def endpoint(self, arm: str, ep: Endpoint, port: int,
                 engine: ProcessInfo | None) -> tuple[dict[str, str], list[str]]:
        """(proxy facts, problems) of the endpoint the load goes to: its listener must be
        the inspected engine, or a declared proxy (read and returned as `proxy:` facts)."""
        if not ep.declared:
            return {}, []  # the layout's own host and port: the engine's socket
        listen = url_listener(ep, self.inventory)
        key = f"arms.{arm}.proxies"
        if listen.host is None:
            return {}, [f"endpoint {ep.url}: {listen.why}: the process it reaches cannot be "
                        f"inspected (declare the proxy and its host in {key})"]
        if ep.proxy is None and (listen.host, listen.port) == (ep.host, port):
            return {}, []
        seen = self.listener(listen.host, listen.port, engine=False)
        if seen.proc is None:
            return {}, [f"endpoint {ep.url}: {seen.problem}"]
        if ep.proxy is None:
            if engine is not None and listen.host == ep.host and seen.proc.pid == engine.pid:
                return {}, []
            inspected = f"pid {engine.pid}" if engine is not None else "not read"
            return {}, [f"endpoint {ep.url}: its listener is not the inspected engine: "
                        f"{listen.host}:{listen.port} is served by pid {seen.proc.pid} "
                        f"({seen.proc.comm}), the engine read on {ep.host}:{port} is "
                        f"{inspected} (a proxy in between must be declared in {key})"]
        problems = [f"proxy {ep.url}: {seen.problem}"] if seen.problem else []
        proc = seen.proc
        facts = engine_facts(proc.argv, proc.env)
        if not problems:
            running = self.code(listen.host, listen.port, proc, engine=False)
            facts.update(running.facts)
            problems += [f"proxy {ep.url}: {p}" for p in running.problems]
        return proxy_facts(facts), problems
