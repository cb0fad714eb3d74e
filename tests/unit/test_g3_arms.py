"""An arm's instances act at the same time (harness.serving.arms.on_each): really concurrent,
errors raised after every instance ended and in instance order, and an interrupt of the
caller cancels the others instead of leaving them running."""

from __future__ import annotations

import os
import signal
import threading
import time
from types import FrameType

import pytest

from harness.errors import EndpointError, InfrastructureError
from harness.serving.arms import on_each, wait_healthy


def test_instances_act_at_the_same_time() -> None:
    both_in = threading.Barrier(2, timeout=5)  # breaks unless both run at once
    on_each([0, 1], lambda _: both_in.wait(), threading.Event())


def test_the_first_error_in_instance_order_after_all_ended() -> None:
    ended: list[int] = []

    def act(i: int) -> None:
        time.sleep(0.2 if i == 0 else 0.0)
        ended.append(i)
        raise InfrastructureError(f"instance {i} failed")

    with pytest.raises(InfrastructureError, match="instance 0"):
        on_each([0, 1, 2], act, threading.Event())
    assert sorted(ended) == [0, 1, 2]


class Stop(Exception):
    """What gate's runner turns SIGTERM into."""


def test_an_interrupt_cancels_the_other_instances() -> None:
    cancel = threading.Event()
    stopped: list[int] = []

    def act(i: int) -> None:
        cancel.wait(30)  # an action that watches cancel (a playbook, a health wait)
        stopped.append(i)

    def stop(signum: int, frame: FrameType | None) -> None:
        raise Stop

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM)).start()
        started = time.monotonic()
        with pytest.raises(Stop):
            on_each([0, 1], act, cancel)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert cancel.is_set() and sorted(stopped) == [0, 1]
    assert time.monotonic() - started < 10


def test_a_health_wait_ends_when_cancelled() -> None:
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    with pytest.raises(EndpointError, match="cancelled"):
        wait_healthy("http://127.0.0.1:9", timeout=30, cancel=cancel)
