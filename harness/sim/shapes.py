"""Response bodies shaped like vLLM's OpenAI-compatible server (compact JSON, vLLM's key
order), built as strings on the hot path: one SSE chunk per engine step.

Completions stream: one chunk per step with `text` (vLLM sends no empty first chunk for
completions), the last one with finish_reason; chat stream: a role-only delta first
(`{"role": "assistant", "content": ""}`), then content deltas; with
stream_options.include_usage a final chunk with `choices: []` and `usage`; then
`data: [DONE]`.
"""

from __future__ import annotations

import json
from typing import Any

DONE = b"data: [DONE]\n\n"
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def dumps(obj: Any) -> str:
    return _dumps(obj)


class StreamShape:
    """Pre-rendered prefix of every chunk of one response."""

    def __init__(self, *, chat: bool, request_id: str, created: int, model: str) -> None:
        self.chat = chat
        obj = "chat.completion.chunk" if chat else "text_completion"
        self._head = (f'{{"id":{dumps(request_id)},"object":"{obj}","created":{created},'
                      f'"model":{dumps(model)},')

    def role(self) -> bytes:
        return (f'data: {self._head}"choices":[{{"index":0,"delta":{{"role":"assistant",'
                f'"content":""}},"logprobs":null,"finish_reason":null}}]}}\n\n').encode()

    def token(self, text: str, finish: str | None) -> bytes:
        fin = "null" if finish is None else f'"{finish}"'
        if self.chat:
            stop = ',"stop_reason":null' if finish is not None else ""
            choice = (f'{{"index":0,"delta":{{"content":{dumps(text)}}},"logprobs":null,'
                      f'"finish_reason":{fin}{stop}}}')
        else:
            choice = (f'{{"index":0,"text":{dumps(text)},"logprobs":null,'
                      f'"finish_reason":{fin},"stop_reason":null}}')
        return f'data: {self._head}"choices":[{choice}]}}\n\n'.encode()

    def usage(self, prompt: int, completion: int) -> bytes:
        return (f'data: {self._head}"choices":[],"usage":{usage_json(prompt, completion)}}}'
                '\n\n').encode()


def usage_json(prompt: int, completion: int) -> str:
    return (f'{{"prompt_tokens":{prompt},"total_tokens":{prompt + completion},'
            f'"completion_tokens":{completion}}}')


def completion_body(*, request_id: str, created: int, model: str, text: str,
                    prompt: int, completion: int, finish: str = "length") -> dict[str, Any]:
    return {
        "id": request_id, "object": "text_completion", "created": created, "model": model,
        "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish,
                     "stop_reason": None, "prompt_logprobs": None}],
        "usage": {"prompt_tokens": prompt, "total_tokens": prompt + completion,
                  "completion_tokens": completion, "prompt_tokens_details": None},
    }


def chat_body(*, request_id: str, created: int, model: str, text: str,
              prompt: int, completion: int, finish: str = "length") -> dict[str, Any]:
    return {
        "id": request_id, "object": "chat.completion", "created": created, "model": model,
        "choices": [{"index": 0,
                     "message": {"role": "assistant", "content": text, "tool_calls": []},
                     "logprobs": None, "finish_reason": finish, "stop_reason": None}],
        "usage": {"prompt_tokens": prompt, "total_tokens": prompt + completion,
                  "completion_tokens": completion, "prompt_tokens_details": None},
        "prompt_logprobs": None,
    }


def error_body(message: str, err_type: str, code: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": err_type, "param": None, "code": code}}
