"""Workloads: seeded synthetic long documents (doc-qa), trace replay, local ShareGPT files.

doc-qa builds D distinct documents of L tokens plus a question suffix. With a tokenize
route the prompt is calibrated to exactly L + Q tokens of the server's tokenizer (the
count vLLM reports as usage.prompt_tokens); without one the count is an estimate and
the workload says so (`calibrated=False`). `prefix_share` makes that fraction of every
document a common prefix (the prefix-cache / KV-tier case); 0 keeps documents disjoint.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import UsageError
from harness.loadgen.calibration import Document, Fit, fit_all
from harness.loadgen.records import RequestSpec
from harness.loadgen.tokenizer import ServerTokenizer

# Short common words: one token each in BPE vocabularies with a leading space, so the
# uncalibrated estimate is close (one token per word, one per full stop).
_VOCABULARY = (
    "the of and to in is was for on are with as at be by this had not but from or have "
    "an they which one you were all we her she there been if more when will would who so "
    "no out up into has its than them can only other new some time could these two may "
    "first then do any like my now over such our man me even most made after also did "
    "many off before must well back years much where your way down should because each "
    "just those people how too little state good very make world still own see men work "
    "long get here between both life being under never day same another know while last "
    "might us great old year since come came around three small place home hand high keep "
    "large next light open water city tree cross farm hard start story saw far sea draw "
    "left late run press close night real north book carry took rain eat room friend began "
    "idea fish stop once base hear horse cut sure watch color face wood main enough plain "
    "girl usual young ready above ever red list though feel talk bird soon body dog family"
)
_WORDS = tuple(_VOCABULARY.split())


@dataclass(frozen=True)
class Workload:
    specs: list[RequestSpec]
    calibrated: bool  # token counts come from the server's tokenizer
    kind: str = "doc-qa"
    exact: bool = False  # every prompt hit its target token count exactly
    params: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


_SPACED = tuple(" " + w for w in _WORDS)
_CAPITAL = tuple(" " + w.capitalize() for w in _WORDS)
_WORD_BITS = len(_WORDS).bit_length()


def _sentences(rng: random.Random, n_words: int) -> list[str]:
    """Pieces that concatenate into sentences: ' word' ... '.' (each ~1 token).

    Per word it draws exactly what rng.choice(_WORDS) and then rng.randint(8, 16) draw
    (Random._randbelow: the top bits of one getrandbits call, drawn again while out of
    range), inlined: a 32k-token document draws 64k words, and the method calls took
    about as long as all of its /tokenize calls."""
    bits = rng.getrandbits
    n = len(_WORDS)
    pieces: list[str] = []
    add = pieces.append
    in_sentence = 0
    for _ in range(n_words):
        w = bits(_WORD_BITS)
        while w >= n:
            w = bits(_WORD_BITS)
        add(_SPACED[w] if in_sentence else _CAPITAL[w])
        in_sentence += 1
        r = bits(4)  # randint(8, 16): 9 values
        while r >= 9:
            r = bits(4)
        if in_sentence >= 8 + r:
            add(".")
            in_sentence = 0
    return pieces


def doc_qa(n_docs: int, doc_tokens: int, question_tokens: int, seed: int, *,
           tokenize_url: str | None = None, prefix_share: float = 0.0,
           max_tokens: int = 128, model: str | None = None,
           first_doc: int = 0, workers: int = 8, usage_fallback: bool = False) -> Workload:
    """D seeded documents (ids first_doc..first_doc+D-1), one request each, prompt =
    document + question, calibrated to doc_tokens + question_tokens when possible.
    `workers` documents are calibrated at a time; the prompts do not depend on it.
    `usage_fallback`: without a tokenize route, count with one-token completions' usage
    (flagged in the notes: the server has then seen every document)."""
    if n_docs < 1 or doc_tokens < 1 or question_tokens < 0:
        raise UsageError("doc-qa needs --docs >= 1, --doc-tokens >= 1, question tokens >= 0")
    if not 0.0 <= prefix_share < 1.0:
        raise UsageError(f"prefix share must be in [0, 1), got {prefix_share}")
    if workers < 1:
        raise UsageError(f"doc-qa needs workers >= 1, got {workers}")
    target = doc_tokens + question_tokens
    shared_words = int(doc_tokens * prefix_share)
    shared = "".join(_sentences(random.Random(f"{seed}:prefix"), shared_words))
    n_unique = max(doc_tokens - shared_words, 1) * 2 + 64
    est_k = max(doc_tokens - shared_words - 8, 1)

    def document(d: int) -> Document:
        rng = random.Random(f"{seed}:doc:{d}")
        head = shared + ("\n" if shared else "") + f"Document {d} (set {seed}).\n"
        unique = _sentences(rng, n_unique)
        question = "\n\nQuestion:" + "".join(_sentences(rng, max(question_tokens - 3, 0)))
        return Document(head, unique, question + "?\nAnswer:")

    ids = range(first_doc, first_doc + n_docs)
    fits: list[Fit | None] = [None] * n_docs
    notes: list[str] = []
    flavor: str | None = None
    if tokenize_url:
        with ServerTokenizer(tokenize_url, model, usage_fallback=usage_fallback) as tok:
            fits = fit_all(tok, document, ids, target, est_k, workers)
        flavor = tok.flavor
        if fits[-1] is None:
            flavor = None
            notes.append("server has no tokenize route: token counts are estimates")
        elif flavor == "usage":
            notes.append("prompt lengths calibrated from the usage.prompt_tokens of one-token "
                         "completions (the server has no tokenize route): the server has "
                         f"already seen these documents ({tok.calls} calls), so its prefix "
                         "cache may hold them")
    else:
        notes.append("no tokenize URL given: token counts are estimates")
    calibrated = fits[-1] is not None
    exact = calibrated and all(f is not None and f.tokens == target for f in fits)
    specs = [RequestSpec(prompt=f.prompt if f else document(d).prompt(est_k),
                         max_tokens=max_tokens, doc_id=d,
                         prompt_tokens=f.tokens if f else None)
             for d, f in zip(ids, fits, strict=True)]
    return Workload(specs=specs, calibrated=calibrated, exact=exact, kind="doc-qa",
                    params={"docs": n_docs, "doc_tokens": doc_tokens,
                            "question_tokens": question_tokens, "seed": seed,
                            "prefix_share": prefix_share, "max_tokens": max_tokens,
                            "first_doc": first_doc, "tokenizer": flavor},
                    notes=notes)


def synthetic_prompt(n_tokens: int, seed: int, i: int) -> str:
    """About n_tokens of seeded text, for traces that give only a token count."""
    pieces = _sentences(random.Random(f"{seed}:trace:{i}"), max(n_tokens - 2, 1))
    return f"Request {i}." + "".join(pieces)[: max(n_tokens, 1) * 16]


def trace_replay(path: str | Path, *, seed: int = 0, default_max_tokens: int = 128) -> Workload:
    """JSONL, one request per line: {"timestamp": s, "prompt": str | "prompt_tokens": n,
    "max_tokens": n}; `input_length` / `output_length` (Mooncake-style) are accepted too."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read trace: {exc.strerror}", file=str(p)) from None
    specs: list[RequestSpec] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            ts = row.get("timestamp")
            at = float(ts) if ts is not None else None
            if "timestamp_ms" in row:
                at = float(row["timestamp_ms"]) / 1000.0
            out = int(row.get("max_tokens", row.get("output_length", default_max_tokens)))
            if "prompt" in row:
                prompt, n_tok = str(row["prompt"]), row.get("prompt_tokens")
            else:
                n_tok = int(row["prompt_tokens"] if "prompt_tokens" in row
                            else row["input_length"])
                prompt = synthetic_prompt(n_tok, seed, len(specs))
        except (ValueError, KeyError, TypeError, AttributeError):
            raise UsageError("not a trace line: need timestamp, prompt or prompt_tokens, "
                             "max_tokens", file=f"{p}:{n}") from None
        specs.append(RequestSpec(prompt=prompt, max_tokens=out, doc_id=len(specs),
                                 prompt_tokens=int(n_tok) if n_tok is not None else None,
                                 at=at))
    if not specs:
        raise UsageError("trace has no requests", file=str(p))
    return Workload(specs=specs, calibrated=False, kind="trace",
                    params={"path": str(p), "seed": seed}, notes=["trace replay"])


def sharegpt(path: str | Path, n: int, *, seed: int = 0, max_tokens: int | None = None,
             min_chars: int = 4) -> Workload:
    """A local ShareGPT-format JSON file (never downloaded): first human turn as the prompt,
    the reply's length (whitespace words, an estimate) as max_tokens unless given."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read ShareGPT file: {exc.strerror}", file=str(p)) from None
    except ValueError:
        raise UsageError("not JSON (ShareGPT is a JSON list of conversations)",
                         file=str(p)) from None
    if not isinstance(data, list):
        raise UsageError("not a ShareGPT file: expected a JSON list", file=str(p))
    pairs: list[tuple[str, int]] = []
    for conv in data:
        turns = conv.get("conversations") if isinstance(conv, dict) else None
        if not isinstance(turns, Sequence) or len(turns) < 2:
            continue
        prompt, reply = str(turns[0].get("value", "")), str(turns[1].get("value", ""))
        if len(prompt) < min_chars or len(reply) < min_chars:
            continue
        pairs.append((prompt, max(len(reply.split()), 1)))
    if not pairs:
        raise UsageError("no usable conversation (need two turns each)", file=str(p))
    random.Random(seed).shuffle(pairs)
    specs = [RequestSpec(prompt=pr, max_tokens=max_tokens or out, doc_id=i)
             for i, (pr, out) in enumerate((pairs * (n // len(pairs) + 1))[:n])]
    return Workload(specs=specs, calibrated=False, kind="sharegpt",
                    params={"path": str(p), "n": n, "seed": seed},
                    notes=["ShareGPT lengths are word-count estimates"])


def repeat(specs: Sequence[RequestSpec], n: int) -> list[RequestSpec]:
    """n requests cycling over specs (request i asks specs[i % len]; doc ids kept)."""
    return [specs[i % len(specs)] for i in range(n)]
