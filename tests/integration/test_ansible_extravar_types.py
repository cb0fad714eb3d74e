"""Extra vars reach playbooks as the same strings gate passed: ansible-core 2.19 turned
`!unsafe "off"` into the boolean false, which broke `--external-tier off` in serve.yml."""

from __future__ import annotations

from pathlib import Path

from harness.ansible import run_playbook

PLAYBOOK = """\
- hosts: all
  gather_facts: false
  tasks:
    - name: types
      ansible.builtin.set_fact:
        seen_types: "{{ words | map('type_debug') | list }}"
        seen: "{{ words }}"
"""

WORDS = ["off", "yes", "no", "1", "null", "~", "{{ lookup('pipe', 'id') }}", "$(id)", "a b"]


def test_bool_like_and_template_strings_arrive_literally(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[gpu]\nlocalhost ansible_connection=local\n")
    book = tmp_path / "types.yml"
    book.write_text(PLAYBOOK)
    result = run_playbook(book, inventory=inventory, known_hosts=tmp_path / "known_hosts",
                          limit="localhost", extravars={"words": WORDS},
                          artifact_dir=tmp_path / "art")
    facts = next(e.result for e in result.events if e.task == "types" and e.status == "ok")
    seen = facts.get("ansible_facts", facts)
    assert seen["seen"] == WORDS
    assert set(seen["seen_types"]) == {"str"}
