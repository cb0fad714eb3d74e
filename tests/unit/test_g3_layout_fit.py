"""A layout is held against the GPUs its hosts have: tp x pp x the instances on each host,
against G1's count there (else the BOM's); fewer, or nobody counted, is a misfit (the
layout check's ERROR), with words naming host, layout, tp, instances and GPUs found."""

from __future__ import annotations

from harness.config.bom import declared_gpus
from harness.config.models import G1, Layout
from harness.report.i18n import translator
from harness.report.reasons import say
from harness.serving.layout_fit import HostGpus, misfits, needs


def layout(name: str, tp: int, hosts: list[str], pp: int = 1) -> Layout:
    return Layout.model_validate({"name": name, "tp": tp, "pp": pp, "instances": [
        {"host": h, "port": 8000 + i} for i, h in enumerate(hosts)]})


def test_needs_sum_the_instances_on_each_host() -> None:
    assert [(n.host, n.instances, n.gpus) for n in needs(layout("TP4x2", 4, ["g1", "g1"]))] \
        == [("g1", 2, 8)]
    split = needs(layout("TP2pp2", 2, ["g1", "g2", "g1"], pp=2))
    assert [(n.host, n.instances, n.gpus) for n in split] == [("g1", 2, 8), ("g2", 1, 4)]


def test_tp8_on_a_host_with_two_gpus_is_a_misfit_naming_everything() -> None:
    found = {"gpu1": HostGpus("gpu1", 2, g1_run=3)}
    (m,) = misfits(layout("TP8", 8, ["gpu1"]), found)
    assert m.text() == ("layout TP8 needs 8 GPUs on gpu1 (tp=8 x 1 instance(s)), 2 found "
                        "(G1 run 3, nvidia-smi)")
    assert say(translator("en"), m.why()) == m.text()  # the catalogue says the same words
    assert "布局 TP8" in say(translator("zh"), m.why())


def test_enough_gpus_fit_and_the_bom_stands_in_for_g1() -> None:
    eight = {"gpu1": HostGpus("gpu1", 8, bom_group="gpu")}
    assert misfits(layout("TP8", 8, ["gpu1"]), eight) == []
    assert misfits(layout("TP4x2", 4, ["gpu1", "gpu1"]), eight) == []
    (m,) = misfits(layout("TP4x3", 4, ["gpu1"] * 3), eight)
    assert m.need.gpus == 12 and "(the gpu group's BOM; no G1 record)" in m.text()
    assert say(translator("en"), m.why()) == m.text()


def test_a_host_nobody_counted_cannot_pass() -> None:
    (m,) = misfits(layout("TP1", 1, ["gpu9"]), {})
    assert m.found is None and "cannot be checked against its GPUs" in m.text()
    assert say(translator("en"), m.why()) == m.text()


def test_the_bom_count_of_the_hosts_first_group_with_gpus() -> None:
    g1 = G1.model_validate({"bom": {"storage": {"nvme": {"model": "X", "count": 1}},
                                    "gpu": {"gpu": {"model": "H100", "count": 8}}}})
    assert declared_gpus(g1, ("storage", "gpu")) == ("gpu", 8)
    assert declared_gpus(g1, ("storage",)) is None and declared_gpus(g1, ()) is None
