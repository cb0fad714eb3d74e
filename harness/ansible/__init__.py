"""Playbooks through ansible-runner, with the site inventory and known_hosts.

`hosts_check` / `trust_host` live in harness.transport (they speak SSH directly) and are
re-exported here for callers that think of them as part of the Ansible side.
"""

from harness.ansible.events import AnsibleEvent
from harness.ansible.progress import progress_printer
from harness.ansible.runner import (
    PlaybookCancelled,
    PlaybookFailure,
    PlaybookResult,
    playbook_path,
    run_playbook,
)
from harness.transport.trust import HostStatus, hosts_check, trust_host

__all__ = [
    "AnsibleEvent",
    "HostStatus",
    "PlaybookCancelled",
    "PlaybookFailure",
    "PlaybookResult",
    "hosts_check",
    "playbook_path",
    "progress_printer",
    "run_playbook",
    "trust_host",
]
