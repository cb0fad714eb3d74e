"""One exception tree for the whole harness.

Every error carries its context (file / key, host, command, stage) so the CLI can print
one line and pick the exit code; nothing else in the harness invents its own root class.

    GateError                      base; .exit_code, .context()
    ├── UsageError                 exit 4: bad command line, unknown gate, bad --db URL
    │   ├── ConfigError            file + key path + expected / found (YAML line:col)
    │   ├── InventoryError         inventory file / group / host
    │   ├── PrerequisiteError      gate order not met (names the gate, how to override)
    │   ├── PreflightError         the site cannot run a gate's checks: one cause a line
    │   ├── LockError              another run holds the campaign (names it)
    │   ├── NotFoundError          no such run / campaign in the store
    │   ├── RunStateError          a run is not in the state the operation needs
    │   └── StoreUrlError          the store's URL / directory / driver is unusable
    ├── StoreError                 exit 4 when the schema is newer; else 3
    │   ├── SchemaTooNewError
    │   ├── StoreDamagedError      not a SQLite database, or damaged
    │   ├── StoreReadOnlyError     cannot write: read-only / frozen file, dir or filesystem
    │   │   └── StoreFrozenError   ... made so while this process had the store open
    │   └── StoreBusyError         locked by another process past the busy timeout
    └── InfrastructureError        exit 3: the harness or the site failed, never a check failure
        ├── TransportError         host + command
        │   ├── UnreachableError
        │   ├── AuthError
        │   ├── HostKeyError
        │   │   ├── UnknownHostKeyError
        │   │   └── ChangedHostKeyError
        │   └── CommandTimeoutError
        ├── PlaybookError          host + task + message (unreachable kept distinct)
        ├── EndpointError          an HTTP endpoint is down / not OpenAI-compatible / wrong model
        └── MeasurementError       a measurement could not be taken or parsed (stage)
            └── ParseError         a tool's output in a shape we do not know

The store raises the typed errors above worded for any caller (what happened, and what
fixes it without naming a command); the command line adds its own commands and flags
(harness.cli.context.worded), so the store never speaks CLI.

An infrastructure error is never turned into a STOP-LOSS and never into a PASS: the gate
runner maps it to ERROR.

Beside the errors, two declared check outcomes (not errors; a check raises them the way it
would call pytest.skip):

    CheckOutcome
    └── Inconclusive               not enough evidence either way -> INCONCLUSIVE
        └── NeedsSignoff           above the expected band -> INCONCLUSIVE until signed
"""

from __future__ import annotations

EXIT_PASS = 0
EXIT_STOP_LOSS = 1
EXIT_INCONCLUSIVE = 2
EXIT_ERROR = 3
EXIT_USAGE = 4


class GateError(Exception):
    """Base of every error the harness raises on purpose."""

    exit_code: int = EXIT_ERROR

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        key: str | None = None,
        host: str | None = None,
        command: str | None = None,
        stage: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.key = key
        self.host = host
        self.command = command
        self.stage = stage
        self.hint = hint

    def context(self) -> dict[str, str]:
        """The non-empty context fields, for logs and store rows."""
        fields = {
            "file": self.file,
            "key": self.key,
            "host": self.host,
            "command": self.command,
            "stage": self.stage,
        }
        return {k: v for k, v in fields.items() if v}

    def one_line(self) -> str:
        """The message a user sees: where, what, and what to do next."""
        where = []
        if self.file:
            where.append(self.file + (f": {self.key}" if self.key else ""))
        elif self.key:
            where.append(self.key)
        if self.host:
            where.append(f"host {self.host}")
        if self.stage:
            where.append(f"stage {self.stage}")
        if self.command:
            where.append(f"command {self.command!r}")
        text = (", ".join(where) + ": " if where else "") + self.message
        if self.hint:
            text += f" ({self.hint})"
        return " ".join(text.split("\n"))

    def __str__(self) -> str:
        return self.one_line()


class UsageError(GateError):
    """The user asked for something that cannot be done as asked."""

    exit_code = EXIT_USAGE


class ConfigError(UsageError):
    """The site config is missing, unreadable or invalid."""


class InventoryError(UsageError):
    """The Ansible inventory is missing, unparseable or lacks a group / host."""


class PrerequisiteError(UsageError):
    """The gate order is not met (G3 needs G1 and G2 passed)."""


class PreflightError(UsageError):
    """What the pre-flight found before a gate's run row existed (harness/workflow/
    preflight.py): each cause its own UsageError naming host / key, shown one a line."""

    def __init__(self, gate: str, causes: list[UsageError]) -> None:
        super().__init__(f"{gate} not started: {len(causes)} problem(s) found before "
                         "anything was measured; nothing was recorded", stage="preflight")
        self.gate = gate
        self.causes = tuple(causes)

    def lines(self) -> list[str]:
        """One line per cause, then what was (not) done."""
        return [c.one_line() for c in self.causes] + [self.message]

    def one_line(self) -> str:
        return "; ".join(self.lines())


class LockError(UsageError):
    """Another gate run holds this campaign.

    `run_id` is the run holding it (None when it could not be read); `gone` says its
    process is known to be gone (it ran on this host)."""

    def __init__(self, message: str, *, run_id: int | None = None, gone: bool = False,
                 file: str | None = None, key: str | None = None,
                 hint: str | None = None) -> None:
        super().__init__(message, file=file, key=key, hint=hint)
        self.run_id = run_id
        self.gone = gone


class NotFoundError(UsageError):
    """A run or campaign asked for is not in the store (`what` is "run" or "campaign")."""

    def __init__(self, message: str, *, what: str, name: str, file: str | None = None) -> None:
        super().__init__(message, file=file)
        self.what = what
        self.name = name


class RunStateError(UsageError):
    """A run is not in the state an operation needs (aborting a live run, ...).

    `overridable`: the operator may insist (the run is elsewhere and only its heartbeat
    says it is alive)."""

    def __init__(self, message: str, *, run_id: int, overridable: bool = False,
                 hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.run_id = run_id
        self.overridable = overridable


class StoreUrlError(UsageError):
    """The store cannot be opened as named: not a URL, no such directory, no driver."""


class StoreError(GateError):
    """The results store cannot be opened or written."""

    exit_code = EXIT_ERROR


class SchemaTooNewError(StoreError):
    """The store was written by a newer harness; refuse rather than corrupt it."""

    exit_code = EXIT_USAGE


class StoreDamagedError(StoreError):
    """The store's file is not a SQLite database, or is damaged."""


class StoreReadOnlyError(StoreError):
    """The store cannot be written: a read-only or frozen file, directory or filesystem."""


class StoreFrozenError(StoreReadOnlyError):
    """The store's files became immutable / read-only while this process had it open."""


class StoreBusyError(StoreError):
    """Another process held the store's write lock for longer than the busy timeout."""


class InfrastructureError(GateError):
    """The harness or the site failed: the gate says ERROR, never PASS or STOP-LOSS."""

    exit_code = EXIT_ERROR


class TransportError(InfrastructureError):
    """A command could not be run on a host."""


class UnreachableError(TransportError):
    """The host did not answer (DNS, refused, no route, link down)."""


class AuthError(TransportError):
    """The host answered but refused our credentials."""


class HostKeyError(TransportError):
    """The host's key is not the one on record."""


class UnknownHostKeyError(HostKeyError):
    """No key on record for the host: run `gate hosts trust HOST`."""


class ChangedHostKeyError(HostKeyError):
    """The host presented a different key from the one on record."""


class CommandTimeoutError(TransportError):
    """A command ran past its timeout and was killed."""


class PlaybookError(InfrastructureError):
    """An Ansible playbook failed on a host (task + message) or the host was unreachable."""

    def __init__(
        self,
        message: str,
        *,
        host: str | None = None,
        task: str | None = None,
        unreachable: bool = False,
        stage: str | None = None,
        command: str | None = None,
    ) -> None:
        super().__init__(message, host=host, stage=stage or task, command=command)
        self.task = task
        self.unreachable = unreachable


class EndpointError(InfrastructureError):
    """An engine endpoint is down, not OpenAI-compatible, or serves the wrong model."""


class MeasurementError(InfrastructureError):
    """A measurement could not be taken."""


class ParseError(MeasurementError):
    """A tool's output is in a shape the parser does not know: fail loudly, never guess."""


class CheckOutcome(Exception):
    """A check's declared outcome other than pass / fail (see the module docstring)."""


class Inconclusive(CheckOutcome):
    """The check could not decide: too little evidence, accelerator not exercised, ..."""


class NeedsSignoff(Inconclusive):
    """A result above the expected band: INCONCLUSIVE until a reviewer signs it off."""
