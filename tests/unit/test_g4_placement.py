"""The viewer's side of a soak on the client host (harness/g4/placement.py): a host that
stops answering keeps the last look (the soak goes on there) and is an event once, then
an ERROR naming it; and the device samples' schedule just after each window edge
(harness/g4/devices.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from harness.errors import UnreachableError
from harness.g4.devices import edge_since, next_edge
from harness.g4.placement import CLIENT_STATE, ClientPlace, last_client_state
from harness.remote.soak_client import RemoteSoak
from harness.transport.fake import FakeResponse, FakeTransport


def _answer() -> str:
    return json.dumps({"state": {"status": "running", "pid": 4242, "started_at": 100.0,
                                 "updated_at": 101.0, "windows_written": 1},
                       "alive": True, "now": time.time(), "more": False, "log": "",
                       "windows": [{"index": 0, "start_s": 0.0, "length_s": 1.0,
                                    "requests": 3}]})


def test_a_client_host_that_stops_answering_keeps_the_last_look_then_is_an_error(
        tmp_path: Path) -> None:
    responses = [FakeResponse("* soak-pull *", stdout=_answer())]
    events: list[dict[str, Any]] = []
    place = ClientPlace(tmp_path, RemoteSoak(FakeTransport(responses, host="c1"), ["agent"],
                                             ".gate/soaks/run1-x"), None,
                        lambda **kw: events.append(kw), reconnect_s=0.3)
    first = place.see(-1)
    assert first.state is not None and first.state.pid == 4242 and first.alive
    assert [w["index"] for w in first.windows] == [0]
    assert place.where == "pid 4242 on c1"
    seen = last_client_state(tmp_path)  # what `gate status` shows without connecting
    assert seen is not None and seen.windows_written == 1 and (tmp_path / CLIENT_STATE).exists()

    responses[0] = FakeResponse("* soak-pull *", error=UnreachableError("no route", host="c1"))
    for _ in range(2):
        cut = place.see(0)
        assert cut.state == first.state and cut.alive and cut.windows == []
    assert [(e["host"], e["status"]) for e in events] == [("c1", "failed")]  # said once
    time.sleep(0.35)  # past reconnect_s
    with pytest.raises(UnreachableError):
        place.see(0)


def test_the_devices_are_sampled_just_after_each_window_edge() -> None:
    assert edge_since(100.0, 1.0, since=100.5, now=101.02) == 101.0  # an edge passed
    assert edge_since(100.0, 1.0, since=101.01, now=101.9) is None  # sampled after it
    assert edge_since(0.0, 1.0, since=0.0, now=5.0) is None  # the soak has not started
    assert next_edge(100.0, 2.0, now=101.5) == 102.0
    assert next_edge(100.0, 2.0, now=99.0) is None
