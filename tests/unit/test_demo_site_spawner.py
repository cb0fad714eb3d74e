"""The demo site's spawner socket fits a unix socket's 107 bytes wherever the site is."""

from __future__ import annotations

import os
from pathlib import Path

from harness.workflow.demo_site import spawner_socket


def test_a_site_keeps_its_socket_in_its_directory_when_the_path_fits() -> None:
    root = Path("/tmp/gate-demo/20261205-035207-default")
    assert spawner_socket(root) == root / "spawner.sock"


def test_a_deep_site_gets_a_short_socket_of_its_own_in_tmp() -> None:
    deep = Path("/tmp/pytest-of-root/pytest-328/popen-gw1/test_a_baseline_shadowing_the_0/"
                "20261205-035207-default")
    sock = spawner_socket(deep)
    assert len(os.fsencode(str(deep / "spawner.sock"))) > 107
    assert sock.parent == Path("/tmp") and len(os.fsencode(str(sock))) <= 107
    assert spawner_socket(deep) == sock  # every command of the site names the same one
    assert spawner_socket(deep.with_name("20261205-035208-default")) != sock
