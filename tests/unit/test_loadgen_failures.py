"""Failure explanations on real engines' captured error bodies
(tests/fixtures/engines/errors.json; sources in tests/fixtures/engines/SOURCES.md)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from harness.loadgen import client
from harness.loadgen.failures import explain, sample_of, server_words
from harness.loadgen.records import RequestRecord

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "engines" / "errors.json").read_text())


def failed(i: int, status: int, reason: str, body: str, warmup: bool = False) -> RequestRecord:
    """A record failed the way harness.loadgen.client.stream fills it for a non-200."""
    rec = RequestRecord(idx=i, instance=0, doc_id=i, warmup=warmup, scheduled=0.0)
    rec.status = status
    rec.error_kind = f"http_{status}"
    rec.error = f"HTTP {status} {reason}: {body}"
    return rec


def ok(i: int) -> RequestRecord:
    return RequestRecord(idx=i, instance=0, doc_id=i, warmup=False, scheduled=0.0)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_the_servers_own_words_and_the_likely_cause(case: dict[str, Any]) -> None:
    rec = failed(0, case["status"], case["reason"], case["body"])
    sample = sample_of(rec)
    assert sample.status == case["status"]
    assert sample.message == case["words"]
    report = explain([rec] * 8, api="completions", model="m")
    assert report is not None
    assert report.hint.startswith(case["cause"]), report.hint
    text = "\n".join(report.lines())
    assert f"HTTP {case['status']}" in text and "likely cause: " in text


def test_chat_template_hint_points_to_the_other_api() -> None:
    case = next(c for c in CASES if c["id"] == "vllm-400-chat-template")
    report = explain([failed(0, 400, "Bad Request", case["body"])], api="chat", model="m")
    assert report is not None and "--api completions" in report.hint


def test_a_few_failures_are_not_explained_and_distinct_ones_are_counted() -> None:
    body = CASES[0]["body"]
    few = [failed(0, 404, "Not Found", body)] + [ok(i) for i in range(1, 10)]
    assert explain(few, api="completions", model="m") is None
    many = [failed(i, 404, "Not Found", body) for i in range(6)] + \
        [failed(6, 500, "Internal Server Error", "boom")] + [ok(7)]
    report = explain(many, api="completions", model="m")
    assert report is not None and report.failed == 7 and report.total == 8
    assert [(s.status, s.count) for s in report.samples] == [(404, 6), (500, 1)]
    assert report.to_dict()["first"][0]["count"] == 6  # type: ignore[index]


def test_warmups_count_only_when_nothing_was_measured() -> None:
    warm = [failed(0, 400, "Bad Request", "", warmup=True)]
    assert explain([*warm, ok(1), ok(2)], api="completions", model="m") is None
    assert explain(warm, api="completions", model="m") is not None


def test_non_http_failures_keep_their_kind() -> None:
    rec = ok(0)
    rec.error_kind, rec.error = "connect", "ClientConnectorError: Cannot connect to host"
    report = explain([rec], api="completions", model="m")
    assert report is not None and report.samples[0].status is None
    assert report.hint.startswith("nothing answers")
    assert report.samples[0].line().startswith("connect: ClientConnectorError")


def test_server_words_of_bodies_that_are_not_json_or_have_no_message() -> None:
    assert server_words("  upstream\n timed out ") == "upstream timed out"
    assert server_words('{"detail": [{"loc": ["body"], "msg": "x"}]}').startswith('[{"loc"')
    assert server_words('{"ok": true}') == '{"ok": true}'


def test_request_ids_are_uuids_and_headers_are_standard() -> None:
    ids = {client.request_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(str(uuid.UUID(i)) == i for i in ids)
    headers = client.base_headers("gate-r7")
    assert set(headers) <= {"Content-Type", "Accept", "User-Agent", "Authorization"}
    assert "gate-r7" in headers["User-Agent"]
