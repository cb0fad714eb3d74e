"""arms.accelerated.differs_by is a decision setting: a pattern allowing every key of a
kind is refused at load (exit 4 naming the key and the pattern); one outside the
accelerator's documented knobs weakens G3 (a sign-off, listed on page 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.decision import DIFFERS_BY, deviations, weakened
from harness.config.knobs import KNOBS, broad, documented, families
from harness.config.loader import parse_config
from harness.errors import ConfigError

BASE = """\
site: {name: s}
campaign: {name: c}
model: {name: m}
arms:
  baseline: {start: {command: [serve]}, stop: {command: [stop]}}
  accelerated:
    start: {command: [serve, --tier]}
    stop: {command: [stop]}
    differs_by: PATTERNS
layouts:
  - {name: TP8, tp: 8, instances: [{host: g, port: 80}]}
"""


def site(patterns: str, extra: str = "") -> str:
    return BASE.replace("PATTERNS", patterns) + extra


@pytest.mark.parametrize(("pattern", "why"), [
    ("*", "must start with one of"),
    ("*external_tier", "must start with one of"),
    ("argv:*", "matches every key of argv:"),
    ("env:*", "matches every key of env:"),
    ("server:*", "matches every key of server:"),
    ("argv:--*", "matches every key of argv:"),
    ("argv:#*", "matches every key of argv:"),
    ("env:[A-Z]*", "matches every key of env:"),
    ("env:?*", "matches every key of env:"),
    ("proxy:argv:*", "matches every key of proxy:argv:"),
    ("env:", "names no key"),
    ("argv:--k*", "at least 3 literal characters"),
    ("env:LD_*", "interpreter / preload variable LD_"),
    ("env:PYTHON*", "interpreter / preload variable PYTHON"),
    ("pkg:vllm.*", "may differ only by a key named exactly"),
    ("proc:cwd*", "may differ only by a key named exactly"),
])
def test_broad_patterns_are_refused_at_load(pattern: str, why: str) -> None:
    assert why in (broad(pattern) or "")
    with pytest.raises(ConfigError) as err:
        parse_config(site(f'["argv:--kv-transfer-config", "{pattern}"]'), "site/gate.yaml")
    assert err.value.exit_code == 4
    assert err.value.key == "arms.accelerated.differs_by[1]"
    line = err.value.one_line()
    assert line.startswith("site/gate.yaml: arms.accelerated.differs_by[1]: ")
    assert repr(pattern) in line and why in line and "\n" not in line


def test_every_documented_knob_and_an_exact_code_key_are_accepted() -> None:
    for family, knobs in KNOBS.items():
        for knob in knobs:
            assert broad(knob) is None, (family, knob)
    for exact in ("proc:cwd", "env:LD_PRELOAD", "pkg:vllm.files", "argv:-tp",
                  "proxy:argv:--port", "server:gate_sim.config.external_tier"):
        assert broad(exact) is None, exact


def test_documented_knobs_follow_the_engine_and_the_simulator() -> None:
    assert families(None, False) == ("vllm", "sglang", "simulator")
    assert families("vllm", True) == ("vllm", "simulator")
    assert families("vllm", False) == ("vllm",)
    assert families("llama.cpp", False) == ()  # no storage accelerator knob documented
    assert documented("env:LMCACHE_*", None, False)
    assert documented("env:LMCACHE_CHUNK_SIZE", "vllm", False)  # narrower than a knob
    assert not documented("env:LMCACHE_CHUNK_*", "vllm", False)  # a new glob: not listed
    assert not documented("argv:--hicache-ratio", "vllm", False)  # SGLang's, not vLLM's
    assert documented("argv:--hicache-ratio", "sglang", False)
    assert not documented("argv:--external-tier", "sglang", False)  # the simulator's
    assert documented("argv:--external-tier", "sglang", True)


def test_an_undocumented_pattern_weakens_g3_and_documented_ones_do_not() -> None:
    cfg, _ = parse_config(site('["argv:--kv-transfer-config", "env:LMCACHE_*"]'), "g.yaml")
    assert deviations(cfg.model_dump(mode="json")) == []
    cfg, _ = parse_config(site('["argv:--kv-transfer-config", "argv:--max-num-seqs", '
                               '"proc:cwd"]'), "g.yaml")
    [dev] = weakened(cfg.model_dump(mode="json"))
    assert dev.key == DIFFERS_BY and dev.value == "argv:--max-num-seqs, proc:cwd"
    assert "needs a reviewer's sign-off" in dev.line() and "proc:cwd" in dev.why
    from harness.g3.plan import weakened as g3_weakened

    # what the runner holds a PASS back for (WEAKENED_REASON); the site has no kv_volume
    line, no_volume = g3_weakened(cfg)
    assert no_volume.startswith("gates.g3.evidence.kv_volume not set")
    assert line.startswith("arms.accelerated.differs_by = argv:--max-num-seqs, proc:cwd")
    # the engine named: only its family's knobs count
    cfg, _ = parse_config(site('["argv:--hicache-ratio"]', "engine: vllm\n"), "g.yaml")
    assert [d.key for d in weakened(cfg.model_dump(mode="json"))] == [DIFFERS_BY]


def test_the_demo_site_is_not_weakened_by_its_differs_by(tmp_path: Path) -> None:
    from harness.workflow.demo_site import site_yaml

    cfg, _ = parse_config(site_yaml(tmp_path, "default", 8000, 30.0), "demo.yaml")
    assert cfg.arms is not None and cfg.arms.accelerated.differs_by
    assert not any(d.key == DIFFERS_BY for d in deviations(cfg.model_dump(mode="json")))


PROXY = """\
    endpoints: {TP8: ["http://10.0.0.9:9000/"]}
    proxies: {URL: {host: gw1}}
"""


@pytest.mark.parametrize(("url", "words"), [
    ("http://10.0.0.9:9001", "names no endpoint of the arm"),
    ("10.0.0.9:9000", "is not an http(s) URL with a host"),
])
def test_a_declared_proxy_must_be_an_endpoint_of_its_arm(url: str, words: str) -> None:
    text = site("[]").replace("    differs_by: []\n", PROXY.replace("URL", f'"{url}"'))
    with pytest.raises(ConfigError) as err:
        parse_config(text, "site/gate.yaml")
    assert err.value.key == f"arms.accelerated.proxies.{url}" and words in err.value.message


def test_a_declared_proxy_loads_with_its_host_and_port() -> None:
    text = site("[]").replace("    differs_by: []\n",
                              PROXY.replace("URL", '"http://10.0.0.9:9000"'))
    cfg, _ = parse_config(text, "site/gate.yaml")
    assert cfg.arms is not None
    proxy = cfg.arms.accelerated.proxies["http://10.0.0.9:9000"]
    assert (proxy.host, proxy.port) == ("gw1", None)
    with pytest.raises(ConfigError) as err:
        parse_config(text.replace("arms:\n", "arms:\n  engine_packages: [vllm, lm-cache]\n"),
                     "x.yaml")
    assert err.value.key == "arms.engine_packages" and "lm-cache" in err.value.message


def test_page_one_lists_an_undocumented_pattern_in_both_languages() -> None:
    from harness.report.i18n import translator
    from harness.report.sections.g3_page1 import _default, _why

    raw = {"arms": {"accelerated": {"differs_by": ["env:LMCACHE_*", "argv:--max-num-seqs"]}}}
    [dev] = deviations(raw)
    en, zh = translator("en"), translator("zh")
    assert _why(dev, raw, en) == ("the arms may differ in what the accelerator is not "
                                  "documented to change: argv:--max-num-seqs")
    assert _why(dev, raw, zh).endswith("：argv:--max-num-seqs") and _default(dev, zh) != \
        _default(dev, en) == "the accelerator's documented knobs"
