"""`gate plan` against a store a real simulated G2 filled (the one-cell site of
tests/g3_site.py: real fio on this machine's disk, the baseline arm's serving baseline on
simulated engines): every requirement held against the figure G2 recorded, its status
and margin what harness.plan.judge says of the two, the targets G3's criteria on G2's
baseline in the simulator's modelled time. ~20 s, most of it G2's own."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator

import pytest
import yaml
from g3_site import Site, one_cell_site

from harness.plan import judge

SERVING = {"layouts": ["TP8"], "tiers": [4], "repetitions": 2, "docs": 4, "max_cv": 0.25}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with one_cell_site(tmp_path_factory.mktemp("plan-g2")) as made:
        cfg = yaml.safe_load(made.config.read_text())
        volume = next(t for t in cfg["gates"]["g2"]["fio"] if t["name"] == "volume")
        made.edit({"gates": {"g2": {"fio": [volume], "gpu_health": False, "gdsio": None,
                                    "optional": [], "serving": SERVING}}})
        out = made.gate("run", "G2", "--force")
        assert out.returncode in (0, 1), out.stdout + out.stderr[-2000:]  # measured
        yield made


def fact(site: Site, key: str) -> object:
    (row,) = site.query(f"SELECT value FROM host_fact WHERE key = '{key}'")
    value = row[0]
    return json.loads(value) if isinstance(value, str) else value


def speed(site: Site) -> float:
    argv = [str(w) for w in site.arm("baseline")["start"]["command"]]  # type: ignore[index]
    return float(argv[argv.index("--speed") + 1])


def test_each_requirement_against_what_g2_measured(site: Site) -> None:
    out = site.gate("plan", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["g2"] == {"campaign": "demo-default", "volume": "volume"}
    (layout,) = data["layouts"]
    (tier,) = layout["tiers"]
    assert (layout["layout"], tier["concurrency"], layout["hosts"]) == ("TP8", 4, ["gpu1"])

    # G2's serving baseline, scaled back from the simulator's speed to modelled time
    serving = fact(site, "serving prefill TP8-c4")
    assert isinstance(serving, dict)
    ttft = statistics.median(serving["ttft_p50_s"]) * speed(site)
    thr = statistics.median(serving["throughput_tps"]) / speed(site)
    assert tier["prefill"]["value"] == pytest.approx(4 * (32_000 + 64) / ttft)
    assert tier["prefill"]["source"].startswith("G2 run 1 TP8-c4 (simulated x")
    assert tier["ttft_target"]["value"] == pytest.approx(0.75 * ttft)  # G3's -25 %
    assert tier["throughput_target"]["value"] == pytest.approx(1.29 * thr)  # G3's +29 %

    measured = {"read_peak": float(fact(site, "fio volume seq-read")) * 1e6,  # type: ignore[arg-type]
                "read_avg": float(fact(site, "fio volume seq-read")) * 1e6,  # type: ignore[arg-type]
                "write_peak": float(fact(site, "fio volume seq-write")) * 1e6}  # type: ignore[arg-type]
    needed = {"read_peak": tier["read_peak_host_bytes_s"],
              "read_avg": tier["read_avg_host_bytes_s"],
              "write_peak": tier["write_peak_host_bytes_s"]}
    rows = data["comparisons"]
    assert sorted(r["requirement"] for r in rows) == ["read_avg", "read_peak", "write_peak"]
    for row in rows:
        name = row["requirement"]
        assert row["measured"] == pytest.approx(measured[name])
        assert row["needed"] == pytest.approx(needed[name])
        status, margin = judge(needed[name], measured[name], 0.2)
        assert (row["status"], row["margin"]) == (status, pytest.approx(margin))
        assert row["source"].startswith(f"fio volume seq-{'write' if 'write' in name else 'read'}"
                                        ", fx100-sim, G2 run 1")

    table = site.gate("plan", "--wide")
    assert table.returncode == 0, table.stderr
    assert "against what G2 measured, per host (never a gate)" in table.stdout
    assert all(r["status"] in table.stdout for r in rows)
