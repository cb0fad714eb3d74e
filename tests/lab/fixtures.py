"""pytest fixtures for the network-namespace SSH lab.

Load them from a test module with `pytest_plugins = ["tests.lab.fixtures"]` and mark the
module `pytestmark = pytest.mark.lab`. Fixtures:

  ssh_lab      session-wide lab: h1, h2, jump (direct) and t1 (only through jump);
               groups gpu = h1, t1; storage = h2; client = jump. Do not break it: use
               lab_factory for tests that kill sshd, cut links or change keys.
  lab_factory  lab_factory(hosts=[...], behind={...}, groups={...}, sudo=...) -> Lab,
               a fresh lab torn down when the test ends (pass or fail).

Tests skip with the reason when namespaces are impossible (not root, no `ip netns`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import pytest

from tests.lab import netlab
from tests.lab.netlab import LabFactory


@pytest.fixture(scope="session")
def lab_available() -> None:
    reason = netlab.skip_reason()
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def ssh_lab(lab_available: None) -> Iterator[netlab.Lab]:
    with netlab.Lab(hosts=("h1", "h2", "jump"), behind={"t1": "jump"},
                    groups={"gpu": ("h1", "t1"), "storage": ("h2",), "client": ("jump",)}) as lab:
        yield lab


@pytest.fixture
def lab_factory(lab_available: None) -> Iterator[LabFactory]:
    made: list[netlab.Lab] = []

    def make(hosts: Sequence[str] = ("h1",), behind: Mapping[str, str] | None = None,
             groups: Mapping[str, Sequence[str]] | None = None,
             sudo: str = "password") -> netlab.Lab:
        lab = netlab.Lab(hosts=tuple(hosts), behind=dict(behind or {}),
                         groups=dict(groups or {}), sudo=sudo)
        made.append(lab)
        lab.__enter__()
        return lab

    try:
        yield make
    finally:
        for lab in reversed(made):
            lab.close()
