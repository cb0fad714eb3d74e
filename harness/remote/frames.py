"""The agent's record file, framed: a versioned header, then one frame per batch.

    file  = HEADER frame*
    frame = b"GRF2" <u32 payload bytes> <u32 records> payload      (little-endian)

Stdlib only: `gate-agent pull` runs every second on the client host the load runs on, and
must cut the file at whole frames without importing numpy. What a payload holds is
records_file's business; this module only finds where frames begin and end. A frame is
appended with one write and flushed, so a reader finds whole frames and at most one torn
frame at the end (still being written, or the agent died writing it), which it leaves.
"""

from __future__ import annotations

import struct

NAME = "records.bin"
VERSION = 2
HEADER = b"gate-agent records v%d\n" % VERSION
MAGIC = b"GRF%d" % VERSION
FRAME = struct.Struct("<4sII")


def whole_frames(data: bytes, at_start: bool) -> int:
    """How many leading bytes of data (read from a frame boundary, or from the file's
    start when at_start) are the header and whole frames. A wrong header or frame magic
    stops the count there: the reader refuses what follows (records_file.decode)."""
    pos = 0
    if at_start:
        if not data.startswith(HEADER):
            return 0
        pos = len(HEADER)
    while pos + FRAME.size <= len(data):
        magic, size, _ = FRAME.unpack_from(data, pos)
        if magic != MAGIC or pos + FRAME.size + size > len(data):
            break
        pos += FRAME.size + size
    return pos


def frame_length(head: bytes) -> int | None:
    """The full length of the frame whose first FRAME.size bytes are head (None: not a
    frame), so a pull can read a frame larger than its limit whole."""
    if len(head) < FRAME.size:
        return None
    magic, size, _ = FRAME.unpack_from(head)
    return FRAME.size + size if magic == MAGIC else None
