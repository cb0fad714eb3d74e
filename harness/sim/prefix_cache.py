"""Chained block hashes and the GPU prefix cache (vLLM's automatic prefix caching, in
miniature).

Block i's hash covers block i's tokens and block i-1's hash, so equal hashes mean equal
prefixes. The salt carries the model and the TP degree: KV laid out for TP8 is not the KV
a TP4 engine can load (LMCache keys carry the world size for the same reason).
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from hashlib import blake2b

HASH_BYTES = 16


def block_hashes(tokens: list[int], block_size: int, salt: str) -> list[bytes]:
    """One hash per full block of `tokens`."""
    data = array("I", tokens).tobytes()
    step = block_size * 4
    h = blake2b(salt.encode(), digest_size=HASH_BYTES).digest()
    out: list[bytes] = []
    for start in range(0, (len(tokens) // block_size) * step, step):
        h = blake2b(h + data[start:start + step], digest_size=HASH_BYTES).digest()
        out.append(h)
    return out


def chunk_keys(hashes: list[bytes], blocks_per_chunk: int) -> list[bytes]:
    """The tier's keys: the hash of the last block of every full chunk."""
    return hashes[blocks_per_chunk - 1::blocks_per_chunk]


class GpuPrefixCache:
    """LRU over block hashes with a capacity in tokens; cleared by a restart (it is
    process memory, like the GPU's). A sequence's blocks are touched tail first, so its
    tail is evicted before its head and a prefix stays usable (vLLM frees blocks in
    reverse order for the same reason)."""

    def __init__(self, capacity_tokens: int, block_size: int) -> None:
        self.block_size = block_size
        self.capacity_blocks = max(0, capacity_tokens // block_size)
        self._blocks: OrderedDict[bytes, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._blocks)

    @property
    def used_tokens(self) -> int:
        return len(self._blocks) * self.block_size

    def match(self, hashes: list[bytes], max_blocks: int) -> int:
        """Number of leading blocks cached (at most max_blocks); touches them."""
        n = 0
        blocks = self._blocks
        for h in hashes[:max_blocks]:
            if h not in blocks:
                break
            n += 1
        for h in reversed(hashes[:n]):
            blocks.move_to_end(h)
        return n

    def insert(self, hashes: list[bytes]) -> None:
        blocks = self._blocks
        for h in reversed(hashes):
            if h in blocks:
                blocks.move_to_end(h)
            else:
                blocks[h] = None
        while len(blocks) > self.capacity_blocks:
            blocks.popitem(last=False)

    def clear(self) -> None:
        self._blocks.clear()
