"""The appendix's config and facts as rows a customer reads, without the harness
machine's paths (issue 16: four pages of raw config JSON with local paths)."""

from __future__ import annotations

from harness.report import readable

# from a `gate demo` run's stored config (run 3) and host facts
ARGV = ["/work/wt/r16/.venv/bin/python", "-m", "harness.sim.control", "start", "--state-dir",
        "/tmp/r16demo/20261203-182106-default/engines/baseline-{layout}-{instance}"]


def test_paths_of_the_harness_machine_are_cut_to_their_last_part() -> None:
    assert readable.shorten_paths(" ".join(ARGV)) == (
        "…/python -m harness.sim.control start --state-dir …/baseline-{layout}-{instance}")
    url = "http://127.0.0.1:31425/v1/models"
    assert readable.shorten_paths(url) == url
    assert readable.shorten_paths("argv:--tier-dir") == "argv:--tier-dir"


def test_config_flattens_to_dotted_rows_without_empty_values() -> None:
    config = {"gates": {"g2": {"fio": [{"name": "local-disk", "path": "/tmp/x/fio-local"}],
                               "gds": False, "optional": []}},
              "arms": {"baseline": {"start": {"command": ARGV[:3], "env": {}}}},
              "report": {"logo": None}}
    assert readable.rows(config) == [
        ("arms.baseline.start.command", "…/python, -m, harness.sim.control"),
        ("gates.g2.fio[0].name", "local-disk"), ("gates.g2.fio[0].path", "…/fio-local"),
        ("gates.g2.gds", "false")]


def test_a_fact_reads_as_key_value_lines() -> None:
    assert readable.lines({"aiohttp": "3.14.5", "gate-harness": "0.1.0"}) == \
        "aiohttp: 3.14.5\ngate-harness: 0.1.0"
    assert readable.lines(["0123456789012", "1234567890123"]) == "0123456789012, 1234567890123"
    assert readable.lines(870.3) == "870.3"
    many = readable.lines({f"k{i:02}": i for i in range(15)}, limit=12)
    assert many.splitlines()[-1] == "(+3)" and len(many.splitlines()) == 13
