"""The CLI's conventions that need no site (issue 27, item 8): the committed man page is
the one the CLI's help makes, shell completion answers as the README says, and -v's
lines are the transport's own records of what it ran."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

from harness.cli.verbose import transport_lines
from harness.transport.local import LocalTransport

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_man_page_is_the_clis_help() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen-man.py"), "--check"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr  # stale: run `.venv/bin/python scripts/gen-man.py`
    page = (ROOT / "docs" / "gate.1").read_text()
    sections = re.findall(r'^\.SS "(gate [a-z-]+(?: [a-z-]+)?) ', page, re.M)
    for command in ("gate run", "gate resume", "gate campaign", "gate demo", "gate report",
                    "gate hosts check", "gate runs show", "gate export"):
        assert command in sections
    assert "\\-\\-junit\\-xml" in page and "_GATE_COMPLETE=bash_source gate" in page
    assert "--suite" not in page.replace("\\-", "-")  # hidden options stay hidden


def _complete(words: str, cword: int) -> list[str]:
    env = {**os.environ, "COMP_WORDS": words, "COMP_CWORD": str(cword),
           "_GATE_COMPLETE": "bash_complete"}
    out = subprocess.run([sys.executable, "-m", "harness"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [line.split(",", 1)[1] for line in out.stdout.splitlines()]


def test_shell_completion_as_the_readme_says() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "_GATE_COMPLETE=bash_source gate" in readme
    assert _complete("gate ru", 1) == ["run", "runs"]
    assert _complete("gate run ", 2) == ["G1", "G2", "G3", "G4"]
    assert "--junit-xml" in _complete("gate run G3 --j", 3)


def test_verbose_lines_are_the_commands_sent_and_only_warnings_when_off() -> None:
    lines: list[str] = []
    host = LocalTransport("gpu9")
    with transport_lines(lines.append, False):
        host.run(["echo", "quiet"])
        logging.getLogger("harness.transport").warning("gpu9: still silent")
    assert lines == ["    [dim]gpu9: still silent[/]"]
    lines.clear()
    with transport_lines(lines.append, True):
        assert host.run(["echo", "said [x]"]).stdout == "said [x]\n"
    # one line, markup escaped so a command's brackets are printed, not taken as style
    assert len(lines) == 1 and "gpu9: run echo" in lines[0] and "\\[x]" in lines[0]
    host.run(["echo", "after"])
    assert len(lines) == 1  # the handler is gone with the block


def test_an_interrupted_run_says_how_to_continue() -> None:
    from harness.cli.run_cmd import interrupted_hint

    assert interrupted_hint("G3", 7).endswith("continue it with `gate resume 7`")
    assert interrupted_hint("G1", 2).endswith("run it again with `gate run G1`")
