"""`gate plan` through the real command line: the R1 what-if, a local config.json, a site
config, and every bad input as one line naming the flag, key or file, exit 4."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from gate_testing import GATE, MINIMAL_CONFIG

R1 = ("--layers", "64", "--kv-heads", "8", "--head-dim", "128", "--dtype", "bf16", "--tp",
      "1", "--concurrency", "16", "--context", "32768", "--ttft-p50", "10s")
QWEN = {"architectures": ["Qwen2ForCausalLM"], "hidden_size": 5120,
        "num_attention_heads": 40, "num_key_value_heads": 8, "num_hidden_layers": 64,
        "max_position_embeddings": 32768, "torch_dtype": "bfloat16",
        "_name_or_path": "Qwen/Qwen2.5-32B-Instruct"}


def plan(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GATE_DB", "GATE_CONFIG")}
    return subprocess.run([*GATE, "plan", *args], cwd=cwd, env={**env, "COLUMNS": "120"},
                          capture_output=True, text=True, timeout=120)


def one_line_error(out: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert out.returncode == 4, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("gate: error: "), out.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_the_r1_what_if(tmp_path: Path) -> None:
    """No site config: the table in human units, and --json in bytes. No GDS by default:
    16 x 8.57 GB through one GPU's 25 GB/s host copy takes 5.49 s of the 10 s."""
    out = plan(tmp_path, *R1)
    assert out.returncode == 0, out.stderr
    for shown in ("256 KiB of KV a token", "8.57 GB", "5.49 s", "4.51 s", "30.4 GB/s",
                  "549 GB (64 docs)", "no GDS"):
        assert shown in out.stdout, (shown, out.stdout)
    data = json.loads(plan(tmp_path, *R1, "--gds", "--json").stdout)
    assert data["model"]["kv_bytes_per_token"] == 262_144
    (tier,) = data["layouts"][0]["tiers"]
    assert tier["cold_bytes"] == 32_704 * 262_144  # the 64-token suffix is computed
    assert tier["bounce_s"] == 0 and tier["ttft_target"] == {"value": 10.0,
                                                             "source": "--ttft-p50"}
    assert tier["read_peak_bytes_s"] == pytest.approx(16 * 32_704 * 262_144 / 10)
    assert data["comparisons"] == [] and data["g2"] is None


def test_a_local_config_json_gives_the_shape_and_the_maximum(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(QWEN))
    out = plan(tmp_path, "--model-config", "config.json", "--concurrency", "16",
               "--context", "32064", "--ttft-p50", "9300ms", "--gds", "--prefill-tok-s",
               "13511", "--throughput", "79.8", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["model"]["name"] == "Qwen/Qwen2.5-32B-Instruct"
    assert data["model"]["max_context"] == 32768
    (tier,) = data["layouts"][0]["tiers"]
    assert tier["read_peak_bytes_s"] == pytest.approx(14.55e9, rel=1e-3)  # docs/plan.md R1
    assert tier["read_avg_bytes_s"] == pytest.approx(5.23e9, rel=1e-3)
    one_line_error(plan(tmp_path, "--model-config", "config.json", "--concurrency", "16",
                        "--context", "40000"),
                   "--context", "40000", "maximum 32768", "max_position_embeddings")


def test_a_site_config_plans_each_layout_without_a_store(tmp_path: Path) -> None:
    (tmp_path / "gate.yaml").write_text(MINIMAL_CONFIG + """\
layouts:
  - {name: TP8, tp: 8, instances: [{host: gpu1, port: 8000}]}
  - {name: TP4x2, tp: 4, instances: [{host: gpu1, port: 8000}, {host: gpu1, port: 8001}]}
plan: {ttft_p50: 2.0, prefill_tok_s: 50000}
""")
    out = plan(tmp_path, "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [(lay["layout"], lay["instances_per_host"]) for lay in data["layouts"]] == [
        ("TP8", 1), ("TP4x2", 2)]
    assert [t["concurrency"] for t in data["layouts"][0]["tiers"]] == [4, 8, 16]
    assert any("no store at" in n for n in data["notes"])
    assert not (tmp_path / "gate.db").exists()  # reading nothing creates nothing
    assert data["layouts"][1]["tiers"][2]["per_host"] == 16


@pytest.mark.parametrize(("args", "needles"), [
    (("--tp", "3"), ("--tp", "TP 3 does not divide the model's 8 KV heads")),
    (("--context", "40000", "--max-context", "32768"), ("--context", "maximum 32768")),
    (("--ttft-p50", "0"), ("--ttft-p50", "above 0")),
    (("--ttft-p50", "-5s"), ("--ttft-p50", "above 0")),
    (("--ttft-p50", "soon"), ("--ttft-p50", "not a duration")),
    (("--throughput", "-1"), ("--throughput", "above 0")),
    (("--concurrency", "0"), ("--concurrency", "above 0")),
    (("--prefill-tok-s", "0"), ("--prefill-tok-s", "above 0")),
    (("--context", "8000:0.5", "--context", "8000:0.4"), ("--context", "sum to 1")),
    (("--dtype", "int4"), ("--dtype", "int4")),
], ids=lambda v: " ".join(v) if isinstance(v, tuple) and v[0].startswith("--") else "")
def test_a_bad_flag_is_one_line(tmp_path: Path, args: tuple[str, ...],
                                needles: tuple[str, ...]) -> None:
    base = [a for a in R1 if a not in ("--context", "32768")] if "--context" in args \
        else list(R1)
    one_line_error(plan(tmp_path, *base, *args), *needles)


@pytest.mark.parametrize(("text", "needles"), [
    (None, ("nope.json", "--model-config", "cannot read")),
    ('{"num_hidden_layers": 64,', ("--model-config", "not JSON")),
    ("[1, 2]", ("--model-config", "not a JSON object")),
    (json.dumps({k: v for k, v in QWEN.items() if k != "num_hidden_layers"}),
     ("config.json", "num_hidden_layers", "missing")),
    (json.dumps({**QWEN, "torch_dtype": "int8"}), ("torch_dtype", "--dtype")),
])
def test_an_unreadable_or_invalid_config_json_is_one_line(
        tmp_path: Path, text: str | None, needles: tuple[str, ...]) -> None:
    name = "nope.json" if text is None else "config.json"
    if text is not None:
        (tmp_path / name).write_text(text)
    one_line_error(plan(tmp_path, "--model-config", name, "--concurrency", "16",
                        "--context", "8000"), *needles)


@pytest.mark.parametrize(("extra", "needles"), [
    ("layouts: [{name: TP3, tp: 3, instances: [{host: gpu1, port: 8000}]}]\n",
     ("gate.yaml", "layouts[0].tp", "does not divide")),
    ("model: {name: m, max_model_len: 16000}\n", ("workload.doc_tokens", "maximum 16000",
                                                  "model.max_model_len")),
    ("plan: {ttft_p50: 0}\n", ("gate.yaml", "plan.ttft_p50")),
    ("plan: {throughput: -3}\n", ("gate.yaml", "plan.throughput")),
    ("plan: {volume: fx100}\n", ("plan.volume", "not a gates.g2.fio target")),
], ids=["tp", "max", "ttft", "throughput", "volume"])
def test_a_bad_site_config_is_one_line(tmp_path: Path, extra: str,
                                       needles: tuple[str, ...]) -> None:
    base = MINIMAL_CONFIG if "model:" not in extra else MINIMAL_CONFIG.replace(
        "model: {name: test/model}\n", "")
    (tmp_path / "gate.yaml").write_text(base + extra)
    one_line_error(plan(tmp_path), *needles)


def test_without_a_shape_it_says_which_flags(tmp_path: Path) -> None:
    one_line_error(plan(tmp_path, "--concurrency", "16", "--context", "8000"),
                   "--layers", "--model-config")
