"""A site directory for the namespace lab's end-to-end gate tests (G1, G2): the lab's
inventory with per-host extras, its known_hosts, a store of its own, and `gate` run as a
user would run it, each check read back from `gate runs show --json`."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.gate_testing import GATE
from tests.lab.netlab import Lab

# Capture catalogs the lab's hosts may add (`gate_sim_captures`): the packaged ones only
# ship permissively licensed outputs.
TEST_CAPTURES = Path(__file__).resolve().parent / "fixtures" / "simhosts"


@dataclass(frozen=True)
class LabSite:
    directory: Path
    env: dict[str, str]

    def write_config(self, text: str) -> None:
        (self.directory / "gate.yaml").write_text(text)

    def gate(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*GATE, *args], cwd=self.directory, env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def checks(self, run: int) -> dict[str, dict[str, Any]]:
        """Check id (`test_item[h2-nvme]`) -> the stored check of that run."""
        show = self.gate("runs", "show", str(run), "--json")
        assert show.returncode == 0, show.stdout + show.stderr
        return {c["nodeid"].rsplit("::", 1)[-1]: c for c in json.loads(show.stdout)["checks"]}


def lab_site(lab: Lab, directory: Path, *, extra: Mapping[str, Mapping[str, str]],
             names: Sequence[str] | None = None) -> LabSite:
    """The lab's inventory (hosts.ini, with `extra` host vars) and known_hosts in
    `directory`; the store there; sudo's password from the environment, as at a site."""
    lab.write_inventory(directory / "hosts.ini", extra=extra, names=names)
    (directory / "known_hosts").write_text(lab.known_hosts.read_text())
    env = {**os.environ, "GATE_DB": f"sqlite:///{directory / 'gate.db'}",
           "GATE_SUDO_PASSWORD": lab.password}
    env.pop("GATE_CONFIG", None)
    return LabSite(directory, env)
