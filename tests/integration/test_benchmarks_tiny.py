"""Every script in benchmarks/ still runs (issue 25: a benchmark nothing runs rots, as
g1_fanout.py had against the BOM's validation): each at a tiny size, in its own process,
printing its figures. The figures' labels and format are asserted, never a speed: on a
shared machine that is the benchmark's job, at its real size. Each run takes a few
seconds; benchmarks/loadgen.py and benchmarks/g3_lab_power.py have their own tests."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lab import netlab

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
N = r"-?[0-9]+(?:\.[0-9]+)?"  # a printed figure
# the benchmarks run by a test elsewhere: script -> its test module
ELSEWHERE = {"loadgen.py": "test_loadgen_benchmark.py",
             "g3_lab_power.py": "test_g3_lab_power_benchmark.py",
             "store_sync.py": "test_store_sync.py", "fleet.py": "test_fleet_cli.py"}
# script -> the arguments of its tiny run (the tests below)
TINY = {
    "calibrate.py": ("--docs", "2", "--doc-tokens", "500", "--trials", "1"),
    "demo.py": ("--scenario", "bad-arrival", "--format", "html"),
    "foundation.py": ("--rows", "2000", "--repeat", "1"),
    "g1_fanout.py": ("--latency", "0.01", "--hosts", "1,2"),
    "g3_validity.py": ("--trials", "2", "--tiers", "4", "--jobs", "1"),
    "g4_soak.py": ("--windows", "40"),
    "g4_agent.py": ("--windows", "30", "--measure", "2", "--agent", "here"),
    "g4_memory.py": ("--minutes", "0.1", "--window", "1", "--every", "1"),
    "gc_pause.py": ("--phases", "2", "--requests", "8"),
    "remote.py": ("--records", "2000", "--requests", "64", "--trials", "1", "--skip-bundle"),
    "report.py": ("--requests", "200", "--windows", "4", "--repeat", "0",
                  "--g4-format", "html"),
    "sim.py": ("--starts", "1", "--requests", "64", "--speeds", "1000", "--layouts", "TP8",
               "--tiers", "1", "--doc-tokens", "1000"),
    "spawn.py": ("--cycles", "1"),
    "store_pg.py": ("--rows", "2000", "--repeat", "1"),
    "transport.py": ("--commands", "5", "--hosts", "2", "--rounds", "2", "--bulk-mb", "1"),
}


def run(script: str, tmp_path: Path, *extra: str) -> str:
    """The script's stdout at its tiny size; it must exit 0."""
    out = subprocess.run([sys.executable, str(BENCHMARKS / script), *TINY[script], *extra],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         check=False)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    return out.stdout


def lines(text: str, *patterns: str) -> None:
    """Each pattern matches a line of `text`, in order."""
    at = 0
    rows = text.splitlines()
    for pattern in patterns:
        for i in range(at, len(rows)):
            if re.search(pattern, rows[i]):
                at = i + 1
                break
        else:
            raise AssertionError(f"no line matching {pattern!r} after line {at}:\n{text}")


def test_every_benchmark_has_a_tiny_run_in_the_suite() -> None:
    scripts = {p.name for p in BENCHMARKS.glob("*.py")}
    assert scripts == set(TINY) | set(ELSEWHERE), "give a new benchmark a tiny run here"
    assert not set(TINY) & set(ELSEWHERE)
    here = Path(__file__).parent
    for script, module in ELSEWHERE.items():
        assert f'"{script}"' in (here / module).read_text(), (script, module)


@pytest.mark.slow
def test_calibrate(tmp_path: Path) -> None:
    lines(run("calibrate.py", tmp_path),
          r"^2 documents x 500 tokens \(\+64\), r1-qwen32b$",
          rf"^\s+0\s+1\s+{N}\s+{N}\s+\d+$",
          rf"^\s+0\s+\d+\s+{N}\s+{N}\s+\d+$",
          rf"^median: workers=1 {N} s, workers=\d+ {N} s, ratio {N}x$")


@pytest.mark.slow
def test_demo(tmp_path: Path) -> None:
    # bad-arrival stops at G1 (exit 1): the whole demo is the benchmark's real size
    lines(run("demo.py", tmp_path),
          rf"^run 1: +{N} s  exit 1  \(removed\)$",
          rf"^    g1 run +{N} s$",
          rf"^    outside the gate runs \(setup, report\) +{N} s$",
          rf"^wall: median {N} s, max {N} s; goal <= 180 s -> ratio {N}$")


@pytest.mark.slow
def test_foundation(tmp_path: Path) -> None:
    lines(run("foundation.py", tmp_path),
          rf"^gate --help +median +{N} ms +goal <= 300 ms +ratio {N}$",
          rf"^2000 request rows insert +{N} s +goal <= 10 s per 1M +ratio {N}$")


@pytest.mark.slow
def test_g1_fanout(tmp_path: Path) -> None:
    lines(run("g1_fanout.py", tmp_path),
          r"^latency per tool call: 0\.01 s; probes per host: \d+ ",
          r"^hosts +wall s +x one host$",
          rf"^ +1 +{N} +1\.00$",
          rf"^ +2 +{N} +{N}$")


@pytest.mark.slow
def test_g3_validity(tmp_path: Path) -> None:
    lines(run("g3_validity.py", tmp_path),
          rf"^bootstrap 2000 x 8 reps x 64 requests \(two-stage \+ within pass\): {N} ms$",
          r"^world: sigma=0\.4 .*; looks \[3, 4, 5, 6, 7, 8\], obrien-fleming; 2 trials",
          r"^t critical per look: ",
          r"^tier +req +scenario +drop +gain +n +PASS +STOP +INCO +sign +pairs +goal$",
          *(rf"^ +4 +16 +{re.escape(name)} .* (ok|MISSED)$"
            for name in ("null (no effect)", "drop at threshold", "gain at threshold",
                         "good (0.35 / 0.35)", "above band (gain 0.5)")),
          rf"^elapsed {N} s$")


@pytest.mark.slow
def test_g4_soak(tmp_path: Path) -> None:
    lines(run("g4_soak.py", tmp_path),
          rf"^spool: 40 window files written in {N} s$",
          rf"^device and engine samples: 1,127 stored in {N} s$",
          rf"^pull: 40 windows stored in {N} s \([0-9,]+ windows/s\); pulled again: 0 new",
          rf"^judge: 40 windows read back, reads and engine counters attributed, 7 criteria "
          rf"in {N} s$",
          r"^total pull \+ judge .* goal <= 10 s \(error_rate PASS, .* engaged PASS, "
          r"engine_clock PASS\)$")


@pytest.mark.slow
def test_g4_agent(tmp_path: Path) -> None:
    lines(run("g4_agent.py", tmp_path),
          rf"^spool: 28 window files written in {N} s$",
          r"^cadence at 60 s windows: a pull every 15 s \(4 a window\), an agent check "
          r"every 30 s \(2 a window\)$",
          rf"^pull: 8 pulls at 28\.\.30 windows, CPU {N} ms a pull \(min {N}, max {N}\)",
          r"^agent check: not measured",
          rf"^per window: {N} ms CPU = {N}% of a core at 60 s windows   goal < 1 % "
          r"\((met|NOT met)\)$")


@pytest.mark.slow
def test_g4_memory(tmp_path: Path) -> None:
    lines(run("g4_memory.py", tmp_path),
          r"^soak 0.1 min in windows of 1 s at c=4, sampled every 1 s$",
          rf"^\s+{N}\s+\d+\s+{N}\s+{N}$",
          rf"^gate process RSS: start {N} MB, end {N} MB \([+-]{N} %\), max {N} MB$",
          rf"^soak process RSS: start {N} MB, end {N} MB \([+-]{N} %\), max {N} MB$",
          rf"^samples \d+ over {N} s; gate run G4 exit [0-3]$")


def test_gc_pause(tmp_path: Path) -> None:
    stall = rf"worst loop stall per phase median +{N} ms, max +{N} ms, phases with a stall"
    lines(run("gc_pause.py", tmp_path),
          r"^heap: \d+ tracked objects$",
          rf"^no freeze  : {stall} > 50 ms: \d of 2$",
          rf"^heap_frozen: {stall} > 50 ms: \d of 2$")


@pytest.mark.slow
def test_remote(tmp_path: Path) -> None:
    lines(run("remote.py", tmp_path),
          rf"^phase req/s, c=64, 16 tokens, 64 requests, best of 1: in-process {N}, "
          rf"agent {N} \({N} %; goal >= 90 %\)$",
          rf"^pull 2000 records \({N} MB, 8-24 chunk times each\): transfer {N} s \+ "
          rf"decode {N} s = {N} s \(goal <= 10 s\)$",
          rf"^end to end with storing in SQLite: {N} s \({N} records/s\)$")


@pytest.mark.slow
def test_report(tmp_path: Path) -> None:
    lines(run("report.py", tmp_path),
          rf"^fill: G4 run 200 requests \+ 4 windows in {N} s",
          rf"^G4-sized run -> HTML: {N} s \(imports {N}, build {N}, write {N}\); "
          rf"peak RSS {N} MB; sizes \[\d+\] KB$",
          rf"^  vs target 20 s: {N}x of budget; RSS vs 1\.5 GB: {N}x of budget$",
          rf"^one-gate G3 PDF, zh, in one process: {N} s \(imports {N}, build {N}, "
          rf"PDF {N}; CPU imports {N}, build {N}, PDF {N}, {N} in all\); `gate report` not "
          r"timed \(--repeat 0\)$",
          rf"^load average during the run: {N} on \d+ cores$",
          r"^HarfBuzz subsetting: (yes|no \(fontTools: slower\)|unknown)$")


@pytest.mark.slow
def test_sim(tmp_path: Path) -> None:
    short = r"^short streamed completions, c=64, 16 tokens, speed {}: " \
            rf"{N} req/s \({N} SSE events per request, 0 failed\)$"
    lines(run("sim.py", tmp_path),
          rf"^start-up to healthy \(median of 1\): {N} s$",
          short.format(r"1e\+06"), short.format("250"),
          r"^G3 cells \(r1-qwen32b, 1000 prompt tokens; model target drop 0\.75",
          r"^speed +layout +c +drop +gain +wall$",
          rf"^ 1000  TP8 +1 +{N} +{N} +{N}s$")


@pytest.mark.slow
def test_spawn(tmp_path: Path) -> None:
    text = run("spawn.py", tmp_path)
    lines(text, rf"^spawner start-up \(imports, then answers\): {N} s$",
          r"^mean seconds over 1 cycles \(sd\)$",
          r"^way +action +new interpreter +spawner +ratio$",
          *(rf"^{way} +{action} +{N} \(  -  \) +{N} \(  -  \) +{N}x$"
            for way in ("api", "cli") for action in ("start", "restart", "stop")))


@pytest.mark.slow
def test_store_pg(tmp_path: Path, pg_url: str) -> None:
    lines(run("store_pg.py", tmp_path, "--pg-url", pg_url),
          rf"^2000 request rows  sqlite +{N} rows/s$",
          rf"^2000 request rows  postgresql +{N} rows/s   1M in +{N} s   goal <= 15 s$",
          rf"^postgresql / sqlite  ratio {N}$")


@pytest.mark.slow
@pytest.mark.lab
def test_transport(tmp_path: Path) -> None:
    reason = netlab.skip_reason()
    if reason:
        pytest.skip(reason)
    lines(run("transport.py", tmp_path),
          rf"^5 sequential commands, one host, reused connection: {N} s \({N} ms each; "
          r"goal <= 0\.15 s: (OK|MISSED)\)$",
          rf"^5 sequential commands through the jump host: +{N} s \({N} ms each\)$",
          rf"^one command, 1 host: {N} ms; on 2 hosts in parallel: {N} ms; ratio {N}x "
          r"\(goal <= 2x: (OK|MISSED)\)$",
          rf"^`sleep 0\.2`, 1 host: {N} ms; on 2 hosts in parallel: {N} ms; ratio {N}x",
          rf"^load average while measuring: {N} on \d+ cores",
          rf"^2 commands per host, 1 host: {N} s; 2 hosts in parallel: {N} s; ratio {N}x",
          rf"^2 hosts from cold \(connect \+ one command, parallel\): {N} s$",
          rf"^1 MB on stdout: {N} s \({N} MB/s\)$")
