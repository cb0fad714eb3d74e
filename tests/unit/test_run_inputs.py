"""The resume digest covers the run's local inputs by content: `v2:<config>:<the rest>`
(64 characters, the run row's column), the config part alone says whether the config
changed, and the record names what else did."""

from __future__ import annotations

from harness.workflow.run_inputs import (
    RunInput,
    changed,
    config_changed,
    digest,
    manifest_text,
    parse_manifest,
)

START = (RunInput("config", "/s/gate.yaml", "c" * 64),
         RunInput("inventory", "/s/hosts.ini", "a" * 64),
         RunInput("playbook arms.baseline.start", "/s/serve.yml", "b" * 64))


def test_the_digest_form_and_its_parts() -> None:
    d = digest(START)
    assert d.startswith("v2:" + "c" * 20 + ":") and len(d) == 64
    moved = tuple(RunInput(i.role, "/elsewhere" + i.path, i.sha256) for i in START)
    assert digest(moved) == d  # contents, not paths
    edited = (START[0], RunInput("inventory", "/s/hosts.ini", "e" * 64), START[2])
    assert digest(edited) != d and not config_changed(d, edited)
    new_config = (RunInput("config", "/s/gate.yaml", "f" * 64), *START[1:])
    assert config_changed(d, new_config)


def test_the_record_round_trips_and_names_what_changed() -> None:
    assert parse_manifest(manifest_text(START)) == START
    edited = (START[0], RunInput("inventory", "/s/hosts.ini", "e" * 64), START[2])
    assert [i.role for i in changed(START, edited)] == ["inventory"]
    gone = START[:2]
    assert [i.role for i in changed(START, gone)] == ["playbook arms.baseline.start"]
    assert changed(START, START) == []
