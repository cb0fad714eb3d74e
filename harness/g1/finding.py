"""What a G1 judge found: expected vs found, the problems in a field engineer's words,
what was read, and the same words as reason codes for the report's language."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.reasons import Reason, text


@dataclass(frozen=True)
class Finding:
    expected: str
    found: str
    problems: tuple[str, ...] = ()
    facts: dict[str, object] = field(default_factory=dict)  # serials, versions: host facts
    # Health checks: how many devices were actually read, and what should have been read
    # and was not (None for items, whose count problems say it). The caller makes a check
    # that read nothing, or not everything it needed, an ERROR: never a PASS.
    checked: int | None = None
    unread: tuple[str, ...] = ()
    # The same words as codes + parameters (harness.reasons), where a judge gives them:
    # the report says them in its language; one per problem, in order.
    expected_why: Reason | None = None
    found_why: Reason | None = None
    problem_whys: tuple[Reason, ...] = ()
    # Read, no problem found, and still not a PASS: why the reading cannot decide (an Xid
    # check whose only source could have been cleared). The caller makes it INCONCLUSIVE.
    inconclusive: str | None = None
    inconclusive_why: Reason | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


def missed(host: str, item: str, f: Finding) -> Reason:
    """The STOP-LOSS message of a missed item ("{host} {item}: {problems} (expected ...;
    found ...)") as a Reason; problems without a code are said as written."""
    parts = f.problem_whys if len(f.problem_whys) == len(f.problems) else \
        tuple(text(p) for p in f.problems)
    return Reason("g1.missed", {"host": host, "item": item,
                                "expected": f.expected_why or text(f.expected),
                                "found": f.found_why or f.found}, parts)
