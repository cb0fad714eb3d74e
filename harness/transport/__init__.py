"""Running commands on hosts: one Transport contract, local / SSH (paramiko) / fake.

Only this package talks to hosts over SSH; harness.ansible drives ansible-runner with
the same inventory and the same site known_hosts file.
"""

from harness.transport.base import Transport
from harness.transport.fake import FakeCall, FakeResponse, FakeTransport
from harness.transport.hostkeys import KnownHosts, fingerprint
from harness.transport.local import LocalTransport
from harness.transport.pool import TransportPool, connect
from harness.transport.result import (
    DEFAULT_OUTPUT_CAP,
    CommandFailedError,
    CommandResult,
)
from harness.transport.ssh import SSHTransport
from harness.transport.trust import HostStatus, hosts_check, trust_host

__all__ = [
    "DEFAULT_OUTPUT_CAP",
    "CommandFailedError",
    "CommandResult",
    "FakeCall",
    "FakeResponse",
    "FakeTransport",
    "HostStatus",
    "KnownHosts",
    "LocalTransport",
    "SSHTransport",
    "Transport",
    "TransportPool",
    "connect",
    "fingerprint",
    "hosts_check",
    "trust_host",
]
