"""The agent's record file: columns of numbers, decoded in bulk (format v2).

Why not JSON lines (v1): pulling 1 M records back took ~35 s, nearly all of it per-record
Python (json.loads, a dict per record, chunk times unpacked one record at a time). A
frame (harness.remote.frames) holds one batch as columns instead:

    payload = RECORD[n]                  numpy structured array, one row per request
              float32 chunk times        every record's, in order (RECORD.nchunks each)
              JSON list of strings       error_kind / error / finish_reason by code

so decoding is a few numpy calls per frame, and the records are built with one `map`.
A None is a flag bit (numbers) or code -1 (strings). Chunk times are little-endian
float32, the very bytes the store keeps (records.pack_chunks).

The guarantees stay the line format's: the file is append-only, a pull reads it from a
byte offset and decodes only whole frames (a torn frame is read again next time), and the
same bytes decode to the same records (the caller delivers each idx once). The header
names the version: a file in another format is refused (ParseError), never misread.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import IO, Any

import numpy as np

from harness.errors import ParseError
from harness.loadgen.records import RequestRecord
from harness.remote import frames

RECORD = np.dtype([
    ("idx", "<i8"), ("instance", "<i4"), ("doc_id", "<i8"), ("scheduled", "<f8"),
    ("sent", "<f8"), ("ttft", "<f8"), ("ttft_text", "<f8"), ("e2el", "<f8"),
    ("prompt_tokens", "<i8"), ("output_tokens", "<i8"), ("status", "<i4"),
    ("error_kind", "<i4"), ("error", "<i4"), ("finish_reason", "<i4"),
    ("nchunks", "<u4"), ("flags", "<u2"),
])
# flag bits: two booleans, then one "is None" bit per nullable number
WARMUP, USAGE = 1, 2
NULLABLE = ("sent", "ttft", "ttft_text", "e2el", "prompt_tokens", "output_tokens", "status")
NULL_BIT = {name: 4 << k for k, name in enumerate(NULLABLE)}
PLAIN = ("idx", "instance", "doc_id", "scheduled")
STRINGS = ("error_kind", "error", "finish_reason")
STAGE = "load phase (agent records)"


def encode(records: Iterable[RequestRecord]) -> bytes:
    """One frame holding these records (the agent appends it with one write)."""
    rows, chunks = [], []
    table: dict[str, int] = {}

    def code(s: str | None) -> int:
        return -1 if s is None else table.setdefault(s, len(table))

    for r in records:
        flags = (WARMUP if r.warmup else 0) | (USAGE if r.usage_reported else 0)
        nums = []
        for name in NULLABLE:
            v = getattr(r, name)
            if v is None:
                flags |= NULL_BIT[name]
            nums.append(0 if v is None else v)
        rows.append((r.idx, r.instance, r.doc_id, r.scheduled, *nums, code(r.error_kind),
                     code(r.error), code(r.finish_reason), len(r.chunk_times), flags))
        chunks.extend(r.chunk_times)
    payload = b"".join((np.array(rows, dtype=RECORD).tobytes(),
                        np.asarray(chunks, dtype="<f4").tobytes(),
                        json.dumps(list(table)).encode()))
    return frames.FRAME.pack(frames.MAGIC, len(payload), len(rows)) + payload


def decode(data: bytes, at_start: bool = False) -> tuple[list[RequestRecord], int]:
    """The records in the whole frames of data (read from a frame boundary; from the
    file's first byte when at_start), and how many bytes they took: the next pull
    starts there."""
    if at_start:
        _check_header(data)
    end = frames.whole_frames(data, at_start)
    pos = len(frames.HEADER) if at_start and end else 0
    if end == pos and len(data) - pos >= frames.FRAME.size \
            and frames.frame_length(data[pos:pos + frames.FRAME.size]) is None:
        raise ParseError(f"the agent's {frames.NAME} is damaged: no frame where one "
                         f"should begin ({pos} bytes into this pull)", stage=STAGE)
    out: list[RequestRecord] = []
    with _no_gc():
        while pos < end:
            _, size, count = frames.FRAME.unpack_from(data, pos)
            start = pos + frames.FRAME.size
            out.extend(_frame(data[start:start + size], count))
            pos = start + size
    return out, end


@contextmanager
def _no_gc() -> Iterator[None]:
    """Without the cyclic collector while the records are built: they hold no cycles,
    and its passes over a heap growing by millions of objects took half the decode."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_file(path: Path) -> list[RequestRecord]:
    """Every whole record in a record file (a copy, or the file itself on the client host)."""
    return decode(path.read_bytes(), at_start=True)[0]


def _check_header(data: bytes) -> None:
    head = data[:len(frames.HEADER)]
    if frames.HEADER.startswith(head):
        return  # all of it, or too little read yet to tell
    if head.startswith(b"gate-agent records v"):
        seen = head.split(b"\n")[0].decode(errors="replace")
        why = f"its header says {seen!r}"
    elif head.startswith(b"{"):
        why = "it holds JSON lines (format v1)"
    else:
        why = f"it starts with {head[:24]!r}"
    raise ParseError(f"the agent's record file is not format v{frames.VERSION}: {why}; "
                     f"it was written by another gate-agent version. Ship this gate's "
                     f"agent (it reinstalls on a version change) and run the phase again",
                     stage=STAGE)


def _frame(payload: bytes, n: int) -> list[RequestRecord]:
    rec = np.frombuffer(payload, dtype=RECORD, count=n)
    nchunks = rec["nchunks"].astype(np.int64)
    at = RECORD.itemsize * n
    total = int(nchunks.sum())
    flat = np.frombuffer(payload, dtype="<f4", count=total, offset=at).tolist()
    table = json.loads(payload[at + 4 * total:])
    cols: dict[str, list[Any]] = {name: rec[name].tolist() for name in PLAIN}
    flags = rec["flags"]
    cols["warmup"] = (flags & WARMUP).astype(bool).tolist()
    cols["usage_reported"] = (flags & USAGE).astype(bool).tolist()
    for name in NULLABLE:
        values = rec[name].tolist()
        for i in np.flatnonzero(flags & NULL_BIT[name]).tolist():
            values[i] = None
        cols[name] = values
    lookup = np.array([*table, None], dtype=object)  # code -1 -> the last: None
    for name in STRINGS:
        cols[name] = lookup[rec[name]].tolist()
    ends = np.cumsum(nchunks).tolist()
    # map, not zip(strict=): this module runs in the agent too (Python 3.9)
    cols["chunk_times"] = list(map(flat.__getitem__, map(slice, [0, *ends[:-1]], ends)))
    return list(map(RequestRecord, *(cols[f.name] for f in fields(RequestRecord))))


class Appender:
    """on_batch for the engine: each batch is one frame, appended and flushed at once, so
    a killed agent loses at most the batch it was writing (a torn frame that decode
    leaves). Writes the header first when the file is new."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        if stream.tell() == 0:
            stream.write(frames.HEADER)
            stream.flush()
        self.count = 0

    def __call__(self, batch: list[RequestRecord]) -> None:
        self._stream.write(encode(batch))
        self._stream.flush()
        self.count += len(batch)
