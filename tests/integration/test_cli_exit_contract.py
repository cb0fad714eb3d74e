"""Exit codes are a contract (README): 1 is STOP-LOSS, so `gate` never exits 1 on a crash.
A bug is one line and exit 3 (ERROR: nothing was decided); bad config text is one line
and exit 4. Real `gate` subprocesses."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from gate_testing import MINIMAL_CONFIG, SUITES, GateRunner

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "loadgen"

# `gate` itself, with one command made to fail the way a bug does.
CRASHING = textwrap.dedent("""
    import sys
    import harness.cli as cli

    def boom(*args, **kwargs):
        raise {exc}

    cli.cli.main = boom
    sys.exit(cli.main(sys.argv[1:]))
""")


def crash(exc: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CRASHING.format(exc=exc), *args],
                          capture_output=True, text=True, timeout=60, check=False)


def test_a_crash_is_one_line_and_exit_3_not_1() -> None:
    out = crash("KeyError('run_id')", "status")
    assert out.returncode == 3, out.stderr
    assert out.stderr == ("gate: internal error: KeyError: 'run_id' (a bug in gate; rerun with "
                          "--debug for the traceback)\n")


def test_debug_shows_the_traceback_and_keeps_exit_3() -> None:
    out = crash("RuntimeError('boom\\nsecond line')", "--debug", "status")
    assert out.returncode == 3, out.stderr
    assert "Traceback (most recent call last)" in out.stderr and "in boom" in out.stderr
    assert out.stderr.splitlines()[-1] == ("gate: internal error: RuntimeError: boom second "
                                           "line (a bug in gate)")


def test_a_gate_error_with_debug_keeps_its_own_exit_code(gate_cli: GateRunner) -> None:
    out = gate_cli("--debug", "run", "G1", "--suite", str(SUITES / "passing"), "--db",
                   "nosuch://x")
    assert out.returncode == 4, out.stderr
    assert "Traceback" in out.stderr and "gate: error: --db:" in out.stderr


def test_ctrl_c_is_130() -> None:
    out = crash("KeyboardInterrupt()", "status")
    assert out.returncode == 130 and out.stderr == "gate: aborted\n", out.stderr


# --- config text that is not valid Unicode ----------------------------------------------

BAD_TEXT = [
    ('site: {name: "\\ud800", customer: ACME}', "site.name", '"\\ud800" has a lone surrogate'),
    # a UTF-16 pair written as two escapes: YAML makes two lone surrogates, not one emoji
    ('arms:\n  baseline: {start: {playbook: serve.yml, vars: {tier: "\\ud83d\\ude00"}}}',
     "arms.baseline.start.vars.tier", '"\\ud83d\\ude00" has a lone surrogate'),
    ('labels: ["ok", "\\udfff"]', "labels[1]", '"\\udfff" has a lone surrogate'),
    ('"\\udc80": 1', "\\udc80", '"\\udc80" has a lone surrogate'),
]


def bad_config(site_dir: Path, extra: str) -> Path:
    text = MINIMAL_CONFIG
    if extra.startswith("site:"):
        text = text.replace('site: {name: test-site, customer: "Test Customer"}\n', "")
    path = site_dir / "bad.yaml"
    path.write_text(text + extra + "\n", encoding="utf-8")
    return path


def one_usage_line(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 4, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr, out.stderr
    lines = [x for x in out.stderr.splitlines() if x.startswith("gate: ")]
    assert len(lines) == 1, out.stderr
    return lines[0]


@pytest.mark.parametrize(("extra", "key", "said"), BAD_TEXT)
@pytest.mark.parametrize("command", [
    ("run", "G3", "--dry-run"),
    ("status",),
    ("import", "vllm-bench", str(FIX / "vllm-bench-serve-result_er0080_v0.25.1_opt125m.json")),
    ("bench", "--url", "http://127.0.0.1:9", "--model", "m"),
])
def test_config_text_that_is_not_unicode_names_key_and_file_exit_4(
        gate_cli: GateRunner, site_dir: Path, command: tuple[str, ...], extra: str, key: str,
        said: str) -> None:
    path = bad_config(site_dir, extra)
    line = one_usage_line(gate_cli(*command, "-c", str(path)))
    assert line == (f"gate: error: {path}: {key}: text is not valid Unicode: {said} (write "
                    "the character itself, or one \\U0001F600-style escape; YAML does not "
                    "join \\ud83d\\ude00-style pairs)"), line


@pytest.mark.parametrize(("value", "said"), [
    ('"\\U00110000"', "a \\U escape past U+10FFFF"),
    ("2024-13-45", "month must be in 1..12"),
])
def test_yaml_values_python_cannot_make_are_one_line_exit_4(
        gate_cli: GateRunner, site_dir: Path, value: str, said: str) -> None:
    path = site_dir / "bad.yaml"
    path.write_text(MINIMAL_CONFIG.replace("{name: test-campaign}", f"{{name: {value}}}"))
    line = one_usage_line(gate_cli("run", "G3", "--dry-run", "-c", str(path)))
    assert line.startswith(f"gate: error: {path}: YAML value near line "), line
    assert line.endswith(f"cannot be read: {said}"), line


def test_valid_unicode_escapes_still_load(gate_cli: GateRunner, site_dir: Path) -> None:
    from harness.config.loader import load_config

    path = site_dir / "ok.yaml"
    path.write_text(MINIMAL_CONFIG.replace('customer: "Test Customer"',
                                           'customer: "ACME \\U0001F600 \\u00e9"'))
    assert load_config(path).config.site.customer == "ACME \U0001F600 \u00e9"
    assert len(load_config(path).digest()) == 64
    out = gate_cli("status", "-c", str(path))
    assert out.returncode == 0, out.stderr
