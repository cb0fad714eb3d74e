"""What code a process runs: the code probe's parser on real captures (tests/fixtures/probes,
see its SOURCES.md), the facts G3 compares, and the rules that derive what to read from
argv and environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ParseError
from harness.probes.code_script import CODE_SCRIPT, CodeQuery
from harness.probes.process_args import (
    code_query,
    hub_dirs,
    interpreters,
    is_python,
    model_argument,
    packages,
    python_main,
)
from harness.probes.process_code import parse_code_report
from harness.serving.identity import compare_arms
from harness.serving.running import libs_detail, running_facts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"
MODEL = FIXTURES / "code_debian12-container_root_script-hf-model.txt"
NOBODY = FIXTURES / "code_debian12-container_nobody_root-process.txt"
SIM = FIXTURES / "code_debian12-container_root_sim-engine.txt"
SHADOW = FIXTURES / "code_debian12-container_root_sim-engine-shadowed.txt"
GONE = FIXTURES / "code_debian12-container_root_gone.txt"
SNAPSHOT = "/tmp/cap/hf/hub/models--acme--tiny-model/snapshots/0123abcd"


def test_a_script_engine_with_a_hub_model_gives_every_fact() -> None:
    code = parse_code_report(MODEL.read_text())
    assert not code.gone and code.euid == 0
    assert code.exe == "/root/.pyenv/versions/3.11.7/bin/python3.11"
    assert code.exe_size == 17584 and len(code.exe_sha256 or "") == 64
    assert code.cwd == "/tmp/cap" and code.script == "serve.py"
    assert code.libs is not None and "/usr/lib/x86_64-linux-gnu/libc.so.6" in code.libs
    assert code.model is not None and code.model.path == SNAPSHOT
    sizes = {f.name: f.size for f in code.model.files}
    assert sizes == {"./config.json": 64, "./tokenizer.json": 19,
                     "./model-00001-of-00002.safetensors": 5 * 1024 * 1024,
                     "./model-00002-of-00002.safetensors": 1000}
    found = running_facts(code, (), "acme/tiny-model")
    assert found.problems == []
    f = found.facts
    assert f["proc:cwd"] == "/tmp/cap" and f["model:path"] == SNAPSHOT
    assert f["proc:script"].startswith("serve.py sha256 ")
    assert f["proc:libs"].startswith(f"{len(code.libs)} shared objects, sha256 ")
    assert f["model:weights"].startswith("2 files, 5243880 bytes, sha256 ")
    assert f["model:files"].startswith("2 files, 83 bytes, sha256 ")
    assert f["model:config"] == next(x.digest for x in code.model.files
                                     if x.name == "./config.json")


def test_what_an_unprivileged_probe_cannot_read_is_a_problem_never_equal() -> None:
    code = parse_code_report(NOBODY.read_text())
    assert code.euid == 65534 and code.exe is None and code.cwd is None and code.libs is None
    assert code.script == "serve.py" and code.script_sha256 is None
    found = running_facts(code)
    assert found.facts["proc:exe"] == "unreadable"
    assert {p.split(" of pid")[0] for p in found.problems} >= {
        "the executable", "the working directory", "the memory map"}
    assert any("main script serve.py" in p for p in found.problems)


def test_a_shadowing_copy_of_the_package_differs_in_cwd_location_and_files() -> None:
    honest = running_facts(parse_code_report(SIM.read_text()), ("harness",))
    shadow = running_facts(parse_code_report(SHADOW.read_text()), ("harness",))
    assert honest.problems == shadow.problems == []
    assert honest.facts["pkg:harness.location"] == "/work/main/harness"
    assert shadow.facts["pkg:harness.location"] == "/tmp/cap/shadow/harness"
    assert honest.facts["pkg:harness.version"] == "gate-harness 0.1.0"
    c = compare_arms([honest.facts], [shadow.facts], [])
    assert {d.key for d in c.blocking} == {"proc:cwd", "pkg:harness.location",
                                           "pkg:harness.files"}
    assert c.summary().startswith("arms differ in ")
    for key in ("proc:cwd", "pkg:harness.files", "pkg:harness.location"):
        assert key in c.summary()
    assert compare_arms([honest.facts], [honest.facts], []).equal


def test_an_expected_package_not_found_and_a_vanished_process_are_problems() -> None:
    code = parse_code_report(SIM.read_text())
    assert running_facts(code, ("harness", "vllm")).problems == []  # vllm not asked here
    from dataclasses import replace

    from harness.probes.process_code import Package

    missing = replace(code, packages=(*code.packages, Package("vllm", False)))
    found = running_facts(missing, ("harness", "vllm"))
    assert found.facts["pkg:vllm.location"] == "not found"
    assert found.problems == ["package vllm is not found by pid 8948's interpreter"]
    assert running_facts(missing, ("harness",)).problems == []  # a guess may be absent
    no_python = replace(code, python=None, packages=())
    assert "could not be run to locate harness" in running_facts(
        no_python, ("harness",)).problems[0]
    gone = parse_code_report(GONE.read_text())
    assert gone.gone and running_facts(gone).problems == [
        "pid 8948 exited while its code was read"]


def test_the_parser_refuses_what_it_does_not_know() -> None:
    text = SIM.read_text()
    for bad, why in [(text.replace("gate-code 1", "gate-code 2"), "not 'gate-code 1'"),
                     (text.rsplit("done", 1)[0], "ends early"),
                     (text.replace("end ok\n", ""), "no 'end' line"),
                     (text.replace("libs ok", "libz ok"), "unknown line"),
                     (text.replace("pkg harness", "pkg har-ness"), "not a package name"),
                     (text.replace("pkg harness ok", "pkg harness -"),
                      "pkgat without a package")]:
        with pytest.raises(ParseError, match=why):
            parse_code_report(bad)


def test_libs_detail_names_the_files_only_one_side_maps() -> None:
    a = frozenset({"/usr/lib/libc.so.6", "/opt/x/libfast.so"})
    b = frozenset({"/usr/lib/libc.so.6", "/usr/lib/libz.so.1"})
    assert libs_detail(a, b) == "only baseline: libfast.so; only accelerated: libz.so.1"
    base = {"proc:libs": "2 shared objects, sha256 aa"}
    acc = {"proc:libs": "2 shared objects, sha256 bb"}
    c = compare_arms([base], [acc], [], libs=([a], [b]))
    assert "only baseline: libfast.so; only accelerated: libz.so.1" in c.summary()


def test_the_script_quotes_what_it_is_given_and_refuses_bad_names() -> None:
    q = CodeQuery(7, 9, pythons=("/opt/my venv/bin/python",), packages=("vllm",),
                  script="it's.py", models=("/m/a b",), hubs=("/h/models--a--b",))
    text = CODE_SCRIPT(q)
    assert "'/opt/my venv/bin/python'" in text and "'it'\"'\"'s.py'" in text
    assert "pid=7; ticks=9" in text and "pkgs=vllm\n" in text
    for bad in (CodeQuery(7, 9, packages=("vllm; rm",)), CodeQuery(0, 9),
                CodeQuery(7, 9, models=("a\nb",))):
        with pytest.raises(ValueError):
            CODE_SCRIPT(bad)


@pytest.mark.parametrize(("argv", "main"), [
    (["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "x"],
     ("module", "vllm.entrypoints.openai.api_server")),
    (["python3", "-u", "-X", "dev", "-Wignore", "-msglang.launch_server"],
     ("module", "sglang.launch_server")),
    (["/v/bin/python3", "/v/bin/vllm", "serve", "Qwen/Q"], ("script", "/v/bin/vllm")),
    (["python", "-c", "import x"], None),
    (["python", "-"], None),
    (["python", "--check-hash-based-pycs", "never", "--", "-odd.py"], ("script", "-odd.py")),
])
def test_python_main(argv: list[str], main: tuple[str, str] | None) -> None:
    assert python_main(argv) == main


def test_which_interpreter_packages_and_model_to_read() -> None:
    assert is_python("/usr/bin/python3.11", ["VLLM::EngineCore"])
    assert is_python(None, ["/opt/v/bin/python3"]) and not is_python("/usr/bin/llama-server",
                                                                      ["llama-server"])
    assert interpreters("python3", {"PATH": "/v/bin:/usr/bin"}) == ("/v/bin/python3",
                                                                    "/usr/bin/python3")
    assert interpreters("./py", None) == ("./py",)
    assert packages(["p", "-m", "harness.sim"], (), ()) == (("harness",), ())
    assert packages(["p", "/v/bin/vllm", "serve"], ["lmcache"], ["vllm"]) == (
        ("lmcache",), ("vllm",))
    assert packages(["p", "/v/bin/text-generation-server"], (), ()) == (
        (), ("text_generation_server",))
    assert model_argument(["p", "/v/bin/vllm", "serve", "Qwen/Q", "--port", "1"], True) == \
        "Qwen/Q"
    assert model_argument(["p", "-m", "sglang.launch_server", "--model-path=/m"], True) == "/m"
    assert model_argument(["llama-server", "-m", "/m/q.gguf"], False) == "/m/q.gguf"
    assert model_argument(["p", "-m", "harness.sim", "--port", "1"], True) is None
    env = {"HOME": "/home/u", "HF_HOME": "/data/hf"}
    assert hub_dirs("acme/tiny", ["p", "--download-dir", "/dl"], env) == (
        "/dl/models--acme--tiny", "/data/hf/hub/models--acme--tiny",
        "/home/u/.cache/huggingface/hub/models--acme--tiny")
    assert hub_dirs("/models/x", [], env) == hub_dirs("s3://b/m", [], env) == ()
    query, expected = code_query(5, 6, "/usr/bin/python3.11",
                                 ["/v/bin/python", "/v/bin/vllm", "serve", "acme/tiny",
                                  "--revision", "r1"], env, profile=("vllm",))
    assert expected == () and query.packages == ("vllm",)
    assert query.pythons == ("/v/bin/python", "/usr/bin/python3.11")
    assert query.script == "/v/bin/vllm" and query.models == ("acme/tiny",)
    assert query.revision == "r1" and query.hubs[0] == "/data/hf/hub/models--acme--tiny"
    native, _ = code_query(5, 6, "/usr/bin/llama-server", ["llama-server", "-m", "q.gguf"],
                           env)
    assert native.pythons == () and native.packages == () and native.models == ("q.gguf",)
