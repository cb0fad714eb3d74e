"""Remove secrets from a config snapshot before it goes into a customer document.

A key is secret when one of its `_`/`-`/`.` separated words is password, passwd, secret or
passphrase, or its last word is token (so `hf_token` goes, `max_tokens` and the decision
setting `max_token_disagreement` stay), or it contains api_key / apikey / key_passphrase.
Credentials inside URLs (`scheme://user:pw@host`) are masked too.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "***redacted***"
_WORDS = {"password", "passwd", "secret", "passphrase"}
_JOINED = ("api_key", "apikey", "api-key", "key_passphrase", "private_key", "secret")
_URL_CRED = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]+:)[^@\s]+@")
_ARG = re.compile(r"^(?P<flag>--?[A-Za-z0-9_.-]+)=(?P<value>.*)$")


def is_secret_key(key: str) -> bool:
    low = key.lower()
    if any(j in low for j in _JOINED):
        return True
    words = [w for w in re.split(r"[_\-.\s]+", low) if w]
    return any(word in _WORDS for word in words) or words[-1:] == ["token"]


def redact_text(text: str) -> str:
    return _URL_CRED.sub(lambda m: m.group("head") + REDACTED + "@", text)


def redact_overrides(items: list[str]) -> list[str]:
    """`--set key=value` items: a secret-looking key keeps its name and loses its value."""
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        out.append(f"{key}={REDACTED}" if sep and is_secret_key(key) and value
                   else redact_text(item))
    return out


def redact(value: Any) -> Any:
    """A copy of a JSON-like value with secret keys' values replaced."""
    if isinstance(value, dict):
        return {k: (REDACTED if is_secret_key(str(k)) and v not in (None, "")
                    else redact(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


def redact_args(args: list[Any]) -> list[str]:
    """Command-line args: `--password=x` and `--token x` lose their values."""
    out: list[str] = []
    hide_next = False
    for raw in args:
        arg = str(raw)
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        m = _ARG.match(arg)
        if m and is_secret_key(m.group("flag").lstrip("-")):
            out.append(f"{m.group('flag')}={REDACTED}")
        elif arg.startswith("-") and is_secret_key(arg.lstrip("-")):
            out.append(arg)
            hide_next = True
        else:
            out.append(redact_text(arg))
    return out
