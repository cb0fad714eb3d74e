"""A deterministic, invertible tokenizer: the same text gives the same ids in every process.

Runs of lower-case ASCII letters are cut into pieces of at most three letters from the
left; a space right before a run joins its first piece (GPT-style " the"); every other
character is its UTF-8 bytes. Ids are arithmetic (no Python hash(), no table on disk):
0..255 are bytes, then the pieces (1, 2, 3 letters; without, then with the space) in
base 26. English prose costs about two tokens a word, so a client must calibrate lengths
with /tokenize, as with a real tokenizer. The work happens in C (one regex, one dict
lookup per piece): a 32k-token document takes a few milliseconds.
"""

from __future__ import annotations

import re
from functools import cache
from itertools import product

_ALPHA = "abcdefghijklmnopqrstuvwxyz"
_PIECE = re.compile(r" ?[a-z]{1,3}|[^a-z]", re.S)
N_BYTES = 256


@cache
def _vocab() -> tuple[dict[str, int], list[str]]:
    pieces: list[str] = []
    for space in ("", " "):
        for n in (1, 2, 3):
            pieces.extend(space + "".join(p) for p in product(_ALPHA, repeat=n))
    to_id = {p: N_BYTES + i for i, p in enumerate(pieces)}
    for b in range(128):  # ASCII characters outside [a-z] are their byte
        ch = chr(b)
        if ch not in _ALPHA:
            to_id[ch] = b
    return to_id, pieces


def vocab_size() -> int:
    return N_BYTES + len(_vocab()[1])


def encode(text: str) -> list[int]:
    to_id = _vocab()[0]
    pieces = _PIECE.findall(text)
    ids = list(map(to_id.get, pieces))
    if None not in ids:
        return ids  # type: ignore[return-value]
    out: list[int] = []
    for piece_text, tid in zip(pieces, ids, strict=True):
        if tid is None:  # a non-ASCII character: its UTF-8 bytes
            out.extend(piece_text.encode("utf-8"))
        else:
            out.append(tid)
    return out


def decode(ids: list[int]) -> str:
    pieces = _vocab()[1]
    buf = bytearray()
    for tid in ids:
        if 0 <= tid < N_BYTES:
            buf.append(tid)
        elif N_BYTES <= tid < N_BYTES + len(pieces):
            buf += pieces[tid - N_BYTES].encode("ascii")
        else:
            raise ValueError(f"token id {tid} is outside the vocabulary (0..{vocab_size() - 1})")
    return buf.decode("utf-8", errors="replace")


def piece(tid: int) -> str:
    """The text of one token (a lone byte of a multi-byte character shows as U+FFFD)."""
    return decode([tid])


def chat_prompt(messages: list[dict[str, object]]) -> str:
    """A ChatML-like template, enough to make chat prompts token-for-token stable."""
    parts = []
    for m in messages:
        content = m.get("content", "")
        if isinstance(content, list):  # OpenAI content parts: keep the text ones
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        parts.append(f"<|im_start|>{m.get('role', 'user')}\n{content}<|im_end|>\n")
    parts.append("<|im_start|>assistant\n")
    return "".join(parts)


# What the simulated model "says": pieces of the vocabulary.
_OUTPUT_TEXT = " the kv cache was read from the tier and the answer is in the document"


@cache
def output_ids() -> tuple[int, ...]:
    return tuple(encode(_OUTPUT_TEXT))
