"""The pool's hot path on bytes: a 200's chunked body whose whole chunks the reader takes
raw (ChunkReader.take: size line, template frames, literal), each read stamped once,
must record exactly what the plain path records: every read de-chunked by the HTTP
parser, then every event parsed in full as JSON (no template, no batch). Checked on the
real captured responses (tests/fixtures/http1/captures.json) read as captured, split in
two at every byte and one byte a read, and on random streams with escapes, non-ASCII
text, CRLF events, events split across chunks, chunk extensions, stream errors and bad
chunks, cut into reads at random. No sockets: a connection object fed by hand."""

from __future__ import annotations

import asyncio
import base64
import json
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.loadgen import chunks, http1_pool
from harness.loadgen.chunks import ChunkReader
from harness.loadgen.http1 import ResponseParser
from harness.loadgen.records import RequestRecord

CAPTURES = Path(__file__).parents[1] / "fixtures" / "http1" / "captures.json"
HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n")


class _Transport:
    def __init__(self) -> None:
        self.closed = False

    def write(self, data: bytes) -> None:
        pass

    def writelines(self, data: object) -> None:
        pass

    def is_closing(self) -> bool:
        return self.closed

    def abort(self) -> None:
        self.closed = True


@contextmanager
def plain_path(plain: bool) -> Iterator[None]:
    """plain=True: no raw chunk is taken and no template learned, so every read goes
    through the HTTP parser and every event through json's scanner (the reference)."""
    if not plain:
        yield
        return
    mp = pytest.MonkeyPatch()
    mp.setattr(ChunkReader, "take", lambda self, now, data: 0)
    mp.setattr(chunks, "template", lambda s, piece, chat: None)
    try:
        yield
    finally:
        mp.undo()


def outcome(reads: list[bytes], chat: bool, plain: bool = False) -> tuple[object, ...]:
    """The reads into one connection, read i at time i + 1: the record and how the
    request ended, as the pool's caller sees them (for a 2nd response on the same
    connection too: a head the parser knows takes another path)."""
    loop = asyncio.new_event_loop()
    clock = [0.0]
    mp = pytest.MonkeyPatch()
    mp.setattr(http1_pool, "_monotonic", lambda: clock[0])
    try:
        with plain_path(plain):
            conn = http1_pool._Conn(loop)
            conn.connection_made(_Transport())  # type: ignore[arg-type]
            got: list[tuple[object, ...]] = []
            for _ in range(2):
                rec = RequestRecord(idx=0, instance=0, doc_id=0, warmup=False, scheduled=0.0)
                reader = ChunkReader(rec, chat, 0.0)
                fut = conn.start(b"", b"", reader, 1e18)
                for i, data in enumerate(reads):
                    if fut.done():
                        break
                    clock[0] = float(i + 1)
                    conn.data_received(data)
                if not fut.done():
                    clock[0] = float(len(reads) + 1)
                    conn.connection_lost(None)
                out = fut.result()
                reader.close(7)
                if out.kind is None and not out.stopped and out.status == 200:
                    reader.end()
                got.append((out.status, out.kind, out.stopped, out.last, conn.closed,
                            rec.chunk_times, rec.ttft, rec.ttft_text, rec.e2el,
                            rec.output_tokens, rec.prompt_tokens, rec.usage_reported,
                            rec.error_kind, rec.error, rec.finish_reason, reader.text_chunks,
                            reader.done, reader.finished))
                if conn.closed:
                    break
            return tuple(got)
    finally:
        mp.undo()
        loop.close()


def captures() -> list[dict[str, object]]:
    cases: list[dict[str, object]] = json.loads(CAPTURES.read_text())["cases"]
    return cases


@pytest.mark.parametrize("case", captures(), ids=lambda c: str(c["name"]))
def test_captured_responses_record_as_the_plain_path_records(case: dict[str, object]
                                                             ) -> None:
    reads = [base64.b64decode(r) for r in case["reads"]]  # type: ignore[attr-defined]
    raw = b"".join(reads)
    chat = "chat" in str(case["name"])
    cuts: list[list[bytes]] = [reads, [raw[i:i + 1] for i in range(len(raw))]]
    cuts += [[raw[:i], raw[i:]] for i in range(1, len(raw))]
    for cut in cuts:
        assert outcome(cut, chat) == outcome(cut, chat, plain=True), cut
    if "-completions" in str(case["name"]) or "-chat" in str(case["name"]):
        whole = outcome(reads, chat)[0]
        assert whole[0] == 200 and whole[1] is None and whole[12] is None  # completed
        assert whole[5] and whole[9] >= 3  # type: ignore[operator]  # chunks, tokens


def _completion(text: str, finish: str | None, ascii_only: bool, rid: str) -> str:
    return ('{"id":"cmpl-' + rid + '","object":"text_completion","created":1,"model":"m",'
            '"choices":[{"index":0,"text":' + json.dumps(text, ensure_ascii=ascii_only)
            + ',"logprobs":null,"finish_reason":' + json.dumps(finish)
            + ',"stop_reason":null}]}')


def _chat(text: str | None, finish: str | None, ascii_only: bool, rid: str) -> str:
    delta = ('{"role":"assistant","content":""}' if text is None
             else '{"content":' + json.dumps(text, ensure_ascii=ascii_only) + "}")
    return ('{"id":"chatcmpl-' + rid + '","object":"chat.completion.chunk","created":1,'
            '"model":"m","choices":[{"index":0,"delta":' + delta
            + ',"logprobs":null,"finish_reason":' + json.dumps(finish) + "}]}")


def random_stream(rng: random.Random, chat: bool) -> tuple[bytes, bool]:
    """A 200 with its events in a chunked body, as servers write them (one event a chunk)
    and otherwise (events split across chunks, several in one, chunk extensions); and
    whether a chunk in it is malformed."""
    texts = [" tok", "", 'say "hi"', "\\", "中文", "a\tb", "x\u2028", "\x01", "end", "é"]
    rid = f"{rng.randrange(1 << 32):08x}"
    events: list[bytes] = []
    if chat:
        events.append(b"data: " + _chat(None, None, True, rid).encode() + b"\n\n")
    for _ in range(rng.randint(0, 14)):
        text = rng.choice(texts)
        body = (_chat(text, None, rng.random() < 0.5, rid) if chat
                else _completion(text, None, rng.random() < 0.5, rid))
        if text == "\x01":  # a raw control character: not JSON (bad_chunk)
            body = body.replace("\\u0001", "\x01")
        sep = "\r\n\r\n" if rng.random() < 0.05 else "\n\n"
        events.append(f"data: {body}{sep}".encode())
    if rng.random() < 0.08:  # the server's error, mid-stream
        events.insert(rng.randint(0, len(events)),
                      b'data: {"error":{"message":"boom","code":500}}\n\n')
    if rng.random() < 0.05:
        events.insert(rng.randint(0, len(events)), b"data: {not json}\n\n")
    if rng.random() < 0.05:
        events.insert(rng.randint(0, len(events)), b": ping\n\n")
    last = _chat("", "length", True, rid) if chat else _completion("", "length", True, rid)
    if rng.random() < 0.9:
        events.append(f"data: {last}\n\n".encode())
        if rng.random() < 0.7:
            events.append(b'data: {"id":"cmpl-' + rid.encode() + b'","choices":[],'
                          b'"usage":{"prompt_tokens":7,"completion_tokens":5}}\n\n')
        if rng.random() < 0.9:
            events.append(b"data: [DONE]\n\n")
    body = b"".join(events)
    if rng.random() < 0.7 or len(body) < 9:  # one event a chunk
        pieces = events
    else:  # anywhere
        cuts = sorted(rng.sample(range(1, len(body)), rng.randint(0, 8)))
        pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    ext = b";x=1" if rng.random() < 0.05 else b""
    hexes = "%x" if rng.random() < 0.9 else "%X"
    framed = [(hexes % len(p)).encode() + ext + b"\r\n" + p + b"\r\n" for p in pieces if p]
    bad = bool(framed) and rng.random() < 0.05
    if bad:  # a malformed chunk: a bad size, or no CRLF after its data
        k = rng.randrange(len(framed))
        framed[k] = (b"zz" + framed[k]) if rng.random() < 0.5 else framed[k][:-2] + b"XY"
    return HEAD + b"".join(framed) + b"0\r\n\r\n", bad


def body_of(raw: bytes) -> bytes:
    """The events of random_stream's response, de-chunked (what aiohttp hands over)."""
    return ResponseParser().feed(raw)


@pytest.mark.parametrize("chat", [False, True], ids=["completions", "chat"])
def test_random_streams_record_as_the_plain_path_records(chat: bool) -> None:
    rng = random.Random(246 + chat)
    for _ in range(400):
        raw, bad = random_stream(rng, chat)
        if rng.random() < 0.5:  # reads at chunk ends, as a server's writes arrive
            ends = [i + 2 for i in range(len(raw) - 1) if raw[i:i + 2] == b"\r\n"]
            cuts = sorted(rng.sample(ends, min(len(ends), rng.randint(1, 12))))
        else:
            cuts = sorted(rng.sample(range(1, len(raw)), rng.randint(0, 6)))
        reads = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True) if b > a]
        fast, plain = outcome(reads, chat), outcome(reads, chat, plain=True)
        if not bad or fast == plain:
            assert fast == plain, raw
            continue
        # A malformed chunk fails the request either way, but the parser that raises drops
        # the body it had de-chunked from that read (`cut`), while the whole chunks taken
        # before it are recorded, and may end it first (a server error, a bad event).
        assert len(fast) == len(plain) == 1, raw
        (f, p) = (fast[0], plain[0])
        assert p[1] == "cut" and (f[1] == "cut" or f[2]), raw
        assert (f[0], f[3], f[4]) == (p[0], p[3], p[4]) == (200, f[3], True), raw
        times_f, times_p = f[5], p[5]
        assert isinstance(times_f, list) and isinstance(times_p, list)
        assert times_f[:len(times_p)] == times_p and set(times_f[len(times_p):]) <= {f[3]}


def test_a_failure_in_a_taken_chunk_stops_the_request_at_that_read() -> None:
    """An error event after the template: the read that brings it ends the request
    (stream_error, stopped, the connection closed), not the end of the response."""
    rid = "abc"
    tok = f"data: {_completion(' tok', None, True, rid)}\n\n".encode()
    err = b'data: {"error":{"message":"out of memory"}}\n\n'

    def chunk(p: bytes) -> bytes:
        return b"%x\r\n" % len(p) + p + b"\r\n"

    reads = [HEAD + chunk(tok), chunk(tok) + chunk(tok), chunk(err), chunk(tok)]
    got = outcome(reads, False)
    assert got == outcome(reads, False, plain=True)
    status, kind, stopped, last, closed, times, *_rest = got[0]
    assert (status, kind, stopped, last, closed) == (200, None, True, 3.0, True)
    assert times == [1.0, 2.0, 2.0]
    assert got[0][12] == "stream_error" and "out of memory" in str(got[0][13])


def test_one_event_a_chunk_is_taken_whole_and_the_parser_left_between_chunks() -> None:
    """What the hot path does per read at saturation: the chunks it takes are gone from
    the read, the parser never sees them and stays where it was."""
    rec = RequestRecord(idx=0, instance=0, doc_id=0, warmup=False, scheduled=0.0)
    reader = ChunkReader(rec, False, 0.0)
    tok = f"data: {_completion(' tok', None, True, 'r')}\n\n".encode()
    fin = f"data: {_completion('', 'length', True, 'r')}\n\n".encode()

    def chunk(p: bytes) -> bytes:
        return b"%x\r\n" % len(p) + p + b"\r\n"

    assert reader.take(1.0, chunk(tok)) == len(chunk(tok))  # learns the template
    two = chunk(tok) + chunk(tok)
    assert reader.take(2.0, two + b"1") == len(two)  # a size line cut by the read: left
    assert reader.take(3.0, chunk(tok)[:-1]) == 0  # a chunk without its CRLF: left
    # the finish chunk through the per-event path; the last (empty) one left to the parser
    assert reader.take(4.0, chunk(fin) + b"0\r\n\r\n") == len(chunk(fin))
    assert rec.chunk_times == [1.0, 2.0, 2.0, 4.0]
    assert reader.text_chunks == 3 and rec.finish_reason == "length"


def feed_outcome(reads: list[bytes], chat: bool, plain: bool = False) -> tuple[object, ...]:
    """A body's reads into ChunkReader.feed (the aiohttp transport's path), read i at
    time i + 1."""
    with plain_path(plain):
        rec = RequestRecord(idx=0, instance=0, doc_id=0, warmup=False, scheduled=0.0)
        reader = ChunkReader(rec, chat, 0.0)
        ok = True
        for i, data in enumerate(reads):
            ok = reader.feed(float(i + 1), data)
            if not ok:
                break
        reader.close(7)
        if ok:
            reader.end()
        return (ok, rec.chunk_times, rec.ttft, rec.ttft_text, rec.e2el, rec.output_tokens,
                rec.usage_reported, rec.error_kind, rec.error, rec.finish_reason,
                reader.text_chunks, reader.done, reader.finished)


@pytest.mark.parametrize("chat", [False, True], ids=["completions", "chat"])
def test_feed_records_as_the_plain_path_records(chat: bool) -> None:
    """The body as aiohttp hands it over (reads of events, not chunks): the first events
    one at a time until the template is learned, then the batch path, conclude what
    every event parsed in full concludes, however the body is cut into reads."""
    rng = random.Random(135 + chat)
    for _ in range(300):
        raw, bad = random_stream(rng, chat)
        if bad:  # a malformed chunk: not a body aiohttp would hand over
            continue
        body = body_of(raw)
        if rng.random() < 0.5:  # reads at event ends
            ends = [i + 2 for i in range(len(body) - 1) if body[i:i + 2] == b"\n\n"]
            cuts = sorted(rng.sample(ends, min(len(ends), rng.randint(0, 8))))
        else:
            cuts = sorted(rng.sample(range(1, len(body)), rng.randint(0, 6))) \
                if len(body) > 7 else []
        reads = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True) if b > a]
        assert feed_outcome(reads, chat) == feed_outcome(reads, chat, plain=True), body


@pytest.mark.parametrize("size", [1, 7, 64, 1000])
def test_events_split_across_small_chunks_record_as_the_plain_path_records(size: int
                                                                           ) -> None:
    """A server (or proxy) that cuts events into small chunks: a chunk that leaves an
    event open hands the rest of the read to the parser (one decoder call, not one a
    chunk), and the record is the plain path's."""
    case = next(c for c in captures() if c["name"] == "sim-chat")
    raw = b"".join(base64.b64decode(r) for r in case["reads"])  # type: ignore[attr-defined]
    head = raw.partition(b"\r\n\r\n")[0]
    body = ResponseParser().feed(raw)
    pieces = [body[i:i + size] for i in range(0, len(body), size)]
    rechunked = head + b"\r\n\r\n" + b"".join(
        b"%x\r\n" % len(p) + p + b"\r\n" for p in pieces) + b"0\r\n\r\n"
    for reads in ([rechunked], [rechunked[i:i + 300] for i in range(0, len(rechunked), 300)]):
        got = outcome(reads, True)
        assert got == outcome(reads, True, plain=True)
        assert got[0][1] is None and got[0][12] is None and got[0][9] == 5
