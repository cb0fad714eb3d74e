"""Library log noise goes to a run's log file, never to the console.

Why: paramiko logs a full traceback ("Error reading SSH protocol banner") from its
transport thread for every host that does not answer SSH, and Python prints any unhandled
WARNING on stderr; `gate hosts check` over five dead hosts printed dozens of them above
the table that already says, per host, what failed. The libraries' loggers stop
propagating to the console at start; while a run is under way, its artifact directory's
`gate.log` receives them for a later look.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# Third-party loggers only: the harness's own warnings (a host key recorded by
# `gate hosts trust`, ...) are meant for the operator and keep reaching stderr.
LIBRARY_LOGGERS = ("paramiko", "ansible", "ansible_runner", "asyncio", "aiohttp", "urllib3",
                   "httpx", "matplotlib", "fontTools", "weasyprint", "alembic")
RUN_LOG = "gate.log"


def quiet_library_logs() -> None:
    """No library logger reaches stderr (idempotent: a NullHandler keeps Python's
    last-resort handler from printing)."""
    for name in LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        logger.propagate = False
        if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
            logger.addHandler(logging.NullHandler())


@contextmanager
def library_log_to(path: Path, level: int = logging.INFO) -> Iterator[Path]:
    """While the block runs, the libraries' log lines (INFO and up) are appended to
    `path`; the handler is removed afterwards, so runs in one process keep their own."""
    quiet_library_logs()
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8", delay=True)
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    loggers = [logging.getLogger(name) for name in LIBRARY_LOGGERS]
    previous = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        if lg.level == logging.NOTSET or lg.level > level:
            lg.setLevel(level)
    try:
        yield path
    finally:
        for lg, lvl in zip(loggers, previous, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(lvl)
        handler.close()
