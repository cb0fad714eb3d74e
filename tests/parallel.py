"""How the suite shares two or more cores (pytest-xdist: `-n auto --dist loadscope` in
pyproject's addopts; `-n 0` runs everything in one process).

Work is handed out by group, never test by test, so nothing expensive is built twice:
- the test files that use a session fixture costing tens of seconds to minutes (a `gate
  demo` scenario, the offline bundle) form that fixture's group, on one worker, which
  makes it once (GROUPS; collection fails if a file outside its group asks for one);
- every other file is a group of its own, so a module-scoped fixture is made once too.
Groups go out longest first (the demo scenarios, then the bundle, then files marked
slow, then the rest in collection order): the last to start is a short one, so the
workers end together. Cheap session fixtures (the SSH lab, the PostgreSQL cluster) are
made once per worker; both are built to run beside another copy of themselves.

The grouping is by file, decided where xdist schedules (the controller, which sees node
ids, not fixtures): xdist's own `xdist_group` marks do not reach its scheduler under
pytest 9 (they rename `item._nodeid`, which pytest 9 no longer reads).

The workers are capped at MAX_WORKERS: each simulated G3 needs about a core of its own,
and more workers than cores only slows every timed phase."""

from __future__ import annotations

import os

import pytest
from xdist.scheduler import LoadScopeScheduling
from xdist.workermanage import Producer

MAX_WORKERS = 4

# group -> (the session fixtures it owns, the files that use them). Longest first.
GROUPS: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "demo": (frozenset({"demo_default", "demo_null", "demo_broken_baseline",
                        "demo_bad_arrival"}),
             ("tests/integration/test_demo_scenarios.py",
              "tests/integration/test_g3_integrity.py",
              "tests/integration/test_g3_engine_code.py",
              "tests/integration/test_report_g3_plan.py",
              "tests/integration/test_report_zh_words.py")),
    "bundle": (frozenset({"bundle", "unpacked"}),
               ("tests/integration/test_bundle.py", "tests/integration/test_remote_lab.py",
                "tests/integration/test_g3_lab.py",
                "tests/integration/test_g3_remote_resume.py")),
}
_GROUP_OF_FILE = {path: name for name, (_, files) in GROUPS.items() for path in files}


def group_of(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return _GROUP_OF_FILE.get(path, path)


class FileGroupScheduling(LoadScopeScheduling):
    """xdist's loadscope, with GROUPS' files as one scope each."""

    def _split_scope(self, nodeid: str) -> str:
        return group_of(nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config,
                                log: Producer) -> LoadScopeScheduling | None:
    if config.getvalue("dist") == "loadscope":
        return FileGroupScheduling(config, log)
    return None


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    return max(1, min(MAX_WORKERS, os.cpu_count() or 1))


def _rank(item: pytest.Item) -> int:
    group = group_of(item.nodeid)
    if group in GROUPS:
        return list(GROUPS).index(group)
    return len(GROUPS) + (0 if item.get_closest_marker("slow") else 1)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker (the controller does not collect): refuse a test that uses a
    grouped session fixture from a file outside its group (it would be built twice), and
    put the longest groups first (with --no-loadscope-reorder xdist hands scopes out in
    collection order). Every worker sorts alike, as xdist requires."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for item in items:
        for name, (fixtures, files) in GROUPS.items():
            used = fixtures & set(getattr(item, "fixturenames", ()))
            if used and item.nodeid.split("::", 1)[0] not in files:
                raise pytest.UsageError(
                    f"{item.nodeid} uses {', '.join(sorted(used))}: add its file to the "
                    f"{name!r} group in tests/parallel.py (else each worker builds it)")
    items.sort(key=_rank)  # stable: a file's tests keep their order
