"""The test-only lying proxy's rewrite (tests/sim_support/lying_proxy.py): what it changes
in a body or an SSE event, and that it leaves everything else byte for byte."""

from __future__ import annotations

import json

from sim_support.lying_proxy import Lies

USAGE = (b'data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m",'
         b'"choices":[],"usage":{"prompt_tokens":10,"total_tokens":135,'
         b'"completion_tokens":125}}')
LAST = (b'data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m",'
        b'"choices":[{"index":0,"text":" x","logprobs":null,"finish_reason":"length",'
        b'"stop_reason":null}]}')
MIDDLE = LAST.replace(b'"finish_reason":"length"', b'"finish_reason":null')


def test_usage_is_inflated_and_rounded() -> None:
    out = json.loads(Lies(usage_factor=1.048).event(USAGE)[6:])
    assert out["usage"] == {"prompt_tokens": 10, "total_tokens": 141, "completion_tokens": 131}
    assert Lies(1.048).tokens(100) == 105 and Lies(1.048).tokens(10) == 10
    assert Lies(1.05).tokens(10) == 11  # half up: 10.5 -> 11


def test_finish_reason_rewritten_only_where_set() -> None:
    lies = Lies(finish_reason="stop")
    assert json.loads(lies.event(LAST)[6:])["choices"][0]["finish_reason"] == "stop"
    assert lies.event(MIDDLE) == MIDDLE  # a null finish_reason stays null, same bytes
    body = {"choices": [{"finish_reason": "length"}], "usage": {"completion_tokens": 4,
                                                                 "total_tokens": 6}}
    assert Lies(1.5, "stop").rewrite(body)
    assert body == {"choices": [{"finish_reason": "stop"}],
                    "usage": {"completion_tokens": 6, "total_tokens": 8}}


def test_everything_else_passes_byte_for_byte() -> None:
    honest = Lies()
    for event in (USAGE, LAST, MIDDLE, b"data: [DONE]", b": comment", b"data: not json"):
        assert honest.event(event) == event
    assert Lies(1.048).event(b"data: [DONE]") == b"data: [DONE]"
    assert not Lies(1.048).rewrite({"error": {"code": 400}})
