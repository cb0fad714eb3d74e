"""An incremental Server-Sent Events decoder (WHATWG HTML "event stream" rules).

Bytes go in as the network delivers them; complete events' `data` payloads come out.
No line-length limit (a 1 MB event is fine: the 64 KB readline limit that breaks other
clients at long contexts does not exist here). Handles LF, CRLF and CR line ends, comments
(`:ping`), multi-line `data:` fields, and ignores `event:` / `id:` / `retry:`.

Searches are find(), not `in`: `x in some_bytes` first tries x as an integer, and for
bytes raises and clears a TypeError inside (formatting its message), several times the
cost of the search on a read this size.
"""

from __future__ import annotations


class SSEDecoder:
    """Feed bytes, get the `data` of each complete event (bytes, lines joined by LF)."""

    __slots__ = ("_buf", "_drop_lf", "_scan", "idle")

    def __init__(self) -> None:
        self._buf = b""
        self._scan = 0  # where to resume looking for the end of the next event
        self._drop_lf = False  # the last feed ended in CR: a leading LF completes a CRLF
        self.idle = True  # between events: nothing held back, no CR awaiting its LF

    @property
    def pending(self) -> int:
        """Bytes held back for an event that has not ended yet."""
        return len(self._buf)

    def feed(self, chunk: bytes) -> list[bytes]:
        # Fast path: nothing held back and the read is exactly one `data: ...` event (what
        # a token chunk is nearly every time). Same result as the general path below.
        if (self.idle and chunk.startswith(b"data: ")
                and chunk.find(b"\n") == len(chunk) - 2 and chunk.endswith(b"\n\n")
                and chunk.find(b"\r") < 0):
            return [chunk[6:-2]]
        if self._drop_lf:
            self._drop_lf = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        if chunk.find(b"\r") >= 0:
            self._drop_lf = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buf = self._buf + chunk if self._buf else chunk
        if self._scan and buf.find(b"\n\n", self._scan) < 0:  # the held event goes on
            self._buf = buf
            self._scan = len(buf) - 1
            self.idle = False
            return []
        blocks = buf.split(b"\n\n")  # the events, then what follows the last one's end
        rest = self._buf = blocks.pop()
        # the event's first LF may be the last byte of this feed
        self._scan = max(len(rest) - 1, 0)
        self.idle = not rest and not self._drop_lf
        out: list[bytes] = []
        # one line each (every LF before `rest` is in a separator): the shape every
        # OpenAI server sends, "data: ..." taken without looking for a line end in it
        single = buf.count(b"\n", 0, len(buf) - len(rest)) == 2 * len(blocks)
        for block in blocks:
            if block.startswith(b"data: ") and (single or block.find(b"\n") < 0):
                out.append(block[6:])
            elif block:
                data = self._slow(block)
                if data is not None:
                    out.append(data)
        return out

    def close(self) -> list[bytes]:
        """End of stream: per the spec an unterminated last event is discarded."""
        self._buf = b""
        self._scan = 0
        self._drop_lf = False
        self.idle = True
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
