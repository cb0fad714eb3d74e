"""`python -m harness` is `gate`."""

from harness.cli import main

main()
