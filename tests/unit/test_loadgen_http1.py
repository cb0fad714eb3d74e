"""gate's own HTTP/1.1 response parser on bytes: every framing (chunked with extensions
and trailers, Content-Length, close-delimited), split at every byte, heads split across
reads, error answers, malformed answers; and real captured responses from the test
server and the simulator (tests/fixtures/http1/captures.json, how: capture.py there)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from harness.errors import ParseError
from harness.loadgen.http1 import ResponseParser, chunk_size, request_head, target
from harness.loadgen.sse import SSEDecoder

CAPTURES = Path(__file__).parents[1] / "fixtures" / "http1" / "captures.json"
EVENTS = (b'data: {"choices":[{"index":0,"text":" a","finish_reason":null}]}\n\n'
          b'data: {"choices":[{"index":0,"text":" b","finish_reason":"length"}]}\n\n'
          b"data: [DONE]\n\n")


def chunked(body: bytes, size: int, ext: bytes = b"", trailer: bytes = b"") -> bytes:
    out = b""
    for i in range(0, len(body), size):
        piece = body[i:i + size]
        out += b"%x%s\r\n" % (len(piece), ext) + piece + b"\r\n"
    return out + b"0" + ext + b"\r\n" + trailer + b"\r\n"


HEAD_CHUNKED = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")
CHUNKED = HEAD_CHUNKED + chunked(EVENTS, 50)
WITH_LENGTH = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(EVENTS) + EVENTS
CLOSED = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + EVENTS


def run(reads: list[bytes], eof: bool = False) -> tuple[ResponseParser, bytes]:
    p = ResponseParser()
    body = b"".join(p.feed(r) for r in reads)
    if eof:
        p.eof()
    return p, body


def splits(raw: bytes) -> list[list[bytes]]:
    """The message in two reads at every boundary, and one byte a read."""
    return [[raw[:i], raw[i:]] for i in range(len(raw) + 1)] + \
        [[raw[i:i + 1] for i in range(len(raw))]]


@pytest.mark.parametrize("raw", [CHUNKED, WITH_LENGTH], ids=["chunked", "length"])
def test_every_split_gives_the_same_body(raw: bytes) -> None:
    for reads in splits(raw):
        p, body = run(reads)
        assert body == EVENTS
        assert p.done and p.keep_alive and p.status == 200 and p.reason == "OK"
        assert p.headers["content-type" if raw is CHUNKED else "content-length"]


def test_close_delimited_body_ends_at_eof_at_every_split() -> None:
    for reads in splits(CLOSED):
        p, body = run(reads)
        assert body == EVENTS and not p.done
        p.eof()
        assert p.done and not p.keep_alive


def test_chunk_extensions_and_trailers_are_skipped() -> None:
    raw = HEAD_CHUNKED + chunked(EVENTS, 7, b' ; name="v;x" ;y',
                                 b"X-Trailer: 1\r\nX-Other: two\r\n")
    for reads in splits(raw):
        p, body = run(reads)
        assert body == EVENTS and p.done and p.keep_alive


def test_interim_answers_are_skipped_and_bare_lf_heads_read() -> None:
    raw = (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
           + WITH_LENGTH)
    for reads in splits(raw):
        p, body = run(reads)
        assert (p.status, body, "link" in p.headers) == (200, EVENTS, False)
    lf = b"HTTP/1.1 200 OK\nContent-Length: 4\nX-A: b\n\nabcd"
    p, body = run([lf])
    assert (p.status, body, p.headers["x-a"], p.done) == (200, b"abcd", "b", True)


def test_headers_case_folded_repeated_and_folded() -> None:
    raw = (b"HTTP/1.1 200 OK\r\nX-Thing: a\r\nx-thing: b\r\nX-Long: one\r\n two\r\n"
           b"TRANSFER-ENCODING: Chunked\r\n\r\n" + chunked(b"hi", 2))
    p, body = run([raw])
    assert p.headers["x-thing"] == "a, b" and p.headers["x-long"] == "one two"
    assert body == b"hi" and p.done


@pytest.mark.parametrize(("status", "reason"), [(404, "Not Found"), (500, ""),
                                                (503, "Service Unavailable")])
def test_error_answers_are_read_whole(status: int, reason: str) -> None:
    err = b'{"object":"error","message":"no such model"}'
    line = f"HTTP/1.1 {status} {reason}".rstrip().encode()
    raw = line + b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % \
        len(err) + err
    for reads in splits(raw):
        p, body = run(reads)
        assert (p.status, p.reason, body, p.done) == (status, reason, err, True)


def test_connection_close_and_http10_are_not_kept() -> None:
    p, _ = run([b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"])
    assert p.done and not p.keep_alive
    p, _ = run([b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"])
    assert p.done and not p.keep_alive
    p, _ = run([b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"])
    assert p.done and p.keep_alive
    p, _ = run([WITH_LENGTH + b"HTTP/1.1 200 OK\r\n"])  # bytes nobody asked for
    assert p.done and not p.keep_alive
    p, body = run([b"HTTP/1.1 204 No Content\r\n\r\n"])
    assert p.done and p.keep_alive and body == b""


def test_transfer_encoding_beats_content_length_and_closes() -> None:
    raw = HEAD_CHUNKED[:-2] + b"Content-Length: 3\r\n\r\n" + chunked(EVENTS, 50)
    p, body = run([raw])
    assert body == EVENTS and p.done and not p.keep_alive


@pytest.mark.parametrize("line", [b"HELLO", b"HTTP/1.1 2x0 OK", b"HTTP/2 200 OK",
                                  b"HTTP/1.1 2000 OK", b"HTTP/1.1 200OK", b"HTTP/1.1 101 Up",
                                  b"HTTP/1.1 099 low", b"http/1.1 200 OK", b""])
def test_bad_status_lines_raise(line: bytes) -> None:
    with pytest.raises(ParseError):
        run([line + b"\r\nContent-Length: 0\r\n\r\n"])


@pytest.mark.parametrize("head", [b"X-Bad\r\n", b"X-Bad : v\r\n", b": v\r\n",
                                  b"Content-Length: -1\r\n", b"Content-Length: 3, 4\r\n",
                                  b"Content-Length: 0x3\r\n"])
def test_bad_headers_raise(head: bytes) -> None:
    with pytest.raises(ParseError):
        run([b"HTTP/1.1 200 OK\r\n" + head + b"\r\n"])


@pytest.mark.parametrize("size", [b"zz", b"0x10", b"-1", b"+1", b"1 2", b"1_0", b"",
                                  b"1234567890abcdef0"])
def test_bad_chunk_sizes_raise(size: bytes) -> None:
    with pytest.raises(ParseError):
        chunk_size(size)
    with pytest.raises(ParseError):
        run([HEAD_CHUNKED + size + b"\r\nabc\r\n"])


def test_equal_repeated_lengths_and_extension_whitespace_are_taken() -> None:
    assert chunk_size(b"1A ; ext=1") == 26
    p, body = run([b"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok"])
    assert body == b"ok" and p.done


def test_chunk_data_must_end_in_crlf() -> None:
    with pytest.raises(ParseError):
        run([HEAD_CHUNKED + b"3\r\nabcX\r\n0\r\n\r\n"])
    p, body = run([HEAD_CHUNKED + b"3\nabc\n0\n\n"])  # bare LF, as the head allows
    assert body == b"abc" and p.done


@pytest.mark.parametrize("raw", [b"", b"HTTP/1.1 20", b"HTTP/1.1 200 OK\r\nX-A: 1\r\n"])
def test_eof_before_the_head_ended_raises(raw: bytes) -> None:
    p, _ = run([raw])
    assert p.status == 0
    with pytest.raises(ParseError, match="before a status line"):
        p.eof()


@pytest.mark.parametrize("cut", [len(HEAD_CHUNKED) + 1, len(CHUNKED) - 3])
def test_eof_mid_chunked_body_raises_after_the_status(cut: int) -> None:
    p, _ = run([CHUNKED[:cut]])
    assert p.status == 200 and not p.done
    with pytest.raises(ParseError, match="chunked body"):
        p.eof()


def test_eof_short_of_the_content_length_raises() -> None:
    p, body = run([WITH_LENGTH[:-10]])
    assert body == EVENTS[:-10]
    with pytest.raises(ParseError, match="10 more bytes"):
        p.eof()


def test_endless_head_or_chunk_line_raises_instead_of_growing() -> None:
    p = ResponseParser()
    with pytest.raises(ParseError):
        for _ in range(100):
            p.feed(b"HTTP/1.1 200 OK\r\nX: " + b"a" * 1024)
    p = ResponseParser()
    p.feed(HEAD_CHUNKED)
    with pytest.raises(ParseError):
        for _ in range(20):
            p.feed(b"f" * 1024)


def test_request_head_is_a_post_with_length_last_and_refuses_injection() -> None:
    head = request_head("/v1/completions", "h:8000", {"Content-Type": "application/json",
                                                      "X-Request-ID": "r1"}, 12)
    assert head == (b"POST /v1/completions HTTP/1.1\r\nHost: h:8000\r\n"
                    b"Content-Type: application/json\r\nX-Request-ID: r1\r\n"
                    b"Content-Length: 12\r\n\r\n")
    for bad in ({"X-A": "v\r\nX-Injected: 1"}, {"X-A": "v\n"}, {"X\r\nB": "v"}):
        with pytest.raises(ValueError):
            request_head("/", "h", bad, 0)


def test_only_plain_http_urls_take_the_pool() -> None:
    t = target("http://127.0.0.1:8000/v1/completions?x=1")
    assert t is not None and (t.host, t.port, t.path, t.authority) == \
        ("127.0.0.1", 8000, "/v1/completions?x=1", "127.0.0.1:8000")
    t6 = target("http://[::1]/v1/chat/completions")
    assert t6 is not None and (t6.host, t6.port, t6.authority) == ("::1", 80, "[::1]")
    for url in ("https://h/v1/completions", "http://u:p@h/v1/completions",
                "http://h/a b", "http://h:99999/x", "http:///x"):
        assert target(url) is None, url


def captures() -> list[dict[str, object]]:
    cases: list[dict[str, object]] = json.loads(CAPTURES.read_text())["cases"]
    return cases


@pytest.mark.parametrize("case", captures(), ids=lambda c: str(c["name"]))
def test_captured_responses_parse_as_read_and_at_every_split(case: dict[str, object]
                                                              ) -> None:
    reads = [base64.b64decode(r) for r in case["reads"]]  # type: ignore[attr-defined]
    raw = b"".join(reads)
    name = str(case["name"])
    p, body = run(reads)
    if name.endswith("-cut"):
        assert p.status == 200 and not p.done
        with pytest.raises(ParseError):
            p.eof()
        return
    if name.endswith("-close"):
        assert not p.keep_alive
    assert p.done, name
    if "404" in name or "500" in name:
        assert p.status in (404, 500) and json.loads(body)
        return
    assert p.status == 200 and p.headers["content-type"].startswith("text/event-stream")
    events = SSEDecoder().feed(body)
    assert events[-1] == b"[DONE]"
    payloads = [json.loads(e) for e in events[:-1]]
    assert payloads[-1]["usage"]["completion_tokens"] >= 1
    for reads2 in [[raw[:i], raw[i:]] for i in range(0, len(raw) + 1, 7)]:
        assert run(reads2)[1] == body


def test_a_head_the_previous_response_had_is_taken_as_read() -> None:
    """A server's streamed answers differ in the Date line only (once a second): the
    next response with the same head bytes takes the previous reading, and parses its
    body the same at every split; a different head is parsed afresh."""
    first, _ = run([CHUNKED])
    for reads in splits(CHUNKED):
        p = ResponseParser(first)
        assert b"".join(p.feed(r) for r in reads) == EVENTS
        assert p.done and p.keep_alive and p.status == 200
        assert p.headers["transfer-encoding"] == "chunked"
    p = ResponseParser(first)
    p.feed(CHUNKED)
    assert p.headers is first.headers  # taken, not parsed
    other = CHUNKED.replace(b"text/event-stream", b"text/event-strea2")
    p = ResponseParser(first)
    assert p.feed(other) == EVENTS and p.headers is not first.headers
    assert p.headers["content-type"] == "text/event-strea2"
    # the state right after the head comes along: a length, a close
    closing = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\n"
    a, _ = run([closing + b"abc"])
    b = ResponseParser(a)
    assert b.feed(closing + b"ab") == b"ab" and not b.done
    assert b.feed(b"c") == b"c" and b.done and not b.keep_alive
    # after an interim answer, nothing is known; parsers do not chain
    c, _ = run([b"HTTP/1.1 100 Continue\r\n\r\n" + CHUNKED])
    assert ResponseParser(c).feed(CHUNKED) == EVENTS
    assert ResponseParser(ResponseParser(first))._like is None
