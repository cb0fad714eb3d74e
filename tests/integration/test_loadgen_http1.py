"""gate's own HTTP/1.1 client (harness/loadgen/http1_pool.py) against real servers on
loopback: the vLLM-shaped aiohttp test server, the rawserver the benchmark times against,
and a scripted TCP server (loadgen_support/canned.py) for what the others never send.
A phase through it records what a phase through aiohttp records; every way the wire can
fail is a record of the kind aiohttp's path gives; connections are kept alive."""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from loadgen_support.canned import (
    ABORT,
    CLOSE,
    Script,
    canned,
    chunked,
    chunked_ok,
    head,
    sse,
)
from loadgen_support.server import ServerConfig, free_port, running_server

from harness.loadgen import Endpoint, RequestRecord, RequestSpec, client, run_phase
from harness.loadgen.engine import PhaseResult

MODEL = "test-model"


def specs(n: int, max_tokens: int = 6) -> list[RequestSpec]:
    return [RequestSpec(f"hello world {i}", max_tokens, i) for i in range(n)]


def phase(url: str, n: int, *, raw: bool = True, concurrency: int = 4,
          timeout: float = 30, monkeypatch: pytest.MonkeyPatch | None = None,
          api: client.Api = "completions") -> PhaseResult:
    if not raw:
        assert monkeypatch is not None
        monkeypatch.setattr(client, "new_session",
                            lambda t, c: client.Session(t, raw=False))
    try:
        return run_phase([Endpoint(url, MODEL)], specs(n), concurrency=concurrency,
                         progress=False, timeout=timeout, api=api)
    finally:
        if monkeypatch is not None:
            monkeypatch.undo()


def shape(r: RequestRecord) -> tuple[object, ...]:
    """What must not depend on the HTTP client: everything but the times."""
    return (r.idx, r.ok, r.status, r.error_kind, r.output_tokens, r.prompt_tokens,
            r.usage_reported, len(r.chunk_times), r.finish_reason,
            r.ttft == r.chunk_times[0] if r.chunk_times else None)


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_a_phase_records_the_same_through_either_client(
        api: client.Api, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = ServerConfig(ttft=0.03, itl=0.002, faults={5: "http_503", 9: "cut"})
    with running_server(cfg) as (url, _):
        ours = phase(url, 24, api=api)
    with running_server(cfg) as (url, _):
        theirs = phase(url, 24, raw=False, monkeypatch=monkeypatch, api=api)
    assert ours.params["http_client"] == ["gate-http1"]
    assert theirs.params["http_client"] == ["aiohttp"]
    assert [shape(r) for r in ours.records] == [shape(r) for r in theirs.records]
    assert ours.summary.failed_by_kind == theirs.summary.failed_by_kind == \
        {"http_503": 1, "cut": 1}
    # both see the server's 30 ms TTFT; neither adds more than scheduling noise
    for res in (ours, theirs):
        ttfts = [r.ttft for r in res.records if r.ok and r.ttft is not None]
        assert len(ttfts) == 22 and min(ttfts) >= 0.03
    ttft = [statistics.median(r.ttft or 0 for r in res.records if r.ok)
            for res in (ours, theirs)]
    assert abs(ttft[0] - ttft[1]) < 0.02
    http_err = next(r for r in ours.records if r.error_kind == "http_503")
    assert http_err.error == next(r.error for r in theirs.records if r.idx == 5)


def test_connections_are_kept_alive_and_headers_are_the_phases() -> None:
    with running_server(ServerConfig()) as (url, srv):
        res = phase(url, 40, concurrency=4)
    assert res.summary.completed == 40
    assert srv.arrivals == 40 and 1 <= len(srv.peers) <= 4
    with canned(lambda i: chunked_ok()) as (url, srv2):
        res = phase(url, 30, concurrency=3)
    assert res.summary.completed == 30 and srv2.requests == 30
    assert srv2.connections <= 3
    h = srv2.heads[0].decode()
    assert h.startswith("POST /v1/completions HTTP/1.1\r\n")
    for name in ("Host: 127.0.0.1:", "Content-Type: application/json",
                 "Accept: text/event-stream", "User-Agent: gate-loadgen (gate)",
                 "X-Request-ID: ", f"Content-Length: {len(srv2.bodies[0])}"):
        assert f"\r\n{name}" in h, name
    ids = {next(ln for ln in x.decode().split("\r\n") if ln.startswith("X-Request-ID"))
           for x in srv2.heads}
    assert len(ids) == 30


def test_the_api_key_goes_out_as_a_bearer_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with canned(lambda i: chunked_ok()) as (url, srv):
        res = phase(url, 2, concurrency=1)
    assert res.summary.completed == 2
    assert all(b"\r\nAuthorization: Bearer sk-test\r\n" in h for h in srv.heads)


def test_connection_close_answers_open_a_connection_each() -> None:
    with canned(lambda i: chunked_ok(3, "Connection: close")) as (url, srv):
        res = phase(url, 12, concurrency=2)
    assert res.summary.completed == 12 and srv.connections == 12


@pytest.mark.parametrize("name", ["length", "close-delimited", "http10", "1xx-first"])
def test_other_framings_complete(name: str) -> None:
    body = sse(4)
    scripts: dict[str, Script] = {
        "length": [head("200 OK", f"Content-Length: {len(body)}") + body],
        "close-delimited": [head("200 OK") + body[:50], 0.01, body[50:], CLOSE],
        "http10": [b"HTTP/1.0 200 OK\r\n\r\n" + body, CLOSE],
        "1xx-first": [b"HTTP/1.1 100 Continue\r\n\r\n", 0.01,
                      head("200 OK", "Transfer-Encoding: chunked") + chunked(body, 7)],
    }
    with canned(lambda i: scripts[name]) as (url, srv):
        res = phase(url, 4, concurrency=1)
    assert res.summary.completed == 4, [r.error for r in res.records]
    assert all(r.output_tokens == 4 and len(r.chunk_times) == 4 for r in res.records)
    kept = name in ("length", "1xx-first")
    assert srv.connections == (1 if kept else 4)


def failing(at: int, bad: Script) -> tuple[list[RequestRecord], int]:
    """A phase of 4 requests, one at a time, where request `at` gets `bad`."""
    with canned(lambda i: bad if i == at else chunked_ok()) as (url, srv):
        res = phase(url, 4, concurrency=1, timeout=1.0)
    return res.records, srv.connections


STREAM = head("200 OK", "Transfer-Encoding: chunked") + chunked(sse(4), 40)


@pytest.mark.parametrize(("bad", "kind", "status"), [
    ([STREAM[:400], ABORT], "cut", 200),  # reset mid-stream
    ([STREAM[:400], CLOSE], "cut", 200),  # a clean close mid-stream
    ([head("200 OK", "Content-Length: 900") + sse(1), CLOSE], "cut", 200),
    ([head("200 OK", "Transfer-Encoding: chunked"), 0.02, b"zz\r\n", 0.05], "cut", 200),
    ([head("200 OK", "Transfer-Encoding: chunked") + b"zz\r\n", 0.05], "cut", 200),
    ([CLOSE], "disconnect", None),
    ([b"HTTP/1.1 20", CLOSE], "disconnect", None),
    ([b"HELLO THERE\r\n\r\n"], "client_error", None),
    ([STREAM[:400], 5.0], "timeout", 200),  # stalls past the 1 s request timeout
    ([5.0], "timeout", None),
    ([head("500 Boom", "Content-Length: 7") + b"no luck"], "http_500", 500),
    ([head("429 Too Many", "Connection: close") + b"slow down", CLOSE], "http_429", 429),
])
def test_each_wire_failure_is_a_record_and_the_next_request_works(
        bad: Script, kind: str, status: int | None) -> None:
    records, connections = failing(1, bad)
    assert [r.ok for r in records] == [True, False, True, True]
    r = records[1]
    assert (r.error_kind, r.status) == (kind, status), r.error
    assert r.error and r.sent is not None
    if bad[0] == STREAM[:400]:
        assert r.chunk_times and r.ttft == r.chunk_times[0]
    if kind.startswith("http_"):
        assert r.error.startswith(f"HTTP {status} ") and r.error.endswith(
            "no luck" if status == 500 else "slow down")
    # only a response that ended as HTTP says keeps its connection
    assert connections == (1 if kind == "http_500" else 2)


def test_a_refused_port_is_a_connect_record() -> None:
    port = free_port()
    res = run_phase([Endpoint(f"http://127.0.0.1:{port}", MODEL)], specs(3), concurrency=2,
                    progress=False, timeout=5)
    assert {r.error_kind for r in res.records} == {"connect"}
    assert all(f"127.0.0.1:{port}" in (r.error or "") for r in res.records)


def test_an_unknown_host_is_a_connect_record() -> None:
    async def one() -> RequestRecord:
        rec = RequestRecord(idx=0, instance=0, doc_id=0, warmup=False, scheduled=0.0)
        async with client.new_session(5, 1) as s:
            await client.stream(s, "http://no-such-host.invalid/v1/completions", b"{}",
                                client.base_headers(), rec, time.monotonic(), False, None)
        return rec

    rec = asyncio.run(one())
    assert rec.error_kind == "connect" and rec.status is None


def test_a_cancelled_request_is_not_left_on_its_connection() -> None:
    """A phase that stops cancels requests in flight: the record keeps what arrived, and
    the connection it held is closed, never handed to the next request."""
    async def go(url: str) -> tuple[RequestRecord, RequestRecord, int]:
        recs = [RequestRecord(idx=i, instance=0, doc_id=i, warmup=False, scheduled=0.0)
                for i in range(2)]
        headers = client.base_headers()
        async with client.new_session(30, 1) as s:
            task = asyncio.create_task(client.stream(
                s, url + "/v1/completions", b"{}", headers, recs[0], time.monotonic(),
                False, None))
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await client.stream(s, url + "/v1/completions", b"{}", headers, recs[1],
                                time.monotonic(), False, None)
            return recs[0], recs[1], s.pool.opened

    with canned(lambda i: [STREAM[:400], 30.0] if i == 0 else chunked_ok()) as (url, srv):
        first, second, opened = asyncio.run(go(url))
    assert first.status == 200 and first.chunk_times and first.ttft == first.chunk_times[0]
    assert second.ok and opened == 2 and srv.connections == 2


def test_the_benchmarks_raw_server_is_read_whole() -> None:
    raw = Path(__file__).parents[1] / "loadgen_support" / "rawserver.py"
    proc = subprocess.Popen([sys.executable, str(raw), "--ttft", "0.01", "--itl", "0.001",
                             "--tokens", "5"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[1]
        res = run_phase([Endpoint(url, MODEL)], specs(20), concurrency=4, progress=False)
    finally:
        proc.terminate()
        proc.wait()
    assert res.summary.completed == 20
    # the server times its chunks on a millisecond loop clock: 10 ms may come 9.5 ms after
    assert all(len(r.chunk_times) == 5 and r.ttft and r.ttft >= 0.008 for r in res.records)


def test_https_and_credentials_in_the_url_stay_with_aiohttp() -> None:
    s = client.Session(5)
    assert s.client_name("https://h:8443/v1/completions") == "aiohttp"
    assert s.client_name("http://user:pw@h/v1/completions") == "aiohttp"
    assert s.client_name("http://h:8000/v1/completions") == "gate-http1"
    assert client.Session(5, raw=False).client_name("http://h/v1/completions") == "aiohttp"
