"""`python -m harness` is `gate`."""

import sys

from harness.cli import main

sys.exit(main())
