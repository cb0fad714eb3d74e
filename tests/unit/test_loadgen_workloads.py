"""Workloads and arrival schedules, without a server (estimates, files, seeds)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from harness.errors import UsageError
from harness.loadgen.calibration import calibrate
from harness.loadgen.engine import arrival_offsets
from harness.loadgen.workloads import (
    _WORDS,
    _sentences,
    doc_qa,
    repeat,
    sharegpt,
    trace_replay,
)
from harness.sim.tokenizer import encode


def test_doc_qa_is_seeded_distinct_and_flagged_as_estimate() -> None:
    a = doc_qa(4, 300, 20, seed=7, max_tokens=32)
    b = doc_qa(4, 300, 20, seed=7, max_tokens=32)
    assert [s.prompt for s in a.specs] == [s.prompt for s in b.specs]
    assert not a.calibrated and not a.exact
    assert any("estimate" in n for n in a.notes)
    assert [s.doc_id for s in a.specs] == [0, 1, 2, 3]
    assert all(s.max_tokens == 32 and s.prompt_tokens is None for s in a.specs)
    assert len({s.prompt[:40] for s in a.specs}) == 4  # disjoint from the first tokens
    words = len(a.specs[0].prompt.split())
    assert 250 < words < 360
    assert doc_qa(4, 300, 20, seed=8).specs[0].prompt != a.specs[0].prompt


def test_prefix_share_makes_a_common_prefix() -> None:
    wl = doc_qa(3, 400, 10, seed=1, prefix_share=0.5)
    p = [s.prompt for s in wl.specs]
    common = 0
    while all(x[common] == p[0][common] for x in p):
        common += 1
    assert len(p[0][:common].split()) >= 190
    assert wl.params["prefix_share"] == 0.5


def test_doc_qa_rejects_bad_sizes() -> None:
    with pytest.raises(UsageError):
        doc_qa(0, 100, 10, seed=1)
    with pytest.raises(UsageError):
        doc_qa(1, 100, 10, seed=1, prefix_share=1.0)


def test_doc_qa_needs_a_worker() -> None:
    with pytest.raises(UsageError, match="workers"):
        doc_qa(2, 100, 10, seed=1, workers=0)
    assert doc_qa(3, 100, 5, seed=2, workers=1).specs == doc_qa(3, 100, 5, seed=2).specs


def _sentences_by_the_book(rng: random.Random, n_words: int) -> list[str]:
    pieces: list[str] = []
    in_sentence = 0
    for _ in range(n_words):
        w = rng.choice(_WORDS)
        pieces.append(" " + (w.capitalize() if in_sentence == 0 else w))
        in_sentence += 1
        if in_sentence >= rng.randint(8, 16):
            pieces.append(".")
            in_sentence = 0
    return pieces


def test_sentences_draw_what_choice_and_randint_draw() -> None:
    """The inlined draws give the same text and leave the generator in the same state,
    so stored seeds keep their documents and questions."""
    for seed, n in [(0, 0), (1, 1), (2, 17), (3, 1000), (7, 64064)]:
        a, b = random.Random(f"{seed}:doc:3"), random.Random(f"{seed}:doc:3")
        assert _sentences(a, n) == _sentences_by_the_book(b, n)
        assert a.getstate() == b.getstate()


def test_calibration_settles_on_the_same_k_from_any_start() -> None:
    """With a tokenizer where every piece costs a token (the simulator's), the search
    finds the largest k that fits wherever it starts: a better first guess is free."""
    pieces = _sentences(random.Random("calib"), 3000)
    head, tail = "Document 0 (set 1).\n", "\n\nQuestion: why?\nAnswer:"

    def build(k: int) -> str:
        return head + "".join(pieces[:k]) + tail

    def count(text: str) -> int:
        return len(encode(text))

    for target in (500, 1001, 2400):
        searches = [calibrate(count, build, target, k0, len(pieces))
                    for k0 in (1, 100, 280, 900, target - 8, 2999)]
        assert all(s.settled for s in searches)
        found = {s.k for s in searches}
        assert len(found) == 1
        k = found.pop()
        assert count(build(k)) <= target < count(build(k + 1))


def test_first_doc_offsets_ids_and_text() -> None:
    warm = doc_qa(2, 100, 5, seed=3, first_doc=10)
    assert [s.doc_id for s in warm.specs] == [10, 11]
    assert warm.specs[0].prompt != doc_qa(2, 100, 5, seed=3).specs[0].prompt


def test_trace_replay(tmp_path: Path) -> None:
    f = tmp_path / "trace.jsonl"
    f.write_text(json.dumps({"timestamp": 0.5, "prompt": "hi there", "max_tokens": 8}) + "\n\n"
                 + json.dumps({"timestamp": 1.25, "prompt_tokens": 50, "max_tokens": 4}) + "\n"
                 + json.dumps({"timestamp_ms": 2000, "input_length": 20,
                               "output_length": 2}) + "\n")
    wl = trace_replay(f, seed=1)
    assert [s.at for s in wl.specs] == [0.5, 1.25, 2.0]
    assert [s.max_tokens for s in wl.specs] == [8, 4, 2]
    assert wl.specs[0].prompt == "hi there"
    assert wl.specs[1].prompt_tokens == 50 and len(wl.specs[1].prompt.split()) > 20
    offsets = arrival_offsets(3, 0, arrival="trace", trace=[s.at for s in wl.specs])
    assert offsets.tolist() == [0.0, 0.75, 1.5]


def test_trace_errors_name_the_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text('{"timestamp": 1, "prompt": "x"}\n{"timestamp": 2}\n')
    with pytest.raises(UsageError, match=r"bad.jsonl:2"):
        trace_replay(f)
    with pytest.raises(UsageError, match="cannot read"):
        trace_replay(tmp_path / "missing.jsonl")


def test_sharegpt_local_file(tmp_path: Path) -> None:
    data = [
        {"id": "a", "conversations": [{"from": "human", "value": "What is a KV cache?"},
                                      {"from": "gpt", "value": "It keeps attention keys."}]},
        {"id": "b", "conversations": [{"from": "human", "value": "only one turn"}]},
        {"id": "c", "conversations": [{"from": "human", "value": "Why NVMe?"},
                                      {"from": "gpt", "value": "Capacity and bandwidth."}]},
    ]
    f = tmp_path / "sg.json"
    f.write_text(json.dumps(data))
    wl = sharegpt(f, 5, seed=0)
    assert len(wl.specs) == 5
    assert {s.prompt for s in wl.specs} == {"What is a KV cache?", "Why NVMe?"}
    assert {s.max_tokens for s in wl.specs} == {3, 4}
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(UsageError, match="JSON list"):
        sharegpt(tmp_path / "x.json", 1)


def test_arrivals_follow_vllm() -> None:
    pois = arrival_offsets(1000, 50.0, seed=3)
    assert pois[-1] == pytest.approx(1000 / 50.0)  # rescaled to n / rate, as vLLM does
    assert np.all(np.diff(pois) >= 0)
    gaps = np.diff(pois)
    assert 0.8 < gaps.std() / gaps.mean() < 1.2  # exponential: CV ~ 1
    bursty = np.diff(arrival_offsets(1000, 50.0, burstiness=0.25, seed=3))
    assert bursty.std() / bursty.mean() > 1.5
    assert arrival_offsets(4, 2.0, arrival="constant").tolist() == [0.5, 1.0, 1.5, 2.0]
    assert arrival_offsets(3, float("inf")).tolist() == [0.0, 0.0, 0.0]
    assert arrival_offsets(5, 10.0, seed=1).tolist() == arrival_offsets(5, 10.0, seed=1).tolist()
    with pytest.raises(UsageError):
        arrival_offsets(3, 1.0, arrival="trace", trace=[0.0, None, 1.0])


def test_repeat_cycles_specs() -> None:
    specs = doc_qa(3, 50, 5, seed=1).specs
    assert [s.doc_id for s in repeat(specs, 7)] == [0, 1, 2, 0, 1, 2, 0]
