"""Calibrating synthetic documents to an exact token count with the server's tokenizer.

Why its own module: the search (secant steps over the number of word pieces, then
one-token fillers), its parallel run over many documents and its determinism rules are
one job, apart from building workloads. The prompts must not depend on how many threads
ran or in which order they finished: stored runs and tests rely on the same text for the
same seed and tokenizer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from harness.loadgen.tokenizer import NoTokenizer, ServerTokenizer


@dataclass(frozen=True)
class Search:
    k: int
    tokens: int
    first: int  # tokens at the starting k
    calls: int
    settled: bool  # on an exact hit or a one-piece bracket, not out of steps


def calibrate(count: Callable[[str], int], build: Callable[[int], str], target: int,
               k0: int, k_max: int) -> Search:
    """Largest piece count k with count(build(k)) <= target, secant steps then +-1."""
    lo: tuple[int, int] | None = None  # (k, tokens) with tokens <= target
    hi: tuple[int, int] | None = None  # (k, tokens) with tokens > target
    k = max(1, min(k0, k_max))
    first: int | None = None
    for step in range(1, 25):
        c = count(build(k))
        first = c if first is None else first
        if c == target:
            return Search(k, c, first, step, True)
        if c < target:
            lo = (k, c) if lo is None or k > lo[0] else lo
        else:
            hi = (k, c) if hi is None or k < hi[0] else hi
        if lo is not None and ((hi is not None and hi[0] - lo[0] <= 1) or lo[0] >= k_max):
            return Search(lo[0], lo[1], first, step, True)
        per = max(c / k, 0.25)
        nxt = k + (round((target - c) / per) or (1 if c < target else -1))
        low_k = lo[0] + 1 if lo else 1
        high_k = hi[0] - 1 if hi else k_max
        k = max(low_k, min(nxt, high_k))
    assert first is not None
    if lo is None:
        return Search(1, count(build(1)), first, 25, False)
    return Search(lo[0], lo[1], first, 24, False)


FILLERS = (".", " the", " a", ",", " and", " of")


def pad_to(count: Callable[[str], int], build: Callable[[str], str], have: int,
           target: int) -> tuple[str, int]:
    """Close the last gap (one more word can cost two tokens) with short fillers that
    each add one token; keeps the best padding that stays <= target."""
    padding = ""
    for _ in range(2 * (target - have) + 2):
        for filler in FILLERS:
            c = count(build(padding + filler))
            if have < c <= target:
                padding, have = padding + filler, c
                break
        else:
            break
        if have == target:
            break
    return padding, have


@dataclass(frozen=True)
class Document:
    head: str  # shared prefix, its newline, header
    unique: list[str]
    question: str

    def prompt(self, k: int, pad: str = "") -> str:
        return self.head + "".join(self.unique[:k]) + pad + self.question


@dataclass(frozen=True)
class Fit:
    prompt: str
    tokens: int
    search: Search


class Stopped(Exception):
    """Another document failed: this one gives up at its next count."""


def fit_one(count: Callable[[str], int], doc: Document, target: int, k0: int,
            est_k: int) -> Fit:
    """One document calibrated from k0; searched again from est_k (the default start,
    so the default path) if the search from k0 does not settle."""
    s = calibrate(count, doc.prompt, target, k0, len(doc.unique))
    if not s.settled and k0 != est_k:
        s = calibrate(count, doc.prompt, target, est_k, len(doc.unique))
    padding, n = "", s.tokens
    if n < target:
        padding, n = pad_to(count, lambda p: doc.prompt(s.k, pad=p), n, target)
    return Fit(doc.prompt(s.k, padding), n, s)


def start_k(first: Search, target: int, est_k: int) -> int:
    """Where the other documents start: doc 0's tokens per piece predict the k that fits.
    The search settles on the same k from any start when each piece costs at least one
    token (the simulator's tokenizer; BPE vocabularies for these words, but for a '.'
    that may merge with the newline after it). Taken only when doc 0's default search
    settled in half its steps (so the others' would have settled too) and its first
    count missed by more than 2 % (when it is close, the default start is as fast and
    keeps the very same search, ties included)."""
    if first.settled and first.calls <= 12 and abs(first.first - target) * 50 > target:
        return max(1, round(first.k * target / first.tokens))
    return est_k


def fit_all(tok: ServerTokenizer, document: Callable[[int], Document], ids: range,
             target: int, est_k: int, workers: int) -> list[Fit | None]:
    """Doc 0 first (it finds the route and the others' start), then the rest on
    `workers` threads. As when they went one by one: a document without a route and
    all after it are None, and the first failure in document order is raised; a failure
    stops the others at their next count instead of letting them run on."""
    stop = threading.Event()

    def count(text: str) -> int:
        if stop.is_set():
            raise Stopped
        return tok.count(text)

    def fit(d: int, k0: int) -> Fit | None:
        try:
            return fit_one(count, document(d), target, k0, est_k)
        except NoTokenizer:
            return None
        except BaseException:
            stop.set()
            raise

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="calibrate")
    try:
        first = pool.submit(fit, ids[0], est_k).result()
        if first is None:
            return [None] * len(ids)
        k0 = start_k(first.search, target, est_k)
        futures = [pool.submit(fit, d, k0) for d in ids[1:]]
        wait(futures)
    except BaseException:
        stop.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    fits: list[Fit | None] = [first]
    for f in futures:
        exc = f.exception()
        if isinstance(exc, Stopped):  # the failure that stopped it comes later in order
            exc = next(e for e in map(Future.exception, futures)
                       if e is not None and not isinstance(e, Stopped))
        if exc is not None:
            raise exc
        fit_d = f.result()
        if fit_d is None:
            return fits + [None] * (len(ids) - len(fits))
        fits.append(fit_d)
    return fits
