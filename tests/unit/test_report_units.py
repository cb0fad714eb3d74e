"""Pure pieces of the report: formatting, redaction, catalogs, downsampling, rules."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

from harness.errors import UsageError
from harness.report import fmt
from harness.report.fonts import FontChoice, Fonts, choose_fonts, find_cjk_font
from harness.report.i18n import LANGS, load_catalog, placeholders, translator
from harness.report.plots import cdf_points, downsample
from harness.report.redact import REDACTED, is_secret_key, redact, redact_args
from harness.report.sections.base import TrendMetric
from harness.report.sections.g3 import criterion_result
from harness.report.trends import regressed


def test_catalogs_have_the_same_keys_and_placeholders() -> None:
    en, zh = load_catalog("en"), load_catalog("zh")
    assert set(en) == set(zh)
    for key in en:
        assert placeholders(en[key]) == placeholders(zh[key]), key


@pytest.mark.parametrize("token", ["PASS", "STOP-LOSS", "INCONCLUSIVE", "ERROR"])
def test_chinese_verdicts_keep_the_english_token(token: str) -> None:
    assert token in translator("zh").verdict(token)
    assert translator("en").verdict(token) == token


def test_chinese_verdict_words() -> None:
    t = translator("zh")
    assert t.verdict("PASS").startswith("通过")
    assert t.verdict("STOP-LOSS").startswith("止损")
    assert t.verdict("INCONCLUSIVE").startswith("无法判定")
    assert t.verdict("ERROR").startswith("错误")


def test_missing_message_is_an_error_not_a_blank() -> None:
    with pytest.raises(KeyError, match=r"nope\.missing"):
        translator("en")("nope.missing")


def test_unknown_language_is_a_usage_error() -> None:
    assert LANGS == ("en", "zh")
    with pytest.raises(UsageError, match="--lang"):
        load_catalog("fr")


def test_formatting_matches_store_values() -> None:
    assert fmt.pct(0.3123) == "31.2 %"
    assert fmt.interval_pct(0.31, 0.39) == "[31.0 %, 39.0 %]"
    assert fmt.interval_pct_short(0.31, 0.39) == "[31.0, 39.0] %"
    assert fmt.seconds(2.4) == "2.400 s"
    assert fmt.seconds(float("inf")) == "∞"
    assert fmt.seconds(None) == fmt.pct(float("nan")) == "—"
    assert fmt.rate(1234.56) == "1,234.6 tok/s"
    assert fmt.duration(3725) == "1 h 02 min"
    assert fmt.day(0) == "1970-01-01"


@pytest.mark.parametrize("key,secret", [
    ("password", True), ("hf_token", True), ("api_key", True), ("key_passphrase", True),
    ("client_secret", True), ("GATE_PASSWORD", True), ("max_tokens", False),
    ("doc_tokens", False), ("question_tokens", False), ("keys", False), ("user", False),
    ("GITHUB_TOKEN", True), ("hf-token", True), ("token", True),
    ("max_token_disagreement", False),  # a decision setting the reader must see
])
def test_secret_keys(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


def test_redact_nested_config_and_urls() -> None:
    cfg = {"ssh": {"password": "hunter2", "user": "root"}, "workload": {"max_tokens": 128},
           "list": [{"token": "t0k"}], "db": "postgresql://gate:pw99@db/gate", "empty": {
               "password": ""}}
    out = redact(cfg)
    assert out["ssh"] == {"password": REDACTED, "user": "root"}
    assert out["workload"] == {"max_tokens": 128}
    assert out["list"] == [{"token": REDACTED}]
    assert "pw99" not in out["db"] and out["db"].startswith("postgresql://gate:")
    assert out["empty"] == {"password": ""}
    assert cfg["ssh"]["password"] == "hunter2"  # the input is not changed


def test_redact_args() -> None:
    args = ["run", "G3", "--token=abc", "--password", "pw", "--db", "sqlite:///x.db"]
    assert redact_args(args) == ["run", "G3", f"--token={REDACTED}", "--password", REDACTED,
                                 "--db", "sqlite:///x.db"]


def test_downsample_keeps_envelope_and_size() -> None:
    x = np.arange(10_000, dtype=float)
    y = np.sin(x / 100.0)
    xs, mean, lo, hi = downsample(x, y, points=500)
    assert xs.size == mean.size == 500
    assert np.all(lo <= mean) and np.all(mean <= hi)
    assert lo.min() == pytest.approx(y.min()) and hi.max() == pytest.approx(y.max())
    small = downsample(x[:10], y[:10], points=500)
    assert small[0].size == 10


def test_cdf_counts_failures_as_infinite() -> None:
    values = np.array([1.0, 2.0, 3.0, np.inf])
    x, y = cdf_points(values)
    assert list(x) == [1.0, 2.0, 3.0]
    assert y[-1] == pytest.approx(0.75)  # the failed request keeps the curve below 1
    big = np.concatenate([np.linspace(0, 1, 100_000), [np.inf] * 100])
    bx, by = cdf_points(big)
    assert bx.size <= 400 and by[-1] < 1.0


@pytest.mark.parametrize("lo,hi,expected", [
    (0.30, 0.40, "PASS"), (0.10, 0.20, "STOP-LOSS"), (0.20, 0.30, "INCONCLUSIVE"),
    (None, None, "INCONCLUSIVE"), (0.25, 0.30, "PASS"),
])
def test_criterion_rule(lo: float | None, hi: float | None, expected: str) -> None:
    assert criterion_result(lo, hi, 0.25) == expected


def test_criterion_above_band_needs_signoff_and_stored_verdict_wins() -> None:
    assert criterion_result(0.45, 0.55, 0.29, band_top=0.40) == "INCONCLUSIVE"
    assert criterion_result(0.30, 0.45, 0.29, band_top=0.40) == "PASS"
    assert criterion_result(0.30, 0.45, 0.29, stored="STOP-LOSS") == "STOP-LOSS"


def test_regression_rule() -> None:
    def m(v: float, better: str = "higher", tol: float = 0.02, rel: bool = False) -> TrendMetric:
        return TrendMetric(key="k", label="k", value=v, text=str(v), better=better,  # type: ignore[arg-type]
                           tolerance=tol, relative=rel)
    assert regressed(m(0.35), m(0.30))
    assert not regressed(m(0.35), m(0.34))
    assert regressed(m(1.0, "lower", 0.05, True), m(1.06, "lower", 0.05, True))
    assert not regressed(m(1.0, "lower", 0.05, True), m(1.04, "lower", 0.05, True))
    no_rule = TrendMetric(key="k", label="k", value=1.0, text="1")
    assert not regressed(no_rule, TrendMetric(key="k", label="k", value=9.0, text="9"))


def test_cjk_font_is_found_through_fontconfig() -> None:
    found = find_cjk_font()
    assert found is not None and found.file.endswith((".ttc", ".ttf", ".otf"))
    assert "WenQuanYi Micro Hei" in Fonts(cjk=found).css_stack()


def test_chinese_without_a_cjk_font_names_the_package() -> None:
    with mock.patch("harness.report.fonts.find_cjk_font", return_value=None), \
            pytest.raises(UsageError, match="apt-get install fonts-wqy-microhei"):
        choose_fonts("zh")
    with mock.patch("harness.report.fonts.find_cjk_font", return_value=None):
        assert choose_fonts("en").cjk is None
    assert Fonts(cjk=FontChoice("X", "/x.ttf")).families() == ["DejaVu Sans", "X"]


def test_column_widths_follow_content_like_automatic_layout() -> None:
    """Fixed table layout with computed widths (automatic layout cost WeasyPrint ~2/3 of
    a report): a column gets at least its longest word, the rest goes to the long ones."""
    from harness.report.render import column_widths

    facts = column_widths(["Host", "Key", "Value"],
                          [["gpu1", "engine accelerated TP8#0", '{"card": ' + "x" * 400 + "}"]])
    assert facts[2] > 50 and facts[0] < 15 and round(sum(facts)) == 100
    narrow = column_widths(["Layout", "Concurrency", "Arm", "prompt tokens", "external hit",
                            "external hits", "lmcache hit", "prefix hits", "External share"],
                           [["TP4x2", "4", "accelerated", "2,052,096", "8,192,000",
                             "2,048,000", "8,192,000", "0", "99.8 %"]])
    budget = 118.0
    chars = [w * budget / 100 for w in narrow]
    assert chars[1] >= 1.1 * len("Concurrency") + 2 - 0.01  # the longest word fits whole
    assert chars[2] >= len("accelerated") + 2 - 0.01
    zh = column_widths(["并发数", "原因"], [["4", "both clear: drop 0.715 " * 8]])
    assert zh[0] * budget / 100 >= 1.1 * 6 + 2 - 0.01  # a short CJK header stays whole
    long_zh = column_widths(["术语", "中文"], [["TTFT", "从发送请求到收到第一个数据块的时间" * 4]])
    assert long_zh[1] > 60  # CJK text wraps anywhere but still wants the room


def test_column_widths_keep_unbroken_lines_whole() -> None:
    """The G3 cells table draws its cells `white-space: pre`: a line is its own minimum
    width there, so "[64.2, 78.0] %" cannot run into the column beside it."""
    from harness.report.render import column_widths

    columns = ["Concurrency", "TTFT p50 baseline", "TTFT p50 accelerated",
               "TTFT p50 drop (95 % CI)", "Throughput baseline", "Throughput accelerated",
               "Throughput gain (95 % CI)", "n (base / acc)", "Reps", "Verdict"]
    row = ["16", "0.163 s", "0.046 s", "72.0 %\n[64.2, 78.0] %", "4,433.7 tok/s",
           "5,933.6 tok/s", "33.8 %\n[29.8, 38.0] %", "1,024 /\n1,024", "4", "INCONCLUSIVE"]
    budget = 140.0  # its 7 pt font and padding (report.css table.cells; macros.html.j2)
    whole = [w * budget / 100
             for w in column_widths(columns, [row], budget=budget, whole_lines=True)]
    assert whole[7] >= len("1,024 /") + 2 - 0.01
    assert whole[3] >= len("[64.2, 78.0] %") + 2 - 0.01


def test_every_decision_setting_is_explained_in_both_languages() -> None:
    """A setting added to harness.config.decision without catalog entries fails here; the
    report's English is the harness's own."""
    from harness.config.decision import SETTINGS

    en, zh = translator("en"), translator("zh")
    for s in SETTINGS:
        key = f"settings.why.{s.key}"
        assert en(key) == s.why, s.key
        assert key in zh.messages and zh(key) != s.why, s.key


def test_computed_setting_reasons_are_translated() -> None:
    from harness.config.decision import deviations
    from harness.report.sections.g3_page1 import _why

    raw = {"gates": {"g3": {"drop_caches_on": [], "criteria": {"TP8": ["ttft_p50_drop"]},
                            "engine_process_check": False}}}
    devs = {d.key: d for d in deviations(raw)}
    assert all(d.weakened for d in devs.values())
    en, zh = translator("en"), translator("zh")
    assert _why(devs["gates.g3.drop_caches_on"], raw, en) == \
        "page cache not dropped on gpu, storage"
    assert _why(devs["gates.g3.drop_caches_on"], raw, zh) == "未在 gpu, storage 上清空页缓存"
    assert _why(devs["gates.g3.criteria.TP8"], raw, en) == "TP8 is not judged on throughput gain"
    assert _why(devs["gates.g3.criteria.TP8"], raw, zh) == "TP8 不按 吞吐提升 判定"
    assert _why(devs["gates.g3.engine_process_check"], raw, zh) == \
        "不比较推理引擎的命令行参数和环境变量"
    sim = {"simulated": True, "gates": {"g3": {"drop_caches_on": []}}}
    (d,) = deviations(sim)
    assert not d.weakened and _why(d, sim, en) == \
        "simulated hosts: no page cache in front of the tier"
    reason = {"gates": {"g3": {"drop_caches_on": ["gpu"],
                               "drop_caches_reason": "remote array"}}}
    (d,) = deviations(reason)
    assert _why(d, reason, en) == "page cache not dropped on storage: remote array"


def test_long_arm_values_keep_both_ends() -> None:
    from harness.report.sections.g3_page1 import SHOWN, _short

    t = translator("en")
    base = "/srv/gate/engines/baseline-TP4x2-1/url"
    acc = "/srv/gate/engines/accelerated-TP4x2-1/url"
    a, b = _short(base, t), _short(acc, t)
    assert len(a) == len(b) == SHOWN and "…" in a and a != b
    assert a.endswith("aseline-TP4x2-1/url") and b.endswith("erated-TP4x2-1/url")
    assert a.startswith("/srv/gate/") and b.startswith("/srv/gate/")
    assert _short("0.80", t) == "0.80" and _short(None, t) == "absent"
    assert _short("a\nb", t) == "a\\nb"


def test_column_widths_keep_a_verdict_whole_when_the_table_overflows() -> None:
    """Columns whose longest words together exceed the page: the short ones (a verdict,
    a header like "Outcome") keep their width, the long ones share the rest."""
    from harness.report.render import HEADER_BOLD, column_widths

    budget = 118.0
    long_word = "x" * 38
    widths = column_widths(["Check", "Expected", "Measured", "Outcome"],
                           [[long_word, long_word, long_word, "无法判定 (INCONCLUSIVE)"]])
    chars = [w * budget / 100 for w in widths]
    assert chars[3] >= 1.4 * len("(INCONCLUSIVE)") + 2 - 0.01
    assert chars[3] >= HEADER_BOLD * len("Outcome") + 2 - 0.01
    assert chars[0] < 38 and round(sum(widths)) == 100
