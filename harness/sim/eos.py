"""EOS draws: which requests end early at an end-of-sequence token, and after how many
output tokens. Seeded, so a run is reproducible request for request (in arrival order).

As in vLLM: the EOS token is generated (it counts in usage.completion_tokens, its text is
empty), `min_tokens` keeps it out of the first `min_tokens` tokens (vLLM masks it while
fewer are out), and `ignore_eos` never stops early. An early stop is shorter than
`max_tokens` (a request that reaches max_tokens finishes "length"), so the drawn count is
in [min_tokens + 1, max_tokens).
"""

from __future__ import annotations

import random


class EosDraws:
    """Its own random stream (from the engine's seed, apart from the jitter and the faults:
    turning EOS on changes no other draw), and always the same two draws per request while
    the rate is above 0, so request k's fate does not depend on what the requests before
    it asked for (ignore_eos, min_tokens, max_tokens). Rate 0 draws nothing."""

    def __init__(self, rate: float, seed: int) -> None:
        self.rate = rate
        self._rng = random.Random(f"gate-sim-eos-{seed}")

    def draw(self, max_tokens: int, *, min_tokens: int = 0,
             ignore_eos: bool = False) -> int | None:
        """The output token count at which the EOS comes (the EOS included), or None: the
        request runs to max_tokens."""
        if self.rate <= 0:
            return None
        hit = self._rng.random() < self.rate
        u = self._rng.random()
        lo = min_tokens + 1
        if not hit or ignore_eos or lo >= max_tokens:
            return None
        return min(max_tokens - 1, lo + int(u * (max_tokens - lo)))
