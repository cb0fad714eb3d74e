"""`gate sim`: run one simulated engine in the foreground.

The command lives with the simulator (harness.sim.command), which `python -m harness.sim`
also runs; the CLI lists it here so `gate sim` loads it like every other command.
"""

from __future__ import annotations

from harness.sim.command import sim

__all__ = ["sim"]
