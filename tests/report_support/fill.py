"""Fill a store with realistic gate runs through the store API (harness.store.runs/writer).

G1..G4 runs with checks, a G3 run with warm + measured benchmarks, request rows, storage
byte counters, /metrics evidence deltas and cells; simulated, forced, partial, signed,
running, aborted and empty variants; hostile strings in names. Run times come from a
controllable clock (patched into harness.store.runs) so weekly trends have real dates.

G3 runs can carry what the gate records about its engines (host_fact `engine identity
{arm} {layout}#{instance}`, built with harness.serving.identity.engine_facts from a vLLM-like
argv, environment and server config), decision settings weaker than the defaults (the run
finished as harness.runner._finish finishes it) and a reviewer's sign-off recorded as
`gate signoff` records it (OS account and host included). `attempts` fills a campaign in
which G3 took three attempts (and a custom-suite run that is not one).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import numpy as np

from harness.config.decision import WEAKENED_REASON, weakened
from harness.reasons import Reason
from harness.serving.identity import engine_facts
from harness.store import runs, writer
from harness.store.db import Store
from harness.verdict import SIGNOFF_REASON

HOSTILE_SITE = "ACME <script>alert('x')</script> & \"Sons\" 测试站点 ✓"
HOSTILE_CUSTOMER = "Kunde & Co <b>bold</b> 'quoted' 客户™"
HOSTILE_HOST = "gpu<1>&\"host\""
DAY = 86400.0
G3_CONFIG = {
    "site": {"name": "x", "customer": "y"},
    "campaign": {"name": "c", "operator": "Li Wei"},
    "gates": {"g3": {"thresholds": {"ttft_p50_drop": 0.25, "throughput_gain": 0.29,
                                    "band_top": 0.40}, "tiers": [4, 8]}},
    "workload": {"max_tokens": 128, "doc_tokens": 32000},
    "ssh": {"password": "hunter2-secret", "key_passphrase": "pp-123", "user": "root"},
    "hf_token": "hf_abcdefSECRET",
    "db": "postgresql://gate:dbpass99@db.local/gate",
}


class Clock:
    """Epoch seconds that only move when told to, patched in as the store's clock."""

    def __init__(self, start: float) -> None:
        self.t = start

    def now(self) -> float:
        self.t += 1.0
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@contextmanager
def clock_at(start: float) -> Iterator[Clock]:
    clock = Clock(start)
    with mock.patch("harness.store.runs._now", clock.now):
        yield clock


@dataclass(frozen=True)
class CellPlan:
    layout: str
    tier: int
    drop: float  # true TTFT p50 drop
    gain: float  # true throughput gain
    verdict: str
    reason: str = ""


@dataclass
class Filled:
    """Run ids by role, and the cells as stored (for assertions)."""

    ids: dict[str, int] = field(default_factory=dict)
    cells: dict[int, list[dict[str, object]]] = field(default_factory=dict)


def new_run(store: Store, gate: str, *, campaign: str = "acme-2026q1", site: str = "acme-sh",
            customer: str = "ACME", simulated: bool = False, forced: bool = False,
            operator: str = "Zhang San", config: dict[str, object] | None = None,
            hosts: tuple[str, ...] = ("gpu1", "st1"), suite: str = "",
            overrides: tuple[str, ...] = ()) -> int:
    return runs.start_run(store, runs.NewRun(
        campaign=campaign, site=site, customer=customer, kind="gate", gate=gate, forced=forced,
        simulated=simulated, operator=operator, config_json=dict(config or G3_CONFIG),
        config_hash="ab" * 32, hosts=hosts, args=("--db", "x.db", "--token=abc123"),
        suite=suite, overrides=overrides))


def add_checks(store: Store, run_id: int, rows: list[tuple[str, str, str, str, str]]) -> None:
    """rows: (name, host, outcome, expected, measured)."""
    for i, (name, host, outcome, expected, measured) in enumerate(rows):
        msg = "" if outcome == "PASS" else f"{name}: expected {expected}, got {measured}"
        runs.record_check(store, run_id, nodeid=f"gates/test_{i}.py::{name}", name=name,
                          host=host, outcome=outcome, expected=expected, measured=measured,
                          message=msg, duration=0.5)


G1_CHECKS = [
    ("gpu model", "gpu1", "PASS", "H100 80GB HBM3 x8", "H100 80GB HBM3 x8"),
    ("gpu driver", "gpu1", "PASS", ">= 550", "550.54.15"),
    ("nvme serials", "st1", "PASS", "4 devices on record", "S5GXNF0R123456, S5GXNF0R123457"),
    ("nic model", "gpu1", "PASS", "ConnectX-7", "ConnectX-7 MT2910"),
]
G2_CHECKS = [
    ("fio seq read /mnt/fx100", "st1", "PASS", ">= 6.0 GB/s", "6.84 GB/s"),
    ("fio rand read 4k iops", "st1", "PASS", ">= 900000", "1012345"),
    ("fio rand read p99 latency", "st1", "PASS", "<= 250 us", "181 us"),
    ("gpu health dcgm", "gpu1", "PASS", "no errors", "no errors"),
]


def finish_from_checks(store: Store, run_id: int, *, partial: bool = False, selected: int = 0,
                       total: int = 0, reason: str = "") -> str:
    outcomes = [c.outcome for c in runs.checks(store, run_id)]
    verdict = "ERROR"
    for v in ("STOP-LOSS", "ERROR", "INCONCLUSIVE", "PASS"):
        if v in outcomes:
            verdict = v
            break
    if not outcomes:
        reason = reason or "no checks ran"
    n = len(outcomes)
    runs.finish_run(store, run_id, verdict=verdict, reason=reason, partial=partial,
                    selected=selected or n, total=total or n)
    return verdict


def _requests(rng: np.random.Generator, n: int, median: float,
              fail: int) -> list[dict[str, object]]:
    ttft = rng.lognormal(np.log(median), 0.18, size=n)
    rows: list[dict[str, object]] = []
    for i in range(n):
        failed = i < fail
        rows.append({"idx": i, "scheduled": 0.0, "sent": 0.001 * i,
                     "ttft": None if failed else float(ttft[i]),
                     "ttft_text": None if failed else float(ttft[i]) + 0.002,
                     "e2el": None if failed else float(ttft[i]) + 2.5,
                     "prompt_tokens": 32064, "output_tokens": None if failed else 128,
                     "status": 500 if failed else 200,
                     "error_kind": "http" if failed else None,
                     "error": "HTTP 500" if failed else None})
    return rows


def add_g3_data(store: Store, run_id: int, plans: list[CellPlan], *, reps: int = 3,
                seed: int = 7, base_median: float = 2.4, with_series: bool = True,
                run_start: float | None = None) -> list[dict[str, object]]:
    """Warm + measured phases per arm x layout x tier x rep, requests, series, cells."""
    rng = np.random.default_rng(seed)
    t = run_start if run_start is not None else time.time()
    stored = []
    for plan in plans:
        n = 4 * plan.tier
        arms = {"baseline": (base_median, 60.0), "accelerated": (
            base_median * (1 - plan.drop), 60.0 / (1 + plan.gain))}
        for rep in range(reps):
            for arm, (median, duration) in arms.items():
                params = {"engine_version": "vllm 0.11.0", "lmcache_version": "0.3.9"
                          if arm == "accelerated" else "none", "concurrency": plan.tier}
                warm = writer.start_benchmark(store, run_id, arm=arm, layout=plan.layout,
                                              tier=plan.tier, repetition=rep, phase="warm",
                                              params=params)
                writer.insert_requests(store, warm, _requests(rng, n, base_median, 0))
                writer.finish_benchmark(store, warm, status="FINISHED", duration=60.0,
                                        summary={})
                bid = writer.start_benchmark(store, run_id, arm=arm, layout=plan.layout,
                                             tier=plan.tier, repetition=rep, phase="measured",
                                             params=params)
                writer.insert_requests(store, bid, _requests(rng, n, median, 1 if rep == 0
                                                             else 0))
                writer.finish_benchmark(store, bid, status="FINISHED", duration=duration,
                                        summary={"completed": n})
                if with_series:
                    _series(store, run_id, bid, arm, t, duration, n)
                t += duration + 30
        stored.append(_cell(store, run_id, plan, reps, base_median))
    return stored


def _series(store: Store, run_id: int, bid: int, arm: str, start: float, duration: float,
            n: int) -> None:
    gbps = 3.2 if arm == "accelerated" else 0.04
    samples = []
    for host in ("st1", "st2"):
        total = 1e12
        for s in range(int(duration) + 1):
            samples.append({"source": host, "metric": "storage_read_bytes", "labels": {},
                            "at": start + s, "value": total})
            total += gbps / 2 * 1e9
    prompt = n * 32064
    hits = int(prompt * 0.93) if arm == "accelerated" else 0
    for name, value in (("prompt_tokens", prompt), ("external_hit_tokens", hits),
                        ("prefix_hit_tokens", 0)):
        samples.append({"source": "http://gpu1:8000/metrics", "metric": f"evidence:{name}",
                        "labels": {}, "at": start + duration, "value": value})
    writer.insert_series(store, run_id, samples, benchmark_id=bid)


def _cell(store: Store, run_id: int, plan: CellPlan, reps: int,
          base_median: float) -> dict[str, object]:
    n = 4 * plan.tier * reps
    p50b = base_median
    p50a = base_median * (1 - plan.drop)
    thr_b = 4 * plan.tier * 128 / 60.0
    values: dict[str, object] = {
        "layout": plan.layout, "tier": plan.tier, "verdict": plan.verdict,
        "reason": plan.reason, "repetitions": reps, "n_baseline": n, "n_accelerated": n,
        "ttft_p50_baseline": round(p50b, 4), "ttft_p50_accelerated": round(p50a, 4),
        "drop": round(plan.drop, 4), "drop_lo": round(plan.drop - 0.04, 4),
        "drop_hi": round(plan.drop + 0.04, 4), "thr_baseline": round(thr_b, 2),
        "thr_accelerated": round(thr_b * (1 + plan.gain), 2), "gain": round(plan.gain, 4),
        "gain_lo": round(plan.gain - 0.03, 4), "gain_hi": round(plan.gain + 0.03, 4),
        "confidence": 0.95, "rule": "CI wholly above threshold (alpha spent over 3 looks)",
        # as harness.stats.decision stores them: the look plan and this cell's look
        "details": {"bootstrap": 2000, "seed": 20261202, "spending": "obrien-fleming",
                    "looks": sorted({reps, 8}), "look_index": 0},
    }
    writer.upsert_cell(store, run_id, values)
    return values


PASS_PLANS = [CellPlan("TP8", 4, 0.38, 0.33, "PASS"), CellPlan("TP8", 8, 0.36, 0.34, "PASS"),
              CellPlan("TP4x2", 4, 0.35, 0.32, "PASS")]
STOP_PLANS = [CellPlan("TP8", 4, 0.10, 0.33, "STOP-LOSS", "TTFT p50 drop below 25 %"),
              CellPlan("TP8", 8, 0.36, 0.34, "PASS")]
SIGNED_PLANS = [CellPlan("TP8", 4, 0.38, 0.55, "INCONCLUSIVE", "above band: needs sign-off")]


def g3_run(store: Store, plans: list[CellPlan], *, signed: bool = False,
           simulated: bool = False, forced: bool = False, campaign: str = "acme-2026q1",
           site: str = "acme-sh", customer: str = "ACME", reps: int = 3,
           with_series: bool = True, config: dict[str, object] | None = None,
           engines: dict[str, dict[str, list[dict[str, str]]]] | None = None,
           extra_checks: list[tuple[str, str, str, str, str]] | None = None,
           signer: Signer | None = None,
           overrides: tuple[str, ...] = ()) -> tuple[int, list[dict[str, object]]]:
    """A G3 run; `engines` (layout -> arm -> facts per instance) are recorded as the gate
    records them after start; with `config` weaker than the defaults, a PASS (or an
    above-band result) is stored INCONCLUSIVE needing a sign-off, as the runner does."""
    rid = new_run(store, "G3", campaign=campaign, site=site, customer=customer,
                  simulated=simulated, forced=forced, config=config, overrides=overrides)
    add_checks(store, rid, [("same model on both arms", "gpu1", "PASS", "Qwen2.5-32B",
                             "Qwen2.5-32B"), ("external cache counters exposed", "gpu1",
                                              "PASS", "lmcache:*", "present"),
                            *(extra_checks or [])])
    runs.add_host_fact(store, rid, host="gpu1", key="engine_version", value="vllm 0.11.0")
    runs.add_host_fact(store, rid, host="gpu1", key="gpu", value={"model": "H100", "count": 8})
    for layout, arms in (engines or {}).items():
        record_engines(store, rid, layout, arms)
    cells = add_g3_data(store, rid, plans, reps=reps, with_series=with_series,
                        run_start=runs.get_run(store, rid).started_at + 120)
    verdicts = {str(c["verdict"]) for c in cells} | {c[2] for c in extra_checks or []}
    verdict = next(v for v in ("STOP-LOSS", "ERROR", "INCONCLUSIVE", "PASS") if v in verdicts)
    reason = next((str(c["reason"]) for c in cells if c["verdict"] == verdict), "")
    needs = any(str(c["reason"]).startswith("above band") for c in cells)
    if needs:
        reason = SIGNOFF_REASON
    weaker = [d.line() for d in weakened(config or G3_CONFIG)]
    if weaker and (verdict == "PASS" or needs):  # as harness.runner._finish stores it
        prior = reason if needs else ""
        verdict, needs = "INCONCLUSIVE", True
        reason = "; ".join([r for r in (prior, WEAKENED_REASON) if r]) + \
            " (" + "; ".join(weaker) + ")"
    runs.finish_run(store, rid, verdict=verdict, reason=reason, needs_signoff=needs,
                    selected=2 + len(extra_checks or []), total=2 + len(extra_checks or []))
    if signed:
        runs.add_signoff(store, rid, role="reviewer", name="Dr. Wang <reviewer>",
                         note="baseline verified against vendor numbers & re-run")
    if signer is not None:
        signer.sign(store, rid)
    return rid, cells


@dataclass(frozen=True)
class Signer:
    """A `gate signoff` run by `os_user` on `hostname` (both recorded by the store)."""

    role: str
    name: str
    note: str
    os_user: str
    hostname: str

    def sign(self, store: Store, run_id: int) -> None:
        with mock.patch("getpass.getuser", return_value=self.os_user), \
                mock.patch("harness.store.runs.socket.gethostname", return_value=self.hostname):
            runs.add_signoff(store, run_id, role=self.role, name=self.name, note=self.note)


REVIEWER = Signer("reviewer", "Dr. Li", "confidence 0.90 agreed in the contract annex",
                  "li", "site-jump")


# -- what runs behind each arm ------------------------------------------------------------
KV_CONFIG = ('{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both",'
             '"kv_connector_extra_config":{}}')
DIFFERS_BY = ["argv:--kv-transfer-config", "env:LMCACHE_*"]


def vllm_facts(arm: str, layout: str, instance: int, *, tp: int,
               gpu_memory: str = "0.90") -> dict[str, str]:
    """A vLLM + LMCache engine as gate reads it: argv, environment, what the server says."""
    argv = ["/opt/vllm/bin/python3", "-m", "vllm.entrypoints.openai.api_server",
            "--model", "Qwen/Qwen2.5-32B-Instruct", "--tensor-parallel-size", str(tp),
            "--port", str(8000 + instance), "--max-num-seqs", "64",
            "--gpu-memory-utilization", gpu_memory, "--api-key", "sk-live-SECRETKEY"]
    env = {"PATH": "/usr/local/bin:/usr/bin", "HOME": "/home/vllm", "HF_HOME": "/data/hf",
           "CUDA_VISIBLE_DEVICES": "0,1,2,3" if instance == 0 else "4,5,6,7",
           "HF_TOKEN": "hf_abcdefSECRET", "INVOCATION_ID": f"{arm}-{layout}-{instance}-7f3a",
           "PWD": f"/srv/{arm}"}
    if arm == "accelerated":
        argv += ["--kv-transfer-config", KV_CONFIG]
        env.update({"LMCACHE_CONFIG_FILE": "/etc/lmcache/lmcache-fx100-tier.yaml",
                    "LMCACHE_CHUNK_SIZE": "256"})
    server = {"version": "0.11.0", "model.max_model_len": "40960",
              "cache_config.block_size": "16",
              "cache_config.gpu_memory_utilization": gpu_memory}
    return engine_facts(argv, env, server)


def arm_engines(layouts: dict[str, int], *,
               slower: tuple[str, ...] = ()) -> dict[str, dict[str, list[dict[str, str]]]]:
    """layout -> arm -> facts per instance; layouts: name -> tp (TP4x2: two instances).
    In the `slower` layouts the baseline runs with less KV memory (a blocking difference)."""
    out: dict[str, dict[str, list[dict[str, str]]]] = {}
    for layout, tp in layouts.items():
        n = 8 // tp
        memory = "0.80" if layout in slower else "0.90"
        out[layout] = {
            "baseline": [vllm_facts("baseline", layout, i, tp=tp, gpu_memory=memory)
                         for i in range(n)],
            "accelerated": [vllm_facts("accelerated", layout, i, tp=tp) for i in range(n)]}
    return out


def record_engines(store: Store, run_id: int, layout: str,
                   arms: dict[str, list[dict[str, str]]]) -> None:
    """As harness.serving.engines.EngineWatch.observe records each instance after a start,
    then once more after a cold restart (the report compares the first reading)."""
    for reading in range(2):
        for arm, instances in arms.items():
            for i, facts in enumerate(instances):
                again = {**facts, "env:INVOCATION_ID": f"restart-{reading}"} if reading else facts
                runs.add_host_fact(store, run_id, host=f"gpu{i + 1}",
                                   key=f"engine identity {arm} {layout}#{i}",
                                   value={"pid": 4100 + 10 * reading + i,
                                          "url": f"http://gpu{i + 1}:{8000 + i}",
                                          "facts": again, "problem": ""})


ARMS_CONFIG: dict[str, object] = {
    **G3_CONFIG,
    "arms": {"baseline": {"start": {"playbook": "serve.yml"}},
             "accelerated": {"start": {"playbook": "serve.yml"}, "differs_by": DIFFERS_BY}},
    "layouts": [{"name": "TP8", "tp": 8, "instances": [{"host": "gpu1", "port": 8000}]},
                {"name": "TP4x2", "tp": 4, "instances": [{"host": "gpu1", "port": 8000},
                                                         {"host": "gpu2", "port": 8001}]}],
}
WEAK_CONFIG: dict[str, object] = {
    **ARMS_CONFIG,
    "gates": {"g3": {"thresholds": {"ttft_p50_drop": 0.25, "throughput_gain": 0.29,
                                    "band_top": 0.40}, "tiers": [4, 8],
                     "confidence": 0.90, "bootstrap": 4000,
                     "evidence": {"min_external_hit_share": 0.4}}},
}
LAYOUTS = {"TP8": 8, "TP4x2": 4}
ARMS_CHECK = "test_arms_differ_only_by_the_accelerator[TP4x2]"


def attempts(store: Store, name: str = "attempts-1") -> dict[str, int]:
    """G3 took three attempts: a STOP-LOSS; a FORCED one whose TP4x2 baseline ran with
    another --gpu-memory-utilization (ERROR); then a PASS with weaker decision settings,
    stored INCONCLUSIVE until Dr. Li (as li@site-jump) signed it. A custom-suite run after
    them is neither an attempt nor the gate's standing run."""
    from harness.serving.identity import compare_arms

    ids: dict[str, int] = {}
    with clock_at(time.time() - 5 * DAY) as clock:
        ids["first"], _ = g3_run(store, STOP_PLANS, campaign=name, config=ARMS_CONFIG,
                                 engines=arm_engines(LAYOUTS))
        clock.advance(DAY)
        bad = arm_engines(LAYOUTS, slower=("TP4x2",))
        cmp = compare_arms(bad["TP4x2"]["baseline"], bad["TP4x2"]["accelerated"], DIFFERS_BY)
        ids["blocked"], _ = g3_run(
            store, [CellPlan("TP8", 4, 0.38, 0.33, "PASS"),
                    CellPlan("TP4x2", 4, 0.35, 0.32, "ERROR", cmp.summary())],
            campaign=name, forced=True, config=ARMS_CONFIG, engines=bad,
            extra_checks=[(ARMS_CHECK, "gpu1", "ERROR", "only allowed differences",
                           cmp.summary())])
        clock.advance(DAY)
        ids["weakened"], _ = g3_run(store, PASS_PLANS, campaign=name, config=WEAK_CONFIG,
                                    engines=arm_engines(LAYOUTS),
                                    overrides=("gates.g3.bootstrap=4000",
                                               "site.hf_token=hf_s3cret"))
        clock.advance(3600)
        REVIEWER.sign(store, ids["weakened"])
        clock.advance(DAY)
        custom = new_run(store, "G3", campaign=name, suite="/home/li/suite sha256:0123abcd")
        add_checks(store, custom, [("custom smoke", "gpu1", "PASS", "ok", "ok")])
        finish_from_checks(store, custom)
        ids["custom"] = custom
    return ids


def campaign(store: Store, *, simulated: bool = False, site: str = "acme-sh",
             customer: str = "ACME", name: str = "acme-2026q1") -> Filled:
    """G1 PASS, G2 PASS, G3 PASS (with a customer sign-off), G4 PASS with windows."""
    out = Filled()
    with clock_at(time.time() - 20 * DAY) as clock:
        g1 = new_run(store, "G1", campaign=name, site=site, customer=customer,
                     simulated=simulated)
        add_checks(store, g1, G1_CHECKS)
        finish_from_checks(store, g1)
        clock.advance(DAY)
        g2 = new_run(store, "G2", campaign=name, site=site, customer=customer,
                     simulated=simulated)
        add_checks(store, g2, G2_CHECKS)
        finish_from_checks(store, g2)
        clock.advance(DAY)
        g3, cells = g3_run(store, PASS_PLANS, simulated=simulated, campaign=name, site=site,
                           customer=customer)
        runs.add_signoff(store, g3, role="customer", name="Chen Jing",
                         note="accepted at the weekly review")
        clock.advance(DAY)
        g4 = g4_run(store, simulated=simulated, campaign=name, site=site, customer=customer,
                    windows=240, requests=2000)
    out.ids.update(G1=g1, G2=g2, G3=g3, G4=g4)
    out.cells[g3] = cells
    return out


def g4_run(store: Store, *, windows: int, requests: int, simulated: bool = False,
           campaign: str = "acme-2026q1", site: str = "acme-sh", customer: str = "ACME",
           batch: int = 20000) -> int:
    """A soak: one benchmark of `requests` rows and `windows` soak windows of 60 s (the
    table `gate run G4` fills, harness.store.windows)."""
    from harness.store import windows as store_windows

    rid = new_run(store, "G4", campaign=campaign, site=site, customer=customer,
                  simulated=simulated, config=g4_config(duration=windows * 60.0, window=60.0,
                                                        baseline=min(3600.0, windows * 15.0)))
    add_checks(store, rid, [("error rate per window", "client1", "PASS", "<= 0.1 %", "0.02 %"),
                            ("TTFT p99 drift", "client1", "PASS", "<= 10 %", "3.1 %"),
                            ("GPU Xid errors", "gpu1", "PASS", "0", "0")])
    bid = writer.start_benchmark(store, rid, arm="accelerated", layout="TP8", tier=16,
                                 phase="soak", params={"engine_version": "vllm 0.11.0"})
    rng = np.random.default_rng(3)
    ttft = rng.lognormal(np.log(1.2), 0.2, size=requests)
    rows = ({"idx": i, "scheduled": i * 0.2, "sent": i * 0.2, "ttft": float(ttft[i]),
             "e2el": float(ttft[i]) + 3.0, "prompt_tokens": 8000, "output_tokens": 128,
             "status": 200} for i in range(requests))
    writer.insert_requests(store, bid, rows, batch=batch)
    writer.finish_benchmark(store, bid, status="FINISHED", duration=windows * 60.0, summary={})
    store_windows.upsert_windows(store, rid, soak_windows(windows))
    runs.finish_run(store, rid, verdict="PASS", reason="", selected=3, total=3)
    return rid


def signed_then_resumed(store: Store, name: str = "resumed-1") -> int:
    """Dr. Li signed while the run stood ABORTED; `gate resume` then finished it, passing
    with weaker settings: that sign-off predates the result, so it does not count
    (harness.store.runs.effective_verdict) and the run stays INCONCLUSIVE."""
    with clock_at(time.time() - 2 * DAY) as clock:
        rid = new_run(store, "G3", campaign=name, config=WEAK_CONFIG)
        add_checks(store, rid, [("same model on both arms", "gpu1", "PASS", "m", "m")])
        runs.finish_run(store, rid, verdict="ERROR", reason="aborted (interrupted)",
                        status="ABORTED")
        clock.advance(600)
        REVIEWER.sign(store, rid)
        clock.advance(3600)
        runs.reopen_run(store, rid)
        add_g3_data(store, rid, PASS_PLANS[:1], run_start=clock.now())
        reason = WEAKENED_REASON + " (" + "; ".join(d.line() for d in weakened(WEAK_CONFIG)) + ")"
        runs.finish_run(store, rid, verdict="INCONCLUSIVE", reason=reason, needs_signoff=True,
                        selected=1, total=1)
    return rid


def scenarios(store: Store) -> dict[str, int]:
    """Every variant the report must handle, each in its own campaign; name -> run id."""
    ids: dict[str, int] = {}
    full = campaign(store, simulated=True)
    ids.update({f"sim_{k}": v for k, v in full.ids.items()})
    hostile = campaign(store, site=HOSTILE_SITE, customer=HOSTILE_CUSTOMER, name="hostile-1")
    ids["hostile_G3"] = hostile.ids["G3"]
    h1 = new_run(store, "G1", campaign="hostile-1", site=HOSTILE_SITE, customer=HOSTILE_CUSTOMER,
                 operator="<img src=x onerror=alert(1)>")
    add_checks(store, h1, [("gpu <model> & \"count\"", HOSTILE_HOST, "STOP-LOSS",
                            "H100 x8 <expected>", "H100 x7 & one missing")])
    finish_from_checks(store, h1)
    ids["hostile_G1"] = h1
    ids["stop_forced"], _ = g3_run(store, STOP_PLANS, forced=True, campaign="stop-1")
    ids["signed"], _ = g3_run(store, SIGNED_PLANS, signed=True, campaign="signed-1")
    ids["unsigned"], _ = g3_run(store, SIGNED_PLANS, campaign="unsigned-1")
    ids["noev"], _ = g3_run(store, PASS_PLANS[:1], campaign="noev-1", with_series=False)
    ids.update({f"attempts_{k}": v for k, v in attempts(store).items()})
    ids["weak_unsigned"], _ = g3_run(store, PASS_PLANS, campaign="weak-unsigned-1",
                                     config=WEAK_CONFIG, engines=arm_engines(LAYOUTS))
    ids["weak_above_band"], _ = g3_run(store, SIGNED_PLANS, campaign="weak-band-1",
                                       config=WEAK_CONFIG, signer=REVIEWER)
    ids["resumed"] = signed_then_resumed(store)
    part = new_run(store, "G1", campaign="partial-1")
    add_checks(store, part, G1_CHECKS[:2])
    finish_from_checks(store, part, partial=True, selected=2, total=4)
    ids["partial"] = part
    running = new_run(store, "G2", campaign="running-1")
    add_checks(store, running, G2_CHECKS[:1])
    runs.heartbeat(store, running)
    ids["running"] = running
    aborted = new_run(store, "G3", campaign="aborted-1")
    add_checks(store, aborted, [("same model on both arms", "gpu1", "PASS", "m", "m")])
    runs.add_event(store, aborted, source="ansible", name="serve.yml: start engine",
                   host="gpu1", status="unreachable", message="ssh: connect timed out")
    runs.finish_run(store, aborted, verdict="ERROR", reason="aborted: process gone",
                    status="ABORTED")
    ids["aborted"] = aborted
    empty = new_run(store, "G1", campaign="empty-1")
    finish_from_checks(store, empty)
    ids["empty"] = empty
    with clock_at(time.time() - 30 * DAY) as clock:
        for week, drop in enumerate((0.38, 0.37, 0.30)):
            plans = [CellPlan("TP8", 4, drop, 0.33, "PASS"
                              if drop - 0.04 >= 0.25 else "INCONCLUSIVE")]
            ids[f"weekly_{week}"], _ = g3_run(store, plans, campaign="weekly-1", reps=2)
            clock.advance(7 * DAY)
    return ids


# -- G4: a soak's windows as the viewer stores them (soak_window) -------------------------
G4_KV_BYTES_PER_TOKEN = 163840.0  # what the engaged rule holds device reads against
G4_CRITERIA = ("error_rate", "ttft_drift", "throughput_drift", "memory_growth", "restarts",
               "engaged", "engine_clock")


def g4_config(*, duration: float, window: float, baseline: float) -> dict[str, Any]:
    """A stored config with gates.g4 as `gate run G4` stores it (model_dump, seconds)."""
    config: dict[str, Any] = copy.deepcopy(G3_CONFIG)
    config["gates"]["g4"] = {
        "duration": duration, "window": window, "baseline": baseline, "concurrency": 16,
        "layout": None, "stop_early": False, "optional": [],
        "criteria": {"max_error_rate": 0.01, "max_ttft_drift_per_24h": 0.1,
                     "max_throughput_drift_per_24h": 0.1, "max_memory_growth_per_24h": 0.02,
                     "max_restarts": 0, "min_engaged_share": 0.5, "min_device_share": 0.5,
                     "confidence": 0.95}}
    return config


def soak_windows(n: int, *, window_s: float = 60.0, seed: int = 11,
                 failed: dict[int, int] | None = None, restarts: tuple[int, ...] = (),
                 fallback_from: int | None = None,
                 unsampled: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    """`n` windows as harness.g4 summarises them: ~300 requests each at TTFT p50 ~1.2 s
    rising 1 % over the soak, 128 output tokens a request, the tier's hits and the
    devices' reads in proportion (G3's rule), engine RSS creeping up; `failed` requests
    per window index, engine `restarts` (its RSS back down), the accelerator gone from
    `fallback_from` on (no hits, hardly any reads), counters `unsampled` in some."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    rss = 40e9
    for i in range(n):
        requests = int(rng.integers(280, 321))
        fails = (failed or {}).get(i, 0)
        p50 = 1.2 * (1 + 0.01 * i / n) * (1 + rng.normal(0, 0.01))
        hits: float | None = requests * 7000.0
        reads: float | None = hits * G4_KV_BYTES_PER_TOKEN * (1 + abs(rng.normal(0, 0.02)))
        if fallback_from is not None and i >= fallback_from:
            hits, reads = 0.0, 2e6
        if i in unsampled:
            hits = reads = None
        rss = 40e9 if i in restarts else rss + 2e6
        rows.append({"idx": i, "start_s": i * window_s, "length_s": window_s,
                     "requests": requests, "errors": {"http": fails} if fails else {},
                     "ttft_p50_s": float(p50), "ttft_p99_s": float(p50 * 1.9),
                     "tpot_p50_s": 0.021, "output_tokens": (requests - fails) * 128,
                     "external_hit_tokens": hits, "device_read_bytes": reads,
                     "kv_volume_read_bytes": None, "engine_rss_bytes": rss,
                     "engine_restarts": 1 if i in restarts else 0,
                     "counters": {"engines": [{"instance": 0, "sampled": hits is not None}]}})
    return rows


def _g4_expected(criterion: str, c: object) -> tuple[Reason, str]:
    """What a criterion asks, in the suite's own words (harness.g4.outcome.expected)."""
    from harness.g4.criteria import Criteria
    from harness.g4.outcome import expected

    assert isinstance(c, Criteria)
    return expected(criterion, c)


def _record(store: Store, rid: int, nodeid: str, name: str, outcome: str,
            expected: tuple[Reason, str], measured: tuple[Reason, str] | None,
            message: tuple[Reason, str] | None = None) -> None:
    """A check as harness.pytest_plugin's CheckRecorder stores it: the English beside
    its reason codes."""
    details: dict[str, object] = {"expected": expected[0].as_json()}
    if measured is not None:
        details["measured"] = measured[0].as_json()
    if message is not None:
        details["message"] = message[0].as_json()
    runs.record_check(store, rid, nodeid=nodeid, name=name, host=None, outcome=outcome,
                      expected=expected[1], measured=measured[1] if measured else "",
                      message=message[1] if message else "", details=details)


def g4_soak_run(store: Store, rows: list[dict[str, Any]], *, duration: float,
                window: float, baseline: float, simulated: bool = False,
                campaign: str = "soak-1") -> int:
    """A finished G4 run: `rows` stored as its windows (harness.store.windows), judged by
    G4's own criteria (harness.g4.criteria.judge) and recorded as the suite records its
    checks (gates/g4_stability/test_g4.py), the run's reason as the runner writes it."""
    from harness.g4.criteria import Criteria, judge
    from harness.labels import check_label
    from harness.loadgen.soak_windows import Evidence, Window
    from harness.store import windows as store_windows

    rid = new_run(store, "G4", campaign=campaign, simulated=simulated,
                  config=g4_config(duration=duration, window=window, baseline=baseline))
    store_windows.upsert_windows(store, rid, rows)
    c = Criteria(baseline_h=baseline / 3600.0, duration_h=duration / 3600.0)
    measured = [Window(index=r["idx"], start_s=r["start_s"], length_s=r["length_s"],
                       requests=r["requests"], errors=r["errors"], ttft_p50_s=r["ttft_p50_s"],
                       ttft_p99_s=r["ttft_p99_s"], output_tokens=r["output_tokens"],
                       evidence=Evidence(external_hit_tokens=r["external_hit_tokens"],
                                         device_read_bytes=r["device_read_bytes"],
                                         engine_rss_bytes=r["engine_rss_bytes"],
                                         engine_restarts=r["engine_restarts"]))
                for r in rows]
    judged = {j.criterion: j for j in judge(measured, c, G4_KV_BYTES_PER_TOKEN)}
    planned = int(duration // window)
    soak = "g4_stability/test_g4.py::test_soak"
    done = (Reason("g4.soak_measured", {"n": len(rows), "of": planned, "ended": "done"}),
            f"{len(rows)} of {planned} windows measured; the soak ran to its end")
    _record(store, rid, soak, "test_soak", "PASS" if len(rows) >= planned else "INCONCLUSIVE",
            (Reason("g4.soak_expected"), "the accelerated arm stable under load for "
             "gates.g4.duration"), done, None if len(rows) >= planned else done)
    bad: list[str] = []
    for name in G4_CRITERIA:
        nodeid = f"g4_stability/test_g4.py::test_criterion[{name}]"
        j = judged[name]
        said = (j.reason, j.text)
        outcome = j.verdict.value
        _record(store, rid, nodeid, "test_criterion", outcome, _g4_expected(name, c), said,
                None if outcome == "PASS" else said)
        if outcome != "PASS":
            bad.append(f"{check_label('G4', nodeid, 'test_criterion')}: {j.text}")
    finish_from_checks(store, rid, reason="; ".join(bad[:5]))
    return rid


def g4_run_without_windows(store: Store, campaign: str = "soak-none") -> int:
    """A G4 run that stored no window: the soak ended before its first one (its checks
    ERROR), its test_soak words stored by an older harness (`status`, not `ended`: the
    catalogue cannot say them, so they are shown as stored)."""
    rid = new_run(store, "G4", campaign=campaign,
                  config=g4_config(duration=3600.0, window=60.0, baseline=600.0))
    old = {"code": "g4.soak_measured", "params": {"n": 0, "of": 60, "status": "failed"}}
    runs.record_check(store, rid, nodeid="g4_stability/test_g4.py::test_soak",
                      name="test_soak", host=None, outcome="ERROR",
                      expected="the accelerated arm stable under load for gates.g4.duration",
                      measured="0 of 60 windows measured; the soak failed",
                      message="the soak's process died before its first window",
                      details={"expected": Reason("g4.soak_expected").as_json(),
                               "measured": old})
    from harness.g4.criteria import Criteria

    c = Criteria(baseline_h=600.0 / 3600.0, duration_h=1.0)
    for name in G4_CRITERIA:  # asked, then the judgement raised (no code: stored English)
        expected, words = _g4_expected(name, c)
        runs.record_check(store, rid, nodeid=f"g4_stability/test_g4.py::test_criterion[{name}]",
                          name="test_criterion", host=None, outcome="ERROR", expected=words,
                          message=f"{name} cannot be judged: no window was measured",
                          details={"expected": expected.as_json()})
    finish_from_checks(store, rid, reason="the soak's process died before its first window")
    return rid
