"""A soak's repeated readings say a failure once: a host that does not answer for hours
is one event, and another only when its reason changes (not one per reading over 72 h)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field


@dataclass
class SaidOnce:
    _last: dict[Hashable, str] = field(default_factory=dict)

    def new(self, key: Hashable, why: str) -> bool:
        """Whether `why` is news for `key` (and remember it)."""
        if self._last.get(key) == why:
            return False
        self._last[key] = why
        return True
