"""harness.ansible's pure parts: events captured from a real run, extravars, ssh config."""

from __future__ import annotations

import json
from pathlib import Path

from harness.ansible.events import facts_of, failures, parse_event
from harness.ansible.setup import ssh_config, unsafe_yaml
from harness.config.inventory import load_inventory

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transport"
EVENTS = FIXTURES / "ansible-events-lab.json"


def _events() -> list[dict[str, object]]:
    return list(json.loads(EVENTS.read_text()))


def test_only_host_results_become_events() -> None:
    parsed = [parse_event(e) for e in _events()]
    kept = [p for p in parsed if p is not None]
    assert len(kept) == 15  # 31 raw: runner_on_start and playbook_on_stats are dropped
    by = {(p.host, p.task): p for p in kept}
    assert by[("h1", "An ok task")].status == "ok"
    assert by[("h1", "A changed task")].status == "changed"
    assert by[("h2", "A skipped task")].status == "skipped"
    ignored = by[("h1", "An ignored failure")]
    assert ignored.status == "ignored" and "ignored-err" in ignored.message
    assert by[("h3", "Gathering Facts")].status == "unreachable"
    assert all(p.duration > 0 for p in kept)


def test_failures_put_unreachable_first_and_skip_ignored() -> None:
    kept = [p for p in (parse_event(e) for e in _events()) if p is not None]
    bad = failures(kept)
    assert [(b.host, b.status) for b in bad] == [("h3", "unreachable"), ("h2", "failed")]
    assert "No route to host" in bad[0].message
    assert "real failure on h2" in bad[1].message and "(rc 5)" in bad[1].message


def test_facts_come_from_setup_and_set_fact() -> None:
    kept = [p for p in (parse_event(e) for e in _events()) if p is not None]
    facts = facts_of(kept)
    assert set(facts) == {"h1", "h2"}
    assert facts["h1"]["gate_example"] == 42
    assert facts["h1"]["system"] == "Linux" and "distribution" in facts["h1"]


def test_extravars_are_json_escaped_and_templates_tagged_unsafe() -> None:
    # Only strings with template markers carry !unsafe: ansible-core 2.19 resolves an
    # !unsafe scalar's type from its text ("off" -> false); quoted scalars stay strings.
    text = unsafe_yaml({"name": "{{ lookup('pipe', 'id') }}", "argv": ["a\nb", 'q"', "off"],
                        "n": 3, "on": True, "none": None, "nested": {"k": "$(x) {% x %}"}})
    assert text == ('{"name": !unsafe "{{ lookup(\'pipe\', \'id\') }}", '
                    '"argv": ["a\\nb", "q\\"", "off"], "n": 3, "on": true, '
                    '"none": null, "nested": {"k": !unsafe "$(x) {% x %}"}}')


def test_ssh_config_gives_jump_hops_their_key_and_strict_site_known_hosts(
        tmp_path: Path) -> None:
    inv = tmp_path / "hosts"
    inv.write_text(
        "bastion ansible_host=198.18.0.2 ansible_user=jumper "
        "ansible_ssh_private_key_file=/keys/jump\n"
        "gpu1 ansible_host=198.19.0.9 ansible_ssh_private_key_file=/keys/gate "
        "ansible_ssh_common_args='-o ProxyJump=jumper@198.18.0.2'\n")
    text = ssh_config(load_inventory(inv), tmp_path / "known_hosts", user_known_hosts=None)
    block = text.split("Host 198.18.0.2\n", 1)[1].split("\n\n", 1)[0]
    assert '    IdentityFile "/keys/jump"' in block and "    User jumper" in block
    tail = text.split("Host *\n", 1)[1]
    assert f'UserKnownHostsFile "{(tmp_path / "known_hosts").resolve()}"' in tail
    assert "StrictHostKeyChecking yes" in tail and "Include ~/.ssh/config" in tail
