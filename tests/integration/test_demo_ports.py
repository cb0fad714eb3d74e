"""A port taken in the middle of a run: the engine's own words reach the console, the
half-started arm is stopped, and the run says ERROR (issue 16)."""

from __future__ import annotations

import socket
from pathlib import Path

import yaml
from g3_site import one_cell_site

from harness.sim.control import engine_status


def test_a_taken_port_is_an_error_naming_it_and_leaves_no_engine(tmp_path: Path) -> None:
    with one_cell_site(tmp_path) as site:
        site.edit({"gates": {"g3": {"layouts": ["TP4x2"]}}})
        port = yaml.safe_load(site.config.read_text())["layouts"][1]["instances"][1]["port"]
        with socket.socket() as squatter:  # bound, not listening: clean slate sees nothing
            squatter.bind(("127.0.0.1", port))
            out = site.gate("run", "G3", "--force")
        assert out.returncode == 3, out.stderr
        assert "address already in use" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr
        engines = sorted((site.root / "engines").glob("*"))
        assert engines, "the arm's first instance was started"
        assert not any(engine_status(state).running for state in engines)
