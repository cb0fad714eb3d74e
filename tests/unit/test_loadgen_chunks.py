"""The token-chunk template: a shortcut that must accept exactly what json.loads accepts."""

from __future__ import annotations

import json

import pytest

from harness.loadgen.chunks import _SCANSTR, template
from harness.loadgen.client import build_body
from harness.loadgen.records import RequestSpec

HEAD = '{"id":"cmpl-7","object":"text_completion","created":1,"model":"m","choices":[{"index":0,'


def completion(text: str, finish: str | None = None) -> str:
    return HEAD + f'"text":{json.dumps(text)},"logprobs":null,"finish_reason":' \
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
