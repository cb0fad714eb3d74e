"""`python -m harness.sim ...` is `gate sim ...` (what the controller spawns), run by the
simulator's own command (harness.sim.command) so the engine never imports harness.cli."""

from harness.sim.command import main

if __name__ == "__main__":
    main()
