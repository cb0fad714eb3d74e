"""`python -m harness.sim ...` is `gate sim ...` (what the controller spawns)."""

from harness.cli import main

if __name__ == "__main__":
    import sys

    main(["sim", *sys.argv[1:]])
