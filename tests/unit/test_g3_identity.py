"""engine_facts / server_config / compare_arms: what counts as "the same engine" in G3."""

from __future__ import annotations

import json
from pathlib import Path

from harness.probes.redact import hash_secret, looks_secret, redact_argv, redact_env
from harness.serving.identity import (
    ENV_UNREADABLE,
    INSTANCES,
    NOISE_ENV,
    argv_facts,
    compare_arms,
    engine_facts,
    server_config,
)

PROM = Path(__file__).resolve().parents[1] / "fixtures" / "prom" / \
    "vllm-metrics_er0080_v0.25.1_idle.prom"
SIM = ["python", "-m", "harness.sim", "--profile", "r1-qwen32b", "--port", "8000"]


def test_options_flags_equals_positionals_and_negative_numbers() -> None:
    f = argv_facts(["/opt/venv/bin/python", "/opt/venv/bin/vllm", "serve", "Qwen/Q",
                    "--max-num-seqs=64", "--gpu-memory-utilization", "0.9", "--enforce-eager",
                    "--seed", "-1", "--scale", "-1.5e3", "-tp", "4", "--no-value"])
    assert f["argv:program"] == "/opt/venv/bin/python"
    assert [f["argv:#1"], f["argv:#2"], f["argv:#3"]] == ["/opt/venv/bin/vllm", "serve", "Qwen/Q"]
    assert f["argv:--max-num-seqs"] == "64" and f["argv:--gpu-memory-utilization"] == "0.9"
    assert f["argv:--enforce-eager"] == "true" and f["argv:--no-value"] == "true"
    assert f["argv:--seed"] == "-1" and f["argv:--scale"] == "-1.5e3" and f["argv:-tp"] == "4"
    assert argv_facts(["p", "--a", "1"]) == argv_facts(["p", "--a=1"])


def test_repeated_options_keep_order_and_short_module_options() -> None:
    f = argv_facts(["python", "-m", "vllm.entrypoints.openai.api_server", "--middleware", "a.B",
                    "--middleware=c.D", "-O3", "--", "--not-an-option", "x"])
    assert f["argv:-m"] == "vllm.entrypoints.openai.api_server"
    assert f["argv:--middleware"] == "a.B\nc.D" and f["argv:-O3"] == "true"
    assert (f["argv:#1"], f["argv:#2"]) == ("--not-an-option", "x")
    assert argv_facts([]) == {}


def test_secrets_are_hashed_everywhere_and_comparison_still_sees_them() -> None:
    clear = ["hf_abcdefSECRET", "-dash-first-secret", "pa55word", "s3cr3t-json", "urlpass"]
    argv = ["vllm", "serve", "m", "--api-key", clear[1], f"--hf-token={clear[0]}",
            "--kv-transfer-config", f'{{"kv_connector": "X", "auth_token": "{clear[3]}"}}',
            "--redis", f"redis://user:{clear[4]}@db:6379/0"]
    env = {"HF_TOKEN": clear[0], "DB_PASSWORD": clear[2], "TOKENIZERS_PARALLELISM": "false"}
    b = engine_facts(argv, env, {"gate_sim.config.api_key": clear[2]})
    a = engine_facts(argv, {**env, "HF_TOKEN": clear[0] + "x"}, {})
    text = json.dumps([b, a, redact_argv(argv), redact_env(env)])
    assert not any(c in text for c in clear)
    assert b["env:HF_TOKEN"] == hash_secret(clear[0]) == b["argv:--hf-token"]
    assert b["argv:--api-key"] == hash_secret(clear[1])
    assert b["env:TOKENIZERS_PARALLELISM"] == "false"  # a word TOKENIZERS is not a secret
    assert "kv_connector" in b["argv:--kv-transfer-config"]
    assert "redis://user:sha256:" in b["argv:--redis"]
    c = compare_arms([b], [a], [])
    assert [d.key for d in c.blocking] == ["env:HF_TOKEN", "server:gate_sim.config.api_key"]
    assert not any(s in c.summary(limit=10) for s in clear)
    assert engine_facts(redact_argv(argv), redact_env(env)) == engine_facts(argv, env)


def test_secret_names_are_words_not_substrings() -> None:
    for name in ("HF_TOKEN", "api-key", "apiKey", "AWS_SECRET_ACCESS_KEY", "DB_PASSWD",
                 "GOOGLE_APPLICATION_CREDENTIALS", "Authorization", "session.cookie"):
        assert looks_secret(name), name
    for name in ("max-num-batched-tokens", "TOKENIZERS_PARALLELISM", "MONKEY", "tokenizer",
                 "KEYBOARD", "PASSTHROUGH", "kv-cache-dtype"):
        assert not looks_secret(name), name


def test_noise_is_ignored_and_a_speed_difference_blocks_with_a_one_line_summary() -> None:
    base = engine_facts([*SIM, "--speed", "21.9"], {"PWD": "/a", "SSH_CONNECTION": "1 2 3 4",
                                                     "CUDA_VISIBLE_DEVICES": "0"})
    acc = engine_facts([*SIM, "--speed", "30.0"], {"PWD": "/b", "CUDA_VISIBLE_DEVICES": "0"})
    c = compare_arms([base], [acc], ["env:LMCACHE_*"])
    assert c.summary() == "arms differ in argv:--speed (baseline 21.9, accelerated 30.0)"
    assert {d.key for d in c.ignored} == {"env:PWD", "env:SSH_CONNECTION"}
    assert not c.equal and c.allowed == ()
    assert {"PWD", "_", "INVOCATION_ID"} <= NOISE_ENV and "HOME" not in NOISE_ENV


def test_patterns_allow_only_what_they_match_case_sensitively() -> None:
    base = engine_facts(SIM, {"X": "1"}, {"gate_sim.config.external_tier": "false"})
    acc = engine_facts([*SIM, "--kv-transfer-config", '{"kv_connector":"LMCacheConnectorV1"}'],
                       {"X": "1", "LMCACHE_CHUNK_SIZE": "256", "lmcache_lower": "1"},
                       {"gate_sim.config.external_tier": "true"})
    allowed = ["argv:--kv-transfer-config", "env:LMCACHE_*",
               "server:gate_sim.config.external_tier"]
    c = compare_arms([base], [acc], allowed)
    assert [d.key for d in c.blocking] == ["env:lmcache_lower"]
    assert {d.key: d.allowed_by for d in c.allowed} == {
        "argv:--kv-transfer-config": allowed[0], "env:LMCACHE_CHUNK_SIZE": allowed[1],
        "server:gate_sim.config.external_tier": allowed[2]}
    c2 = compare_arms([base], [acc], [*allowed, "env:lmcache_*"])
    assert c2.equal and c2.summary().startswith("arms equal but for allowed argv:--kv-transfer")
    d = next(d for d in c.allowed if d.key == "argv:--kv-transfer-config")
    assert d.baseline is None and d.accelerated and d.describe().startswith("instance 0 ")


def test_instance_count_mismatch_blocks_even_when_everything_is_allowed() -> None:
    f = engine_facts(SIM, {})
    c = compare_arms([f, f], [f], ["*"])
    assert [(d.instance, d.key, d.baseline, d.accelerated) for d in c.blocking] == [
        (None, INSTANCES, "2", "1")]
    assert c.instances == 1 and "instances (baseline 2, accelerated 1)" in c.summary()


def test_instances_compare_pairwise_and_the_summary_names_the_instance() -> None:
    f0 = engine_facts([*SIM, "--instance", "0"], {})
    f1 = engine_facts([*SIM, "--instance", "1"], {})
    assert compare_arms([f0, f1], [f0, f1], []).equal
    c = compare_arms([f0, f1], [f0, {**f1, "argv:--max-num-seqs": "8" * 60}], [])
    assert c.summary().startswith("arms differ in instance 1 argv:--max-num-seqs (baseline absent")
    assert "..." in c.summary() and "8" * 60 not in c.summary()
    assert len(c.summary().splitlines()) == 1


def test_unreadable_environ_is_never_silently_equal() -> None:
    hidden = engine_facts(SIM, None)
    seen = engine_facts(SIM, {"A": "1"})
    both = compare_arms([hidden], [hidden], [])
    assert both.blocking == () and both.unverified == (0,) and not both.equal
    assert "could not be read" in both.summary()
    one = compare_arms([seen], [hidden], [])
    assert {d.key for d in one.blocking} == {ENV_UNREADABLE, "env:A"}


def test_server_config_from_vllm_metrics_version_and_a_sim_card() -> None:
    text = PROM.read_text()
    cfg = server_config(
        {"object": "list", "data": [{
            "id": "Qwen/Q", "object": "model", "created": 123, "max_model_len": 32768,
            "permission": [{"id": "modelperm-1", "created": 123}],
            "gate_sim": {"profile": "r1", "tp": 4, "external_tier": False, "speed": 30.0,
                         "config": {"speed": 30.0, "faults": {"slow_at": None}}}}]},
        {"version": "0.25.1"}, text)
    info = next(line for line in text.splitlines()
                if line.startswith("vllm:cache_config_info{"))
    assert f'block_size="{cfg["cache_config.block_size"]}"' in info
    assert f'gpu_memory_utilization="{cfg["cache_config.gpu_memory_utilization"]}"' in info
    assert cfg["version"] == "0.25.1" and cfg["models"] == "Qwen/Q"
    assert cfg["model.max_model_len"] == "32768"
    assert cfg["gate_sim.config.speed"] == "30.0" and cfg["gate_sim.external_tier"] == "false"
    assert cfg["gate_sim.config.faults.slow_at"] == "null"
    assert not any("created" in k or "permission" in k for k in cfg)
    assert server_config(None, None, None) == {}
    assert server_config([1], "oops", "") == {}  # type: ignore[arg-type]
    f = engine_facts(SIM, {}, cfg)
    assert f["server:cache_config.block_size"] == cfg["cache_config.block_size"]


def test_interpreter_and_preload_variables_are_never_noise_and_come_first() -> None:
    from harness.config.knobs import INTERPRETER_ENV

    assert not NOISE_ENV & INTERPRETER_ENV
    assert {"PYTHONPATH", "PYTHONHOME", "LD_PRELOAD", "LD_LIBRARY_PATH"} <= INTERPRETER_ENV
    base = engine_facts(SIM, {"A": "1", "PWD": "/x"}, {"gate_sim.config.speed": "30"})
    acc = engine_facts(SIM, {"A": "2", "PWD": "/y", "LD_PRELOAD": "/tmp/fast.so",
                             "PYTHONPATH": "/tmp/shadow"}, {"gate_sim.config.speed": "30"})
    acc["proc:cwd"] = "/tmp/shadow"
    base["proc:cwd"] = "/srv"
    c = compare_arms([base], [acc], [])
    assert [d.key for d in c.ignored] == ["env:PWD"]
    assert c.summary(limit=3) == (
        "arms differ in proc:cwd (baseline /srv, accelerated /tmp/shadow); "
        "env:LD_PRELOAD (baseline absent, accelerated /tmp/fast.so); "
        "env:PYTHONPATH (baseline absent, accelerated /tmp/shadow); and 1 more")


def test_a_proxys_facts_compare_like_an_engines_with_their_noise_ignored() -> None:
    from harness.serving.identity import proxy_facts

    proxy = proxy_facts(engine_facts(["python", "proxy.py", "--port", "9"], {"PWD": "/a"}))
    assert proxy["proxy:argv:--port"] == "9" and "proxy:env:PWD" in proxy
    other = proxy_facts(engine_facts(["python", "proxy.py", "--port", "9"], {"PWD": "/b"}))
    assert compare_arms([proxy], [other], []).equal
    c = compare_arms([{}], [proxy], ["proxy:argv:--port"])
    assert [d.key for d in c.blocking] == ["proxy:argv:#1", "proxy:argv:program"]
    assert [d.key for d in c.allowed] == ["proxy:argv:--port"]


def test_every_summary_is_said_in_the_report_language() -> None:
    """The comparison's one line (the preflight check's measured words and its ERROR) as
    a reason code: the English catalogue says exactly `summary()`, the Chinese its own
    words; a libs difference's detail too."""
    from harness.report import reasons
    from harness.report.i18n import translator
    from harness.serving.running import LIBS

    en, zh = translator("en"), translator("zh")
    noisy = engine_facts([*SIM, "--speed", "21.9"], {"PWD": "/a", "X": "1"})
    f0, f1 = engine_facts([*SIM, "--instance", "0"], {}), engine_facts([*SIM, "--x", "1"], {})
    libs = ({LIBS: "2 shared objects, sha256 aa"}, {LIBS: "2 shared objects, sha256 bb"})
    so = [frozenset({f"/lib/l{i}.so" for i in range(6)} | {"/lib/b.so"})]
    comparisons = [
        compare_arms([noisy], [engine_facts([*SIM, "--speed", "30.0"], {"PWD": "/b", "X": "1"})],
                     []),  # blocking, with noise
        compare_arms([noisy], [{**noisy, "argv:--a": "1", "argv:--b": "2", "argv:--c": "3",
                                "argv:--d": "4"}], []),  # "; and 1 more"
        compare_arms([f0, f1], [f0, {**f1, "argv:--y": "8" * 60}], []),  # instance, absent
        compare_arms([f0, f0], [f0], ["*"]),  # the instance count
        compare_arms([libs[0]], [libs[1]], [], ([so[0]], [frozenset({"/lib/a.so"})])),
        compare_arms([engine_facts(SIM, None)], [engine_facts(SIM, None)], []),  # unverified
        compare_arms([noisy], [{**noisy, "env:PWD": "/c", "argv:--t": "1"}], ["argv:--t"]),
        compare_arms([f0], [f0], []),  # equal
    ]
    for c in comparisons:
        assert reasons.say(en, c.summary_why()) == c.summary()
        assert any("\u4e00" <= ch <= "\u9fff" for ch in reasons.say(zh, c.summary_why()))
    assert "only baseline: b.so, l0.so, l1.so, l2.so and 3 more" in comparisons[4].summary()
    assert "仅基线组：b.so, l0.so, l1.so, l2.so 等另外 3 个" in reasons.say(
        zh, comparisons[4].summary_why())
