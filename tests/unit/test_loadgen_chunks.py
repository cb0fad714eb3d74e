"""The token-chunk template: a shortcut that must accept exactly what json.loads accepts."""

from __future__ import annotations

import json

import pytest

from harness.loadgen.chunks import _SCANSTR, template
from harness.loadgen.client import build_body
from harness.loadgen.records import RequestSpec

HEAD = '{"id":"cmpl-7","object":"text_completion","created":1,"model":"m","choices":[{"index":0,'


def completion(text: str, finish: str | None = None, ascii_only: bool = True) -> str:
    literal = json.dumps(text, ensure_ascii=ascii_only)
    return HEAD + f'"text":{literal},"logprobs":null,"finish_reason":' \
                  f'{json.dumps(finish)},"stop_reason":null}}]}}'


def shortcut(prefix: str, tail: str, s: str) -> str | None:
    """What the client's fast path concludes about `s` (None: take the full parse)."""
    if not (s.startswith(prefix) and s.endswith(tail)):
        return None
    txt, end = _SCANSTR(s, len(prefix))
    return txt if end == len(s) - len(tail) else None


@pytest.mark.parametrize("text", [" tok", "", 'say "hi"', "\\n", "中文 ok", "\u2028", "a\tb"])
def test_same_shape_other_text_matches_full_parse(text: str) -> None:
    learned = template(completion(" first"), " first", chat=False)
    assert learned is not None
    prefix, tail = learned
    s = completion(text)
    assert shortcut(prefix, tail, s) == json.loads(s)["choices"][0]["text"]


def test_other_shapes_fall_back_to_the_full_parse() -> None:
    prefix, tail = template(completion(" first"), " first", chat=False) or ("", "")
    assert shortcut(prefix, tail, completion(" last", "length")) is None
    assert shortcut(prefix, tail, HEAD + '"text":"a","x":1,"logprobs":null,"finish_reason":'
                                         'null,"stop_reason":null}]}') is None
    bad = prefix + 'a\x01b"' + tail  # a raw control character: json.loads rejects it too
    with pytest.raises(ValueError):
        shortcut(prefix, tail, bad)
    with pytest.raises(ValueError):
        json.loads(bad)


def test_chat_delta_template() -> None:
    s = ('{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m",'
         '"choices":[{"index":0,"delta":{"content":" x"},"logprobs":null,'
         '"finish_reason":null}]}')
    prefix, tail = template(s, " x", chat=True) or ("", "")
    assert prefix.endswith('"delta":{"content":"') and tail.startswith('},"logprobs"')
    other = s.replace('" x"', '"yz"')
    assert shortcut(prefix, tail, other) == "yz"


def test_ambiguous_or_mismatched_text_learns_nothing() -> None:
    twice = HEAD + '"text":"a","logprobs":null,"finish_reason":null}],"x":{"text":"b"}}'
    assert template(twice, "a", chat=False) is None
    assert template(completion("abc"), "different", chat=False) is None
    assert template('{"choices":[{"text": 5}]}', "5", chat=False) is None


def test_request_bodies() -> None:
    spec = RequestSpec("Document 1. Hello", 32, 1)
    comp = json.loads(build_body(spec, "m", "completions"))
    assert comp == {"model": "m", "prompt": "Document 1. Hello", "max_tokens": 32,
                    "stream": True, "stream_options": {"include_usage": True}}
    chat = json.loads(build_body(spec, "m", "chat", {"temperature": 0}))
    assert chat["messages"] == [{"role": "user", "content": "Document 1. Hello"}]
    assert chat["max_completion_tokens"] == 32 and chat["temperature"] == 0


def _read(stream: bytes, cuts: list[int], fast: bool) -> tuple[object, ...]:
    """A stream fed in reads cut at `cuts`, each read 1 s after the last; the record's
    outcome (fast=False: the per-event path only, the batch matcher never built)."""
    from harness.loadgen import chunks
    from harness.loadgen.records import RequestRecord

    rec = RequestRecord(idx=0, instance=0, doc_id=0, warmup=False, scheduled=0.0)
    reader = chunks.ChunkReader(rec, chat=False, sent=0.0)
    ok, last = True, 0
    for i, cut in enumerate([*cuts, len(stream)]):
        if ok and cut > last:
            if not fast:
                reader._frame = None
            ok = reader.feed(float(i + 1), stream[last:cut])
        last = max(last, cut)
    if ok:
        reader.end()
    reader.close(7)
    return (ok, rec.chunk_times, rec.ttft_text, rec.output_tokens, rec.error_kind,
            rec.finish_reason, reader.text_chunks)


def test_batched_events_read_as_the_per_event_path_reads_them() -> None:
    """The batch matcher (event_run) is a shortcut: on any stream and any cut into reads
    (texts with escapes, non-ASCII, raw control characters, empty ones, CRLF events, a
    finish chunk, usage, [DONE]) it concludes what the per-event path concludes."""
    import random

    rng = random.Random(24)
    texts = [" tok", "", 'say "hi"', "\\", "中文", "a\tb", "x\u2028", "\x01", "end"]
    usage = (b'data: {"id":"cmpl-7","choices":[],"usage":{"prompt_tokens":7,'
             b'"completion_tokens":5}}\n\n')
    for _ in range(400):
        events = []
        for _ in range(rng.randint(1, 12)):
            text = rng.choice(texts)
            body = (completion(text, ascii_only=rng.random() < 0.5) if text != "\x01"
                    else completion("a").replace('"a"', '"a\x01"'))
            sep = "\r\n\r\n" if rng.random() < 0.05 else "\n\n"
            events.append(f"data: {body}{sep}".encode())
        events.append(f"data: {completion('', 'length')}\n\n".encode())
        stream = b"".join(events) + (usage if rng.random() < 0.7 else b"") + b"data: [DONE]\n\n"
        cuts = sorted(rng.sample(range(1, len(stream)), rng.randint(0, 4)))
        if rng.random() < 0.5:  # reads at event boundaries, as servers write them
            ends = [i + 2 for i in range(len(stream)) if stream[i:i + 2] == b"\n\n"]
            cuts = sorted(rng.sample(ends, min(len(ends), rng.randint(1, 3))))
        assert _read(stream, cuts, fast=True) == _read(stream, cuts, fast=False), stream


def test_event_frame_is_the_template_around_any_text() -> None:
    from harness.loadgen.chunks import event_frame

    prefix, tail = template(completion(" first"), " first", chat=False) or ("", "")
    frame = event_frame(prefix, tail)
    assert frame is not None
    head, end = frame
    event = f"data: {completion('a')}\n\n".encode()
    assert event.startswith(head) and event.endswith(end)
    assert event[len(head):-len(end)] == b'a"'
    assert not f"data: {completion('a', 'length')}\n\n".encode().endswith(end)
    assert event_frame('{"a":\n"', "}") is None  # a line end inside the template
