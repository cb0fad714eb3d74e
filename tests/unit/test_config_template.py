"""`gate init`'s gate.yaml is generated from the config models: every key with its
default and a one-line comment; a new field without a comment fails here (issue 16)."""

from __future__ import annotations

from pathlib import Path

import yaml

from harness.config.loader import load_config
from harness.config.models import SiteConfig
from harness.config.template import COMMENTS, EXAMPLES, keys, template


def test_every_key_has_a_comment_and_every_comment_a_key() -> None:
    written = keys()
    assert sorted(set(written) - set(COMMENTS)) == [], "fields without a comment"
    assert sorted(set(COMMENTS) - set(written)) == [], "comments of keys that are gone"


def test_the_template_loads_and_holds_every_default(tmp_path: Path) -> None:
    (tmp_path / "gate.yaml").write_text(template())
    loaded = load_config(tmp_path / "gate.yaml").config
    raw = yaml.safe_load(template())
    defaults = SiteConfig.model_validate(
        {k: raw[k] for k in ("site", "campaign", "model")}).model_dump(mode="json")
    for key in keys():
        if key.split(".")[0] in ("arms", "layouts") or any(
                e == key or e.startswith(key + ".") for e in EXAMPLES):
            continue  # an example value (or a section holding one) is not the default
        node, want, got = raw, defaults, loaded.model_dump(mode="json")
        for part in key.split("."):
            node, want, got = node[part], want[part], got[part]
        assert node == want == got, key


def test_each_key_sits_under_its_comment() -> None:
    lines = template().splitlines()
    for key in ("gates.g3.estimate.start_s", "gates.g3.phase_timeout", "gates.g3.gate_budget",
                "gates.g1.optional", "gates.g4.optional", "gates.g3.drop_caches_on"):
        name = key.rsplit(".", 1)[1]
        at = next(i for i, line in enumerate(lines) if line.strip().startswith(f"{name}:"))
        assert lines[at - 1].strip() == f"# {COMMENTS[key]}", key
    assert "64 at c=4, 8 and 16" in template()  # what the dry-run prints, not "4 x c"


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "site" / "gate.yaml"


def test_the_example_site_is_generated_from_the_template() -> None:
    """examples/site/gate.yaml was hand-written and drifted from the models (issue 16):
    it is now the template with the example site's values, written by a script."""
    from harness.config.template import example_site

    assert not EXAMPLE.is_symlink()
    assert EXAMPLE.read_text(encoding="utf-8") == example_site(), \
        "examples/site/gate.yaml differs from the template: run scripts/example_site.py"


def test_the_example_site_validates_and_carries_every_commented_key() -> None:
    from click.testing import CliRunner

    from harness.cli import cli

    result = CliRunner().invoke(cli, ["config", "validate", "-c", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert "G1: ok" in result.output and "G2: ok" in result.output
    text = EXAMPLE.read_text(encoding="utf-8")
    raw = yaml.safe_load(text)
    for key in keys():
        node = raw
        for part in key.split("."):
            assert isinstance(node, dict) and part in node, key
            node = node[part]
        assert f"# {COMMENTS[key]}\n" in text, key
    assert raw["gates"]["g1"]["bom"] and raw["gates"]["g2"]["fio"]  # the site's own values
