"""`gate status`, `gate runs list` and `gate runs show` never cut a verdict: not at 80
columns (where status printed "INCONCLUSI…"), not at 60 (where a table cannot fit and
each row becomes a block of lines), and --wide puts a row on one line (issue 16)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from report_support import fill

from harness.cli import cli
from harness.cli.tables import Cell, Column, widths
from harness.store import runs
from harness.store.db import Store

CAMPAIGN = "narrow-1"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A campaign whose G1 ended STOP-LOSS and whose G3 (forced) INCONCLUSIVE, with
    checks of each outcome and a long reason."""
    url = f"sqlite:///{tmp_path_factory.mktemp('tables') / 'gate.db'}"
    store = Store(url)
    g1 = fill.new_run(store, "G1", campaign=CAMPAIGN, simulated=True)
    fill.add_checks(store, g1, [*fill.G1_CHECKS[:2],
                                ("nvme firmware", "storage-node-01", "STOP-LOSS", "SU6SM001",
                                 "SU6SM005 on /dev/nvme0n1, /dev/nvme1n1 and /dev/nvme2n1")])
    fill.finish_from_checks(store, g1)
    g3 = fill.new_run(store, "G3", campaign=CAMPAIGN, forced=True, simulated=True)
    fill.add_checks(store, g3, [("same model on both arms", "gpu1", "PASS", "m", "m"),
                                ("cell", "gpu1", "INCONCLUSIVE", ">= 25 % drop", "22 %")])
    runs.finish_run(store, g3, verdict="INCONCLUSIVE", needs_signoff=True,
                    reason="above band: needs sign-off; the load generator was saturated "
                           "in 2 of 12 phases (event-loop lag p99 140 ms)")
    store.close()
    return url


def _gate(db: str, columns: int, *args: str) -> str:
    result = CliRunner().invoke(cli, [*args, "--db", db], env={"COLUMNS": str(columns)},
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


COMMANDS = [("status", "--campaign", CAMPAIGN), ("runs", "list"), ("runs", "show", "1"),
            ("runs", "show", "2")]


@pytest.mark.parametrize("columns", [80, 60])
@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_no_verdict_is_cut_at_80_or_60_columns(db: str, columns: int,
                                               args: tuple[str, ...]) -> None:
    out = _gate(db, columns, *args)
    words = out.split()
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= columns, out
    shown = {"STOP-LOSS", "INCONCLUSIVE"} if args[0] != "runs" or args[1] == "list" else \
        {"1": {"STOP-LOSS", "PASS"}, "2": {"INCONCLUSIVE", "PASS"}}[args[2]]
    for verdict in shown:
        assert any(w.strip(",") == verdict for w in words), (verdict, out)


def test_a_reason_that_does_not_fit_beside_its_row_goes_under_it(db: str) -> None:
    wide = _gate(db, 200, "runs", "list")
    assert "┃ reason" in wide  # a table where the reason fits beside the row
    for columns in (80, 60):
        out = _gate(db, columns, "runs", "list")
        lines = out.splitlines()
        assert "┃" not in out and lines[0].split() == ["run", "gate", "verdict", "started",
                                                      "marks"], out
        at = next(i for i, line in enumerate(lines) if line.split()[:3] == ["2", "G3",
                                                                          "INCONCLUSIVE"])
        first = next(i for i in range(at + 1, len(lines))
                     if lines[i].startswith("    above band"))
        under = " ".join(line.strip() for line in lines[first:])
        assert under == ("above band: needs sign-off; the load generator was saturated in "
                         "2 of 12 phases (event-loop lag p99 140 ms)"), out


def test_a_table_that_cannot_fit_becomes_blocks(db: str) -> None:
    narrow = _gate(db, 60, "status", "--campaign", CAMPAIGN)
    assert "┃" not in narrow and "  verdict: INCONCLUSIVE" in narrow.splitlines(), narrow


BOX = "│┃━┏┓┗┛┡┩└┘┳┻╇┴┬─"


def _tokens(out: str) -> set[str]:
    return {w for line in out.splitlines() for w in line.translate(
        {ord(c): " " for c in BOX}).split()}


@pytest.mark.parametrize("args", [("runs", "list"), ("status", "--campaign", CAMPAIGN)],
                         ids=lambda a: a[0])
def test_no_line_is_past_80_columns_and_no_word_is_cut(db: str, args: tuple[str, ...]) -> None:
    """Every word at 80 columns is a whole word of the same listing printed --wide (one
    line a row, nothing folded): folded between words, never inside one."""
    narrow, wide = _gate(db, 80, *args), _gate(db, 80, *args, "--wide")
    assert max(len(line) for line in narrow.splitlines()) <= 80, narrow
    assert max(len(line) for line in wide.splitlines()) > 80  # there was something to fold
    cut = _tokens(narrow) - _tokens(wide)
    assert not cut, (cut, narrow)


def test_wide_puts_each_row_on_one_line(db: str) -> None:
    out = _gate(db, 60, "runs", "show", "1", "--wide")
    row = next(line for line in out.splitlines() if "nvme firmware" in line)
    assert "STOP-LOSS" in row and "/dev/nvme2n1" in row


def test_widths_keep_whole_words_and_fold_the_rest() -> None:
    cols = [Column("gate", whole=True), Column("verdict", whole=True), Column("reason")]
    rows: list[list[Cell | str]] = [["G3", Cell("INCONCLUSIVE"), " ".join(["x"] * 40)]]
    assert widths(cols, rows, 200) == [4, 12, 79]  # all of it fits: natural widths
    got = widths(cols, rows, 40)
    assert got is not None and got[:2] == [4, 12] and sum(got) + 3 * 3 + 1 == 40
    assert widths(cols, rows, 30) is None  # 4 + 12 + 10 + borders > 30: blocks

