"""An incremental Server-Sent Events decoder (WHATWG HTML "event stream" rules).

Bytes go in as the network delivers them; complete events' `data` payloads come out.
No line-length limit (a 1 MB event is fine: the 64 KB readline limit that breaks other
clients at long contexts does not exist here). Handles LF, CRLF and CR line ends, comments
(`:ping`), multi-line `data:` fields, and ignores `event:` / `id:` / `retry:`.
"""

from __future__ import annotations


class SSEDecoder:
    """Feed bytes, get the `data` of each complete event (bytes, lines joined by LF)."""

    __slots__ = ("_buf", "_drop_lf", "_scan")

    def __init__(self) -> None:
        self._buf = b""
        self._scan = 0  # where to resume looking for the end of the next event
        self._drop_lf = False  # the last feed ended in CR: a leading LF completes a CRLF

    @property
    def pending(self) -> int:
        """Bytes held back for an event that has not ended yet."""
        return len(self._buf)

    @property
    def idle(self) -> bool:
        """Between events: nothing held back, no CR awaiting its LF."""
        return not self._buf and not self._drop_lf

    def feed(self, chunk: bytes) -> list[bytes]:
        # Fast path: nothing held back and the read is exactly one `data: ...` event (what
        # a token chunk is nearly every time). Same result as the general path below.
        if (not self._buf and not self._drop_lf and chunk.startswith(b"data: ")
                and chunk.find(b"\n") == len(chunk) - 2 and chunk.endswith(b"\n\n")
                and b"\r" not in chunk):
            return [chunk[6:-2]]
        if self._drop_lf:
            self._drop_lf = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        if b"\r" in chunk:
            self._drop_lf = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buf = self._buf + chunk if self._buf else chunk
        out: list[bytes] = []
        start = 0
        find = buf.find
        pos = find(b"\n\n", self._scan)
        while pos >= 0:
            block = buf[start:pos]
            start = pos + 2
            if block:
                # fast path: one "data: ..." line, the shape every OpenAI server sends
                if block.startswith(b"data: ") and b"\n" not in block:
                    out.append(block[6:])
                else:
                    data = self._slow(block)
                    if data is not None:
                        out.append(data)
            pos = find(b"\n\n", start)
        self._buf = buf[start:]
        # the event's first LF may be the last byte of this feed
        self._scan = max(len(self._buf) - 1, 0)
        return out

    def close(self) -> list[bytes]:
        """End of stream: per the spec an unterminated last event is discarded."""
        self._buf = b""
        self._scan = 0
        self._drop_lf = False
        return []

    @staticmethod
    def _slow(block: bytes) -> bytes | None:
        data: list[bytes] = []
        seen = False
        for line in block.split(b"\n"):
            if not line or line.startswith(b":"):
                continue
            name, sep, value = line.partition(b":")
            if sep and value.startswith(b" "):
                value = value[1:]
            if name == b"data":
                data.append(value)
                seen = True
        return b"\n".join(data) if seen else None
