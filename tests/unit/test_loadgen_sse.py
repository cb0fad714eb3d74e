"""The SSE decoder: any split of the byte stream gives the same events; no line limit."""

from __future__ import annotations

import json

import pytest

from harness.loadgen.sse import SSEDecoder

# A vLLM-shaped completions stream (chunk, finish chunk, usage chunk, [DONE]).
STREAM = (
    b'data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m",'
    b'"choices":[{"index":0,"text":" Hello","logprobs":null,"finish_reason":null}]}\n\n'
    b'data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m",'
    b'"choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length"}]}\n\n'
    b'data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m",'
    b'"choices":[],"usage":{"prompt_tokens":3,"total_tokens":5,"completion_tokens":2}}\n\n'
    b"data: [DONE]\n\n"
)


def decode_all(parts: list[bytes]) -> list[bytes]:
    dec = SSEDecoder()
    out: list[bytes] = []
    for p in parts:
        out.extend(dec.feed(p))
    return out


def test_whole_stream_gives_four_events() -> None:
    events = decode_all([STREAM])
    assert len(events) == 4
    assert json.loads(events[0])["choices"][0]["text"] == " Hello"
    assert json.loads(events[2])["usage"]["completion_tokens"] == 2
    assert events[3] == b"[DONE]"


def test_every_split_point_gives_the_same_events() -> None:
    whole = decode_all([STREAM])
    for cut in range(1, len(STREAM)):
        assert decode_all([STREAM[:cut], STREAM[cut:]]) == whole, cut


def test_one_byte_at_a_time() -> None:
    assert decode_all([STREAM[i:i + 1] for i in range(len(STREAM))]) == decode_all([STREAM])


@pytest.mark.parametrize("eol", [b"\r\n", b"\r"])
def test_crlf_and_cr_line_ends(eol: bytes) -> None:
    stream = STREAM.replace(b"\n", eol)
    assert decode_all([stream]) == decode_all([STREAM])
    # a CRLF split between two reads must not make an extra blank line
    parts = [stream[i:i + 7] for i in range(0, len(stream), 7)]
    assert decode_all(parts) == decode_all([STREAM])


def test_comments_fields_and_multiline_data() -> None:
    stream = (b": ping\n\n"
              b"event: message\nid: 7\nretry: 100\ndata: first\ndata:second\n\n"
              b"data\n\n"
              b"\n\n\ndata: after blanks\n\n")
    assert decode_all([stream]) == [b"first\nsecond", b"", b"after blanks"]


def test_one_megabyte_event_in_64k_reads() -> None:
    text = "x" * (1 << 20)
    event = b'data: {"choices":[{"text":"' + text.encode() + b'"}]}\n\n'
    parts = [event[i:i + 65536] for i in range(0, len(event), 65536)]
    dec = SSEDecoder()
    out: list[bytes] = []
    for p in parts[:-1]:
        out.extend(dec.feed(p))
        assert out == []
    assert dec.pending == len(event) - len(parts[-1])
    out.extend(dec.feed(parts[-1]))
    assert len(out) == 1
    assert len(json.loads(out[0])["choices"][0]["text"]) == 1 << 20
    assert dec.pending == 0


def test_unterminated_last_event_is_not_dispatched() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: complete\n\ndata: cut off") == [b"complete"]
    assert dec.pending == len(b"data: cut off")
    assert dec.close() == []
    assert dec.pending == 0


def test_event_per_read_fast_path_agrees_with_the_general_path() -> None:
    events = [e + b"\n\n" for e in STREAM.split(b"\n\n") if e]
    assert decode_all(events) == decode_all([STREAM])
    # a fast-path read after a partial one must still join the held-back bytes
    assert decode_all([b"data: a", b"bc\n\n", b"data: d\n\n"]) == [b"abc", b"d"]
