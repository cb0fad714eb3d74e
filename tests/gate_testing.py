"""Constants and types shared by the harness's own tests (importable: tests/ is on pythonpath)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUITES = Path(__file__).resolve().parent / "fixtures" / "suites"
GATE = [sys.executable, "-m", "harness"]

MINIMAL_CONFIG = """\
site: {name: test-site, customer: "Test Customer"}
campaign: {name: test-campaign}
inventory: hosts.ini
model: {name: test/model}
"""

MINIMAL_INVENTORY = """\
[gpu]
gpu1 ansible_connection=local
gpu2 ansible_connection=local
[storage]
st1 ansible_connection=local
"""


GateRunner = Callable[..., subprocess.CompletedProcess[str]]
