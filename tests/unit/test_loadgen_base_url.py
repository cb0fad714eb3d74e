"""A server named as people type it (issue 27): `gate probe gpu1:8000` and `--url
gpu1:8000/v1` reach http://gpu1:8000, as curl takes a
host:port; a URL with its scheme is kept as written."""

from __future__ import annotations

import pytest

from harness.loadgen.records import Endpoint, base_url


@pytest.mark.parametrize(("typed", "base"), [
    ("gpu1:8000", "http://gpu1:8000"),
    ("127.0.0.1:8000/v1/", "http://127.0.0.1:8000"),
    (" http://gpu1:8000/ ", "http://gpu1:8000"),
    ("https://engine.example:443/v1", "https://engine.example:443"),
])
def test_base_url_takes_host_port_without_a_scheme(typed: str, base: str) -> None:
    assert base_url(typed) == base


def test_an_endpoint_typed_without_a_scheme_is_reached_over_http() -> None:
    assert Endpoint("gpu1:8000", "m").base == "http://gpu1:8000"
