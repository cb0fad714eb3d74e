"""Every command that takes a campaign name takes SITE/CAMPAIGN, and refuses a bare name
two sites share with one line naming them (exit 4); a site config's campaign is its own
site's. `gate runs show --json` says a run's uid and revision."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from gate_testing import MINIMAL_CONFIG, GateRunner
from sqlalchemy import text

from harness.store import Store
from harness.store import runs as store_runs

AMBIGUOUS = ("gate: error: campaign 'test-campaign' is in 2 sites: globex/test-campaign, "
             "test-site/test-campaign; name one as SITE/CAMPAIGN")


def error_line(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 4, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.startswith("gate: error:")]
    assert len(lines) == 1, out.stderr
    return lines[0]


@pytest.fixture
def two_sites(site_dir: Path) -> dict[str, int]:
    """The site config's campaign (test-site/test-campaign) and another site's campaign of
    the same name, a G1 run in each, and a G1 run of another campaign."""
    store = Store(f"sqlite:///{site_dir / 'gate.db'}")
    made = {}
    for key, site, campaign in (("ours", "test-site", "test-campaign"),
                                ("theirs", "globex", "test-campaign"),
                                ("other", "globex", "other")):
        rid = store_runs.start_run(store, store_runs.NewRun(
            campaign=campaign, site=site, customer="", kind="gate", gate="G1"))
        store_runs.finish_run(store, rid, verdict="PASS", reason="")
        made[key] = rid
    store.close()
    return made


def test_runs_list_and_status_take_site_slash_campaign(gate_cli: GateRunner,
                                                       two_sites: dict[str, int]) -> None:
    out = gate_cli("runs", "list", "--campaign", "globex/test-campaign", "--json")
    assert out.returncode == 0, out.stderr
    assert [r["id"] for r in json.loads(out.stdout)] == [two_sites["theirs"]]
    out = gate_cli("runs", "list", "--campaign", "other", "--json")  # in one site: bare
    assert [r["id"] for r in json.loads(out.stdout)] == [two_sites["other"]]
    out = gate_cli("status", "--campaign", "globex/test-campaign", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["campaign"] == "globex/test-campaign"
    assert doc["gates"][0]["run"] == two_sites["theirs"]
    # without --campaign: the config's campaign, within the config's site
    out = gate_cli("status", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["campaign"] == "test-campaign" and doc["gates"][0]["run"] == two_sites["ours"]


@pytest.mark.parametrize("command", [
    ("runs", "list", "--campaign", "test-campaign"),
    ("status", "--campaign", "test-campaign"),
    ("report", "--campaign", "test-campaign"),
    ("export", "--campaign", "test-campaign"),
])
def test_a_bare_name_two_sites_share_is_refused_naming_them(
        gate_cli: GateRunner, two_sites: dict[str, int], command: tuple[str, ...]) -> None:
    assert error_line(gate_cli(*command)) == AMBIGUOUS


def test_a_campaign_in_no_site_is_still_not_found(gate_cli: GateRunner,
                                                  two_sites: dict[str, int]) -> None:
    line = error_line(gate_cli("status", "--campaign", "initech/test-campaign"))
    assert "no campaign 'initech/test-campaign'" in line
    assert "(campaigns here: test-site/test-campaign, globex/test-campaign, other)" in line


def test_runs_show_says_uid_and_revision(gate_cli: GateRunner, site_dir: Path) -> None:
    (site_dir / "gate.yaml").write_text(MINIMAL_CONFIG)
    store = Store(f"sqlite:///{site_dir / 'gate.db'}")
    rid = store_runs.start_gate_run(store, store_runs.NewRun(
        campaign="c", site="s", customer="", kind="gate", gate="G3"))
    uid = store_runs.get_run(store, rid).uid
    store.close()

    def shown() -> dict[str, object]:
        out = gate_cli("runs", "show", str(rid), "--json")
        assert out.returncode == 0, out.stderr
        doc: dict[str, object] = json.loads(out.stdout)
        return doc

    assert (shown()["uid"], shown()["revision"]) == (uid, 1)
    store = Store(f"sqlite:///{site_dir / 'gate.db'}")
    store_runs.abort_run(store, rid, force=True)
    store.close()
    assert (shown()["uid"], shown()["revision"]) == (uid, 2)
    out = gate_cli("signoff", str(rid), "--by", "r", "--role", "vendor", "--note", "ok")
    assert out.returncode == 4  # only a finished run is signed off; ABORTED is not
    assert shown()["revision"] == 2
    listed = gate_cli("runs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [(r["uid"], r["revision"]) for r in json.loads(listed.stdout)] == [(uid, 2)]


RESULT = (Path(__file__).resolve().parents[1] / "fixtures" / "loadgen"
          / "vllm-bench-serve-result_er0080_v0.25.1_opt125m.json")


def test_an_import_is_filed_under_site_slash_campaign(gate_cli: GateRunner, site_dir: Path,
                                                      two_sites: dict[str, int],
                                                      tmp_path: Path) -> None:
    """`gate import vllm-bench` (and `gate bench`, the same filing): SITE/CAMPAIGN files
    it there; a bare --campaign with a site config, within the config's site; a bare one
    without a config, under the store's campaign of that name, refused when two sites
    have one."""

    def filed(*args: str, cwd: Path | None = None) -> tuple[str, str]:
        """(site, campaign) the import was filed under."""
        out = gate_cli("import", "vllm-bench", str(RESULT), "--json", *args, cwd=cwd)
        assert out.returncode == 0, out.stderr
        store = Store(f"sqlite:///{site_dir / 'gate.db'}")
        try:
            run = store_runs.get_run(store, json.loads(out.stdout)["run_id"])
            with store.engine.connect() as conn:
                site, name = conn.execute(text(
                    "SELECT s.name, c.name FROM campaign c JOIN site s ON s.id = c.site_id "
                    "WHERE c.id = :c"), {"c": run.campaign_id}).one()
        finally:
            store.close()
        return str(site), str(name)

    assert filed("--campaign", "globex/test-campaign") == ("globex", "test-campaign")
    assert filed("--campaign", "test-campaign") == ("test-site", "test-campaign")  # config's
    assert filed("--campaign", "initech/new") == ("initech", "new")  # made, site and all
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # no config: the store's `other` (in globex), as before sites had names of their own
    assert filed("--campaign", "other", cwd=elsewhere) == ("globex", "other")
    out = gate_cli("import", "vllm-bench", str(RESULT), "--campaign", "test-campaign",
                   cwd=elsewhere)
    assert error_line(out) == AMBIGUOUS
    store = Store(f"sqlite:///{site_dir / 'gate.db'}")
    assert len(store_runs.runs(store, kind="import")) == 4  # the refused one made none
    store.close()
