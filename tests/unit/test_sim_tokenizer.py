"""The simulator's tokenizer: invertible, deterministic across processes, and the piece
rule its docstring states (checked against a straightforward re-implementation)."""

from __future__ import annotations

import random
import subprocess
import sys
from functools import cache
from itertools import product

import pytest

from harness.sim import tokenizer

_ALPHA = "abcdefghijklmnopqrstuvwxyz"


@cache
def _ids() -> dict[str, int]:
    pieces = [s + "".join(p) for s in ("", " ") for n in (1, 2, 3)
              for p in product(_ALPHA, repeat=n)]
    return {p: 256 + i for i, p in enumerate(pieces)}


def _reference(text: str) -> list[int]:
    """The rule, spelled out: letter runs in 3-letter pieces (a space before a run joins
    its first piece), every other character its UTF-8 bytes."""
    ids = _ids()
    out: list[int] = []
    i = 0
    while i < len(text):
        j = i
        space = text[i] == " " and i + 1 < len(text) and text[i + 1] in _ALPHA
        if space:
            j += 1
        if text[j] in _ALPHA:
            k = j
            while k < len(text) and text[k] in _ALPHA and k - j < 3:
                k += 1
            out.append(ids[(" " if space else "") + text[j:k]])
            i = k
            # the rest of the run continues without a space
            while i < len(text) and text[i] in _ALPHA:
                k = i
                while k < len(text) and text[k] in _ALPHA and k - i < 3:
                    k += 1
                out.append(ids[text[i:k]])
                i = k
        else:
            out.extend(text[i].encode("utf-8"))
            i += 1
    return out


@pytest.mark.parametrize("seed", range(5))
def test_matches_the_rule_and_round_trips(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = "abcdefxyz   ABZ.,\n\t-0ü中😀"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        ids = tokenizer.encode(text)
        assert ids == _reference(text), text
        assert tokenizer.decode(ids) == text


def test_english_costs_about_two_tokens_a_word() -> None:
    text = " the storage tier answered every request from the document cache" * 20
    ids = tokenizer.encode(text)
    words = len(text.split())
    assert words < len(ids) < 3 * words
    assert all(0 <= i < tokenizer.vocab_size() for i in ids)


def test_same_ids_in_another_process() -> None:
    text = "Document 7 (set 3).\n the kv cache was read back, über alles"
    code = ("import sys; from harness.sim import tokenizer; "
            "print(tokenizer.encode(sys.argv[1]))")
    out = subprocess.run([sys.executable, "-c", code, text], capture_output=True, text=True,
                         check=True, env={"PYTHONHASHSEED": "12345"}).stdout
    assert out.strip() == str(tokenizer.encode(text))


def test_decode_rejects_ids_outside_the_vocabulary() -> None:
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tokenizer.decode([tokenizer.vocab_size()])


def test_chat_template_is_stable() -> None:
    msgs: list[dict[str, object]] = [{"role": "user", "content": "hello"}]
    assert tokenizer.chat_prompt(msgs) == (
        "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n")
    parts: list[dict[str, object]] = [
        {"role": "user", "content": [{"type": "text", "text": "hel"}, {"text": "lo"}]}]
    assert tokenizer.chat_prompt(parts) == tokenizer.chat_prompt(msgs)
