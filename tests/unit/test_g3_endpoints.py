"""Which host and port an arm's endpoint URL reaches (harness.serving.arms.url_listener): the
process listening there must be the inspected engine, or a declared proxy."""

from __future__ import annotations

from pathlib import Path

from harness.config.inventory import HostSpec, Inventory
from harness.config.loader import parse_config
from harness.serving.arms import Endpoint, endpoints, url_listener

INV = Inventory(Path("hosts.ini"), {
    "gpu1": HostSpec("gpu1", "127.0.0.1"), "store1": HostSpec("store1", "127.0.0.1"),
    "gpu2": HostSpec("gpu2", "10.0.0.2"), "gw": HostSpec("gw", "gw.example")}, {})

SITE = """\
site: {name: s}
campaign: {name: c}
model: {name: m}
arms:
  baseline: {start: {command: [serve]}, stop: {command: [stop]}}
  accelerated:
    start: {command: [serve, --tier]}
    stop: {command: [stop]}
    endpoints: {TP8: ["https://gw.example:8443/"]}
    proxies: {"https://gw.example:8443": {port: 9443}}
layouts:
  - {name: TP8, tp: 8, instances: [{host: gpu2, port: 8000}]}
"""


def test_the_instance_host_comes_first_among_hosts_sharing_an_address() -> None:
    ep = Endpoint("http://127.0.0.1:9000", 0, "gpu1", declared=True)
    assert url_listener(ep, INV).host == "gpu1" and url_listener(ep, INV).port == 9000
    other = Endpoint("http://localhost:9000", 0, "gpu2", declared=True)
    listen = url_listener(other, INV)
    assert listen.host is None and "several inventory hosts (gpu1, store1)" in listen.why
    assert url_listener(Endpoint("http://10.0.0.2", 0, "gpu1", declared=True), INV).port == 80
    assert url_listener(Endpoint("http://[::1]:1", 0, "gpu1", declared=True),
                        INV).why == "its host ::1 is not an inventory host"


def test_a_declared_proxy_names_its_own_host_and_port() -> None:
    cfg, _ = parse_config(SITE, "gate.yaml")
    [base] = endpoints(cfg, INV, "baseline", cfg.layouts[0])
    [acc] = endpoints(cfg, INV, "accelerated", cfg.layouts[0])
    assert (base.url, base.declared, base.proxy) == ("http://10.0.0.2:8000", False, None)
    assert acc.url == "https://gw.example:8443" and acc.declared and acc.proxy is not None
    listen = url_listener(acc, INV)
    assert (listen.host, listen.port) == ("gw", 9443)
    missing = Endpoint(acc.url, 0, "gpu2", acc.proxy.model_copy(update={"host": "nope"}), True)
    assert url_listener(missing, INV).why == "the proxy's host nope is not in the inventory"
