"""Secrets in what a process was started with: hashed, so arms still compare, none leaks.

Why hashing and not dropping: "the accelerated arm runs with another API key" is still a
difference G3 must see. A value is replaced by `sha256:<first 12 hex>` when its name (an
environment variable, a command-line option, a JSON key) has a secret-looking word, and a
URL's password wherever it appears. Names are split into words on `_ - .` and camelCase;
a word counts when it is one of SECRET_WORDS (so TOKENIZERS_PARALLELISM and
--max-num-batched-tokens stay readable, HF_TOKEN and --api-key do not). Hashing is
idempotent: a value hashed by the probe is not hashed again by the comparison.

The hash is salted with a random value drawn once per process: the arms of a run are
compared inside one gate process (a resumed pair is measured again from its start), and
a weak password stored as a hash cannot be looked up in a dictionary of unsalted hashes.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence

SECRET_WORDS = frozenset({
    "TOKEN", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "PASS", "PASSPHRASE",
    "KEY", "KEYS", "APIKEY", "CREDENTIAL", "CREDENTIALS", "AUTH", "AUTHORIZATION",
    "COOKIE", "COOKIES",
})
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_HASHED = re.compile(r"sha256:[0-9a-f]{12}")
# scheme://user:PASSWORD@host
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*):([^/\s@]+)@")
# "name": "value" inside a JSON-valued option or variable
_JSON_PAIR = re.compile(r'("([^"\\]*)"\s*:\s*")((?:[^"\\]|\\.)*)(")')


def looks_secret(name: str) -> bool:
    """Whether a variable / option / key name has a secret-looking word in it."""
    return any(w.upper() in SECRET_WORDS for w in _WORDS.findall(name))


_SALT = os.urandom(16)  # this process's; never stored


def hash_secret(value: str) -> str:
    if _HASHED.fullmatch(value):
        return value
    digest = hashlib.sha256(_SALT + value.encode("utf-8", errors="surrogatepass")).hexdigest()
    return f"sha256:{digest[:12]}"


def redact_value(value: str) -> str:
    """Hash URL passwords and the values of secret-looking JSON keys inside a value."""
    value = _URL_PASSWORD.sub(lambda m: f"{m[1]}:{hash_secret(m[2])}@", value)
    if '"' in value:
        value = _JSON_PAIR.sub(lambda m: m[1] + hash_secret(m[3]) + m[4]
                               if looks_secret(m[2]) else m[0], value)
    return value


def redact(name: str, value: str) -> str:
    """A named value as it may be shown and stored."""
    return hash_secret(value) if looks_secret(name) else redact_value(value)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: redact(k, v) for k, v in env.items()}


def option_name(token: str) -> str | None:
    """`--api-key=x` -> `--api-key`; None for a positional or a negative number."""
    if not token.startswith("-") or token == "-" or _NUMBER.fullmatch(token):
        return None
    return token.split("=", 1)[0]


_NUMBER = re.compile(r"-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|-inf|-nan", re.IGNORECASE)


def redact_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """argv with the values of secret-looking options hashed (`--hf-token=x`, and the word
    after `--api-key` whatever it looks like: a secret may start with '-'); every word
    also through redact_value. After a bare `--` words are positionals."""
    out: list[str] = []
    pending = ended = False  # pending: the previous word was a secret option without '='
    for token in argv:
        if pending and token != "--":
            out.append(hash_secret(token))
            pending = False
            continue
        pending = False
        name = None if ended else option_name(token)
        if name == "--" and token == "--":
            ended = True
        elif name is not None and looks_secret(name.lstrip("-")):
            if "=" in token:
                out.append(f"{name}={hash_secret(token.split('=', 1)[1])}")
                continue
            pending = True
        out.append(redact_value(token))
    return tuple(out)
