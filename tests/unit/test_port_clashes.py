"""Ports two things would listen on at once on one host (harness/config/checks.py
port_clashes), and the pre-flight's reading of a suite's needs against what the site
declared optional (harness/workflow/preflight.py required)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.config.inventory import load_inventory
from harness.config.loader import load_config
from harness.config.models import SiteConfig
from harness.suite_hooks import Needs, SuiteHooks, ToolNeed, UrlNeed
from harness.workflow.preflight import Site, required

COMMAND = {"command": ["true"]}


def _config(**extra: Any) -> SiteConfig:
    return SiteConfig.model_validate({"site": {"name": "s"}, "campaign": {"name": "c"},
                                      "model": {"name": "m"}, **extra})


def _keys(config: SiteConfig) -> list[str]:
    from harness.config.checks import port_clashes

    return [key for key, _ in port_clashes(config)]


def test_layouts_share_ports_but_instances_of_one_do_not() -> None:
    two = [{"host": "gpu1", "port": 8000}, {"host": "gpu1", "port": 8000}]
    assert _keys(_config(layouts=[
        {"name": "A", "tp": 1, "instances": [{"host": "gpu1", "port": 8000}]},
        {"name": "B", "tp": 1, "instances": [{"host": "gpu1", "port": 8000}]}])) == []
    assert _keys(_config(layouts=[{"name": "A", "tp": 1, "instances": two}])) == \
        ["layouts[0].instances[1].port"]
    other_host = [{"host": "gpu1", "port": 8000}, {"host": "gpu2", "port": 8000}]
    assert _keys(_config(layouts=[{"name": "A", "tp": 1, "instances": other_host}])) == []


def test_a_proxy_on_its_engines_port_and_a_kv_store_on_an_engines_port() -> None:
    url = "http://gpu1:8000"
    arm = {"start": COMMAND, "stop": COMMAND}
    config = _config(
        layouts=[{"name": "A", "tp": 1, "instances": [{"host": "gpu1", "port": 8000}]}],
        arms={"baseline": arm, "accelerated": {**arm, "endpoints": {"A": [url]},
                                               "proxies": {url: {}}}},
        gates={"g3": {"evidence": {"store_metrics": ["http://gpu1:8000",
                                                     "http://kv:99999"]}}})
    assert _keys(config) == [f"arms.accelerated.proxies.{url}",
                             "gates.g3.evidence.store_metrics[0]",
                             "gates.g3.evidence.store_metrics[1]"]


def _site(tmp_path: Path) -> Site:
    (tmp_path / "hosts.ini").write_text("[gpu]\ngpu1 ansible_connection=local\n")
    (tmp_path / "gate.yaml").write_text(
        "site: {name: s}\ncampaign: {name: c}\nmodel: {name: m}\n"
        "gates: {g2: {optional: [test_gdsio, 'test_fio[gpu1-a-seq-read]']}}\n")
    loaded = load_config(tmp_path / "gate.yaml", ())
    return Site(loaded, load_inventory(tmp_path / "hosts.ini"))


def test_a_need_whose_checks_are_all_optional_is_dropped(tmp_path: Path) -> None:
    fio = ToolNeed("gpu1", ("fio",), ("test_fio[gpu1-a-seq-read]", "test_fio[gpu1-a-lat]"))
    gdsio = ToolNeed("gpu1", ("gdsio",), ("test_gdsio[gpu1]",))
    store = UrlNeed("http://kv/metrics", "k", ("test_gdsio[gpu1]",))
    hooks = SuiteHooks(expected_checks=lambda c, i: [],
                       needs=lambda c, i: Needs(tools=(fio, gdsio), urls=(store,),
                                                load_agent=("test_gdsio[gpu1]", "x")))
    found = required("G2", hooks, _site(tmp_path))
    assert found.tools == (fio,)  # one of fio's checks is not optional
    assert found.urls == () and found.load_agent == ("x",)
