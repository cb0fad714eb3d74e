"""Engine detection on real captured answers of each engine (tests/fixtures/engines,
sources in its SOURCES.md) and the profiles' promises."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.loadgen.engines import ENGINE_NAMES, PROFILES, detect
from harness.probes.prometheus import parse_metrics

FIX = Path(__file__).parents[1] / "fixtures"


def load(name: str) -> Any:
    return json.loads((FIX / "engines" / name).read_text())


def names(path: Path) -> set[str]:
    return parse_metrics(path.read_text()).names()


@pytest.mark.parametrize(("answers", "metrics", "engine"), [
    ({"/v1/models": "vllm-models_issue5959_PARTIAL.json"},
     "prom/vllm-metrics_er0080_v0.25.1_idle.prom", "vllm"),
    ({"/v1/models": "vllm-models_issue5959_PARTIAL.json"}, None, "vllm"),
    ({}, "engines/sglang-metrics_pr7944_PARTIAL.prom", "sglang"),
    ({}, "engines/sglang-metrics_pr1853_PARTIAL.prom", "sglang"),
    ({"/v1/models": "llamacpp-models_maki-pr242_PARTIAL.json"},
     "engines/llamacpp-metrics_issue13196_PARTIAL.prom", "llama.cpp"),
    ({"/v1/models": "llamacpp-models_maki-pr242_PARTIAL.json"}, None, "llama.cpp"),
    ({"/v1/models": "tgi-models_pr2433.json"}, None, "tgi"),
    ({"/v1/models": "llama-cpp-python-models_0.3.36.json"}, None, "llama-cpp-python"),
    ({"/api/version": "ollama-api-version_docs.json"}, None, "ollama"),
])
def test_each_engine_is_recognised_from_what_it_answers(answers: dict[str, str],
                                                        metrics: str | None,
                                                        engine: str) -> None:
    got = detect({path: load(f) for path, f in answers.items()},
                 names(FIX / metrics) if metrics else set())
    assert got.name == engine, got.why
    assert got.why and not got.overridden


def test_versions_come_from_the_engines_own_route() -> None:
    ollama = detect({"/api/version": load("ollama-api-version_docs.json")})
    assert ollama.version == "0.12.6"
    vllm = detect({"/v1/models": load("vllm-models_issue5959_PARTIAL.json"),
                   "/version": {"version": "0.8.5"}})
    assert (vllm.name, vllm.version) == ("vllm", "0.8.5")


def test_nothing_engine_specific_is_generic_and_the_config_overrides() -> None:
    plain = {"/v1/models": {"object": "list", "data": [{"id": "m", "object": "model"}]}}
    assert detect(plain).name == "generic"
    forced = detect({"/v1/models": load("vllm-models_issue5959_PARTIAL.json")},
                    override="sglang")
    assert forced.name == "sglang" and forced.overridden
    assert "configured as sglang (detected vllm)" in forced.why
    with pytest.raises(ValueError, match="unknown engine 'trt'"):
        detect(plain, override="trt")


def test_every_named_engine_has_a_profile_and_only_some_prove_a_tier() -> None:
    assert set(PROFILES) == set(ENGINE_NAMES)
    assert {n for n, p in PROFILES.items() if p.proves_tier} == {"vllm", "sglang"}
    lcp = PROFILES["llama-cpp-python"]
    assert lcp.tokenize is not None
    assert lcp.tokenize.shape() == 'POST /extras/tokenize {"input", "model"}'
    assert PROFILES["llama.cpp"].tokenize is not None
    assert PROFILES["llama.cpp"].tokenize.shape() == 'POST /tokenize {"content"}'


def test_the_engine_names_are_one_list_in_config_cli_and_profiles() -> None:
    """Spelled out three times so neither the config nor `gate --help` imports loadgen;
    held equal here."""
    from typing import get_args

    from harness.cli.bench_cmd import ENGINE_CHOICES
    from harness.config.models import SiteConfig

    annotation = SiteConfig.model_fields["engine"].annotation
    configured = {a for arg in get_args(annotation) for a in get_args(arg)}
    assert configured == set(ENGINE_NAMES) == set(ENGINE_CHOICES)
