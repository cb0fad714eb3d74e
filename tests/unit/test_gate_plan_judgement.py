"""What a gate run's verdict can be, given what its suite stored against its plan:
pass-through arguments are an allowlist, a plan not executed is never PASS, a partial
run is never PASS (the review's route 1: `-o python_functions=...` gave PASS, exit 0)."""

from __future__ import annotations

import pytest

from harness.errors import UsageError
from harness.pytest_args import check_pytest_args
from harness.pytest_plugin import Tally
from harness.runner import Plan, _judge, _Judged
from harness.verdict import Verdict

PLAN = Plan(("test_a[L]", "test_b[L]", "test_cell[L-c4]"))


@pytest.mark.parametrize("args", [
    ["-o", "python_functions=test_arms_*"], ["-opython_functions=x"], ["-p", "myplugin"],
    ["-c", "other.ini"], ["--rootdir", "/tmp"], ["/tmp/fake_tests"], ["--ignore", "x.py"],
    ["--collect-only"], ["--pdb"], ["--setup-only"], ["-vx"], ["--confcutdir=/"],
    ["--import-mode=prepend"], ["--override-ini", "x=y"], ["-W", "error"],
])
def test_anything_but_output_and_selection_is_refused(args: list[str]) -> None:
    with pytest.raises(UsageError) as err:
        check_pytest_args(args)
    assert err.value.exit_code == 4 and "not allowed" in err.value.one_line()


@pytest.mark.parametrize(("args", "selecting"), [
    ([], False), (["-v"], False), (["-vv", "-s", "--tb=short", "-l"], False),
    (["--log-level", "DEBUG", "-rA"], False), (["-k", "TP8"], True), (["-kTP8"], True),
    (["-m", "slow"], True), (["--deselect", "x::y"], True), (["-x"], True),
    (["--maxfail=1"], True),
])
def test_output_and_selection_options_pass(args: list[str], selecting: bool) -> None:
    assert check_pytest_args(args).selecting is selecting


def test_an_option_without_its_value_is_refused() -> None:
    with pytest.raises(UsageError, match="needs a value"):
        check_pytest_args(["-k"])


def tally(ran: dict[str, Verdict], deselected: tuple[str, ...] = ()) -> Tally:
    t = Tally()
    t.ids = set(ran)
    t.outcomes = list(ran.values())
    t.collected = len(ran)
    t.collected_ids = list(ran)
    t.deselected = len(deselected)
    t.deselected_ids = list(deselected)
    return t


def judged(plan: Plan = PLAN, args: tuple[str, ...] = ()) -> _Judged:
    return _Judged(plan, check_pytest_args(args), interrupted=False, code=0)


def test_a_plan_executed_and_passed_is_pass() -> None:
    all_pass = tally(dict.fromkeys(PLAN.checks or (), Verdict.PASS))
    assert _judge(all_pass, judged())[:4] == (Verdict.PASS, "", False, 3)


def test_checks_missing_from_the_plan_are_error_not_pass() -> None:
    """Some other way of collecting less (a plugin, an ini option) left checks out."""
    two = tally({"test_a[L]": Verdict.PASS, "test_b[L]": Verdict.PASS})
    verdict, reason, partial, selected, total = _judge(two, judged())
    assert verdict is Verdict.ERROR and not partial
    assert "the plan was not executed: 1 of 3" in reason and "test_cell[L-c4]" in reason
    assert (selected, total) == (2, 3)


def test_checks_outside_the_plan_are_error() -> None:
    extra = tally({**dict.fromkeys(PLAN.checks or (), Verdict.PASS),
                   "test_fake[x]": Verdict.PASS})
    verdict, reason, *_ = _judge(extra, judged())
    assert verdict is Verdict.ERROR and "outside the suite's plan: test_fake[x]" in reason


def test_a_selected_subset_is_partial_and_never_pass() -> None:
    one = tally({"test_a[L]": Verdict.PASS}, deselected=("test_b[L]", "test_cell[L-c4]"))
    verdict, reason, partial, selected, total = _judge(one, judged(args=("-k", "test_a")))
    assert (verdict, partial, selected, total) == (Verdict.INCONCLUSIVE, True, 1, 3)
    assert reason.startswith("PARTIAL: 1 of 3 planned checks ran")
    failed = tally({"test_a[L]": Verdict.STOP_LOSS}, deselected=("test_b[L]",))
    assert _judge(failed, judged(args=("-k", "a")))[0] is Verdict.STOP_LOSS  # still decides


def test_a_custom_suites_plan_is_what_it_collected() -> None:
    both = tally({"test_x": Verdict.PASS, "test_y": Verdict.PASS})
    assert _judge(both, judged(Plan(None)))[:2] == (Verdict.PASS, "")
    half = tally({"test_x": Verdict.PASS})
    half.collected_ids.append("test_y")  # collected, never reported
    assert _judge(half, judged(Plan(None)))[0] is Verdict.ERROR
