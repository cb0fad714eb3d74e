"""Start, stop and cold-restart an arm of the A/B on every instance of a layout.

An action is a playbook (harness.ansible, with the instance's vars as extravars) or a
command (argv with `{arm}` `{layout}` `{tp}` `{instance}` `{port}` `{host}` `{address}`
filled in, run on the named inventory host through its Transport, or on the gate host for
`host: local`). After start / restart the harness waits for every endpoint's /health.
The instances of a layout (TP4x2's two) act at the same time: a 480B restart takes
minutes, and they are separate engines.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from harness.config.inventory import Inventory
from harness.config.models import Action, Arm, CommandAction, Layout, Proxy, SiteConfig
from harness.errors import EndpointError, InfrastructureError, UsageError

if TYPE_CHECKING:
    from harness.ansible.events import AnsibleEvent
    from harness.transport import TransportPool

T = TypeVar("T")


@dataclass(frozen=True)
class Endpoint:
    url: str
    instance: int
    host: str  # the instance's host: where its engine listens on the layout's port
    proxy: Proxy | None = None  # declared in arms.<arm>.proxies: the URL reaches a proxy
    declared: bool = False  # from arms.<arm>.endpoints, not the layout's host and port


def endpoints(config: SiteConfig, inventory: Inventory, arm_name: str,
              layout: Layout) -> list[Endpoint]:
    """The arm's URLs for a layout: declared per arm, else http://<host address>:<port>."""
    arm = _arm(config, arm_name)
    declared = arm.endpoints.get(layout.name)
    if declared:
        if len(declared) != len(layout.instances):
            raise UsageError(f"{len(declared)} endpoints for {len(layout.instances)} instances",
                             key=f"arms.{arm_name}.endpoints.{layout.name}")
        proxies = {u.rstrip("/"): p for u, p in arm.proxies.items()}
        return [Endpoint(u.rstrip("/"), i, inst.host, proxies.get(u.rstrip("/")), True)
                for i, (u, inst) in enumerate(zip(declared, layout.instances, strict=True))]
    out = []
    for i, inst in enumerate(layout.instances):
        address = inventory.host(inst.host).address if inst.host in inventory.hosts \
            else inst.host
        out.append(Endpoint(f"{inst.scheme}://{address}:{inst.port}", i, inst.host))
    return out


@dataclass(frozen=True)
class Listener:
    """Where an endpoint's URL is served from: an inventory host and a port, whose
    listening process must be the inspected engine (or the declared proxy)."""

    host: str | None  # None: not an inventory host (`why` says so)
    port: int
    why: str = ""


_LOOPBACK = {"localhost": "127.0.0.1", "ip6-localhost": "::1"}


def _norm(name: str) -> str:
    name = name.strip().strip("[]").lower()
    return _LOOPBACK.get(name, name)


def url_listener(ep: Endpoint, inventory: Inventory) -> Listener:
    """The host and port behind the endpoint's URL: a declared proxy's own (`host`,
    `port`), else the inventory host whose address or name is the URL's host (the
    instance's own first: several simulated hosts share 127.0.0.1)."""
    parts = urllib.parse.urlsplit(ep.url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return Listener(None, 0, f"{ep.url!r} has no valid port")
    if ep.proxy is not None and ep.proxy.port is not None:
        port = ep.proxy.port
    if ep.proxy is not None and ep.proxy.host is not None:
        if ep.proxy.host not in inventory.hosts:
            return Listener(None, port, f"the proxy's host {ep.proxy.host} is not in the "
                                        "inventory")
        return Listener(ep.proxy.host, port)
    wanted = _norm(parts.hostname or "")
    hits = [h.name for h in inventory.hosts.values()
            if wanted in (_norm(h.name), _norm(h.address))]
    if ep.host in hits:
        return Listener(ep.host, port)
    if len(hits) == 1:
        return Listener(hits[0], port)
    if hits:
        return Listener(None, port, f"its host {parts.hostname} is the address of several "
                                    f"inventory hosts ({', '.join(sorted(hits)[:4])})")
    return Listener(None, port, f"its host {parts.hostname} is not an inventory host")


def _arm(config: SiteConfig, name: str) -> Arm:
    if config.arms is None:
        raise UsageError("G3 needs `arms: {baseline: ..., accelerated: ...}`", key="arms")
    arm: Arm = getattr(config.arms, name)
    return arm


def health_path(config: SiteConfig) -> str:
    """The configured engine's health route (llama-cpp-python has no /health; Ollama
    answers /api/version), else /health (docs/engines.md)."""
    from harness.loadgen.engines import PROFILES

    return PROFILES[config.engine].health if config.engine else "/health"


def wait_healthy(url: str, timeout: float, *, interval: float = 0.2,
                 cancel: threading.Event | None = None, path: str = "/health") -> float:
    """Poll GET `path` until 200; returns the seconds it took. `cancel` ends the wait."""
    start = time.monotonic()
    last = "no answer"
    while time.monotonic() - start < timeout:
        if cancel is not None and cancel.is_set():
            raise EndpointError(f"cancelled while waiting for {path}", host=url,
                                stage="health")
        try:
            with urllib.request.urlopen(f"{url}{path}", timeout=5) as resp:
                if resp.status == 200:
                    return time.monotonic() - start
                last = f"HTTP {resp.status}"
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code}"
        except (urllib.error.URLError, OSError) as exc:
            last = str(getattr(exc, "reason", exc))
        if cancel is not None:
            cancel.wait(interval)
        else:
            time.sleep(interval)
    raise EndpointError(f"not healthy after {timeout:.0f} s ({last})", host=url, stage="health")


# (action, the instance's values, what to call it, a cancel event set when the run is
# interrupted while other instances act): runs one action on one instance.
ActionRunner = Callable[[Action, dict[str, str], str, threading.Event], None]
_CANCEL_WAIT = 60.0  # for the other instances' actions to stop after an interrupt


def on_each(items: Sequence[T], act: Callable[[T], object],
            cancel: threading.Event) -> None:
    """act(item) for every item at once, one thread each; after all have ended, the first
    error in item order is raised. An interrupt of the caller sets `cancel` (which the
    actions watch), waits for them to stop, and goes on."""
    if len(items) == 1:
        act(items[0])
        return
    pool = concurrent.futures.ThreadPoolExecutor(len(items), thread_name_prefix="gate-action")
    futures = [pool.submit(act, item) for item in items]
    try:
        # futures.wait, not Thread.join: it is safe to interrupt (bpo-45274).
        while concurrent.futures.wait(futures, timeout=0.5).not_done:
            pass
    except BaseException:
        cancel.set()
        concurrent.futures.wait(futures, timeout=_CANCEL_WAIT)
        raise
    finally:
        pool.shutdown(wait=False)
    for future in futures:
        if (error := future.exception()) is not None:
            raise error


@dataclass
class ArmControl:
    """Runs an arm's actions for a layout; `run_action` is injected (transport / ansible)."""

    config: SiteConfig
    inventory: Inventory
    run_action: ActionRunner

    def _vars(self, arm: str, layout: Layout, ep: Endpoint) -> dict[str, str]:
        inst = layout.instances[ep.instance]
        address = (self.inventory.host(inst.host).address if inst.host in self.inventory.hosts
                   else inst.host)
        return {"arm": arm, "layout": layout.name, "tp": str(layout.tp),
                "instance": str(ep.instance), "port": str(inst.port), "host": inst.host,
                "address": address, "url": ep.url}

    def _do(self, arm: str, layout: Layout, which: str, wait: bool) -> float:
        spec = _arm(self.config, arm)
        action: Action | None = getattr(spec, which)
        if action is None and which == "restart":  # no restart action: stop + start
            self._do(arm, layout, "stop", wait=False)
            return self._do(arm, layout, "start", wait=True)
        assert action is not None
        eps = endpoints(self.config, self.inventory, arm, layout)
        start = time.monotonic()
        what = f"{arm} {which} {layout.name}"
        cancel = threading.Event()
        on_each(eps, lambda ep: self.run_action(action, self._vars(arm, layout, ep), what,
                                                cancel), cancel)
        if wait:
            path = health_path(self.config)
            on_each(eps, lambda ep: wait_healthy(ep.url, spec.health_timeout, cancel=cancel,
                                                 path=path), cancel)
        return time.monotonic() - start

    def start(self, arm: str, layout: Layout) -> float:
        return self._do(arm, layout, "start", wait=True)

    def restart(self, arm: str, layout: Layout) -> float:
        return self._do(arm, layout, "restart", wait=True)

    def stop(self, arm: str, layout: Layout) -> float:
        return self._do(arm, layout, "stop", wait=False)


def last_words(stderr: str) -> str:
    """The last line a failed command wrote, without its program's `NAME: error:` lead."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    if not lines:
        return "(no output on stderr)"
    last = lines[-1]
    head, sep, rest = last.partition(": error: ")
    last = rest if sep and len(head) < 40 else last
    if last.startswith("stage ") and ": " in last:  # the stage is ours to name
        last = last.split(": ", 1)[1]
    return last[:300]


def fill(argv: list[str], values: dict[str, str]) -> list[str]:
    """Fill `{name}` placeholders; an unknown one is a config error, not a crash."""
    return [_fill_one(a, values) for a in argv]


def _fill_one(text: str, values: dict[str, str]) -> str:
    try:
        return text.format_map(values)
    except (KeyError, ValueError, IndexError) as exc:
        raise UsageError(f"bad placeholder in {text!r}: {exc}",
                         hint=f"known: {', '.join('{' + k + '}' for k in values)}") from None


def fill_vars(value: object, values: dict[str, str]) -> object:
    """Playbook vars get the same placeholders (Ansible does not template gate's vars)."""
    if isinstance(value, str):
        return _fill_one(value, values)
    if isinstance(value, list):
        return [fill_vars(v, values) for v in value]
    if isinstance(value, dict):
        return {k: fill_vars(v, values) for k, v in value.items()}
    return value


class EventSink(Protocol):
    """Where the steps of a run are recorded (harness.store.recorder.RunRecorder.event)."""

    def __call__(self, *, source: str, name: str, host: str | None, status: str,
                 message: str = "", duration: float = 0.0) -> None: ...


def transport_action_runner(pool: TransportPool, inventory: Inventory, known_hosts: Path,
                            artifact_dir: Path, on_event: EventSink,
                            become_password: str | None = None) -> ActionRunner:
    """The real runner: commands over the host's Transport, playbooks via ansible-runner."""

    def run(action: Action, values: dict[str, str], what: str,
            cancel: threading.Event) -> None:
        started = time.monotonic()
        if isinstance(action, CommandAction):
            argv = fill(action.command, values)
            if action.host == "local":
                from harness.transport import LocalTransport

                with LocalTransport() as local:
                    result = local.run(argv, timeout=action.timeout)
            else:
                result = pool.get(action.host).run(argv, timeout=action.timeout)
            ok = result.rc == 0
            on_event(source="action", name=what, host=action.host,
                     status="ok" if ok else "failed", duration=time.monotonic() - started,
                     message=(result.stderr or result.stdout)[-2000:] if not ok else "")
            if not ok:
                # The command itself is in the run's events; the console and the report
                # show the start of this line, so it begins with what the command said.
                raise InfrastructureError(
                    f"failed (rc {result.rc}): {last_words(result.stderr)}",
                    host=action.host, stage=what)
            return
        from harness.ansible import playbook_path, run_playbook

        filled = fill_vars(dict(action.vars), values)
        assert isinstance(filled, dict)
        extravars: dict[str, object] = {**values, **filled}

        def ansible_event(ev: AnsibleEvent) -> None:
            on_event(source="ansible", name=f"{action.playbook}: {ev.task}", host=ev.host,
                     status=ev.status, duration=ev.duration, message=ev.message)

        run_playbook(playbook_path(action.playbook), inventory=inventory.path,
                     known_hosts=known_hosts, limit=action.limit or values["host"],
                     extravars=extravars, artifact_dir=artifact_dir / "ansible",
                     on_event=ansible_event, become_password=become_password,
                     cancel=cancel)
        on_event(source="action", name=what, host=values["host"], status="ok",
                 duration=time.monotonic() - started, message="")

    return run
