"""The ids the harness stores, said in the report's language (harness/report/factwords.py),
and the Chinese catalogue itself free of English (issue 27 item 6)."""

from __future__ import annotations

import re

import pytest
from report_support import zh_words

from harness.config.bom import G1_HEALTH, GPU_COUNT_FACT
from harness.g1.plan import ITEMS, PLAN_FACT
from harness.reasons import CODES
from harness.report import checkwords, factwords
from harness.report.i18n import load_catalog, placeholders, translator
from harness.workflow.run_inputs import ARTIFACT_KIND

EN, ZH = translator("en"), translator("zh")


@pytest.mark.parametrize(("group", "ids"), [
    ("item", (*ITEMS, *G1_HEALTH)),
    ("fio_job", checkwords.FIO_JOBS),
    ("status", ("FINISHED", "RUNNING", "ABORTED")),
    ("trigger", ("manual", "scheduled")),
    ("artifact", (ARTIFACT_KIND, "engine-log")),
    ("phase", ("warm", "measured", "serving")),
    ("fact", (PLAN_FACT, GPU_COUNT_FACT, "nic bus", "gpu serials", "nvme serials")),
])
def test_every_id_the_harness_stores_has_its_words(group: str, ids: tuple[str, ...]) -> None:
    """In English as stored (the English report is unchanged), in Chinese in words."""
    for value in ids:
        assert factwords.word(EN, group, value) == value
        zh = factwords.word(ZH, group, value)
        assert zh != value or not zh_words.stray([zh], set()), (group, value)
        assert not zh_words.stray([zh], set()), (group, value, zh)


def test_composed_fact_keys_keep_the_site_names_and_translate_the_rest() -> None:
    said = {k: factwords.fact_key(ZH, k) for k in (
        "fio local-disk seq-read", "fio volume filesystem", "serving prefill TP8-c8",
        "engine version TP8#0", "engine baseline TP8#0", "engine identity accelerated TP4x2#1",
        "serial change: gpu serials", "a custom suite's fact")}
    assert said == {
        "fio local-disk seq-read": "fio local-disk 顺序读",
        "fio volume filesystem": "fio volume 文件系统",
        "serving prefill TP8-c8": "服务预填充 TP8-c8",
        "engine version TP8#0": "引擎版本 TP8#0",
        "engine baseline TP8#0": "引擎 基线 TP8#0",
        "engine identity accelerated TP4x2#1": "引擎标识 加速 TP4x2#1",
        "serial change: gpu serials": "序列号变更：GPU 序列号",
        "a custom suite's fact": "a custom suite's fact"}  # unknown: as stored
    for key in said:
        assert factwords.fact_key(EN, key) == key


def test_a_g1_plan_and_a_per_host_check_say_their_items() -> None:
    plan = factwords.fact_value(ZH, PLAN_FACT, {"items": ["gpu", "nic"], "health": ["xid"]})
    assert plan == {"物料项": ["GPU", "网卡"], "健康检查": ["Xid"]}
    assert checkwords.param(ZH, "gpu1-gpu-link", "gpu1") == "gpu1 GPU 链路"
    assert checkwords.param(ZH, "st-1-volume-lat-qd1", "st-1") == "st-1 volume QD1 延迟"
    assert checkwords.param(EN, "gpu1-gpu-link", "gpu1") == "gpu1-gpu-link"
    assert checkwords.param(EN, "st-1-volume-lat-qd1", "st-1") == "st-1-volume-lat-qd1"
    assert checkwords.param(ZH, "TP8", None) == "TP8"


def test_the_chinese_catalogue_has_no_english_words() -> None:
    """Every zh entry, its {placeholders} left out, has no ASCII word but the allowed ones
    (units, names, auditor tokens: zh_words.ALLOWED); the glossary's English column is
    read from en.yaml, never from here."""
    found = {}
    for key, text in load_catalog("zh").items():
        for word in zh_words.stray([re.sub(r"\{[a-z_]+\}", " ", text)], set()):
            found.setdefault(word, key)
    assert not found, found


def test_every_reason_code_has_en_and_zh_words_with_its_placeholders() -> None:
    en, zh = load_catalog("en"), load_catalog("zh")
    for code, wanted in CODES.items():
        key = f"reason.{code}"
        assert key in en and key in zh, code
        assert placeholders(en[key]) == placeholders(zh[key]) == set(wanted), code


def test_the_glossary_names_the_interval_method_g3_uses() -> None:
    """The glossary's confidence interval and the rules' interval line (page 9) name the
    same method: a Student t interval at the level Lan-DeMets spending allows."""
    for cat in (load_catalog("en"), load_catalog("zh")):
        for key in ("def.ci.text", "rules.interval"):
            assert "Student t" in cat[key] and "Lan-DeMets" in cat[key], (key, cat[key])
